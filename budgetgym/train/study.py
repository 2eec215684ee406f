"""The study in miniature: what multi-turn RL changes in an agent, measured on a CPU in minutes.

``run_study`` trains the base policy twice with the same reward and the same budget of updates,
once at the full budget and once under BudgetMix (see :mod:`budgetgym.train.grpo`), then measures
the three policies on the test split with the evaluation's own tools and writes ``report.md``:

1. Pass@(K,T): the trained policies minus the base, per K and T, under the unannounced cap
   (``reveal="none"``) and the announced one (``"remaining"``), with paired intervals over tasks.
2. Action quality at matched states: the base's and the trained policy's next action on the
   oracle's path, each continued by the same reference policy.
3. Recovery: success from the curated failure states (and the matched clean states).
4. BudgetMix against full-budget training at the tightest and the full budget, remaining shown.

Each claim is stated with the measurement that tests it and a plain verdict (agrees, does not
agree, inconclusive). The verdict rules are fixed here, before any numbers, and read intervals
only, never a point estimate: a difference counts when its 95% interval excludes zero. At matched
states a tie is no evidence either way, so claim 2 counts the states where the two policies'
next actions differ in quality. Paired comparisons need the same states on both sides: a
mismatch is an error, never a silent zero. The report ends with its limitations (sizes, and what
a miniature can and cannot say). Every number in the report is recomputed from the saved episode
files by :func:`summarize_study`, which the tests call again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from budgetgym.core import read_jsonl, write_jsonl
from budgetgym.eval.agents.scripted import NoisyOracleAgent
from budgetgym.eval.metrics import difference_grid, pass_grid
from budgetgym.eval.probes.action_quality import run_action_quality_probe
from budgetgym.eval.probes.recovery import run_recovery_probe
from budgetgym.eval.sweep import run_sweep
from budgetgym.train.grpo import MIX_FRACTIONS, TrainConfig, train
from budgetgym.train.policy import LinearSoftmaxPolicy

POLICIES = ("base", "full", "mix")
REVEALS = ("none", "remaining")


@dataclass(frozen=True)
class StudyConfig:
    """The study's sizes. ``quick()`` is the tests' seconds-long version."""

    # The defaults are the language-model study's, sized from measured CPU costs for under an hour on
    # 2 cores (see docs/training.md): Navigation's tasks of at most 10 oracle turns, a 1.1M-parameter
    # model; ``linear()`` gives the linear policy's own, larger sizes.
    env_id: str = "budgetgym/Navigation-v0"
    iterations: int = 12
    tasks_per_iteration: int = 4
    group_size: int = 4
    learning_rate: float = 5e-4
    eval_tasks: str | int = 12
    ks: tuple[int, ...] = (1, 2)
    budgets: tuple[float, ...] = MIX_FRACTIONS
    quality_tasks: int = 3
    quality_rollouts: int = 2
    recovery_attempts: int = 1
    recovery_states: int = 8
    seed: int = 0
    #: ``"lm"``: a causal LM that writes its actions (the study); ``"linear"``: the cheap linear softmax
    #: over the env's candidate actions (privileged: the candidates include the right one).
    policy: str = "lm"
    #: The LM's sizes (budgetgym.train.lm.SIZES) when no ``model`` directory is given.
    lm_size: str = "mini"
    model: str | None = None
    device: str = "cpu"
    #: The rewards to train with (budgetgym.train.grpo.REWARDS); the first one's policies are ``full``
    #: and ``mix``, the others' ``full-<reward>`` and ``mix-<reward>``.
    rewards: tuple[str, ...] = ("sparse",)
    sft_tasks: int = 45
    sft_episodes: int = 6
    sft_steps: int = 200
    sft_agent_p: float = 0.2
    #: ``"oracle"``: SFT learns the scripted agent's own (oracle) turns, its random ones stay in the
    #: context only; ``"all"``: every turn, mistakes included.
    sft_learn: str = "oracle"
    sft_batch_size: int = 8
    sft_learning_rate: float = 3e-3
    #: Update only the model's top this many decoder layers, in SFT and GRPO (None: all of it).
    train_layers: int | None = None
    max_new_tokens: int = 48
    #: Train and measure on the tasks whose oracle needs at most this many turns (None: all tasks).
    max_oracle_turns: int | None = 10
    #: torch's intra-op threads (None: torch's default). On a small model a step is many small ops,
    #: where a second thread mostly spins waiting for the first on a loaded machine.
    threads: int | None = 1

    @classmethod
    def tiny(cls, env_id: str = "budgetgym/Navigation-v0", **changes: Any) -> "StudyConfig":
        """The language-model study at the tests' size (a 2-layer model of a few hundred thousand
        parameters, a handful of episodes): it checks the pipeline, it cannot show learning."""
        return cls(**{**dict(env_id=env_id, iterations=1, tasks_per_iteration=1, group_size=2, learning_rate=1e-3,
                             eval_tasks=1, ks=(1,), budgets=(0.5, 1.0), quality_tasks=1, quality_rollouts=1,
                             recovery_attempts=1, recovery_states=1, lm_size="micro", sft_tasks=2, sft_episodes=1,
                             sft_steps=2, sft_batch_size=2, max_new_tokens=12, max_oracle_turns=None, threads=None),
                      **changes})

    @classmethod
    def pretrained(cls, env_id: str = "budgetgym/Navigation-v0", model: str = "smollm2-135m-instruct",
                   **changes: Any) -> "StudyConfig":
        """The study from a pretrained causal LM (a directory, a GGUF file or a
        :data:`~budgetgym.train.lm.KNOWN_MODELS` name): learning rates for a pretrained model, and
        only its top 10 layers trained. Sized for a GPU: with SmolLM2-135M on 2 CPU cores its SFT alone
        took 45 minutes (docs/training.md)."""
        return cls(**{**dict(env_id=env_id, model=model, sft_steps=100, sft_batch_size=4, sft_learning_rate=1e-4,
                             learning_rate=1e-5, train_layers=10, threads=None), **changes})

    @classmethod
    def linear(cls, env_id: str = "budgetgym/Navigation-v0") -> "StudyConfig":
        """The linear policy over candidate actions (privileged), at its own sizes (about 9 minutes
        with the sparse reward; each further reward trains two more policies, and the oracle-distance
        one costs most off the oracle's path: on FunctionCalling-v0 three rewards took 8 minutes, on
        Navigation-v0 its two policies took most of the run, docs/training.md)."""
        return cls(env_id=env_id, iterations=24, tasks_per_iteration=8, group_size=6, learning_rate=1.0,
                   eval_tasks="test", ks=(1, 2, 4, 8), quality_tasks=6, quality_rollouts=4, recovery_attempts=2,
                   recovery_states=24, policy="linear", max_oracle_turns=None, threads=None)

    @classmethod
    def quick(cls, env_id: str = "budgetgym/Navigation-v0") -> "StudyConfig":
        """The linear policy's seconds-long version."""
        return cls(env_id=env_id, iterations=3, tasks_per_iteration=3, group_size=3, eval_tasks=4, ks=(1, 2),
                   quality_tasks=1, quality_rollouts=1, recovery_attempts=1, recovery_states=3, policy="linear",
                   max_oracle_turns=None, threads=None)


