"""search: where a piece of text occurs in the repository."""

from budgetgym.core import Tool, object_schema

MAX_MATCHES = 50


def search(ws, query: str, path: str = ".") -> str:
    matches = [f"{name}:{number}: {line.strip()}" for name, number, line in ws.search(query, path, MAX_MATCHES + 1000)]
    if not matches:
        return f"No matches for {query!r} under {path}."
    shown = matches[:MAX_MATCHES]
    more = f"\n[{len(matches) - MAX_MATCHES} more matches]" if len(matches) > MAX_MATCHES else ""
    return f"{len(matches)} match{'es' if len(matches) != 1 else ''} for {query!r}:\n" + "\n".join(shown) + more


TOOL = Tool(
    name="search",
    description=("Find the lines that contain a piece of text (exact, case-sensitive), in every text file under a "
                 f"path of the repository. Shows up to {MAX_MATCHES} matches as path:line: text."),
    parameters=object_schema({
        "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "The exact text to find."},
        "path": {"type": "string", "minLength": 1, "description": "A file or folder (default: the whole repository)."},
    }, ["query"]),
    function=search,
)
