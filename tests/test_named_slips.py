"""The slips issue 22 found called "wrong", each named in the notebook, in several real-looking
forms: the gradient from above never multiplied in (``chain``), a padding mask left out of 05's
``dlogits`` (``mask``) and 05's ``datt`` transposed in ``dq`` or ``dk`` (``transpose``)."""

from __future__ import annotations

import pytest
import torch

import checks
from checks import cmp
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


# ------------------------------------------------------------------ item 4 of issue 22


def linear_layer(seed: int = 4):
    """Notebook 02's last linear layer, ``N = A @ W + b`` on a batch of 32, with no ``n`` in
    sight: the batch size is only in the shapes."""
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(32, 78, generator=g, dtype=torch.float64, requires_grad=True)
    W = torch.randn(78, 10, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(1, 10, generator=g, dtype=torch.float64, requires_grad=True)
    dN = torch.randn(32, 10, generator=g, dtype=torch.float64)
    N = A @ W + b
    N.retain_grad()
    loss = (N * dN).sum()
    loss.backward(retain_graph=True)
    return A, W, b, N, dN, loss


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("W", lambda A, W, dN: A.detach().T @ dN / 32),
        ("W", lambda A, W, dN: torch.einsum("ki,kj->ij", A.detach(), dN) / A.shape[0]),
        ("b", lambda A, W, dN: dN.mean(0, keepdim=True)),
    ],
)
def test_a_mean_where_the_rule_sums_names_the_batch_size(name, answer):
    checks.reset()
    A, W, b, N, dN, loss = linear_layer()
    res = cmp(name, answer(A, W, dN), {"W": W, "b": b}[name], quiet=True)
    assert res.mistake == "scale" and "32 is the batch size" in res.hint, res.hint


def test_a_dropped_axis_with_wrong_values_does_not_say_the_values_are_right():
    checks.reset()
    A, W, b, N, dN, loss = linear_layer()
    res = cmp("b", dN.sum(0) / 2, b, quiet=True)
    assert not res.ok and res.mistake == "scale"
    (note,) = [n for n in res.notes if n.word == "keepdim"]
    assert "values are right" not in note.text and "axis 0 was dropped" in note.text
    right = cmp("b", dN.sum(0), b, quiet=True)
    assert right.ok and "The values are right" in right.note


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
def test_an_answer_of_another_float_dtype_gets_a_dtype_note(dtype):
    checks.reset()
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1), requires_grad=True)
    (x.tanh() * 2).sum().backward()
    res = cmp("x", x.grad.clone().to(dtype), x, quiet=True, atol=1e-2, rtol=1e-2)
    (note,) = [n for n in res.notes if n.word == "dtype"]
    assert f"is {str(dtype)[6:]} where x is float32" in note.text and ".to(x.dtype)" in note.text


def test_the_gradient_of_a_factor_where_the_factor_belongs_is_operand_with_no_names():
    """The lecture's ``dW1 = dembcat.T @ dhprebn`` inside a function, checked afterwards against
    a loss whose graph is kept: no tensor of the forward pass has a name any more."""
    checks.reset()
    g = torch.Generator().manual_seed(3)
    C = torch.randn(7, 5, generator=g, requires_grad=True)
    W1 = torch.randn(10, 6, generator=g, requires_grad=True)
    W2 = torch.randn(6, 4, generator=g, requires_grad=True)
    X = torch.randint(0, 7, (8, 2), generator=g)

    def step():
        embcat = C[X].view(8, -1)
        h = torch.tanh(embcat @ W1)
        loss = (h @ W2).square().mean()
        dlogits = 2 * (h @ W2) / (h @ W2).numel()
        dh = dlogits @ W2.T
        dpre = (1 - h**2) * dh
        dembcat = dpre @ W1.T
        return loss, dembcat.T @ dpre  # the input's gradient where the input belongs

    loss, dW1 = step()
    loss.backward(retain_graph=True)
    res = cmp("W1", dW1.detach(), W1, loss=loss, quiet=True)
    assert res.mistake == "operand", res.hint
    assert "the gradient of the product's other factor where that factor itself" in res.hint


