"""budgetgym/BFCL-v0 against the real bfcl-eval: its data, backend classes, executor and checkers.

Nothing is mocked. The module is skipped only when bfcl_eval cannot be imported (CI installs it
with ``pip install --no-deps bfcl-eval mpmath``); the missing-package test simulates its absence in
a subprocess and runs either way.
"""

from __future__ import annotations

import decimal
import gc
import json
import os
import subprocess
import sys
import weakref

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)

INSTALL = "pip install --no-deps bfcl-eval mpmath"
ENV_ID = "budgetgym/BFCL-v0"

try:
    import bfcl_eval  # noqa: F401
    HAVE_BFCL = True
except ImportError:
    HAVE_BFCL = False
needs_bfcl = pytest.mark.skipif(not HAVE_BFCL, reason=f"bfcl_eval is not importable; install it with `{INSTALL}`")

# BFCL's ground truth for this entry calls `tail` at user turn 2, while the entry itself holds
# `tail` back (with `wc` and `cat`) until user turn 4: no agent can make that call here.
ORACLE_UNSOLVABLE = {"multi_turn_miss_func_49"}


def _env(**kwargs):
    from budgetgym.envs.bfcl import BFCLEnv

    return BFCLEnv(**kwargs)


def _play_oracle(env, task_id):
    """Play the oracle from reset; return the observations and the last step."""
    obs, info = env.reset(options={"task_id": task_id})
    observations = [obs]
    while True:
        step = env.step(env.oracle_action())
        observations.append(step[0])
        if step[2] or step[3]:
            return observations, step


def _state(env):
    """The public state of the agent's BFCL instances, as BFCL's state checker sees it."""
    return {name: {k: repr(v) for k, v in vars(instance).items() if not k.startswith("_")}
            for name, instance in env._backend.instances.items()}


# ---------------------------------------------------------------------------------- the oracle


@needs_bfcl
def test_oracle_solves_all_200_base_entries_within_budget():
    env = _env(categories=("base",))
    assert len(env.tasks) == 200
    unsolved = []
    for task in env.tasks:
        _, (obs, reward, terminated, truncated, info) = _play_oracle(env, task.id)
        if not (terminated and info["success"] and reward == 1.0 and info["progress"] == 1.0):
            unsolved.append((task.id, obs))
        assert info["turn"] <= task.max_turns
    assert unsolved == []


@needs_bfcl
@pytest.mark.parametrize("category", ["miss_func", "miss_param", "long_context"])
def test_oracle_solves_the_other_categories_where_their_ground_truth_allows(category):
    env = _env(categories=(category,))
    assert len(env.tasks) == 200
    unsolved = {task.id for task in env.tasks if not _play_oracle(env, task.id)[1][4]["success"]}
    assert unsolved == {t for t in ORACLE_UNSOLVABLE if t.startswith(f"multi_turn_{category}_")}


@needs_bfcl
def test_oracle_answers_in_plain_text_where_the_ground_truth_is_empty():
    env = _env(task_ids=["multi_turn_miss_param_0"])
    env.reset(options={"task_id": "multi_turn_miss_param_0"})
    empty_turn = env.task["ground_truth"].index([])
    while env._user_turn < empty_turn:
        env.step(env.oracle_action())
    answer = env.oracle_action()
    assert not answer.startswith("[")
    obs, _, terminated, _, info = env.step(answer)
    assert not terminated and info["action_valid"]
    assert obs == env.task["question"][empty_turn + 1][0]["content"]  # the missing parameter, supplied


@needs_bfcl
def test_full_budget_is_twice_the_oracle_steps_at_least_six():
    env = _env(categories=("base", "long_context"))
    base_0 = env.all_tasks.get("multi_turn_base_0")  # 4 user turns, each with calls: 8 oracle steps
    assert base_0.max_turns == 16
    long_38 = env.all_tasks.get("multi_turn_long_context_38")  # a turn of 34 calls takes 2 steps
    assert [len(t) for t in long_38["ground_truth"]] == [34, 1]
    assert long_38.max_turns == 2 * (3 + 2)
    assert all(t.max_turns >= 6 for t in env.tasks)


# ---------------------------------------------------------------------------------- BFCL's checks


@needs_bfcl
def test_wrong_call_fails_the_state_check_and_ends_the_episode():
    env = _env(categories=("base",))
    env.reset(options={"task_id": "multi_turn_base_0"})
    obs, _, terminated, _, info = env.step("mkdir(dir_name='temp')")  # without cd into document first
    assert info["action_valid"] and not terminated
    obs, reward, terminated, truncated, info = env.step("Done.")
    assert terminated and not truncated and reward == 0.0
    assert not info["success"] and info["progress"] == 0.0
    assert "multi_turn:instance_state_mismatch" in obs
    assert env.oracle_action() is None


