"""Seeded generators of the shop's catalogue and instructions; ``python -m budgetgym.envs.web.generate``
rewrites ``budgetgym/assets/web/products.jsonl`` and ``tasks.jsonl`` (a test checks they match).

An instruction is drawn around a target product: some of its attributes, a value of one or two of
its option groups, and a price limit at or above its price. It is kept only when

* products of the same type that miss exactly one criterion exist (at least two near misses), so
  buying by type alone, or the first result, fails;
* the oracle's query (the asked attributes and the type, with the asked option values when that
  is not enough) lists a product meeting every criterion on its first results page;
* searching the instruction verbatim puts a product meeting every criterion first in at most a
  small share of a split's instructions (``VERBATIM_TOP_HIT_SHARE``, a quota kept while drawing),
  so "search the instruction and buy the top hit" is not a strategy, and neither is "never buy the
  top hit".

Every instruction asks at least one option, and an option counts only when selected, so buying an
item without opening and setting it never scores 1.0.
"""

from __future__ import annotations

import argparse
import math
import random
from typing import Any

from budgetgym.core import full_budget
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.web.catalogue import (
    CATALOGUE_SEED, CATALOGUE_SIZE, PRODUCTS_PATH, Catalogue, Product, generate_products,
)
from budgetgym.envs.web.goal import Goal
from budgetgym.envs.web.shop import PAGE_SIZE

TASKS_PATH = ASSETS / "web" / "tasks.jsonl"
FAILURES_PATH = ASSETS / "web" / "failure_states.jsonl"
FAILURES_PER_KIND = {"train": 20, "test": 5}  # split -> curated failure states of each kind
SPLITS = {"train": (500, 7_001), "test": (100, 7_002)}  # split -> (count, seed)
VERBATIM_TOP_HIT_SHARE = 0.04
_MIN_NEAR_MISSES = 2

_OPTION_PHRASES = {
    "size": "size {v}", "color": "in {v}", "capacity": "with {v} capacity", "length": "{v} long",
    "scent": "with {v} scent", "flavor": "in {v} flavor", "pack": "in a {v}", "thickness": "{v} thick",
    "weight": "weighing {v}", "pieces": "with {v}", "edition": "in the {v}",
}
_OPENERS = ("i need", "i am looking for", "find me", "i want to buy", "please get me", "i would like")
_PRICE_PHRASES = ("under {p} dollars", "with a price lower than {p} dollars", "for less than {p} dollars",
                  "priced below {p} dollars")


def instruction_text(goal: Goal, rng: random.Random) -> str:
    before = [a for a in goal.attributes if not a.startswith(("for ", "with "))]
    after = [a for a in goal.attributes if a.startswith(("for ", "with "))]
    noun = " ".join([", ".join(before), goal.type] if before else [goal.type])
    if after:
        noun += " " + " and ".join(after)
    plural = goal.type.endswith("s")
    article = "" if plural else ("an " if noun[0] in "aeiou" else "a ")
    options = ", ".join(_OPTION_PHRASES[g].format(v=v) for g, v in goal.options.items())
    price = rng.choice(_PRICE_PHRASES).format(p=f"{goal.price_max:g}")
    return f"{rng.choice(_OPENERS)} {article}{noun}, {options}, {price}"


def oracle_query(goal: Goal, with_options: bool) -> str:
    words = [*goal.attributes, goal.type]
    if with_options:
        words += list(goal.options.values())
    return " ".join(words)


def first_page_match(catalogue: Catalogue, goal: Goal, query: str) -> str | None:
    """The first product on the query's first results page that can meet every criterion."""
    for pid in catalogue.index.search(query)[:PAGE_SIZE]:
        if goal.can_meet(catalogue[pid]):
            return pid
    return None


def draw_goal(product: Product, rng: random.Random) -> Goal:
    attributes = rng.sample(product.attributes, rng.choice((1, 2, 2, 3)))
    groups = rng.sample(list(product.options), min(len(product.options), rng.choice((1, 2))))
    options = {g: rng.choice(product.options[g]) for g in groups}
    slack = rng.choice((0, 0, 3, 8, 15))
    price_max = 5.0 * max(1, math.ceil((product.price + slack) / 5))  # a round limit at or above the price
    return Goal(product.type, tuple(attributes), options, price_max)


