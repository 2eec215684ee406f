"""The evaluation verbs of the ``budgetgym`` command: ``eval``, ``probe recovery``,
``probe action-quality``, ``probe exploits``, ``report`` and ``compare``. ``budgetgym.cli`` adds
them with :func:`add_commands`; each verb's ``func`` takes the parsed arguments and returns an exit code.

Exit codes: 0 done; 2 a usage error (a bad option or value, an unknown env id, a missing or
malformed file, an --out that is not a folder or cannot be written), as argparse's own; 1 a failure
while running (a server that cannot be reached, a missing extra, a backend that cannot run here,
another sweep writing the same folder); 130 interrupted (Ctrl-C), with the finished episodes kept
for a resume. Every error is one line on standard error, never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from budgetgym.core.env import BackendUnavailable, text_env
from budgetgym.core.process_reward import REWARD_MODES
from budgetgym.core.extras import EXIT_MISSING_EXTRA, MissingExtra, require
from budgetgym.core.jsonl import write_text
from budgetgym.eval.agents import AgentError, agent_forms, is_served, make_agent
from budgetgym.eval.agents.openai_chat import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from budgetgym.eval.episode_log import SweepLockedError
from budgetgym.eval.executors import EXECUTORS, ExecutorError, make_executor
from budgetgym.eval.sweep import DEFAULT_BUDGETS, DEFAULT_BUDGETS_BY_UNIT, DEFAULT_KS
from budgetgym.core.budgets import REVEAL_MODES, UNITS, parse_budget

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(ValueError):
    """What the user typed cannot work (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors are one line (argparse prints the whole usage first)."""

    def error(self, message: str) -> Any:  # argparse's hook: must not return
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default in ``--help`` (where it has one worth showing)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or action.default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            return text
        return text + " (default: %(default)s)"


def default_env_ids() -> list[str]:
    """The self-contained registered envs (adapters need data or extras, so they are opt-in)."""
    import budgetgym

    return [entry.id for entry in budgetgym.REGISTRY if not entry.adapter]


def check_env_id(env_id: str) -> str:
    """``env_id`` if Gymnasium knows it; else a UsageError that names the closest registered ids."""
    import gymnasium as gym

    import budgetgym  # noqa: F401  (registers the ids)

    if env_id in gym.registry:
        return env_id
    known = sorted(gym.registry)
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.85) or \
        difflib.get_close_matches(env_id, known, n=3, cutoff=0.6)
    if not close:  # "FunctionCalling-v0" without its namespace, or a lower-case spelling
        lowered = {k.lower(): k for k in known}
        close = [lowered[k] for k in difflib.get_close_matches(env_id.lower(), list(lowered), n=3, cutoff=0.4)]
        close += [k for k in known if k.lower().endswith("/" + env_id.lower()) and k not in close]
    hint = f"; did you mean {', '.join(close[:-1]) + ' or ' if len(close) > 1 else ''}{close[-1]}?" if close else ""
    raise UsageError(f"unknown env id {env_id!r}{hint} (`budgetgym list` shows every id)")


def out_folder(path: str) -> Path:
    """``--out`` as a folder, created if missing: refused when it names something that is not a
    folder (a file, /dev/null) or a folder this process cannot write to, before any work starts."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--out must be a folder, and {path} is a file")
    for parent in folder.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"--out {path}: {parent} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".budgetgym-write-check.{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise UsageError(f"--out {path}: cannot write there ({err.strerror or err})") from None
    return folder


def episodes_file(path: str) -> Path:
    """An episodes file from what the user named: the file, or a run folder holding episodes.jsonl."""
    given = Path(path)
    if given.is_dir():
        given = given / "episodes.jsonl"
        if not given.exists():
            raise UsageError(f"{path} is a folder without an episodes.jsonl: name a run folder or an episodes file")
    elif not given.exists():
        raise UsageError(f"no such file or folder: {path}")
    return given


def check_extras(*modules: tuple[str, str]) -> None:
    """Import what a command will need before it starts (not after an hour of sweeping)."""
    for module, purpose in modules:
        require(module, purpose)


# ------------------------------------------------------------------ argument types
# Every number is checked for range and finiteness where it is parsed: a value past these bounds is
# a typo, not a plan, and is refused in one line before anything runs.

#: The largest K (and attempt count) a grid may ask for.
MAX_K = 10_000
#: Seeds are non-negative and fit in 32 bits (NumPy's seeding range on every platform).
MAX_SEED = 2**32 - 1
#: The largest port number.
MAX_PORT = 65_535


def int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``[low, high]`` (no upper bound when ``high`` is None)."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {text!r}")
        return value
    return parse