@needs_bfcl
def test_right_state_but_missing_result_fails_the_response_check():
    env = _env(categories=("base",))
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step(env.oracle_action())
    env.step(env.oracle_action())  # the first user turn passes
    assert env.task["ground_truth"][1] == ["cd(folder='temp')", "grep(file_name='final_report.pdf',pattern='budget analysis')"]
    # The state BFCL compares is the same (grep reads), but the result the user asked for is missing.
    env.step("[cd(folder='temp'), grep(file_name='final_report.pdf', pattern='revenue')]")
    obs, reward, terminated, _, info = env.step("Nothing found.")
    assert terminated and not info["success"] and info["progress"] == 1 / len(env.task["question"])
    assert "multi_turn:execution_response_mismatch" in obs


@needs_bfcl
def test_a_turn_with_ground_truth_and_no_call_fails():
    env = _env(categories=("base",))
    env.reset(options={"task_id": "multi_turn_base_1"})
    obs, _, terminated, _, info = env.step("I would rather not.")
    assert terminated and not info["success"]
    assert "multi_turn:empty_turn_model_response" in obs


@needs_bfcl
def test_progress_is_the_share_of_user_turns_passed():
    env = _env(categories=("base",), reward_mode="progress")
    env.reset(options={"task_id": "multi_turn_base_0"})
    total = len(env.task["question"])
    rewards = []
    for _ in range(2):  # the first user turn, by the oracle: calls, then the answer
        rewards.append(env.step(env.oracle_action())[1])
    assert rewards == [0.0, 1 / total]
    env.step("rm(file_name='final_report.pdf')")
    obs, reward, terminated, _, info = env.step("Done.")
    assert terminated and info["progress"] == 1 / total and reward == 0.0


# ---------------------------------------------------------------------------------- bad input


@needs_bfcl
@pytest.mark.parametrize("action", [
    "no_such_tool(x=1)",
    '{"name": "mv", "arguments": {"source": "final_report.pdf"}}',  # a required argument missing
    "cd(folder=3)",  # a mistyped argument
    '{"name": "cd", "arguments": {"folder": "document"}',  # bad JSON
    "[cd(folder='document'), mkdir(dir_name=['a'])]",  # several calls, one bad: none runs
    "cd(folder='document', recursive=True)",  # an argument BFCL's doc does not have
    "<tool_call>{\"name\": \"cd\"",
])
def test_malformed_calls_give_an_error_and_change_nothing(action):
    env, clean = _env(categories=("base",)), _env(categories=("base",))
    clean_obs, _ = _play_oracle(clean, "multi_turn_base_0")
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step(env.oracle_action())  # the first turn's calls, so there is state to keep
    before, results = _state(env), list(env._backend.results)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not info["action_valid"] and info["action_error"]
    assert obs.startswith("Invalid action:") and not terminated and reward == 0.0
    assert _state(env) == before and env._backend.results == results
    rest = [env.step(env.oracle_action()) for _ in range(len(clean_obs) - 2)]
    assert [step[0] for step in rest] == clean_obs[2:]
    assert rest[-1][4]["success"]


@needs_bfcl
def test_a_function_held_back_by_miss_func_is_unknown_until_its_turn():
    env = _env(categories=("miss_func",))
    obs, info = env.reset(options={"task_id": "multi_turn_miss_func_0"})
    assert env.task["missed_function"] == {"3": ["sort"]}
    assert "sort" not in {t["function"]["name"] for t in info["tools"]}
    obs, _, _, _, info = env.step("sort(file_name='final_report.pdf')")
    assert not info["action_valid"] and "Unknown tool 'sort'" in obs
    while env._user_turn < 3:
        obs, _, _, _, info = env.step(env.oracle_action())
    assert obs.startswith("I have updated some more functions you can choose from.") and "- sort(" in obs
    assert "sort" in {t["function"]["name"] for t in info["tools"]}
    obs, _, _, _, info = env.step("sort(file_name='final_report.pdf')")
    assert info["action_valid"] and obs.startswith("sort -> ")


# ---------------------------------------------------------------------------------- isolation


@needs_bfcl
def test_executor_table_holds_nothing_of_ours_between_calls():
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    before = set(vars(multi_turn_utils))
    env = _env()
    for task in list(env.tasks)[::40]:
        _play_oracle(env, task.id)
    assert set(vars(multi_turn_utils)) == before