def test_a_float64_answer_in_a_float32_step_stops_in_one_line_naming_it():
    """04's and 05's training steps call ``require(..., like=dout)`` on what the learner's
    backward functions return: a numpy-made float64 ``dW`` stops there, by name, instead of a
    matrix product failing later in the notebook's own code."""
    import numpy as np

    dout = torch.ones(4, 3)
    dW = torch.from_numpy(np.ones((5, 3)))  # float64
    with pytest.raises(checks.WrongDtype) as stop:
        checks.require("linear_backward()", like=dout, dx=torch.ones(4, 5), dW=dW, db=dout.sum(0))
    said = str(stop.value)
    assert said.startswith("dW in linear_backward() is float64 but the network is float32")
    assert stop.value._render_traceback_() == [f"WrongDtype: {said}"]
    checks.require("linear_backward()", like=dout, dx=torch.ones(4, 5), dW=dW.float())
    with pytest.raises(checks.NotWritten):
        checks.require("linear_backward()", like=dout, dx=..., dW=dW)


@pytest.mark.parametrize(
    ("decay", "correct", "word"),
    [
        ("none", "t", "decay"),
        ("coupled", "t", "decay"),
        ("decoupled", "first", "bias-correction"),
        ("decoupled", "none", "bias-correction"),
    ],
)
def test_adamw_slips_are_named_against_torch(decay, correct, word):
    from checks.optim import adamw_step

    g = torch.Generator().manual_seed(5)
    p0 = torch.randn((4, 5), generator=g, dtype=torch.float64)
    grads = [torch.randn((4, 5), generator=g, dtype=torch.float64) for _ in range(5)]
    ref = p0.clone().requires_grad_()
    opt = torch.optim.AdamW([ref], lr=0.01, weight_decay=0.01)
    for grad in grads:
        ref.grad = grad.clone()
        opt.step()
    found = checks.adamw_slips(p0, grads, lr=0.01, weight_decay=0.01)
    outs = {}
    for how in ((decay, correct), ("decoupled", "t")):
        p, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
        for t, grad in enumerate(grads, start=1):
            p, m, v = adamw_step(p, grad, m, v, t, 0.01, decay=how[0], correct=how[1])
        outs[how] = p
    right = checks.check_value(
        "p", outs[("decoupled", "t")], ref.detach(), source="AdamW", slips=found["p"], quiet=True
    )
    res = checks.check_value(
        "p", outs[(decay, correct)], ref.detach(), source="AdamW", slips=found["p"], quiet=True
    )
    assert right.ok
    assert res.mistake == word, res.hint


def test_on_a_freed_graph_upstream_reaches_through_a_sum_and_says_when_it_cannot():
    """After a plain ``loss.backward()`` the step cannot be replayed: the local rules carry a
    wrong ``dlogits`` through ``h @ W2 + b2`` to ``dh``, and where no rule reaches (``bnvar``
    through ``(bnvar + 1e-5)**-0.5``) a note says that the error may have started earlier."""
    from tests.makemore import backward, setup

    checks.reset()
    p, f, Xb, Yb = setup()  # the graph freed
    d = backward(p, f, Xb, Yb)
    d["logits"] = -d["logits"]  # a sign slip, then the next step right given it
    res = cmp("logits", d["logits"], f["logits"], quiet=True)
    dh = d["logits"] @ p["W2"].detach().T
    after = cmp("h", dh, f["h"], quiet=True)
    assert res.mistake == "sign" and after.mistake == "upstream", after.hint
    dbnvar_inv = -f["bnvar_inv"].grad
    cmp("bnvar_inv", dbnvar_inv, f["bnvar_inv"], quiet=True)
    dbnvar = -0.5 * (f["bnvar"].detach() + 1e-5) ** -1.5 * dbnvar_inv
    later = cmp("bnvar", dbnvar, f["bnvar"], quiet=True)
    assert not later.ok
    assert later.mistake == "upstream" or "untraced" in [n.word for n in later.notes], later


@pytest.mark.parametrize(
    "line",
    [
        "dprobs = (1.0 / probs) * dlogprobs.roll(1, 0)",  # another example's gradient from above
        "dprobs = torch.zeros_like(probs)",
    ],
)
def test_an_answer_that_does_not_keep_the_gradient_from_aboves_zeros_is_not_local(walk03, line):
    """``local`` says the gradient from above is multiplied in: an answer with values where that
    gradient is zero (numbers of another batch pasted in, say) or none at all is not that."""
    assert said(walk03, "dprobs", line).mistake != "local"


