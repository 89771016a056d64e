"""Learners' answers for notebooks 02 to 05, right and wrong, as people write them.

Each entry is a ``Spoil`` of ``tests.cascade``: the answer's variable, the kind and the learner's
line(s), which replace the solution's lines for that variable (and for any other name they assign)
in the solution block of the cell; ``check``, ``nth`` and ``inside`` say where, when it is not the
first check of the variable (02's three sections, 04's and 05's functions). The kind is
``"right"`` (another way to write a right answer), ``"right-keepdim"`` (right values with a
leading size-1 axis dropped: it broadcasts back, so it passes with a ``keepdim`` note) or the
mistake the line was written to make: one of ``checks.MISTAKES`` where one fits, or

- ``"keepdim"``: a size-1 axis dropped where the result no longer lines up (``(32,)`` for
  ``(32, 1)``): the shape is wrong;
- ``"axis"``: a sum or a softmax over the wrong axis that keeps the shape;
- ``"index"``: rows picked wrongly (``x[:, Y]`` for ``x[range(n), Y]``, the wrong order of rows);
- ``"formula"``: a wrong term in a formula (a factor 3 left out of GELU's slope, a square left out
  of Adam's second moment, a sum where the formula has a mean).

The styles are the usual ones: CS231n's layers (``dW = x.T @ dout``, numpy converted back),
Karpathy's lecture (03), llm.c's fused layer norm, GELU and attention (05), einsum, loops over the
batch, ``torch.where``, in-place updates, helper functions and forward quantities recomputed.
"""

from __future__ import annotations

from tests.cascade import Spoil

RIGHT = "right"
RIGHT_KEEPDIM = "right-keepdim"
RIGHT_KINDS = (RIGHT, RIGHT_KEEPDIM)

# where each notebook's walk ends: the last check its entries need
LAST = {
    "02-tensor-backprop": "V",
    "03-makemore-backprop": "hprebn (fused)",
    "04-mlp-language-model": "v (5 steps)",
    "05-transformer-backprop": "v (5 steps)",
}


def _rows(*rows: tuple[str, str, str], **at) -> list[Spoil]:
    """(answer, kind, line) rows, each judged by the check ``at`` names (if any)."""
    return [Spoil(answer, kind, line, **at) for answer, kind, line in rows]


# ---------------------------------------------------------------- 02: tensors

# section 3 checks W, A and b three times: the entries (1), the 2x2 products (2), the 32x784 layer
ENTRIES_W, ENTRIES_A, ENTRIES_B = ({"check": c} for c in "WAb")
SMALL_W, SMALL_A, SMALL_B = ({"check": c, "nth": 2} for c in "WAb")
BIG_W, BIG_A, BIG_B = ({"check": c, "nth": 3} for c in "WAb")

NB02 = [
    *_rows(
        # section 1: broadcast and sum
        ("dY", RIGHT, "dY = dD * 1.0"),
        ("dY", RIGHT, "dY = torch.ones_like(Y) * dD"),
        ("dY", RIGHT, "dY = torch.from_numpy(dD.numpy().copy())"),
        ("dY", "sign", "dY = -dD.clone()"),
        ("dY", "chain", "dY = torch.ones_like(Y)"),
        ("dY", "shape", "dY = dD.sum(1, keepdim=True)"),
        ("ds", RIGHT, "ds = -torch.sum(dD, dim=1, keepdim=True)"),
        ("ds", RIGHT, "ds = -dD @ torch.ones(3, 1, dtype=torch.float64)"),
        ("ds", RIGHT, "ds = torch.einsum('ij->i', -dD).unsqueeze(1)"),
        (
            "ds",
            RIGHT,
            "ds = torch.zeros(4, 1, dtype=torch.float64)\n"
            "for i in range(4):\n"
            "    for j in range(3):\n"
            "        ds[i, 0] -= dD[i, j]",
        ),
        ("ds", "sign", "ds = dD.sum(1, keepdim=True)"),
        ("ds", "keepdim", "ds = -dD.sum(1)"),
        ("ds", "shape", "ds = -dD.sum(0, keepdim=True)"),
        ("ds", "scale", "ds = -dD.mean(1, keepdim=True)"),
        ("ds", "chain", "ds = -torch.ones_like(D).sum(1, keepdim=True)"),
        ("ds", "shape", "ds = -dD"),
        ("dX", RIGHT, "dX = ds.expand(-1, 5)"),
        ("dX", RIGHT, "dX = ds.repeat(1, X.shape[1])"),
        ("dX", RIGHT, "dX = torch.broadcast_to(ds, X.shape).clone()"),
        ("dX", "chain", "dX = torch.ones_like(X)"),
        ("dX", "scale", "dX = torch.ones_like(X) * ds / X.shape[1]"),
        ("dX", "sign", "dX = -torch.ones_like(X) * ds"),
        ("dX", "sign", "dX = torch.ones_like(X) * dD.sum(1, keepdim=True)"),
        ("dX", "shape", "dX = ds.clone()"),
        # section 2: max
        ("dZ", RIGHT, "dZ = torch.zeros_like(Z)\ndZ[range(4), Z.argmax(1)] = dzmax[:, 0]"),
        ("dZ", RIGHT, "dZ = torch.where(Z == zmax, dzmax, torch.zeros_like(Z))"),
        ("dZ", RIGHT, "dZ = torch.zeros_like(Z).scatter_(1, Z.argmax(dim=1, keepdim=True), dzmax)"),
        ("dZ", RIGHT, "dZ = (Z == Z.max(dim=1, keepdim=True).values).double() * dzmax"),
        ("dZ", "chain", "dZ = F.one_hot(Z.argmax(1), num_classes=5).double()"),
        ("dZ", "mask", "dZ = torch.ones_like(Z) * dzmax"),
        ("dZ", "mask", "dZ = F.one_hot(Z.argmin(1), num_classes=5) * dzmax"),
        ("dZ", "scale", "dZ = F.one_hot(Z.argmax(1), num_classes=5) * dzmax / 5"),
        ("dZ", "sign", "dZ = -F.one_hot(Z.argmax(1), num_classes=5) * dzmax"),
        ("dZ", "index", "dZ = torch.zeros_like(Z)\ndZ[:, Z.argmax(1)] = dzmax"),
        # section 4: two paths
        ("dvmax", RIGHT, "dvmax = -dU.sum(dim=1, keepdim=True)"),
        ("dvmax", "sign", "dvmax = dU.sum(1, keepdim=True)"),
        ("dvmax", "scale", "dvmax = -dU.mean(1, keepdim=True)"),
        ("dvmax", "shape", "dvmax = -dU.clone()"),
        ("dV", RIGHT, "dV = dU + F.one_hot(V.argmax(1), 5) * dvmax"),
        (
            "dV",
            RIGHT,
            "dV = dU.clone()\ndV[torch.arange(4), V.argmax(1)] += dvmax.squeeze(1)",
        ),
        ("dV", RIGHT, "dV = torch.where(V == vmax, dU + dvmax, dU)"),
        ("dV", "missing-path", "dV = dU.clone()"),
        ("dV", "missing-path", "dV = F.one_hot(V.argmax(1), num_classes=5) * dvmax"),
        ("dV", "sign", "dV = dU - F.one_hot(V.argmax(1), num_classes=5) * dvmax"),
        ("dV", "mask", "dV = dU + dvmax"),
        ("dV", "chain", "dV = dU + F.one_hot(V.argmax(1), num_classes=5)"),
        (
            "dV",
            "missing-path",
            "dV = dU.clone()\ndV[range(4), V.argmax(1)] = dvmax.squeeze(1)",
        ),
    ),
    # section 3: the linear layer, entry by entry
    *_rows(
        ("dW11", RIGHT, "dW11 = a1 * dN1 + a3 * dN3"),
        ("dW11", "missing-path", "dW11 = dN1 * a1"),
        ("dW12", "transpose", "dW12 = dN1 * a2 + dN3 * a4\ndW21 = dN2 * a1 + dN4 * a3"),
        ("dW11", "index", "dW11 = dN1 * a1 + dN2 * a2"),
        **ENTRIES_W,
    ),
    *_rows(
        ("da2", RIGHT, "da2 = W21 * dN1 + W22 * dN2"),
        (
            "da1",
            "transpose",
            "da1 = dN1 * W11 + dN2 * W21\nda2 = dN1 * W12 + dN2 * W22\n"
            "da3 = dN3 * W11 + dN4 * W21\nda4 = dN3 * W12 + dN4 * W22",
        ),
        ("da3", "sign", "da3 = -(dN3 * W11 + dN4 * W12)"),
        **ENTRIES_A,
    ),
    *_rows(
        ("db1", RIGHT, "db1 = sum([dN1, dN3])"),
        ("db1", "axis", "db1 = dN1 + dN2\ndb2 = dN3 + dN4"),
        ("db1", "scale", "db1 = (dN1 + dN3) / 2\ndb2 = (dN2 + dN4) / 2"),
        **ENTRIES_B,
    ),
    # the 2x2 products
    *_rows(
        ("dW", RIGHT, "dW = torch.einsum('ki,kj->ij', A, dN)"),
        ("dW", RIGHT, "dW = torch.outer(A[0], dN[0]) + torch.outer(A[1], dN[1])"),
        ("dW", RIGHT, "dW = A.t() @ dN"),
        ("dW", "transpose", "dW = dN.T @ A"),
        ("dW", "operand", "dW = A @ dN"),
        ("dW", "transpose", "dW = dN @ A.T"),
        **SMALL_W,
    ),
    *_rows(
        ("dA", RIGHT, "dA = (W @ dN.T).T"),
        ("dA", "transpose", "dA = dN @ W"),
        ("dA", "transpose", "dA = W @ dN.T"),
        **SMALL_A,
    ),
    *_rows(
        ("db", RIGHT, "db = dN.sum(0).unsqueeze(0)"),
        ("db", RIGHT, "db = torch.ones(1, 2, dtype=torch.float64) @ dN"),
        ("db", "axis", "db = dN.sum(1, keepdim=True).T"),
        ("db", "scale", "db = dN.mean(0, keepdim=True)"),
        **SMALL_B,
    ),
    # the 32x784 layer
    *_rows(
        ("dA", RIGHT, "dA = torch.mm(dN, W.t())"),
        ("dA", RIGHT, "dA = dN.matmul(W.transpose(0, 1))"),
        ("dA", "transpose", "dA = W @ dN.T"),
        ("dA", "scale", "dA = dN @ W.T / dN.shape[0]"),
        **BIG_A,
    ),
    *_rows(
        ("dW", RIGHT, "dW = torch.einsum('ni,nj->ij', A.detach(), dN)"),
        ("dW", RIGHT, "dW = sum(torch.outer(A[k], dN[k]) for k in range(A.shape[0]))"),
        ("dW", RIGHT, "dW = torch.from_numpy(A.detach().numpy().T @ dN.numpy())"),
        ("dW", "transpose", "dW = dN.T @ A"),
        ("dW", "transpose", "dW = torch.einsum('ni,nj->ji', A, dN)"),
        ("dW", "scale", "dW = A.T @ dN / A.shape[0]"),
        **BIG_W,
    ),
    *_rows(
        ("db", RIGHT, "db = dN.mean(0, keepdim=True) * dN.shape[0]"),
        ("db", RIGHT, "db = dN.sum(axis=0, keepdim=True)"),
        ("db", RIGHT_KEEPDIM, "db = dN.sum(0)"),
        ("db", "shape", "db = dN.sum(1, keepdim=True)"),
        ("db", "scale", "db = dN.mean(0, keepdim=True)"),
        ("db", "shape", "db = dN.sum()"),
        **BIG_B,
    ),
]

