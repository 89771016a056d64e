"""The lecture's makemore MLP, cut into named steps, with a correct hand-written backward pass.

Shared by the tests and the benchmarks (not part of the ``checks`` package, so that the
learners' package does not ship the answers).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ORDER = [
    "logprobs",
    "probs",
    "counts_sum_inv",
    "counts_sum",
    "counts",
    "norm_logits",
    "logit_maxes",
    "logits",
    "h",
    "W2",
    "b2",
    "hpreact",
    "bngain",
    "bnbias",
    "bnraw",
    "bnvar_inv",
    "bnvar",
    "bndiff2",
    "bndiff",
    "bnmeani",
    "hprebn",
    "embcat",
    "W1",
    "b1",
    "emb",
    "C",
]


def init_params(
    vocab_size: int = 27,
    block_size: int = 3,
    n_embd: int = 10,
    n_hidden: int = 64,
    seed: int = 2147483647,
) -> dict[str, torch.Tensor]:
    """The lecture's deliberately non-standard initialisation, every draw from one generator."""
    g = torch.Generator().manual_seed(seed)
    p = {
        "C": torch.randn((vocab_size, n_embd), generator=g),
        "W1": torch.randn((n_embd * block_size, n_hidden), generator=g)
        * (5 / 3)
        / ((n_embd * block_size) ** 0.5),
        "b1": torch.randn(n_hidden, generator=g) * 0.1,
        "W2": torch.randn((n_hidden, vocab_size), generator=g) * 0.1,
        "b2": torch.randn(vocab_size, generator=g) * 0.1,
        "bngain": torch.randn((1, n_hidden), generator=g) * 0.1 + 1.0,
        "bnbias": torch.randn((1, n_hidden), generator=g) * 0.1,
    }
    for t in p.values():
        t.requires_grad_(True)
    return p


