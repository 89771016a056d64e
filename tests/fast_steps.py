"""Notebook 03's network (exercise 4: embedding, linear, batch norm with Bessel's correction,
tanh, linear, cross-entropy) stepped two ways, each returning ``(loss, grads)`` as the notebook's
``step(net, Xb, Yb)`` does, ``net`` and ``grads`` in the order [C, W1, b1, W2, b2, bngain,
bnbias]: by autograd, and by a hand-written step made fast (fused cross-entropy and batch-norm
gradients, the batch sums computed once, no graph, in-place work on its own temporaries).

A helper module of the tests and benches (``tests/test_cost.py``, ``bench/bench_train.py``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

Step = tuple[torch.Tensor, list[torch.Tensor]]


def autograd_step(net: list[torch.Tensor], Xb: torch.Tensor, Yb: torch.Tensor) -> Step:
    """The notebook's forward pass, then ``loss.backward()``: the gradients are the parameters'
    ``.grad`` (``net`` must require grad)."""
    C, W1, b1, W2, b2, bngain, bnbias = net
    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = hprebn.mean(0, keepdim=True)
    bnvar = hprebn.var(0, keepdim=True, unbiased=True)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = (hprebn - bnmeani) * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Yb)
    for p in net:
        p.grad = None
    loss.backward()
    return loss, [p.grad for p in net]


def fused_step(net: list[torch.Tensor], Xb: torch.Tensor, Yb: torch.Tensor) -> Step:
    """The same loss and gradients by hand, in few operations (run it under ``torch.no_grad()``;
    a batch of two rows at least, as Bessel's correction needs)."""
    C, W1, b1, W2, b2, bngain, bnbias = net
    n, n_embd = Xb.shape[0], C.shape[1]
    # forward: each matrix product with its bias in one addmm; the variance from the centred rows
    embcat = C[Xb].view(n, -1)
    hprebn = torch.addmm(b1, embcat, W1)
    bndiff = hprebn - hprebn.mean(0, keepdim=True)
    bnvar_inv = (bndiff * bndiff).sum(0, keepdim=True).div_(n - 1).add_(1e-5).rsqrt_()
    bnraw = bndiff.mul_(bnvar_inv)
    # tanh(x) = 2σ(2x) - 1: σ costs a sixth of tanh here (torch's CPU kernels)
    h = torch.addcmul(bnbias, bngain, bnraw).mul_(2).sigmoid_().mul_(2).sub_(1)
    logits = torch.addmm(b2, h, W2)
    logp = logits.log_softmax(1)
    loss = F.nll_loss(logp, Yb)
    # backward: the fused cross-entropy, (softmax - one-hot) / n, made in the log-softmax's storage
    minus_one = torch.full((n, 1), -1.0, dtype=logp.dtype, device=logp.device)
    dlogits = logp.exp_().scatter_add_(1, Yb.view(n, 1), minus_one).div_(n)
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = dh.mul_(1 - h * h)
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    # batch norm, fused: γσ⁻¹ (dy - Σdy / n - x̂ Σ(dy x̂) / (n - 1)), the two sums those above
    dhprebn = (
        torch.addcmul(dhpreact, bnraw, dbngain, value=-1 / (n - 1))
        .sub_(dbnbias, alpha=1 / n)
        .mul_(bngain * bnvar_inv)
    )
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    dC = torch.zeros_like(C).index_add_(0, Xb.view(-1), dembcat.view(-1, n_embd))
    return loss, [dC, dW1, db1, dW2, db2, dbngain, dbnbias]
