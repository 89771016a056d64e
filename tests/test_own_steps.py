"""The solutions' own hand-written steps never fail a check against autograd, and slips do.

Notebook 03's training closes with "A last check against autograd": one fresh minibatch through the
trained network, the solution's ``step()`` against ``loss.backward()``, ``cmp`` for every parameter.
Notebook 04 compares its ``mlp_backward`` with autograd the same way (``deep_grads`` against
``p.grad`` after ``F.cross_entropy(...).backward()``). Here both comparisons run over many fresh
minibatches, on networks trained by the solutions' own loops for a short and a longer run: a
correct step must pass every time (float32 rounding is not a mistake), while a realistic slip
built from the same step's outputs or inputs must still fail.

The solutions' code is not copied: the definitions are taken from the notebooks' cells (by cell
id and name) and executed, so this tests what the notebooks hold.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import checks
from checks import Result, cmp, load_names, require, setting, split_dataset, training

ROOT = Path(__file__).resolve().parent.parent
SEED = 2147483647  # the notebooks' default WORKBOOK_SEED
BATCH = 32  # the notebooks' default WORKBOOK_BATCH: the minibatch of their checks
LENGTHS = (300, 3_000)  # training steps of the short and the longer run
TRIALS = 300  # fresh minibatches checked after each run (150 at least)
NET03 = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]  # the order of init_network and step

# Where the definitions live: {cell id: names defined at the top level of that cell}.
CELLS03 = {
    "11239787": ["n_embd"],
    "9a32e5f2": ["init_network", "device"],
    "74946a71": ["step"],
    "45daafe2": ["train"],
}
CELLS04 = {
    "8cdedef8": ["d_embed", "hidden"],
    "b92c883b": ["init_mlp"],
    "403c32d2": ["embed"],
    "1be98db8": ["cross_entropy_backward"],
    "6107c8fa": ["linear_backward"],
    "cdf1a7a6": ["tanh_backward"],
    "f8d4ba9a": ["embed_backward"],
    "f2182ee4": ["mlp_forward", "mlp_backward"],
    "f6dafb09": ["adamw"],
    "6ee67f58": ["device", "train_batch", "lr_max", "lr_min", "weight_decay", "train"],
}


# ---------------------------------------------------------------- the solutions' definitions


def _defined(node: ast.stmt) -> set[str]:
    """The names a top-level statement defines: a function, or the targets of an assignment."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def definitions(notebook: str, cells: dict[str, list[str]]) -> str:
    """The source of the named top-level definitions in the given code cells, in notebook order.

    Only those statements are taken (a cell's own training run or prints stay out); a name that
    is not found, or not in its cell, fails loudly.
    """
    nb = json.loads((ROOT / "solutions" / notebook).read_text(encoding="utf-8"))
    by_id = {c["id"]: "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"}
    parts = []
    for cell, names in cells.items():
        assert cell in by_id, f"{notebook}: no code cell {cell}"
        source = by_id[cell]
        taken = [n for n in ast.parse(source).body if _defined(n) & set(names)]
        missing = set(names) - set().union(*map(_defined, taken))
        assert not missing, f"{notebook}, cell {cell}: {sorted(missing)} not defined there"
        parts += [ast.get_source_segment(source, n) for n in taken]
    return "\n\n".join(parts) + "\n"


@dataclass
class Data:
    """The lecture's training split of names.txt (block size 3) and the vocabulary's size."""

    Xtr: torch.Tensor
    Ytr: torch.Tensor
    vocab_size: int


@pytest.fixture(scope="module")
def data() -> Data:
    split = split_dataset(load_names(), block_size=3)
    return Data(split.Xtr, split.Ytr, len(split.itos))


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """The notebooks' setting (``torch.set_num_threads(1)``), restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def fresh_results() -> Iterator[None]:
    """Thousands of quiet checks: none of them is left for another test's ``summary()``."""
    checks.reset()
    yield
    checks.reset()


