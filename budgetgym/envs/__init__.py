"""Environment families, one sub-package each, and their registration with Gymnasium.

``REGISTRY`` is the one table of ids: ``budgetgym.register_envs()`` (run by ``import budgetgym``)
registers each with ``gymnasium.register``. Adapters to public benchmarks are registered even when
their extra is missing; ``gym.make`` then fails with the exact install instruction.
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym


@dataclass(frozen=True)
class EnvEntry:
    id: str
    entry_point: str
    family: str
    description: str
    adapter: bool = False


REGISTRY: tuple[EnvEntry, ...] = (
    EnvEntry("budgetgym/FunctionCalling-v0", "budgetgym.envs.function_calling:FunctionCallingEnv", "function_calling",
             "Multi-turn user requests served through stateful tools: files, messaging, calendar, banking"),
    EnvEntry("budgetgym/Coding-v0", "budgetgym.envs.coding:CodingEnv", "coding",
             "Fix an injected bug in a small Python library from an issue report, in a sandbox (local or Docker)"),
    EnvEntry("budgetgym/SWEBench-v0", "budgetgym.envs.coding.swebench:SWEBenchEnv", "swebench",
             "SWE-bench instances from a local file, run in their Docker images, graded by the swebench package",
             adapter=True),
    EnvEntry("budgetgym/BFCL-v0", "budgetgym.envs.bfcl:BFCLEnv", "bfcl",
             "BFCL multi-turn (base, miss_func, miss_param, long_context) run by the installed bfcl-eval", adapter=True),
    EnvEntry("budgetgym/Web-v0", "budgetgym.envs.web:WebEnv", "web",
             "Shopping for an instruction in a self-contained web shop (search, results, items, options, buy)"),
    EnvEntry("budgetgym/MiniWoB-v0", "budgetgym.envs.miniwob:MiniWoBEnv", "miniwob",
             "MiniWoB++ web tasks in a real Chromium as text (click(ref), type(ref, text)); task by keyword", adapter=True),
    EnvEntry("budgetgym/Navigation-v0", "budgetgym.envs.navigation:NavigationEnv", "navigation",
             "TextWorld text adventures in five tiers (up to 16 rooms), played in its Jericho engine; fast state restore"),
    EnvEntry("budgetgym/ALFWorld-v0", "budgetgym.envs.alfworld:ALFWorldEnv", "alfworld",
             "ALFWorld's household text games from the installed alfworld and its data (ALFWORLD_DATA)", adapter=True),
)

#: The client of an env served elsewhere (``budgetgym serve ID``): registered with Gymnasium but not an
#: environment of its own, so not in ``REGISTRY`` (whose every id has tasks and runs the contract suite
#: in process; tests/serve runs the contract's checks on this id against a server the test starts).
REMOTE_ID = "budgetgym/Remote-v0"


def register_envs() -> None:
    """Register every id of ``REGISTRY``, and ``REMOTE_ID``, with Gymnasium (idempotent)."""
    for entry in REGISTRY:
        if entry.id not in gym.registry:
            # No TimeLimit: each TextEnv truncates at its task's own full budget.
            gym.register(id=entry.id, entry_point=entry.entry_point, disable_env_checker=False)
    if REMOTE_ID not in gym.registry:
        gym.register(id=REMOTE_ID, entry_point="budgetgym.serve.client:RemoteEnv", disable_env_checker=False)
