"""Learners' answers (tests/corpus_answers.py) put into the solutions of notebooks 02 to 05, in
process: a right answer, however it is written, passes its check; a wrong one fails it; and the
check names the cause (a word of ``checks.MISTAKES`` other than ``wrong``) for as many wrong answers
as it can. The issue's target is 95%; ``MEASURED`` is what the checks reach today, a floor that
must not fall, and the target's own test is an expected failure until the checks get there.

Run with ``-s`` to see every wrong answer still called ``wrong``, with the hint it got.
"""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from checks import MISTAKES
from tests.cascade import Outcome, Spoil, Walk
from tests.corpus_answers import CORPUS, LAST, RIGHT_KEEPDIM, RIGHT_KINDS

# cells with no answer that cost time in every walk: 02's numeric check of the 784x100 layer,
# 04's demonstration that counted logits have a zero gradient (a backward pass over 182,000 rows)
SKIP = {
    "02-tensor-backprop": ("plt.", "check_numeric("),
    "04-mlp-language-model": ("plt.", "W_counts ="),
}
TARGET = 0.95
# the share of wrong answers named, as measured when the corpus was written (a floor: raise it
# when the checks improve)
MEASURED = {
    "02-tensor-backprop": 0.66,  # 34 of 51
    "03-makemore-backprop": 0.74,  # 84 of 113
    "04-mlp-language-model": 0.62,  # 28 of 45
    "05-transformer-backprop": 0.64,  # 88 of 136
}
NOTEBOOKS = sorted(CORPUS)


@functools.cache
def said(notebook: str) -> tuple[tuple[Spoil, Outcome], ...]:
    """Every entry of ``notebook``'s corpus with what its own check said."""
    walk = Walk(notebook, LAST[notebook], skip=SKIP.get(notebook, ("plt.",)), sources=True)
    return tuple((entry, walk.said(entry)) for entry in CORPUS[notebook])


def wrong(notebook: str) -> list[tuple[Spoil, Outcome]]:
    return [(e, o) for e, o in said(notebook) if e.kind not in RIGHT_KINDS]


def named(o: Outcome) -> bool:
    """The check failed and said why: not ``wrong``, and not ``upstream`` (every earlier answer is
    the solution's, so nothing upstream is wrong)."""
    return not o.ok and o.mistake not in ("wrong", "upstream")


def show(notebook: str, e: Spoil, o: Outcome) -> str:
    line = " / ".join(x.strip() for x in e.line.splitlines() if x.strip())
    return f"{notebook[:2]} {e.answer} [{e.kind}] `{line}` -> {o.mistake}: {o.hint}"


def unnamed(notebooks: list[str]) -> list[str]:
    return [show(nb, e, o) for nb in notebooks for e, o in wrong(nb) if not named(o)]


def test_the_corpus_is_large_and_varied():
    entries = [e for nb in NOTEBOOKS for e in CORPUS[nb]]
    wrongs = [e for e in entries if e.kind not in RIGHT_KINDS]
    rights = [e for e in entries if e.kind in RIGHT_KINDS]
    assert len(wrongs) >= 150 and len(rights) >= 60, (len(wrongs), len(rights))
    assert len({(e.answer, e.check, e.inside) for e in wrongs}) >= 100
    kinds = {e.kind for e in wrongs}
    assert {"sign", "scale", "bessel", "transpose", "shape", "missing-path"} <= kinds
    assert {"operand", "accumulate", "chain", "mask", "decay", "bias-correction"} <= kinds
    assert kinds <= {*MISTAKES, "keepdim", "axis", "index", "formula"}, kinds - {*MISTAKES}
    for nb in NOTEBOOKS:
        assert sum(e.kind not in RIGHT_KINDS for e in CORPUS[nb]) >= 30, nb
        assert sum(e.kind in RIGHT_KINDS for e in CORPUS[nb]) >= 20, nb
        distinct = Counter(CORPUS[nb])  # an entry is its answer, line and place
        assert max(distinct.values()) == 1, [k for k, v in distinct.items() if v > 1]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_right_answer_passes(notebook):
    failed = [show(notebook, e, o) for e, o in said(notebook) if e.kind in RIGHT_KINDS and not o.ok]
    assert failed == [], "\n".join(failed)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_a_dropped_leading_axis_passes_with_a_keepdim_note(notebook):
    kept = [(e, o) for e, o in said(notebook) if e.kind == RIGHT_KEEPDIM]
    assert all(o.ok and "keepdim" in o.notes for _, o in kept), kept


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_wrong_answer_fails(notebook):
    passed = [show(notebook, e, o) for e, o in wrong(notebook) if o.ok]
    assert passed == [], "\n".join(passed)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_share_of_wrong_answers_named_does_not_fall(notebook):
    got = wrong(notebook)
    rate = sum(named(o) for _, o in got) / len(got)
    print(f"\n{notebook}: {rate:.1%} of {len(got)} wrong answers named")
    for line in unnamed([notebook]):
        print("  called wrong:", line)
    assert rate >= MEASURED[notebook], "\n".join(unnamed([notebook]))


