"""Web-v0: shop in a self-contained web shop, as text, for an instruction with attributes, options and a price limit.

Description:
    The agent shops in an offline web shop of 2,000 products in 13 categories (clothing, footwear,
    kitchen, electronics, furniture, beauty, sports, grocery, pet supplies, office, home, garden,
    toys), each with a product type, attributes (material, features), option groups (size, color,
    capacity, pack, ...) and a price. An instruction asks for a product type with some attributes,
    one or two option values and a price limit ("i need a machine washable, slim fit shirt, size m,
    in navy, under 30 dollars"). The agent searches (BM25 ranked retrieval over the catalogue),
    reads results pages (ten a page), opens items, selects options and buys. Near-miss products
    (the same type, one criterion missed) are always in the catalogue. Long-horizon tasks are
    shopping lists (ids ``web-<split>-list-NNNN``): one instruction asks for 4 or 5 such items of
    distinct product types; an item page then also has ``Add to Cart`` (the cart keeps one line per
    product type, shown atop every page), and ``Buy Now`` buys the open item with the cart. The
    same shop is served as HTML to a real browser by ``budgetgym serve web``
    (``budgetgym.envs.web.server``).

Action Space:
    Text (``UnicodeText``). Bare commands: ``search[query]``, ``click[element]`` (an element is the
    text of a bracketed element on the open page: an item code, an option value, ``Next >``,
    ``< Prev``, ``< Back``, ``Back to Search``, ``Add to Cart``, ``Buy Now``), ``back`` and ``next page``; or the same
    as tool calls (``search``, ``click``, ``back``, ``next_page``) in any form of the shared parser;
    one call a turn (``max_calls_per_turn = 1``: a second is an invalid action).
    Search works from any page. A click on an element that is not on the page, an empty or
    over-long query, or a malformed command costs the turn, says what was wrong and what is
    clickable, and changes nothing.

Observation Space:
    Text: the open page, headed by the instruction. Clickable elements are in square brackets;
    ``info["admissible_actions"]`` lists the page's actions (``search[<query>]``, one ``click[...]``
    per element, and ``back`` when there is a page to go back to).

Rewards:
    Buying ends the episode. Its reward (``reward_mode="sparse"``) is 1.0 when the purchase meets
    everything asked, else 0.0. WebShop's graded score is ``info["score"]`` on that step, in [0, 1]:
    the share of the asked attributes, option values and price limit that the bought item meets; 0
    when the product type differs. Options count only when selected on the item page. A shopping
    list scores the mean over its items of that share, each on the bought line of its type (0 when
    none; lines of other types count for nothing). Success is a score of 1.0. The score is
    reported, not paid: shortcuts that never read the item (``title-overlap``) average 0.84 of it
    on the test split while solving 43 of 150 tasks.
    ``reward_mode="progress"``: the change in ``info["progress"]``, a potential of the current
    state alone (so a step back gives back what the step forward paid, and a loop nets 0): per
    item, 0.25 while the open results page lists an item that meets it, 0.5 while such an item is
    open, up to 0.9 as its asked options are selected, and 0.9 once the cart holds it met (the
    item being shopped for is the first the cart does not meet), averaged over the list's items;
    1.0 after a purchase that meets everything, 0 after any other.

Termination:
    ``terminated`` on buying (success when the reward is 1.0). ``truncated`` when the task's full
    budget (``max_turns`` = max(6, 2 x the oracle's turns)) or a ``TurnBudget`` cap runs out.

Registered Configurations:
    ``budgetgym/Web-v0``: 800 instructions (``split="train"``: 500 single items and 150 shopping
    lists, ``split="test"``: 100 and 50, a fixed held-out split), over the shipped catalogue; the
    single items' oracles take 4-5 turns, the lists' 16-25 (full budgets 32-50); 192 curated
    failure states of six kinds for ``ErrorInjection`` (150 on the train split, 30 of them on
    lists; 42 on the test split, 12 of them on lists).
    ``python -m budgetgym.envs.web.assets`` rebuilds the catalogue, the instructions and the
    failure states from their seeds.
"""

from __future__ import annotations

import json
import random
import re
from collections import OrderedDict
from typing import Any, Sequence

from budgetgym.core import Action, Outcome, SnapshotError, Task, TextEnv, ToolCall
from budgetgym.core.caches import keep_bounded
from budgetgym.envs.web.catalogue import Catalogue, load_catalogue
from budgetgym.envs.web.goal import Goal, Order
from budgetgym.envs.web.shop import ADD, BUY, Shop, ShopError, render_text
from budgetgym.envs.web.tools import TOOLS

