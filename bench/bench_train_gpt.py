"""The GPT training step of notebook 05 with the hand-written backward pass against autograd.

Run from the repository root (no install needed beyond torch; names.txt is downloaded on first
use)::

    python bench/bench_train_gpt.py               # 1000 steps per variant: about half a minute
    python bench/bench_train_gpt.py --quick       # a tenth of the steps, for a smoke test
    python bench/bench_train_gpt.py --steps 3000  # more steps per variant
    python bench/bench_train_gpt.py --threads 2   # torch threads for both variants (default 1)
    python bench/bench_train_gpt.py --device cuda # one device (default auto: the CPU, then the GPU)

The model is exercise 3 of ``solutions/05-transformer-backprop.ipynb``: a two-block character GPT
(token and position embeddings, pre-norm blocks with causal four-head self-attention and a GELU
MLP, a final layer norm, the output projection, the cross-entropy over padded names), 34,632
float32 parameters, minibatches of 32 names, AdamW. The notebook's own functions (``init_gpt``,
``layernorm``, ``attention``, ``layernorm_backward``, ``gelu_backward``, ``attention_backward``,
``gpt_forward``, ``linear_grads``, ``gpt_backward``, ``gpt_loss``, ``adamw``, ``learning_rate``)
and its constants are read from the notebook's cells and executed as they stand; the data cell
(the names encoded as rows of 16 positions) is executed whole. Nothing of the notebook is copied
here.

One *step* is the forward pass (``gpt_forward`` and ``gpt_loss``), the backward pass and the
update (``learning_rate`` and the notebook's ``adamw`` for every parameter, as in its
``train_by_hand``) on one minibatch drawn beforehand. The minibatches are drawn as the notebook
draws them: from the generator seeded with the notebook's seed, after ``init_gpt(2, ...)`` has
drawn the initial parameters from it; every variant starts from copies of those parameters and sees
the same minibatches in the same order. The variants:

- ``hand``: everything under ``torch.no_grad()``, the gradients from ``gpt_backward``;
- ``autograd``: the parameters require grad, ``p.grad = None``, ``loss.backward()``, the gradients
  from ``p.grad``; the same update (each new parameter from ``adamw`` is made a leaf that requires
  grad again with ``requires_grad_()``, which is no ATen operator). The notebook's own autograd run
  uses ``torch.optim.AdamW`` instead; here the variants share the update, so the ratio compares
  the forward and backward passes;
- ``hand, fast``: exercise 4's ``gpt_forward_fast`` and ``gpt_backward_fast`` (the
  forward pass keeps what the backward pass needs, the attention probabilities and the GELU's
  sigmoid among them; the backward pass recomputes none of it), the notebook's ``gpt_loss`` and
  the same update.

Before any timing each hand variant takes one step beside autograd from the same start on the
first minibatch: their gradients are compared as ``checks.cmp`` compares them (``close_enough``:
allclose, or within float rounding) and the largest difference is printed, and so is the largest
difference of the parameters after the update. If the gradients disagree, nothing is timed.

Timing and counting as in ``bench_train.py`` (``checks.cost.Tally``; ``percentile`` and
``op_breakdown`` from ``bench/measure.py``): the same ``torch.set_num_threads`` for both variants, a
warm-up, then the variants take turns in blocks of steps until each has run ``--steps`` steps, every
step timed on its own with ``time.perf_counter_ns``; medians and the 10th and 90th percentiles.
Operators are counted with a ``TorchDispatchMode`` on one step from the start, phase by phase: every
ATen operator that reaches the dispatcher, those the autograd engine runs during ``backward()``
included. Nothing is asserted; compare ratios from one run rather than absolute times across runs.

Devices: by default the CPU, then the machine's GPU where it has one (``bench/measure.py``'s
``bench_devices``, as a notebook's ``WORKBOOK_DEVICE=auto`` finds it), each with its own check of
the gradients and its own table, and with a GPU the ratios of both side by side. The parameters and
minibatches are drawn on the CPU and moved, as the notebook moves them; a step on a GPU is timed
until its queued work is done (``checks.cost.waiter``). Without a GPU the header says so.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

import nbformat
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a checkout works without `pip install -e .`

from measure import (  # noqa: E402  (bench/measure.py)
    bench_devices,
    devices_line,
    header,
    op_breakdown,
    percentile,
    side_by_side,
)

from checks import load_names, require, setting, split_dataset  # noqa: E402
from checks.compare import close_enough  # noqa: E402
from checks.cost import Tally, waiter  # noqa: E402
from checks.tolerances import ATOL, RTOL  # noqa: E402

NOTEBOOK = ROOT / "solutions" / "05-transformer-backprop.ipynb"
FUNCTIONS = {
    "init_gpt",
    "layernorm",
    "attention",
    "layernorm_backward",
    "gelu_backward",
    "attention_backward",
    "gpt_forward",
    "linear_grads",
    "gpt_backward",
    "gpt_loss",
    "adamw",
    "learning_rate",
    "layernorm_fast",  # exercise 4 (optional): the fast forward and backward passes
    "gpt_forward_fast",
    "gpt_backward_fast",
}
CONSTANTS = {
    "seed",
    "n_embd",
    "n_head",
    "head_size",
    "train_names",
    "lr_max",
    "lr_min",
    "weight_decay",
    "GELU_K",
    "GELU_C",
}
DATA_CELL = "encode"  # the cell that defines it builds Xtr, Ytr, vocab_size and block_size
N_LAYER, POOL, BLOCK_STEPS = 2, 64, 20
PHASES = ("forward", "backward", "update")


# ---------------------------------------------------------------- the notebook's code


def assigned_names(node: ast.Assign) -> set[str]:
    return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def notebook_scope() -> dict:
    """The notebook's functions and constants, and its training data, executed from its cells.

    From every code cell, in order: the top-level definitions of FUNCTIONS and the top-level
    assignments of CONSTANTS, nothing else; the data cell is executed whole (its prints
    swallowed).
    """
    nb = nbformat.read(NOTEBOOK, as_version=4)
    scope = {
        "torch": torch,
        "F": F,
        "math": math,
        "os": os,
        "require": require,
        "setting": setting,
        "load_names": load_names,
        "split_dataset": split_dataset,
    }
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        if any(isinstance(n, ast.FunctionDef) and n.name == DATA_CELL for n in tree.body):
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(tree, str(NOTEBOOK), "exec"), scope)
            continue
        keep = [
            n
            for n in tree.body
            if (isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS)
            or (isinstance(n, ast.Assign) and assigned_names(n) <= CONSTANTS)
        ]
        if keep:
            exec(compile(ast.Module(body=keep, type_ignores=[]), str(NOTEBOOK), "exec"), scope)
    missing = sorted((FUNCTIONS | CONSTANTS | {"Xtr", "Ytr", "vocab_size"}) - scope.keys())
    if missing:
        raise SystemExit(f"not found in {NOTEBOOK}: {', '.join(missing)}")
    return scope


def start_and_minibatches(nb: dict) -> tuple[dict[str, torch.Tensor], list]:
    """The initial parameters and POOL minibatches, drawn as the notebook's training cell draws."""
    g = torch.Generator().manual_seed(nb["seed"])
    start = nb["init_gpt"](N_LAYER, g)
    Xtr, Ytr = nb["Xtr"], nb["Ytr"]
    ixs = [torch.randint(0, len(Xtr), (nb["train_names"],), generator=g) for _ in range(POOL)]
    return start, [(Xtr[ix], Ytr[ix]) for ix in ixs]