def namespace(notebook: str, cells: dict[str, list[str]], data: Data) -> dict:
    """The notebook's globals that its functions use, then its definitions executed in them."""
    ns: dict[str, Any] = dict(
        torch=torch,
        F=F,
        math=math,
        training=training,
        require=require,
        setting=setting,
        seed=SEED,
        Xtr=data.Xtr,
        Ytr=data.Ytr,
        vocab_size=data.vocab_size,
        block_size=3,
        batch_size=BATCH,
    )
    code = definitions(notebook, cells)
    exec(compile(code, f"<{notebook}: {', '.join(cells)}>", "exec"), ns)
    return ns


# ---------------------------------------------------------------- the comparisons


@dataclass
class Failure:
    trial: int
    name: str
    result: Result
    shape: tuple[int, ...]
    largest: float  # the largest entry of autograd's gradient, for scale

    def __str__(self) -> str:
        r = self.result
        where = f"; worst: {r.worst.sentence()}" if r.worst is not None else ""
        return (
            f"minibatch {self.trial}, {self.name} {self.shape}: {r.mistake}, maxdiff "
            f"{r.maxdiff!r} (largest |grad| {self.largest:.3g}){where}; hint: {r.hint}"
        )


def judged(
    trial: int, pairs: Iterable[tuple[str, torch.Tensor, torch.Tensor]], loss: torch.Tensor
) -> list[Failure]:
    """``cmp`` each (name, hand-written gradient, parameter) quietly; the failures."""
    failures = []
    for name, grad, p in pairs:
        res = cmp(name, grad, p, loss=loss, quiet=True)
        if not res.ok:
            largest = float(p.grad.abs().max())
            failures.append(Failure(trial, name, res, tuple(p.shape), largest))
    return failures


def assert_none(failures: list[Failure], checked: int, label: str) -> None:
    """Fail with every failing (minibatch, parameter, mistake, maxdiff, hint), one a line."""
    if failures:
        lines = "\n".join(map(str, failures))
        pytest.fail(f"{label}: {len(failures)} of {checked} checks failed:\n{lines}", pytrace=False)


# ---------------------------------------------------------------- notebook 03


def trained03(data: Data, steps: int) -> tuple[dict, list[torch.Tensor], torch.Generator]:
    """Notebook 03's exercise 4: ``init_network(200, g4)``, trained by its ``train``."""
    ns = namespace("03-makemore-backprop.ipynb", CELLS03, data)
    g4 = torch.Generator().manual_seed(SEED)
    net = ns["init_network"](200, g4)
    lossi = ns["train"](net, steps, g4)
    assert len(lossi) == steps and math.isfinite(lossi[-1])
    return ns, net, g4