# ---------------------------------------------------------------- 03: makemore, step by step

NB03 = _rows(
    # the cross-entropy, one step at a time
    ("dlogprobs", RIGHT, "dlogprobs = -F.one_hot(Yb, vocab_size).float() / n"),
    (
        "dlogprobs",
        RIGHT,
        "dlogprobs = torch.zeros_like(logprobs)\n"
        "for i in range(n):\n"
        "    dlogprobs[i, Yb[i]] = -1 / n",
    ),
    ("dlogprobs", RIGHT, "dlogprobs = torch.zeros(n, 27).scatter_(1, Yb.unsqueeze(1), -1.0 / n)"),
    (
        "dlogprobs",
        RIGHT,
        "dlogprobs = torch.zeros_like(logprobs)\n"
        "dlogprobs.index_put_((torch.arange(n), Yb), torch.tensor(-1 / n))",
    ),
    (
        "dlogprobs",
        "scale",
        "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0",
    ),
    (
        "dlogprobs",
        "sign",
        "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = 1.0 / n",
    ),
    ("dlogprobs", "mask", "dlogprobs = torch.full_like(logprobs, -1.0 / n)"),
    ("dlogprobs", "index", "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[:, Yb] = -1.0 / n"),
    (
        "dlogprobs",
        "scale",
        "dlogprobs = torch.zeros_like(logprobs)\ndlogprobs[range(n), Yb] = -1.0 / vocab_size",
    ),
    ("dprobs", RIGHT, "dprobs = dlogprobs / probs"),
    ("dprobs", RIGHT, "dprobs = probs.reciprocal() * dlogprobs"),
    ("dprobs", RIGHT, "dprobs = torch.div(dlogprobs, probs)"),
    ("dprobs", RIGHT, "dprobs = dlogprobs * probs**-1"),
    ("dprobs", "chain", "dprobs = torch.reciprocal(probs)"),
    ("dprobs", "sign", "dprobs = -dlogprobs / probs"),
    ("dprobs", "rule", "dprobs = probs * dlogprobs"),
    ("dprobs", "rule", "dprobs = dlogprobs / probs**2"),
    ("dcounts_sum_inv", RIGHT, "dcounts_sum_inv = torch.sum(dprobs * counts, dim=1, keepdim=True)"),
    (
        "dcounts_sum_inv",
        RIGHT,
        "dcounts_sum_inv = torch.einsum('ij,ij->i', counts, dprobs).unsqueeze(1)",
    ),
    ("dcounts_sum_inv", RIGHT, "dcounts_sum_inv = (counts * dprobs) @ torch.ones(vocab_size, 1)"),
    ("dcounts_sum_inv", "shape", "dcounts_sum_inv = (counts * dprobs).sum(0, keepdim=True)"),
    ("dcounts_sum_inv", "keepdim", "dcounts_sum_inv = (counts * dprobs).sum(1)"),
    ("dcounts_sum_inv", "shape", "dcounts_sum_inv = counts * dprobs"),
    (
        "dcounts_sum_inv",
        "operand",
        "dcounts_sum_inv = (counts_sum_inv * dprobs).sum(1, keepdim=True)",
    ),
    ("dcounts_sum_inv", "chain", "dcounts_sum_inv = counts.sum(1, keepdim=True)"),
    ("dcounts_sum_inv", "scale", "dcounts_sum_inv = (counts * dprobs).mean(1, keepdim=True)"),
    ("dcounts_sum", RIGHT, "dcounts_sum = -dcounts_sum_inv / counts_sum**2"),
    ("dcounts_sum", RIGHT, "dcounts_sum = -(counts_sum_inv**2) * dcounts_sum_inv"),
    ("dcounts_sum", "sign", "dcounts_sum = counts_sum**-2 * dcounts_sum_inv"),
    ("dcounts_sum", "rule", "dcounts_sum = -(counts_sum**-1) * dcounts_sum_inv"),
    ("dcounts_sum", "chain", "dcounts_sum = -1 / counts_sum**2"),
    ("dcounts", RIGHT, "dcounts = counts_sum_inv * dprobs + dcounts_sum"),
    ("dcounts", RIGHT, "dcounts = dprobs / counts_sum + dcounts_sum.expand(-1, vocab_size)"),
    (
        "dcounts",
        RIGHT,
        "dcounts = dprobs.clone()\ndcounts *= counts_sum_inv\ndcounts += dcounts_sum",
    ),
    ("dcounts", "missing-path", "dcounts = counts_sum_inv * dprobs"),
    ("dcounts", "missing-path", "dcounts = torch.ones_like(counts) * dcounts_sum"),
    (
        "dcounts",
        "missing-path",
        "dcounts = counts_sum_inv * dprobs\ndcounts = torch.ones_like(counts) * dcounts_sum",
    ),
    ("dcounts", "sign", "dcounts = counts_sum_inv * dprobs - dcounts_sum"),
    ("dcounts", "scale", "dcounts = counts_sum_inv * dprobs + dcounts_sum / vocab_size"),
    ("dnorm_logits", RIGHT, "dnorm_logits = norm_logits.exp() * dcounts"),
    ("dnorm_logits", RIGHT, "dnorm_logits = dcounts * counts"),
    ("dnorm_logits", "operand", "dnorm_logits = norm_logits * dcounts"),
    ("dnorm_logits", "chain", "dnorm_logits = counts.clone()"),
    ("dnorm_logits", "sign", "dnorm_logits = -counts * dcounts"),
    ("dnorm_logits", "rule", "dnorm_logits = dcounts.clone()"),
    ("dlogit_maxes", RIGHT, "dlogit_maxes = -dnorm_logits.sum(dim=1, keepdim=True)"),
    ("dlogit_maxes", "shape", "dlogit_maxes = (-dnorm_logits).sum(0, keepdim=True)"),
    ("dlogit_maxes", "keepdim", "dlogit_maxes = -dnorm_logits.sum(1)"),
    ("dlogit_maxes", "shape", "dlogit_maxes = -dnorm_logits"),
    (
        "dlogits",
        RIGHT,
        "dlogits = dnorm_logits.clone()\n"
        "dlogits[range(n), logits.argmax(1)] += dlogit_maxes.view(-1)",
    ),
    ("dlogits", RIGHT, "dlogits = dnorm_logits + (logits == logit_maxes).float() * dlogit_maxes"),
    (
        "dlogits",
        "missing-path",
        "dlogits = F.one_hot(logits.max(1).indices, num_classes=vocab_size) * dlogit_maxes",
    ),
    (
        "dlogits",
        "missing-path",
        "dlogits = dnorm_logits.clone()\n"
        "dlogits[range(n), logits.argmax(1)] = dlogit_maxes.view(-1)",
    ),
    # the second linear layer
    ("dh", RIGHT, "dh = torch.einsum('ij,kj->ik', dlogits, W2)"),
    ("dh", RIGHT, "dh = (W2 @ dlogits.T).T"),
    ("dh", RIGHT, "dh = dlogits.matmul(W2.transpose(0, 1))"),
    ("dh", RIGHT, "dh = torch.stack([W2 @ dlogits[i] for i in range(n)])"),
    ("dh", "transpose", "dh = W2 @ dlogits.T"),
    ("dh", "scale", "dh = dlogits @ W2.T / n"),
    ("dh", "sign", "dh = -(dlogits @ W2.T)"),
    ("dW2", RIGHT, "dW2 = torch.einsum('ni,nj->ij', h, dlogits)"),
    ("dW2", RIGHT, "dW2 = (h.double().T @ dlogits.double()).float()"),
    (
        "dW2",
        RIGHT,
        "dW2 = torch.from_numpy(h.detach().numpy().astype('float64').T @ dlogits.detach().numpy())",
    ),
    (
        "dW2",
        RIGHT,
        "dW2 = torch.zeros_like(W2)\nfor i in range(n):\n    dW2 += torch.outer(h[i], dlogits[i])",
    ),
    ("dW2", "transpose", "dW2 = dlogits.T @ h"),
    ("dW2", "scale", "dW2 = h.T @ dlogits / n"),
    ("dW2", "operand", "dW2 = hpreact.T @ dlogits"),
    ("db2", RIGHT, "db2 = torch.ones(n) @ dlogits"),
    ("db2", RIGHT, "db2 = dlogits.sum(0, keepdim=True).squeeze(0)"),
    ("db2", "shape", "db2 = dlogits.sum(0, keepdim=True)"),
    ("db2", "shape", "db2 = dlogits.sum(1)"),
    ("db2", "scale", "db2 = dlogits.mean(0)"),
    # tanh
    ("dhpreact", RIGHT, "dhpreact = dh * (1 - h * h)"),
    ("dhpreact", RIGHT, "dhpreact = dh - dh * h**2"),
    ("dhpreact", "chain", "dhpreact = 1 - h * h"),
    ("dhpreact", "operand", "dhpreact = (1 - hpreact**2) * dh"),
    ("dhpreact", "operand", "dhpreact = (1 - torch.tanh(h) ** 2) * dh"),
    ("dhpreact", "rule", "dhpreact = h * (1 - h) * dh"),
    ("dhpreact", "formula", "dhpreact = (1.0 - h) ** 2 * dh"),
    ("dhpreact", "sign", "dhpreact = (h**2 - 1) * dh"),
    # batch norm's gain and bias
    ("dbngain", RIGHT, "dbngain = torch.einsum('ij,ij->j', bnraw, dhpreact).unsqueeze(0)"),
    ("dbngain", RIGHT, "dbngain = (dhpreact * bnraw).sum(0).view(1, -1)"),
    ("dbngain", RIGHT_KEEPDIM, "dbngain = (bnraw * dhpreact).sum(0)"),
    ("dbngain", "shape", "dbngain = (bnraw * dhpreact).sum(1, keepdim=True)"),
    ("dbngain", "shape", "dbngain = bnraw * dhpreact"),
    ("dbngain", "operand", "dbngain = (bngain * dhpreact).sum(0, keepdim=True)"),
    ("dbngain", "operand", "dbngain = (hpreact * dhpreact).sum(0, keepdim=True)"),
    ("dbngain", "scale", "dbngain = (bnraw * dhpreact).mean(0, keepdim=True)"),
    ("dbngain", "chain", "dbngain = bnraw.sum(0, keepdim=True)"),
    ("dbnbias", RIGHT, "dbnbias = torch.ones(1, n) @ dhpreact"),
    ("dbnbias", RIGHT, "dbnbias = dhpreact.sum(0)[None, :]"),
    ("dbnbias", "shape", "dbnbias = dhpreact.sum(1, keepdim=True)"),
    ("dbnbias", "scale", "dbnbias = dhpreact.mean(0, keepdim=True)"),
    ("dbnbias", "shape", "dbnbias = dhpreact.clone()"),
    ("dbnraw", RIGHT, "dbnraw = dhpreact * bngain.expand_as(dhpreact)"),
    ("dbnraw", "operand", "dbnraw = bnraw * dhpreact"),
    ("dbnraw", "sign", "dbnraw = -bngain * dhpreact"),
    ("dbnraw", "shape", "dbnraw = (bngain * dhpreact).sum(0, keepdim=True)"),
    ("dbnraw", "chain", "dbnraw = bngain * torch.ones_like(bnraw)"),
    # into batch norm
    ("dbnvar_inv", RIGHT, "dbnvar_inv = torch.sum(bndiff * dbnraw, 0, keepdim=True)"),
    ("dbnvar_inv", "shape", "dbnvar_inv = (bndiff * dbnraw).sum(1, keepdim=True)"),
    ("dbnvar_inv", "shape", "dbnvar_inv = bndiff * dbnraw"),
    ("dbnvar_inv", "scale", "dbnvar_inv = (bndiff * dbnraw).mean(0, keepdim=True)"),
    ("dbnvar_inv", "operand", "dbnvar_inv = (bnvar_inv * dbnraw).sum(0, keepdim=True)"),
    ("dbnvar", RIGHT, "dbnvar = -0.5 * bnvar_inv**3 * dbnvar_inv"),
    ("dbnvar", RIGHT, "dbnvar = -dbnvar_inv / (2 * (bnvar + 1e-5) ** 1.5)"),
    ("dbnvar", "sign", "dbnvar = 0.5 * (bnvar + 1e-5) ** -1.5 * dbnvar_inv"),
    ("dbnvar", "rule", "dbnvar = -0.5 * (bnvar + 1e-5) ** -0.5 * dbnvar_inv"),
    ("dbnvar", "rule", "dbnvar = -1.5 * (bnvar + 1e-5) ** -2.5 * dbnvar_inv"),
    ("dbnvar", "scale", "dbnvar = -((bnvar + 1e-5) ** -1.5) * dbnvar_inv"),
    ("dbndiff2", RIGHT, "dbndiff2 = dbnvar.expand(n, -1) / (n - 1)"),
    ("dbndiff2", RIGHT, "dbndiff2 = torch.ones(n, n_hidden) * dbnvar / (n - 1)"),
    ("dbndiff2", RIGHT, "dbndiff2 = (1.0 / (n - 1)) * dbnvar.repeat(n, 1)"),
    ("dbndiff2", "bessel", "dbndiff2 = 1.0 / n * torch.ones_like(bndiff2) * dbnvar"),
    ("dbndiff2", "scale", "dbndiff2 = torch.ones_like(bndiff2) * dbnvar"),
    ("dbndiff2", "shape", "dbndiff2 = dbnvar / (n - 1)"),
    ("dbndiff2", "chain", "dbndiff2 = torch.ones_like(bndiff2) / (n - 1)"),
    ("dbndiff", RIGHT, "dbndiff = bnvar_inv * dbnraw + 2 * bndiff * dbndiff2"),
    ("dbndiff", RIGHT, "dbndiff = dbnraw * bnvar_inv\ndbndiff = dbndiff + dbndiff2 * 2 * bndiff"),
    ("dbndiff", "missing-path", "dbndiff = bnvar_inv * dbnraw"),
    ("dbndiff", "missing-path", "dbndiff = 2 * bndiff * dbndiff2"),
    (
        "dbndiff",
        "missing-path",
        "dbndiff = bnvar_inv * dbnraw\ndbndiff = 2 * bndiff * dbndiff2",
    ),
    ("dbndiff", "scale", "dbndiff = bnvar_inv * dbnraw + bndiff * dbndiff2"),
    ("dbndiff", "operand", "dbndiff = bnvar_inv * dbnraw + 2 * bndiff2 * dbndiff2"),
    ("dbnmeani", RIGHT, "dbnmeani = -torch.sum(dbndiff, 0, keepdim=True)"),
    ("dbnmeani", "sign", "dbnmeani = dbndiff.sum(0, keepdim=True)"),
    ("dbnmeani", "shape", "dbnmeani = (-dbndiff).sum(1, keepdim=True)"),
    ("dbnmeani", "scale", "dbnmeani = -dbndiff.mean(0, keepdim=True)"),
    ("dhprebn", RIGHT, "dhprebn = dbndiff + dbnmeani / n"),
    ("dhprebn", "missing-path", "dhprebn = dbndiff.clone()"),
    ("dhprebn", "scale", "dhprebn = dbndiff + dbnmeani"),
    ("dhprebn", "bessel", "dhprebn = dbndiff + dbnmeani / (n - 1)"),
    ("dhprebn", "sign", "dhprebn = dbndiff - dbnmeani / n"),
    # the first linear layer and the embedding
    ("dembcat", RIGHT, "dembcat = torch.einsum('nj,ij->ni', dhprebn, W1)"),
    ("dembcat", RIGHT, "dembcat = dhprebn.mm(W1.T)"),
    ("dembcat", "transpose", "dembcat = W1 @ dhprebn.T"),
    ("dembcat", "scale", "dembcat = dhprebn @ W1.T / n"),
    ("dembcat", "operand", "dembcat = dhpreact @ W1.T"),
    ("dW1", RIGHT, "dW1 = emb.view(n, -1).T @ dhprebn"),
    ("dW1", "transpose", "dW1 = dhprebn.T @ embcat"),
    ("dW1", "scale", "dW1 = embcat.T @ dhprebn / n"),
    ("dW1", "operand", "dW1 = embcat.T @ dhpreact"),
    ("db1", RIGHT, "db1 = dhprebn.sum(dim=0)"),
    ("db1", "shape", "db1 = dhprebn.sum(1)"),
    ("db1", "shape", "db1 = dhprebn.sum(0, keepdim=True)"),
    ("demb", RIGHT, "demb = dembcat.reshape(n, block_size, n_embd)"),
    ("demb", RIGHT, "demb = dembcat.view(-1, 3, 10)"),
    ("demb", RIGHT, "demb = dembcat.unflatten(1, (block_size, n_embd))"),
    ("demb", "shape", "demb = dembcat.view(n, n_embd, block_size)"),
    ("demb", "shape", "demb = dembcat.clone()"),
    (
        "demb",
        "transpose",
        "demb = dembcat.view(n, n_embd, block_size).transpose(1, 2).contiguous()",
    ),
    (
        "dC",
        RIGHT,
        "dC = torch.zeros_like(C)\n"
        "for i, row in enumerate(Xb.tolist()):\n"
        "    for j, ix in enumerate(row):\n"
        "        dC[ix] += demb[i, j]",
    ),
    ("dC", RIGHT, "dC = F.one_hot(Xb.view(-1), vocab_size).float().T @ demb.view(-1, n_embd)"),
    (
        "dC",
        RIGHT,
        "dC = torch.zeros_like(C).index_put_((Xb.flatten(),), demb.flatten(0, 1), accumulate=True)",
    ),
    (
        "dC",
        RIGHT,
        "dC = torch.zeros_like(C).scatter_add_(\n"
        "    0, Xb.view(-1, 1).expand(-1, n_embd), demb.view(-1, n_embd)\n"
        ")",
    ),
    ("dC", RIGHT, "dC = torch.einsum('ntv,ntc->vc', F.one_hot(Xb, vocab_size).float(), demb)"),
    (
        "dC",
        "accumulate",
        "dC = torch.zeros_like(C)\ndC[Xb.view(-1)] += demb.view(-1, n_embd)",
    ),
    ("dC", "accumulate", "dC = torch.zeros_like(C)\ndC[Xb] = demb"),
    (
        "dC",
        "accumulate",
        "dC = torch.zeros_like(C).index_put_((Xb.view(-1),), demb.view(-1, n_embd))",
    ),
    (
        "dC",
        "scale",
        "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.view(-1), demb.view(-1, n_embd))\ndC /= n",
    ),
    ("dC", "shape", "dC = demb.sum(0)"),
    (
        "dC",
        "index",
        "dC = torch.zeros_like(C)\ndC.index_add_(0, Xb.T.reshape(-1), demb.view(-1, n_embd))",
    ),
)