def trained_policies(config: StudyConfig) -> list[tuple[str, str, str]]:
    """The study's trained policies as (name, regime, reward): per reward the full-budget and
    BudgetMix ones, named ``full`` and ``mix`` for the first reward, ``<regime>-<reward>`` after."""
    return [(f"{regime}{'' if index == 0 else '-' + reward}", regime, reward)
            for index, reward in enumerate(config.rewards) for regime in ("full", "mix")]


def policy_names(config: StudyConfig) -> tuple[str, ...]:
    """The study's policies: the base, then the trained ones (:func:`trained_policies`)."""
    return ("base",) + tuple(name for name, _, _ in trained_policies(config))


def _train_policies(out: Path, config: StudyConfig, log: Callable[[str], None]) -> dict[str, Any]:
    """The base and the trained policies (loaded where a finished run is in ``out``)."""
    if config.policy == "linear":
        policies: dict[str, Any] = {"base": LinearSoftmaxPolicy.base(name="base")}
        for name, regime, reward in trained_policies(config):
            train_config = TrainConfig(config.env_id, regime, iterations=config.iterations,
                                       tasks_per_iteration=config.tasks_per_iteration, group_size=config.group_size,
                                       learning_rate=config.learning_rate, seed=config.seed, reward=reward)
            log(f"training {name} ({reward} reward): {config.iterations} iterations x "
                f"{config.tasks_per_iteration} tasks x {config.group_size} attempts")
            policies[name] = train(train_config, out / f"train-{name}", name=name,
                                   progress=lambda row: log(f"  iteration {row['iteration']}: success "
                                                            f"{row['success_rate']:.2f}, turns {row['mean_turns']:.1f}"))
        return policies
    if config.policy != "lm":
        raise ValueError(f"policy must be 'lm' or 'linear', got {config.policy!r}")
    if config.sft_learn not in ("oracle", "all"):
        raise ValueError(f"sft_learn must be 'oracle' or 'all', got {config.sft_learn!r}")
    from budgetgym.train import lm
    from budgetgym.train.lm_grpo import LMTrainConfig, train_lm

    base_dir = out / "base"
    if not (base_dir / "done.json").exists():
        log(f"base: SFT on the noisy oracle (p={config.sft_agent_p}), {config.sft_tasks} tasks x "
            f"{config.sft_episodes} episodes, {config.sft_steps} steps")
        from budgetgym.integrations.episode import BudgetSpec

        flags: list[list[bool]] = []
        train_ids = task_ids(config, "train")[: config.sft_tasks]
        conversations = lm.scripted_conversations([config.env_id], agent_p=config.sft_agent_p,
                                                  episodes_per_task=config.sft_episodes, task_ids=train_ids,
                                                  budget=BudgetSpec(reveal="remaining"), seed=config.seed,
                                                  oracle_flags=flags)
        made = config.model or lm.make_tiny_lm(out / "init", conversations, size=config.lm_size, seed=config.seed)
        model, tokenizer = lm.load(made, device=config.device)
        context = int(getattr(model.config, "max_position_embeddings", 2048))
        curve = lm.supervised_fine_tune(model, tokenizer, conversations, steps=config.sft_steps, seed=config.seed,
                                        batch_size=config.sft_batch_size, learning_rate=config.sft_learning_rate,
                                        max_length=context, log=log,
                                        learn=flags if config.sft_learn == "oracle" else None,
                                        train_layers=config.train_layers)
        write_jsonl(out / "sft_curve.jsonl", curve)
        model.save_pretrained(base_dir)
        tokenizer.save_pretrained(base_dir)
        (base_dir / "done.json").write_text(json.dumps({"parameters": sum(p.numel() for p in model.parameters())}))
    agent = lambda name, model, tokenizer: lm.LMAgent(model, tokenizer, name=name, max_new_tokens=config.max_new_tokens)
    policies = {"base": agent("base", *lm.load(base_dir, device=config.device))}
    for name, regime, reward in trained_policies(config):
        log(f"GRPO {name} ({reward} reward): {config.iterations} iterations x {config.tasks_per_iteration} "
            f"tasks x {config.group_size} attempts")
        model, tokenizer = lm.load(base_dir, device=config.device)
        train_config = LMTrainConfig(config.env_id, regime, reward, iterations=config.iterations,
                                     tasks_per_iteration=config.tasks_per_iteration, group_size=config.group_size,
                                     learning_rate=config.learning_rate, max_new_tokens=config.max_new_tokens,
                                     seed=config.seed, max_oracle_turns=config.max_oracle_turns,
                                     train_layers=config.train_layers)
        policies[name] = train_lm(train_config, model, tokenizer, out / f"train-{name}", name=name,
                                  progress=lambda row: log(f"  iteration {row['iteration']}: success "
                                                           f"{row['success_rate']:.2f}, loss {row['loss']:+.4f}"))
    return policies