_BARE = re.compile(r"^(search|click)\s*\[(.*)\]$", re.DOTALL | re.IGNORECASE)
_BACK = frozenset({"back", "go back", "back()"})
_NEXT = frozenset({"next page", "next", "next_page", "next_page()"})
SEARCH_TEMPLATE = "search[<query>]"
_PAGES_KEPT = 4096  # pages whose actions an env keeps (the oldest forgotten first), as the search's queries
_FOUND_KEPT = 4096  # results pages whose potential milestone an env keeps, likewise
_CARTS_KEPT = 4096  # carts whose reading by the potential an env keeps, likewise

# progress milestones of the good path, per goal
FOUND, OPENED, OPTIONS_SET = 0.25, 0.5, 0.4
READY = OPENED + OPTIONS_SET  # an item that meets the goal, its options set (or in the cart)


def _call(name: str, **arguments: str) -> Action:
    return Action(calls=(ToolCall(name, arguments),))


class WebEnv(TextEnv):
    """Web shopping over the shipped catalogue; see the module docstring."""

    family = "web"
    oracle_plans_from_any_state = True  # reward_mode='oracle_distance' (budgetgym.core.process_reward)
    episode_seed_matters = False  # the shop is the task's and the catalogue's: _load_task ignores the seed
    max_calls_per_turn = 1  # sequential: each action depends on what the last one showed
    instructions = (
        "You are shopping in a web shop for the instruction at the top of each page. Search with "
        "search[query], open items and choose options with click[element] (the element's text in "
        "square brackets), go back with back, and buy with click[Buy Now]. Only a purchase with the "
        "asked options selected on the item page, every asked attribute and a price within the limit "
        "scores full marks. Buying ends the episode."
    )
    failure_kinds = ("vague_query", "wrong_query", "wrong_type", "wrong_item", "far_page", "wrong_option")
    exploits = {
        "buy-first-result": "budgetgym.eval.exploits.web:BuyFirstResult",
        "buy-cheapest": "budgetgym.eval.exploits.web:BuyCheapest",
        "top-hit-with-options": "budgetgym.eval.exploits.web:TopHitWithOptions",
        "reopen-and-leave": "budgetgym.eval.exploits.web:ReopenAndLeave",
        "climb-progress": "budgetgym.eval.exploits.web:ClimbProgress",
    }

    def __init__(self, split: str | None = None, task_ids: list[str] | None = None, tasks=None,
                 reward_mode: str = "sparse", render_mode: str | None = None,
                 catalogue: Catalogue | None = None) -> None:
        super().__init__(split=split, task_ids=task_ids, tasks=tasks, reward_mode=reward_mode,
                         render_mode=render_mode)
        self.catalogue = catalogue if catalogue is not None else load_catalogue()
        self.tools = TOOLS
        self.shop: Shop | None = None
        #: The shop's refusal of the last action (a click on a missing element, ...), or None.
        self.last_error: str | None = None
        self._orders: dict[str, Order] = {}
        self._fitting: dict[str, tuple[frozenset[str], ...]] = {}
        # A page's actions but back follow from what it shows (a results page from its query and
        # number, an item page from its product and whether the order is a list), and the catalogue
        # is the env's for good: kept per page content, so a page seen before costs a lookup and a
        # copy, not a string per element.
        self._page_actions: OrderedDict[tuple[Any, ...], tuple[str, ...]] = OrderedDict()
        # Whether a results page lists an item that can meet the goal being shopped for (potential).
        self._found: OrderedDict[tuple[str, int, str, int], bool] = OrderedDict()
        # What the potential reads of the cart, kept while the cart (replaced, never changed in place:
        # Shop's contract), the task and the order are the same objects: a step that leaves the cart
        # as it was (all but adding to it) reads the goal being shopped for without working it out.
        self._shopping: tuple[Any, ...] = (None,) * 8
        self._cart_readings: OrderedDict[tuple[Any, ...], tuple[Any, ...]] = OrderedDict()

    # ------------------------------------------------------------------ episode

    def order(self, task: Task) -> Order:
        """What ``task`` asks to buy (one goal, or a shopping list)."""
        order = self._orders.get(task.id)
        if order is None:
            order = self._orders[task.id] = Order.from_task(task.data)
        return order

    def new_shop(self, task: Task) -> Shop:
        """A fresh session for ``task`` (the HTTP server makes its sessions here too)."""
        return Shop(self.catalogue, self.order(task), task.instruction)

    def shopping_for(self) -> tuple[Goal, str, str]:
        """The goal being shopped for now, with the task's target product and oracle query for it."""
        shop, task = self.shop, self.task
        goal = shop.goal
        if "goals" not in task.data:
            return goal, task["target"], task["oracle_query"]
        index = shop.order.goals.index(goal)
        return goal, task["targets"][index], task["oracle_queries"][index]

    def _load_task(self, task: Task, seed: int) -> str:
        self.last_error = None
        self.shop = self.new_shop(task)
        return render_text(self.shop.view())

    def _execute(self, action: Action) -> Outcome:
        shop = self.shop
        # One call a turn (max_calls_per_turn = 1, enforced by the parser): a Shop action that raises
        # has changed nothing (Shop's contract), so there is nothing to roll back.
        (call,) = action.calls
        try:
            self.tools[call.name].function(shop, **call.arguments)
        except ShopError as err:
            self.last_error = str(err)
            return Outcome(f"{err}\n\n{render_text(shop.view())}")
        self.last_error = None
        observation = render_text(shop.view())
        page = shop.page
        if page["kind"] == "done":
            score = page["reward"]  # WebShop's name for its graded score
            solved = score == 1.0
            return Outcome(observation, solved=solved, failed=not solved, progress=self.potential(), score=score)
        return Outcome(observation, False, False, self.potential())  # positional: a keyword call costs more

    def potential(self) -> float:
        """How far along the good path the current state is (see Rewards): a function of the state
        alone, so a step back gives back what the step forward paid."""
        shop = self.shop
        page = shop.page
        kind = page["kind"]
        if kind == "done":
            return 1.0 if page["reward"] == 1.0 else 0.0
        shopping = self._shopping
        if shopping[0] is not shop.cart or shopping[1] is not self.task or shopping[2] is not shop.order:
            shopping = self._shopping = self._shopping_for(shop)
        _, task, _, in_cart, index, fitting, asked, size = shopping
        if fitting is None:
            return READY  # the cart meets every goal
        if kind == "search":  # no milestone: the sum below with 0.0 added
            return in_cart / size
        milestone = 0.0
        if kind == "results":
            # Whether a results page lists a fitting item follows from the task, the goal and the
            # page's query and number (the catalogue is the env's for good): kept, so a step onto a
            # results page costs a lookup, not the page's ids out of the search and a set test.
            key = (task.id, index, page["query"], page["page"])
            found = self._found.get(key)
            if found is None:
                found = keep_bounded(self._found, key, not fitting.isdisjoint(shop.page_results()), _FOUND_KEPT)
            if found:
                milestone = FOUND
        elif kind == "item" and page["product"] in fitting:
            # The asked options selected: the pairs the selection shares with the asked ones.
            selected = page["selected"]
            matched = 0
            for group, value in asked:
                if selected.get(group) == value:
                    matched += 1
            milestone = OPENED + OPTIONS_SET * matched / len(asked)
        return (in_cart + milestone) / size

    def _shopping_for(self, shop: Shop) -> tuple[Any, ...]:
        """What the potential reads of the cart (see ``_shopping``): the cart, the task and the order
        it is for, READY times the goals met, the goal being shopped for (the first the cart does
        not meet, as Shop.goal), its fitting products and asked options (None, None when all are
        met; the options as (group, value) pairs), and the number of goals."""
        task, cart = self.task, shop.cart
        # Kept per task and cart content (each reset's cart is a new empty list, each Add to Cart a
        # new list), so a cart seen before in the task costs its key, not the goals' checks.
        key = (task.id, *((line["product"], *line["selected"].items()) for line in cart))
        read = self._cart_readings.get(key)
        if read is None:
            goals = shop.order.goals
            met = shop.met() if cart else (False,) * len(goals)  # a single goal's cart is always empty
            count = sum(met)
            if count == len(goals):
                read = (READY * count, 0, None, None, len(goals))
            else:
                index = met.index(False)
                read = (READY * count, index, self.fitting(task)[index], tuple(goals[index].options.items()),
                        len(goals))
            keep_bounded(self._cart_readings, key, read, _CARTS_KEPT)
        return (cart, task, shop.order, *read)

    def fitting(self, task: Task) -> tuple[frozenset[str], ...]:
        """For each goal of ``task``'s order, the ids of the catalogue's products that can meet it
        (``Goal.can_meet``): worked out once per task, so the potential of a page is a set lookup."""
        fitting = self._fitting.get(task.id)
        if fitting is None:
            by_type = self.catalogue.by_type
            fitting = self._fitting[task.id] = tuple(
                frozenset(p.id for p in by_type.get(goal.type, ()) if goal.can_meet(p)) for goal in self.order(task).goals)
        return fitting

    # ------------------------------------------------------------------ actions

    def _parse_bare(self, text: str) -> ToolCall | None:
        if text.endswith("]"):
            # The commands as the oracle and most agents write them, read as _BARE reads them (the
            # text is stripped, so the bracket that ends it closes the command): no match object.
            if text.startswith("click["):
                return ToolCall("click", {"element": text[6:-1]})
            if text.startswith("search["):
                return ToolCall("search", {"query": text[7:-1]})
        match = _BARE.match(text)
        if match:
            verb, inside = match.groups()
            return ToolCall("search", {"query": inside}) if verb.lower() == "search" else ToolCall("click", {"element": inside})
        lowered = " ".join(text.lower().split())
        if lowered in _BACK:
            return ToolCall("back", {})
        if lowered in _NEXT:
            return ToolCall("next_page", {})
        return None

    def _render_oracle(self, action: Action) -> str:
        if len(action.calls) != 1:
            return super()._render_oracle(action)
        call = action.calls[0]
        if call.name == "search":
            return f"search[{call.arguments['query']}]"
        if call.name == "click":
            return f"click[{call.arguments['element']}]"
        return "back" if call.name == "back" else "next page"

    def admissible_actions(self) -> list[str] | None:
        shop = self.shop
        if shop is None:
            return []
        page = shop.page
        kind = page["kind"]
        if kind == "done":
            return []
        key = (kind, page["query"], page["page"]) if kind == "results" else (kind, page.get("product"), shop.order.is_list)
        page_actions = self._page_actions.get(key)
        if page_actions is None:
            page_actions = keep_bounded(self._page_actions, key,
                                        (SEARCH_TEMPLATE, *(f"click[{label}]" for label in shop.elements())),
                                        _PAGES_KEPT)
        actions = list(page_actions)
        if shop.history:
            actions.append("back")
        return actions

    # ------------------------------------------------------------------ oracle

    def _oracle(self) -> Action | None:
        shop, page = self.shop, self.shop.page
        kind = page["kind"]
        if kind == "done":
            return None
        goal, _, query = self.shopping_for()
        if kind == "item":
            if goal.can_meet(shop.product):
                for group, value in goal.options.items():
                    if page["selected"].get(group) != value:
                        return _call("click", element=value)
                goals = shop.order.goals
                rest_met = all(met for g, met in zip(goals, shop.met()) if g is not goal)
                return _call("click", element=BUY if rest_met else ADD)
            previous = shop.history[-1] if shop.history else None
            if previous is not None and previous["kind"] == "results" and self._best_on(previous) is not None:
                return _call("back")
        elif kind == "results":
            best = self._best_on(page)
            if best is not None:
                return _call("click", element=best)
        return _call("search", query=query)

    def _best_on(self, page: dict[str, Any]) -> str | None:
        """The item to open on a results page: the task's target if listed, else the first that can meet the goal."""
        listed = self.shop.page_results(page)
        goal, target, _ = self.shopping_for()
        if target in listed:
            return target
        return next((pid for pid in listed if goal.can_meet(self.catalogue[pid])), None)

    # ------------------------------------------------------------------ snapshots

    def _get_state(self) -> Any:
        return self.shop.get_state()

    def state_view(self) -> Any:
        return self.shop.state_view()

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        shop = self.new_shop(task)
        try:
            shop.set_state(state)
        except ValueError as err:
            raise SnapshotError(f"corrupt web shop state: {err}") from None
        self.shop = shop

    def _state_status(self) -> tuple[bool, bool, float] | None:
        """Solved or failed as the shop's page implies (a purchase scoring 1.0, or less), and the
        state's potential as progress."""
        page = self.shop.page
        if page["kind"] != "done":
            return (False, False, self.potential())
        solved = page["reward"] == 1.0
        return (solved, not solved, self.potential())

    def state_key(self) -> str:
        """The open page (with its selected options) and the cart: what the outcome depends on; history is not."""
        return json.dumps([self.shop.page, self.shop.cart], sort_keys=True)

    # ------------------------------------------------------------------ failure states

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        from budgetgym.envs.web.mistakes import propose

        return propose(self, kind, plan, rng)