FUSED_LOGITS = {"check": "logits (fused)"}
FUSED_BN = {"check": "hprebn (fused)"}
NB03 += _rows(
    ("dlogits", RIGHT, "dlogits = (F.softmax(logits, 1) - F.one_hot(Yb, vocab_size)) / n"),
    ("dlogits", RIGHT, "dlogits = probs.clone()\ndlogits[range(n), Yb] -= 1\ndlogits /= n"),
    ("dlogits", RIGHT, "dlogits = -(F.one_hot(Yb, vocab_size) - logits.softmax(dim=-1)) / n"),
    (
        "dlogits",
        RIGHT,
        "import numpy as np\n"
        "x = logits.detach().numpy()\n"
        "p = np.exp(x - x.max(1, keepdims=True))\n"
        "p /= p.sum(1, keepdims=True)\n"
        "p[np.arange(n), Yb.numpy()] -= 1\n"
        "dlogits = torch.from_numpy(p / n)",
    ),
    ("dlogits", "scale", "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1"),
    (
        "dlogits",
        "sign",
        "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] += 1\ndlogits /= n",
    ),
    (
        "dlogits",
        "axis",
        "dlogits = F.softmax(logits, 0)\ndlogits[range(n), Yb] -= 1\ndlogits /= n",
    ),
    (
        "dlogits",
        "formula",
        "dlogits = F.softmax(logits, 1) / n\ndlogits[range(n), Yb] -= 1",
    ),
    ("dlogits", "index", "dlogits = F.softmax(logits, 1)\ndlogits[:, Yb] -= 1\ndlogits /= n"),
    (
        "dlogits",
        "bessel",
        "dlogits = F.softmax(logits, 1)\ndlogits[range(n), Yb] -= 1\ndlogits /= n - 1",
    ),
    ("dlogits", "sign", "dlogits = (F.one_hot(Yb, vocab_size) - F.softmax(logits, 1)) / n"),
    **FUSED_LOGITS,
) + _rows(
    (
        "dhprebn",
        RIGHT,
        "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0, keepdim=True)"
        " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0, keepdim=True))",
    ),
    (
        "dhprebn",
        RIGHT,
        "dhprebn = bngain * bnvar_inv * (dhpreact - dhpreact.mean(0)"
        " - bnraw * (dhpreact * bnraw).sum(0) / (n - 1))",
    ),
    (
        "dhprebn",
        RIGHT,
        "mu = hprebn.mean(0, keepdim=True)\n"
        "var = hprebn.var(0, keepdim=True)\n"
        "xhat = (hprebn - mu) / torch.sqrt(var + 1e-5)\n"
        "dhprebn = bngain / torch.sqrt(var + 1e-5) / n * (\n"
        "    n * dhpreact - dhpreact.sum(0) - n / (n - 1) * xhat * (dhpreact * xhat).sum(0)\n"
        ")",
    ),
    (
        "dhprebn",
        RIGHT,
        "def bn_backward(dy, xhat, gamma, inv_std):\n"
        "    m = dy.shape[0]\n"
        "    sums = dy.sum(0) + m / (m - 1) * xhat * (dy * xhat).sum(0)\n"
        "    return gamma * inv_std / m * (m * dy - sums)\n"
        "\n"
        "\n"
        "dhprebn = bn_backward(dhpreact, bnraw, bngain, bnvar_inv)",
    ),
    (
        "dhprebn",
        "bessel",
        "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)"
        " - bnraw * (dhpreact * bnraw).sum(0))",
    ),
    (
        "dhprebn",
        "sign",
        "dhprebn = bngain * bnvar_inv / n * (n * dhpreact + dhpreact.sum(0)"
        " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
    ),
    (
        "dhprebn",
        "formula",
        "dhprebn = bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)"
        " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
    ),
    (
        "dhprebn",
        "axis",
        "dhprebn = bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(1, keepdim=True)"
        " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(1, keepdim=True))",
    ),
    (
        "dhprebn",
        "scale",
        "dhprebn = bngain * bnvar_inv * (n * dhpreact - dhpreact.sum(0)"
        " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
    ),
    **FUSED_BN,
)

