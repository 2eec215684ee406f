"""Seeded generators of the shop's instructions and failure states (library code: the CLI that
rewrites the shipped files is ``python -m budgetgym.envs.web.assets``).

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

Shopping lists (the long-horizon tasks, ids ``web-<split>-list-NNNN``) ask for ``LIST_LENGTHS``
items of distinct product types in one instruction, each drawn and kept as above; the agent adds
all but one to the cart and buys the last with them. The oracle's turns are a true lower bound:
each item costs a turn to reach a results page (a search, or ``back``), one to open it, one per
asked option and one to add or buy it, and no page offers a shorter way.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from budgetgym.core import full_budget
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.web.catalogue import Catalogue, Product
from budgetgym.envs.web.goal import Goal
from budgetgym.envs.web.shop import PAGE_SIZE

TASKS_PATH = ASSETS / "web" / "tasks.jsonl"
FAILURES_PATH = ASSETS / "web" / "failure_states.jsonl"
FAILURES_PER_KIND = {"train": 20, "test": 5}  # split -> curated failure states of each kind
SPLITS = {"train": (500, 7_001), "test": (100, 7_002)}  # split -> (count, seed)
LIST_SPLITS = {"train": (150, 7_011), "test": (50, 7_012)}  # shopping lists: split -> (count, seed)
LIST_LENGTHS = (4, 4, 5)  # items a shopping list asks (drawn from)
LIST_FAILURES_PER_KIND = {"train": 5, "test": 2}
#: A shopping list is kept only when the title-overlap heuristic's pick misses on this many of its items.
LIST_OVERLAP_MISSES = 2
VERBATIM_TOP_HIT_SHARE = 0.04
_MIN_NEAR_MISSES = 2
_WORD = re.compile(r"[a-z0-9]+")

_OPTION_PHRASES = {
    "size": "size {v}", "color": "in {v}", "capacity": "with {v} capacity", "length": "{v} long",
    "scent": "with {v} scent", "flavor": "in {v} flavor", "pack": "in a {v}", "thickness": "{v} thick",
    "weight": "weighing {v}", "pieces": "with {v}", "edition": "in the {v}",
}
_OPENERS = ("i need", "i am looking for", "find me", "i want to buy", "please get me", "i would like")
_PRICE_PHRASES = ("under {p} dollars", "with a price lower than {p} dollars", "for less than {p} dollars",
                  "priced below {p} dollars")


def item_text(goal: Goal, rng: random.Random) -> str:
    """One item of an instruction: the product with its attributes, options and price limit."""
    before = [a for a in goal.attributes if not a.startswith(("for ", "with "))]
    after = [a for a in goal.attributes if a.startswith(("for ", "with "))]
    noun = " ".join([", ".join(before), goal.type] if before else [goal.type])
    if after:
        noun += " " + " and ".join(after)
    plural = goal.type.endswith("s")
    article = "" if plural else ("an " if noun[0] in "aeiou" else "a ")
    options = ", ".join(_OPTION_PHRASES[g].format(v=v) for g, v in goal.options.items())
    price = rng.choice(_PRICE_PHRASES).format(p=f"{goal.price_max:g}")
    return f"{article}{noun}, {options}, {price}"


def instruction_text(goal: Goal, rng: random.Random) -> str:
    item = item_text(goal, rng)
    return f"{rng.choice(_OPENERS)} {item}"


def overlap_pick(catalogue: Catalogue, text: str, price_max: float) -> str:
    """What the title-overlap heuristic buys for ``text`` (``budgetgym.eval.exploits.web.TitleOverlap``):
    of the verbatim search's first page, the result within the price limit whose title shares the
    most words with the text."""
    words = set(_WORD.findall(text.lower().replace("-", " ")))
    listed = catalogue.index.search(text)[:PAGE_SIZE]
    affordable = [pid for pid in listed if catalogue[pid].price <= price_max] or listed
    return max(affordable, key=lambda pid: len(words & set(_WORD.findall(catalogue[pid].title.lower().replace("-", " ")))))


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


def draw_item(catalogue: Catalogue, rng: random.Random, types: set[str] = frozenset()
              ) -> tuple[Goal, str, str] | None:
    """A goal around a random product (not of ``types``) with its oracle query and target, or None
    when the draw fails the checks above (too few near misses, no fitting item on page one)."""
    product = rng.choice(catalogue.products)
    goal = draw_goal(product, rng)
    if goal.type in types:
        return None
    near = sum(goal.misses(p) == 1 for p in catalogue.by_type[goal.type])
    if near < _MIN_NEAR_MISSES:
        return None
    query = oracle_query(goal, with_options=False)
    target = first_page_match(catalogue, goal, query)
    if target is None:
        query = oracle_query(goal, with_options=True)
        target = first_page_match(catalogue, goal, query)
    return None if target is None else (goal, query, target)


def generate_list_tasks(catalogue: Catalogue, split: str, count: int, seed: int,
                        taken: set[str]) -> list[dict[str, Any]]:
    """``count`` shopping-list records for ``split`` (see the module docstring)."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    while len(records) < count:
        length = rng.choice(LIST_LENGTHS)
        items: list[tuple[Goal, str, str]] = []
        texts: list[str] = []
        while len(items) < length:
            drawn = draw_item(catalogue, rng, {goal.type for goal, _, _ in items})
            if drawn is not None:
                items.append(drawn)
                texts.append(item_text(drawn[0], rng))
        goals = [goal for goal, _, _ in items]
        misses = sum(not goal.can_meet(catalogue[overlap_pick(catalogue, text, goal.price_max)])
                     for goal, text in zip(goals, texts) if catalogue.index.search(text))
        if misses < LIST_OVERLAP_MISSES:
            continue  # the one-page heuristic would buy too many of its items right
        text = f"{rng.choice(_OPENERS)} {length} things: " + "; ".join(texts[:-1] + ["and " + texts[-1]])
        if text in taken:
            continue
        taken.add(text)
        # per item: reach a results page, open, one click per option; then add all but the last, buy
        oracle_turns = sum(2 + len(goal.options) for goal in goals) + length
        records.append({
            "id": f"web-{split}-list-{len(records):04d}", "split": split, "instruction": text,
            "goals": [goal.to_record() for goal in goals], "category": "list",
            "targets": [target for _, _, target in items], "oracle_queries": [query for _, query, _ in items],
            "oracle_turns": oracle_turns, "max_turns": full_budget(oracle_turns),
        })
    return records


