"""The slips issue 22 found called "wrong", each named in the notebook, in several real-looking
forms: the gradient from above never multiplied in (``chain``), a padding mask left out of 05's
``dlogits`` (``mask``) and 05's ``datt`` transposed in ``dq`` or ``dk`` (``transpose``)."""

from __future__ import annotations

import pytest

from tests.cascade import Spoil, Walk

CHAIN_03 = [
    ("dprobs", "dprobs = 1.0 / probs", "`dlogprobs`"),
    ("dprobs", "dprobs = probs**-1", "`dlogprobs`"),
    ("dnorm_logits", "dnorm_logits = norm_logits.exp()", "`dcounts`"),
    ("dcounts_sum", "dcounts_sum = -counts_sum**-2", "`dcounts_sum_inv`"),
    ("dh", "dh = torch.ones_like(logits) @ W2.T", "`dlogits`"),
    ("dhpreact", "dhpreact = 1.0 - h**2", "`dh`"),
    ("dhpreact", "dhpreact = 1 - torch.tanh(hpreact) ** 2", "`dh`"),
    ("dbnvar", "dbnvar = -0.5 * (bnvar + 1e-5)**-1.5", "`dbnvar_inv`"),
]
CHAIN_05 = [
    ("dlnf_var", "dlnf_var = -0.5 * (lnf_var + 1e-5)**-1.5", "`dlnf_rstd`"),
    (
        "dh_pre",
        "dh_pre = 0.5 * (1 + th) + 0.5 * h_pre * (1 - th**2) * math.sqrt(2 / math.pi)"
        " * (1 + 3 * 0.044715 * h_pre**2)",
        "`dh`",
    ),
    (
        "datt_masked",
        "datt_masked = att_probs * (1 - att_probs.sum(-1, keepdim=True))",
        "`datt_probs`",
    ),
]


@pytest.fixture(scope="module")
def walk03():
    return Walk("03-makemore-backprop", "hprebn (fused)")


@pytest.fixture(scope="module")
def walk05():
    return Walk("05-transformer-backprop", "v (fused)")


def said(walk: Walk, answer: str, line: str, check: str | None = None):
    got = {o.name: o for o in walk.run(Spoil(answer, "slip", line))}
    return got[check or answer[1:]]


@pytest.mark.parametrize(("answer", "line", "up"), CHAIN_03)
def test_a_local_derivative_alone_is_chain_in_03(walk03, answer, line, up):
    res = said(walk03, answer, line)
    assert res.mistake == "chain", res.hint
    assert f"from above, {up}, is missing" in res.hint, res.hint


@pytest.mark.parametrize(("answer", "line", "up"), CHAIN_05)
def test_a_local_derivative_alone_is_chain_in_05(walk05, answer, line, up):
    res = said(walk05, answer, line)
    assert res.mistake == "chain", res.hint
    assert up in res.hint


@pytest.mark.parametrize(
    ("line", "left_out"),
    [
        ("dcounts = counts_sum_inv + torch.ones_like(counts) * dcounts_sum", "`probs`"),
        ("dcounts = counts_sum_inv * dprobs + 1.0", "`counts_sum`"),
    ],
)
def test_one_path_without_its_gradient_from_above_is_chain(walk03, line, left_out):
    res = said(walk03, "dcounts", line)
    assert res.mistake == "chain", res.hint
    assert f"its contribution through {left_out} is the local derivative alone" in res.hint


@pytest.mark.parametrize(
    "line",
    [
        "dlogits = (F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), vocab_size)) / n_targets",
        "dlogits = F.softmax(logits, -1)\n"
        "dlogits[Yb >= 0] -= F.one_hot(Yb[Yb >= 0], vocab_size).to(dlogits.dtype)\n"
        "dlogits = dlogits / n_targets",
        "dlogits = (F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), vocab_size)) / (B * T)",
    ],
)
def test_padding_targets_given_a_gradient_are_mask(walk05, line):
    res = said(walk05, "dlogits", line, "logits")
    assert res.mistake == "mask", res.hint
    assert "padding targets of -1" in res.hint and "must get 0" in res.hint


@pytest.mark.parametrize(
    ("answer", "line"),
    [
        ("dq", "dq = (datt.transpose(-2, -1) * scale) @ k"),
        ("dq", "dq = datt.mT @ k / math.sqrt(hs)"),
        ("dk", "dk = (datt * scale) @ q"),
        ("dk", "dk = torch.einsum('bhst,bhtd->bhsd', datt, q) * scale"),
    ],
)
def test_datt_transposed_in_the_scores_rule_is_transpose(walk05, answer, line):
    res = said(walk05, answer, line)
    assert res.mistake == "transpose", res.hint
    assert "`datt`, the gradient from above, swapped" in res.hint, res.hint