# ---------------------------------------------------------------- 04: layers as functions

CE = {"check": "logits", "inside": "cross_entropy_backward"}
LINEAR = {"inside": "linear_backward"}
TANH = {"check": "a1", "inside": "tanh_backward"}
EMBED = {"check": "C", "inside": "embed_backward"}
ADAM_P, ADAM_M, ADAM_V = ({"check": f"{c} (5 steps)", "inside": "adamw"} for c in "pmv")

NB04 = [
    # the bigram's table of logits
    *_rows(
        ("dW", RIGHT, "dW = (counts.sum(1, keepdim=True) * W.softmax(1) - counts) / counts.sum()"),
        (
            "dW",
            RIGHT,
            "N = counts.sum(dim=1, keepdim=True)\n"
            "dW = (N * torch.softmax(W, dim=-1) - counts) / len(Xtr)",
        ),
        (
            "dW",
            RIGHT,
            "a = F.one_hot(Xtr[:, -1], vocab_size).double()\n"
            "dW = a.T @ (F.softmax(W[Xtr[:, -1]], 1) - F.one_hot(Ytr, vocab_size)) / len(Ytr)",
        ),
        ("dW", "scale", "dW = counts.sum(1, keepdim=True) * F.softmax(W, dim=1) - counts"),
        (
            "dW",
            "sign",
            "dW = (counts - counts.sum(1, keepdim=True) * F.softmax(W, dim=1)) / len(Ytr)",
        ),
        (
            "dW",
            "axis",
            "dW = (counts.sum(1, keepdim=True) * F.softmax(W, dim=0) - counts) / len(Ytr)",
        ),
        (
            "dW",
            "axis",
            "dW = (counts.sum(0, keepdim=True) * F.softmax(W, dim=1) - counts) / len(Ytr)",
        ),
        ("dW", "formula", "dW = (F.softmax(W, dim=1) - counts) / len(Ytr)"),
        (
            "dW",
            "operand",
            "dW = ((counts + 1).sum(1, keepdim=True) * F.softmax(W, dim=1) - (counts + 1))"
            " / len(Ytr)",
        ),
        ("dW", "formula", "dW = F.softmax(W, dim=1) - counts / counts.sum(1, keepdim=True)"),
    ),
    *_rows(
        (
            "dlogits",
            RIGHT,
            "dlogits = (F.softmax(logits, dim=1) - F.one_hot(Y, logits.shape[1])) / n",
        ),
        (
            "dlogits",
            RIGHT,
            "import numpy as np\n"
            "x = logits.detach().numpy()\n"
            "shifted = x - np.max(x, axis=1, keepdims=True)\n"
            "probs = np.exp(shifted) / np.sum(np.exp(shifted), axis=1, keepdims=True)\n"
            "probs[np.arange(n), Y.numpy()] -= 1\n"
            "dlogits = torch.from_numpy(probs / n)",
        ),
        (
            "dlogits",
            RIGHT,
            "dlogits = torch.exp(logits - torch.logsumexp(logits, dim=1, keepdim=True))\n"
            "dlogits[torch.arange(n), Y] -= 1\n"
            "dlogits = dlogits / n",
        ),
        (
            "dlogits",
            RIGHT,
            "dlogits = (logits.softmax(-1) - torch.zeros_like(logits).scatter_(1, Y[:, None], 1.0))"
            " / logits.shape[0]",
        ),
        ("dlogits", "scale", "dlogits = F.softmax(logits, dim=1)\ndlogits[range(n), Y] -= 1"),
        (
            "dlogits",
            "sign",
            "dlogits = F.softmax(logits, dim=1)\ndlogits[range(n), Y] += 1\ndlogits /= n",
        ),
        (
            "dlogits",
            "axis",
            "dlogits = F.softmax(logits, dim=0)\ndlogits[range(n), Y] -= 1\ndlogits /= n",
        ),
        (
            "dlogits",
            "index",
            "dlogits = F.softmax(logits, dim=1)\ndlogits[:, Y] -= 1\ndlogits /= n",
        ),
        (
            "dlogits",
            "scale",
            "dlogits = F.softmax(logits, dim=1)\ndlogits[range(n), Y] -= 1\n"
            "dlogits /= logits.shape[1]",
        ),
        ("dlogits", "formula", "dlogits = (F.softmax(logits, dim=1) - 1) / n"),
        (
            "dlogits",
            "sign",
            "dlogits = (F.one_hot(Y, logits.shape[1]) - F.softmax(logits, dim=1)) / n",
        ),
        **CE,
    ),
    *_rows(
        ("dx", RIGHT, "dx = dout.mm(W.t())"),
        ("dx", RIGHT, "dx = torch.einsum('nj,ij->ni', dout, W)"),
        ("dx", RIGHT, "dx = torch.from_numpy(dout.detach().numpy().dot(W.detach().numpy().T))"),
        ("dx", "transpose", "dx = W @ dout.T"),
        ("dx", "scale", "dx = dout @ W.T / dout.shape[0]"),
        check="h1",
        **LINEAR,
    ),
    *_rows(
        ("dW", RIGHT, "dW = torch.einsum('ni,nj->ij', x, dout)"),
        ("dW", RIGHT, "dW = x.t().mm(dout)"),
        ("dW", RIGHT, "dW = sum(torch.outer(x[i], dout[i]) for i in range(x.shape[0]))"),
        ("dW", "transpose", "dW = dout.T @ x"),
        ("dW", "scale", "dW = x.T @ dout / x.shape[0]"),
        check="W2",
        **LINEAR,
    ),
    *_rows(
        ("db", RIGHT, "db = torch.sum(dout, dim=0)"),
        ("db", RIGHT, "db = dout.sum(axis=0)"),
        ("db", RIGHT, "db = torch.ones(dout.shape[0], dtype=dout.dtype) @ dout"),
        ("db", "shape", "db = dout.sum(0, keepdim=True)"),
        ("db", "shape", "db = dout.sum(1)"),
        ("db", "scale", "db = dout.mean(0)"),
        ("db", "shape", "db = dout.sum()"),
        check="b2",
        **LINEAR,
    ),
    *_rows(
        ("dx", RIGHT, "dx = dout * (1 - out * out)"),
        ("dx", RIGHT, "dx = dout * (1 - out) * (1 + out)"),
        ("dx", RIGHT, "dx = dout - dout * out**2"),
        ("dx", "chain", "dx = 1 - out**2"),
        ("dx", "operand", "dx = (1 - torch.tanh(out) ** 2) * dout"),
        ("dx", "operand", "dx = dout / torch.cosh(out) ** 2"),
        ("dx", "rule", "dx = out * (1 - out) * dout"),
        ("dx", "formula", "dx = (1 - out) ** 2 * dout"),
        ("dx", "sign", "dx = (out**2 - 1) * dout"),
        **TANH,
    ),
    *_rows(
        (
            "dC",
            RIGHT,
            "dC = torch.zeros_like(C)\n"
            "for i in range(X.shape[0]):\n"
            "    for j in range(X.shape[1]):\n"
            "        dC[X[i, j]] += dout[i, j * d_embed : (j + 1) * d_embed]",
        ),
        (
            "dC",
            RIGHT,
            "dC = torch.zeros_like(C).index_put_(\n"
            "    (X.reshape(-1),), dout.reshape(-1, d_embed), accumulate=True\n"
            ")",
        ),
        (
            "dC",
            RIGHT,
            "onehot = F.one_hot(X.reshape(-1), C.shape[0]).to(dout.dtype)\n"
            "dC = onehot.T @ dout.reshape(-1, d_embed)",
        ),
        (
            "dC",
            RIGHT,
            "dC = torch.zeros_like(C)\n"
            "dC.scatter_add_(0, X.reshape(-1, 1).expand(-1, d_embed), dout.reshape(-1, d_embed))",
        ),
        (
            "dC",
            RIGHT,
            "import numpy as np\n"
            "dC_np = np.zeros(C.shape)\n"
            "np.add.at(dC_np, X.numpy().reshape(-1), dout.detach().numpy().reshape(-1, d_embed))\n"
            "dC = torch.from_numpy(dC_np)",
        ),
        (
            "dC",
            "accumulate",
            "dC = torch.zeros_like(C)\ndC[X.view(-1)] += dout.reshape(-1, d_embed)",
        ),
        (
            "dC",
            "accumulate",
            "dC = torch.zeros_like(C)\ndC[X] = dout.view(X.shape[0], X.shape[1], d_embed)",
        ),
        (
            "dC",
            "scale",
            "dC = torch.zeros_like(C)\n"
            "dC.index_add_(0, X.view(-1), dout.reshape(-1, d_embed))\n"
            "dC = dC / X.shape[0]",
        ),
        (
            "dC",
            "index",
            "dC = torch.zeros_like(C)\n"
            "dC.index_add_(0, X.T.reshape(-1), dout.reshape(-1, d_embed))",
        ),
        (
            "dC",
            "missing-path",
            "dC = torch.zeros_like(C)\ndC.index_add_(0, X[:, -1], dout[:, -d_embed:])",
        ),
        **EMBED,
    ),
    # AdamW
    *_rows(
        ("m_new", RIGHT, "m_new = m + (1 - beta1) * (grad - m)"),
        ("m_new", RIGHT, "m_new = torch.lerp(m, grad, 1 - beta1)"),
        ("m_new", "formula", "m_new = (1 - beta1) * m + beta1 * grad"),
        ("m_new", "formula", "m_new = beta1 * m + grad"),
        **ADAM_M,
    ),
    *_rows(
        ("v_new", RIGHT, "v_new = beta2 * v + (1 - beta2) * grad * grad"),
        ("v_new", RIGHT, "v_new = v.mul(beta2).addcmul(grad, grad, value=1 - beta2)"),
        ("v_new", "formula", "v_new = beta2 * v + (1 - beta2) * grad"),
        **ADAM_V,
    ),
    *_rows(
        (
            "p_new",
            RIGHT,
            "bias_correction1 = 1 - beta1**t\n"
            "bias_correction2 = 1 - beta2**t\n"
            "step_size = lr / bias_correction1\n"
            "denom = v_new.sqrt() / math.sqrt(bias_correction2) + eps\n"
            "p_new = p * (1 - lr * weight_decay) - step_size * m_new / denom",
        ),
        (
            "p_new",
            RIGHT,
            "p_new = p - lr * weight_decay * p - lr * m_hat / (torch.sqrt(v_hat) + eps)",
        ),
        (
            "p_new",
            RIGHT,
            "p_new = p.mul(1 - lr * weight_decay).addcdiv(m_hat, v_hat.sqrt().add(eps), value=-lr)",
        ),
        ("p_new", "decay", "p_new = p - lr * m_hat / (v_hat.sqrt() + eps)"),
        (
            "p_new",
            "decay",
            "grad = grad + weight_decay * p\n"
            "m_new = beta1 * m + (1 - beta1) * grad\n"
            "v_new = beta2 * v + (1 - beta2) * grad**2\n"
            "m_hat = m_new / (1 - beta1**t)\n"
            "v_hat = v_new / (1 - beta2**t)\n"
            "p_new = p - lr * m_hat / (v_hat.sqrt() + eps)",
        ),
        (
            "p_new",
            "decay",
            "p_new = p * (1 - weight_decay) - lr * m_hat / (v_hat.sqrt() + eps)",
        ),
        ("m_hat", "bias-correction", "m_hat = m_new\nv_hat = v_new"),
        ("m_hat", "bias-correction", "m_hat = m_new / (1 - beta1)\nv_hat = v_new / (1 - beta2)"),
        (
            "m_hat",
            "bias-correction",
            "m_hat = m_new / (1 - beta1 ** (t + 1))\nv_hat = v_new / (1 - beta2 ** (t + 1))",
        ),
        ("v_hat", "bias-correction", "v_hat = v_new"),
        ("m_hat", "operand", "m_hat = m / (1 - beta1**t)"),
        (
            "p_new",
            "sign",
            "p_new = p * (1 - lr * weight_decay) + lr * m_hat / (v_hat.sqrt() + eps)",
        ),
        **ADAM_P,
    ),
]

