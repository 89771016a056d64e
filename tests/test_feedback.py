"""Feedback a teacher would give (issue 11): an error traced to where it started, the mistakes
that real learners make named as such, and answers judged the same in the notebook and the grader.

Each answer is written as a learner writes it, in a function whose source ``cmp`` reads as it
reads a notebook cell's.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import checks
from checks import cmp
from checks.grading.judge import judge_one
from checks.grading.settings import Settings
from tests.makemore import setup


@pytest.fixture(autouse=True)
def _fresh():
    checks.reset()
    yield
    checks.reset()


@pytest.fixture(scope="module")
def mm():
    p, f, Xb, Yb = setup()
    return p, f, Xb, Yb


def test_a_right_step_on_a_wrong_upstream_answer_is_upstream(mm):
    p, f, Xb, Yb = mm
    counts, counts_sum_inv, norm_logits = f["counts"], f["counts_sum_inv"], f["norm_logits"]
    dprobs = f["probs"].grad
    dcounts = (counts_sum_inv * dprobs).detach()  # the path through counts_sum is missing
    first = cmp("counts", dcounts, counts, quiet=True)
    dnorm_logits = counts.detach() * dcounts  # right, given dcounts
    res = cmp("norm_logits", dnorm_logits, norm_logits, quiet=True)
    assert first.mistake == "missing-path"
    assert res.mistake == "upstream" and res.state == "upstream", res
    assert "right given your `dcounts`" in res.hint and "fix it first" in res.hint
    wrong_step = -counts.detach() * dcounts  # wrong on its own: not blamed on dcounts
    assert cmp("norm_logits", wrong_step, norm_logits, quiet=True).mistake != "upstream"


def test_an_upstream_that_passed_does_not_excuse_a_wrong_step(mm):
    p, f, Xb, Yb = mm
    counts = f["counts"]
    assert cmp("counts", counts.grad.clone(), counts, quiet=True).ok
    res = cmp("norm_logits", -counts.detach() * counts.grad, f["norm_logits"], quiet=True)
    assert res.mistake == "sign", res


def test_a_gradient_where_the_layer_input_belongs_is_operand(mm):
    p, f, Xb, Yb = mm
    dhprebn = f["hprebn"].grad
    dembcat = f["embcat"].grad
    embcat = f["embcat"]  # noqa: F841  (in scope, as in the notebook)
    dW1 = dembcat.T @ dhprebn
    res = cmp("W1", dW1, p["W1"], quiet=True)
    assert res.mistake == "operand", res
    assert "`dembcat` where `embcat` belongs" in res.hint


def test_the_wrong_other_factor_of_a_product_is_operand():
    a, b = torch.tensor(2.0, requires_grad=True), torch.tensor(-3.0, requires_grad=True)
    e = a * b
    e.retain_grad()
    L = e * torch.tensor(-2.0)
    L.backward()
    db = b.detach() * e.grad  # the learner's b * de: b where a belongs
    res = cmp("b", db, b, quiet=True, loss=L)
    assert res.mistake == "operand", res
    assert "with b itself as the other factor" in res.hint


def test_copies_of_autograd_grad_are_autograd_grad(mm):
    p, f, Xb, Yb = mm
    logprobs = f["logprobs"]
    dlogprobs = logprobs.grad.clone()
    assert cmp("logprobs", dlogprobs, logprobs, quiet=True).mistake == "autograd-grad"
    dlogprobs = logprobs.grad * 1
    res = cmp("logprobs", dlogprobs, logprobs, quiet=True)
    assert res.mistake == "autograd-grad" and "`logprobs.grad`" in res.hint


def test_another_tensors_grad_as_the_upstream_is_not_called_a_copy(mm):
    p, f, Xb, Yb = mm
    dprobs = (1.0 / f["probs"].detach()) * f["logprobs"].grad
    assert cmp("probs", dprobs, f["probs"], quiet=True).ok


def test_an_alias_changed_in_place_is_named(mm):
    p, f, Xb, Yb = mm
    n = Xb.shape[0]
    dbndiff = f["bndiff"].grad.clone()
    assert cmp("bndiff", dbndiff, f["bndiff"], quiet=True).ok
    dbnmeani = (-dbndiff).sum(0, keepdim=True)
    dhprebn = dbndiff
    dhprebn += 1.0 / n * torch.ones_like(f["hprebn"]) * dbnmeani
    res = cmp("hprebn", dhprebn, f["hprebn"], quiet=True)
    assert res.ok and [x.word for x in res.notes] == ["alias"], res
    assert "`dhprebn = dbndiff`" in res.note and "dbndiff.clone()" in res.note
    again = cmp("bndiff", dbndiff, f["bndiff"], quiet=True)
    assert again.mistake == "alias" and "dbndiff.clone()" in again.hint, again


def test_an_indexed_add_is_accumulate_with_why(mm):
    p, f, Xb, Yb = mm
    demb = f["emb"].grad
    dC = torch.zeros_like(p["C"])
    dC[Xb] += demb
    res = cmp("C", dC, p["C"], quiet=True)
    assert res.mistake == "accumulate" and "`dC[Xb] += demb`" in res.hint, res
    assert "index_add_" in res.hint and "only one of its additions" in res.hint


def test_a_hard_coded_batch_size_is_named_when_the_batch_differs():
    code = "dlogits = torch.zeros((32, 27))\ndlogits[range(n), Yb] = -1.0 / n"
    res = judge_one(
        "ex1/dlogits", "dlogits", torch.zeros(32, 27), torch.randn(24, 27), Settings(batch=24), code
    )
    assert res.mistake == "shape" and [x.word for x in res.notes] == ["batch-size"]
    assert "the number 32" in res.note and "24" in res.note


WRONG = [
    ("dlogprobs", "sign", lambda e: -e, ""),
    ("dbnmeani", "shape", lambda e: e.repeat(2, 1), ""),
    ("dW1", "transpose", lambda e: e.T.clone(), ""),
    ("dhpreact", "autograd-grad", lambda e: e.clone(), "dhpreact = hpreact.grad.clone()"),
    (
        "dC",
        "accumulate",
        lambda e: torch.cat([e[:3] / 2, e[3:]]),
        "dC = torch.zeros_like(C)\ndC[Xb] += demb",
    ),
    ("dlogits", "scale", lambda e: e * 24, ""),
]


@pytest.mark.parametrize("var, word, make, code", WRONG)
def test_the_grader_and_the_notebook_give_the_same_word_and_hint(var, word, make, code):
    """Both build the verdict with the same parts, and the grader's row is that
    verdict's rendering."""
    e = torch.randn(24, 27 if var != "dbnmeani" else 1, generator=torch.Generator().manual_seed(3))
    if var == "dbnmeani":
        e = e.T.contiguous()
    graded = judge_one(f"ex1/{var}", var, make(e), e, Settings(batch=24), code)
    assert graded.mistake == word, graded
    row = graded.row()
    assert row["mistake"] == word and row["reason"].startswith(graded.hint)
    assert "\x1b" not in row["reason"] and "#x1B" not in row["reason"]