def text_argument(text: str) -> str:
    """An argparse type: a name or path with something in it (not empty or only white space, no
    control characters)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a name, got {text!r}")
    if any(c < " " or c == "\x7f" for c in text):
        raise argparse.ArgumentTypeError(f"expected a name without control characters, got {text!r}")
    return text


def float_in(low: float, high: float | None = None, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of at least ``low`` (above it when ``above``), at most ``high``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or value < low or (above and value == low) or (high is not None and value > high):
            bound = f"{'above' if above else 'at least'} {low:g}"
            bound += f" and at most {high:g}" if high is not None else ""
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
        return value
    return parse


def _parts(text: str, what: str) -> list[str]:
    """The comma-separated parts of ``text``, none empty (``","`` and ``"1,,2"`` are refused)."""
    parts = [part.strip() for part in text.split(",")]
    if not any(parts) or not all(parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}")
    return parts


def _budget_list(text: str) -> list[int | float | str]:
    """``"1x,1.5x,0.5,8"``: multiples of each task's shortest solution, shares of its full budget, turns."""
    try:
        return [parse_budget(part) for part in _parts(text, "budgets")]
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _k_list(text: str) -> list[int]:
    """``"1,2,4,8"``: the K of a grid, each from 1 to :data:`MAX_K`."""
    parse = int_in(1, MAX_K)
    return [parse(part) for part in _parts(text, "integers")]


def _reveal_list(text: str) -> list[str]:
    modes = _parts(text, "reveal modes")
    for mode in modes:
        if mode not in REVEAL_MODES:
            raise argparse.ArgumentTypeError(f"reveal modes are {', '.join(REVEAL_MODES)}; got {mode!r}")
    return modes


def _name_list(text: str) -> list[str]:
    return _parts(text, "names")


seed_argument = int_in(0, MAX_SEED)
count_argument = int_in(1, MAX_K)


def env_argument(text: str) -> tuple[str, Any]:
    """An argparse type: ``KEY=VALUE``, an env keyword argument, VALUE read as JSON where it is JSON
    (``tier=3``, ``options={"a": 1}``, ``flag=true``) and else as text (``task_set=libraries``)."""
    key, equals, value = text.partition("=")
    if not equals or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with KEY a Python name, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def add_env_arg_option(parser: argparse.ArgumentParser) -> None:
    """``--env-arg KEY=VALUE``, repeatable: the keyword arguments every env of the command is made with."""
    parser.add_argument("--env-arg", type=env_argument, action="append", default=[], metavar="KEY=VALUE",
                        help="an env keyword argument, VALUE as JSON or else text (e.g. task_set=libraries, "
                             "backend=docker); repeatable")


def env_kwargs_of(args: argparse.Namespace, **taken: str | None) -> dict[str, Any]:
    """The ``--env-arg`` pairs as keyword arguments: a key given twice, or one the command sets itself
    (``taken`` maps such a key to the option that sets it, None where no option does), is refused."""
    kwargs: dict[str, Any] = {}
    for key, value in args.env_arg:
        if key in kwargs:
            raise UsageError(f"--env-arg {key} is given twice: give each keyword once")
        if key in taken:
            option = taken[key]
            raise UsageError(f"--env-arg {key}: " + (f"set it with {option}" if option else
                                                      "this command sets it itself"))
        kwargs[key] = value
    return kwargs


def make_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """``gym.make(env_id, **kwargs)``, where a keyword the env does not take (``--env-arg``) is a
    UsageError naming the env, not a traceback."""
    import gymnasium as gym

    try:
        return gym.make(env_id, **kwargs)
    except TypeError as err:
        raise UsageError(f"--env-arg: {env_id} does not take {', '.join(sorted(kwargs))} "
                         f"({str(err).split(' was raised from')[0]})") from None


def check_env_kwargs(env_ids: list[str], kwargs: dict[str, Any]) -> None:
    """Make each env with the ``--env-arg`` keywords once before any work, so a keyword or value an
    env refuses is one line before anything runs, not an error an hour into a sweep."""
    if kwargs:
        for env_id in env_ids:
            make_env(env_id, kwargs).close()


