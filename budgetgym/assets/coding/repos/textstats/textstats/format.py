"""Slugs and truncation."""

import re
import unicodedata


def slugify(text, separator="-", max_length=50):
    """Lower-case ASCII words joined by separator, cut at max_length without a trailing separator."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    parts = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = separator.join(parts)
    if len(slug) > max_length:
        slug = slug[:max_length].rstrip(separator)
    return slug


def truncate(text, width, ellipsis="..."):
    """At most width characters; a cut text ends with the ellipsis, at a word boundary if possible."""
    if len(text) <= width:
        return text
    room = width - len(ellipsis)
    if room <= 0:
        return ellipsis[:width]
    cut = text[:room]
    if text[room] != " ":
        space = cut.rfind(" ")
        if space > 0:
            cut = cut[:space]
    return cut.rstrip() + ellipsis
