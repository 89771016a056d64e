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