def run_study(out: str | Path, config: StudyConfig = StudyConfig(), *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train, evaluate and report into ``out`` (resumable: finished parts are not run again)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "study.json").write_text(json.dumps(_jsonable(config), indent=2, sort_keys=True))
    if config.threads is not None:
        import torch

        torch.set_num_threads(config.threads)
    policies = _train_policies(out, config, log)
    env_kwargs = {"split": "test"} if config.eval_tasks == "test" else None
    tasks = (None if config.eval_tasks == "test" else config.eval_tasks) if config.max_oracle_turns is None else \
        task_ids(config, "test")[: None if config.eval_tasks == "test" else int(config.eval_tasks)]
    for name, policy in policies.items():
        log(f"Pass@(K,T) of {name}")
        run_sweep(config.env_id, policy, tasks=tasks, k=config.ks, budgets=config.budgets, reveal=REVEALS,
                  seed=config.seed, out=out / f"episodes-{name}.jsonl", env_kwargs=env_kwargs)
    reference = NoisyOracleAgent(p=0.5)
    if not (out / "action_quality.json").exists():
        log("action quality at matched states: base vs full")
        quality = run_action_quality_probe(config.env_id, policies["base"], policies["full"], reference,
                                           tasks=config.quality_tasks if config.max_oracle_turns is None else
                                           task_ids(config, "test")[: config.quality_tasks], rollouts=config.quality_rollouts,
                                           seed=config.seed, env_kwargs=env_kwargs)
        (out / "action_quality.json").write_text(json.dumps(quality, indent=1))
    states = _failure_states(config, env_kwargs)
    for name in policy_names(config):
        path = out / f"recovery-{name}.jsonl"
        if path.exists():
            continue
        if not states:
            log(f"recovery: {config.env_id} ships no failure states for these tasks; claim 3 is not measured")
            write_jsonl(path, [])
            continue
        log(f"recovery of {name}")
        result = run_recovery_probe(config.env_id, policies[name], states=states, attempts=config.recovery_attempts,
                                    seed=config.seed, env_kwargs=env_kwargs)
        write_jsonl(path, result["episodes"])
    summary = summarize_study(out, config)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    (out / "report.md").write_text(render_report(summary))
    _plots(out, summary)
    log(f"report: {out / 'report.md'}")
    return summary