# ---------------------------------------------------------------- 05: a transformer block

NB05 = _rows(
    # the loss and the output projection
    (
        "dlogits",
        RIGHT,
        "dlogits = torch.where(\n"
        "    (Yb >= 0).unsqueeze(-1),\n"
        "    F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), vocab_size),\n"
        "    0.0,\n"
        ") / n_targets",
    ),
    (
        "dlogits",
        RIGHT,
        "dlogits = F.softmax(logits.detach(), dim=-1)\n"
        "valid = Yb >= 0\n"
        "dlogits[valid] -= F.one_hot(Yb[valid], vocab_size).to(dlogits.dtype)\n"
        "dlogits[~valid] = 0\n"
        "dlogits /= valid.sum()",
    ),
    (
        "dlogits",
        RIGHT,
        "flat = F.softmax(logits.detach().view(-1, vocab_size), dim=-1)\n"
        "tgt = Yb.view(-1)\n"
        "keep = tgt != -1\n"
        "flat[keep, tgt[keep]] -= 1\n"
        "flat[~keep] = 0\n"
        "dlogits = (flat / keep.sum()).view(B, T, vocab_size)",
    ),
    (
        "dlogits",
        RIGHT,
        "probs = F.softmax(logits.detach(), -1)\n"
        "indicator = F.one_hot(Yb.clamp(min=0), vocab_size)\n"
        "dlogits = (probs - indicator) * (Yb != -1).unsqueeze(-1).to(probs.dtype) / n_targets",
    ),
    (
        "dlogits",
        "scale",
        "dlogits = (F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), vocab_size))"
        " * (Yb >= 0).unsqueeze(-1)",
    ),
    (
        "dlogits",
        "scale",
        "dlogits = (F.softmax(logits, -1) - F.one_hot(Yb.clamp(min=0), vocab_size))"
        " * (Yb >= 0).unsqueeze(-1) / (B * T)",
    ),
    (
        "dlogits",
        "mask",
        "dlogits = F.softmax(logits.detach(), -1)\n"
        "valid = Yb >= 0\n"
        "dlogits[valid] -= F.one_hot(Yb[valid], vocab_size).to(dlogits.dtype)\n"
        "dlogits /= valid.sum()",
    ),
    (
        "dlogits",
        "sign",
        "dlogits = (F.one_hot(Yb.clamp(min=0), vocab_size) - F.softmax(logits, -1))"
        " * (Yb >= 0).unsqueeze(-1) / n_targets",
    ),
    ("dlnf", RIGHT, "dlnf = torch.einsum('btv,cv->btc', dlogits, W_head)"),
    ("dlnf", RIGHT, "dlnf = (dlogits.reshape(-1, vocab_size) @ W_head.T).view(B, T, C)"),
    ("dlnf", "sign", "dlnf = -(dlogits @ W_head.T)"),
    ("dlnf", "scale", "dlnf = dlogits @ W_head.T / n_targets"),
    ("dlnf", "operand", "dlnf = logits @ W_head.T"),
    ("dW_head", RIGHT, "dW_head = torch.einsum('btc,btv->cv', lnf, dlogits)"),
    ("dW_head", RIGHT, "dW_head = (lnf.transpose(1, 2) @ dlogits).sum(0)"),
    (
        "dW_head",
        "transpose",
        "dW_head = dlogits.reshape(-1, vocab_size).T @ lnf.reshape(-1, C)",
    ),
    ("dW_head", "scale", "dW_head = (lnf.transpose(1, 2) @ dlogits).mean(0)"),
    ("dW_head", "shape", "dW_head = lnf.transpose(1, 2) @ dlogits"),
    ("dW_head", "operand", "dW_head = lnf_hat.reshape(-1, C).T @ dlogits.reshape(-1, vocab_size)"),
    # the final layer norm, step by step
    ("dlnf_w", RIGHT, "dlnf_w = torch.einsum('btc,btc->c', lnf_hat, dlnf)"),
    ("dlnf_w", RIGHT, "dlnf_w = (lnf_hat * dlnf).sum(0).sum(0)"),
    ("dlnf_w", "shape", "dlnf_w = (lnf_hat * dlnf).sum(-1)"),
    ("dlnf_w", "shape", "dlnf_w = (lnf_hat * dlnf).sum(0)"),
    ("dlnf_w", "scale", "dlnf_w = (lnf_hat * dlnf).mean((0, 1))"),
    ("dlnf_w", "operand", "dlnf_w = (lnf * dlnf).sum((0, 1))"),
    ("dlnf_w", "chain", "dlnf_w = lnf_hat.sum((0, 1))"),
    ("dlnf_b", RIGHT, "dlnf_b = dlnf.view(-1, C).sum(0)"),
    ("dlnf_b", RIGHT, "dlnf_b = dlnf.sum(dim=[0, 1])"),
    ("dlnf_b", "shape", "dlnf_b = dlnf.sum(0)"),
    ("dlnf_b", "scale", "dlnf_b = dlnf.mean((0, 1))"),
    ("dlnf_b", "shape", "dlnf_b = dlnf.sum(-1)"),
    ("dlnf_hat", RIGHT, "dlnf_hat = dlnf * lnf_w.view(1, 1, C)"),
    ("dlnf_hat", "operand", "dlnf_hat = lnf_hat * dlnf"),
    ("dlnf_hat", "chain", "dlnf_hat = lnf_w * torch.ones_like(lnf_hat)"),
    ("dlnf_hat", "operand", "dlnf_hat = lnf_b * dlnf"),
    (
        "dlnf_rstd",
        RIGHT,
        "dlnf_rstd = torch.einsum('btc,btc->bt', lnf_diff, dlnf_hat).unsqueeze(-1)",
    ),
    ("dlnf_rstd", "shape", "dlnf_rstd = (lnf_diff * dlnf_hat).sum(0, keepdim=True)"),
    ("dlnf_rstd", "operand", "dlnf_rstd = (lnf_hat * dlnf_hat).sum(-1, keepdim=True)"),
    ("dlnf_rstd", "scale", "dlnf_rstd = (lnf_diff * dlnf_hat).mean(-1, keepdim=True)"),
    ("dlnf_var", RIGHT, "dlnf_var = -0.5 * lnf_rstd**3 * dlnf_rstd"),
    ("dlnf_var", "sign", "dlnf_var = 0.5 * (lnf_var + 1e-5) ** -1.5 * dlnf_rstd"),
    ("dlnf_var", "rule", "dlnf_var = -0.5 * (lnf_var + 1e-5) ** -0.5 * dlnf_rstd"),
    ("dlnf_var", "rule", "dlnf_var = -1.5 * (lnf_var + 1e-5) ** -2.5 * dlnf_rstd"),
    ("dlnf_diff2", RIGHT, "dlnf_diff2 = dlnf_var.expand_as(lnf_diff2) / C"),
    ("dlnf_diff2", RIGHT, "dlnf_diff2 = (dlnf_var / C).repeat(1, 1, C)"),
    ("dlnf_diff2", RIGHT, "dlnf_diff2 = torch.full_like(lnf_diff2, 1.0 / C) * dlnf_var"),
    ("dlnf_diff2", "bessel", "dlnf_diff2 = torch.ones_like(lnf_diff2) / (C - 1) * dlnf_var"),
    ("dlnf_diff2", "scale", "dlnf_diff2 = torch.ones_like(lnf_diff2) * dlnf_var"),
    ("dlnf_diff2", "shape", "dlnf_diff2 = dlnf_var / C"),
    ("dlnf_diff2", "scale", "dlnf_diff2 = torch.ones_like(lnf_diff2) / T * dlnf_var"),
    ("dlnf_diff", RIGHT, "dlnf_diff = lnf_rstd * dlnf_hat + 2 * lnf_diff * dlnf_diff2"),
    ("dlnf_diff", "missing-path", "dlnf_diff = lnf_rstd * dlnf_hat"),
    ("dlnf_diff", "missing-path", "dlnf_diff = 2 * lnf_diff * dlnf_diff2"),
    ("dlnf_diff", "scale", "dlnf_diff = lnf_rstd * dlnf_hat + lnf_diff * dlnf_diff2"),
    ("dlnf_mean", RIGHT, "dlnf_mean = -torch.sum(dlnf_diff, dim=2, keepdim=True)"),
    ("dlnf_mean", "sign", "dlnf_mean = dlnf_diff.sum(-1, keepdim=True)"),
    ("dlnf_mean", "scale", "dlnf_mean = -dlnf_diff.mean(-1, keepdim=True)"),
    ("dx2", RIGHT, "dx2 = dlnf_diff + dlnf_mean.expand(-1, -1, C) / C"),
    ("dx2", "missing-path", "dx2 = dlnf_diff.clone()"),
    ("dx2", "scale", "dx2 = dlnf_diff + dlnf_mean"),
    ("dx2", "missing-path", "dx2 = dlnf_mean / C * torch.ones_like(x2)"),
)

