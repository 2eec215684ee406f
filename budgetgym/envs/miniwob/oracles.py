"""Known-good next actions for the supported MiniWoB++ tasks, read off the live page.

Each oracle gets the page's elements (plain dicts: ref, parent, tag, text, value, id, classes) and
the task's fields (MiniWoB's own parse of the utterance, e.g. ``{"target": "ONE"}``) and returns the
next call as ``(tool name, arguments)``, or None when it sees nothing to do. They look at the page as
it is (what is typed, what is checked), so they continue from any state of the episode.

``ORACLE_TURNS`` is each task's longest oracle solution, the base of its full budget.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

Element = Mapping[str, Any]
Call = tuple[str, dict[str, Any]]


def _first(elements: Sequence[Element], test: Callable[[Element], bool]) -> Element | None:
    return next((e for e in elements if e["ref"] > 0 and test(e)), None)


def _click(element: Element | None) -> Call | None:
    return None if element is None else ("click", {"ref": element["ref"]})


def _button(elements: Sequence[Element], text: str | None = None) -> Element | None:
    return _first(elements, lambda e: e["tag"] == "button" and (text is None or e["text"] == text))


def _fill(element: Element | None, text: str) -> Call | None:
    if element is None or element["value"] == text:
        return None
    return ("type", {"ref": element["ref"], "text": text})


def _label_inputs(elements: Sequence[Element]) -> list[tuple[str, Element]]:
    """(label text, input) for each choice of a list of checkboxes or radio buttons."""
    texts = {e["parent"]: e["text"] for e in elements if e["ref"] < 0}
    return [(texts.get(e["parent"], ""), e) for e in elements
            if e["ref"] > 0 and e["tag"] in ("input_checkbox", "input_radio")]


def click_test(elements, fields):
    return _click(_button(elements))


def click_button(elements, fields):
    return _click(_button(elements, fields["target"]))


def click_link(elements, fields):
    return _click(_first(elements, lambda e: "alink" in e["classes"].split() and e["text"] == fields["target"]))


def click_tab(elements, fields):
    return _click(_first(elements, lambda e: e["tag"] == "a" and e["text"] == f"Tab #{fields['target']}"))


def click_dialog(elements, fields):
    return _click(_first(elements, lambda e: "ui-dialog-titlebar-close" in e["classes"].split()))


def focus_text(elements, fields):
    return _click(_first(elements, lambda e: e["tag"] == "input_text"))


def enter_text(elements, fields):
    box = _first(elements, lambda e: e["tag"] == "input_text")
    return _fill(box, fields["target"]) or _click(_button(elements))


def enter_password(elements, fields):
    for box in (e for e in elements if e["ref"] > 0 and e["tag"] == "input_password"):
        call = _fill(box, fields["target"])
        if call:
            return call
    return _click(_button(elements))


def login_user(elements, fields):
    user = _first(elements, lambda e: e["id"] == "username")
    password = _first(elements, lambda e: e["id"] == "password")
    return _fill(user, fields["username"]) or _fill(password, fields["password"]) or _click(_button(elements))


def click_checkboxes(elements, fields):
    wanted = {v for k, v in fields.items() if k.startswith("target")}
    for text, box in _label_inputs(elements):
        if (box["value"] == "True") != (text in wanted):
            return _click(box)
    return _click(_button(elements))


def click_option(elements, fields):
    for text, box in _label_inputs(elements):
        if text == fields["target"] and box["value"] != "True":
            return _click(box)
    return _click(_button(elements))


ORACLES: Mapping[str, Callable[[Sequence[Element], Mapping[str, str]], Call | None]] = {
    "click-test": click_test, "click-test-2": click_button, "click-button": click_button,
    "click-link": click_link, "click-tab": click_tab, "click-dialog": click_dialog, "focus-text": focus_text,
    "enter-text": enter_text, "enter-password": enter_password, "login-user": login_user,
    "click-checkboxes": click_checkboxes, "click-option": click_option,
}

ORACLE_TURNS: Mapping[str, int] = {
    "click-test": 1, "click-test-2": 1, "click-button": 1, "click-link": 1, "click-tab": 1, "click-dialog": 1,
    "focus-text": 1, "enter-text": 2, "enter-password": 3, "login-user": 3,
    "click-checkboxes": 7,  # up to six boxes to tick, then Submit
    "click-option": 2,
}