def task_ids(config: StudyConfig, split: str) -> list[str]:
    """``split``'s task ids the study uses: those whose oracle needs at most ``max_oracle_turns``
    turns when it is set (what the env reports at reset), else all, in the split's order."""
    import gymnasium as gym

    from budgetgym.core import text_env

    env = gym.make(config.env_id, split=split)
    try:
        from budgetgym.train.lm_grpo import tasks_within

        return tasks_within(env, config.max_oracle_turns) if config.max_oracle_turns is not None \
            else list(text_env(env).tasks.ids)
    finally:
        env.close()


def _failure_states(config: StudyConfig, env_kwargs: dict[str, Any] | None) -> list[dict[str, Any]]:
    import gymnasium as gym

    from budgetgym.core import text_env

    from budgetgym.eval.probes.recovery import matched_clean_snapshot

    env = gym.make(config.env_id, **(env_kwargs or {}))
    try:
        base = text_env(env)
        ids = set(base.tasks.ids) if config.max_oracle_turns is None else set(task_ids(config, "test"))
        states = [dict(s) for s in base.failure_states() if s["task_id"] in ids]
        # A random draw of the states the probe can use: those with a matched clean state (the
        # oracle's episode still running at that turn); short tasks hold many that it cannot.
        order = np.random.default_rng(config.seed).permutation(len(states))
        chosen = []
        for index in order:
            if len(chosen) == config.recovery_states:
                break
            if matched_clean_snapshot(env, states[index]) is not None:
                chosen.append(int(index))
    finally:
        env.close()
    return [states[i] for i in sorted(chosen)]


# ------------------------------------------------------------------ the numbers, from the files


def summarize_study(out: str | Path, config: StudyConfig) -> dict[str, Any]:
    """Every number of the report, recomputed from the saved episodes and probe results."""
    out = Path(out)
    names = policy_names(config)
    episodes = {name: read_jsonl(out / f"episodes-{name}.jsonl") for name in names}
    budgets, ks = list(config.budgets), list(config.ks)
    grids: dict[str, Any] = {}
    for name in names:
        for reveal in REVEALS:
            records = [r for r in episodes[name] if r["reveal"] == reveal]
            grids[f"{name}/{reveal}"] = [c.as_dict() for c in pass_grid(records, budgets, ks, seed=config.seed)]
    differences: dict[str, Any] = {}
    # Each extra reward against the first, in each regime (issue 28: the rewards at tight and full budgets).
    reward_pairs = [(regime, f"{regime}-{reward}") for reward in config.rewards[1:] for regime in ("full", "mix")]
    for a, b in [("base", "full"), ("base", "mix"), ("full", "mix")] + reward_pairs:
        for reveal in REVEALS:
            ra = [r for r in episodes[a] if r["reveal"] == reveal]
            rb = [r for r in episodes[b] if r["reveal"] == reveal]
            differences[f"{b}-{a}/{reveal}"] = [c.as_dict() for c in difference_grid(ra, rb, budgets, ks, seed=config.seed)]
    quality = json.loads((out / "action_quality.json").read_text())
    recovery = {name: _recovery_rates(read_jsonl(out / f"recovery-{name}.jsonl"), config.seed) for name in names}
    curves = {name: read_jsonl(out / f"train-{name}" / "curve.jsonl") for name in names[1:]}
    summary = {"config": _jsonable(config), "grids": grids, "differences": differences,
               "action_quality": quality_summary(quality, config.seed), "recovery": recovery, "curves": curves}
    summary["claims"] = judge_claims(summary, budgets, ks)
    summary["rewards"] = compare_rewards(summary, list(config.rewards), budgets, ks)
    if (out / "sft_curve.jsonl").exists():
        sft = read_jsonl(out / "sft_curve.jsonl")
        summary["sft"] = {"steps": len(sft), "first_loss": sft[0]["loss"], "last_loss": sft[-1]["loss"]}
    return summary