def forward(
    p: dict[str, torch.Tensor], Xb: torch.Tensor, Yb: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The forward pass in the lecture's named steps; every intermediate retains its grad."""
    n = Xb.shape[0]
    C, W1, b1, W2, b2, bngain, bnbias = (
        p[k] for k in ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias")
    )
    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff**2
    bnvar = 1 / (n - 1) * bndiff2.sum(0, keepdim=True)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = bndiff * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdim=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()
    out = dict(
        emb=emb,
        embcat=embcat,
        hprebn=hprebn,
        bnmeani=bnmeani,
        bndiff=bndiff,
        bndiff2=bndiff2,
        bnvar=bnvar,
        bnvar_inv=bnvar_inv,
        bnraw=bnraw,
        hpreact=hpreact,
        h=h,
        logits=logits,
        logit_maxes=logit_maxes,
        norm_logits=norm_logits,
        counts=counts,
        counts_sum=counts_sum,
        counts_sum_inv=counts_sum_inv,
        probs=probs,
        logprobs=logprobs,
    )
    for t in out.values():
        t.retain_grad()
    out["loss"] = loss
    return out


def forward_loss(p: dict[str, torch.Tensor], Xb: torch.Tensor, Yb: torch.Tensor) -> torch.Tensor:
    """The same loss with no graph kept (for central differences)."""
    with torch.no_grad():
        emb = p["C"][Xb]
        hprebn = emb.view(emb.shape[0], -1) @ p["W1"] + p["b1"]
        n = Xb.shape[0]
        bndiff = hprebn - hprebn.mean(0, keepdim=True)
        bnvar = (bndiff**2).sum(0, keepdim=True) / (n - 1)
        h = torch.tanh(p["bngain"] * bndiff * (bnvar + 1e-5) ** -0.5 + p["bnbias"])
        return F.cross_entropy(h @ p["W2"] + p["b2"], Yb)


def backward(
    p: dict[str, torch.Tensor], f: dict[str, torch.Tensor], Xb: torch.Tensor, Yb: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Every gradient by hand, step by step, as a learner writes them."""
    with torch.no_grad():
        n = Xb.shape[0]
        d = {}
        d["logprobs"] = torch.zeros_like(f["logprobs"])
        d["logprobs"][range(n), Yb] = -1.0 / n
        d["probs"] = (1.0 / f["probs"]) * d["logprobs"]
        d["counts_sum_inv"] = (f["counts"] * d["probs"]).sum(1, keepdim=True)
        d["counts"] = f["counts_sum_inv"] * d["probs"]
        d["counts_sum"] = -(f["counts_sum"] ** -2) * d["counts_sum_inv"]
        d["counts"] = d["counts"] + torch.ones_like(f["counts"]) * d["counts_sum"]
        d["norm_logits"] = f["counts"] * d["counts"]
        d["logit_maxes"] = (-d["norm_logits"]).sum(1, keepdim=True)
        d["logits"] = d["norm_logits"].clone()
        d["logits"] += (
            F.one_hot(f["logits"].max(1).indices, num_classes=f["logits"].shape[1])
            * d["logit_maxes"]
        )
        d["h"] = d["logits"] @ p["W2"].T
        d["W2"] = f["h"].T @ d["logits"]
        d["b2"] = d["logits"].sum(0)
        d["hpreact"] = (1.0 - f["h"] ** 2) * d["h"]
        d["bngain"] = (f["bnraw"] * d["hpreact"]).sum(0, keepdim=True)
        d["bnraw"] = p["bngain"] * d["hpreact"]
        d["bnbias"] = d["hpreact"].sum(0, keepdim=True)
        d["bndiff"] = f["bnvar_inv"] * d["bnraw"]
        d["bnvar_inv"] = (f["bndiff"] * d["bnraw"]).sum(0, keepdim=True)
        d["bnvar"] = -0.5 * (f["bnvar"] + 1e-5) ** -1.5 * d["bnvar_inv"]
        d["bndiff2"] = 1.0 / (n - 1) * torch.ones_like(f["bndiff2"]) * d["bnvar"]
        d["bndiff"] = d["bndiff"] + 2 * f["bndiff"] * d["bndiff2"]
        d["hprebn"] = d["bndiff"].clone()
        d["bnmeani"] = (-d["bndiff"]).sum(0, keepdim=True)
        d["hprebn"] = d["hprebn"] + 1.0 / n * torch.ones_like(f["hprebn"]) * d["bnmeani"]
        d["embcat"] = d["hprebn"] @ p["W1"].T
        d["W1"] = f["embcat"].T @ d["hprebn"]
        d["b1"] = d["hprebn"].sum(0)
        d["emb"] = d["embcat"].view(f["emb"].shape)
        d["C"] = torch.zeros_like(p["C"])
        d["C"].index_add_(0, Xb.view(-1), d["emb"].view(-1, p["C"].shape[1]))
    return d


def batch(
    X: torch.Tensor, Y: torch.Tensor, batch_size: int = 32, seed: int = 2147483647
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ix = torch.randint(0, X.shape[0], (batch_size,), generator=g)
    return X[ix], Y[ix]


def setup(batch_size: int = 32, retain_graph: bool = False, dtype: torch.dtype = torch.float32):
    """Parameters, a batch from the training split, the forward pass and autograd's backward."""
    from checks.data import load_names, split_dataset

    split = split_dataset(load_names(), block_size=3)
    p = init_params()
    if dtype != torch.float32:
        p = {k: v.detach().to(dtype).requires_grad_(True) for k, v in p.items()}
    Xb, Yb = batch(split.Xtr, split.Ytr, batch_size)
    f = forward(p, Xb, Yb)
    f["loss"].backward(retain_graph=retain_graph)
    return p, f, Xb, Yb


def tensor_of(name: str, p: dict[str, torch.Tensor], f: dict[str, torch.Tensor]) -> torch.Tensor:
    return p[name] if name in p else f[name]


def race_data(
    order: tuple[str, ...] = ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias"),
) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """Exercise 4's network (64 hidden) as a list in step()'s ``order``, and a small made-up
    training set of 500 contexts and targets: what a race runs on in the tests."""
    p = init_params(27, 3, 10, 64, 2147483647)
    g = torch.Generator().manual_seed(3)
    X, Y = torch.randint(0, 27, (500, 3), generator=g), torch.randint(0, 27, (500,), generator=g)
    return [p[k].detach() for k in order], X, Y