def moved(start: dict[str, torch.Tensor], batches: list, device: torch.device) -> tuple[dict, list]:
    """The initial parameters and the minibatches on ``device``: the same numbers everywhere."""
    on = {name: p.to(device) for name, p in start.items()}
    return on, [(X.to(device), Y.to(device)) for X, Y in batches]


# ---------------------------------------------------------------- the two variants


class Variant:
    """One step in three phases: forward(X, Y) -> state, backward(state) -> grads, update(grads)."""

    def __init__(self, nb: dict, start: dict[str, torch.Tensor], horizon: int, kind: str):
        autograd = kind == "autograd"
        self.nb, self.kind, self.autograd, self.horizon, self.t = nb, kind, autograd, horizon, 0
        self.params = {name: p.clone().requires_grad_(autograd) for name, p in start.items()}
        self.moments = {
            name: (torch.zeros_like(p), torch.zeros_like(p)) for name, p in start.items()
        }

    def forward(self, X: torch.Tensor, Y: torch.Tensor):
        gpt_forward, gpt_loss = self.nb["gpt_forward"], self.nb["gpt_loss"]
        if self.autograd:
            logits, _ = gpt_forward(self.params, X)
            return gpt_loss(logits, Y)
        with torch.no_grad():
            if self.kind == "fast":
                logits, cache = self.nb["gpt_forward_fast"](self.params, X)
            else:
                logits, cache = gpt_forward(self.params, X)
            return X, Y, logits, cache, gpt_loss(logits, Y)

    def backward(self, state) -> dict[str, torch.Tensor]:
        if self.autograd:
            for p in self.params.values():
                p.grad = None
            state.backward()
            return {name: p.grad for name, p in self.params.items()}
        X, Y, logits, cache, _ = state
        backward = self.nb["gpt_backward_fast" if self.kind == "fast" else "gpt_backward"]
        with torch.no_grad():
            return backward(self.params, X, Y, logits, cache)

    def update(self, grads: dict[str, torch.Tensor]) -> None:
        """The loop of the notebook's train_by_hand: learning_rate, then adamw for every tensor."""
        adamw, weight_decay = self.nb["adamw"], self.nb["weight_decay"]
        self.t += 1
        t = self.t
        lr = self.nb["learning_rate"](t, self.horizon)
        with torch.no_grad():
            for name in self.params:
                m, v = self.moments[name]
                p, m, v = adamw(
                    self.params[name], grads[name], m, v, t, lr, weight_decay=weight_decay
                )
                self.params[name] = p.requires_grad_() if self.autograd else p
                self.moments[name] = (m, v)

    def step(self, X: torch.Tensor, Y: torch.Tensor) -> None:
        self.update(self.backward(self.forward(X, Y)))


