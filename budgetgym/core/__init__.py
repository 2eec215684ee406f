"""The generic machinery every environment family stands on (the core kit: see CONTRIBUTING.md)."""

from budgetgym.core.actions import MAX_CALLS_PER_STEP, Action, ActionError, ToolCall, expected_forms, parse_action
from budgetgym.core.budgets import full_budget
from budgetgym.core.env import (AGENT_INFO_KEYS, SNAPSHOT_FORMAT, BackendUnavailable, Outcome, SnapshotError, TextEnv,
                                agent_view, check_backend, render_action, text_env)
from budgetgym.core.jsonl import Record, read_jsonl, write_jsonl
from budgetgym.core.limits import LimitExceeded, Limits, SizeLimitExceeded, TimeLimitExceeded
from budgetgym.core.rollout import Rollout, oracle_policy, rollout
from budgetgym.core.spaces import UnicodeText
from budgetgym.core.state import copy_state
from budgetgym.core.tasks import Task, TaskSet, load_failure_states, load_tasks
from budgetgym.core.tools import Tool, ToolError, object_schema, tool_map

__all__ = [
    "AGENT_INFO_KEYS", "MAX_CALLS_PER_STEP", "Action", "ActionError", "BackendUnavailable", "LimitExceeded", "Limits",
    "Outcome", "Record", "Rollout",
    "SNAPSHOT_FORMAT", "SizeLimitExceeded", "SnapshotError", "Task", "TaskSet", "TextEnv", "TimeLimitExceeded",
    "Tool", "ToolCall", "ToolError", "UnicodeText", "agent_view", "check_backend", "copy_state", "expected_forms",
    "full_budget", "load_failure_states", "load_tasks", "object_schema", "oracle_policy", "parse_action", "read_jsonl",
    "render_action", "rollout", "text_env", "tool_map", "write_jsonl",
]
