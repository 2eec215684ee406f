"""Rebuild all of Web-v0's shipped data: ``python -m budgetgym.envs.web.assets`` rewrites
``budgetgym/assets/web/`` (``products.jsonl``, ``tasks.jsonl``, ``failure_states.jsonl``) from their
seeds, the same bytes every time (a test checks the shipped files match); ``--check`` only reports
whether they are current. The generators are ``budgetgym.envs.web.catalogue`` (the products) and
``budgetgym.envs.web.generate`` (the instructions and failure states).
"""

from __future__ import annotations

import argparse

from budgetgym.envs.web.catalogue import CATALOGUE_SEED, CATALOGUE_SIZE, PRODUCTS_PATH, Catalogue, generate_products
from budgetgym.envs.web.generate import FAILURES_PATH, TASKS_PATH, generate_all, generate_failure_states


def build() -> tuple[list[dict], list[dict], list[dict]]:
    """The shipped files' records: (products, tasks, failure states)."""
    products = generate_products(CATALOGUE_SIZE, CATALOGUE_SEED)
    catalogue = Catalogue(products)
    tasks = generate_all(catalogue)
    return [p.to_record() for p in products], tasks, generate_failure_states(tasks, catalogue)


def main(argv: list[str] | None = None) -> int:
    from budgetgym.core.jsonl import read_jsonl, write_jsonl

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the shipped files are current")
    args = parser.parse_args(argv)
    files = dict(zip((PRODUCTS_PATH, TASKS_PATH, FAILURES_PATH), build()))
    if args.check:
        current = all(path.exists() and read_jsonl(path) == records for path, records in files.items())
        print("current" if current else "stale: run python -m budgetgym.envs.web.assets")
        return 0 if current else 1
    PRODUCTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    for path, records in files.items():
        write_jsonl(path, records)
    products, tasks, failures = files.values()
    print(f"wrote {len(products)} products, {len(tasks)} tasks and {len(failures)} failure states "
          f"to {PRODUCTS_PATH.parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
