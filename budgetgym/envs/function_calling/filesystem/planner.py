"""The file system's repair planner: the next call that brings the tree closer to the target tree.

Order: create (or move into place) the missing folders, parents first; then make every target file
right, preferring to move a stray file with the right text (an undo of a wrong move), then to copy
one, then to write the text; then delete the stray folders, outermost first, and the stray files.
"""

from __future__ import annotations

import posixpath
from typing import Any, Collection, Mapping

from budgetgym.core import ToolCall
from budgetgym.envs.function_calling.filesystem.backend import project, text_of, under


def plan(state: Mapping[str, Any], target: Mapping[str, Any], tools: Collection[str]) -> ToolCall | None:
    files, dirs = project(state)["files"], set(state["dirs"])  # files as lines, as the target has them
    want_files, want_dirs = target["files"], set(target["dirs"])
    stray_dirs = sorted(dirs - want_dirs)

    missing_dirs = sorted(want_dirs - dirs)
    for folder in missing_dirs:
        if posixpath.dirname(folder) not in dirs:
            continue  # its parent comes first (sorted order puts it earlier)
        if folder in files:
            return ToolCall("delete", {"path": folder})  # a file where the folder belongs
        source = _relocatable(folder, stray_dirs, files, dirs, want_files, want_dirs)
        if source is not None and "move" in tools:
            return ToolCall("move", {"source": source, "destination": folder})
        # One call makes a whole chain of missing folders (/backup/2025 with /backup).
        deepest = folder
        while True:
            child = next((d for d in missing_dirs if posixpath.dirname(d) == deepest), None)
            if child is None or _relocatable(child, stray_dirs, files, dirs, want_files, want_dirs) is not None:
                break
            deepest = child
        if deepest == folder:
            return ToolCall("make_directory", {"path": folder})
        return ToolCall("make_directory", {"path": deepest, "parents": True})

    stray_files = [f for f in files if f not in want_files]
    for path in sorted(want_files):
        wanted = want_files[path]
        if files.get(path) == wanted:
            continue
        if path in files or path in dirs:
            if path in dirs:
                return ToolCall("delete", {"path": path, "recursive": True})
            return ToolCall("write_file", {"path": path, "content": text_of(wanted)})
        twin = next((f for f in sorted(stray_files) if files[f] == wanted), None)
        if twin is not None and "move" in tools:
            return ToolCall("move", {"source": twin, "destination": path})
        twin = next((f for f in sorted(files) if files[f] == wanted), None)
        if twin is not None and "copy" in tools:
            return ToolCall("copy", {"source": twin, "destination": path})
        return ToolCall("write_file", {"path": path, "content": text_of(wanted)})

    for folder in stray_dirs:
        if not any(under(folder, other) for other in stray_dirs):
            return ToolCall("delete", {"path": folder, "recursive": True})
    for path in sorted(stray_files):
        return ToolCall("delete", {"path": path})
    return None


def _relocatable(folder, stray_dirs, files, dirs, want_files, want_dirs) -> str | None:
    """A stray folder whose whole contents, moved to ``folder``, are exactly the target's there
    (an empty one only when it has the same name: then a move and a fresh folder are alike)."""
    wanted = _contents(folder, want_files, want_dirs)
    for stray in stray_dirs:
        same_name = posixpath.basename(stray) == posixpath.basename(folder)
        if (wanted != ([], []) or same_name) and not under(folder, stray) and _contents(stray, files, dirs) == wanted:
            return stray
    return None


def _contents(folder: str, files: Mapping[str, list[str]], dirs: Collection[str]) -> tuple:
    cut = len(folder)
    return (
        sorted((f[cut:], text) for f, text in files.items() if under(f, folder)),
        sorted(d[cut:] for d in dirs if under(d, folder)),
    )