def test_a_slope_that_is_no_function_of_the_input_is_not_local(walk03):
    """Each column's slope off by its own random factor: no function of ``bnvar`` gives it."""
    g = "torch.Generator().manual_seed(5)"
    line = (
        "dbnvar = -0.5 * (bnvar + 1e-5)**-1.5 * dbnvar_inv"
        f" * (1 + 0.5 * torch.rand(bnvar.shape, generator={g}))"
    )
    assert said(walk03, "dbnvar", line).mistake != "local"


@pytest.mark.parametrize(
    ("line", "said_"),
    [
        (
            "dhprebn = bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)"
            " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            "the factor `bngain` is missing",
        ),
        (
            "dhprebn = bngain / bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)"
            " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
            "`bnvar_inv`**2",
        ),
    ],
)
def test_a_factor_of_a_fused_formula_missing_or_inverted_is_factor(walk03, line, said_):
    res = walk03.said(Spoil("dhprebn", "factor", line, check="hprebn (fused)"))
    assert res.mistake == "factor" and said_ in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        "dC = torch.zeros_like(C).index_add_(0, Xb.T.flatten(), demb.view(-1, n_embd))",
        "dC = torch.zeros_like(C)"
        ".index_add_(0, Xb.flatten(), demb.transpose(0, 1).reshape(-1, n_embd))",
        "dC = torch.zeros_like(C)\n"
        "dC.index_put_((Xb.T.reshape(-1),), demb.reshape(-1, n_embd), accumulate=True)",
    ],
)
def test_the_index_and_the_gradient_flattened_in_different_orders_is_layout(walk03, line):
    assert said(walk03, "dC", line).mistake == "layout"


@pytest.mark.parametrize(
    "line",
    [
        # numbers with the right totals over the rows: after batch norm they are zero for any batch
        "dC = torch.randn(C.shape, generator=torch.Generator().manual_seed(3))\ndC -= dC.mean(0)",
        "dC = torch.zeros_like(C).index_add_(0, torch.randint(0, vocab_size, (Xb.numel(),),"
        " generator=torch.Generator().manual_seed(4)), demb.view(-1, n_embd))",
    ],
)
def test_totals_that_any_batch_has_do_not_make_layout(walk03, line):
    """``layout`` says the index and the gradient were flattened in different orders; numbers of
    another batch (pasted in) or an index of other rows only share totals that batch norm makes
    zero for every batch, and are not that."""
    assert said(walk03, "dC", line).mistake != "layout"


# ---------------------------------------------------------------- issue 22: fused formulas' terms

LN2 = (
    "(dx_hat - dx_hat.mean(-1, keepdim=True) - ln2_hat * (dx_hat * ln2_hat).mean(-1, keepdim=True))"
)


@pytest.mark.parametrize(
    ("line", "word", "said_"),
    [
        # the layer norm's part of dx1 with its sign flipped, the residual's right
        (f"dx_hat = ln2_w * dln2\ndx1 = dx2 + -1 * ln2_rstd * {LN2}", "sign", "the wrong sign"),
        (f"dx_hat = dln2 * ln2_w\ndx1 = dx2 - {LN2} * ln2_rstd", "sign", "the wrong sign"),
        # its two means taken as sums: C times too large, through the mean and the variance
        (
            "dx_hat = ln2_w * dln2\ndx1 = dx2 + ln2_rstd * (dx_hat - dx_hat.sum(-1, keepdim=True)"
            " - ln2_hat * (dx_hat * ln2_hat).sum(-1, keepdim=True))",
            "scale",
            "are 36 times what they should be",
        ),
        # `/ rstd` for `* rstd` in the layer norm's part only
        (f"dx_hat = ln2_w * dln2\ndx1 = dx2 + {LN2} / ln2_rstd", "factor", "`ln2_rstd`**2"),
        # x_hat left out of the variance's term
        (
            "dx_hat = ln2_w * dln2\ndx1 = dx2 + ln2_rstd * (dx_hat - dx_hat.mean(-1, keepdim=True)"
            " - (dx_hat * ln2_hat).mean(-1, keepdim=True))",
            "factor",
            "the factor `ln2_hat` is missing in that part",
        ),
    ],
)
def test_one_part_of_a_fused_layer_norm_wrong_is_named(walk05, line, word, said_):
    """The parts of a fused formula, as the graph's uses of ``x1`` carry them: the residual's
    and the layer norm's mean, variance and direct paths; one part (or several alike) with a sign,
    a factor or a forward tensor wrong is named, and where."""
    res = walk05.said(Spoil("dx1", "slip", line, check="x1"))
    assert res.mistake == word and said_ in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        # the layer norm's part times a random factor per entry, or of another batch's rows
        f"dx_hat = ln2_w * dln2\ndx1 = dx2 + ln2_rstd * {LN2}"
        " * (1 + 0.5 * torch.rand(x1.shape, generator=torch.Generator().manual_seed(7)))",
        f"dx_hat = ln2_w * dln2\ndx1 = dx2 + (ln2_rstd * {LN2}).roll(1, 0)",
        # random numbers whose rows sum to zero, as a layer norm's gradient's do
        "dx1 = torch.randn(x1.shape, generator=torch.Generator().manual_seed(8))\n"
        "dx1 = dx2 + dx1 - dx1.mean(-1, keepdim=True)",
    ],
)
def test_unrelated_numbers_in_a_fused_layer_norm_are_not_a_part_off(walk05, line):
    res = walk05.said(Spoil("dx1", "slip", line, check="x1"))
    assert res.mistake not in ("sign", "scale", "factor", "bessel"), res.hint