def last_check03(
    ns: dict,
    net: list[torch.Tensor],
    Xb: torch.Tensor,
    Yb: torch.Tensor,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The notebook's last cell: ``step`` and autograd on one forward pass (grads left in .grad)."""
    for p in net:
        p.grad = None
    loss, grads = ns["step"](net, Xb, Yb)
    loss.backward()
    return loss, grads


@pytest.mark.slow
@pytest.mark.parametrize("steps", LENGTHS)
def test_notebook03_step_passes_on_every_minibatch(data: Data, steps: int) -> None:
    ns, net, g4 = trained03(data, steps)
    failures = []
    for trial in range(TRIALS):
        ix = torch.randint(0, data.Xtr.shape[0], (BATCH,), generator=g4)
        loss, grads = last_check03(ns, net, data.Xtr[ix], data.Ytr[ix])
        pairs = [(f"{k} (trained)", g, p) for k, g, p in zip(NET03, grads, net, strict=True)]
        failures += judged(trial, pairs, loss)
    assert_none(failures, TRIALS * len(NET03), f"03 after {steps} steps")


def per_position03(
    ns: dict,
    net: list[torch.Tensor],
    Xb: torch.Tensor,
    Yb: torch.Tensor,
) -> torch.Tensor:
    """``demb`` of the solution's step, one row per context position: the same forward pass with
    one row of C per position, so that its scatter-add has nothing to add up."""
    flat = Xb.reshape(-1)
    rows = net[0].detach()[flat].clone().requires_grad_()
    positions = torch.arange(flat.numel()).view(Xb.shape)
    _, grads = ns["step"]([rows, *net[1:]], positions, Yb)
    return grads[0].detach()


def slips03(
    ns: dict, net: list[torch.Tensor], Xb: torch.Tensor, Yb: torch.Tensor, grads: list[torch.Tensor]
) -> dict[str, tuple[str, torch.Tensor]]:
    """Realistic wrong gradients, from the solution step's outputs and inputs:
    {slip: (parameter, wrong gradient)}."""
    C, W1, b1, W2, b2, bngain, bnbias = (p.detach() for p in net)
    dC, dW1, db1, _, _, dbngain, dbnbias = (g.detach() for g in grads)
    n, n_embd = Xb.shape[0], C.shape[1]
    # the forward pass up to batch norm (the solution's own gradients are used as they are)
    embcat = C[Xb].view(n, -1)
    hprebn = embcat @ W1 + b1
    bnvar_inv = (hprebn.var(0, keepdim=True, unbiased=True) + 1e-5) ** -0.5
    bnraw = (hprebn - hprebn.mean(0, keepdim=True)) * bnvar_inv
    # dhprebn's last term without Bessel's n/(n-1): (dhpreact * bnraw).sum(0) is dbngain
    bessel = bngain * bnvar_inv * bnraw * dbngain / (n * (n - 1))
    # dhprebn with the mean's 1/n left out: its `dhpreact.sum(0)` (dbnbias) taken n times
    mean = -(n - 1) * bngain * bnvar_inv / n * dbnbias.expand(n, -1)
    demb = per_position03(ns, net, Xb, Yb)
    # the per-position rows add up to the step's dC
    assert torch.allclose(
        torch.zeros_like(C).index_add_(0, Xb.view(-1), demb), dC, rtol=1e-5, atol=1e-7
    )

    def into_C(dhprebn_change: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(C).index_add_(
            0, Xb.view(-1), (dhprebn_change @ W1.T).view(-1, n_embd)
        )

    signed = dW1.clone()
    row = int(dW1.abs().sum(1).argmax())
    signed[row] = -signed[row]
    overwritten = torch.zeros_like(C)
    overwritten[Xb.view(-1)] = demb  # assignment keeps one row per character: no sum
    return {
        "bessel slip -> W1": ("W1", dW1 + embcat.T @ bessel),
        "bessel slip -> C": ("C", dC + into_C(bessel)),
        "mean without 1/n -> b1": ("b1", db1 + mean.sum(0)),
        "mean without 1/n -> W1": ("W1", dW1 + embcat.T @ mean),
        f"sign of row {row} -> W1": ("W1", signed),
        "overwrite instead of index_add_ -> C": ("C", overwritten),
    }


def test_notebook03_slips_fail(data: Data) -> None:
    ns, net, g4 = trained03(data, LENGTHS[0])
    params = dict(zip(NET03, net, strict=True))
    passed = []
    for trial in range(5):
        ix = torch.randint(0, data.Xtr.shape[0], (BATCH,), generator=g4)
        Xb, Yb = data.Xtr[ix], data.Ytr[ix]
        loss, grads = last_check03(ns, net, Xb, Yb)
        right = judged(trial, [(k, g, p) for k, g, p in zip(NET03, grads, net, strict=True)], loss)
        assert_none(right, len(NET03), "03, the unchanged step")
        for slip, (name, wrong) in slips03(ns, net, Xb, Yb, grads).items():
            res = cmp(name, wrong, params[name], loss=loss, quiet=True)
            if res.ok:
                passed.append(f"minibatch {trial}, {slip}: passed (maxdiff {res.maxdiff!r})")
        # n * db1 (the whole dhprebn without its 1/n) is still zero in exact arithmetic: it may
        # pass or fail, as long as the check itself does not break
        res = cmp("b1", grads[2] * BATCH, net[2], loss=loss, quiet=True)
        assert res.maxdiff is not None
    if passed:
        pytest.fail("wrong gradients passed cmp:\n" + "\n".join(passed), pytrace=False)


# ---------------------------------------------------------------- notebook 04


def trained04(data: Data, steps: int) -> tuple[dict, dict[str, torch.Tensor], torch.Generator]:
    """Notebook 04's section 4: ``init_mlp`` (float32) trained by its ``train`` (AdamW)."""
    ns = namespace("04-mlp-language-model.ipynb", CELLS04, data)
    g_train = torch.Generator().manual_seed(SEED)
    model = ns["init_mlp"](data.vocab_size, 3, ns["d_embed"], ns["hidden"], g_train)
    lossi = ns["train"](model, steps, g_train)
    assert len(lossi) == steps and math.isfinite(lossi[-1])
    return ns, model, g_train


def check04(
    ns: dict,
    params: dict[str, torch.Tensor],
    Xb: torch.Tensor,
    Yb: torch.Tensor,
) -> tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The notebook's comparison: copies of ``params`` that require grad, ``mlp_forward``,
    autograd's backward from the cross-entropy, then ``mlp_backward`` under ``no_grad``."""
    leaves = {k: p.detach().clone().requires_grad_() for k, p in params.items()}
    acts, logits = ns["mlp_forward"](leaves, Xb)
    loss = F.cross_entropy(logits, Yb)
    loss.backward()
    with torch.no_grad():
        grads = ns["mlp_backward"](leaves, Xb, Yb, acts, logits)
    return loss, leaves, grads


def untrained_deep04(ns: dict, data: Data) -> dict[str, torch.Tensor]:
    """The notebook's own check network: ``[64, 32]``, float64, seed + 1."""
    g = torch.Generator().manual_seed(SEED + 1)
    return ns["init_mlp"](data.vocab_size, 3, 8, [64, 32], g, dtype=torch.float64)


@pytest.mark.slow
@pytest.mark.parametrize("steps", LENGTHS)
def test_notebook04_backward_passes_on_every_minibatch(data: Data, steps: int) -> None:
    ns, model, g = trained04(data, steps)
    networks = {
        "trained, float32": model,  # the dtype it is trained in
        "trained, float64": {k: p.double() for k, p in model.items()},  # the checks' dtype
        "[64, 32] untrained, float64": untrained_deep04(ns, data),  # the notebook's own
    }
    failures, checked = [], 0
    for trial in range(TRIALS):
        ix = torch.randint(0, data.Xtr.shape[0], (BATCH,), generator=g)
        for label, params in networks.items():
            loss, leaves, grads = check04(ns, params, data.Xtr[ix], data.Ytr[ix])
            pairs = [(f"{k} ({label})", grads[k], p) for k, p in leaves.items()]
            failures += judged(trial, pairs, loss)
            checked += len(pairs)
    assert_none(failures, checked, f"04 after {steps} steps")


def test_notebook04_slips_fail(data: Data) -> None:
    ns, model, g = trained04(data, LENGTHS[0])
    passed = []
    for trial in range(5):
        ix = torch.randint(0, data.Xtr.shape[0], (BATCH,), generator=g)
        Xb, Yb = data.Xtr[ix], data.Ytr[ix]
        loss, leaves, grads = check04(ns, model, Xb, Yb)
        right = judged(trial, [(k, grads[k], p) for k, p in leaves.items()], loss)
        assert_none(right, len(leaves), "04, the unchanged mlp_backward")
        # dx per context position: one row of C per position, so embed_backward adds nothing up
        flat = Xb.reshape(-1)
        rows = {**model, "C": model["C"][flat]}
        _, _, by_position = check04(ns, rows, torch.arange(flat.numel()).view(Xb.shape), Yb)
        overwritten = torch.zeros_like(grads["C"])
        overwritten[flat] = by_position["C"]
        signed = grads["W1"].clone()
        row = int(signed.abs().sum(1).argmax())
        signed[row] = -signed[row]
        slips = {
            "overwrite instead of index_add_ -> C": ("C", overwritten),
            f"sign of row {row} -> W1": ("W1", signed),
            "dlogits not divided by n -> W2": ("W2", grads["W2"] * BATCH),
        }
        for slip, (name, wrong) in slips.items():
            res = cmp(name, wrong, leaves[name], loss=loss, quiet=True)
            if res.ok:
                passed.append(f"minibatch {trial}, {slip}: passed (maxdiff {res.maxdiff!r})")
    if passed:
        pytest.fail("wrong gradients passed cmp:\n" + "\n".join(passed), pytrace=False)
