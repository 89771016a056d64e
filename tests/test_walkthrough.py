"""Issue 11's mistakes typed into the student copies and run in a real kernel, as a learner would:
each is named by the word the issue asks for, and a right answer next to it stays green."""

from __future__ import annotations

import re

import nbformat
import pytest

from checks.authoring.student import ROOT
from tests import answers01 as nb01
from tests.notebooks import ANSWERS, errors_of, fill, run, text_of

STUDENT_03 = ROOT / "notebooks" / "03-makemore-backprop.ipynb"
# a check's line and the line after it: "  ✗ word: hint" for a failure, "  ! word: note" for a note
REPORT = re.compile(r"^(\S.*?)\s+\| exact: .*\n  ([✗!]) ([a-z-]+): (.*)$", re.M)


def reports(nb) -> dict[str, tuple[str, str, str]]:
    """name -> (mark, word, text) for every check that printed a second line."""
    out = "".join(text_of(c) for c in nb.cells)
    return {name: (mark, word, text) for name, mark, word, text in REPORT.findall(out)}


def exercise_1(answers: dict[str, list[str]], upto: str = "# Exercise 2") -> nbformat.NotebookNode:
    nb = nbformat.read(STUDENT_03, as_version=4)
    end = next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith(upto)
    )
    nb.cells = nb.cells[:end]
    return fill(nb, answers, complete=False)


@pytest.mark.slow
def test_notebook_03_names_the_issues_mistakes():
    answers = {k: list(v) for k, v in ANSWERS.items()}
    answers["dhpreact"] = ["hpreact.grad * 1"]  # autograd's own, copied
    answers["dbnmeani"] = ["(-dbndiff).sum(0)"]  # the lecture's (64,)
    answers["dhprebn"] = ["dbndiff\ndhprebn += dbnmeani.expand_as(hprebn) / n"]  # no .clone()
    answers["dW1"] = ["dembcat.T @ dhprebn"]  # a gradient for the input
    answers["dC"] = ["torch.zeros_like(C)\ndC[Xb] += demb"]  # indexed +=
    nb = run(exercise_1(answers))
    assert errors_of(nb) == []
    got = reports(nb)
    assert got["hpreact"][:2] == ("✗", "autograd-grad") and "`hpreact.grad`" in got["hpreact"][2]
    assert got["bnmeani"][:2] == ("!", "keepdim") and "axis 0 was dropped" in got["bnmeani"][2]
    assert got["hprebn"][:2] == ("!", "alias") and "dbndiff.clone()" in got["hprebn"][2]
    assert got["W1"][:2] == ("✗", "operand") and "`dembcat` where `embcat` belongs" in got["W1"][2]
    assert got["C"][:2] == ("✗", "accumulate") and "`dC[Xb] += demb`" in got["C"][2]
    # a right answer next to a wrong one gets no second line (and the hprebn/bnmeani ones pass)
    out = "".join(text_of(c) for c in nb.cells)
    assert re.search(r"^bnraw\s+\| exact: \w+\s*\| approximate: True", out, re.M)
    assert re.search(r"^hprebn\s+\| exact: \w+\s*\| approximate: True", out, re.M)
    assert set(got) == {"hpreact", "bnmeani", "hprebn", "W1", "C"}, got


@pytest.mark.slow
def test_notebook_03_traces_an_error_to_where_it_started():
    answers = {k: list(v) for k, v in ANSWERS.items()}
    answers["dcounts"] = ["dprobs * counts_sum_inv"]  # the path through counts_sum left out
    nb = run(exercise_1(answers, upto="### `logit_maxes`"))
    got = reports(nb)
    assert got["counts"][1] == "missing-path", got
    assert got["norm_logits"][1] == "upstream" and "given your `dcounts`" in got["norm_logits"][2]


@pytest.mark.slow
def test_notebook_01_names_the_wrong_other_factor_and_the_value_slip():
    answers = {k: list(v) for k, v in nb01.ANSWERS.items()}
    answers["db"] = ["b * de"]  # the wrong "other factor"
    bodies = dict(nb01.BODIES)
    bodies["self * other"] = [
        "self.grad = out.grad * other.data",
        "other.grad = out.grad * self.data",
    ]
    nb = nb01.fill_value_class(fill(nb01.read("notebooks"), answers), bodies)
    nb.cells = nb.cells[: next(i for i, c in enumerate(nb.cells) if c.source.startswith("## 4."))]
    got = reports(run(nb))
    assert got["b"][1] == "operand", got.get("b")
    assert got["mul"][1] == "missing-path", got.get("mul")
    assert "both operands are one Value" in got["mul"][2], got.get("mul")


@pytest.mark.slow
def test_an_answer_computed_from_an_unwritten_one_says_which():
    answers = {k: list(v) for k, v in nb01.ANSWERS.items()}
    answers["dd"] = ["..."]  # dd not written; de = dd and dc = dd are
    nb = fill(nb01.read("notebooks"), answers)
    nb.cells = nb.cells[: next(i for i, c in enumerate(nb.cells) if c.source.startswith("## 3."))]
    got = reports(run(nb))
    assert got["d"][2].startswith("not written yet: replace the `...` with dd")
    assert got["e"][2].startswith("not written yet: your de is `...` because dd is still `...`")