@pytest.mark.parametrize(
    ("line", "word", "said_"),
    [
        # the one-hot's term of the fused cross-entropy with its sign flipped, or not divided by n
        (
            "dlogits = (F.softmax(logits, 1) + F.one_hot(Yb, vocab_size)) / n",
            "sign",
            "`probs` (mul) has the wrong sign",
        ),
        (
            "dlogits = F.softmax(logits, 1) / n - F.one_hot(Yb, vocab_size).float()",
            "scale",
            "32 is the batch size",
        ),
    ],
)
def test_a_term_of_the_fused_cross_entropy_wrong_is_named(walk03, line, word, said_):
    res = walk03.said(Spoil("dlogits", "slip", line, check="logits (fused)"))
    assert res.mistake == word and said_ in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        # another example's target, and random rows that sum to zero as the gradient's do
        "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb.roll(1), vocab_size)) / n",
        "dlogits = torch.randn(logits.shape, generator=torch.Generator().manual_seed(9))\n"
        "dlogits = (dlogits - dlogits.mean(1, keepdim=True)) / n",
    ],
)
def test_unrelated_numbers_in_the_fused_cross_entropy_are_not_a_term_off(walk03, line):
    res = walk03.said(Spoil("dlogits", "slip", line, check="logits (fused)"))
    assert res.mistake not in ("sign", "scale", "bessel"), res.hint


@pytest.mark.parametrize(
    "line",
    [
        "datt_masked = datt_probs - torch.einsum('bhij,bhij->bhi', datt_probs, att_probs)"
        ".unsqueeze(-1)",
        "datt_masked = datt_probs - (att_probs * datt_probs).sum(dim=-1, keepdim=True)",
    ],
)
def test_a_softmax_backward_without_its_probabilities_is_factor(walk05, line):
    """``att_probs`` is zero where the causal mask is: the answer times it is the gradient."""
    res = walk05.said(Spoil("datt_masked", "factor", line))
    assert res.mistake == "factor" and "`att_probs` is missing" in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        # another head's gradient, and noise where the mask is on top of the right values
        "datt_masked = (att_probs * (datt_probs - (datt_probs * att_probs).sum(-1, keepdim=True)))"
        ".roll(1, 1)",
        "datt_masked = att_probs * (datt_probs - (datt_probs * att_probs).sum(-1, keepdim=True))"
        " * (1 + torch.rand(att_probs.shape, generator=torch.Generator().manual_seed(2)))",
    ],
)
def test_other_numbers_in_a_softmax_backward_are_not_factor(walk05, line):
    assert walk05.said(Spoil("datt_masked", "slip", line)).mistake != "factor"


@pytest.fixture(scope="module")
def walk02():
    return Walk("02-tensor-backprop", "V", skip=("plt.", "check_numeric("))


@pytest.mark.parametrize(
    ("answer", "line", "check", "word"),
    [
        ("dW", "dW = torch.einsum('ik,jk->ij', dN, A)", "W", "transpose"),  # dN @ A.T
        ("dA", "dA = W.T @ dN", "A", "transpose"),  # the factors of dN @ W.T in the other order
    ],
)
def test_a_matrix_products_factors_in_the_other_order_are_transpose(
    walk02, answer, line, check, word
):
    res = walk02.said(Spoil(answer, "transpose", line, check=check, nth=2))
    assert res.mistake == word and "in the other order" in res.hint, res.hint


