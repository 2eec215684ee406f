"""The mistakes a web agent makes on a MiniWoB++ page, for the curated failure states
(``MiniWoBEnv.propose_mistake``).

Two kinds, each a slip at a point of the oracle's solution:

* ``wrong_click``: clicks another control of the kind the oracle clicks (the wrong checkbox, tab,
  folder or section; the wrong field to type into) — a near miss that changes the page;
* ``idle_click``: clicks an element that shows text and holds no control (a label, a paragraph, a
  name), which does nothing toward the task and wastes the turn.

Each proposal is an action and a sentence saying what went wrong; None when the kind does not fit
the point. Clicks that end the episode (a wrong button the page judges at once) are proposed too:
the failure-state builder drops every mistake that ends the episode or cannot be recovered from.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from budgetgym.core import Action, ToolCall

if TYPE_CHECKING:
    from budgetgym.envs.miniwob.env import MiniWoBEnv

KINDS = ("wrong_click", "idle_click")
_TEXT_TAGS = frozenset({"div", "p", "span", "label", "th", "td", "h2", "h3", "t"})


def _name(element: Mapping[str, Any]) -> str:
    text = f' "{element["text"]}"' if element["text"] else ""
    return f"[{element['ref']}] {element['tag']}{text}"


def propose(env: "MiniWoBEnv", kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
    page = env.page
    if page is None or page.done or not plan or len(plan[0].calls) != 1:
        return None
    intended = plan[0].calls[0]
    elements = [e for e in page.elements if e["ref"] in page.refs]
    target = next((e for e in elements if e["ref"] == intended.arguments["ref"]), None)
    if target is None:
        return None
    if kind == "wrong_click":
        classes = set(target["classes"].split())
        near = [e for e in elements if e["ref"] != target["ref"] and e["tag"] == target["tag"]
                and (not classes or classes & set(e["classes"].split()) or e["tag"].startswith("input"))]
        if not near:
            return None
        wrong = rng.choice(near)
        return (Action(calls=(ToolCall("click", {"ref": wrong["ref"]}),)),
                f"clicked {_name(wrong)} where the task needed {_name(target)}")
    if kind == "idle_click":
        idle = [e for e in elements if e["tag"] in _TEXT_TAGS and e["text"] and e["ref"] != target["ref"]
                and not any(c["parent"] == e["ref"] and c["ref"] > 0 for c in elements)]
        if not idle:
            return None
        wasted = rng.choice(idle)
        return (Action(calls=(ToolCall("click", {"ref": wasted["ref"]}),)),
                f"clicked {_name(wasted)}, which does nothing toward the task, where it needed {_name(target)}")
    return None
