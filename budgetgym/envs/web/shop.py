"""The shop's session: which page is open, the way back, and the purchase.

One :class:`Shop` is one shopper's session over a catalogue, for one goal. Its whole state is a small
JSON-able dict (the open page, the pages behind it, nothing else: results are recomputed from the
query, which the search caches), so a snapshot restores it directly. The text env and the HTTP
server both drive a ``Shop`` and render the same :meth:`Shop.view`: as text
(:func:`render_text`) or as HTML (``budgetgym.envs.web.html``).

Pages: ``search`` (the start), ``results`` (ten products a page, at most 50 a query), ``item`` (a
product with its option groups) and ``done`` (after buying). Clickable elements are shown in
square brackets; :meth:`Shop.elements` lists those of the open page. For a shopping list (an
:class:`~budgetgym.envs.web.goal.Order` of several goals) an item page also has ``Add to Cart``:
the cart keeps one line per product type (adding another item of a type replaces its line), and
``Buy Now`` buys the open item together with the cart.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from budgetgym.envs.web.catalogue import Catalogue, Product
from budgetgym.envs.web.goal import Goal, Order

PAGE_SIZE = 10
MAX_QUERY_LENGTH = 200
MAX_HISTORY = 32
BACK_TO_SEARCH, BACK, PREV, NEXT, BUY, ADD = "Back to Search", "< Back", "< Prev", "Next >", "Buy Now", "Add to Cart"
MAX_CART = 16


class ShopError(Exception):
    """The shopper's action cannot be done on this page; ``str(err)`` says why and what can be."""


def _norm(label: str) -> str:
    return " ".join(label.lower().split())


