"""Hint ladders: written as comment lines in the solutions, generated into checks/hints/, given one
rung per call by checks.hint, counted by summary(); student copies that give no formula away."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
import torch

import checks
from checks import hints
from checks.compare import reset
from checks.student import HINTS, ROOT, ladders, stub_source

CELL = """\
# dcounts: dL/dcounts, shape (3, 4)
# dcounts full: the path through probs plus the one through counts_sum
# hint dcounts: counts feeds two places: counts_sum and probs; add both contributions.
# hint dcounts: probs = counts * counts_sum_inv: the local derivative is counts_sum_inv.
# hint dcounts: dcounts = ____ * dprobs
# hint dcounts+: dcounts += ____
### BEGIN SOLUTION
dcounts = counts_sum_inv * dprobs
other = 1
dcounts += torch.ones_like(counts) * dcounts_sum
### END SOLUTION
cmp('counts', dcounts, counts)"""


def test_the_comment_lines_make_the_todo_and_the_ladder():
    assert "dcounts = ...  # TODO: dL/dcounts, shape (3, 4)" in stub_source(CELL)
    assert "# hint" not in stub_source(CELL) and "full:" not in stub_source(CELL)
    assert "# TODO: the path through probs plus the one through counts_sum" in stub_source(
        CELL, full=True
    )
    ladder = ladders(CELL)["dcounts"]
    assert ladder["rungs"][0].startswith("counts feeds two places")
    assert ladder["rungs"][2] == "dcounts = ____ * dprobs\ndcounts += ____"
    assert ladder["solution"] == (
        "dcounts = counts_sum_inv * dprobs\ndcounts += torch.ones_like(counts) * dcounts_sum"
    )  # not `other = 1`


def test_a_hint_for_a_name_the_block_does_not_assign_is_refused():
    with pytest.raises(ValueError, match="describes no name"):
        ladders(CELL.replace("# hint dcounts: counts feeds", "# hint dprobs: counts feeds"))


@pytest.fixture
def ladder_of(tmp_path, monkeypatch):
    ladder = {"check": "counts", **ladders(CELL)["dcounts"]}
    (tmp_path / "03-makemore-backprop.json").write_text(json.dumps({"dcounts": [ladder]}))
    monkeypatch.setattr(hints, "HINTS", tmp_path)
    hints._ladders.cache_clear()
    hints.reset()
    reset()
    yield
    hints._ladders.cache_clear()
    hints.reset()
    reset()


def test_one_rung_per_call_and_the_solution_only_when_asked(ladder_of):
    shown = [checks.hint("counts") for _ in range(4)]
    assert [h.number for h in shown] == [1, 2, 3, 3]
    assert [h.title for h in shown[:3]] == ["the idea", "the local derivative", "a skeleton"]
    assert "reveal=True" in shown[2].after and "counts_sum_inv * dprobs" not in "".join(
        map(str, shown)
    )
    sol = checks.hint("dcounts", reveal=True)
    assert sol.number == 0 and sol.text.startswith("dcounts = counts_sum_inv * dprobs")
    assert hints.used("counts") == (3, True)
    assert "<pre" in sol._repr_html_() and "hint 1 of 3" in shown[0]._repr_html_()


def test_the_first_rung_starts_from_the_last_mistake(ladder_of):
    g = torch.Generator().manual_seed(0)
    counts = torch.rand(3, 4, generator=g, requires_grad=True)
    (counts * torch.arange(12.0).view(3, 4)).sum().backward()
    checks.cmp("counts", -counts.grad, counts, quiet=True)  # a sign slip
    first = checks.hint("counts")
    assert first.text.startswith("Your last dcounts failed (sign): ")
    assert "counts feeds two places" in first.text
    assert "sign" not in checks.hint("counts").text  # the second rung is the ladder's own


def test_summary_counts_the_rungs(ladder_of, capsys):
    g = torch.Generator().manual_seed(0)
    counts = torch.rand(3, 4, generator=g, requires_grad=True)
    counts.sum().backward()
    checks.cmp("counts", torch.ones(3, 4), counts, quiet=True)
    checks.hint("counts")
    checks.hint("counts")
    table = checks.summary()
    assert re.search(r"counts\s+✓ pass\s+\S*\s+1\s+2\b", str(table)), str(table)
    page = table._repr_html_()
    assert re.search(r"<th [^>]*>hints</th>", page) and re.search(r"<td [^>]*>2</td>", page)


def test_an_unknown_name_says_which_ladders_exist(ladder_of):
    h = checks.hint("nothing")
    assert "no hint ladder" in h.text and "dcounts" in h.after


def test_the_ladders_are_generated_from_the_solutions():
    """Committed ladders match the solutions (python -m checks.student --check covers it too)."""
    from checks.student import notebook_ladders

    for sol in sorted((ROOT / "solutions").glob("*.ipynb")):
        made = notebook_ladders(nbformat.read(sol, as_version=4))
        assert json.loads((HINTS / f"{sol.stem}.json").read_text()) == made, sol.name


def test_every_answer_has_three_rungs():
    """Every ladder, a name asked twice (notebook 01's ``da``) included, and each knows
    its check."""
    for path in sorted(HINTS.glob("*.json")):
        for name, options in json.loads(path.read_text()).items():
            for ladder in options:
                assert len(ladder["rungs"]) == 3, (path.name, name, ladder["rungs"])
                assert ladder["solution"].strip() and ladder["check"], (path.name, name)


GIVEAWAYS = re.compile(
    r"@|\.T\b|\.sum|keepdim|transpos|\bplus\b|1 - |\*\*|\bmean\b|one_hot|softmax|"
    r"broadcast|scatter|index_add|Bessel|n - 1|n-1"
)


def test_the_student_copies_give_no_formula_away():
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for line in cell.source.split("\n") if cell.cell_type == "code" else []:
                todo = line.split("# TODO:", 1)[1] if "# TODO:" in line else ""
                if GIVEAWAYS.search(todo):
                    found.append(f"{path.name}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_name_asked_twice_gets_the_ladder_of_the_check_run_last():
    hints._ladders.cache_clear()
    hints.reset()
    reset()
    first = checks.hint("da")
    assert "hint 1 of 3" in first._repr_html_()
    x = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (x * x).backward()
    checks.cmp("a (a*a)", 6.0, x, quiet=True)  # the quiz of notebook 01 was run last
    quiz = checks.hint("da")
    assert (
        quiz.number == 1 and quiz.text != first.text
    )  # the quiz's own ladder, from its first rung
    assert hints.used("a (a*a)") == (1, False)
    reset()
    hints.reset()


def test_a_self_study_edition_keeps_the_fuller_comments(tmp_path):
    from checks.student import main

    assert main(["--full", "--out", str(tmp_path)]) == 0
    fuller = nbformat.read(tmp_path / "03-makemore-backprop.ipynb", as_version=4)
    todos = [
        ln
        for c in fuller.cells
        if c.cell_type == "code"
        for ln in c.source.split("\n")
        if "# TODO:" in ln
    ]
    assert any("plus the one through counts_sum" in t for t in todos), todos[:5]
    assert (ROOT / "notebooks" / "03-makemore-backprop.ipynb").read_text() != (
        tmp_path / "03-makemore-backprop.ipynb"
    ).read_text()