VARIANTS = {"hand": "hand", "autograd": "autograd", "hand, fast": "fast"}


# ---------------------------------------------------------------- measuring


def check_gradients(nb: dict, start: dict, X, Y, kind: str) -> tuple[bool, str]:
    """One step of a hand variant (``kind``) and of autograd from the same start: do the
    gradients agree, and by how much."""
    hand, auto = Variant(nb, start, 1, kind), Variant(nb, start, 1, "autograd")
    g_hand, g_auto = hand.backward(hand.forward(X, Y)), auto.backward(auto.forward(X, Y))
    # the workbook's own judgement, as cmp would give it: allclose, or within float rounding
    close = all(close_enough(g_hand[k], g_auto[k], RTOL, ATOL) for k in start)
    diff = {k: (g_hand[k] - g_auto[k]).abs().max().item() for k in start}
    worst = max(diff, key=diff.get)
    scale = max(g_auto[k].abs().max().item() for k in start)
    hand.update(g_hand)
    auto.update(g_auto)
    after = max((hand.params[k] - auto.params[k]).abs().max().item() for k in start)
    n_targets = int((Y >= 0).sum())
    return close, (
        f"gradients on the first minibatch ({len(X)} names, {n_targets} targets), {kind} against "
        f"autograd: right for all {len(start)} tensors (as checks.cmp judges): {close}; "
        f"largest difference {diff[worst]:.1e} (in {worst}; the largest gradient entry is "
        f"{scale:.1e}); "
        f"parameters after the update differ by at most {after:.1e} (AdamW's first step is "
        f"about lr * g / (|g| + eps): on gradient entries near eps, rounding shows)"
    )


def count_phases(nb: dict, start: dict, X: torch.Tensor, Y: torch.Tensor) -> dict[str, dict]:
    """Per variant and phase, the ATen operators of one step from the start."""
    ops = {}
    for name, kind in VARIANTS.items():
        variant, phases = Variant(nb, start, 1, kind), {}
        with Tally() as counter:
            state = variant.forward(X, Y)
        phases["forward"] = counter.ops
        with Tally() as counter:
            grads = variant.backward(state)
        phases["backward"] = counter.ops
        with Tally() as counter:
            variant.update(grads)
        phases["update"] = counter.ops
        ops[name] = phases
    return ops