@pytest.mark.parametrize(
    ("answer", "line", "word", "said_"),
    [
        ("dW21", "dW21 = dN1 * a2", "missing-path", "(1, 0) holds only some of the terms"),
        ("dW12", "dW12 = dN2 * a1\ndW22 = dN4 * a4", "missing-path", "(0, 1), (1, 1)"),
        ("dW22", "dW22 = -(dN2 * a2 + dN4 * a4)", "sign", "with the wrong sign"),
        ("dW12", "dW12 = dN2 * a1 - dN4 * a3", "sign", "a term of the wrong sign"),
    ],
)
def test_an_entry_of_a_products_gradient_with_a_term_off_is_named(
    walk02, answer, line, word, said_
):
    res = walk02.said(Spoil(answer, "slip", line, check="W"))
    assert res.mistake == word and said_ in res.hint, res.hint


@pytest.mark.parametrize(
    ("answer", "line", "check", "nth"),
    [
        ("dW11", "dW11 = dN1 * a1 + dN3 * a3 + 0.37", "W", 1),  # a number added
        ("dW11", "dW11 = dN1 * a2 + dN3 * a4", "W", 1),  # another entry's terms
        ("dW", "dW = torch.randn(2, 2, dtype=torch.float64)", "W", 2),
        ("dW", "dW = (A.T @ dN).roll(1, 0)", "W", 2),
    ],
)
def test_other_numbers_in_a_products_gradient_are_not_a_term_or_order_off(
    walk02, answer, line, check, nth
):
    res = walk02.said(Spoil(answer, "slip", line, check=check, nth=nth))
    assert not res.ok and not (res.hint or "").count("in the other order"), res.hint
    assert "terms of its sum" not in (res.hint or ""), res.hint


@pytest.fixture(scope="module")
def walk04():
    return Walk("04-mlp-language-model", "v (5 steps)", skip=("plt.", "W_counts ="))


CE04 = {"check": "logits", "inside": "cross_entropy_backward"}
EMBED04 = {"check": "C", "inside": "embed_backward"}


@pytest.mark.parametrize(
    ("line", "word", "said_"),
    [
        # the one-hot's term of F.cross_entropy's gradient with its sign flipped, or not over n
        (
            "dlogits = (F.softmax(logits, dim=1) + F.one_hot(Y, logits.shape[1])) / n",
            "sign",
            "passed straight through the log-softmax has the wrong sign",
        ),
        (
            "dlogits = F.softmax(logits, dim=1) / n - F.one_hot(Y, logits.shape[1])",
            "scale",
            "is 32 times what it should be",
        ),
        # the one-hot's -1 in every column of a row, and at every row's targets
        ("dlogits = F.softmax(logits, dim=1).sub(1).div(n)", "mask", "entries it never reaches"),
        (
            "dlogits = F.softmax(logits, dim=1)\ndlogits[:, Y] = dlogits[:, Y] - 1\ndlogits /= n",
            "mask",
            "entries it never reaches",
        ),
    ],
)
def test_a_term_of_cross_entropys_gradient_wrong_is_named_in_04(walk04, line, word, said_):
    """``F.cross_entropy``'s log-softmax has a rule of two terms: the gradient passed straight
    through (the one-hot's, over n) and the softmax's; one of them wrong is named."""
    res = walk04.said(Spoil("dlogits", "slip", line, **CE04))
    assert res.mistake == word and said_ in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        "dlogits = (F.softmax(logits, dim=1) - F.one_hot(Y.roll(3), logits.shape[1])) / n",
        "dlogits = torch.randn(logits.shape, generator=torch.Generator().manual_seed(1),"
        " dtype=logits.dtype)\ndlogits = (dlogits - dlogits.mean(1, keepdim=True)) / n",
        "dlogits = (F.softmax(logits.roll(1, 0), dim=1) - F.one_hot(Y, logits.shape[1])) / n",
    ],
)
def test_other_numbers_for_cross_entropys_gradient_are_not_a_term_off(walk04, line):
    res = walk04.said(Spoil("dlogits", "slip", line, **CE04))
    assert res.mistake not in ("sign", "scale", "mask", "factor"), res.hint


