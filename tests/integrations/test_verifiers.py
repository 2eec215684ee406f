"""The verifiers adapter, played by verifiers' own eval runner (``run_eval``, what ``vf-eval`` runs):
its taskset loader, its env, its ``null`` chat harness in a local subprocess (prepared with ``uv``)
and its model client, against a real local chat-completions server whose "model" is the env's
oracle reading the conversation."""

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="the integrations extra is not installed")

from chat_server import API_KEY, MODEL, ChatServer, text_responder  # noqa: E402
from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402
from verifiers.v1.clients import EvalClientConfig  # noqa: E402
from verifiers.v1.configs.cli.eval import EvalConfig  # noqa: E402
from verifiers.v1.utils.loaders import environment_class, load_taskset, taskset_class  # noqa: E402

from budgetgym.integrations.episode import OracleChatPolicy  # noqa: E402
from budgetgym.integrations.verifiers import BudgetgymConfig, BudgetgymEnv, BudgetgymTaskset  # noqa: E402

TASKSET_ID = "budgetgym-verifiers"


@pytest.fixture(autouse=True)
def uv_on_path(monkeypatch):
    """verifiers prepares its chat harness with ``uv``, installed beside this Python by the extra."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("BUDGETGYM_TEST_KEY", API_KEY)
    if shutil.which("uv") is None:
        pytest.skip("uv is not installed (the integrations extra installs it)")


def evaluate(probe, tmp_path: Path, **taskset):
    policy = OracleChatPolicy(probe.env_id, probe.task_id, 0, split=probe.split)
    with ChatServer(responder=text_responder(policy)) as server:
        config = EvalConfig(
            env={"taskset": {"id": TASKSET_ID, "env_id": probe.env_id, "split": probe.split,
                             "task_ids": [probe.task_id], **taskset}},
            model=MODEL, client=EvalClientConfig(base_url=server.url, api_key_var="BUDGETGYM_TEST_KEY"),
            push=False, rich=None, output_dir=tmp_path, num_rollouts=1)
        (episode,) = asyncio.run(run_eval(config))
    policy.close()
    assert episode.ok and not episode.errors, episode.errors
    (trace,) = episode.traces
    return trace, server.requests


def test_the_taskset_id_resolves_to_the_adapter():
    assert taskset_class(TASKSET_ID) is BudgetgymTaskset
    assert environment_class(TASKSET_ID) is BudgetgymEnv


def test_oracle_solves_within_a_cap_of_its_own_length(probe, tmp_path):
    trace, requests = evaluate(probe, tmp_path, budget=probe.oracle_turns, reveal="remaining")
    assert trace.rewards["budgetgym_reward"].score == 1.0
    assert trace.info["success"] and not trace.info["truncated"]
    budget = trace.info["budget"]
    assert {k: budget[k] for k in ("unit", "cap", "remaining", "reveal")} == {
        "unit": "turns", "cap": probe.oracle_turns, "remaining": 0, "reveal": "remaining"}
    assert budget["used"]["turns"] == probe.oracle_turns
    assert len(requests) == probe.oracle_turns
    # The model saw the episode's opening, its cap announced.
    opening = requests[0]["messages"]
    assert opening[0]["role"] == "system" and "Tools:" in opening[0]["content"]
    assert opening[1]["content"].endswith(f"[Turns remaining: {probe.oracle_turns} of {probe.oracle_turns}]")


def test_a_cap_one_turn_short_truncates_the_oracle(probe, tmp_path):
    cap = probe.oracle_turns - 1
    trace, requests = evaluate(probe, tmp_path, budget=cap)
    assert trace.rewards["budgetgym_reward"].score == 0.0
    assert trace.info["truncated"] and not trace.info["success"]
    assert trace.info["budget"]["cap"] == cap and trace.info["budget"]["used"]["turns"] == cap
    assert len(requests) == cap


def test_taskset_rows_and_budget_config(probe):
    taskset = load_taskset(BudgetgymConfig(id=TASKSET_ID, env_id=probe.env_id, split=probe.split,
                                           task_ids=[probe.task_id], budget_mix=[0.5, 1.0]))
    (task,) = list(taskset)
    assert task.data.info["task_id"] == probe.task_id and task.data.info["full_budget"] == probe.max_turns
    assert task.key == f"{probe.env_id}:{probe.task_id}"
    assert taskset.config.budget_spec().mix == (0.5, 1.0)
    with pytest.raises(ValueError, match="one of a budget, a budget mix and a schedule"):
        BudgetgymConfig(id=TASKSET_ID, budget=3, budget_mix=[0.5]).budget_spec()


def test_the_documented_vf_eval_command_parses_and_stays_local(monkeypatch):
    """docs/training.md's vf-eval line, parsed by verifiers' own CLI: the taskset's options are
    known, and ``--no-push`` keeps the results local (the default pushes them, which fails
    without an account on verifiers' platform)."""
    import re
    import shlex
    import sys
    from pathlib import Path

    from pydantic_config import cli
    from verifiers.v1.cli.resolve import narrow_config, with_positional_taskset
    from verifiers.v1.configs.cli.eval import EvalConfig

    docs = (Path(__file__).parents[2] / "docs" / "training.md").read_text()
    command = re.search(r"```bash\n(vf-eval .*?)```", docs, re.S).group(1)
    argv = with_positional_taskset(shlex.split(command.replace("\\\n", " "))[1:])
    monkeypatch.setattr(sys, "argv", ["vf-eval", *argv])
    config = cli(narrow_config(EvalConfig, argv))
    assert config.push is False
    taskset = config.env.taskset
    assert (taskset.env_id, taskset.budget_mix, taskset.reveal) == ("budgetgym/FunctionCalling-v0",
                                                                    [0.25, 0.5, 0.75, 1.0], "remaining")