def _tasks(text: str | None) -> Any:
    """A split name or a task id, a count (the first n tasks of the default), or comma-separated task ids."""
    if text is None:
        return None
    if text.isdigit():
        if int(text) < 1:
            raise UsageError(f"--tasks {text}: a count must be at least 1")
        return int(text)
    if not text.strip():
        raise UsageError("--tasks is empty: name a split, a count or task ids")
    if "," not in text:
        return text
    try:
        return _parts(text, "task ids")
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"--tasks: {err}") from None


def _env_ids(given: list[str] | None) -> list[str] | None:
    """The ``--env`` ids, each known, none twice (None when none was given)."""
    if not given:
        return None
    twice = sorted({env_id for env_id in given if given.count(env_id) > 1})
    if twice:
        raise UsageError(f"--env {twice[0]} is given twice: name each env once")
    return [check_env_id(env_id) for env_id in given]


# ------------------------------------------------------------------ shared options


def _add_agent_options(parser: argparse.ArgumentParser, *agents: tuple[str, str]) -> None:
    """One option per (name, default agent), and the options of served models."""
    for name, default in agents:
        parser.add_argument(f"--{name}", default=default, help=agent_forms())
    chat = parser.add_argument_group("served models (openai:MODEL)")
    chat.add_argument("--base-url", default=None, help="the server's OpenAI-compatible root, e.g. "
                      "http://127.0.0.1:8000/v1 (default: $OPENAI_BASE_URL)")
    chat.add_argument("--api-key", default=None, help="the API key (default: $OPENAI_API_KEY; local servers "
                      "ignore it)")
    chat.add_argument("--temperature", type=float_in(0.0, 2.0), default=0.7, help="sampling temperature (pass@k "
                      "with k > 1 wants it above 0)")
    # At most what a server's 32-bit field holds: a larger cap means nothing and some servers refuse it per request.
    chat.add_argument("--max-tokens", type=int_in(1, 2**31 - 1), default=None, help="cap on each reply (default: the server's)")
    chat.add_argument("--timeout", type=float_in(0.0, above=True), default=DEFAULT_TIMEOUT,
                      help="seconds a request waits for the server's next bytes before it is retried")
    chat.add_argument("--max-retries", type=int_in(0, 100), default=DEFAULT_MAX_RETRIES,
                      help="retries of a failed or timed-out request before the run stops with one line "
                           "(a stalled server costs (retries + 1) x timeout a turn)")
    chat.add_argument("--stream", action="store_true", help="read replies as they are generated (the timeout "
                      "then bounds the wait between chunks, not a whole long reply)")
    chat.add_argument("--tool-mode", choices=("auto", "native", "text"), default="auto",
                      help="native: tools in the request; text: tools in the prompt, calls read from the reply "
                           "(for servers that drop tools, e.g. llama-cpp-python's default chat format); auto: "
                           "native, falling back to text when the server refuses tools or an episode gets no "
                           "tool call")


def _agent(args: argparse.Namespace, spec: str) -> Any:
    return make_agent(spec, base_url=args.base_url, api_key=args.api_key, temperature=args.temperature,
                      max_tokens=args.max_tokens, tool_mode=args.tool_mode, timeout=args.timeout,
                      max_retries=args.max_retries, stream=args.stream)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=seed_argument, default=0,
                        help="the run's seed: every episode's seed derives from it")
    parser.add_argument("--executor", choices=EXECUTORS, default=None,
                        help="where episodes run (default: threads for a served model, else serial)")
    parser.add_argument("--workers", type=int_in(1, 1024), default=None,
                        help="threads (default 8), processes or Ray CPUs (default: all cores)")
    parser.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: start a local one)")
    parser.add_argument("--ray-logs", action="store_true", help="show Ray's own log lines")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _executor(args: argparse.Namespace, *agent_specs: str) -> Any:
    name = args.executor or ("threads" if any(is_served(s) for s in agent_specs) else "serial")
    return make_executor(name, args.workers, args.ray_address, verbose=args.ray_logs)