def compare_rewards(summary: dict[str, Any], rewards: list[str], budgets: list[float], ks: list[int]) -> list[dict[str, Any]]:
    """Each extra reward against the first, per regime, at the tightest and the full budget (K = the
    smallest): Pass@1 of the policy trained with it minus the one trained with the first reward, with
    its paired interval. Only the interval decides; one that includes 0 shows no difference."""
    rows = []
    for reward in rewards[1:]:
        for regime in ("full", "mix"):
            for reveal in REVEALS:
                cells = summary["differences"][f"{regime}-{reward}-{regime}/{reveal}"]
                for budget in (min(budgets), max(budgets)):
                    cell = _cell(cells, budget, min(ks))
                    rows.append({"reward": reward, "against": rewards[0], "regime": regime, "reveal": reveal,
                                 "budget": budget, "cell": cell,
                                 "verdict": interval_verdict(cell["ci_low"], cell["ci_high"], f"{reward} better",
                                                             f"{rewards[0]} better")})
    return rows


def interval_verdict(low: float, high: float, above: str, below: str) -> str:
    """``above`` when the interval is wholly above 0, ``below`` when wholly below, else no difference shown."""
    return above if low > 0 else below if high < 0 else "no difference shown (the interval includes 0)"


def quality_summary(quality: dict[str, Any], seed: int) -> dict[str, Any]:
    """The action-quality probe's figures, and the ones claim 2 reads: among the states where the two
    policies' next actions differ in quality, how often the trained one (b) is better, with its
    Wilson interval (a tie says nothing about which is better)."""
    from budgetgym.eval.metrics import wilson_interval

    rows = quality["per_state"]
    differ = [row for row in rows if row["a"]["quality"] != row["b"]["quality"]]
    b_wins = sum(row["b"]["quality"] > row["a"]["quality"] for row in differ)
    share = b_wins / len(differ) if differ else None
    return {**{k: quality[k] for k in ("states", "a_better", "b_better", "ties", "mean_quality_a", "mean_quality_b",
                                       "mean_difference", "difference_ci")},
            "differing_states": len(differ), "b_better_where_differ": share,
            "b_better_where_differ_ci": list(wilson_interval(share, len(differ))) if differ else None}


def _recovery_rates(episodes: Sequence[dict[str, Any]], seed: int) -> dict[str, Any]:
    """Per arm: the success rate over states, and each state's own rate keyed by its id (for pairing)."""
    rates = {}
    for arm in ("failure", "clean"):
        by_state: dict[str, list[bool]] = {}
        for episode in episodes:
            if episode["arm"] == arm:
                by_state.setdefault(episode["state"], []).append(bool(episode["success"]))
        per_state = {state: float(np.mean(v)) for state, v in sorted(by_state.items())}
        rates[arm] = {"rate": float(np.mean(list(per_state.values()))) if by_state else None, "states": len(by_state),
                      "per_state": per_state}
    return rates


def paired_states(a: dict[str, float], b: dict[str, float], what: str) -> tuple[np.ndarray, np.ndarray]:
    """The per-state values of ``a`` and ``b`` over the same states, in one order. Different state
    sets are an error: a paired difference over unmatched states means nothing."""
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise ValueError(f"{what}: the two sides were measured on different states "
                         f"({len(only_a)} only in the first, e.g. {only_a[:3]}; {len(only_b)} only in the second, "
                         f"e.g. {only_b[:3]}): rerun the probe for both into a fresh folder")
    states = sorted(a)
    return np.array([a[s] for s in states]), np.array([b[s] for s in states])


def _cell(cells: Sequence[dict[str, Any]], budget: float, k: int) -> dict[str, Any]:
    return next(c for c in cells if c["budget"] == budget and c["k"] == k)


def _verdict(low: float, high: float, expected_sign: int) -> str:
    if low > 0:
        return "agrees" if expected_sign > 0 else "does not agree"
    if high < 0:
        return "agrees" if expected_sign < 0 else "does not agree"
    return "inconclusive (the interval includes 0)"


def _paired_ci(a: np.ndarray, b: np.ndarray, seed: int) -> tuple[float, float]:
    """The interval of mean(b) - mean(a) over paired states (the evaluation's paired method)."""
    from budgetgym.eval.metrics import difference_ci

    return difference_ci(a, b, seed=seed)


