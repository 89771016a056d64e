"""checks.drawn: without WORKBOOK_SEED the defaults; with it, others (same signs, same per seed)."""

from __future__ import annotations

import pytest

from checks import drawn

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
