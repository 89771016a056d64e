"""The fast hand-written steps (tests/fast_steps.py, tests/fast_gpt.py) give autograd's gradients,
float64's to float64's tolerance: notebook 03's network against its forward pass's, notebook
05's GPT against PyTorch's own layer norm, causal attention and GELU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from checks.races import race
from tests import makemore
from tests.fast_gpt import fast_gpt
from tests.fast_steps import autograd_step, fused_step

VOCAB, BLOCK = 27, 16
ORDER = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]


def gpt_params(n_layer: int, C: int, dtype: torch.dtype, seed: int) -> dict[str, torch.Tensor]:
    """Parameters of notebook 05's shapes, drawn from one generator."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, std=0.3):
        return torch.randn(shape, generator=g, dtype=dtype) * std

    p = {"wte": randn(VOCAB, C), "wpe": randn(BLOCK, C)}
    for i in range(n_layer):
        p[f"ln1_w{i}"], p[f"ln1_b{i}"] = 1 + randn(C, std=0.1), randn(C, std=0.1)
        p[f"W_attn{i}"], p[f"b_attn{i}"] = randn(C, 3 * C, std=C**-0.5), randn(3 * C, std=0.1)
        p[f"W_aproj{i}"], p[f"b_aproj{i}"] = randn(C, C, std=C**-0.5), randn(C, std=0.1)
        p[f"ln2_w{i}"], p[f"ln2_b{i}"] = 1 + randn(C, std=0.1), randn(C, std=0.1)
        p[f"W_fc{i}"], p[f"b_fc{i}"] = randn(C, 4 * C, std=C**-0.5), randn(4 * C, std=0.1)
        p[f"W_mproj{i}"], p[f"b_mproj{i}"] = randn(4 * C, C, std=0.1), randn(C, std=0.1)
    p["lnf_w"], p["lnf_b"] = 1 + randn(C, std=0.1), randn(C, std=0.1)
    p["W_head"] = randn(C, VOCAB, std=0.1)
    return p


def builtin_loss(p, X, Y, n_head: int) -> torch.Tensor:
    """The same GPT from PyTorch's layer_norm, scaled_dot_product_attention and gelu."""
    B, T = X.shape
    C = p["wte"].shape[1]
    x = p["wte"][X] + p["wpe"][:T]
    for i in range(sum(name.startswith("W_attn") for name in p)):
        a = F.layer_norm(x, (C,), p[f"ln1_w{i}"], p[f"ln1_b{i}"])
        qkv = (a @ p[f"W_attn{i}"] + p[f"b_attn{i}"]).split(C, -1)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in qkv)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
        x = x + y.reshape(B, T, C) @ p[f"W_aproj{i}"] + p[f"b_aproj{i}"]
        m = F.layer_norm(x, (C,), p[f"ln2_w{i}"], p[f"ln2_b{i}"])
        h = F.gelu(m @ p[f"W_fc{i}"] + p[f"b_fc{i}"], approximate="tanh")
        x = x + h @ p[f"W_mproj{i}"] + p[f"b_mproj{i}"]
    f = F.layer_norm(x, (C,), p["lnf_w"], p["lnf_b"])
    return F.cross_entropy((f @ p["W_head"]).view(-1, VOCAB), Y.reshape(-1), ignore_index=-1)