def judge_claims(summary: dict[str, Any], budgets: list[float], ks: list[int]) -> list[dict[str, Any]]:
    tight, full, k_min, k_max = min(budgets), max(budgets), min(ks), max(ks)
    claims = []
    for reveal in REVEALS:
        cells = summary["differences"][f"full-base/{reveal}"]
        wide, narrow = _cell(cells, full, k_max), _cell(cells, tight, k_min)
        claims.append({
            "claim": 1, "reveal": reveal,
            "statement": "With more attempts K the trained agent pulls ahead, but at fixed K its edge shrinks, "
                         "vanishes or reverses under tighter turn budgets T.",
            "measured": {"full_minus_base_at_Kmax_Tfull": wide, "full_minus_base_at_Kmin_Ttight": narrow,
                         "edge_by_budget_at_Kmin": [_cell(cells, b, k_min) for b in budgets]},
            # Only intervals decide: the edge at (Kmax, full T) must be above 0, and the edge at (Kmin,
            # tight T) must lie wholly below it (its interval under the other's); a point estimate decides nothing.
            "verdict": ("agrees" if wide["ci_low"] > 0 and narrow["ci_high"] < wide["ci_low"] else
                        "does not agree" if wide["ci_high"] < 0 or narrow["ci_low"] > wide["ci_high"] else
                        "inconclusive (the intervals overlap or include 0)"),
        })
    quality = summary["action_quality"]
    interval = quality["b_better_where_differ_ci"]
    claims.append({
        "claim": 2,
        "statement": "At matched intermediate states the trained agent is not consistently better at the next "
                     "action (reference: better at 46.8% of coding and 42.8% of navigation states).",
        "measured": quality,
        # Ties are not agreement: only states where the two differ count, and only the interval of the
        # trained agent's share of them decides (below one half: agrees; above: does not agree).
        "verdict": ("inconclusive (the two policies' actions never differ in quality at these states)"
                    if interval is None else
                    "agrees" if interval[1] < 0.5 else "does not agree" if interval[0] > 0.5 else
                    "inconclusive (the interval includes one half)"),
    })
    failure = {name: summary["recovery"][name]["failure"]["per_state"] for name in POLICIES}  # the first reward's
    for trained in ("full", "mix"):
        if not summary["recovery"]["base"]["failure"]["states"]:
            claims.append({"claim": 3, "policy": trained,
                           "statement": "From constructed error states, the trained agent's continuations succeed "
                                        "more often.",
                           "measured": None, "verdict": "not measured (the env ships no failure states)"})
            continue
        base, other = paired_states(failure["base"], failure[trained], f"recovery, base vs {trained}")
        diff = other - base
        low, high = _paired_ci(base, other, summary["config"]["seed"])
        claims.append({
            "claim": 3, "policy": trained,
            "statement": "From constructed error states, the trained agent's continuations succeed more often.",
            "measured": {"base": summary["recovery"]["base"]["failure"]["rate"],
                         trained: summary["recovery"][trained]["failure"]["rate"],
                         "difference": float(diff.mean()), "ci": [low, high]},
            "verdict": _verdict(low, high, +1),
        })
    cells = summary["differences"]["mix-full/remaining"]
    at_tight, at_full = _cell(cells, tight, k_min), _cell(cells, full, k_min)
    claims.append({
        "claim": 4,
        "statement": "Training across varied budgets with the budget shown (BudgetMix) helps at tight T and keeps "
                     "the full-T result (reference, BFCL at 25%: base 3.0, full-budget GRPO 2.5, BudgetMix 8.5).",
        "measured": {"mix_minus_full_at_Ttight": at_tight, "mix_minus_full_at_Tfull": at_full},
        "verdict": ("agrees" if at_tight["ci_low"] > 0 and at_full["ci_low"] > -0.05 else
                    "does not agree" if at_tight["ci_high"] < 0 or at_full["ci_high"] < -0.05 else
                    "inconclusive (the interval includes 0)"),
    })
    return claims


# ------------------------------------------------------------------ the report


