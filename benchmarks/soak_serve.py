"""A soak of ``budgetgym serve``: many sessions for many minutes, no error and flat memory.

Not a CI test (it takes its whole duration): run it once per change to the server and keep its
JSON. A ``budgetgym serve`` child process serves FunctionCalling-v0 on loopback; ``--sessions``
client threads each play episodes under a budget drawn from a mix (valid calls, bad actions and
messages, at ``--rate`` steps a second each, as agents that think between turns), and every tenth
episode closes its session and opens a new one. The server's resident memory is sampled every
``--sample-seconds``; the verdict compares the last samples with those after the first minute.

    python benchmarks/soak_serve.py [--sessions 64] [--minutes 10] [--rate 5]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import threading
import time

import gymnasium as gym
from bench_serve import FC, start_server
from timing import target

import budgetgym  # noqa: F401  (registers budgetgym/Remote-v0)

ACTIONS = ('{"name": "nothing", "arguments": {}}', "{not json", "Done, anything else?", "x" * 5000,
           '{"name": "list_events", "arguments": {"date": "2025-03-04"}}', "\ud800 a lone surrogate")


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=5.0, help="steps a second per session")
    parser.add_argument("--sample-seconds", type=float, default=15.0)
    args = parser.parse_args()

    process, url = start_server(FC)
    stop = time.monotonic() + args.minutes * 60
    counts = {"steps": 0, "episodes": 0, "sessions_opened": 0}
    errors: list[str] = []
    lock = threading.Lock()

    def run(index: int) -> None:
        rng = random.Random(index)
        env = None
        episode = 0
        try:
            while time.monotonic() < stop:
                if env is None:
                    env = gym.make("budgetgym/Remote-v0", url=url, env_id=FC)
                    with lock:
                        counts["sessions_opened"] += 1
                env.reset(seed=rng.randrange(2**31), options={"budget_mix": [0.25, 0.5, 1.0], "reveal": "remaining"})
                done = False
                while not done and time.monotonic() < stop:
                    time.sleep(rng.expovariate(args.rate))
                    _, _, terminated, truncated, _ = env.step(rng.choice(ACTIONS))
                    done = terminated or truncated
                    with lock:
                        counts["steps"] += 1
                episode += 1
                with lock:
                    counts["episodes"] += 1
                if episode % 10 == 0:
                    env.close()
                    env = None
        except Exception as err:  # every error is the soak's finding
            with lock:
                errors.append(f"session {index}: {err!r}"[:300])
        finally:
            if env is not None:
                env.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(args.sessions)]
    begin = time.monotonic()
    for thread in threads:
        thread.start()
    samples = []
    while time.monotonic() < stop:
        samples.append({"t": round(time.monotonic() - begin), "rss_kib": rss_kib(process.pid)})
        time.sleep(min(args.sample_seconds, max(0.0, stop - time.monotonic())))
    for thread in threads:
        thread.join(timeout=120)
    samples.append({"t": round(time.monotonic() - begin), "rss_kib": rss_kib(process.pid)})
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)

    settled = [s["rss_kib"] for s in samples if s["t"] >= 60] or [samples[-1]["rss_kib"]]
    growth = round(max(s["rss_kib"] for s in samples[-3:]) / settled[0], 3)
    elapsed = time.monotonic() - begin
    print(json.dumps({
        "sessions": args.sessions, "minutes": args.minutes, "rate_per_session": args.rate, **counts,
        "steps_per_s": round(counts["steps"] / elapsed), "errors": errors[:10], "error_count": len(errors),
        "rss_kib": samples,
        "targets": {"errors": target(0, len(errors)),
                    "memory_growth_after_the_first_minute": target(1.10, growth)},
    }, indent=2))


if __name__ == "__main__":
    main()