def test_grader_row_notes_a_dropped_leading_axis_and_strict_shapes_fails_it():
    e = torch.randn(1, 64)
    passed = judge_one("ex1/dbnmeani", "dbnmeani", e.view(64), e, Settings())
    assert passed.ok and passed.row()["note"].startswith("keepdim: ")
    strict = judge_one("ex1/dbnmeani", "dbnmeani", e.view(64), e, Settings(strict_shapes=True))
    assert not strict.ok and strict.mistake == "shape"


def test_rendered_once_text_html_and_row_agree(mm):
    p, f, Xb, Yb = mm
    res = cmp("logits (fused)", -F.softmax(f["logits"].detach(), 1), f["logits"], quiet=True)
    text, page, row = res.report(), res.html(), res.row()
    assert res.hint in text and row["reason"].startswith(res.hint)
    assert "your dlogits" in res.hint and "dlogits (fused)" not in res.hint
    assert "<code>" in page or "`" not in res.hint


def test_summary_counts_declared_checks_that_have_not_run_yet(capsys):
    checks.expect("a", "b", "c")
    x = torch.ones(2, requires_grad=True)
    (x * 3).sum().backward()
    cmp("a", torch.full((2,), 3.0), x, quiet=True)
    table = checks.summary()
    out = capsys.readouterr().out
    assert "1 / 3 checks pass (2 not run yet)" in out and "· not run yet" in out
    assert table.count == 3 and table.unreached == ["b", "c"]
    assert "not run yet" in table._repr_html_()


def test_a_bessel_slip_inside_the_fused_batch_norm_formula_names_the_term(mm):
    p, f, Xb, Yb = mm
    n = Xb.shape[0]
    bngain, bnvar_inv, bnraw = p["bngain"].detach(), f["bnvar_inv"].detach(), f["bnraw"].detach()
    dhpreact = f["hpreact"].grad
    right = (
        bngain
        * bnvar_inv
        / n
        * (n * dhpreact - dhpreact.sum(0) - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))
    )
    assert cmp("hprebn (fused)", right, f["hprebn"], quiet=True).ok
    # n/(n-1) left out
    dhprebn = (
        bngain
        * bnvar_inv
        / n
        * (n * dhpreact - dhpreact.sum(0) - bnraw * (dhpreact * bnraw).sum(0))
    )
    res = cmp("hprebn (fused)", dhprebn, f["hprebn"], quiet=True)
    assert res.mistake == "bessel", res
    assert "`bndiff2` (pow)" in res.hint and "31/32" in res.hint, res.hint