def render_report(summary: dict[str, Any]) -> str:
    config = summary["config"]
    if config.get("policy", "linear") == "lm":
        learner = (f"a causal language model ({config['model'] or 'made here: ' + config['lm_size'] + ' size'}) that "
                   "writes its actions as text (no candidate actions), its base made by supervised fine-tuning on "
                   f"episodes of the noisy oracle (p={config['sft_agent_p']}), then trained with GRPO "
                   f"({', '.join(config['rewards'])} reward)")
    else:
        learner = ("a linear softmax policy over the env's candidate actions (privileged: they include the right one), "
                   f"trained with group-relative policy gradients ({', '.join(config['rewards'])} reward)")
    lines = ["# The study in miniature", "",
             f"Env `{config['env_id']}`; {learner}, from the same base in two regimes "
             f"that differ only in the turn cap: full budget, and BudgetMix over {list(config['budgets'])} of the "
             f"full budget (remaining turns shown in both). {config['iterations']} iterations x "
             f"{config['tasks_per_iteration']} tasks x {config['group_size']} attempts each; seed {config['seed']}. "
             "Intervals are 95% bootstrap intervals over tasks (paired for differences). "
             "Every number below is recomputed from the files beside this report.", ""]
    if summary.get("sft"):
        sft = summary["sft"]
        lines.append(f"- base (SFT): {sft['steps']} steps, loss {sft['first_loss']:.3f} -> {sft['last_loss']:.3f}")
    for regime, curve in summary["curves"].items():
        if curve:
            lines.append(f"- training `{regime}`: success {curve[0]['success_rate']:.2f} at iteration 0, "
                         f"{curve[-1]['success_rate']:.2f} at iteration {curve[-1]['iteration']}")
    lines.append("")
    for claim in summary["claims"]:
        tag = claim.get("reveal") or claim.get("policy") or ""
        lines += [f"## Claim {claim['claim']}{f' ({tag})' if tag else ''}", "", claim["statement"], "",
                  f"**Miniature: {claim['verdict']}.**", "", _measured(claim), ""]
    if summary.get("rewards"):
        lines += ["## Rewards compared", "",
                  "Pass@1 of the policy trained with each reward minus the one trained with "
                  f"`{summary['rewards'][0]['against']}`, same regime, same base, same tasks:", ""]
        for row in summary["rewards"]:
            cell = row["cell"]
            lines.append(f"- {row['reward']} vs {row['against']}, {row['regime']}, reveal={row['reveal']}, "
                         f"T={row['budget']}: {cell['pass']:+.3f} [{cell['ci_low']:+.3f}, {cell['ci_high']:+.3f}] "
                         f"({cell['tasks']} tasks): **{row['verdict']}**")
        lines.append("")
    lines += _limitations(summary)
    lines += ["## Pass@(K,T) grids", ""]
    for key, cells in summary["grids"].items():
        lines += [f"### {key}", "", _table(cells), ""]
    for key, cells in summary["differences"].items():
        lines += [f"### {key} (difference)", "", _table(cells), ""]
    return "\n".join(lines) + "\n"


def _limitations(summary: dict[str, Any]) -> list[str]:
    """What this run can and cannot say, from its own sizes."""
    config, quality = summary["config"], summary["action_quality"]
    tasks = {c["tasks"] for cells in summary["grids"].values() for c in cells}
    states = summary["recovery"]["base"]["failure"]["states"]
    curves = summary["curves"]
    learned = {regime: (curve[0]["success_rate"], curve[-1]["success_rate"]) for regime, curve in curves.items() if curve}
    lines = ["## Limitations", "",
             f"- Sizes: {min(tasks) if tasks else 0}-{max(tasks) if tasks else 0} evaluation tasks per cell, "
             f"{quality['states']} matched states ({quality['differing_states']} where the two differ), {states} "
             f"failure states; training {config['iterations']} iterations x {config['tasks_per_iteration']} tasks x "
             f"{config['group_size']} attempts; one seed ({config['seed']}). Intervals this wide cannot resolve "
             "differences of a few points.",
             ]
    if config.get("max_oracle_turns") is not None:
        lines.append(f"- Tasks: only those whose oracle needs at most {config['max_oracle_turns']} turns, in training "
                     "and measurement alike: what is found holds for short tasks of this family, not its longer ones.")
    if config.get("policy", "linear") == "lm" and config.get("model"):
        trained = f"its top {config['train_layers']} layers" if config.get("train_layers") else "all of it"
        lines += [f"- The policy is the pretrained model `{config['model']}`, fine-tuned ({trained}) on a few hundred "
                  "scripted episodes of one family. The reference findings are about LLMs trained at scale; a "
                  "model this small can only show whether the same direction appears at its size."]
    elif config.get("policy", "linear") == "lm":
        lines += ["- The policy is a language model of a few million parameters at most, trained from scratch on a "
                  "few hundred scripted episodes: no pretrained prior, a tokenizer trained on the suite's own text. "
                  "The reference findings are about LLMs trained at scale; a miniature can only show whether the "
                  "same direction appears at this size."]
    else:
        lines += ["- The policy is a linear softmax over the env's own candidate actions (admissible commands, or the "
                  "oracle's action among the family's proposed mistakes): it never writes an action, and the "
                  "candidates include the right one, which no language model is given. What it learns says little "
                  "about what a language model learns.",
                  "- No pretrained prior: the base is hand-set, not a model's; the reference findings are about LLMs "
                  "trained at scale, and a miniature can only show whether the same direction appears at this size."]
    base_cells = summary["grids"].get("base/none") or []
    if base_cells and all(c["pass"] == 0 for c in base_cells):
        lines.append("- The base succeeded on no evaluation task at any K and T: under the sparse reward its GRPO groups "
                     "all earn the same and carry no gradient, so the trained policies can differ from it only by "
                     "what other rewards taught them.")
    if learned:
        lines.append("- Training success (first and last iteration): " + ", ".join(
            f"{regime} {a:.2f} -> {b:.2f}" for regime, (a, b) in learned.items())
            + ". Where training barely moved, every trained-minus-base comparison measures little but noise.")
    return lines + [""]


