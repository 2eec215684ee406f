"""The mistakes an engineer makes on the way to an instance's gold patch, for the curated failure
states (``SWEBenchEnv.propose_mistake``, built by :mod:`budgetgym.core.failures`).

Two kinds, each an edit made from the gold patch itself on the oracle's path (the oracle applies
the gold patch, then submits):

* ``partial_fix``: only part of the fix is written: the first change of the gold patch (its first
  run of removed and added lines) without the others; where the patch has a single change, its
  removals and only the first half of its additions;
* ``wrong_edit``: the lines the fix replaces are deleted and nothing is written in their place
  (the gold patch's removals without its additions).

Each mistake is one ``run_command`` that resets the repository to the starting commit and applies
the altered patch (``git apply --recount``: hunk line counts are recomputed), so it can be made at
any point of the solution; None when the kind does not fit the patch (a single one-line change has
no partial form; a patch that only adds has no removals to delete). From the failure state the
oracle resets the tree and applies the gold patch.
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from budgetgym.core import Action, ToolCall

KINDS = ("partial_fix", "wrong_edit")
MISTAKE_MARKER = "BUDGETGYM_MISTAKE"  # not the gold patch's marker: the env must not think the fix is in


def _changes(lines: Sequence[str]) -> list[list[int]]:
    """The indices of each run of removed/added lines inside the hunks of a patch."""
    runs: list[list[int]] = []
    in_hunk = False
    current: list[int] = []
    for index, line in enumerate(lines):
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line[:1] in "+-" and line:
            current.append(index)
            continue
        if current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _revert(line: str) -> str | None:
    """A changed line as if it had not been changed: a removal kept as context, an addition dropped."""
    return " " + line[1:] if line.startswith("-") else None


def altered_patch(patch: str, kind: str) -> tuple[str, str] | None:
    """The gold patch altered into the mistake ``kind`` and a sentence saying what it does; None
    when the kind does not fit the patch."""
    lines = patch.rstrip("\n").split("\n")
    runs = _changes(lines)
    keep: dict[int, str | None] = {}
    if kind == "partial_fix":
        if len(runs) >= 2:
            for run in runs[1:]:
                keep.update({i: _revert(lines[i]) for i in run})
            said = f"wrote the first of the fix's {len(runs)} changes and left the others undone"
        else:
            added = [i for i in (runs[0] if runs else []) if lines[i].startswith("+")]
            if len(added) < 2:
                return None
            keep.update({i: None for i in added[(len(added) + 1) // 2:]})
            said = f"wrote {(len(added) + 1) // 2} of the {len(added)} lines the fix adds and stopped there"
    elif kind == "wrong_edit":
        added = [i for run in runs for i in run if lines[i].startswith("+")]
        if not added or not any(lines[i].startswith("-") for run in runs for i in run):
            return None
        keep.update({i: None for i in added})
        said = "deleted the lines the fix replaces without writing the fix in their place"
    else:
        return None
    out = [keep[i] if i in keep else line for i, line in enumerate(lines)]
    return "\n".join(line for line in out if line is not None) + "\n", said


def apply_command(patch: str) -> str:
    """The command that puts the repository at the starting commit with ``patch`` applied."""
    return (f"git reset -q --hard && git clean -fdq && git apply --recount - <<'{MISTAKE_MARKER}'\n"
            f"{patch.rstrip(chr(10))}\n{MISTAKE_MARKER}")


def propose(instance: Mapping[str, Any], kind: str, plan: Sequence[Action],
            rng: random.Random) -> tuple[Action, str] | None:
    gold = instance.get("patch")
    if not gold or not plan:
        return None
    altered = altered_patch(gold, kind)
    if altered is None:
        return None
    patch, description = altered
    return Action((ToolCall("run_command", {"command": apply_command(patch)}),)), description