@pytest.mark.parametrize(
    "code",
    [
        "dh = h.grad  # a peek first\ndh, dW2 = dlogits @ W2.T, h.T @ dlogits",
        "dC = C.grad.clone()\ndC.zero_()\ndC.index_add_(0, Xb.view(-1), demb.view(-1, 10))",
        "dC = C.grad * 0\ndC.index_add_(0, Xb.view(-1), demb.view(-1, 10))",
        "dC = C.grad.new_zeros(C.shape)\ndC.index_add_(0, Xb.view(-1), demb.view(-1, 10))",
    ],
)
def test_right_code_that_mentions_grad_is_not_called_a_copy(code):
    from checks.source import facts

    answer = code.split(" ", 1)[0]
    f = facts(code, answer)
    assert f.reads_grad is None, f


@pytest.mark.parametrize(
    "code",
    [
        "dlogits = torch.autograd.grad(F.cross_entropy(logits, Yb), logits)[0]",
        "l = logits.detach().requires_grad_()\nF.cross_entropy(l, Yb).backward()\ndlogits = l.grad",
    ],
)
def test_autograd_run_in_the_answer_cell_is_autograd_grad(code):
    res = judge_one("ex2/dlogits", "dlogits", torch.ones(4, 3), torch.ones(4, 3), Settings(), code)
    assert res.mistake == "autograd-grad" and not res.ok, res


def test_an_abandoned_indexed_add_is_not_blamed(mm):
    p, f, Xb, Yb = mm
    demb = f["emb"].grad
    dC = torch.zeros_like(p["C"])
    dC[Xb] += demb  # a first try
    dC = torch.zeros_like(p["C"])
    dC.index_add_(0, Xb.view(-1), -demb.view(-1, 10))  # the real mistake: the sign
    assert cmp("C", dC, p["C"], quiet=True).mistake == "sign"


def test_an_alias_of_a_scratch_buffer_is_not_noted(mm):
    p, f, Xb, Yb = mm
    demb = f["emb"].grad
    buf = torch.zeros_like(p["C"])
    dC = buf
    dC.index_add_(0, Xb.view(-1), demb.view(-1, 10))
    res = cmp("C", dC, p["C"], quiet=True)
    assert res.ok and not res.notes, res


def test_an_indexed_add_with_a_counting_index_is_not_accumulate(mm):
    p, f, Xb, Yb = mm
    n = Xb.shape[0]
    idx = torch.arange(n)
    dlogits = F.softmax(f["logits"].detach(), 1)
    dlogits[idx, Yb] -= 1  # the 1/n forgotten
    res = cmp("logits", dlogits, f["logits"], quiet=True)
    assert res.mistake == "scale", res


def test_a_bessel_slip_fails_at_large_batch_sizes():
    """The rounding allowance does not hide it (at n=1000 the entries of dbndiff2 are ~3e-6, so the
    slip is ~3e-9, under allclose's own atol=1e-8: that limit is the lecture's, not ours)."""
    for n in (256, 512):
        p, f, Xb, Yb = setup(batch_size=n)
        dbnvar = f["bnvar"].grad
        slip = 1.0 / n * torch.ones_like(f["bndiff2"]) * dbnvar  # 1/n where the forward has 1/(n-1)
        res = cmp("bndiff2", slip, f["bndiff2"], quiet=True, loss=f["loss"])
        assert not res.ok and res.mistake == "bessel", (n, res)


def test_summary_of_a_notebook_up_to_a_check(capsys):
    checks.summary("03-makemore-backprop", last="C")
    out = capsys.readouterr().out
    assert "0 / 26 checks pass (26 not run yet)" in out and "logits (fused)" not in out
    checks.reset()
    checks.summary("01-scalar-autograd")
    assert "0 / 59 checks pass (59 not run yet)" in capsys.readouterr().out


def test_a_batch_size_written_as_a_number_is_noted_on_a_right_answer_too():
    """With the batch fixed by the instructor (``--batch 32``), an answer that writes 32 passes
    but breaks for any other batch: the note says so on the pass."""
    e = torch.zeros(32, 27)
    e[range(32), torch.arange(32) % 27] = -1.0 / 32
    code = "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(32), Yb] = -1.0 / 32"
    res = judge_one("ex1/dlogprobs", "dlogprobs", e.clone(), e, Settings(batch=32), code)
    assert res.ok and [x.word for x in res.notes] == ["batch-size"], res
    assert "the number 32" in res.note
    honest = code.replace("range(32)", "range(n)").replace("/ 32", "/ n")
    res = judge_one("ex1/dlogprobs", "dlogprobs", e.clone(), e, Settings(batch=32), honest)
    assert res.ok and not res.notes, res