def generate_tasks(catalogue: Catalogue, split: str, count: int, seed: int,
                   taken: set[str] | None = None) -> list[dict[str, Any]]:
    """``count`` instruction records for ``split``; ``taken`` holds instruction texts to avoid (other splits)."""
    rng = random.Random(seed)
    taken = set() if taken is None else taken
    records: list[dict[str, Any]] = []
    top_hits = 0
    while len(records) < count:
        product = rng.choice(catalogue.products)
        goal = draw_goal(product, rng)
        near = sum(goal.misses(p) == 1 for p in catalogue.by_type[goal.type])
        if near < _MIN_NEAR_MISSES:
            continue
        query = oracle_query(goal, with_options=False)
        target = first_page_match(catalogue, goal, query)
        if target is None:
            query = oracle_query(goal, with_options=True)
            target = first_page_match(catalogue, goal, query)
        if target is None:
            continue
        text = instruction_text(goal, rng)
        top = catalogue.index.search(text)[:1]
        top_hit = bool(top) and goal.can_meet(catalogue[top[0]])
        if top_hit and top_hits + 1 > VERBATIM_TOP_HIT_SHARE * (len(records) + 1):
            continue  # over the quota of instructions whose verbatim search puts a fitting item first
        if text in taken:
            continue
        taken.add(text)
        top_hits += top_hit
        oracle_turns = 3 + len(goal.options)  # search, open, one click per option, buy
        records.append({
            "id": f"web-{split}-{len(records):04d}", "split": split, "instruction": text,
            "goal": goal.to_record(), "category": catalogue[target].category, "target": target,
            "oracle_query": query, "oracle_turns": oracle_turns, "max_turns": full_budget(oracle_turns),
        })
    return records


def generate_all(catalogue: Catalogue) -> list[dict[str, Any]]:
    taken: set[str] = set()
    records: list[dict[str, Any]] = []
    for split, (count, seed) in SPLITS.items():
        records += generate_tasks(catalogue, split, count, seed, taken)
    return records


def generate_failure_states(tasks: list[dict[str, Any]], catalogue: Catalogue) -> list[dict[str, Any]]:
    """``FAILURES_PER_KIND[split]`` curated failure states of each mistake kind on each split, over
    the split's instructions in order (so ``ErrorInjection`` works on either split)."""
    from budgetgym.core import TaskSet
    from budgetgym.core.failures import build_failure_states
    from budgetgym.envs.web.env import WebEnv

    task_set = TaskSet(tasks)
    env = WebEnv(tasks=task_set, catalogue=catalogue)
    return [state for split, per_kind in FAILURES_PER_KIND.items()
            for state in build_failure_states(env, task_set.select(split), per_kind, namespace="web")]


def main(argv: list[str] | None = None) -> int:
    from budgetgym.core.jsonl import write_jsonl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the shipped files are current")
    args = parser.parse_args(argv)
    products = generate_products(CATALOGUE_SIZE, CATALOGUE_SEED)
    catalogue = Catalogue(products)
    tasks = generate_all(catalogue)
    failures = generate_failure_states(tasks, catalogue)
    if args.check:
        from budgetgym.core.jsonl import read_jsonl

        current = (read_jsonl(PRODUCTS_PATH) == [p.to_record() for p in products]
                   and read_jsonl(TASKS_PATH) == tasks and read_jsonl(FAILURES_PATH) == failures)
        print("current" if current else "stale: run python -m budgetgym.envs.web.generate")
        return 0 if current else 1
    PRODUCTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(PRODUCTS_PATH, [p.to_record() for p in products])
    write_jsonl(TASKS_PATH, tasks)
    write_jsonl(FAILURES_PATH, failures)
    print(f"wrote {len(products)} products, {len(tasks)} tasks and {len(failures)} failure states "
          f"to {PRODUCTS_PATH.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