def test_the_bigrams_softmax_term_without_the_rows_counts_is_factor(walk04):
    line = "dW = (W.softmax(dim=1) - counts) / Xtr.shape[0]"
    res = walk04.said(Spoil("dW", "formula", line, check="W"))
    assert res.mistake == "factor" and "`counts.sum(1, keepdim=True)`" in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        "dW = (counts.sum(1, keepdim=True) * torch.rand(W.shape, generator=torch.Generator()"
        ".manual_seed(4), dtype=W.dtype) - counts) / len(Ytr)",
        "dW = (counts.sum(1, keepdim=True) * F.softmax(W, dim=1) - counts.roll(1, 1)) / len(Ytr)",
    ],
)
def test_other_numbers_for_the_bigram_are_not_factor(walk04, line):
    assert walk04.said(Spoil("dW", "slip", line, check="W")).mistake != "factor"


@pytest.mark.parametrize(
    ("line", "said_"),
    [
        ("dC = torch.zeros_like(C)\ndC.index_add_(0, X[:, 0], dout[:, :d_embed])", "position 0 "),
        (
            "dC = torch.zeros_like(C)\nfor j in range(X.shape[1] - 1):\n"
            "    dC.index_add_(0, X[:, j], dout[:, j * d_embed : (j + 1) * d_embed])",
            "positions 0, 1 ",
        ),
    ],
)
def test_a_lookups_gradient_from_some_positions_only_is_missing_path(walk04, line, said_):
    res = walk04.said(Spoil("dC", "missing-path", line, **EMBED04))
    assert res.mistake == "missing-path" and said_ in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        "dC = torch.zeros_like(C)\ndC.index_add_(0, X[:, 0], dout[:, d_embed : 2 * d_embed])",
        "dC = torch.zeros_like(C)\n"
        "dC.index_add_(0, X.view(-1), dout.reshape(-1, d_embed).roll(1, 0))",
        "dC = torch.randn(C.shape, generator=torch.Generator().manual_seed(6), dtype=C.dtype)",
    ],
)
def test_other_rows_for_a_lookup_are_not_some_positions(walk04, line):
    res = walk04.said(Spoil("dC", "slip", line, **EMBED04))
    assert "of only position" not in (res.hint or ""), res.hint


ATT05 = {"check": "att_probs (recomputed)"}


@pytest.mark.parametrize(
    "line",
    [
        "att_probs = torch.softmax((q @ k.mT).masked_fill(~mask, -torch.inf), dim=-1)",
        "s = (q @ k.transpose(-2, -1)) / hs\natt_probs = F.softmax(s.masked_fill(~mask,"
        " float('-inf')), -1)",
    ],
)
def test_a_softmax_of_scaled_scores_is_scale(walk05, line):
    """The scores times a constant inside the softmax: each row's logarithms the right ones
    times it, plus the row's shift."""
    res = walk05.said(Spoil("att_probs", "formula", line, **ATT05))
    assert res.mistake == "scale" and "times the scores" in res.hint, res.hint


@pytest.mark.parametrize(
    "line",
    [
        # another batch's probabilities; the softmax of random scores
        "att_probs = F.softmax((q @ k.mT * hs**-0.5).masked_fill(~mask, -torch.inf), -1)"
        ".roll(1, 0)",
        "att_probs = F.softmax(torch.randn(B, nh, T, T, generator=torch.Generator()"
        ".manual_seed(3), dtype=q.dtype).masked_fill(~mask, -torch.inf), -1)",
    ],
)
def test_other_probabilities_are_not_a_scale_inside_the_softmax(walk05, line):
    res = walk05.said(Spoil("att_probs", "slip", line, **ATT05))
    assert "times the scores" not in (res.hint or ""), res.hint


LNF_FROM = (
    "\ndx2_fused = lnf_rstd * (g - g.mean(-1, keepdim=True)"
    " - lnf_hat * (g * lnf_hat).mean(-1, keepdim=True))"
)


@pytest.mark.parametrize(
    ("g", "named"),
    [
        ("g = dlnf", True),  # ``dlnf`` where ``lnf_hat``'s gradient (``lnf_w * dlnf``) belongs
        ("g = dlnf.clone()", True),
        # other numbers: a random factor per entry, another batch's gradient
        (
            "g = lnf_w * dlnf * (1 + 0.1 * torch.rand(dlnf.shape, generator=torch.Generator()))",
            False,
        ),
        ("g = (lnf_w * dlnf).roll(1, 0)", False),
    ],
)
def test_a_fused_layer_norm_fed_the_gradient_of_its_output_is_operand(walk05, g, named):
    res = walk05.said(Spoil("dx2_fused", "operand", g + LNF_FROM, check="x2 (fused)"))
    said = res.mistake == "operand" and "with `dlnf`, the gradient of `lnf`" in (res.hint or "")
    assert said == named, res.hint
