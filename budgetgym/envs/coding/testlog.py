"""Reading pytest's report: test statuses from the short summary (``-rA``) and failure excerpts.

The statuses are read only from the "short test summary info" section, which pytest writes after
every test has run and its output has been captured, so text printed by the code under test (in
the captured-output sections above, or after the final line) is never taken for a result.
"""

from __future__ import annotations

import re

#: The flags every test run uses: statuses of all tests, short tracebacks, no cache files, no
#: plugins or options from the repository's configuration beyond pytest's own.
PYTEST_ARGS = ("-q", "-rA", "--tb=short", "-p", "no:cacheprovider", "-o", "addopts=", "-o", "console_output_style=classic")
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}

_SUMMARY = re.compile(r"^=+ short test summary info =+$")
_FINAL = re.compile(r"^=+ .*(passed|failed|error|skipped|no tests ran|deselected|xfailed|xpassed).* =+$")
_STATUS = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+?)(?: - .*)?$")
_SECTION = re.compile(r"^_{3,} (?:ERROR collecting )?(.+?) _{3,}$")


def parse_statuses(output: str) -> dict[str, str]:
    """Node id -> PASSED / FAILED / ERROR / SKIPPED / XFAIL / XPASS, from the short summary."""
    statuses: dict[str, str] = {}
    inside = False
    for line in output.splitlines():
        if _SUMMARY.match(line):
            inside, statuses = True, {}
            continue
        if inside:
            if _FINAL.match(line):
                inside = False
                continue
            match = _STATUS.match(line)
            if match:
                statuses[match.group(2)] = match.group(1)
    return statuses


def failure_excerpts(output: str) -> dict[str, list[str]]:
    """Test name (as pytest titles its failure section) -> the section's lines, for the issue texts."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("=") and current is not None:
            current = None
        match = _SECTION.match(line)
        if match:
            current = sections.setdefault(match.group(1), [])
            continue
        if current is not None:
            current.append(line)
    return sections


def passing(statuses: dict[str, str], node_ids) -> int:
    """How many of ``node_ids`` passed."""
    return sum(1 for node in node_ids if statuses.get(node) == "PASSED")