def names(B: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """B padded names: tokens, and targets that are -1 after each name's end."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randint(1, VOCAB, (B, BLOCK), generator=g)
    Y = torch.roll(X, -1, 1)
    for row, length in enumerate(torch.randint(3, BLOCK, (B,), generator=g).tolist()):
        Y[row, length:] = -1
        X[row, length + 1 :] = 0
    return X, Y


def tolerances(dtype: torch.dtype) -> dict[str, float]:
    """torch.testing's own tolerances for the dtype: float64 is held to float64's."""
    return {"rtol": 1e-7, "atol": 1e-10} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-6}


@pytest.mark.parametrize(
    "n_layer, C, n_head, B, T, dtype",
    [
        (2, 36, 4, 8, BLOCK, torch.float64),
        (1, 30, 5, 8, BLOCK, torch.float32),
        (3, 48, 6, 8, BLOCK, torch.float32),
        (2, 12, 1, 3, 9, torch.float64),  # one head, shorter names than the block
        (1, 8, 8, 1, 5, torch.float64),  # a head per number, one name
    ],
)
def test_the_fast_gpt_step_gives_autograds_loss_and_gradients(n_layer, C, n_head, B, T, dtype):
    p = gpt_params(n_layer, C, dtype, seed=C)
    X, Y = names(B, seed=n_layer)
    X, Y = X[:, :T], Y[:, :T]
    leaves = {k: t.clone().requires_grad_() for k, t in p.items()}
    loss = builtin_loss(leaves, X, Y, n_head)
    loss.backward()
    gpt_forward_fast, gpt_backward_fast = fast_gpt(C, n_head)
    with torch.no_grad():
        logits, cache = gpt_forward_fast(p, X)
        assert logits.shape == (B, T, VOCAB)
        fast_loss = F.cross_entropy(logits.view(-1, VOCAB), Y.reshape(-1), ignore_index=-1)
        grads = gpt_backward_fast(p, X, Y, logits, cache)
    torch.testing.assert_close(fast_loss, loss.detach(), **tolerances(dtype))
    assert list(grads) == list(p)
    for name, t in leaves.items():
        assert grads[name].dtype == dtype, name
        torch.testing.assert_close(grads[name], t.grad, **tolerances(dtype), msg=name)


@pytest.mark.parametrize("n, dtype", [(2, torch.float64), (5, torch.float64), (32, torch.float32)])
def test_the_fused_makemore_step_gives_autograds_gradients(n, dtype):
    p = makemore.init_params(27, 3, 10, 64, 2147483647)
    net = [p[k].detach().to(dtype) for k in ORDER]
    g = torch.Generator().manual_seed(n)
    Xb, Yb = torch.randint(0, 27, (n, 3), generator=g), torch.randint(0, 27, (n,), generator=g)
    leaves = [t.clone().requires_grad_() for t in net]
    loss, expected = autograd_step(leaves, Xb, Yb)
    # the solution's autograd step against the tests' own forward pass (tests/makemore.py), so
    # that a slip the two cells of the solution share cannot pass
    mine = {k: t.clone().requires_grad_() for k, t in zip(ORDER, net, strict=True)}
    own = makemore.forward(mine, Xb, Yb)["loss"]
    own.backward()
    torch.testing.assert_close(loss.detach(), own.detach(), **tolerances(dtype))
    for name, want in zip(ORDER, expected, strict=True):
        torch.testing.assert_close(want, mine[name].grad, **tolerances(dtype), msg=name)
    with torch.no_grad():
        fast_loss, grads = fused_step(net, Xb, Yb)
    torch.testing.assert_close(fast_loss, loss.detach(), **tolerances(dtype))
    for name, got, want in zip(ORDER, grads, expected, strict=True):
        assert got.dtype == dtype, name
        torch.testing.assert_close(got, want, **tolerances(dtype), msg=name)


def test_race_takes_notebook_05s_parameters_by_name_and_names_a_wrong_one():
    p = gpt_params(2, 36, torch.float32, seed=5)
    X, Y = names(40, seed=6)

    def gpt_autograd(p, X, Y):
        loss = builtin_loss(p, X, Y, 4)
        for t in p.values():
            t.grad = None
        loss.backward()
        return loss, {name: t.grad for name, t in p.items()}

    gpt_forward_fast, gpt_backward_fast = fast_gpt(36, 4)

    def gpt_fast(p, X, Y):
        logits, cache = gpt_forward_fast(p, X)
        loss = F.cross_entropy(logits.view(-1, VOCAB), Y.reshape(-1), ignore_index=-1)
        return loss, gpt_backward_fast(p, X, Y, logits, cache)

    def gpt_doubled(p, X, Y):
        loss, grads = gpt_fast(p, X, Y)
        return loss, {**grads, "W_head": 2 * grads["W_head"]}

    result = race(gpt_fast, gpt_doubled, autograd=gpt_autograd, net=p, X=X, Y=Y, batch=8, blocks=1)
    assert result.lap("gpt_fast").problem is None and result.lap("gpt_fast").cost.count > 0
    assert result.lap("gpt_doubled").problem == (
        "not timed: its gradient of net['W_head'] differs from autograd's"
    )
