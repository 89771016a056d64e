"""Realistic wrong answers for the makemore backward pass, each with the mistake it should be named as."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _dlogprobs(f, Xb, Yb, value):
    out = torch.zeros_like(f["logprobs"])
    out[range(Xb.shape[0]), Yb] = value
    return out


def _overwrite_rows(p, d, Xb):
    out = torch.zeros_like(p["C"])
    out[Xb.view(-1)] = d["emb"].view(-1, p["C"].shape[1])
    return out


def _loop_overwrite(p, d, Xb):
    out = torch.zeros_like(p["C"])
    for i in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            out[Xb[i, j]] = d["emb"][i, j]
    return out


def _fused_dlogits(f, Yb, n, divide=True):
    out = F.softmax(f["logits"].detach(), 1)
    out[range(out.shape[0]), Yb] -= 1
    return out / n if divide else out


# (check, mistake, wrong answer from (p, f, d, Xb, Yb, n))
CATALOG = [
    ("logprobs", "scale", lambda p, f, d, Xb, Yb, n: _dlogprobs(f, Xb, Yb, -1.0)),
    ("logprobs", "sign", lambda p, f, d, Xb, Yb, n: _dlogprobs(f, Xb, Yb, 1.0 / n)),
    ("logprobs", "missing", lambda p, f, d, Xb, Yb, n: ...),
    ("logprobs", "missing", lambda p, f, d, Xb, Yb, n: None),
    ("probs", "local", lambda p, f, d, Xb, Yb, n: f["probs"].detach() * d["logprobs"]),
    ("probs", "nan", lambda p, f, d, Xb, Yb, n: d["logprobs"] / (f["probs"] - f["probs"]).detach()),
    (
        "counts_sum_inv",
        "shape",
        lambda p, f, d, Xb, Yb, n: (f["counts"] * d["probs"]).sum(1).detach(),
    ),
    (
        "counts_sum_inv",
        "shape",
        lambda p, f, d, Xb, Yb, n: (f["counts"] * d["probs"]).sum(0, keepdim=True).detach(),
    ),
    ("counts_sum_inv", "shape", lambda p, f, d, Xb, Yb, n: (f["counts"] * d["probs"]).detach()),
    (
        "counts_sum",
        "sign",
        lambda p, f, d, Xb, Yb, n: f["counts_sum"].detach() ** -2 * d["counts_sum_inv"],
    ),
    (
        "counts",
        "missing-path",
        lambda p, f, d, Xb, Yb, n: f["counts_sum_inv"].detach() * d["probs"],
    ),
    (
        "counts",
        "missing-path",
        lambda p, f, d, Xb, Yb, n: torch.ones_like(f["counts"]) * d["counts_sum"],
    ),
    ("counts", "autograd-grad", lambda p, f, d, Xb, Yb, n: f["counts"].grad),
    ("norm_logits", "local", lambda p, f, d, Xb, Yb, n: d["counts"].clone()),
    ("logit_maxes", "shape", lambda p, f, d, Xb, Yb, n: (-d["norm_logits"]).sum(0, keepdim=True)),
    ("logits", "scale", lambda p, f, d, Xb, Yb, n: _fused_dlogits(f, Yb, n, divide=False)),
    ("logits", "sign", lambda p, f, d, Xb, Yb, n: -_fused_dlogits(f, Yb, n)),
    ("h", "transpose", lambda p, f, d, Xb, Yb, n: (d["logits"] @ p["W2"].detach().T).T),
    ("h", "shape", lambda p, f, d, Xb, Yb, n: d["logits"] @ p["W2"].detach()[:27, :27]),
    ("W2", "transpose", lambda p, f, d, Xb, Yb, n: d["logits"].T @ f["h"].detach()),
    ("W2", "scale", lambda p, f, d, Xb, Yb, n: f["h"].detach().T @ d["logits"] / n),
    ("b2", "shape", lambda p, f, d, Xb, Yb, n: d["logits"].sum(0, keepdim=True)),
    ("b2", "shape", lambda p, f, d, Xb, Yb, n: d["logits"].clone()),
    ("b2", "shape", lambda p, f, d, Xb, Yb, n: d["logits"].sum(1)),
    ("hpreact", "local", lambda p, f, d, Xb, Yb, n: (1.0 - f["hpreact"].detach() ** 2) * d["h"]),
    ("hpreact", "sign", lambda p, f, d, Xb, Yb, n: (f["h"].detach() ** 2 - 1.0) * d["h"]),
    (
        "bngain",
        "shape",
        lambda p, f, d, Xb, Yb, n: (f["bnraw"].detach() * d["hpreact"]).sum(1, keepdim=True),
    ),
    ("bnbias", "shape", lambda p, f, d, Xb, Yb, n: d["hpreact"].clone()),
    ("bnraw", "operand", lambda p, f, d, Xb, Yb, n: p["bnbias"].detach() * d["hpreact"]),
    ("bndiff", "missing-path", lambda p, f, d, Xb, Yb, n: f["bnvar_inv"].detach() * d["bnraw"]),
    ("bndiff", "missing-path", lambda p, f, d, Xb, Yb, n: 2 * f["bndiff"].detach() * d["bndiff2"]),
    (
        "bndiff",
        "bessel",
        lambda p, f, d, Xb, Yb, n: (
            f["bnvar_inv"].detach() * d["bnraw"] + 2 * f["bndiff"].detach() * (1.0 / n * d["bnvar"])
        ),
    ),
    (
        "bndiff",
        "sign",
        lambda p, f, d, Xb, Yb, n: (
            f["bnvar_inv"].detach() * d["bnraw"] - 2 * f["bndiff"].detach() * d["bndiff2"]
        ),
    ),
    ("bndiff2", "scale", lambda p, f, d, Xb, Yb, n: torch.ones_like(f["bndiff2"]) * d["bnvar"]),
    ("bndiff2", "shape", lambda p, f, d, Xb, Yb, n: d["bnvar"].clone()),
    (
        "logits",
        "missing-path",
        lambda p, f, d, Xb, Yb, n: F.one_hot(f["logits"].max(1).indices, 27) * d["logit_maxes"],
    ),
    (
        "logits",
        "bessel",
        lambda p, f, d, Xb, Yb, n: _fused_dlogits(f, Yb, n, divide=False) / (n - 1),
    ),
    ("logprobs", "scale", lambda p, f, d, Xb, Yb, n: _dlogprobs(f, Xb, Yb, -1.0).long()),
    ("C", "shape", lambda p, f, d, Xb, Yb, n: d["emb"].clone()),
    (
        "bnvar_inv",
        "shape",
        lambda p, f, d, Xb, Yb, n: (f["bndiff"].detach() * d["bnraw"]).sum(1, keepdim=True),
    ),
    (
        "bnvar",
        "sign",
        lambda p, f, d, Xb, Yb, n: 0.5 * (f["bnvar"].detach() + 1e-5) ** -1.5 * d["bnvar_inv"],
    ),
    (
        "bnvar",
        "scale",
        lambda p, f, d, Xb, Yb, n: -((f["bnvar"].detach() + 1e-5) ** -1.5) * d["bnvar_inv"],
    ),
    (
        "bndiff2",
        "bessel",
        lambda p, f, d, Xb, Yb, n: 1.0 / n * torch.ones_like(f["bndiff2"]) * d["bnvar"],
    ),
    ("bndiff2", "shape", lambda p, f, d, Xb, Yb, n: 1.0 / (n - 1) * d["bnvar"]),
    ("bnmeani", "sign", lambda p, f, d, Xb, Yb, n: d["bndiff"].sum(0, keepdim=True)),
    ("hprebn", "missing-path", lambda p, f, d, Xb, Yb, n: d["bndiff"].clone()),
    (
        "hprebn",
        "missing-path",
        lambda p, f, d, Xb, Yb, n: 1.0 / n * torch.ones_like(f["hprebn"]) * d["bnmeani"],
    ),
    ("embcat", "transpose", lambda p, f, d, Xb, Yb, n: p["W1"].detach() @ d["hprebn"].T),
    ("W1", "transpose", lambda p, f, d, Xb, Yb, n: d["hprebn"].T @ f["embcat"].detach()),
    ("b1", "shape", lambda p, f, d, Xb, Yb, n: d["hprebn"].sum(0, keepdim=True)),
    ("emb", "shape", lambda p, f, d, Xb, Yb, n: d["embcat"].clone()),
    ("C", "accumulate", lambda p, f, d, Xb, Yb, n: _overwrite_rows(p, d, Xb)),
    ("C", "accumulate", lambda p, f, d, Xb, Yb, n: _loop_overwrite(p, d, Xb)),
    ("C", "autograd-grad", lambda p, f, d, Xb, Yb, n: p["C"].grad),
    ("C", "wrong", lambda p, f, d, Xb, Yb, n: torch.zeros_like(p["C"])),
]
