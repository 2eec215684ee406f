"""The ``budgetgym`` command: ``list`` the environments, ``play`` one in the terminal, and the
evaluation verbs of :mod:`budgetgym.eval`."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any, Sequence

import gymnasium as gym

from budgetgym.core.env import text_env
import budgetgym
from budgetgym.eval.cli import add_commands as add_eval_commands
from budgetgym.wrappers import REVEAL_MODES, parse_budget


def budget_argument(text: str) -> int | float:
    """An argparse type: ``"8"`` is an absolute cap, ``"0.5"`` a share of the full budget."""
    try:
        return parse_budget(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def cmd_list(args: argparse.Namespace) -> int:
    rows = []
    for entry in budgetgym.REGISTRY:
        row: dict[str, Any] = {"id": entry.id, "family": entry.family, "adapter": entry.adapter,
                               "description": entry.description}
        try:
            env = gym.make(entry.id)
        except Exception as err:  # an adapter whose extra is missing says how to install it
            row["unavailable"] = str(err)
        else:
            tasks = text_env(env).tasks
            budgets = [t.max_turns for t in tasks]
            row.update(tasks=len(tasks), splits={s: sum(t.split == s for t in tasks) for s in tasks.splits},
                       full_budget={"min": min(budgets), "median": statistics.median(budgets), "max": max(budgets)},
                       failure_states=len(text_env(env).failure_states()))
            env.close()
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['id']}  ({row['family']}{', adapter' if row['adapter'] else ''})")
        print(f"    {row['description']}")
        if "unavailable" in row:
            print(f"    unavailable: {row['unavailable']}")
        else:
            splits = ", ".join(f"{k} {v}" for k, v in row["splits"].items())
            fb = row["full_budget"]
            print(f"    {row['tasks']} tasks ({splits}); full budget {fb['min']}-{fb['max']} turns "
                  f"(median {fb['median']}); {row['failure_states']} failure states")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    env = budgetgym.make(args.env_id, budget=args.budget, reveal=args.reveal,
                         inject_errors=True if args.inject_errors else None,
                         **({"split": args.split} if args.split else {}))
    options = {"task_id": args.task} if args.task else None
    observation, info = env.reset(seed=args.seed, options=options)
    budget = info.get("budget", {"max_turns": info["max_turns"], "used": info["turn"]})
    print(f"Task {info['task_id']}: {budget['max_turns']} turns (full budget {info['max_turns']}). "
          "Type an action; ':tools' lists the tools, ':hint' shows the oracle's next action, ':quit' ends.")
    if "injected_error" in info:
        print(f"[Injected failure: {info['injected_error']['kind']}: {info['injected_error']['description']}]")
    print(observation)
    while True:
        used = info.get("budget", {}).get("used", info["turn"])
        try:
            line = input(f"[turn {used + 1}/{budget['max_turns']}] > ")
        except EOFError:
            print()
            return 0
        if line.strip() == ":quit":
            return 0
        if line.strip() == ":tools":
            for tool in text_env(env).tools.values():
                print(f"  {tool.signature()}  {tool.description}")
            continue
        if line.strip() == ":hint":
            print(f"  oracle: {text_env(env).oracle_action()}")
            continue
        observation, reward, terminated, truncated, info = env.step(line)
        print(observation)
        if terminated or truncated:
            outcome = "solved" if info["success"] else ("out of turns" if truncated else "ended")
            print(f"[{outcome}: reward {reward}, {info['turn']} turns, progress {info['progress']:.2f}]")
            return 0


def cmd_study(args: argparse.Namespace) -> int:
    """Train a small policy from one base at the full budget and under BudgetMix, then measure the
    three on the test split (Pass@(K,T) under announced and unannounced caps, action quality at
    matched states, recovery from failure states) and write report.md. Resumable: run it again
    with the same options to finish an interrupted study."""
    from dataclasses import replace

    from budgetgym.train.study import StudyConfig, run_study

    config = StudyConfig.quick(args.env) if args.quick else StudyConfig(env_id=args.env)
    config = replace(config, seed=args.seed, **({"iterations": args.iterations} if args.iterations else {}))
    run_study(args.out, config)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="budgetgym", description=__doc__)
    parser.add_argument("--version", action="version", version=f"budgetgym {budgetgym.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    listing = commands.add_parser("list", help="the registered environments, their tasks and full budgets")
    listing.add_argument("--json", action="store_true", help="print JSON instead of text")
    listing.set_defaults(func=cmd_list)

    play = commands.add_parser("play", help="play an environment in the terminal")
    play.add_argument("env_id", help="e.g. budgetgym/FunctionCalling-v0")
    play.add_argument("--budget", type=budget_argument, default=None, help="turn cap: an int, or a share in (0, 1]")
    play.add_argument("--reveal", choices=REVEAL_MODES, default="remaining")
    play.add_argument("--task", default=None, help="a task id (default: drawn with --seed)")
    play.add_argument("--split", default=None)
    play.add_argument("--seed", type=int, default=None)
    play.add_argument("--inject-errors", action="store_true", help="start from a curated failure state")
    play.set_defaults(func=cmd_play)

    study = commands.add_parser("study", help="the study in miniature: train full-budget vs BudgetMix, measure, report",
                                description=cmd_study.__doc__)
    study.add_argument("--env", default="budgetgym/Navigation-v0", help="the env to train and measure on (default: %(default)s)")
    study.add_argument("--out", default="runs/study", help="folder for checkpoints, episodes and report.md (default: %(default)s)")
    study.add_argument("--iterations", type=int, default=None, help="training iterations per regime (default: the study's)")
    study.add_argument("--seed", type=int, default=0, help="the seed of training and evaluation (default: %(default)s)")
    study.add_argument("--quick", action="store_true", help="a seconds-long version, to try the pipeline")
    study.set_defaults(func=cmd_study)

    add_eval_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, KeyError, gym.error.Error) as err:
        print(f"budgetgym: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
