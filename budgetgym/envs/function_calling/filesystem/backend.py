"""The file system service: folders and text files in one dict.

State: ``{"cwd": "/", "dirs": [sorted absolute paths, "/" included], "files": {path: text}}``.
Paths given to tools may be absolute or relative to ``cwd``; ``.`` and ``..`` work as usual.
"""

from __future__ import annotations

import bisect
import posixpath
from typing import Any, Mapping

from budgetgym.core.tools import ToolError

PATH = {"type": "string", "minLength": 1, "maxLength": 512, "description": "Absolute, or relative to the current directory."}


class FileSystem:
    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    @property
    def files(self) -> dict[str, str]:
        return self.state["files"]

    @property
    def dirs(self) -> list[str]:
        return self.state["dirs"]

    def resolve(self, path: str) -> str:
        """The absolute, normalised form of ``path``."""
        joined = path if path.startswith("/") else posixpath.join(self.state["cwd"], path)
        return "/" + posixpath.normpath(joined).lstrip("/")

    def is_dir(self, path: str) -> bool:
        index = bisect.bisect_left(self.dirs, path)
        return index < len(self.dirs) and self.dirs[index] == path

    def require_dir(self, path: str) -> None:
        if not self.is_dir(path):
            if path in self.files:
                raise ToolError(f"Not a directory: {path}")
            raise ToolError(f"No such directory: {path}")

    def require_file(self, path: str) -> None:
        if path not in self.files:
            if self.is_dir(path):
                raise ToolError(f"Is a directory: {path}")
            raise ToolError(f"No such file: {path}")

    def exists(self, path: str) -> bool:
        return path in self.files or self.is_dir(path)

    def add_dir(self, path: str) -> None:
        bisect.insort(self.dirs, path)

    def placement(self, source: str, destination: str) -> str:
        """Where ``source`` lands for move/copy: inside ``destination`` when that is a directory."""
        target = self.resolve(destination)
        if self.is_dir(target):
            target = posixpath.join(target, posixpath.basename(source))
        if self.exists(target):
            raise ToolError(f"Already exists: {target}")
        self.require_dir(posixpath.dirname(target))
        return target


def under(path: str, folder: str) -> bool:
    """Whether ``path`` lies strictly inside ``folder``."""
    return path.startswith(folder if folder == "/" else folder + "/") and path != folder


_LINES: dict[str, list[str]] = {}  # text -> its lines: scoring projects every file at every answer


def lines(text: str) -> list[str]:
    """A file's text as it matters: its non-blank lines without trailing spaces (an appended line
    with or without a final newline, or after a blank line, is the same file to the user).

    The list is shared by every call with the same text (scoring projects every file at every
    answer): read it, never change it."""
    found = _LINES.get(text)
    if found is None:
        if len(_LINES) >= 8192:
            _LINES.clear()
        # A line is blank exactly when its rstrip is empty: one pass, in C.
        found = _LINES[text] = list(filter(None, map(str.rstrip, text.splitlines())))
    return found


def text_of(lines_: list[str]) -> str:
    """The text a file with these lines is written with."""
    return "".join(line + "\n" for line in lines_)


def project(state: Mapping[str, Any]) -> dict[str, Any]:
    """What matters: the folders, and the files with their lines (not the current directory). The
    projection shares the state's folder list and the cached line lists: read it, or copy it."""
    return {"dirs": state["dirs"], "files": {path: lines(text) for path, text in state["files"].items()}}