def time_steps(nb: dict, start: dict, batches: list, steps: int, warmup: int) -> dict:
    """Interleaved blocks of BLOCK_STEPS steps; each variant walks the same minibatches in order.
    A step on a GPU is timed until its work is done."""
    horizon = warmup + steps + BLOCK_STEPS
    wait = waiter(next(iter(start.values())).device)
    variants = {name: Variant(nb, start, horizon, kind) for name, kind in VARIANTS.items()}
    for variant in variants.values():
        for X, Y in batches[:warmup]:
            variant.step(X, Y)
    wait()
    times: dict[str, list[int]] = {name: [] for name in variants}
    while min(len(t) for t in times.values()) < steps:
        for name, variant in variants.items():  # the variants take turns, block by block
            for _ in range(BLOCK_STEPS):
                X, Y = batches[(warmup + len(times[name])) % len(batches)]
                t0 = time.perf_counter_ns()
                variant.step(X, Y)
                wait()
                times[name].append(time.perf_counter_ns() - t0)
    return times


def measured_on(nb: dict, start: dict, batches: list, steps: int, warmup: int) -> tuple:
    """On the device of ``start`` and ``batches``: each hand variant's gradients checked against
    autograd's (nothing timed if they disagree), then the steps timed and their operators
    counted."""
    X0, Y0 = batches[0]
    for kind in ("hand", "fast"):
        close, report = check_gradients(nb, start, X0, Y0, kind)
        print(report)
        if not close:
            raise SystemExit(f"the {kind} gradients disagree with autograd's: nothing timed")
    return time_steps(nb, start, batches, steps, warmup), count_phases(nb, start, X0, Y0)


def step_table(times: dict[str, list[int]], ops: dict[str, dict]) -> str:
    head = (
        f"{'variant':11s} {'median µs':>10s} {'p10 µs':>9s} {'p90 µs':>9s} {'ratio':>6s} "
        f"{'steps':>6s} {'ops':>5s} {'forward':>8s} {'backward':>9s} {'update':>7s}"
    )
    lines = [head, "-" * len(head)]
    base = percentile(times["autograd"], 50)
    for name, ts in times.items():
        n = {phase: sum(ops[name][phase].values()) for phase in PHASES}
        lines.append(
            f"{name:11s} {percentile(ts, 50):10.1f} {percentile(ts, 10):9.1f} "
            f"{percentile(ts, 90):9.1f} {percentile(ts, 50) / base:5.2f}x {len(ts):6d} "
            f"{sum(n.values()):5d} {n['forward']:8d} {n['backward']:9d} {n['update']:7d}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads, the same for both variants (default 1)",
    )
    ap.add_argument(
        "--steps", type=int, default=1000, help="timed steps per variant (default 1000)"
    )
    ap.add_argument("--quick", action="store_true", help="a tenth of the steps, for a smoke test")
    ap.add_argument(
        "--device",
        default="auto",
        help="cpu, cuda, cuda:1, mps, ... (default auto: the CPU, then the GPU where there is one)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    steps = max(BLOCK_STEPS, args.steps // 10) if args.quick else args.steps
    warmup = 5 if args.quick else 20

    devices = bench_devices(args.device)
    print(header())
    print(devices_line(devices))
    print()
    nb = notebook_scope()
    start, batches = start_and_minibatches(nb)
    n_params = sum(p.numel() for p in start.values())
    print(
        f"model:    exercise 3 of {NOTEBOOK.relative_to(ROOT).as_posix()}: {N_LAYER} blocks, "
        f"n_embd {nb['n_embd']}, {nb['n_head']} heads, {n_params:,} parameters, "
        f"minibatches of {nb['train_names']} names"
    )
    ratios, ops = {}, {}
    for device in devices:
        times, ops[device] = measured_on(nb, *moved(start, batches, device), steps, warmup)
        print()
        print(
            f"one training step on {device} (forward, backward, AdamW update), microseconds per "
            f"step ({warmup} warm-up steps, blocks of {BLOCK_STEPS}); ratio: median / autograd's "
            f"median; ops: ATen operators per step (TorchDispatchMode), then by phase:"
        )
        print(step_table(times, ops[device]))
        base = percentile(times["autograd"], 50)
        for name, ts in times.items():
            ratios.setdefault(name, {})[device] = percentile(ts, 50) / base
    if len(devices) > 1:
        print()
        print("the ratios side by side (median / autograd's median on the same device):")
        print(side_by_side("variant", ratios))
    print()
    print(f"operators per step, every variant, on {devices[0]} (TorchDispatchMode):")
    by_phase = ops[devices[0]]
    print(op_breakdown({name: sum(ph.values(), Counter()) for name, ph in by_phase.items()}))
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
