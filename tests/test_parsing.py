"""Grading threads parse cells at once: Python 3.11's parser must not see two of them overlap."""

from __future__ import annotations

import gc
import re
import sys
import threading
from pathlib import Path

import checks
from checks.parsing import parse

NESTED = "\n".join(f"x{i} = " + "(" * 30 + "a + b * c" + ")" * 30 for i in range(100))


def _parse_in_threads(threads: int = 4, rounds: int = 20) -> list[Exception]:
    """Parse a deeply nested cell from several threads, switching threads mid-parse."""
    errors: list[Exception] = []

    def work() -> None:
        for _ in range(rounds):
            try:
                parse(NESTED)
            except SystemError as error:  # "AST constructor recursion depth mismatch"
                errors.append(error)

    interval, threshold = sys.getswitchinterval(), gc.get_threshold()
    callback = lambda phase, info: sum(range(200))  # noqa: E731 - bytecode inside the parser
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50, 1, 1)
    gc.callbacks.append(callback)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)
    return errors


def test_cells_parsed_in_four_threads_at_once_all_parse():
    assert _parse_in_threads() == []


def test_every_module_of_the_package_parses_through_the_lock():
    package = Path(checks.__file__).parent
    direct = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "parsing.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bast\.parse\(", line)
    ]
    assert direct == [], f"ast.parse called outside checks.parsing: {direct}"
