"""Lint: `ruff check .` and `ruff format --check .` from the root, as a maintainer runs them."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_is_clean_from_the_root(command: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ruff", *command], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, f"ruff {' '.join(command)}:\n{run.stdout}{run.stderr}"


def test_no_comment_is_stranded_after_a_closing_bracket() -> None:
    stranded = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("checks", "tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if line.lstrip()[:1] in ")]}"
        and line.lstrip()[1:].lstrip().startswith("# ")
        and "# fmt:" not in line
    ]
    assert not stranded, f"comments left after a closing bracket: {stranded}"
