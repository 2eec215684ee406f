"""The shop over HTTP: sessions, isolation, limits, and a full purchase in a real browser (Chromium
driven by Playwright) that must score what the text env scores for the same choices."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import time
import urllib.parse

import pytest

from budgetgym.envs.web import WebEnv
from budgetgym.envs.web.server import ShopServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def server():
    with ShopServer(port=0, max_sessions=4, idle_seconds=60, max_body=1024) as shop:
        shop.serve_in_background()
        yield shop
        shop.shutdown()


def request(server, method, path, body=None, headers=None):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    data = urllib.parse.urlencode(body).encode() if isinstance(body, dict) else body
    hdrs = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    conn.request(method, path, body=data, headers=hdrs)
    response = conn.getresponse()
    payload = response.read().decode()
    conn.close()
    return response.status, dict(response.getheaders()), payload


def start(server, task_id="web-train-0000", seed="0"):
    status, headers, _ = request(server, "POST", "/session", {"task_id": task_id, "seed": seed})
    assert status == 303, status
    return headers["Location"]  # /s/TOKEN/


def status_of(server, base):
    code, _, payload = request(server, "GET", base + "status")
    assert code == 200
    return json.loads(payload)


def test_binds_loopback_by_default():
    with ShopServer(port=0) as shop:
        assert shop.server_address[0] == "127.0.0.1"


def test_oracle_purchase_over_http_scores_as_the_text_env(server):
    env = WebEnv()
    env.reset(seed=0, options={"task_id": "web-train-0003"})
    base = start(server, "web-train-0003")
    while (action := env.oracle_action()) is not None:
        _, reward, terminated, _, _ = env.step(action)
        verb, inside = re.match(r"(search|click)\[(.*)\]$", action).groups()
        field = "query" if verb == "search" else "element"
        code, headers, _ = request(server, "POST", base + verb, {field: inside})
        assert code == 303 and headers["Location"] == base
    state = status_of(server, base)
    assert state["terminated"] and state["success"] and state["reward"] == reward == 1.0
    assert state["turn"] == env.turn


def test_sessions_are_isolated(server):
    a, b = start(server), start(server)
    assert a != b
    request(server, "POST", a + "search", {"query": "garden hose"})
    assert status_of(server, a)["page"] == "results" and status_of(server, b)["page"] == "search"
    assert status_of(server, b)["turn"] == 0
    # a made-up or altered token reaches nothing
    forged = a[:-3] + ("x" if a[-3] != "x" else "y") + a[-2:]
    assert request(server, "GET", forged)[0] == 404
    assert request(server, "POST", forged + "click", {"element": "Buy Now"})[0] == 404
    assert status_of(server, a)["turn"] == 1


def test_bad_input_costs_the_turn_and_changes_nothing(server):
    base = start(server)
    request(server, "POST", base + "search", {"query": "garden hose"})
    code, _, page = request(server, "GET", base)
    code, _, _ = request(server, "POST", base + "click", {"element": "P99999"})
    assert code == 303
    state = status_of(server, base)
    assert state["page"] == "results" and state["turn"] == 2 and "There is no [P99999]" in state["message"]
    request(server, "POST", base + "search", {"query": "x" * 201})
    state = status_of(server, base)
    assert state["page"] == "results" and state["turn"] == 3 and "too long" in state["message"]


def test_request_limits(server):
    base = start(server)
    assert request(server, "POST", base + "search", {"query": "q" * 2000})[0] == 413
    assert request(server, "GET", "/s/" + "a" * 3000)[0] == 414
    assert request(server, "POST", "/session", {"task_id": "no-such-task"})[0] == 400
    assert request(server, "POST", "/session", {"seed": "-1"})[0] == 400
    assert request(server, "GET", "/etc/passwd")[0] == 404
    assert status_of(server, base)["turn"] == 0


def test_live_sessions_are_bounded_and_closed_ones_free_room(server):
    tokens = [start(server) for _ in range(4)]
    assert request(server, "POST", "/session", {"seed": "1"})[0] == 503
    assert request(server, "POST", tokens[0] + "close")[0] == 303
    assert request(server, "GET", tokens[0])[0] == 404
    start(server)


def test_idle_sessions_expire():
    with ShopServer(port=0, idle_seconds=0.2) as shop:
        shop.serve_in_background()
        base = start(shop)
        deadline = time.monotonic() + 10
        while len(shop.store) and time.monotonic() < deadline:  # the reaper closes it
            time.sleep(0.05)
        assert len(shop.store) == 0
        assert request(shop, "GET", base)[0] == 404
        shop.shutdown()


def test_html_escapes_what_the_shopper_typed(server):
    base = start(server)
    request(server, "POST", base + "search", {"query": '<script>alert(1)</script> "hose"'})
    _, headers, page = request(server, "GET", base)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "script-src" not in headers["Content-Security-Policy"] and "default-src 'none'" in headers["Content-Security-Policy"]


# ---------------------------------------------------------------------- a real browser


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed: pip install 'budgetgym[web]'")
    if not os.path.exists(CHROMIUM):  # make test installs it as root
        pytest.skip("Debian's chromium is not installed: apt-get install chromium")
    return sync_playwright


@pytest.mark.parametrize("choices", ["oracle", "wrong_option"])
def test_full_purchase_in_chromium_scores_as_the_text_env(server, choices):
    """Chromium starts a session, searches, opens an item, selects options and buys through the real
    HTML; the score shown and reported, and the reward, equal the text env's for the same choices."""
    sync_playwright = _playwright()
    task_id = "web-test-0004"
    env = WebEnv()
    env.reset(seed=0, options={"task_id": task_id})
    plan = []
    while (action := env.oracle_action()) is not None:
        plan.append(action)
        env.step(action)
    if choices == "wrong_option":  # the same path with one option set wrong: a partial score
        goal = env.shop.goal
        group, value = next(iter(goal.options.items()))
        other = next(v for v in env.catalogue[env.shop.page["product"]].options[group] if v != value)
        plan = [a if a != f"click[{value}]" else f"click[{other}]" for a in plan]
        env.reset(seed=0, options={"task_id": task_id})
        for action in plan:
            _, text_reward, _, _, info = env.step(action)
    else:
        text_reward = 1.0
    text_score = env.shop.page["reward"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(server.url + "/")
            page.fill("#task-id", task_id)
            page.fill("#seed", "0")
            page.click("#start")
            assert env.task.instruction in page.inner_text("#instruction")
            for action in plan:
                verb, inside = re.match(r"(search|click)\[(.*)\]$", action).groups()
                if verb == "search":
                    page.fill("#search-input", inside)
                    page.click("#search-button")
                else:
                    page.click(f'button[name="element"][value="{inside}"]')
            shown = float(page.inner_text("#reward"))
            base = urllib.parse.urlsplit(page.url).path
        finally:
            browser.close()
    state = status_of(server, base)
    assert state["terminated"] and state["score"] == pytest.approx(text_score) == pytest.approx(shown, abs=1e-4)
    assert state["reward"] == text_reward == (1.0 if choices == "oracle" else 0.0) and 0 < text_score
    assert state["success"] is (choices == "oracle")


def test_budgetgym_serve_web_command():
    import subprocess
    import sys
    import urllib.request

    process = subprocess.Popen([sys.executable, "-m", "budgetgym.cli", "serve", "web", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group()
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and b"start-form" in response.read()
    finally:
        process.terminate()
        process.wait(timeout=10)
