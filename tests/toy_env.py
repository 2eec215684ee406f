"""A small env that lives under tests/ only: it exercises the TextEnv contract and the wrappers
with exact, hand-checkable behaviour. No toy env ships in the package.

The task: reach ``target`` by calling ``add(n)`` (n in 1..3); ``say(text)`` changes nothing.
"""

from __future__ import annotations

from typing import Any

from budgetgym.core import Action, Outcome, Task, TaskSet, TextEnv, Tool, ToolCall
from budgetgym.core.actions import MAX_CALLS_PER_STEP

TOY_TASKS = TaskSet(
    {"id": f"toy-{i:02d}", "split": "test" if i % 4 == 0 else "train", "max_turns": 4 + i % 5,
     "instruction": f"Reach {2 + i % 5}.", "target": 2 + i % 5, "oracle_turns": -(-(2 + i % 5) // 3)}
    for i in range(20)
)

ADD = Tool("add", "Add n to the counter.", {
    "type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 3}},
    "required": ["n"], "additionalProperties": False})
SAY = Tool("say", "Say something.", {
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
    "additionalProperties": False})


class CounterEnv(TextEnv):
    family = "toy"

    def __init__(self, fast_restore: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("tasks", TOY_TASKS)
        super().__init__(**kwargs)
        self.fast_restore = fast_restore
        self.tools = {"add": ADD, "say": SAY}
        self.value = 0

    def _load_task(self, task: Task, seed: int) -> str:
        self.value = 0
        return f"{task.instruction} Counter: 0 (seed {seed % 1000})."

    def _execute(self, action: Action) -> Outcome:
        lines = []
        for call in action.calls:
            if call.name == "add":
                self.value += call.arguments["n"]
                lines.append(f"Counter: {self.value}.")
            else:
                lines.append(f"You said {call.arguments['text']!r}.")
        target = self.task["target"]
        return Outcome(" ".join(lines), solved=self.value == target, failed=self.value > target,
                       progress=min(self.value, target) / target)

    def _parse_bare(self, text: str) -> ToolCall | None:
        if text.startswith("add ") and text[4:].isdigit():
            return ToolCall("add", {"n": int(text[4:])})
        return None

    def _oracle(self) -> Action:
        return Action((ToolCall("add", {"n": min(3, self.task["target"] - self.value)}),))

    def _render_oracle(self, action: Action) -> str:
        if len(action.calls) == 1 and action.calls[0].name == "add":
            return f"add({action.calls[0].arguments['n']})"
        return super()._render_oracle(action)

    def _get_state(self) -> Any:
        return {"value": self.value} if self.fast_restore else None

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        self.value = state["value"]

    def _state_schema(self, task: Task) -> dict:
        return {"type": "object", "properties": {"value": {"type": "integer", "minimum": 0}},
                "required": ["value"], "additionalProperties": False}

    def _state_status(self) -> tuple[bool, bool, float]:
        target = self.task["target"]
        return self.value == target, self.value > target, min(self.value, target) / target


class ParallelCounterEnv(CounterEnv):
    """The counter with FunctionCalling's action rule: several calls a turn, run in order."""

    max_calls_per_turn = MAX_CALLS_PER_STEP
