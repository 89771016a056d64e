"""checks.drawn: without WORKBOOK_SEED the defaults; with it, others (same signs, same per seed);
checks.setting: a notebook's seed, batch and steps, its own unless the grader sets them."""

from __future__ import annotations

import ast

import nbformat
import pytest

from checks import drawn, setting
from checks.inputs import SETTINGS
from checks.paths import ROOT

DEFAULTS = (2.0, -3.0, 10.0, -2.0)


def test_defaults_unchanged_without_the_seed(monkeypatch):
    monkeypatch.delenv("WORKBOOK_SEED", raising=False)
    assert drawn(*DEFAULTS) == DEFAULTS
    assert drawn(0.5) == 0.5 and isinstance(drawn(0.5), float)
    monkeypatch.setenv("WORKBOOK_SEED", "")
    assert drawn(*DEFAULTS) == DEFAULTS


def test_other_numbers_with_the_seed(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SEED", "7")
    values = drawn(*DEFAULTS)
    assert isinstance(values, tuple) and len(values) == len(DEFAULTS)
    assert values != DEFAULTS
    for x, default in zip(values, DEFAULTS, strict=True):
        assert 0.6 <= x / default <= 1.4
        assert x == round(x, 6)  # a short number, free of float noise
    assert isinstance(drawn(0.5), float) and drawn(0.5) != 0.5


def test_same_seed_same_numbers(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SEED", "99")
    first = drawn(*DEFAULTS), drawn(0.5), drawn(3.0, -2.0)
    assert (drawn(*DEFAULTS), drawn(0.5), drawn(3.0, -2.0)) == first


@pytest.mark.parametrize("seed", range(50))
def test_signs_kept(monkeypatch, seed):
    monkeypatch.setenv("WORKBOOK_SEED", str(seed))
    defaults = (2.0, -3.0, 0.5, -1.5, 0.001, -0.001, 0.0)
    assert [x > 0 for x in drawn(*defaults)] == [x > 0 for x in defaults]
    assert [x < 0 for x in drawn(*defaults)] == [x < 0 for x in defaults]


def test_different_seeds_differ(monkeypatch):
    seen = set()
    for seed in range(20):
        monkeypatch.setenv("WORKBOOK_SEED", str(seed))
        seen.add(drawn(*DEFAULTS))
    assert len(seen) == 20


def test_needs_a_number():
    with pytest.raises(TypeError):
        drawn()


def test_setting_is_the_notebooks_own_unless_its_variable_is_set(monkeypatch):
    for variable in SETTINGS.values():
        monkeypatch.delenv(variable, raising=False)
    assert setting("seed", 2147483647) == 2147483647 and setting("text", None) is None
    monkeypatch.setenv("WORKBOOK_BATCH", " 24 ")
    monkeypatch.setenv("WORKBOOK_STEPS", "")  # empty: as if unset
    monkeypatch.setenv("WORKBOOK_TEXT", "/data/shakespeare.txt")
    assert setting("batch", 32) == 24 and setting("steps", 200_000) == 200_000
    assert setting("text", None) == "/data/shakespeare.txt"


def test_a_setting_that_is_no_number_or_no_setting_says_so(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SEED", "forty-two")
    with pytest.raises(ValueError, match="WORKBOOK_SEED='forty-two' is not a whole number"):
        setting("seed", 0)
    with pytest.raises(ValueError, match="the settings are seed, batch, steps, text"):
        setting("batch_size", 32)


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_learner_cell_reads_the_environment(path):
    """Seeds, batch sizes, step counts reach a notebook through checks (``setting``, ``drawn``):
    only the install cell, which runs before checks can be imported, reads the environment."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    reads = []
    for k, cell in enumerate(cells[1:], 1):
        tree = ast.parse(cell.source)
        names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        if names & {"environ", "getenv", "environb"}:
            reads.append(k)
    assert not reads, f"code cells {reads} of {path.name} read the environment"
