"""What an instruction asks for, and how a purchase is scored against it.

A goal names a product type, some attributes (``machine washable``, ``cotton``), a value for some
option groups (``size: m``, ``color: navy``) and a price limit. A purchase scores the share of the
asked attributes, options and price limit that the bought item meets, in [0, 1]; an item of another
product type scores 0. Only a purchase that meets everything scores 1.0 (success). An option the
buyer did not select on the item page is not met, even when the item offers the asked value. An
:class:`Order` is what a task asks to buy: one goal, or a shopping list of several (long-horizon
tasks), scored line by line.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from budgetgym.envs.web.catalogue import Product


@dataclass(frozen=True)
class Goal:
    type: str
    attributes: tuple[str, ...]
    options: Mapping[str, str]
    price_max: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Goal":
        return cls(str(record["type"]), tuple(record["attributes"]),
                   MappingProxyType({str(k): str(v) for k, v in record["options"].items()}),
                   float(record["price_max"]))

    def to_record(self) -> dict[str, Any]:
        return {"type": self.type, "attributes": list(self.attributes), "options": dict(self.options),
                "price_max": self.price_max}

    @property
    def criteria(self) -> int:
        """How many things are asked: each attribute, each option, and the price limit."""
        return len(self.attributes) + len(self.options) + 1

    def can_meet(self, product: Product) -> bool:
        """Whether buying ``product`` with the right options selected scores 1.0."""
        return (product.type == self.type and product.price <= self.price_max
                and all(a in product.attributes for a in self.attributes)
                and all(v in product.options.get(g, ()) for g, v in self.options.items()))

    def meets(self, product: Product, selected: Mapping[str, str]) -> bool:
        """Whether buying ``product`` with the options ``selected`` scores 1.0 (``score``'s verdict
        without its count: every criterion met)."""
        # Loops, not all() over generators: the potential asks this of every cart line at each change.
        if product.type != self.type or not product.price <= self.price_max:
            return False
        attributes = product.attributes
        for attribute in self.attributes:
            if attribute not in attributes:
                return False
        for group, value in self.options.items():
            if selected.get(group) != value:
                return False
        return True

    def misses(self, product: Product) -> int:
        """How many criteria ``product`` cannot meet whatever is selected (a type mismatch: all)."""
        if product.type != self.type:
            return self.criteria
        return (sum(a not in product.attributes for a in self.attributes) + (product.price > self.price_max)
                + sum(v not in product.options.get(g, ()) for g, v in self.options.items()))

    def score(self, product: Product, selected: Mapping[str, str]) -> float:
        """The reward of buying ``product`` with the options ``selected``, in [0, 1]."""
        if product.type != self.type:
            return 0.0
        met = sum(a in product.attributes for a in self.attributes) + (product.price <= self.price_max)
        met += sum(selected.get(g) == v for g, v in self.options.items())
        return met / self.criteria

    def report(self, product: Product, selected: Mapping[str, str]) -> list[str]:
        """One line per criterion: what was asked and whether the purchase met it."""
        if product.type != self.type:
            return [f"product type: asked for {self.type}, bought {product.type} (nothing counts)"]
        lines = [f"{'met' if a in product.attributes else 'missed'}: {a}" for a in self.attributes]
        for group, value in self.options.items():
            got = selected.get(group)
            lines.append(f"{'met' if got == value else 'missed'}: {group} {value}"
                         + ("" if got == value else f" (selected: {got or 'nothing'})"))
        ok = product.price <= self.price_max
        lines.append(f"{'met' if ok else 'missed'}: price ${product.price:.2f} "
                     f"{'within' if ok else 'over'} ${self.price_max:g}")
        return lines


@dataclass(frozen=True)
class Order:
    """What an instruction asks to buy: one goal, or a shopping list of goals of distinct product types.

    A purchase is a set of lines (a product with its selected options), at most one per product type
    (the cart keeps the last line added of a type). Each goal is scored on the line of its type (0
    when there is none); lines of types the list does not ask count for nothing. The score is the
    mean over the goals, so only a purchase that meets every goal scores 1.0."""

    goals: tuple[Goal, ...]

    @classmethod
    def from_task(cls, task: Mapping[str, Any]) -> "Order":
        """From a task record (or its ``data``): ``goals`` for a list, else its ``goal``."""
        records = task.get("goals") or [task["goal"]]
        return cls(tuple(Goal.from_record(r) for r in records))

    @property
    def is_list(self) -> bool:
        return len(self.goals) > 1

    def line_for(self, goal: Goal, lines: Sequence[tuple[Product, Mapping[str, str]]]
                 ) -> tuple[Product, Mapping[str, str]] | None:
        kind = goal.type
        for line in lines:
            if line[0].type == kind:
                return line
        return None

    def met(self, lines: Sequence[tuple[Product, Mapping[str, str]]]) -> tuple[bool, ...]:
        """For each goal, whether ``lines`` meet it: the line of its type (the first, as ``line_for``
        finds it) scores 1.0."""
        by_type: dict[str, tuple[Product, Mapping[str, str]]] = {}
        for line in lines:
            by_type.setdefault(line[0].type, line)
        met = []
        for goal in self.goals:
            line = by_type.get(goal.type)
            met.append(line is not None and goal.meets(*line))
        return tuple(met)

    def score(self, lines: Sequence[tuple[Product, Mapping[str, str]]]) -> float:
        """The reward of buying ``lines`` (one per product type), in [0, 1]."""
        total = 0.0
        for goal in self.goals:
            line = self.line_for(goal, lines)
            total += goal.score(*line) if line is not None else 0.0
        return total / len(self.goals)

    def report(self, lines: Sequence[tuple[Product, Mapping[str, str]]]) -> list[str]:
        """What was asked and met, goal by goal (a single goal's report as it is)."""
        if not self.is_list:
            line = self.line_for(self.goals[0], lines) or lines[-1]
            return self.goals[0].report(*line)
        out = []
        for number, goal in enumerate(self.goals, 1):
            line = self.line_for(goal, lines)
            if line is None:
                out.append(f"item {number} ({goal.type}): not bought")
            else:
                out += [f"item {number} ({goal.type}): {text}" for text in goal.report(*line)]
        return out
