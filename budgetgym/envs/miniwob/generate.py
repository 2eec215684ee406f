"""Writes ``budgetgym/assets/miniwob/tasks.jsonl``: one task per supported MiniWoB++ task.

``python -m budgetgym.envs.miniwob.generate``. MiniWoB's own JavaScript draws each episode's
instance from the episode seed, so a task is a MiniWoB task name; its full budget comes from the
longest oracle solution (``oracles.ORACLE_TURNS``).
"""

from __future__ import annotations

from budgetgym.core import full_budget, write_jsonl
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.miniwob.oracles import ORACLE_TURNS

TASKS_PATH = ASSETS / "miniwob" / "tasks.jsonl"


def tasks() -> list[dict]:
    return [{"id": f"miniwob/{name}", "split": "test", "miniwob_task": name,
             "instruction": f"MiniWoB++ {name}: the page states the task (a new instance each episode seed).",
             "oracle_turns": turns, "max_turns": full_budget(turns)} for name, turns in ORACLE_TURNS.items()]


if __name__ == "__main__":
    TASKS_PATH.parent.mkdir(parents=True, exist_ok=True)
    print(f"wrote {write_jsonl(TASKS_PATH, tasks())} tasks to {TASKS_PATH}")
