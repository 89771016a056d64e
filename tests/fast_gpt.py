"""Notebook 05's GPT (exercise 3: token and position embeddings, pre-norm blocks of causal
multi-head attention and a tanh-GELU MLP, a final layer norm, the output projection, the mean
cross-entropy over the targets that are not -1) made fast by hand: a forward pass that keeps what
the backward pass needs (the attention probabilities, the GELU's sigmoid, each layer norm's x̂ and
1/σ, with q, k and v laid out once), and a backward pass that recomputes none of it, with fused
layer-norm, GELU, attention and cross-entropy gradients. ``gpt_backward_fast`` takes and returns
what the notebook's ``gpt_backward`` does, for the cache of ``gpt_forward_fast``.

A helper module of the tests and benches (``tests/test_fast_steps.py``,
``bench/bench_train_gpt.py``)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

GELU_K, GELU_C = math.sqrt(2 / math.pi), 0.044715  # gelu(x) = x (1 + tanh(K (x + C x³))) / 2
Params = dict[str, Tensor]


def layernorm_fast(x: Tensor, w: Tensor, b: Tensor, eps: float = 1e-5) -> tuple[Tensor, ...]:
    """Layer norm over the last axis (no Bessel's correction): the output, x̂ and 1/σ; the
    variance from the centred rows, which ``var`` takes longer over."""
    xc = x - x.mean(-1, keepdim=True)
    rstd = (xc * xc).mean(-1, keepdim=True).add_(eps).rsqrt_()
    x_hat = xc.mul_(rstd)
    return torch.addcmul(b, x_hat, w), x_hat, rstd


def gpt_forward_fast(p: Params, X: Tensor, n_head: int) -> tuple[Tensor, tuple]:
    """The logits for the names X (B, T), as rows of B*T positions, and what
    ``gpt_backward_fast`` needs."""
    Bn, T = X.shape
    C = p["wte"].shape[1]
    N, hs = Bn * T, C // n_head
    n_layer = sum(name.startswith("W_attn") for name in p)
    x = (p["wte"][X] + p["wpe"][:T]).view(N, C)
    future = torch.ones(T, T, dtype=torch.bool, device=X.device).triu_(1)
    kept = []
    for i in range(n_layer):
        a, a_hat, a_rstd = layernorm_fast(x, p[f"ln1_w{i}"], p[f"ln1_b{i}"])
        qkv = torch.addmm(p[f"b_attn{i}"], a, p[f"W_attn{i}"])
        q, k, v = qkv.view(Bn, T, 3, n_head, hs).permute(2, 0, 3, 1, 4).contiguous()
        scores = (q @ k.transpose(-2, -1)).mul_(hs**-0.5).masked_fill_(future, float("-inf"))
        probs = scores.softmax(-1)
        y = (probs @ v).transpose(1, 2).reshape(N, C)
        x1 = torch.addmm(p[f"b_aproj{i}"], y, p[f"W_aproj{i}"]).add_(x)
        m, m_hat, m_rstd = layernorm_fast(x1, p[f"ln2_w{i}"], p[f"ln2_b{i}"])
        h_pre = torch.addmm(p[f"b_fc{i}"], m, p[f"W_fc{i}"])
        # gelu(x) = x (1 + tanh(z)) / 2 = x σ(2z): tanh(z) = 2σ(2z) - 1, and σ costs a sixth of tanh
        h_sq = h_pre * h_pre
        sig = torch.sigmoid(h_sq.mul(2 * GELU_K * GELU_C).add_(2 * GELU_K).mul_(h_pre))
        h = h_pre * sig
        x = torch.addmm(p[f"b_mproj{i}"], h, p[f"W_mproj{i}"]).add_(x1)
        kept.append((a, a_hat, a_rstd, q, k, v, probs, y, m, m_hat, m_rstd, h_pre, h_sq, sig, h))
    f, f_hat, f_rstd = layernorm_fast(x, p["lnf_w"], p["lnf_b"])
    return f @ p["W_head"], (kept, f, f_hat, f_rstd)


def layernorm_backward_fast(dout: Tensor, x_hat: Tensor, rstd: Tensor, w: Tensor):
    """dx, dw, db of layer norm, fused: dx = (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) / σ, dx̂ = w dout
    (made in dout's storage)."""
    dw = (x_hat * dout).sum(0)
    db = dout.sum(0)
    dxh = dout.mul_(w)
    mean2 = (dxh * x_hat).mean(-1, keepdim=True)
    dx = torch.addcmul(dxh.sub_(dxh.mean(-1, keepdim=True)), x_hat, mean2, value=-1.0)
    return dx.mul_(rstd), dw, db


def gelu_backward_fast(dout: Tensor, x: Tensor, x_sq: Tensor, sig: Tensor) -> Tensor:
    """dx of the tanh GELU written x σ(2z), z = K (x + C x³), from the forward pass's x² and σ:
    dout (σ + σ (1 - σ) 2K x (1 + 3C x²)) (made in dout's storage)."""
    slope = x_sq.mul(6 * GELU_K * GELU_C).add_(2 * GELU_K).mul_(x)  # d(2z)/dx
    return dout.mul_(torch.addcmul(sig, sig * (1 - sig), slope))


def attention_backward_fast(dy: Tensor, q: Tensor, k: Tensor, v: Tensor, probs: Tensor):
    """dq, dk, dv of causal attention from its kept probabilities (softmax's gradient fused)."""
    scale = q.shape[-1] ** -0.5
    dv = probs.transpose(-2, -1) @ dy
    dp = dy @ v.transpose(-2, -1)
    datt = dp.sub_((dp * probs).sum(-1, keepdim=True)).mul_(probs).mul_(scale)
    return datt @ k, datt.transpose(-2, -1) @ q, dv


def cross_entropy_backward_fast(logits: Tensor, Y: Tensor) -> Tensor:
    """dlogits of the mean cross-entropy over the targets that are not -1: (softmax - one-hot)
    on those rows, divided by their number; 0 on the others."""
    N, V = logits.shape
    Yf = Y.reshape(-1)
    valid = (Yf >= 0).unsqueeze(1)
    dlogits = logits.softmax(-1)
    minus_one = torch.full((N, 1), -1.0, dtype=logits.dtype, device=logits.device)
    dlogits.scatter_add_(1, Yf.clamp(min=0).unsqueeze(1), minus_one)
    return dlogits.mul_(valid).div_(valid.sum())  # in the logits' dtype: float64 stays float64


def gpt_backward_fast(p: Params, X: Tensor, Y: Tensor, logits: Tensor, cache: tuple) -> Params:
    """The gradient of the mean cross-entropy for every parameter, from gpt_forward_fast's cache."""
    kept, f, f_hat, f_rstd = cache
    Bn, T = X.shape
    N, C = f.shape
    g = {}
    dlogits = cross_entropy_backward_fast(logits, Y)
    g["W_head"] = f.T @ dlogits
    dx, g["lnf_w"], g["lnf_b"] = layernorm_backward_fast(
        dlogits @ p["W_head"].T, f_hat, f_rstd, p["lnf_w"]
    )
    for i in reversed(range(len(kept))):
        a, a_hat, a_rstd, q, k, v, probs, y, m, m_hat, m_rstd, h_pre, h_sq, sig, h = kept[i]
        g[f"W_mproj{i}"], g[f"b_mproj{i}"] = h.T @ dx, dx.sum(0)
        dh_pre = gelu_backward_fast(dx @ p[f"W_mproj{i}"].T, h_pre, h_sq, sig)
        g[f"W_fc{i}"], g[f"b_fc{i}"] = m.T @ dh_pre, dh_pre.sum(0)
        dx_m, g[f"ln2_w{i}"], g[f"ln2_b{i}"] = layernorm_backward_fast(
            dh_pre @ p[f"W_fc{i}"].T, m_hat, m_rstd, p[f"ln2_w{i}"]
        )
        dx = dx.add_(dx_m)  # the residual stream: both paths
        g[f"W_aproj{i}"], g[f"b_aproj{i}"] = y.T @ dx, dx.sum(0)
        dy = (dx @ p[f"W_aproj{i}"].T).view(Bn, T, *q.shape[1::2]).transpose(1, 2).contiguous()
        dqkv = torch.stack(attention_backward_fast(dy, q, k, v, probs))  # (3, B, heads, T, hs)
        dqkv = dqkv.permute(1, 3, 0, 2, 4).reshape(N, 3 * C)
        g[f"W_attn{i}"], g[f"b_attn{i}"] = a.T @ dqkv, dqkv.sum(0)
        dx_a, g[f"ln1_w{i}"], g[f"ln1_b{i}"] = layernorm_backward_fast(
            dqkv @ p[f"W_attn{i}"].T, a_hat, a_rstd, p[f"ln1_w{i}"]
        )
        dx = dx.add_(dx_a)
    g["wpe"] = torch.zeros_like(p["wpe"])
    g["wpe"][:T] = dx.view(Bn, T, C).sum(0)
    g["wte"] = torch.zeros_like(p["wte"]).index_add_(0, X.reshape(-1), dx)
    return {name: g[name] for name in p}
