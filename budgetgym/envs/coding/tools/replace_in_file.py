"""replace_in_file: replace one exact, unique piece of a file."""

from budgetgym.core import Tool, ToolError, object_schema


def replace_in_file(ws, path: str, old: str, new: str) -> str:
    text = ws.read_text(path)
    count = text.count(old)
    if count == 0:
        raise ToolError(f"the text to replace was not found in {path}; nothing changed (view the file and copy "
                        f"the exact text, whitespace included)")
    if count > 1:
        raise ToolError(f"the text to replace occurs {count} times in {path}; nothing changed (include more "
                        f"surrounding lines so that it is unique)")
    if old == new:
        raise ToolError("old and new are the same; nothing changed")
    start = text.index(old)
    updated = text[:start] + new + text[start + len(old):]
    ws.write_text(path, updated)
    first = text.count("\n", 0, start) + 1
    last = first + new.count("\n")
    lines = updated.splitlines()
    low, high = max(1, first - 2), min(len(lines), last + 2)
    excerpt = "\n".join(f"{n:>4} | {lines[n - 1]}" for n in range(low, high + 1))
    return f"Replaced 1 occurrence in {path}. Lines {low}-{high} now:\n{excerpt}"


TOOL = Tool(
    name="replace_in_file",
    description=("Replace an exact piece of text in a file with new text. The old text must occur exactly once "
                 "(include surrounding lines to make it unique); whitespace and indentation must match."),
    parameters=object_schema({
        "path": {"type": "string", "minLength": 1, "description": "Path relative to the repository root."},
        "old": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
        "new": {"type": "string", "description": "The replacement text."},
    }, ["path", "old", "new"]),
    function=replace_in_file,
)