@needs_bfcl
def test_the_agents_instances_are_built_as_bfcls_executor_builds_them():
    """The agent's instances are built without the executor (which lists every method of every
    instance at every call); on every task of every category they equal the executor's: BFCL's own
    state check passes both ways, and every random generator inside holds the same state."""
    import random

    env = _env()
    upstream = env._upstream
    for task in env.tasks:
        env.reset(options={"task_id": task.id})
        backend = env._backend
        built, (_, by_executor, _) = backend.instances, backend._execute([], {})
        assert list(built) == list(by_executor) == list(task["involved_classes"])
        assert upstream.state_checker(built, by_executor)["valid"], task.id
        assert upstream.state_checker(by_executor, built)["valid"], task.id
        for name, instance in built.items():
            assert type(instance) is type(by_executor[name])
            generators = {k: v.getstate() for k, v in vars(instance).items() if isinstance(v, random.Random)}
            assert generators == {k: v.getstate() for k, v in vars(by_executor[name]).items()
                                  if isinstance(v, random.Random)}, (task.id, name)
            assert {k for k in vars(instance)} == {k for k in vars(by_executor[name])}, (task.id, name)


@needs_bfcl
def test_the_executor_takes_the_reference_built_for_it():
    """The reference's instances are built as the agent's are and handed to BFCL's executor under
    the names it files them under: on every task of every category it runs on those very objects
    and builds none of its own (were BFCL to rename them, it would build its own, ours for nothing)."""
    env = _env()
    for task in env.tasks:
        env.reset(options={"task_id": task.id})
        backend = env._backend
        built = backend._build()
        _, by_executor, entries = backend._execute([], backend._executor_entries(built))
        assert list(by_executor) == list(task["involved_classes"]), task.id
        assert all(by_executor[name] is instance for name, instance in built.items()), task.id
        assert len(entries) == len(built), task.id


@needs_bfcl
def test_two_envs_on_one_task_do_not_share_state_and_reset_starts_afresh():
    a, b = _env(categories=("base",)), _env(categories=("base",))
    a.reset(options={"task_id": "multi_turn_base_0"})
    b.reset(options={"task_id": "multi_turn_base_0"})
    fresh = b.step("ls()")[0]
    a.step("mkdir(dir_name='only_in_a')")
    assert "only_in_a" in a.step("ls()")[0]
    assert b.step("ls()")[0] == fresh
    a.reset(options={"task_id": "multi_turn_base_0"})
    assert a.step("ls()")[0] == fresh


@needs_bfcl
def test_many_resets_leave_no_instances_behind():
    env = _env(categories=("base",))
    gone = []
    for index in range(300):
        env.reset(options={"task_index": index % len(env.tasks)})
        env.step(env.oracle_action())
        gone.extend(weakref.ref(i) for i in [*env._backend.instances.values(), *env._backend.reference.values()])
    env.reset(options={"task_index": 0})
    gc.collect()
    assert sum(ref() is not None for ref in gone) == 0


@needs_bfcl
def test_math_precision_does_not_leak_out_of_a_call():
    import mpmath

    env = _env(categories=("base",))
    task = next(t for t in env.tasks if "MathAPI" in t["involved_classes"])
    env.reset(options={"task_id": task.id})
    dps, prec = mpmath.mp.dps, decimal.getcontext().prec
    obs, _, _, _, info = env.step("[logarithm(value=10, base=2, precision=60), square_root(number=2, precision=40)]")
    assert info["action_valid"] and "3.32192809488736234787031942948939017586483139302458" in obs
    assert (mpmath.mp.dps, decimal.getcontext().prec) == (dps, prec)


# ---------------------------------------------------------------------------------- determinism and snapshots


@needs_bfcl
def test_snapshot_round_trip_by_replay():
    env = _env(categories=("base", "long_context"))
    env.reset(options={"task_id": "multi_turn_base_0"})
    for action in [env.oracle_action(), "cd(folder=", env.oracle_action(), env.oracle_action()]:
        env.step(action)
    snap = json.loads(json.dumps(env.snapshot()))
    assert snap["state"] is None  # restored by replay, BFCL's instances are not serialised
    other = _env(categories=("base", "long_context"))
    obs, info = other.reset(options={"snapshot": snap})
    assert obs == env.transcript[-1][1] and info["turn"] == 4
    assert other.snapshot() == env.snapshot()
    while True:
        expected, got = env.step(env.oracle_action()), other.step(other.oracle_action())
        assert got[:4] == expected[:4]
        if got[2] or got[3]:
            break
    assert got[4]["success"]


