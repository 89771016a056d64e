"""Similar answers across a class (``checks.grading.similarity``): a pair that shares uncommon
answer code, renamed and respaced, is listed; learners who write the usual answers, or another
way, are not; ``report.md`` lists the pairs for review and changes no grade."""

from __future__ import annotations

from pathlib import Path

import nbformat

from checks.grading.exercise import load_exercise
from checks.grading.reports import write_reports
from checks.grading.rows import Row
from checks.grading.similarity import MIN_SHARED, Similar, own_code, similar_pairs
from checks.paths import SOLUTIONS
from tests.lecture_answers import LECTURE
from tests.submissions import NAME, filled, student_copy, substitute

EXERCISE = load_exercise(SOLUTIONS / NAME)

# four cells of exercise 1 written in an uncommon way, with temporaries (a first line that gives
# the placeholder's name a value, then the learner's own statements)
ANA = {
    "dlogprobs": [
        "0\nscratch = torch.zeros_like(logprobs)\nscratch[torch.arange(n), Yb] = -1.0 / n"
        "\ndlogprobs = scratch"
    ],
    "dprobs": ["dlogprobs * probs ** -1"],
    "dcounts_sum_inv": ["0\nrow = dprobs * counts\ndcounts_sum_inv = row.sum(1, keepdim=True)"],
    "dcounts_sum": ["dcounts_sum_inv * (-1) * counts_sum ** -2"],
}
# the same code: other names for the temporaries, other spacing, comments, brackets
BEN = {
    "dlogprobs": [
        "0\nmine  =  torch.zeros_like( logprobs )  # start from zeros\n"
        "mine[torch.arange(n),Yb] = (-1.0/n)\ndlogprobs=mine"
    ],
    "dprobs": ["(dlogprobs*probs**-1)  # chain rule"],
    "dcounts_sum_inv": ["0\nr = (dprobs * counts)\ndcounts_sum_inv = r.sum(1, keepdim = True)"],
    "dcounts_sum": ["dcounts_sum_inv*(-1)*counts_sum**-2"],
}

# a third way for those cells, written independently (an honest learner)
EVE = {
    "dlogprobs": ["-F.one_hot(Yb, logprobs.shape[1]).to(logprobs.dtype) / n"],
    "dprobs": ["dlogprobs * probs.reciprocal()"],
    "dcounts_sum_inv": ["torch.sum(dprobs * counts, 1, keepdim=True)"],
    "dcounts_sum": ["-dcounts_sum_inv * counts_sum.pow(-2)"],
}


def _class(tmp_path: Path, **notebooks: nbformat.NotebookNode) -> list[tuple[str, list[Path]]]:
    subs = []
    for who, nb in notebooks.items():
        (tmp_path / who).mkdir()
        nbformat.write(nb, tmp_path / who / NAME)
        subs.append((who, [tmp_path / who / NAME]))
    return subs


def test_a_pair_sharing_uncommon_code_renamed_and_respaced_is_listed(tmp_path):
    subs = _class(
        tmp_path,
        ana=filled(**ANA),
        ben=filled(**BEN),
        cara=filled(),
        dan=substitute(student_copy(), LECTURE),
        eve=filled(**EVE),
    )
    [pair] = similar_pairs(subs, {NAME: EXERCISE})
    assert (pair.first, pair.second, pair.notebook) == ("ana", "ben", NAME)
    assert pair.shared == 4 < pair.both_wrote  # of the cells both wrote in their own way
    assert set(pair.checks) == {
        "ex1/dlogprobs",
        "ex1/dprobs",
        "ex1/dcounts_sum_inv",
        "ex1/dcounts_sum",
    }


def test_the_usual_answers_and_a_few_shared_cells_are_not_listed(tmp_path):
    """Everyone's usual answers are common; two learners who share fewer than MIN_SHARED uncommon
    cells are not listed, nor is a pair that wrote differently, nor two learners alone on a
    notebook who both wrote the usual answers."""
    few = dict(list(ANA.items())[: MIN_SHARED - 1])
    subs = _class(
        tmp_path,
        ana=filled(**few),
        ben=filled(**{k: BEN[k] for k in few}),
        cara=filled(),
        dan=filled(),
        eve=substitute(student_copy(), LECTURE),
    )
    assert similar_pairs(subs, {NAME: EXERCISE}) == []
    (tmp_path / "two").mkdir()  # two learners alone on the notebook, both with the usual answers
    alone = _class(tmp_path / "two", fay=filled(), gus=filled())
    assert similar_pairs(alone, {NAME: EXERCISE}) == []


def test_own_code_leaves_out_the_handed_out_lines_and_renames_only_temporaries():
    template = "dW = ...  # TODO: the gradient\ncmp('W', dW, W)"
    mine = "t = h.T\ndW = t @ dout  # mine\ncmp('W', dW, W)"
    theirs = "tmp=h.T\ndW = (tmp @ dout)\ncmp('W', dW, W)"
    assert own_code(mine, template, ["dW"]) == own_code(theirs, template, ["dW"])
    assert own_code(mine, template, ["dW"]) == ("_v0 = h.T", "dW = _v0 @ dout")
    assert own_code(template, template, ["dW"]) == ()
    assert own_code("%timeit x\ndW  = 1", template, ["dW"]) == ("%timeit x", "dW = 1")
    deep = "dW = " + "(" * 5000 + "1" + ")" * 5000  # too deep for the parser: its line as is
    assert own_code(deep, template, ["dW"]) == (deep,)


def test_the_report_lists_the_pairs_and_changes_no_grade(tmp_path):
    rows = [
        Row(submission=who, notebook=NAME, check="ex1/dprobs", passed=True)
        for who in ("ana", "<b>ben</b>")
    ]
    plain = tmp_path / "plain"
    flagged = tmp_path / "flagged"
    for out in (plain, flagged):
        out.mkdir()
    write_reports(rows, plain)
    pair = Similar("ana", "<b>ben</b>", NAME, ("ex1/dprobs", "ex1/dlogprobs"), 3, 26)
    write_reports(rows, flagged, similar=[pair])
    report = (flagged / "report.md").read_text()
    assert (
        "## Similar answers" in report
        and "## Similar answers" not in (plain / "report.md").read_text()
    )
    line = next(x for x in report.splitlines() if x.startswith("| 03-makemore-backprop |"))
    assert "ana and &lt;b&gt;ben&lt;/b&gt;" in line and "| 3 of 26 |" in line
    for name in ("grades.csv", "totals.csv"):
        assert (flagged / name).read_bytes() == (plain / name).read_bytes()
