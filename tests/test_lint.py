"""Lint: `ruff check .` and `ruff format --check .` from the root, as a maintainer runs them, and
no comment left where the formatter stranded it."""

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    p for folder in ("checks", "tests", "bench") for p in sorted((ROOT / folder).rglob("*.py"))
]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_is_clean_from_the_root(command: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ruff", *command], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, f"ruff {' '.join(command)}:\n{run.stdout}{run.stderr}"


def stranded(source: str) -> list[int]:
    """Line numbers of comments the formatter moved off their statement: after a closing bracket
    (``)  # why``), or in brackets put around one value (``x = (`` / ``1  # why`` / ``)``)."""
    lines = source.splitlines()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = {t.start[0] for t in tokens if t.type == tokenize.COMMENT}
    found = []
    for n in sorted(comments):
        text = lines[n - 1].strip()
        after = text[1:].lstrip(":,").lstrip()
        if text[:1] in ")]}" and after.startswith("# ") and "# fmt:" not in text:
            found.append(n)
        wrapped = 1 < n < len(lines) and lines[n].strip() == ")"
        if wrapped and lines[n - 2].rstrip().endswith("= ("):
            found.append(n)
    return found


def test_stranded_finds_both_shapes() -> None:
    assert stranded("f(\n    x\n)  # why\n") == [3]
    assert stranded("if (\n    x\n):  # why\n    pass\n") == [3]
    assert stranded("x = (\n    1  # why\n)\n") == [2]
    assert stranded("# why\nx = 1\nf(x)  # fine\ny = (\n    '  # not a comment'\n)\n") == []


def test_no_comment_is_stranded() -> None:
    left = [f"{path.relative_to(ROOT)}:{n}" for path in SOURCES for n in stranded(path.read_text())]
    assert not left, f"comments the formatter stranded: {left}"


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports, by name, wherever in the file."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_no_test_file_imports_another() -> None:
    """Shared test code lives in helper modules (tests/notebooks.py, tests/submissions.py...) and
    fixtures in tests/conftest.py, as pytest's own suite keeps it."""
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in SOURCES
        for name in imported(path)
        if name.rpartition(".")[2].startswith("test_")
    }
    assert not found, sorted(found)