DX2_FUSED = {"check": "x2 (fused)"}
NB05 += _rows(
    (
        "dx2_fused",
        RIGHT,
        "dnorm_mean = dx_hat.mean(-1, keepdim=True)\n"
        "dnorm_norm_mean = (dx_hat * lnf_hat).mean(-1, keepdim=True)\n"
        "dx2_fused = (dx_hat - dnorm_mean - lnf_hat * dnorm_norm_mean) * lnf_rstd",
    ),
    (
        "dx2_fused",
        RIGHT,
        "mu = x2.mean(-1, keepdim=True)\n"
        "rstd = (x2.var(-1, keepdim=True, unbiased=False) + 1e-5).rsqrt()\n"
        "xh = (x2 - mu) * rstd\n"
        "gx = lnf_w * dlnf\n"
        "dx2_fused = rstd * (gx - gx.mean(-1, keepdim=True)"
        " - xh * (gx * xh).mean(-1, keepdim=True))",
    ),
    (
        "dx2_fused",
        "bessel",
        "dx2_fused = lnf_rstd / C * (C * dx_hat - dx_hat.sum(-1, keepdim=True)"
        " - C / (C - 1) * lnf_hat * (dx_hat * lnf_hat).sum(-1, keepdim=True))",
    ),
    (
        "dx2_fused",
        "operand",
        "dx2_fused = lnf_rstd / C * (C * dlnf - dlnf.sum(-1, keepdim=True)"
        " - lnf_hat * (dlnf * lnf_hat).sum(-1, keepdim=True))",
    ),
    (
        "dx2_fused",
        "axis",
        "dx2_fused = lnf_rstd / C * (C * dx_hat - dx_hat.sum(0, keepdim=True)"
        " - lnf_hat * (dx_hat * lnf_hat).sum(0, keepdim=True))",
    ),
    (
        "dx2_fused",
        "formula",
        "dx2_fused = (dx_hat - dx_hat.sum(-1, keepdim=True)"
        " - lnf_hat * (dx_hat * lnf_hat).sum(-1, keepdim=True)) * lnf_rstd",
    ),
    (
        "dx2_fused",
        "formula",
        "dx2_fused = dx_hat - dx_hat.mean(-1, keepdim=True)"
        " - lnf_hat * (dx_hat * lnf_hat).mean(-1, keepdim=True)",
    ),
    (
        "dx2_fused",
        "operand",
        "dx2_fused = (dx_hat - dx_hat.mean(-1, keepdim=True)"
        " - lnf_hat * (dx_hat * lnf_hat).mean(-1, keepdim=True)) / lnf_rstd",
    ),
    **DX2_FUSED,
)