_DETERMINISM_SCRIPT = """
import hashlib, budgetgym
from budgetgym.envs.bfcl import BFCLEnv
env = BFCLEnv()
digest = hashlib.sha256()
for task in list(env.tasks)[::7]:
    obs, _ = env.reset(options={"task_id": task.id})
    digest.update(obs.encode())
    for action in ["ls(a=True)", "get_outside_temperature_from_google()", "place_order(order_type='Buy', symbol='AAPL', price=1.0, amount=1)"]:
        digest.update(env.step(action)[0].encode())
    while True:
        step = env.step(env.oracle_action())
        digest.update(step[0].encode())
        if step[2] or step[3]:
            break
print(digest.hexdigest())
"""


@needs_bfcl
def test_same_task_and_actions_give_the_same_observations_across_processes():
    outputs = set()
    for hash_seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", _DETERMINISM_SCRIPT], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
        outputs.add(run.stdout.strip())
    assert len(outputs) == 1


# ---------------------------------------------------------------------------------- schemas and tasks


@needs_bfcl
def test_gorilla_types_become_json_schema():
    from budgetgym.envs.bfcl.schemas import parameter_schema
    from budgetgym.envs.bfcl.upstream import load_upstream

    mapping = load_upstream().type_mapping
    spec = {"type": "dict", "description": "d", "properties": {
        "x": {"type": "float", "default": 1.0}, "t": {"type": "tuple", "items": {"type": "integer"}},
        "a": {"type": "any"}}, "required": ["x"]}
    assert parameter_schema(spec, mapping) == {"type": "object", "description": "d", "properties": {
        "x": {"type": "number", "default": 1.0}, "t": {"type": "array", "items": {"type": "integer"}},
        "a": {}}, "required": ["x"]}


@needs_bfcl
def test_every_documented_function_is_a_method_of_its_class():
    import importlib

    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    from budgetgym.envs.bfcl.schemas import class_tools

    env = _env()
    classes = {c for task in env.tasks for c in task["involved_classes"]}
    assert len(classes) == 8
    for name in classes:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[name]), name)
        tools = class_tools(name)
        assert tools and all(callable(getattr(cls, tool.name, None)) for tool in tools), name


@needs_bfcl
def test_categories_and_splits_select_tasks():
    env = _env(categories="miss_param")
    assert set(env.tasks.splits) == {"miss_param"} and env.tasks[0].id == "multi_turn_miss_param_0"
    assert len(_env(split="long_context").tasks) == 200
    assert len(_env().tasks) == 800
    with pytest.raises(ValueError, match="categories must be some of"):
        _env(categories=("composite",))


@needs_bfcl
def test_registered_id_makes_the_env():
    env = gym.make(ENV_ID)
    obs, info = env.reset(seed=3)
    assert obs and info["tools"] and info["task_id"].startswith("multi_turn_")


# ---------------------------------------------------------------------------------- missing package