def _failure(message: Any, code: int) -> int:
    print(f"budgetgym: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a verb of the ``budgetgym`` command: a user's error is one line (exit 2), a failure while
    running one line (exit 1: a missing extra, a backend that cannot run here, a server that cannot
    be reached), Ctrl-C a note that the finished work is kept (exit 130): never a traceback."""
    import gymnasium as gym

    try:
        return command(args)
    except KeyboardInterrupt:
        print("\nbudgetgym: interrupted; what finished is kept: run the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MissingExtra as err:
        return _failure(err, EXIT_MISSING_EXTRA)
    except (AgentError, ExecutorError, BackendUnavailable, SweepLockedError) as err:
        return _failure(err, EXIT_FAILURE)
    except KeyError as err:  # a KeyError's str() is the repr of its argument
        return _failure(err.args[0] if err.args else err, EXIT_USAGE)
    except OSError as err:  # a path the user named (a read-only folder, a full device), or the network
        if err.filename is not None:
            return _failure(f"{err.filename}: {err.strerror or err}", EXIT_USAGE)
        return _failure(err, EXIT_FAILURE)
    except (ValueError, ImportError, gym.error.Error) as err:
        return _failure(err, EXIT_USAGE)


def _handled(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``command`` run through :func:`run_command` (its one-line errors and exit codes)."""

    def run(args: argparse.Namespace) -> int:
        return run_command(command, args)

    run.__doc__ = command.__doc__
    return run


# ------------------------------------------------------------------ verbs

_TABLES = ("rich.table", "terminal tables (--quiet leaves them out)")
_PLOTS = ("matplotlib.figure", "PNG plots")
_PROGRESS = ("rich.progress", "progress bars")
_CHAT = ("openai", "the OpenAI-compatible chat agent")


def _needs(args: argparse.Namespace, *agent_specs: str, plots: bool = True) -> bool:
    """Every extra the command will use, checked before it starts; returns whether the plots can be
    written. Plots and progress bars are what an install without the eval extra leaves out, saying
    so (the episodes, JSON and CSV need no extra); tables (without --quiet), a served model and Ray
    are refused in one line when their package is missing."""
    needed = []
    if not getattr(args, "quiet", False):
        needed.append(_TABLES)
    if any(is_served(spec) for spec in agent_specs):
        needed.append(_CHAT)
    if getattr(args, "executor", None) == "ray":
        needed.append(("ray", "the Ray executor"))
    check_extras(*needed)
    if not getattr(args, "no_progress", True) and not _available(*_PROGRESS):
        print("budgetgym: note: no progress bars (the 'rich' package is missing: pip install 'budgetgym[eval]')",
              file=sys.stderr)
        args.no_progress = True
    if plots and not _available(*_PLOTS):
        print("budgetgym: note: the plots are left out (the 'matplotlib' package is missing: "
              "pip install 'budgetgym[eval]'); the episodes, JSON and CSV are written", file=sys.stderr)
        return False
    return plots


def _available(module: str, what: str) -> bool:
    try:
        require(module, what)
    except MissingExtra:
        return False
    return True


@_handled
def cmd_eval(args: argparse.Namespace) -> int:
    """Run a Pass@(K,T) sweep over one or more envs and write the episodes and the report."""
    from budgetgym.eval.episode_log import read_records
    from budgetgym.eval.report import print_summary, summarize, write_report
    from budgetgym.eval.sweep import run_sweep

    env_kwargs = env_kwargs_of(args)
    env_ids = _env_ids(args.env)
    if env_ids:
        check_env_kwargs(env_ids, env_kwargs)
    else:
        env_ids = _runnable(default_env_ids(), env_kwargs)
    if not env_ids:
        raise UsageError("no environment registered; name one with --env")
    ks = args.k or list(DEFAULT_KS)  # report and compare infer their grid; eval runs the default one
    budgets = args.budgets or list(DEFAULT_BUDGETS_BY_UNIT[args.unit])
    out = out_folder(args.out)
    episodes_path = out / "episodes.jsonl"
    agent = _agent(args, args.agent)
    executor = _executor(args, args.agent)
    plots = _needs(args, args.agent)
    started = time.perf_counter()
    ran = 0
    splits: set[str] = set()
    try:
        for env_id in env_ids:
            result = run_sweep(env_id, agent, tasks=_tasks(args.tasks), k=ks, budgets=budgets,
                               reveal=args.reveal, seed=args.seed, executor=executor, out=episodes_path, n=args.n,
                               shortcut=not args.no_shortcut, progress=not args.no_progress, unit=args.unit,
                               env_kwargs=env_kwargs)
            ran += result.ran
            splits.update(result.splits)
            if result.duplicates_dropped:
                print(f"budgetgym: dropped {result.duplicates_dropped} duplicate episode lines from {episodes_path}",
                      file=sys.stderr)
    except KeyboardInterrupt:
        print(f"\nbudgetgym: interrupted; the finished episodes are in {episodes_path}: run the same command to "
              "resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    fallback = getattr(agent, "fallback_reason", None)
    if fallback:
        print(f"budgetgym: note: {fallback}", file=sys.stderr)
    wanted = set(env_ids)
    records = [r for r in read_records(episodes_path) if r["env"] in wanted and r["agent"] == agent.name
               and r["reveal"] in args.reveal]
    summary = summarize(records, budgets, ks)
    files = write_report(summary, out, plots=plots)
    if not args.quiet:
        print_summary(summary)
    elapsed = time.perf_counter() - started
    print(f"{ran} episodes run ({len(records) - ran} resumed from {episodes_path}) in {elapsed:.1f}s on split "
          f"{', '.join(sorted(splits))}; wrote {episodes_path}, " + ", ".join(str(p) for p in files.values()))
    return 0


@_handled
def cmd_report(args: argparse.Namespace) -> int:
    """Tables, JSON, CSV and plots from a run's episodes (a run folder or its episodes.jsonl)."""
    from budgetgym.eval.episode_log import read_records
    from budgetgym.eval.report import print_summary, summarize, write_report

    path = episodes_file(args.episodes)
    out = out_folder(args.out) if args.out else path.parent
    plots = _needs(args)
    summary = summarize(read_records(path), args.budgets, args.k)
    files = write_report(summary, out, plots=plots)
    if not args.quiet:
        print_summary(summary)
    print("wrote " + ", ".join(str(p) for p in files.values()))
    return 0


def run_label(path: Path) -> str:
    """A run's label: its folder's name (the file's stem when it lies loose in the current folder)."""
    folder = path.parent.resolve()
    return folder.name if folder != Path.cwd().resolve() and folder.name else path.stem


@_handled
def cmd_compare(args: argparse.Namespace) -> int:
    """Pass@(K,T) of run B minus run A (run folders or episodes files), paired over common tasks."""
    from budgetgym.eval.episode_log import read_records
    from budgetgym.eval.report import compare, print_comparison, write_comparison

    path_a, path_b = episodes_file(args.a), episodes_file(args.b)
    out = out_folder(args.out)
    plots = _needs(args)
    records_a, records_b = read_records(path_a), read_records(path_b)
    for path, records in ((path_a, records_a), (path_b, records_b)):
        if not records:
            raise UsageError(f"{path} holds no episodes")
    label_a = args.label_a or run_label(path_a)
    label_b = args.label_b or run_label(path_b)
    if label_a == label_b:
        label_a, label_b = f"{label_a} (A)", f"{label_b} (B)"
    comparison = compare(records_a, records_b, label_a=label_a, label_b=label_b, budgets=args.budgets, ks=args.k)
    files = write_comparison(comparison, out, plots=plots)
    if not args.quiet:
        print_comparison(comparison)
    print("wrote " + ", ".join(str(p) for p in files.values()))
    return 0


@_handled
def cmd_probe_recovery(args: argparse.Namespace) -> int:
    """Recovery from curated failure states against their matched clean states, per failure kind."""
    from budgetgym.eval.probes import run_recovery_probe
    from budgetgym.eval.report import print_recovery

    env_kwargs = env_kwargs_of(args)
    env_id = check_env_id(args.env) if args.env else _first_env_with_failure_states(env_kwargs)
    check_env_kwargs([env_id], env_kwargs)
    out = out_folder(args.out)
    agent = _agent(args, args.agent)
    executor = _executor(args, args.agent)
    _needs(args, args.agent, plots=False)
    result = run_recovery_probe(env_id, agent, kinds=args.kinds, split=args.split, tasks=args.tasks,
                                attempts=args.attempts, seed=args.seed, env_kwargs=env_kwargs,
                                executor=executor, progress=not args.no_progress,
                                out=out / "recovery_episodes.jsonl")
    path = _write_json(result, out, "recovery.json")
    if not args.quiet:
        print_recovery(result)
    print(f"wrote {path} (episodes: {out / 'recovery_episodes.jsonl'})")
    return 0


@_handled
def cmd_probe_action_quality(args: argparse.Namespace) -> int:
    """Two agents' next actions at matched states, scored by Monte Carlo continuations."""
    from budgetgym.eval.probes import run_action_quality_probe
    from budgetgym.eval.report import print_action_quality

    env_kwargs = env_kwargs_of(args)
    env_id = check_env_id(args.env) if args.env else default_env_ids()[0]
    check_env_kwargs([env_id], env_kwargs)
    out = out_folder(args.out)
    specs = (args.agent_a, args.agent_b, args.reference)
    agents = [_agent(args, spec) for spec in specs]
    executor = _executor(args, *specs)
    _needs(args, *specs, plots=False)
    result = run_action_quality_probe(env_id, *agents, tasks=_tasks(args.tasks), rollouts=args.rollouts,
                                      seed=args.seed, executor=executor, progress=not args.no_progress,
                                      env_kwargs=env_kwargs, out=out / "action_quality_states.jsonl")
    path = _write_json(result, out, "action_quality.json")
    if not args.quiet:
        print_action_quality(result)
    print(f"wrote {path}")
    return 0


@_handled
def cmd_probe_exploits(args: argparse.Namespace) -> int:
    """Pass@1 at full budget of every exploit agent that concerns each env, beside the oracle and random."""
    import budgetgym
    from budgetgym.eval.probes import format_exploit_table, run_exploit_probe

    env_kwargs = env_kwargs_of(args, reward_mode="--reward-mode")
    env_ids = _env_ids(args.env) or [entry.id for entry in budgetgym.REGISTRY]
    if env_kwargs and not args.env:
        raise UsageError("--env-arg needs --env: the keyword arguments of one env mean nothing to the others")
    check_env_kwargs(env_ids, env_kwargs)
    out = out_folder(args.out)
    _needs(args, plots=False)
    results, unavailable = [], []
    for env_id in env_ids:
        try:
            results.append(run_exploit_probe(env_id, tasks=_tasks(args.tasks), sample=args.sample,
                                             attempts=args.attempts, seed=args.seed, threshold=args.threshold,
                                             executor=_executor(args), progress=not args.no_progress,
                                             reward_mode=args.reward_mode, env_kwargs=env_kwargs))
        except (ImportError, FileNotFoundError, BackendUnavailable) as err:  # an extra, data or backend missing
            unavailable.append({"env": env_id, "unavailable": str(err)})
        except ValueError as err:  # an env that cannot give the reward mode says why
            if args.reward_mode == "sparse":
                raise
            unavailable.append({"env": env_id, "unavailable": str(err)})
    path = _write_json(results + unavailable, out, "exploits.json")
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


@_handled
def cmd_probe_budget_awareness(args: argparse.Namespace) -> int:
    """At the same caps, with and without the reveal: what each agent does with a budget it is told of
    (success, turns used, answers given before the work is done, calls spent), per agent and env."""
    from budgetgym.eval.probes import format_awareness_table, run_budget_awareness_probe

    env_kwargs = env_kwargs_of(args)
    env_ids = _env_ids(args.env) or default_env_ids()
    check_env_kwargs(env_ids, env_kwargs)
    out = out_folder(args.out)
    _needs(args, *args.agents, plots=False)
    agents = [_agent(args, spec) for spec in args.agents]
    result = run_budget_awareness_probe(env_ids, agents, tasks=_tasks(args.tasks), budgets=args.budgets or ["1x", "1.5x"],
                                        unit=args.unit, announced=args.announced, attempts=args.attempts,
                                        seed=args.seed, executor=_executor(args, *args.agents), out=out,
                                        progress=not args.no_progress, env_kwargs=env_kwargs)
    path = _write_json(result, out, "budget_awareness.json")
    if not args.quiet:
        print(format_awareness_table(result))
    print(f"wrote {path}")
    return 0


def _runnable(env_ids: list[str], env_kwargs: dict[str, Any]) -> list[str]:
    """The default envs whose backend runs here. Each one that cannot (its extra missing, its
    sandbox, engine or browser broken) is named in one line with the fix, and left out: the default
    sweep is what this machine can run (an env named with --env is refused instead)."""
    from budgetgym.core.env import check_backend

    runnable = []
    for env_id in env_ids:
        try:
            env = make_env(env_id, env_kwargs)
            try:
                check_backend(env)
            finally:
                env.close()
        except (MissingExtra, BackendUnavailable) as err:
            print(f"budgetgym: skipped {env_id}: {' '.join(str(err).split())}", file=sys.stderr)
            continue
        runnable.append(env_id)
    if env_ids and not runnable:
        raise BackendUnavailable("no default env can run here (each one's reason is above)")
    return runnable


def _first_env_with_failure_states(env_kwargs: dict[str, Any]) -> str:
    for env_id in default_env_ids():
        env = make_env(env_id, env_kwargs)
        try:
            if text_env(env).failure_states():
                return env_id
        finally:
            env.close()
    raise UsageError("no registered env ships failure states; name one with --env")


def _write_json(result: Any, out: Path, name: str) -> Path:
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(result, indent=2) + "\n")
    return path


# ------------------------------------------------------------------ registration


def add_commands(subparsers: Any) -> None:
    """Add ``eval``, ``probe`` (``recovery``, ``action-quality``), ``report`` and ``compare``."""
    grid = Parser(add_help=False)
    grid.add_argument("--k", type=_k_list, default=None,
                      help="the K of the grid, e.g. 1,2,4,8 (default: eval 1,2,4,8; report and compare: powers of "
                           "two up to the attempts run)")
    grid.add_argument("--budgets", type=_budget_list, default=None,
                      help="the T of the grid: multiples of each task's shortest solution (1x, 1.5x), shares of its "
                           "full budget (0.5) or turns (8) (default: eval " +
                           ",".join(str(b) for b in DEFAULT_BUDGETS) + "; report and compare: the budgets run)")
    grid.add_argument("--quiet", action="store_true", help="no tables on the terminal")

    evaluate = subparsers.add_parser("eval", parents=[grid], help="Pass@(K,T) sweep of an agent, with a report",
                                     description=cmd_eval.__doc__, formatter_class=Formatter)
    evaluate.add_argument("--env", action="append", default=None,
                          help="an env id (repeatable; default: every self-contained registered env whose backend "
                               "runs here, each one left out named with the command that enables it)")
    _add_agent_options(evaluate, ("agent", "noisy-oracle"))
    evaluate.add_argument("--n", type=count_argument, default=None, help="attempts per task per budget (default: max K)")
    evaluate.add_argument("--reveal", type=_reveal_list, default="none",
                          help="reveal modes, comma-separated: none (the agent is not told T; one run serves every "
                               "T), total, remaining")
    evaluate.add_argument("--tasks", default=None,
                          help="a split (test, train, ...), all, a count (the first n of the default; more than it "
                               "holds is refused), or task ids a,b,c (default: the test split where the env has one)")
    evaluate.add_argument("--no-shortcut", action="store_true", help="under reveal=none, run every T separately")
    evaluate.add_argument("--unit", choices=UNITS, default="turns",
                          help="what the budgets count: turns, tool calls, or tokens of the agent's outputs")
    evaluate.add_argument("--out", default="runs/eval", help="folder for episodes.jsonl and the report")
    add_env_arg_option(evaluate)
    _add_run_options(evaluate)
    evaluate.set_defaults(func=cmd_eval)

    probe = subparsers.add_parser("probe", help="recovery and action-quality probes", formatter_class=Formatter,
                                  description="Recovery from mistakes, and the quality of single actions.")
    probes = probe.add_subparsers(dest="probe", required=True,
                                  metavar="{recovery,action-quality,exploits,budget-awareness}")
    recovery = probes.add_parser("recovery", help="recovery from curated failure states vs matched clean states",
                                 description=cmd_probe_recovery.__doc__, formatter_class=Formatter)
    recovery.add_argument("--env", default=None, help="an env id (default: the first registered env with failure "
                          "states)")
    _add_agent_options(recovery, ("agent", "noisy-oracle"))
    recovery.add_argument("--kinds", type=_name_list, default=None,
                          help="failure kinds, comma-separated (default: all)")
    recovery.add_argument("--split", default=None, help="only the failure states of this split's tasks (default: all)")
    recovery.add_argument("--tasks", type=_name_list, default=None,
                          help="only the failure states of these task ids, comma-separated (default: all)")
    recovery.add_argument("--attempts", type=count_argument, default=8, help="episodes per state and arm")
    recovery.add_argument("--out", default="runs/probe", help="folder for recovery.json and its episodes (resumable)")
    recovery.add_argument("--quiet", action="store_true", help="no tables on the terminal")
    add_env_arg_option(recovery)
    _add_run_options(recovery)
    recovery.set_defaults(func=cmd_probe_recovery)

    quality = probes.add_parser("action-quality", help="two agents' next actions at matched states",
                                description=cmd_probe_action_quality.__doc__, formatter_class=Formatter)
    quality.add_argument("--env", default=None, help="an env id (default: the first registered env)")
    _add_agent_options(quality, ("agent-a", "noisy-oracle"), ("agent-b", "oracle"), ("reference", "noisy-oracle"))
    quality.add_argument("--tasks", default="5", help="the states are the oracle's path on these tasks (as eval's)")
    quality.add_argument("--rollouts", type=count_argument, default=8, help="continuations per action")
    quality.add_argument("--out", default="runs/probe", help="folder for action_quality.json and its states "
                         "(resumable)")
    quality.add_argument("--quiet", action="store_true", help="no tables on the terminal")
    add_env_arg_option(quality)
    _add_run_options(quality)
    quality.set_defaults(func=cmd_probe_action_quality)

    exploits = probes.add_parser("exploits", help="exploit agents' Pass@1 beside the oracle's and random's",
                                 description=cmd_probe_exploits.__doc__, formatter_class=Formatter)
    exploits.add_argument("--env", action="append", default=None, help="an env id (repeatable; default: every id)")
    exploits.add_argument("--tasks", default=None, help="a split, a count (the first n tasks of the default), or task ids a,b,c")
    exploits.add_argument("--sample", type=int_in(1), default=None, help="a seeded sample of that many of those tasks")
    exploits.add_argument("--attempts", type=count_argument, default=1, help="episodes per task and agent")
    exploits.add_argument("--threshold", type=float_in(0.0, 1.0), default=0.05, help="largest allowed excess over random")
    exploits.add_argument("--check", action="store_true", help="exit 1 when an exploit beats the threshold")
    exploits.add_argument("--reward-mode", choices=REWARD_MODES, default="sparse",
                          help="the envs' reward_mode; a process reward also runs the exploits that farm one")
    exploits.add_argument("--out", default="runs/probe", help="folder for exploits.json")
    exploits.add_argument("--quiet", action="store_true", help="no tables on the terminal")
    add_env_arg_option(exploits)
    _add_run_options(exploits)
    exploits.set_defaults(func=cmd_probe_exploits)

    awareness = probes.add_parser("budget-awareness", help="what agents do with a budget they are told of",
                                  description=cmd_probe_budget_awareness.__doc__, formatter_class=Formatter)
    awareness.add_argument("--env", action="append", default=None,
                           help="an env id (repeatable; default: every self-contained registered env)")
    awareness.add_argument("--agents", type=_name_list, default=["noisy-oracle:0.5", "budget-aware:0.5"],
                           help="agents, comma-separated (" + agent_forms() + ")")
    _add_agent_options(awareness)
    awareness.add_argument("--budgets", type=_budget_list, default=None, help="the caps (default: 1x,1.5x)")
    awareness.add_argument("--unit", choices=UNITS, default="turns", help="what the caps count")
    awareness.add_argument("--announced", choices=("remaining", "total"), default="remaining",
                           help="the reveal compared with none")
    awareness.add_argument("--tasks", default="5", help="a split, a count or task ids a,b,c (as eval's)")
    awareness.add_argument("--attempts", type=count_argument, default=2, help="episodes per task, cap and mode")
    awareness.add_argument("--out", default="runs/probe", help="folder for budget_awareness.json and its episodes")
    awareness.add_argument("--quiet", action="store_true", help="no tables on the terminal")
    add_env_arg_option(awareness)
    _add_run_options(awareness)
    awareness.set_defaults(func=cmd_probe_budget_awareness)

    report = subparsers.add_parser("report", parents=[grid], help="tables, JSON, CSV and plots from episodes",
                                   description=cmd_report.__doc__, formatter_class=Formatter)
    report.add_argument("episodes", help="a run folder (holding episodes.jsonl) or an episodes .jsonl file")
    report.add_argument("--out", default=None, help="folder for the report (default: the episodes file's folder)")
    report.set_defaults(func=cmd_report)

    comparison = subparsers.add_parser("compare", parents=[grid], help="Pass@(K,T) of run B minus run A",
                                       description=cmd_compare.__doc__, formatter_class=Formatter)
    comparison.add_argument("a", help="run A: a run folder or its episodes .jsonl file")
    comparison.add_argument("b", help="run B: a run folder or its episodes .jsonl file")
    comparison.add_argument("--label-a", default=None, help="run A's label (default: its folder's name)")
    comparison.add_argument("--label-b", default=None, help="run B's label (default: its folder's name)")
    comparison.add_argument("--out", default="runs/compare", help="folder for the comparison")
    comparison.set_defaults(func=cmd_compare)
