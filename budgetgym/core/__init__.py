"""The generic machinery every environment family stands on."""

from budgetgym.core.actions import MAX_CALLS_PER_STEP, Action, ActionError, ToolCall, expected_forms, parse_action
from budgetgym.core.env import SNAPSHOT_FORMAT, SnapshotError, TextEnv
from budgetgym.core.spaces import UnicodeText
from budgetgym.core.tasks import Task, TaskSet, load_failure_states, load_tasks, read_jsonl
from budgetgym.core.tools import Tool

__all__ = [
    "MAX_CALLS_PER_STEP", "Action", "ActionError", "SNAPSHOT_FORMAT", "SnapshotError", "Task", "TaskSet", "TextEnv", "Tool",
    "ToolCall", "UnicodeText", "expected_forms", "load_failure_states", "load_tasks", "parse_action",
    "read_jsonl",
]
