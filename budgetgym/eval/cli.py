"""The evaluation verbs of the ``budgetgym`` command: ``eval``, ``probe recovery``,
``probe action-quality``, ``probe exploits``, ``report`` and ``compare``. ``budgetgym.cli`` adds them with
:func:`add_commands`; each verb's ``func`` takes the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from budgetgym.core.env import text_env
from budgetgym.eval._extras import MissingExtraError
from budgetgym.eval.agents import AgentError, make_agent
from budgetgym.eval.executors import EXECUTORS, make_executor
from budgetgym.eval.sweep import DEFAULT_BUDGETS, DEFAULT_KS
from budgetgym.wrappers import REVEAL_MODES, parse_budget


def default_env_ids() -> list[str]:
    """The self-contained registered envs (adapters need data or extras, so they are opt-in)."""
    import budgetgym

    return [entry.id for entry in budgetgym.REGISTRY if not entry.adapter]


# ------------------------------------------------------------------ argument types


def _budget_list(text: str) -> list[int | float]:
    """``"0.25,0.5,8"``: floats are shares of each task's full budget, ints are turns."""
    try:
        return [parse_budget(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated ints, got {text!r}") from None


def _reveal_list(text: str) -> list[str]:
    modes = [part.strip() for part in text.split(",") if part.strip()]
    for mode in modes:
        if mode not in REVEAL_MODES:
            raise argparse.ArgumentTypeError(f"reveal modes are {', '.join(REVEAL_MODES)}; got {mode!r}")
    return modes


def _tasks(text: str | None) -> Any:
    """A split name or a task id, a count (the first n tasks), or comma-separated task ids."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    return text.split(",") if "," in text else text


# ------------------------------------------------------------------ shared options


def _add_agent_options(parser: argparse.ArgumentParser, *agents: tuple[str, str]) -> None:
    """One option per (name, default agent), and the options of served models."""
    for name, default in agents:
        parser.add_argument(f"--{name}", default=default,
                            help="oracle, random, noisy-oracle, noisy-oracle:P (mistake share P), or openai:MODEL")
    chat = parser.add_argument_group("served models (openai:MODEL)")
    chat.add_argument("--base-url", default=None, help="OpenAI-compatible root, e.g. http://127.0.0.1:8000/v1 "
                      "(default $OPENAI_BASE_URL)")
    chat.add_argument("--api-key", default=None, help="default $OPENAI_API_KEY")
    chat.add_argument("--temperature", type=float, default=0.7)
    chat.add_argument("--max-tokens", type=int, default=None)
    chat.add_argument("--tool-mode", choices=("auto", "native", "text"), default="auto")


def _agent(args: argparse.Namespace, spec: str) -> Any:
    return make_agent(spec, base_url=args.base_url, api_key=args.api_key, temperature=args.temperature,
                      max_tokens=args.max_tokens, tool_mode=args.tool_mode) if spec.startswith("openai:") \
        else make_agent(spec)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--executor", choices=EXECUTORS, default="serial")
    parser.add_argument("--workers", type=int, default=None,
                        help="threads (default 8: for served models), processes or Ray CPUs (default: all cores)")
    parser.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: start a local one)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _executor(args: argparse.Namespace) -> Any:
    return make_executor(args.executor, args.workers, args.ray_address)


def _handled(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Report an agent, extra or input error as one line and exit code 1, not a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except (AgentError, MissingExtraError, ValueError, KeyError, FileNotFoundError) as err:
            print(f"budgetgym: error: {err}", file=sys.stderr)
            return 1

    run.__doc__ = command.__doc__
    return run


# ------------------------------------------------------------------ verbs


@_handled
def cmd_eval(args: argparse.Namespace) -> int:
    """Run a Pass@(K,T) sweep over one or more envs and write the episodes and the report."""
    from budgetgym.eval.episode_log import read_records
    from budgetgym.eval.report import print_summary, summarize, write_report
    from budgetgym.eval.sweep import run_sweep

    env_ids = args.env or default_env_ids()
    if not env_ids:
        raise ValueError("no environment registered; name one with --env")
    ks = args.k or list(DEFAULT_KS)  # report and compare infer their grid; eval runs the default one
    budgets = args.budgets or list(DEFAULT_BUDGETS)
    out = Path(args.out)
    episodes_path = out / "episodes.jsonl"
    agent = _agent(args, args.agent)
    executor = _executor(args)
    started = time.perf_counter()
    ran = 0
    try:
        for env_id in env_ids:
            result = run_sweep(env_id, agent, tasks=_tasks(args.tasks), k=ks, budgets=budgets,
                               reveal=args.reveal, seed=args.seed, executor=executor, out=episodes_path, n=args.n,
                               shortcut=not args.no_shortcut, progress=not args.no_progress)
            ran += result.ran
    except KeyboardInterrupt:
        print(f"budgetgym: interrupted; the finished episodes are in {episodes_path}: run the same command to "
              "resume", file=sys.stderr)
        return 130
    wanted = set(env_ids)
    records = [r for r in read_records(episodes_path) if r["env"] in wanted and r["agent"] == agent.name
               and r["reveal"] in args.reveal]
    summary = summarize(records, budgets, ks)
    files = write_report(summary, out)
    if not args.quiet:
        print_summary(summary)
    elapsed = time.perf_counter() - started
    print(f"{ran} episodes run ({len(records) - ran} resumed from {episodes_path}) in {elapsed:.1f}s; "
          f"wrote {episodes_path}, " + ", ".join(str(p) for p in files.values()))
    return 0


@_handled
def cmd_report(args: argparse.Namespace) -> int:
    """Tables, JSON, CSV and plots from an episodes file."""
    from budgetgym.eval.episode_log import read_records
    from budgetgym.eval.report import print_summary, summarize, write_report

    summary = summarize(read_records(args.episodes), args.budgets, args.k)
    out = Path(args.out) if args.out else Path(args.episodes).parent
    files = write_report(summary, out)
    if not args.quiet:
        print_summary(summary)
    print("wrote " + ", ".join(str(p) for p in files.values()))
    return 0


@_handled
def cmd_compare(args: argparse.Namespace) -> int:
    """Pass@(K,T) of run B minus run A, with paired bootstrap CIs, and the difference heatmap."""
    from budgetgym.eval.episode_log import read_records
    from budgetgym.eval.report import compare, print_comparison, write_comparison

    records_a, records_b = read_records(args.a), read_records(args.b)
    if not records_a or not records_b:
        raise ValueError("both episode files must hold episodes")
    label_a, label_b = records_a[0]["agent"], records_b[0]["agent"]
    if label_a == label_b:
        label_a, label_b = Path(args.a).stem, Path(args.b).stem
    comparison = compare(records_a, records_b, label_a=label_a, label_b=label_b, budgets=args.budgets, ks=args.k)
    files = write_comparison(comparison, args.out)
    if not args.quiet:
        print_comparison(comparison)
    print("wrote " + ", ".join(str(p) for p in files.values()))
    return 0


@_handled
def cmd_probe_recovery(args: argparse.Namespace) -> int:
    """Recovery from curated failure states against their matched clean states, per failure kind."""
    from budgetgym.eval.probes import run_recovery_probe
    from budgetgym.eval.report import print_recovery

    env_id = args.env or _first_env_with_failure_states()
    result = run_recovery_probe(env_id, _agent(args, args.agent), kinds=args.kinds, attempts=args.attempts,
                                seed=args.seed, executor=_executor(args), progress=not args.no_progress)
    path = _write_json(result, args.out, "recovery.json")
    if not args.quiet:
        print_recovery(result)
    print(f"wrote {path}")
    return 0


@_handled
def cmd_probe_action_quality(args: argparse.Namespace) -> int:
    """Two agents' next actions at matched states, scored by Monte Carlo continuations."""
    from budgetgym.eval.probes import run_action_quality_probe
    from budgetgym.eval.report import print_action_quality

    env_id = args.env or default_env_ids()[0]
    result = run_action_quality_probe(env_id, _agent(args, args.agent_a), _agent(args, args.agent_b),
                                      _agent(args, args.reference), tasks=_tasks(args.tasks),
                                      rollouts=args.rollouts, seed=args.seed, executor=_executor(args),
                                      progress=not args.no_progress)
    path = _write_json(result, args.out, "action_quality.json")
    if not args.quiet:
        print_action_quality(result)
    print(f"wrote {path}")
    return 0


@_handled
def cmd_probe_exploits(args: argparse.Namespace) -> int:
    """Pass@1 at full budget of every exploit agent that concerns each env, beside the oracle and random."""
    import budgetgym
    from budgetgym.eval.probes import format_exploit_table, run_exploit_probe

    results, unavailable = [], []
    for env_id in args.env or [entry.id for entry in budgetgym.REGISTRY]:
        try:
            results.append(run_exploit_probe(env_id, tasks=_tasks(args.tasks), sample=args.sample,
                                             attempts=args.attempts, seed=args.seed, threshold=args.threshold,
                                             executor=_executor(args), progress=not args.no_progress))
        except (ImportError, FileNotFoundError) as err:  # an adapter whose extra or data is missing
            unavailable.append({"env": env_id, "unavailable": str(err)})
    path = _write_json(results + unavailable, Path(args.out), "exploits.json")
    if not args.quiet:
        print(format_exploit_table(results))
        for row in unavailable:
            print(f"\n{row['env']}: unavailable: {row['unavailable']}")
    print(f"wrote {path}")
    flagged = [f"{r['env']}: {', '.join(r['flagged'])}" for r in results if r["flagged"] and not r["upstream"]]
    if args.check and flagged:
        print("budgetgym: exploits beat the random agent: " + "; ".join(flagged), file=sys.stderr)
        return 1
    return 0


def _first_env_with_failure_states() -> str:
    import gymnasium as gym

    for env_id in default_env_ids():
        env = gym.make(env_id)
        try:
            if text_env(env).failure_states():
                return env_id
        finally:
            env.close()
    raise ValueError("no registered env ships failure states; name one with --env")


def _write_json(result: Any, out: str, name: str) -> Path:
    path = Path(out) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ registration


def add_commands(subparsers: Any) -> None:
    """Add ``eval``, ``probe`` (``recovery``, ``action-quality``), ``report`` and ``compare``."""
    grid = argparse.ArgumentParser(add_help=False)
    grid.add_argument("--k", type=_int_list, default=None, help="the K of the grid, e.g. 1,2,4,8")
    grid.add_argument("--budgets", type=_budget_list, default=None,
                      help="the T of the grid: shares of each task's full budget (0.25) or turns (8)")
    grid.add_argument("--quiet", action="store_true", help="no tables on the terminal")

    evaluate = subparsers.add_parser("eval", parents=[grid], help="Pass@(K,T) sweep of an agent, with a report",
                                     description=cmd_eval.__doc__)
    evaluate.add_argument("--env", action="append", default=None,
                          help="an env id (repeatable; default: every self-contained registered env)")
    _add_agent_options(evaluate, ("agent", "noisy-oracle"))
    evaluate.add_argument("--n", type=int, default=None, help="attempts per task per budget (default: max K)")
    evaluate.add_argument("--reveal", type=_reveal_list, default=["none"],
                          help="reveal modes, comma-separated: none (one run serves every T), total, remaining")
    evaluate.add_argument("--tasks", default=None, help="a split, a count (the first n tasks), or task ids a,b,c")
    evaluate.add_argument("--no-shortcut", action="store_true", help="under reveal=none, run every T separately")
    evaluate.add_argument("--out", default="runs/eval", help="folder for episodes.jsonl and the report")
    _add_run_options(evaluate)
    evaluate.set_defaults(func=cmd_eval)

    probe = subparsers.add_parser("probe", help="recovery and action-quality probes")
    probes = probe.add_subparsers(dest="probe", required=True)
    recovery = probes.add_parser("recovery", help="recovery from curated failure states vs matched clean states",
                                 description=cmd_probe_recovery.__doc__)
    recovery.add_argument("--env", default=None, help="default: the first registered env with failure states")
    _add_agent_options(recovery, ("agent", "noisy-oracle"))
    recovery.add_argument("--kinds", type=lambda t: t.split(","), default=None, help="failure kinds (default: all)")
    recovery.add_argument("--attempts", type=int, default=8, help="episodes per state and arm")
    recovery.add_argument("--out", default="runs/probe")
    recovery.add_argument("--quiet", action="store_true")
    _add_run_options(recovery)
    recovery.set_defaults(func=cmd_probe_recovery)

    quality = probes.add_parser("action-quality", help="two agents' next actions at matched states",
                                description=cmd_probe_action_quality.__doc__)
    quality.add_argument("--env", default=None, help="default: the first registered env")
    _add_agent_options(quality, ("agent-a", "noisy-oracle"), ("agent-b", "oracle"), ("reference", "noisy-oracle"))
    quality.add_argument("--tasks", default="5", help="the states are the oracle's path on these tasks")
    quality.add_argument("--rollouts", type=int, default=8, help="continuations per action")
    quality.add_argument("--out", default="runs/probe")
    quality.add_argument("--quiet", action="store_true")
    _add_run_options(quality)
    quality.set_defaults(func=cmd_probe_action_quality)

    exploits = probes.add_parser("exploits", help="exploit agents' Pass@1 beside the oracle's and random's",
                                 description=cmd_probe_exploits.__doc__)
    exploits.add_argument("--env", action="append", default=None, help="an env id (repeatable; default: every id)")
    exploits.add_argument("--tasks", default=None, help="a split, a count (the first n tasks), or task ids a,b,c")
    exploits.add_argument("--sample", type=int, default=None, help="a seeded sample of that many of those tasks")
    exploits.add_argument("--attempts", type=int, default=1, help="episodes per task and agent")
    exploits.add_argument("--threshold", type=float, default=0.05, help="largest allowed excess over random")
    exploits.add_argument("--check", action="store_true", help="exit 1 when an exploit beats the threshold")
    exploits.add_argument("--out", default="runs/probe")
    exploits.add_argument("--quiet", action="store_true")
    _add_run_options(exploits)
    exploits.set_defaults(func=cmd_probe_exploits)

    report = subparsers.add_parser("report", parents=[grid], help="tables, JSON, CSV and plots from episodes",
                                   description=cmd_report.__doc__)
    report.add_argument("episodes", help="an episodes .jsonl file")
    report.add_argument("--out", default=None, help="default: the episodes file's folder")
    report.set_defaults(func=cmd_report)

    comparison = subparsers.add_parser("compare", parents=[grid], help="Pass@(K,T) of run B minus run A",
                                       description=cmd_compare.__doc__)
    comparison.add_argument("a", help="episodes .jsonl of run A")
    comparison.add_argument("b", help="episodes .jsonl of run B")
    comparison.add_argument("--out", default="runs/compare")
    comparison.set_defaults(func=cmd_compare)