def _measured(claim: dict[str, Any]) -> str:
    measured = claim["measured"]
    if measured is None:
        return "- not measured"
    if claim["claim"] in (1, 4):
        parts = []
        for key, cell in measured.items():
            if isinstance(cell, list):
                parts.append(f"- {key}: " + ", ".join(f"T={c['budget']}: {c['pass']:+.3f} [{c['ci_low']:+.3f}, "
                                                      f"{c['ci_high']:+.3f}]" for c in cell))
            else:
                parts.append(f"- {key}: {cell['pass']:+.3f} [{cell['ci_low']:+.3f}, {cell['ci_high']:+.3f}] "
                             f"(T={cell['budget']}, K={cell['k']}, {cell['tasks']} tasks)")
        return "\n".join(parts)
    if claim["claim"] == 2:
        differ = measured["differing_states"]
        where = ("- the two never differ in quality" if not differ else
                 f"- at the {differ} of {measured['states']} states where the two differ, trained better at "
                 f"{measured['b_better_where_differ']:.1%} [{measured['b_better_where_differ_ci'][0]:.1%}, "
                 f"{measured['b_better_where_differ_ci'][1]:.1%}]")
        return (where + "\n"
                f"- of all {measured['states']} states: trained better at {measured['b_better']:.1%}, base better at "
                f"{measured['a_better']:.1%}, ties {measured['ties']:.1%}; mean quality base "
                f"{measured['mean_quality_a']:.3f}, trained {measured['mean_quality_b']:.3f}, difference "
                f"{measured['mean_difference']:+.3f} [{measured['difference_ci'][0]:+.3f}, "
                f"{measured['difference_ci'][1]:+.3f}]")
    low, high = measured["ci"]
    return (f"- success from failure states: base {measured['base']:.3f}, {claim['policy']} "
            f"{measured[claim['policy']]:.3f}, difference {measured['difference']:+.3f} [{low:+.3f}, {high:+.3f}]")


def _table(cells: Sequence[dict[str, Any]]) -> str:
    budgets = sorted({c["budget"] for c in cells})
    ks = sorted({c["k"] for c in cells})
    rows = ["| T \\ K | " + " | ".join(str(k) for k in ks) + " |", "|---" * (len(ks) + 1) + "|"]
    for budget in budgets:
        rows.append(f"| {budget} | " + " | ".join(f"{_cell(cells, budget, k)['pass']:.3f}" for k in ks) + " |")
    return "\n".join(rows)


def _plots(out: Path, summary: dict[str, Any]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return  # the report stands without its plots; the eval extra brings matplotlib
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for axis, reveal in zip(axes, REVEALS):
        for name in sorted({key.split("/")[0] for key in summary["grids"]}):
            cells = [c for c in summary["grids"][f"{name}/{reveal}"] if c["k"] == min(c["k"] for c in
                                                                                  summary["grids"][f"{name}/{reveal}"])]
            axis.plot([c["budget"] for c in cells], [c["pass"] for c in cells], marker="o", label=name)
        axis.set_title(f"Pass@1 by budget, reveal={reveal}")
        axis.set_xlabel("T (share of the full budget)")
        axis.set_ylim(0, 1)
        axis.legend()
    figure.tight_layout()
    figure.savefig(out / "pass_by_budget.png", dpi=100)
    plt.close(figure)
    figure, axis = plt.subplots(figsize=(5, 3.5))
    for regime, curve in summary["curves"].items():
        axis.plot([r["iteration"] for r in curve], [r["success_rate"] for r in curve], label=regime)
    axis.set_xlabel("iteration")
    axis.set_ylabel("training success")
    axis.legend()
    figure.tight_layout()
    figure.savefig(out / "training_curves.png", dpi=100)
    plt.close(figure)


def _jsonable(config: StudyConfig) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, tuple) else value for key, value in vars(config).items()}


__all__ = ["StudyConfig", "compare_rewards", "interval_verdict", "judge_claims", "policy_names", "paired_states", "quality_summary", "render_report", "run_study", "summarize_study", "trained_policies"]