NB05 += _rows(
    # the MLP
    ("dmlp_out", RIGHT, "dmlp_out = dx2 * 1.0"),
    ("dmlp_out", RIGHT, "dmlp_out = dx2.detach().clone()"),
    ("dh", RIGHT, "dh = torch.einsum('btc,fc->btf', dmlp_out, W_mproj)"),
    ("dh", RIGHT, "dh = dmlp_out.matmul(W_mproj.mT)"),
    ("dh", "scale", "dh = dmlp_out @ W_mproj.T / (B * T)"),
    ("dh", "sign", "dh = -dmlp_out @ W_mproj.T"),
    ("dW_mproj", RIGHT, "dW_mproj = torch.tensordot(h, dmlp_out, dims=([0, 1], [0, 1]))"),
    (
        "dW_mproj",
        "transpose",
        "dW_mproj = dmlp_out.reshape(-1, C).T @ h.reshape(-1, 4 * C)",
    ),
    ("dW_mproj", "scale", "dW_mproj = h.reshape(-1, 4 * C).T @ dmlp_out.reshape(-1, C) / (B * T)"),
    ("dW_mproj", "shape", "dW_mproj = h.transpose(1, 2) @ dmlp_out"),
    ("dW_mproj", "operand", "dW_mproj = h_pre.reshape(-1, 4 * C).T @ dmlp_out.reshape(-1, C)"),
    ("db_mproj", RIGHT, "db_mproj = dmlp_out.flatten(0, 1).sum(0)"),
    ("db_mproj", "shape", "db_mproj = dmlp_out.sum(0)"),
    ("db_mproj", "scale", "db_mproj = dmlp_out.mean((0, 1))"),
    # GELU
    (
        "dh_pre",
        RIGHT,
        "GELU_SCALING_FACTOR = math.sqrt(2.0 / math.pi)\n"
        "cube = 0.044715 * h_pre * h_pre * h_pre\n"
        "tanh_arg = GELU_SCALING_FACTOR * (h_pre + cube)\n"
        "tanh_out = torch.tanh(tanh_arg)\n"
        "coshf_out = torch.cosh(tanh_arg)\n"
        "sech_out = 1.0 / (coshf_out * coshf_out)\n"
        "local_grad = 0.5 * (1.0 + tanh_out) + h_pre * 0.5 * sech_out * GELU_SCALING_FACTOR * (\n"
        "    1.0 + 3.0 * 0.044715 * h_pre * h_pre\n"
        ")\n"
        "dh_pre = local_grad * dh",
    ),
    (
        "dh_pre",
        "formula",
        "dh_pre = (0.5 * (1 + th) + 0.5 * h_pre * (1 - th**2) * math.sqrt(2 / math.pi)"
        " * (1 + 0.044715 * h_pre**2)) * dh",
    ),
    (
        "dh_pre",
        "rule",
        "cdf = 0.5 * (1 + torch.erf(h_pre / math.sqrt(2)))\n"
        "pdf = torch.exp(-0.5 * h_pre**2) / math.sqrt(2 * math.pi)\n"
        "dh_pre = (cdf + h_pre * pdf) * dh",
    ),
    (
        "dh_pre",
        "formula",
        "dh_pre = (0.5 * (1 + th) + 0.5 * h_pre * (1 - th**2)"
        " * (1 + 3 * 0.044715 * h_pre**2)) * dh",
    ),
    (
        "dh_pre",
        "formula",
        "dh_pre = (0.5 * (1 + th) + 0.5 * h_pre * (1 - th) * math.sqrt(2 / math.pi)"
        " * (1 + 3 * 0.044715 * h_pre**2)) * dh",
    ),
    ("dh_pre", "missing-path", "dh_pre = 0.5 * (1 + th) * dh"),
    # the MLP's first layer and the second layer norm
    ("dln2", RIGHT, "dln2 = dh_pre @ W_fc.transpose(0, 1)"),
    ("dln2", "operand", "dln2 = dh @ W_fc.T"),
    ("dln2", "sign", "dln2 = -(dh_pre @ W_fc.T)"),
    ("dW_fc", RIGHT, "dW_fc = torch.einsum('btc,btf->cf', ln2, dh_pre)"),
    ("dW_fc", RIGHT, "dW_fc = sum(ln2[b].T @ dh_pre[b] for b in range(B))"),
    ("dW_fc", "transpose", "dW_fc = dh_pre.reshape(-1, 4 * C).T @ ln2.reshape(-1, C)"),
    ("dW_fc", "operand", "dW_fc = ln2_hat.reshape(-1, C).T @ dh_pre.reshape(-1, 4 * C)"),
    ("dW_fc", "operand", "dW_fc = ln2.reshape(-1, C).T @ dh.reshape(-1, 4 * C)"),
    ("dW_fc", "scale", "dW_fc = ln2.reshape(-1, C).T @ dh_pre.reshape(-1, 4 * C) / n_targets"),
    ("db_fc", RIGHT, "db_fc = dh_pre.sum(dim=(0, 1))"),
    ("db_fc", RIGHT, "db_fc = sum(dh_pre[b].sum(0) for b in range(B))"),
    ("db_fc", "shape", "db_fc = dh_pre.sum((0, 1), keepdim=True)"),
    ("db_fc", "scale", "db_fc = dh_pre.mean((0, 1))"),
    ("dln2_w", RIGHT, "dln2_w = (ln2_hat * dln2).reshape(-1, C).sum(0)"),
    ("dln2_w", "operand", "dln2_w = (ln2 * dln2).sum((0, 1))"),
    ("dln2_w", "shape", "dln2_w = (ln2_hat * dln2).sum(0)"),
    ("dln2_b", RIGHT, "dln2_b = torch.einsum('btc->c', dln2)"),
    ("dln2_b", "scale", "dln2_b = dln2.mean((0, 1))"),
    (
        "dx1",
        RIGHT,
        "dnorm = ln2_w * dln2\n"
        "dx1 = dx2 + (dnorm - dnorm.mean(-1, keepdim=True)"
        " - ln2_hat * (dnorm * ln2_hat).mean(-1, keepdim=True)) * ln2_rstd",
    ),
    (
        "dx1",
        "missing-path",
        "dx1 = ln2_rstd / C * (C * dx_hat - dx_hat.sum(-1, keepdim=True)"
        " - ln2_hat * (dx_hat * ln2_hat).sum(-1, keepdim=True))",
    ),
    ("dx1", "missing-path", "dx1 = dx2.clone()"),
    (
        "dx1",
        "sign",
        "dx1 = dx2 - ln2_rstd / C * (C * dx_hat - dx_hat.sum(-1, keepdim=True)"
        " - ln2_hat * (dx_hat * ln2_hat).sum(-1, keepdim=True))",
    ),
    # the attention's output projection and the heads
    ("dattn_out", RIGHT, "dattn_out = dx1"),
    ("dy_cat", RIGHT, "dy_cat = dattn_out @ W_aproj.t()"),
    ("dy_cat", "transpose", "dy_cat = dattn_out @ W_aproj"),
    ("dW_aproj", RIGHT, "dW_aproj = torch.einsum('btc,btd->cd', y_cat, dattn_out)"),
    ("dW_aproj", "transpose", "dW_aproj = dattn_out.reshape(-1, C).T @ y_cat.reshape(-1, C)"),
    ("dW_aproj", "scale", "dW_aproj = (y_cat.transpose(1, 2) @ dattn_out).mean(0)"),
    ("db_aproj", RIGHT, "db_aproj = dattn_out.sum(0).sum(0)"),
    ("db_aproj", "shape", "db_aproj = dattn_out.sum(1)"),
    ("dy", RIGHT, "dy = dy_cat.reshape(B, T, nh, hs).permute(0, 2, 1, 3)"),
    ("dy", RIGHT, "dy = dy_cat.unflatten(-1, (nh, hs)).transpose(1, 2)"),
    ("dy", "transpose", "dy = dy_cat.view(B, nh, T, hs)"),
    ("dy", "transpose", "dy = dy_cat.view(B, T, nh, hs)"),
    # attention's matrix products
    ("datt_probs", RIGHT, "datt_probs = dy @ v.mT"),
    ("datt_probs", RIGHT, "datt_probs = torch.einsum('bhtd,bhsd->bhts', dy, v)"),
    ("datt_probs", "transpose", "datt_probs = v @ dy.transpose(-2, -1)"),
    ("datt_probs", "scale", "datt_probs = dy @ v.transpose(-2, -1) * scale"),
    ("dv", RIGHT, "dv = att_probs.mT @ dy"),
    ("dv", RIGHT, "dv = torch.einsum('bhts,bhtd->bhsd', att_probs, dy)"),
    ("dv", "transpose", "dv = att_probs @ dy"),
    ("dv", "operand", "dv = att_masked.exp().transpose(-2, -1) @ dy"),
    # the softmax and the mask
    (
        "datt_masked",
        RIGHT,
        "eye = torch.eye(T, dtype=att_probs.dtype)\n"
        "J = att_probs.unsqueeze(-1) * (eye - att_probs.unsqueeze(-2))\n"
        "datt_masked = torch.einsum('bhtij,bhti->bhtj', J, datt_probs)",
    ),
    (
        "datt_masked",
        RIGHT,
        "datt_masked = torch.zeros_like(att_probs)\n"
        "for t2 in range(T):\n"
        "    for t3 in range(T):\n"
        "        indicator = 1.0 if t2 == t3 else 0.0\n"
        "        local_derivative = att_probs[..., t2] * (indicator - att_probs[..., t3])\n"
        "        datt_masked[..., t3] += local_derivative * datt_probs[..., t2]",
    ),
    (
        "datt_masked",
        RIGHT,
        "datt_masked = att_probs * datt_probs"
        " - att_probs * (att_probs * datt_probs).sum(-1, keepdim=True)",
    ),
    (
        "datt_masked",
        "formula",
        "datt_masked = att_probs * (datt_probs - datt_probs.sum(-1, keepdim=True))",
    ),
    ("datt_masked", "missing-path", "datt_masked = att_probs * (1 - att_probs) * datt_probs"),
    (
        "datt_masked",
        "axis",
        "datt_masked = att_probs * (datt_probs - (datt_probs * att_probs).sum(-2, keepdim=True))",
    ),
    (
        "datt_masked",
        "formula",
        "datt_masked = datt_probs - (datt_probs * att_probs).sum(-1, keepdim=True)",
    ),
    ("datt", RIGHT, "datt = datt_masked * mask"),
    ("datt", RIGHT, "datt = datt_masked.clone()\ndatt[..., ~mask] = 0"),
    ("datt", RIGHT, "datt = torch.where(mask, datt_masked, torch.zeros_like(datt_masked))"),
    ("datt", "mask", "datt = datt_masked.masked_fill(mask, 0.0)"),
    ("datt", "nan", "datt = datt_masked.masked_fill(~mask, float('-inf'))"),
    # the scores
    ("dq", RIGHT, "dq = datt @ k / math.sqrt(hs)"),
    ("dq", RIGHT, "dq = torch.einsum('bhts,bhsd->bhtd', datt, k) * scale"),
    ("dq", RIGHT, "dq = torch.stack([datt[:, i] @ k[:, i] for i in range(nh)], dim=1) * scale"),
    ("dq", "scale", "dq = datt @ k"),
    ("dq", "scale", "dq = datt @ k * math.sqrt(hs)"),
    ("dq", "operand", "dq = datt @ q * scale"),
    ("dq", "sign", "dq = -(datt * scale) @ k"),
    ("dk", RIGHT, "dk = datt.mT @ q * scale"),
    ("dk", RIGHT, "dk = (q.transpose(-2, -1) @ datt).transpose(-2, -1) * scale"),
    ("dk", "scale", "dk = datt.transpose(-2, -1) @ q"),
    ("dk", "operand", "dk = datt.mT @ k * scale"),
    # back to one tensor, the attention's linear layer
    ("dqkv", RIGHT, "dqkv = torch.cat([dq, dk, dv], dim=1).transpose(1, 2).reshape(B, T, 3 * C)"),
    (
        "dqkv",
        RIGHT,
        "dqkv = torch.zeros_like(qkv)\n"
        "dqkv[..., :C] = dq.transpose(1, 2).reshape(B, T, C)\n"
        "dqkv[..., C : 2 * C] = dk.transpose(1, 2).reshape(B, T, C)\n"
        "dqkv[..., 2 * C :] = dv.transpose(1, 2).reshape(B, T, C)",
    ),
    ("dqkv", "transpose", "dqkv = torch.cat([t.reshape(B, T, C) for t in (dq, dk, dv)], dim=-1)"),
    (
        "dqkv",
        "index",
        "dqkv = torch.cat([t.transpose(1, 2).reshape(B, T, C) for t in (dq, dv, dk)], dim=-1)",
    ),
    ("dqkv", "transpose", "dqkv = torch.cat([dq, dk, dv], dim=1).reshape(B, T, 3 * C)"),
    ("dln1", RIGHT, "dln1 = torch.einsum('btk,ck->btc', dqkv, W_attn)"),
    ("dW_attn", RIGHT, "dW_attn = (ln1.transpose(1, 2) @ dqkv).sum(0)"),
    ("dW_attn", "transpose", "dW_attn = dqkv.reshape(-1, 3 * C).T @ ln1.reshape(-1, C)"),
    ("dW_attn", "operand", "dW_attn = ln1_hat.reshape(-1, C).T @ dqkv.reshape(-1, 3 * C)"),
    ("db_attn", RIGHT, "db_attn = dqkv.view(-1, 3 * C).sum(0)"),
    ("db_attn", "shape", "db_attn = dqkv.sum(0)"),
    # the first layer norm, the residual and the embeddings
    ("dln1_w", "operand", "dln1_w = (ln1 * dln1).sum((0, 1))"),
    (
        "dx0",
        RIGHT,
        "dnorm = ln1_w * dln1\n"
        "dx0 = dx1 + ln1_rstd * (dnorm - dnorm.mean(-1, keepdim=True)"
        " - ln1_hat * (dnorm * ln1_hat).mean(-1, keepdim=True))",
    ),
    (
        "dx0",
        "missing-path",
        "dx0 = ln1_rstd / C * (C * dx_hat - dx_hat.sum(-1, keepdim=True)"
        " - ln1_hat * (dx_hat * ln1_hat).sum(-1, keepdim=True))",
    ),
    (
        "dwte",
        RIGHT,
        "dwte = torch.einsum('btv,btc->vc', F.one_hot(Xb, vocab_size).to(dx0.dtype), dx0)",
    ),
    (
        "dwte",
        RIGHT,
        "dwte = torch.zeros_like(wte)\n"
        "for b in range(B):\n"
        "    for t in range(T):\n"
        "        dwte[Xb[b, t]] += dx0[b, t]",
    ),
    (
        "dwte",
        RIGHT,
        "dwte = torch.zeros_like(wte).index_put_((Xb,), dx0, accumulate=True)",
    ),
    ("dwte", "accumulate", "dwte = torch.zeros_like(wte)\ndwte[Xb] = dx0"),
    ("dwte", "accumulate", "dwte = torch.zeros_like(wte).index_put_((Xb,), dx0)"),
    ("dwte", "shape", "dwte = dx0.sum((0, 1))"),
    (
        "dwte",
        "scale",
        "dwte = torch.zeros_like(wte)\ndwte.index_add_(0, Xb.view(-1), dx0.reshape(-1, C) / B)",
    ),
    ("dwpe", RIGHT, "dwpe = torch.einsum('btc->tc', dx0)"),
    ("dwpe", RIGHT, "dwpe = dx0.sum(0, keepdim=True).squeeze(0)"),
    ("dwpe", "shape", "dwpe = dx0.sum((0, 1))"),
    ("dwpe", "scale", "dwpe = dx0.mean(0)"),
    ("dwpe", "shape", "dwpe = dx0.sum(1)"),
)