class Shop:
    """One shopping session. Actions raise :class:`ShopError` and change nothing when they cannot run."""

    def __init__(self, catalogue: Catalogue, order: Order, instruction: str) -> None:
        self.catalogue = catalogue
        self.order = order
        self.instruction = instruction
        self.page: dict[str, Any] = {"kind": "search"}
        self.history: list[dict[str, Any]] = []
        #: The cart's lines, ``{"product": id, "selected": {group: value}}``, one per product type.
        self.cart: list[dict[str, Any]] = []
        # Pages and carts are replaced, never changed in place, so what is derived from one is kept
        # with the object it came from and reused while that object is the open one.
        self._met: tuple[list[dict[str, Any]] | None, tuple[bool, ...]] = (None, ())
        self._elements: tuple[dict[str, Any] | None, list[str]] = (None, [])

    def met(self) -> tuple[bool, ...]:
        """For each goal of the order, whether the cart holds a line that meets it."""
        cart, met = self._met
        if cart is not self.cart:
            lines = self.lines()
            met = self.order.met(lines) if lines else (False,) * len(self.order.goals)
            self._met = (self.cart, met)
        return met

    @property
    def goal(self) -> Goal:
        """The goal being shopped for: the first of the order the cart does not meet yet (the last when all are)."""
        goals = self.order.goals
        if len(goals) == 1:
            return goals[0]
        return next((g for g, met in zip(goals, self.met()) if not met), goals[-1])

    def lines(self, cart: list[dict[str, Any]] | None = None) -> list[tuple[Product, Mapping[str, str]]]:
        """The cart's lines as (product, selected options)."""
        return [(self.catalogue[line["product"]], line["selected"]) for line in (self.cart if cart is None else cart)]

    def bought(self) -> list[dict[str, Any]]:
        """The lines of the finished purchase (the cart with the bought item)."""
        return self._with_line(self.cart, self.page["product"], self.page["selected"])

    def _with_line(self, cart: list[dict[str, Any]], pid: str, selected: Mapping[str, str]) -> list[dict[str, Any]]:
        """``cart`` with the line of ``pid``'s product type replaced by (or extended with) this one."""
        kind = self.catalogue[pid].type
        return [line for line in cart if self.catalogue[line["product"]].type != kind] + [
            {"product": pid, "selected": dict(selected)}]

    # ------------------------------------------------------------------ reading the page

    def results(self, query: str) -> tuple[str, ...]:
        return self.catalogue.index.search(query)

    def page_results(self, page: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        """The product ids listed on a results page (the open one by default)."""
        page = self.page if page is None else page
        start = (page["page"] - 1) * PAGE_SIZE
        return self.results(page["query"])[start:start + PAGE_SIZE]

    def page_count(self, query: str) -> int:
        return max(1, math.ceil(len(self.results(query)) / PAGE_SIZE))

    @property
    def product(self) -> Product | None:
        """The product of the open item (or done) page."""
        pid = self.page.get("product")
        return self.catalogue[pid] if pid is not None else None

    @property
    def done(self) -> bool:
        return self.page["kind"] == "done"

    def elements(self) -> list[str]:
        """The labels of the open page's clickable elements, in page order."""
        page, labels = self._elements
        if page is not self.page:
            labels = self._page_elements()
            self._elements = (self.page, labels)
        return list(labels)

    def _page_elements(self) -> list[str]:
        kind = self.page["kind"]
        if kind == "results":
            labels = [BACK_TO_SEARCH]
            if self.page["page"] > 1:
                labels.append(PREV)
            if self.page["page"] < self.page_count(self.page["query"]):
                labels.append(NEXT)
            return labels + list(self.page_results())
        if kind == "item":
            product = self.product
            return [BACK_TO_SEARCH, BACK, *(v for values in product.options.values() for v in values),
                    *((ADD,) if self.order.is_list else ()), BUY]
        return []

    def view(self) -> dict[str, Any]:
        """The open page as data, for the text and HTML renderers."""
        kind = self.page["kind"]
        view: dict[str, Any] = {"kind": kind, "instruction": self.instruction, "can_go_back": bool(self.history)}
        if self.order.is_list:
            view["cart"] = [(p, dict(selected)) for p, selected in self.lines()]
        if kind == "search":
            view["catalogue_size"] = len(self.catalogue)
        elif kind == "results":
            query = self.page["query"]
            view.update(query=query, page=self.page["page"], pages=self.page_count(query),
                        total=len(self.results(query)), has_prev=self.page["page"] > 1,
                        has_next=self.page["page"] < self.page_count(query),
                        items=[(pid, self.catalogue[pid].title, self.catalogue[pid].price)
                               for pid in self.page_results()])
        elif kind in ("item", "done"):
            view.update(product=self.product, selected=dict(self.page["selected"]))
            if kind == "done":
                view.update(reward=self.page["reward"], report=self.order.report(self.lines(self.bought())))
        return view

    # ------------------------------------------------------------------ actions

    def search(self, query: str) -> None:
        if self.done:
            raise ShopError("The order is placed; the session is over.")
        query = " ".join(query.split())
        if not query:
            raise ShopError("The search query is empty. Write what you are looking for, e.g. search[cotton shirt].")
        if len(query) > MAX_QUERY_LENGTH:
            raise ShopError(f"The search query is {len(query)} characters long; at most {MAX_QUERY_LENGTH}.")
        self._go({"kind": "results", "query": query, "page": 1})

    def click(self, element: str) -> None:
        label = _norm(element.strip().strip("[]"))
        kind = self.page["kind"]
        for candidate in self.elements():
            if _norm(candidate) == label:
                break
        else:
            raise ShopError(self._not_here(element))
        if candidate == BACK_TO_SEARCH:
            self._go({"kind": "search"})
        elif candidate == BACK:
            self.back()
        elif candidate in (PREV, NEXT):
            self._turn_page(-1 if candidate == PREV else 1)
        elif kind == "results":
            self._go({"kind": "item", "product": candidate, "selected": {}})
        elif candidate == ADD:
            self.cart = self._with_line(self.cart, self.page["product"], self.page["selected"])
        elif candidate == BUY:
            pid = self.page["product"]
            selected = dict(self.page["selected"])
            cart = self._with_line(self.cart, pid, selected)
            self.page = {"kind": "done", "product": pid, "selected": selected,
                         "reward": self.order.score(self.lines(cart))}
            self.history = []
            if self.order.is_list:  # a single goal's purchase is the done page itself
                self.cart = cart
        else:  # an option value of the open item
            product = self.product
            group = next(g for g, values in product.options.items() if candidate in values)
            self.page = {**self.page, "selected": {**self.page["selected"], group: candidate}}

    def back(self) -> None:
        if self.done:
            raise ShopError("The order is placed; the session is over.")
        if not self.history:
            raise ShopError("There is no page to go back to. Use search[...] to look for products.")
        self.page = self.history.pop()

    def next_page(self) -> None:
        if self.page["kind"] != "results":
            raise ShopError("Only a results page has a next page. " + self._clickable())
        if self.page["page"] >= self.page_count(self.page["query"]):
            raise ShopError("This is the last page of results. " + self._clickable())
        self._turn_page(1)

    def _turn_page(self, delta: int) -> None:
        self._go({**self.page, "page": self.page["page"] + delta})

    def _go(self, page: dict[str, Any]) -> None:
        self.history.append(self.page)
        if len(self.history) > MAX_HISTORY:
            del self.history[0]
        self.page = page

    def _clickable(self) -> str:
        labels = self.elements()
        return "Clickable here: " + " ".join(f"[{x}]" for x in labels) + "." if labels else "Nothing is clickable here."

    def _not_here(self, element: str) -> str:
        shown = element if len(element) <= 60 else element[:57] + "..."
        return f"There is no [{shown}] on this page. {self._clickable()}"

    # ------------------------------------------------------------------ state

    def get_state(self) -> dict[str, Any]:
        return {"catalogue": self.catalogue.fingerprint, "page": _copy_page(self.page),
                "history": [_copy_page(p) for p in self.history], "cart": [_copy_page(line) for line in self.cart]}

    def state_view(self) -> dict[str, Any]:
        """:meth:`get_state`'s value without its copies: read it at once, never keep or change it."""
        return {"catalogue": self.catalogue.fingerprint, "page": self.page, "history": self.history, "cart": self.cart}

    def check_state(self, state: Any) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """Validate a state from :meth:`get_state` completely; return (page, history, cart) copies. Raises ValueError."""
        if not isinstance(state, Mapping) or set(state) != {"catalogue", "page", "history", "cart"}:
            raise ValueError("the shop state must hold exactly catalogue, page, history and cart")
        if state["catalogue"] != self.catalogue.fingerprint:
            raise ValueError("the shop state is of another catalogue")
        history = state["history"]
        if not isinstance(history, list) or len(history) > MAX_HISTORY:
            raise ValueError(f"the shop history must be a list of at most {MAX_HISTORY} pages")
        cart = self._check_cart(state["cart"])
        page = self._check_page(state["page"], allow_done=True, cart=cart)
        if page["kind"] == "done" and history:
            raise ValueError("a finished session has no history")
        return page, [self._check_page(p, allow_done=False, cart=cart) for p in history], cart

    def set_state(self, state: Any) -> None:
        self.page, self.history, self.cart = self.check_state(state)

    def _check_cart(self, cart: Any) -> list[dict[str, Any]]:
        if not isinstance(cart, list) or len(cart) > MAX_CART or (cart and not self.order.is_list):
            raise ValueError(f"the cart must be a list of at most {MAX_CART} lines, empty unless the task is a list")
        lines = []
        for line in cart:
            if not isinstance(line, Mapping) or set(line) != {"product", "selected"}:
                raise ValueError("a cart line holds exactly product and selected")
            lines.append(self._check_choice(line["product"], line["selected"]))
        if len({self.catalogue[line["product"]].type for line in lines}) != len(lines):
            raise ValueError("the cart holds one line per product type")
        return lines

    def _check_choice(self, pid: Any, selected: Any) -> dict[str, Any]:
        if not isinstance(pid, str) or pid not in self.catalogue:
            raise ValueError(f"unknown product {pid!r}")
        options = self.catalogue[pid].options
        if not isinstance(selected, Mapping) or not all(
                isinstance(g, str) and g in options and v in options[g] for g, v in selected.items()):
            raise ValueError(f"selected options {selected!r} are not options of {pid}")
        return {"product": pid, "selected": dict(selected)}

    def _check_page(self, page: Any, *, allow_done: bool, cart: list[dict[str, Any]]) -> dict[str, Any]:
        if not isinstance(page, Mapping):
            raise ValueError("a shop page must be an object")
        kind = page.get("kind")
        keys = {"search": {"kind"}, "results": {"kind", "query", "page"}, "item": {"kind", "product", "selected"},
                "done": {"kind", "product", "selected", "reward"}}.get(kind)
        if keys is None or (kind == "done" and not allow_done):
            raise ValueError(f"unknown or misplaced shop page kind {kind!r}")
        if set(page) != keys:
            raise ValueError(f"a {kind} page holds exactly {sorted(keys)}")
        if kind == "results":
            query, number = page["query"], page["page"]
            if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_LENGTH:
                raise ValueError("a results page's query must be non-empty text within the length limit")
            if type(number) is not int or not 1 <= number <= self.page_count(query):
                raise ValueError(f"results page {number!r} is out of range for {query!r}")
            return {"kind": kind, "query": query, "page": number}
        if kind in ("item", "done"):
            out = {"kind": kind, **self._check_choice(page["product"], page["selected"])}
            if kind == "done":
                bought = self._with_line(cart, out["product"], out["selected"])
                if (self.order.is_list and bought != cart) or page["reward"] != self.order.score(self.lines(bought)):
                    raise ValueError("a finished session's reward does not match its purchase")
                out["reward"] = page["reward"]
            return out
        return {"kind": "search"}


def _copy_page(page: Mapping[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in page.items()}


# ---------------------------------------------------------------------- text rendering


def render_text(view: Mapping[str, Any]) -> str:
    """A page as text; clickable elements in square brackets."""
    lines = [f"Instruction: {view['instruction']}"]
    if "cart" in view:
        lines.append("Cart: " + ("; ".join(f"{p.id} {p.title} ({', '.join(selected.values()) or 'no options'})"
                                           for p, selected in view["cart"]) or "empty"))
    kind = view["kind"]
    if kind == "search":
        lines += ["--- Search ---", f"The shop has {view['catalogue_size']} products. Search with search[your query]."]
    elif kind == "results":
        total = view["total"]
        lines.append(f"--- Results for \"{view['query']}\": page {view['page']} of {view['pages']}, "
                     f"{total} item{'' if total == 1 else 's'} ---")
        if not total:
            lines.append("No product matches. Try other words.")
        lines += [f"[{pid}] {title} | ${price:.2f}" for pid, title, price in view["items"]]
        nav = [f"[{BACK_TO_SEARCH}]"] + ([f"[{PREV}]"] if view["has_prev"] else []) + (
            [f"[{NEXT}]"] if view["has_next"] else [])
        lines.append("Clickable: " + " ".join(nav) + (" and the item codes above" if total else ""))
    elif kind == "item":
        product: Product = view["product"]
        selected = view["selected"]
        lines += [f"--- Item {product.id} ---", product.title,
                  f"Price: ${product.price:.2f} | Rating: {product.rating}/5 | {product.category} > {product.type}",
                  "Attributes: " + ", ".join(product.attributes)]
        for group, values in product.options.items():
            chosen = selected.get(group)
            lines.append(f"{group}: " + " ".join(f"[{v}]" for v in values)
                         + (f"  (selected: {chosen})" if chosen else "  (not selected)"))
        add = f" [{ADD}]" if "cart" in view else ""
        lines.append(f"Clickable: [{BACK_TO_SEARCH}] [{BACK}]{add} [{BUY}] and the option values above")
    else:
        product = view["product"]
        chosen = ", ".join(f"{g} {v}" for g, v in view["selected"].items()) or "no options selected"
        lines += ["--- Order placed ---", f"You bought {product.id} {product.title} ({chosen}) for ${product.price:.2f}.",
                  f"Score: {view['reward']:.2f}", *view["report"]]
    return "\n".join(lines)