@pytest.mark.xfail(
    strict=True,
    reason=(
        "the checks name the cause of 68% of the corpus's wrong answers (234 of 345), not 95%. "
        "Called `wrong`: a local derivative alone where the gradient from above is one the "
        "notebook gives (02's dD, dzmax; `chain` is found only for a learner's own dX); a mask "
        "or index slip (`torch.ones_like(Z) * dzmax`, argmin for argmax, `x[:, Y]`, `dlogprobs` "
        "filled everywhere, `masked_fill(mask, 0)` with the mask inverted); a square factor "
        "left untransposed (02's 2x2 `dA = dN @ W`, `dW = A @ dN`; 05's "
        "`dy_cat = dattn_out @ W_aproj`, `dv = att_probs @ dy`, `v @ dy.mT`); a product's own "
        "factor where the other belongs (`(bngain * dhpreact).sum(0)`, `bnraw * dhpreact`, "
        "`counts_sum_inv * dprobs`, `lnf_hat * dlnf`, `datt @ q`); the gradient from one step "
        "too far (`dhpreact @ W1.T`, `dh @ W_fc.T`, `embcat.T @ dhpreact`) or a forward "
        "tensor of the wrong side of an activation (`1 - hpreact**2`, `h_pre` for `h`, "
        "`ln2_hat` for `ln2`); another operation's derivative (sigmoid's for tanh, exact GELU "
        "for the tanh form, log's as x, exp's as 1, the power rule's exponent); a wrong term in "
        "a fused formula (batch norm's and layer norm's backward, GELU's slope, the softmax "
        "backward, cross-entropy's `+= 1` or `softmax(dim=0)`); heads put back in the wrong "
        "layout or order (05's dy, dqkv); 02's entries with one term or one sign wrong; AdamW "
        "slips outside the four named (betas swapped, no square in v, t+1, one correction left "
        "out, the step's sign, the decay without lr, the old m)"
    ),
)
def test_the_cause_is_named_for_95_percent_of_wrong_answers():
    got = [(nb, o) for nb in NOTEBOOKS for _, o in wrong(nb)]
    rate = sum(named(o) for _, o in got) / len(got)
    assert rate >= TARGET, f"{rate:.1%} named; called wrong:\n" + "\n".join(unnamed(NOTEBOOKS))


@pytest.mark.xfail(
    strict=True,
    reason=(
        "a named word that is not the slip made: 04's bigram dW (a table used through the lookup "
        "W[Xtr[:, -1]]) is `accumulate` for any wrong rows, a missing 1/N included, where the "
        "learner wrote a closed form with no scatter at all; 05's `dlnf_diff = 2 * lnf_diff * "
        "dlnf_diff2` (the path through lnf_hat left out) is `operand`, 'dlnf_mean where lnf_rstd "
        "belongs', not `missing-path`"
    ),
)
def test_a_named_word_is_the_slip_made():
    """Where the corpus meant a slip that has a word (``keepdim`` is a ``shape``), a named answer
    gets that word."""
    meant = {**{k: k for k in MISTAKES}, "keepdim": "shape"}
    other = [
        show(nb, e, o)
        for nb in NOTEBOOKS
        for e, o in wrong(nb)
        if named(o) and e.kind in meant and o.mistake != meant[e.kind]
    ]
    assert other == [], "\n".join(other)