LN = {"inside": "layernorm_backward"}
GELU = {"check": "h_pre (fused)", "inside": "gelu_backward"}
ATTENTION = {"inside": "attention_backward"}
ADAM_P5, ADAM_M5 = ({"check": f"{c} (5 steps)", "inside": "adamw"} for c in "pm")
NB05 += [
    *_rows(
        (
            "dx",
            RIGHT,
            "dnorm_mean = dx_hat.mean(-1, keepdim=True)\n"
            "dnorm_norm_mean = (dx_hat * x_hat).mean(-1, keepdim=True)\n"
            "dx = (dx_hat - dnorm_mean - x_hat * dnorm_norm_mean) * rstd",
        ),
        (
            "dx",
            "operand",
            "dx = (dx_hat - dx_hat.mean(-1, keepdim=True)"
            " - x_hat * (dx_hat * x_hat).mean(-1, keepdim=True)) / rstd",
        ),
        (
            "dx",
            "formula",
            "dx = (dx_hat - dx_hat.sum(-1, keepdim=True)"
            " - x_hat * (dx_hat * x_hat).sum(-1, keepdim=True)) * rstd",
        ),
        (
            "dx",
            "formula",
            "dx = (dx_hat - dx_hat.mean(-1, keepdim=True)"
            " - (dx_hat * x_hat).mean(-1, keepdim=True)) * rstd",
        ),
        (
            "dx",
            "operand",
            "dx = (dout - dout.mean(-1, keepdim=True)"
            " - x_hat * (dout * x_hat).mean(-1, keepdim=True)) * rstd",
        ),
        (
            "dx",
            "bessel",
            "dx = rstd / n * (n * dx_hat - dx_hat.sum(-1, keepdim=True)"
            " - n / (n - 1) * x_hat * (dx_hat * x_hat).sum(-1, keepdim=True))",
        ),
        check="x1 (fused)",
        **LN,
    ),
    *_rows(
        ("dw", RIGHT, "dw = (x_hat * dout).reshape(-1, n).sum(0)"),
        ("dw", RIGHT, "dw = torch.einsum('...c,...c->c', x_hat, dout)"),
        ("dw", RIGHT, "dw = (x_hat * dout).flatten(0, -2).sum(0)"),
        ("dw", "shape", "dw = (x_hat * dout).sum(-1)"),
        ("dw", "scale", "dw = (x_hat * dout).mean(lead)"),
        ("dw", "operand", "dw = (dx_hat * x_hat).sum(lead)"),
        check="ln2_w (fused)",
        **LN,
    ),
    *_rows(
        ("db", RIGHT, "db = dout.reshape(-1, n).sum(0)"),
        ("db", "shape", "db = dout.sum(0)"),
        ("db", "scale", "db = dout.mean(lead)"),
        check="ln2_b (fused)",
        **LN,
    ),
    *_rows(
        (
            "dx",
            RIGHT,
            "u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)\n"
            "sech2 = 1 / torch.cosh(u) ** 2\n"
            "dx = dout * (0.5 * (1 + torch.tanh(u))"
            " + 0.5 * x * sech2 * math.sqrt(2 / math.pi) * (1 + 0.134145 * x**2))",
        ),
        (
            "dx",
            "chain",
            "dx = 0.5 * (1 + th) + 0.5 * x * (1 - th**2) * math.sqrt(2 / math.pi)"
            " * (1 + 3 * 0.044715 * x**2)",
        ),
        (
            "dx",
            "formula",
            "dx = (0.5 * (1 + th) + 0.5 * x * (1 - th**2) * math.sqrt(2 / math.pi)"
            " * (1 + 0.044715 * x**2)) * dout",
        ),
        (
            "dx",
            "rule",
            "dx = (0.5 * (1 + torch.erf(x / math.sqrt(2)))"
            " + x * torch.exp(-0.5 * x**2) / math.sqrt(2 * math.pi)) * dout",
        ),
        ("dx", "missing-path", "dx = 0.5 * (1 + th) * dout"),
        **GELU,
    ),
    *_rows(
        (
            "att_probs",
            RIGHT,
            "scores = q @ k.transpose(-2, -1) / math.sqrt(hs)\n"
            "scores = scores.masked_fill(mask == 0, float('-inf'))\n"
            "att_probs = torch.softmax(scores, dim=-1)",
        ),
        (
            "att_probs",
            RIGHT,
            "scores = (q @ k.transpose(-2, -1)) * hs**-0.5\n"
            "scores = scores.masked_fill(~mask, float('-inf'))\n"
            "e = torch.exp(scores - scores.amax(-1, keepdim=True))\n"
            "att_probs = e / e.sum(-1, keepdim=True)",
        ),
        (
            "att_probs",
            RIGHT,
            "att_probs = torch.softmax(torch.where(mask, q @ k.mT * hs**-0.5, -torch.inf), -1)",
        ),
        (
            "att_probs",
            "mask",
            "att_probs = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(hs), dim=-1)",
        ),
        (
            "att_probs",
            "mask",
            "att_probs = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(hs), dim=-1)"
            ".masked_fill(~mask, 0.0)",
        ),
        (
            "att_probs",
            "formula",
            "scores = (q @ k.transpose(-2, -1)).masked_fill(~mask, float('-inf'))\n"
            "att_probs = F.softmax(scores, -1)",
        ),
        check="att_probs (recomputed)",
        **ATTENTION,
    ),
    *_rows(
        ("dv", RIGHT, "dv = torch.einsum('...ts,...td->...sd', att_probs, dy)"),
        ("dv", "transpose", "dv = att_probs @ dy"),
        check="v (fused)",
        **ATTENTION,
    ),
    *_rows(
        ("dq", RIGHT, "dq = (datt @ k) * hs**-0.5"),
        ("dq", "scale", "dq = datt @ k"),
        ("datt", "formula", "datt = att_probs * (dp - dp.sum(-1, keepdim=True))"),
        ("datt", "rule", "datt = dp"),
        check="q (fused)",
        **ATTENTION,
    ),
    *_rows(
        ("dk", RIGHT, "dk = torch.einsum('...ts,...td->...sd', datt, q) / math.sqrt(hs)"),
        ("dk", "transpose", "dk = datt @ q / math.sqrt(hs)"),
        ("dk", "scale", "dk = datt.transpose(-2, -1) @ q"),
        check="k (fused)",
        **ATTENTION,
    ),
    *_rows(
        ("p_new", RIGHT, "p_new = p * (1 - lr * weight_decay) - lr * m_hat / (v_hat**0.5 + eps)"),
        ("p_new", RIGHT, "p_new = p - lr * (m_hat / (v_hat.sqrt() + eps) + weight_decay * p)"),
        (
            "p_new",
            "decay",
            "g = grad + weight_decay * p\n"
            "m_new = beta1 * m + (1 - beta1) * g\n"
            "v_new = beta2 * v + (1 - beta2) * g * g\n"
            "m_hat = m_new / (1 - beta1**t)\n"
            "v_hat = v_new / (1 - beta2**t)\n"
            "p_new = p - lr * m_hat / (v_hat.sqrt() + eps)",
        ),
        ("m_hat", "bias-correction", "m_hat = m_new / (1 - beta1)\nv_hat = v_new / (1 - beta2)"),
        **ADAM_P5,
    ),
    *_rows(
        ("m_new", RIGHT, "m_new = beta1 * m + (1.0 - beta1) * grad"),
        ("m_new", "formula", "m_new = beta1 * m + beta1 * grad"),
        **ADAM_M5,
    ),
]

CORPUS = {
    "02-tensor-backprop": NB02,
    "03-makemore-backprop": NB03,
    "04-mlp-language-model": NB04,
    "05-transformer-backprop": NB05,
}
