"""Tasks as dataset rows, the shape RL trainers load (``budgetgym export``).

One row per task, built without resetting the env per task (``TextEnv.initial_observation``):

=================  ===========================================================================
``data_source``    the env id (verl's and SkyRL's key for per-source metrics)
``env_class``      ``"budgetgym"``: the SkyRL-Gym env that plays the row (``register_skyrl``)
``prompt``         the opening chat messages: the system prompt (instructions, and in text mode
                   the tools) and the first observation as the user's message
``tools``          the OpenAI function schemas at the start, as JSON text (schemas differ from
                   task to task; text keeps one column type in parquet)
``env_id``         the registered id ...
``env_kwargs``     ... and the ``gym.make`` arguments that rebuild the env (``split``), as JSON
                   text: ``gym.make(row["env_id"], **json.loads(row["env_kwargs"]))``
``task_id``        the task; ``reset(seed=seed, options={"task_id": task_id})`` starts it
``seed``           the episode seed: the export's seed plus the row's index, so each row's episode
                   (and a ``BudgetMix`` cap drawn from it) is its own, reproducibly
``split``          the task's split
``full_budget``    the task's full budget; ``oracle_turns`` the oracle's turn count
``tool_mode``      ``"text"`` or ``"native"``: how ``prompt`` presents the tools
``reward_model``   verl's reward field: ``{"style": "env", "ground_truth": task_id}`` (the env
                   scores the episode)
``extra_info``     ``{"index": i, "task_id": ..., "interaction_kwargs": {...}}``: verl's per-row
                   extras; ``interaction_kwargs`` (``name: "budgetgym"``, the env id and
                   arguments, task id and seed) is what verl hands its multi-turn interaction
=================  ===========================================================================

The budget is not a column: a cap is a property of an episode (``TurnBudget``, or ``BudgetMix``
drawing one per episode), set in the adapter's config at training time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Sequence

import gymnasium as gym

from budgetgym.chat import system_prompt
from budgetgym.core.env import check_backend, text_env
from budgetgym.core.extras import require
from budgetgym.core.jsonl import write_bytes, write_jsonl

FORMATS = ("jsonl", "parquet")
TOOL_MODES = ("text", "native")
ENV_CLASS = "budgetgym"


def task_rows(env_id: str, *, split: str | None = None, seed: int = 0, tool_mode: str = "text",
              limit: int | None = None, task_ids: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rows of ``env_id``'s tasks (of ``split``, among ``task_ids``; the first ``limit``), in task order."""
    if tool_mode not in TOOL_MODES:
        raise ValueError(f"tool_mode must be one of {TOOL_MODES}, got {tool_mode!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    env_kwargs: dict[str, Any] = {"split": split} if split is not None else {}
    env = gym.make(env_id, **env_kwargs)
    try:
        check_backend(env)  # a row whose env cannot run here would train on zeros
        base = text_env(env)
        tasks = base.tasks if task_ids is None else base.tasks.select(task_ids=task_ids)
        tasks = tasks if limit is None else tasks[:limit]
        for index, task in enumerate(tasks):
            row_seed = seed + index
            observation, tools = base.initial_observation(task, row_seed)
            prompt = [{"role": "system", "content": system_prompt(base.instructions, tools, native=tool_mode == "native")},
                      {"role": "user", "content": observation}]
            yield {
                "data_source": env_id,
                "env_class": ENV_CLASS,
                "prompt": prompt,
                "tools": json.dumps(tools, ensure_ascii=False),
                "env_id": env_id,
                "env_kwargs": json.dumps(env_kwargs),
                "task_id": task.id,
                "seed": row_seed,
                "split": task.split,
                "full_budget": task.max_turns,
                "oracle_turns": task.oracle_turns,
                "tool_mode": tool_mode,
                "reward_model": {"style": "env", "ground_truth": task.id},
                "extra_info": {"index": index, "task_id": task.id, "interaction_kwargs": {
                    "name": ENV_CLASS, "env_id": env_id, "env_kwargs": json.dumps(env_kwargs), "task_id": task.id,
                    "seed": row_seed}},
            }
    finally:
        env.close()


def export_tasks(env_id: str, out: str | Path, *, format: str | None = None, split: str | None = None,
                 seed: int = 0, tool_mode: str = "text", limit: int | None = None) -> int:
    """Write the rows of ``env_id``'s tasks to ``out`` as JSONL or parquet; returns the row count.

    ``format`` defaults from the suffix (``.parquet``, else JSONL). Parquet needs ``pyarrow``
    (``pip install budgetgym[integrations]``). Nothing is written when the env cannot be made or its
    backend cannot run here. ``out`` is replaced atomically when it is a regular file (or absent),
    written to as it is when it is a device or a pipe (``/dev/stdout``), and refused otherwise; a
    missing folder is created.
    """
    path = Path(out)
    format = format or ("parquet" if path.suffix == ".parquet" else "jsonl")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {format!r}")
    if format == "parquet":
        pa = require("pyarrow", "parquet export")
        pq = require("pyarrow.parquet", "parquet export")
    rows = list(task_rows(env_id, split=split, seed=seed, tool_mode=tool_mode, limit=limit))
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "jsonl":
        write_jsonl(path, rows)
    else:
        buffer = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_pylist(rows), buffer)
        write_bytes(path, buffer.getvalue().to_pybytes())
    return len(rows)