def generate_tasks(catalogue: Catalogue, split: str, count: int, seed: int,
                   taken: set[str] | None = None) -> list[dict[str, Any]]:
    """``count`` instruction records for ``split``; ``taken`` holds instruction texts to avoid (other splits)."""
    rng = random.Random(seed)
    taken = set() if taken is None else taken
    records: list[dict[str, Any]] = []
    top_hits = 0
    while len(records) < count:
        drawn = draw_item(catalogue, rng)
        if drawn is None:
            continue
        goal, query, target = drawn
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
    for split, (count, seed) in LIST_SPLITS.items():
        records += generate_list_tasks(catalogue, split, count, seed, taken)
    return records


def generate_failure_states(tasks: list[dict[str, Any]], catalogue: Catalogue) -> list[dict[str, Any]]:
    """``FAILURES_PER_KIND[split]`` curated failure states of each mistake kind on each split, over
    the split's instructions in order (so ``ErrorInjection`` works on either split), and
    ``LIST_FAILURES_PER_KIND[split]`` over its shopping lists."""
    from budgetgym.core import TaskSet
    from budgetgym.core.failures import build_failure_states
    from budgetgym.envs.web.env import WebEnv

    task_set = TaskSet(tasks)
    env = WebEnv(tasks=task_set, catalogue=catalogue)
    states = []
    for split in FAILURES_PER_KIND:
        tasks_of = task_set.select(split)
        lists = TaskSet([t for t in tasks_of if "goals" in t.data])
        states += build_failure_states(env, TaskSet([t for t in tasks_of if "goals" not in t.data]),
                                       FAILURES_PER_KIND[split], namespace="web")
        states += build_failure_states(env, lists, LIST_FAILURES_PER_KIND[split], namespace="web")
    return states
