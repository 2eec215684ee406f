"""The mistakes a shopper makes, for the curated failure states (``WebEnv.propose_mistake``).

Six kinds, each a realistic slip at a point of the oracle's solution:

* ``vague_query``: searches the bare product type ("shoes") where the solution searches well;
* ``wrong_query``: searches with one asked attribute swapped for one that was not asked;
* ``wrong_type``: searches the asked attributes with another product type of the same category;
* ``wrong_item``: opens a listed item that cannot meet the instruction (a near miss when there is one);
* ``far_page``: turns to the next results page instead of opening the listed item that fits;
* ``wrong_option``: selects another value of an asked option group on the item page.

Each proposal is an action and a sentence saying what went wrong; None when the kind does not fit
the point (no search there, no wrong item listed, ...).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Sequence

from budgetgym.core import Action, ToolCall
from budgetgym.envs.web.catalogue import CATEGORIES
from budgetgym.envs.web.shop import NEXT

if TYPE_CHECKING:
    from budgetgym.envs.web.env import WebEnv


def _act(name: str, **arguments: str) -> Action:
    return Action(calls=(ToolCall(name, arguments),))


def propose(env: "WebEnv", kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
    if not plan or len(plan[0].calls) != 1:
        return None
    intended = plan[0].calls[0]
    shop = env.shop
    goal, target, _ = env.shopping_for()
    page = shop.page
    if kind in ("vague_query", "wrong_query", "wrong_type"):
        if intended.name != "search":
            return None
        if kind == "vague_query":
            query = goal.type.split()[-1]
            return _act("search", query=query), f"searched only '{query}', too vague to find the asked item"
        category = CATEGORIES[env.catalogue[target].category]
        if kind == "wrong_type":
            other = rng.choice(sorted(t for t in category["types"] if t != goal.type))
            query = " ".join([*goal.attributes, other])
            return _act("search", query=query), f"searched for {other} instead of {goal.type} ('{query}')"
        swap = rng.randrange(len(goal.attributes))
        pool = [v for values in category["facets"].values() for v in values] + list(category["features"])
        unasked = sorted(set(pool) - set(goal.attributes))
        replacement = rng.choice(unasked)
        attributes = list(goal.attributes)
        dropped, attributes[swap] = attributes[swap], replacement
        query = " ".join([*attributes, goal.type])
        return (_act("search", query=query),
                f"searched '{query}', with '{replacement}' where the instruction asked '{dropped}'")
    if kind in ("wrong_item", "far_page"):
        if intended.name != "click" or page["kind"] != "results":
            return None
        if kind == "far_page":
            if NEXT not in shop.elements():
                return None
            return (_act("click", element=NEXT),
                    f"turned to results page {page['page'] + 1} instead of opening {intended.arguments['element']}")
        listed = [env.catalogue[pid] for pid in shop.page_results() if not goal.can_meet(env.catalogue[pid])]
        if not listed:
            return None
        near = [p for p in listed if goal.misses(p) == 1] or listed
        wrong = rng.choice(near)
        missed = goal.report(wrong, goal.options)
        why = "; ".join(line.split(": ", 1)[1] for line in missed if line.startswith(("missed", "product type")))
        return _act("click", element=wrong.id), f"opened {wrong.id} ({wrong.title}), which misses: {why}"
    if kind == "wrong_option":
        if intended.name != "click" or page["kind"] != "item" or not goal.can_meet(shop.product):
            return None
        group = rng.choice(list(goal.options))
        others = [v for v in shop.product.options[group] if v != goal.options[group]]
        if not others:
            return None
        value = rng.choice(others)
        return _act("click", element=value), f"selected {group} {value} where the instruction asked {goal.options[group]}"
    raise ValueError(f"unknown mistake kind {kind!r}")
