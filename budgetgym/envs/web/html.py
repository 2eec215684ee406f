"""A shop page as HTML: the same :meth:`Shop.view` the text env renders, with forms for every action.

Every clickable element of the text page is a ``<button name="element" value="...">`` in a POST
form to ``click``; the search box posts to ``search``. No scripts: a page works in any browser and
with any browser agent (Playwright, BrowserGym). All text is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from budgetgym.envs.web.catalogue import Product
from budgetgym.envs.web.shop import ADD, BACK, BACK_TO_SEARCH, BUY, NEXT, PREV

_STYLE = """
body{font-family:sans-serif;max-width:52em;margin:1em auto;padding:0 1em}
#instruction{background:#eef;padding:.6em;border-radius:4px}
.message{background:#fee;padding:.5em;border:1px solid #c99}
form.inline{display:inline}
button.selected{background:#246;color:#fff}
li{margin:.3em 0}
""".strip()


def _button(base: str, element: str, *, css_id: str | None = None, css_class: str = "", pressed: bool | None = None) -> str:
    attrs = f' id="{escape(css_id)}"' if css_id else ""
    if css_class:
        attrs += f' class="{escape(css_class)}"'
    if pressed is not None:
        attrs += f' aria-pressed="{"true" if pressed else "false"}"'
    return (f'<form class="inline" method="post" action="{base}click">'
            f'<button name="element" value="{escape(element)}"{attrs}>{escape(element)}</button></form>')


def _search_form(base: str, query: str = "") -> str:
    return (f'<form id="search-form" method="post" action="{base}search">'
            f'<input id="search-input" name="query" maxlength="200" value="{escape(query)}" '
            f'aria-label="search query"> <button id="search-button">Search</button></form>')


def render_page(view: Mapping[str, Any], base: str, *, status: Mapping[str, Any], message: str | None = None) -> str:
    """The whole HTML document of a page. ``base`` is the session's URL prefix (ends with ``/``)."""
    kind = view["kind"]
    body = [f'<div id="instruction">Instruction: {escape(view["instruction"])}</div>']
    if "cart" in view:
        cart = "; ".join(f"{p.id} {p.title} ({', '.join(chosen.values()) or 'no options'})" for p, chosen in view["cart"])
        body.append(f'<div id="cart">Cart: {escape(cart or "empty")}</div>')
    if message:
        body.append(f'<p class="message" role="alert">{escape(message)}</p>')
    over = status["terminated"] or status["truncated"]
    if kind != "done" and not over:
        body.append(_search_form(base, view.get("query", "")))
    if status["truncated"] and kind != "done":
        body.append('<p id="out-of-turns">Out of turns: the episode is over.</p>')
    elif kind == "search":
        body.append(f'<h1>Search</h1><p>The shop has {view["catalogue_size"]} products.</p>')
    elif kind == "results":
        total = view["total"]
        body.append(f'<h1>Results for &ldquo;{escape(view["query"])}&rdquo;</h1>'
                    f'<p id="results-summary">Page {view["page"]} of {view["pages"]}, {total} item'
                    f'{"" if total == 1 else "s"}</p>')
        nav = [_button(base, BACK_TO_SEARCH, css_id="back-to-search")]
        if view["has_prev"]:
            nav.append(_button(base, PREV, css_id="prev-page"))
        if view["has_next"]:
            nav.append(_button(base, NEXT, css_id="next-page"))
        body.append(f'<nav>{" ".join(nav)}</nav>')
        if not total:
            body.append("<p>No product matches. Try other words.</p>")
        items = "".join(f'<li class="result">{_button(base, pid, css_class="product-link")} '
                        f'<span class="title">{escape(title)}</span> '
                        f'<span class="price">${price:.2f}</span></li>' for pid, title, price in view["items"])
        body.append(f'<ol id="results">{items}</ol>')
    elif kind == "item":
        product: Product = view["product"]
        selected = view["selected"]
        body.append(f'<nav>{_button(base, BACK_TO_SEARCH, css_id="back-to-search")} '
                    f'{_button(base, BACK, css_id="back")}</nav>')
        body.append(f'<h1 id="product-title">{escape(product.title)}</h1>'
                    f'<p>Item <span id="product-id">{escape(product.id)}</span> &middot; '
                    f'{escape(product.category)} &gt; {escape(product.type)}</p>'
                    f'<p>Price: <span id="product-price">${product.price:.2f}</span> &middot; '
                    f'Rating: {product.rating}/5</p>'
                    f'<p id="attributes">Attributes: {escape(", ".join(product.attributes))}</p>')
        for group, values in product.options.items():
            chosen = selected.get(group)
            buttons = " ".join(_button(base, v, css_class="option selected" if v == chosen else "option",
                                       pressed=v == chosen) for v in values)
            body.append(f'<fieldset class="options" data-group="{escape(group)}"><legend>{escape(group)}</legend>'
                        f'{buttons} <span class="chosen">{escape(chosen or "not selected")}</span></fieldset>')
        add = f'{_button(base, ADD, css_id="add-to-cart")} ' if "cart" in view else ""
        body.append(f'<p>{add}{_button(base, BUY, css_id="buy-now")}</p>')
    else:
        product = view["product"]
        chosen = ", ".join(f"{g} {v}" for g, v in view["selected"].items()) or "no options selected"
        lines = "".join(f"<li>{escape(line)}</li>" for line in view["report"])
        body.append(f'<h1>Order placed</h1><p>You bought {escape(product.id)} {escape(product.title)} '
                    f'({escape(chosen)}) for ${product.price:.2f}.</p>'
                    f'<p>Score: <span id="reward">{view["reward"]:.4f}</span></p><ul id="report">{lines}</ul>')
    body.append(f'<footer>Turn {status["turn"]} of {status["max_turns"]} &middot; '
                f'<a href="{base}status">status (JSON)</a></footer>')
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>budgetgym shop</title>'
            f'<style>{_STYLE}</style></head><body>{"".join(body)}</body></html>')