def test_make_without_bfcl_eval_names_the_install_command():
    script = (
        "import sys\n"
        "sys.modules['bfcl_eval'] = None  # as if it were not installed\n"
        "import gymnasium as gym, budgetgym\n"
        "assert 'bfcl_eval' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    gym.make('budgetgym/BFCL-v0')\n"
        "except ImportError as err:\n"
        "    print(type(err).__name__, err)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.startswith("BFCLNotInstalled ") and INSTALL in run.stdout


def test_import_budgetgym_does_not_import_bfcl_eval():
    script = "import sys, budgetgym, budgetgym.envs.bfcl; print('bfcl_eval' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


@pytest.mark.parametrize("call", [
    "logarithm(value=10, base=2, precision=1000000)",
    "square_root(number=2, precision=1000000)",
    "power(base=1000000000, exponent=1000000000)",
    "round_number(number=1, decimal_places=-1000000000)",
])
@needs_bfcl
def test_arguments_that_would_compute_for_minutes_are_refused(call):
    """Each of these runs for minutes inside BFCL's MathAPI, where a step cannot be interrupted."""
    env = gym.make("budgetgym/BFCL-v0").unwrapped
    task_id = next(t.id for t in env.tasks if "MathAPI" in t["involved_classes"])
    env.reset(options={"task_id": task_id})
    observation, _, _, _, info = env.step(call)
    assert info["action_valid"] is False and "Invalid arguments" in observation
    bounded = env.step(call.replace("1000000000", "1000").replace("1000000", "1000"))
    assert bounded[4]["action_valid"] is True


@needs_bfcl
def test_ground_truth_steps_count_whether_or_not_the_oracle_was_asked():
    """The ground truth is parsed only when the oracle is asked; a ground-truth step the agent made
    earlier in the turn still counts then (here the two 32- and 2-call steps of a 34-call turn)."""
    task_id = "multi_turn_long_context_38"
    asked, silent = _env(categories=("long_context",)), _env(categories=("long_context",))
    asked.reset(options={"task_id": task_id})
    silent.reset(options={"task_id": task_id})
    for _ in range(2):
        action = asked.oracle_action()
        assert not action.startswith(("Done", "I cannot"))
        for env in (asked, silent):
            env.step(action)
    assert silent.oracle_action() == asked.oracle_action() == "Done."
    assert silent._ground_truth_parsed and asked._ground_truth_parsed
    fresh = _env(categories=("long_context",))
    fresh.reset(options={"task_id": task_id})
    fresh.step(action)  # the second step alone is not the turn's first ground-truth step
    assert fresh.oracle_action() != "Done."


# ------------------------------------------------------------------ bounds on BFCL's code


@needs_bfcl
def test_a_folder_copied_into_itself_is_undone_and_the_episode_goes_on():
    """BFCL's cp shares a folder's entries: copying 'document' into itself makes a cycle, on which
    du() recursed without end. The call is refused, undone, and the file system is as before."""
    env = _env()
    env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    before = env.step("du()")[0]
    observation, _, terminated, truncated, info = env.step('cp(source="document", destination="document")')
    assert "grew past the size limit" in observation and "the call was undone" in observation
    assert info["action_valid"] and not (terminated or truncated)
    assert env.step("du()")[0] == before
    assert env.step("ls()")[0] == 'ls -> {"current_directory_content": ["document", "archive"]}'


DOUBLE = ('cp(source="s", destination="s2"), mkdir(dir_name="w"), mv(source="s", destination="w"), '
          'mv(source="s2", destination="w"), mv(source="w", destination="s")')


@needs_bfcl
def test_path_doubling_stops_at_the_size_limit_and_undoes_only_the_last_copy():
    """Each round puts two aliases of the same folder under a new one: the paths (and du's time)
    double with no memory used. The copy that would pass the limit is undone; the rest stand."""
    from budgetgym.core.limits import Limits

    env = _env(limits=Limits(seconds=5, max_size=16 * 2**10))
    env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    env.step('[cd(folder="document"), mkdir(dir_name="s"), mv(source="final_report.pdf", destination="s")]')
    sizes = []
    for _ in range(8):
        observation = env.step(f"[{DOUBLE}, du()]")[0]
        sizes.append(int(observation.rsplit('"disk_usage": "', 1)[1].split(" ")[0]))
        if "grew past the size limit" in observation:
            break
    assert "grew past the size limit" in observation
    assert all(later > earlier for earlier, later in zip(sizes, sizes[1:-1]))  # doubling until refused
    assert env.step("du()")[0].endswith(f'"disk_usage": "{sizes[-1]} bytes"}}')


@needs_bfcl
def test_a_call_past_the_time_limit_is_stopped_and_undone():
    """A real BFCL method made slow by real work: du() over a tree of many aliased paths under a
    time limit far below what it needs."""
    from budgetgym.core.limits import Limits

    env = _env(limits=Limits(seconds=0.002, max_size=2**30))
    env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    env.step('[cd(folder="document"), mkdir(dir_name="s"), mv(source="final_report.pdf", destination="s")]')
    for _ in range(5):  # 2**15 paths: du() needs far more than 2 ms on any machine
        env.step(f"[{DOUBLE}, {DOUBLE}, {DOUBLE}]")
    observation = env.step("du()")[0]
    assert "du ran past the time limit of 0.002 s and was stopped" in observation
    assert not env.unwrapped.transcript[-1][1].startswith("Invalid action")


@needs_bfcl
def test_a_service_that_keeps_a_generator_is_measured_by_what_grows():
    """MessageAPI keeps a random.Random (a fixed 2.5 KB state): the size limit counts the messages,
    which grow, so a small limit admits three long messages, refuses the fourth and undoes it."""
    from budgetgym.core.limits import Limits

    env = _env(categories=("base",), limits=Limits(seconds=5, max_size=4096))
    env.reset(seed=0, options={"task_id": "multi_turn_base_14"})
    env.step('message_login(user_id="USR001")')
    send = f'send_message(receiver_id="USR002", message="{"x" * 900}")'
    observations = [env.step(send)[0] for _ in range(4)]
    assert all('"sent_status": true' in observation for observation in observations[:3])
    assert "the MessageAPI state grew past the size limit" in observations[3]
    assert "the call was undone" in observations[3]
    sent = json.loads(env.step("view_messages_sent()")[0].split(" -> ", 1)[1])["messages"]["USR002"]
    assert sent.count("x" * 900) == 3
