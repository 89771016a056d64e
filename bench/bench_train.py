"""The makemore training step with the hand-written backward pass against the same step with \
``loss.backward()``.

Run from the repository root (no install needed beyond torch; names.txt is downloaded on
first use)::

    python bench/bench_train.py
        # the steps and checks.cmp: about two minutes on 2 cores
    python bench/bench_train.py --full
        # also the 200,000 steps of exercise 4 (twice) and pytest --nbval over
        # solutions/: about five minutes more
    python bench/bench_train.py --quick
        # a tenth of the steps, for a smoke test
    python bench/bench_train.py --threads 2
        # torch threads for every variant (default 1)
    python bench/bench_train.py --device cuda
        # the gradients alone on one device (default auto: the CPU, then the GPU)

The model is exercise 4 of ``solutions/03-makemore-backprop.ipynb``: embedding (27 x 10), linear,
batch norm, tanh, linear, cross-entropy, updated by SGD. One *step* is the forward pass, the
backward pass and the update on one minibatch drawn beforehand (drawing it is the same for every
variant and is left out). The variants:

- ``hand``: the notebook's own ``step`` function, read from the notebook and executed as it stands
  (fused cross-entropy and fused batch-norm gradients, no graph: everything under
  ``torch.no_grad()``), then the notebook's update ``p.data += -lr * grad``;
- ``autograd``: the same forward pass with the parameters requiring grad, ``p.grad = None``,
  ``loss.backward()``, then the same update;
- ``hand, tuned`` and ``autograd, tuned``: the same mathematics in fewer operations (``addmm``,
  ``var_mean``, ``rsqrt``, ``addcmul``, ``log_softmax`` and ``nll_loss``, and one
  ``torch._foreach_add_`` for the update of all seven parameters; the hand-written backward also
  reuses the two batch sums it already has for ``dbngain`` and ``dbnbias``); the autograd side gets
  the same forward pass and update, so the pair compares like with like;
- ``hand, fast``: exercise 5's ``step_fast``, read from the solution by ``tests/fast_steps.py`` (few
  operations: ``addmm``, the variance from the centred rows, the fused cross-entropy made in the
  log-softmax's storage, the fused batch-norm gradient reusing ``dbngain`` and ``dbnbias``), then
  the notebook's update, as ``hand`` and ``autograd`` do.

Then the gradients alone (no update, as a notebook compares steps): autograd's, the notebook's
``step`` and the fused step, checked against autograd's first, timed with ``checks.cost.timings``
and counted with ``checks.cost.tally`` (operators and the bytes they allocate), with the sentence
``checks.cost.saving`` says of the notebook's step against the fused one. These run on every
device ``--device`` gives (by default the CPU, then the machine's GPU where it has one:
``bench/measure.py``'s ``bench_devices``), the network and minibatch drawn on the CPU and moved, as
the notebook moves them, a GPU's times waiting for its queued work (``checks.cost.timings``); with a
GPU, the ratios of both devices side by side. Without one the header says so. The training steps
with their update are timed on the CPU.

Timing: ``torch.set_num_threads`` is the same for all variants; each variant gets its own copy of
the same initial parameters and runs a warm-up, then the variants take turns in blocks of 50 steps
(interleaved, so a change in the machine's load hits all of them) until each has run ``--steps``
steps; every step is timed on its own with ``time.perf_counter_ns`` and the table gives medians and
the 10th and 90th percentiles. Operations are counted with a ``TorchDispatchMode``: every ATen
operator that reaches the dispatcher in one step, the ones the autograd engine runs during
``backward()`` included (views such as ``.T`` and ``.view`` count as operators too).

``checks.cmp`` is timed with ``bench/measure.py``'s functions (those of ``bench_cmp.py``), on a
right and on a wrong (sign) answer. Nothing is asserted; compare ratios from one run rather than
absolute times across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a checkout works without `pip install -e .`

from measure import (  # noqa: E402  (bench/measure.py, beside this script)
    bench_devices,
    build_graph,
    cmp_table,
    count_ops,
    devices_line,
    header,
    op_breakdown,
    percentile,
    run_case,
    side_by_side,
)

from checks import load_names, require, split_dataset  # noqa: E402
from checks.compare import close_enough  # noqa: E402
from checks.cost import saving, tally, timings  # noqa: E402
from checks.tolerances import ATOL, RTOL  # noqa: E402
from tests import makemore  # noqa: E402
from tests.fast_steps import autograd_step as autograd_gradients  # noqa: E402
from tests.fast_steps import defining, fused_step  # noqa: E402

NOTEBOOK = ROOT / "solutions" / "03-makemore-backprop.ipynb"
N_EMBD, BLOCK, VOCAB, LR, SEED = 10, 3, 27, 0.1, 2147483647
NAMES = ["C", "W1", "b1", "W2", "b2", "bngain", "bnbias"]


# ---------------------------------------------------------------- the model and the four steps


def init_params(n_hidden: int) -> dict[str, torch.Tensor]:
    """Exercise 4's initialisation, from the notebook's default seed (the tests' copy of the
    lecture's init)."""
    return makemore.init_params(VOCAB, BLOCK, N_EMBD, n_hidden, SEED)


@functools.cache
def notebook_step() -> Callable:
    """The notebook's ``step``, defined once from its cell of solutions/03, its source kept where
    ``checks.cost`` reads the names its statements assign (``tests.fast_steps.defining``)."""
    return defining(NOTEBOOK, "step", require=require, n_embd=N_EMBD)["step"]


def updated(step: Callable, n_hidden: int, graph: bool = False) -> tuple[Callable, dict]:
    """``step`` (returning the loss and the gradients) bound to its own parameters, then the
    notebook's update; with ``graph``, the step runs with autograd on (its parameters require
    grad)."""
    p = init_params(n_hidden)
    parameters = [p[k] for k in NAMES]

    def run(Xb, Yb):
        with contextlib.nullcontext() if graph else torch.no_grad():
            loss, grads = step(parameters, Xb, Yb)
        with torch.no_grad():
            for q, grad in zip(parameters, grads, strict=True):
                q.data += -LR * grad
        return loss

    return run, p


def hand_step(n_hidden: int) -> tuple[Callable, dict[str, torch.Tensor]]:
    """The notebook's step, bound to its own parameters, and the notebook's update."""
    return updated(notebook_step(), n_hidden)


def autograd_step(n_hidden: int) -> tuple[Callable, dict[str, torch.Tensor]]:
    """The notebook's forward pass, loss.backward() (exercise 5's ``step_autograd``), the notebook's
    update."""
    return updated(autograd_gradients, n_hidden, graph=True)


def fast_step(n_hidden: int) -> tuple[Callable, dict[str, torch.Tensor]]:
    """The fused step (exercise 5's ``step_fast``: the notebook's mathematics made fast), then the
    notebook's update."""
    return updated(fused_step, n_hidden)


def tuned_forward(p: dict[str, torch.Tensor], Xb: torch.Tensor):
    n = Xb.shape[0]
    embcat = p["C"][Xb].view(n, -1)
    hprebn = torch.addmm(p["b1"], embcat, p["W1"])
    bnvar, bnmeani = torch.var_mean(hprebn, 0, keepdim=True, correction=1)
    bnvar_inv = torch.rsqrt(bnvar + 1e-5)
    bnraw = (hprebn - bnmeani) * bnvar_inv
    h = torch.tanh(torch.addcmul(p["bnbias"], p["bngain"], bnraw))
    logits = torch.addmm(p["b2"], h, p["W2"])
    return embcat, bnvar_inv, bnraw, h, logits


def tuned_hand_step(n_hidden: int) -> tuple[Callable, dict[str, torch.Tensor]]:
    """The same mathematics as the notebook's step in fewer operations, no graph."""
    p = init_params(n_hidden)
    C, W1, W2, bngain = p["C"], p["W1"], p["W2"], p["bngain"]
    W1T, W2T = W1.t(), W2.t()  # views: they follow the in-place updates
    order = [p[k] for k in NAMES]
    minus_one: dict[int, torch.Tensor] = {}

    def run(Xb, Yb):
        n = Xb.shape[0]
        if n not in minus_one:
            minus_one[n] = torch.full((n, 1), -1.0)
        with torch.no_grad():
            embcat, bnvar_inv, bnraw, h, logits = tuned_forward(p, Xb)
            logp = torch.log_softmax(logits, 1)
            loss = F.nll_loss(logp, Yb)
            # cross-entropy, fused: (softmax - onehot) / n
            dlogits = logp.exp_().scatter_add_(1, Yb.view(-1, 1), minus_one[n]).div_(n)
            dh = dlogits @ W2T
            dW2 = h.t() @ dlogits
            db2 = dlogits.sum(0)
            dhpreact = torch.addcmul(dh, dh, h * h, value=-1.0)  # (1 - h**2) * dh
            dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
            dbnbias = dhpreact.sum(0, keepdim=True)
            # batch norm, fused, sums reused:
            # bngain * bnvar_inv * (dy - sum(dy) / n - bnraw * sum(dy * bnraw) / (n - 1))
            dhprebn = (
                torch.addcmul(dhpreact, bnraw, dbngain, value=-1 / (n - 1))
                .sub_(dbnbias, alpha=1 / n)
                .mul_(bngain * bnvar_inv)
            )
            dembcat = dhprebn @ W1T
            dW1 = embcat.t() @ dhprebn
            db1 = dhprebn.sum(0)
            dC = torch.zeros_like(C).index_add_(0, Xb.view(-1), dembcat.view(-1, N_EMBD))
            torch._foreach_add_(order, [dC, dW1, db1, dW2, db2, dbngain, dbnbias], alpha=-LR)
        return loss

    return run, p


def tuned_autograd_step(n_hidden: int) -> tuple[Callable, dict[str, torch.Tensor]]:
    """The tuned forward pass, loss.backward(), the in-place update."""
    p = init_params(n_hidden)
    order = [p[k] for k in NAMES]

    def run(Xb, Yb):
        logits = tuned_forward(p, Xb)[-1]
        loss = F.cross_entropy(logits, Yb)
        for q in order:
            q.grad = None
        loss.backward()
        with torch.no_grad():
            torch._foreach_add_(order, [q.grad for q in order], alpha=-LR)
        return loss

    return run, p


VARIANTS = {
    "hand": hand_step,
    "autograd": autograd_step,
    "hand, fast": fast_step,
    "hand, tuned": tuned_hand_step,
    "autograd, tuned": tuned_autograd_step,
}


# ---------------------------------------------------------------- measuring


def check_same_gradients(n_hidden: int, Xb: torch.Tensor, Yb: torch.Tensor) -> float:
    """All four variants take one step from the same start: the largest difference between their
    new parameters."""
    after = []
    for make in VARIANTS.values():
        run, p = make(n_hidden)
        run(Xb, Yb)
        after.append(torch.cat([p[k].detach().flatten() for k in NAMES]))
    return max((a - after[0]).abs().max().item() for a in after[1:])


def time_steps(batch: int, n_hidden: int, steps: int, Xtr, Ytr) -> dict:
    g = torch.Generator().manual_seed(42)
    pool = [torch.randint(0, Xtr.shape[0], (batch,), generator=g) for _ in range(256)]
    batches = [(Xtr[ix], Ytr[ix]) for ix in pool]
    runs = {name: make(n_hidden)[0] for name, make in VARIANTS.items()}
    for run in runs.values():  # warm-up
        for Xb, Yb in batches[:50]:
            run(Xb, Yb)
    times: dict[str, list[int]] = {name: [] for name in runs}
    block, k = 50, 0
    while min(len(t) for t in times.values()) < steps:
        for name, run in runs.items():  # the variants take turns, block by block
            for _ in range(block):
                Xb, Yb = batches[k % len(batches)]
                k += 1
                t0 = time.perf_counter_ns()
                run(Xb, Yb)
                times[name].append(time.perf_counter_ns() - t0)
    Xb, Yb = batches[0]
    ops = {name: count_ops(make(n_hidden)[0], Xb, Yb) for name, make in VARIANTS.items()}
    return {"times": times, "ops": ops, "maxdiff": check_same_gradients(n_hidden, Xb, Yb)}


def step_table(results: list[tuple[int, int, dict]]) -> str:
    head = (
        f"{'batch':>5s} {'hidden':>6s}  {'variant':16s} {'median µs':>10s} {'p10 µs':>8s} "
        f"{'p90 µs':>8s} {'steps':>6s} {'ops':>4s}"
    )
    lines = [head, "-" * len(head)]
    for batch, hidden, r in results:
        for name, ts in r["times"].items():
            ops = sum(r["ops"][name].values())
            lines.append(
                f"{batch:5d} {hidden:6d}  {name:16s} {percentile(ts, 50):10.1f} "
                f"{percentile(ts, 10):8.1f} {percentile(ts, 90):8.1f} {len(ts):6d} {ops:4d}"
            )
        lines.append("")
    lines.append("ratios of the medians (hand / autograd), and of the operation counts:")
    for batch, hidden, r in results:
        med = {name: percentile(ts, 50) for name, ts in r["times"].items()}
        ops = {name: sum(c.values()) for name, c in r["ops"].items()}
        lines.append(
            f"  batch {batch:3d} / hidden {hidden:3d}:  "
            f"notebook's step {med['hand'] / med['autograd']:.2f}x "
            f"({ops['hand']} vs {ops['autograd']} ops)   "
            f"fast {med['hand, fast'] / med['autograd']:.2f}x ({ops['hand, fast']} ops)   "
            f"tuned {med['hand, tuned'] / med['autograd, tuned']:.2f}x "
            f"({ops['hand, tuned']} vs {ops['autograd, tuned']} ops)   "
            "largest difference between the variants' parameters after one step: "
            f"{r['maxdiff']:.1e}"
        )
    return "\n".join(lines)


def gradients_alone(batch: int, n_hidden: int, steps: int, Xtr, Ytr, device) -> dict:
    """The gradients without the update, as the notebook's exercises compare them: autograd's
    (the notebook's forward pass and ``loss.backward()``), the notebook's ``step`` and the fused
    step, on the same minibatches on ``device`` (``checks.cost``: medians of interleaved blocks,
    operators and bytes allocated per step). The fused step's gradients are checked against
    autograd's first."""
    g = torch.Generator().manual_seed(43)
    ix = torch.randint(0, Xtr.shape[0], (batch,), generator=g)
    Xb, Yb = Xtr[ix].to(device), Ytr[ix].to(device)
    p = init_params(n_hidden)
    leaves = [p[k].detach().to(device).requires_grad_() for k in NAMES]
    net = [t.detach().clone() for t in leaves]
    steps_by_name = {
        "autograd": autograd_gradients,
        "notebook's step": notebook_step(),
        "fused step": fused_step,
    }
    expected = [t.clone() for t in autograd_gradients(leaves, Xb, Yb)[1]]
    with torch.no_grad():
        for name in ("notebook's step", "fused step"):
            got = steps_by_name[name](net, Xb, Yb)[1]
            pairs = zip(got, expected, strict=True)
            if not all(close_enough(a, b, RTOL, ATOL) for a, b in pairs):  # as cmp judges
                raise SystemExit(f"the {name}'s gradients differ from autograd's: nothing timed")

    def call(name):
        f, args = steps_by_name[name], (leaves if name == "autograd" else net, Xb, Yb)
        if name == "autograd":
            return lambda: f(*args)

        def no_grad():
            with torch.no_grad():
                f(*args)

        return no_grad

    per_block = 50
    calls = {name: call(name) for name in steps_by_name}
    seconds = timings(calls, per_block, max(1, steps // per_block), 50, device=device)
    with torch.no_grad():
        costs = {n: tally(f, net, Xb, Yb) for n, f in steps_by_name.items() if n != "autograd"}
    costs["autograd"] = tally(autograd_gradients, leaves, Xb, Yb)
    return {"seconds": seconds, "costs": costs}


def gradients_table(results: list[tuple[int, int, dict]], device) -> str:
    """The gradients alone on ``device``, per batch: time, operators, bytes, ratio, and the
    saving sentence."""
    head = (
        f"{'batch':>5s} {'hidden':>6s}  {'gradients by':16s} {'median µs':>10s} {'ops':>4s} "
        f"{'kB allocated':>13s} {'/ autograd':>11s}"
    )
    lines = [f"on {device}:", head, "-" * len(head)]
    for batch, hidden, r in results:
        base = r["seconds"]["autograd"]
        for name, sec in r["seconds"].items():
            cost = r["costs"][name]
            lines.append(
                f"{batch:5d} {hidden:6d}  {name:16s} {sec * 1e6:10.1f} {cost.count:4d} "
                f"{cost.nbytes / 1e3:13.1f} {sec / base:10.2f}x"
            )
        said = saving(r["costs"]["notebook's step"], r["costs"]["fused step"], "the fused step")
        lines += [f"  the notebook's step against the fused one: {said}", ""]
    return "\n".join(lines)


def ratios_side_by_side(by_device: dict) -> str:
    """The ratios to autograd of the gradients alone, a column per device."""
    ratios: dict[str, dict] = {}
    for device, results in by_device.items():
        for batch, _, r in results:
            for name, sec in r["seconds"].items():
                ratios.setdefault(f"{batch:5d} {name}", {})[device] = sec / r["seconds"]["autograd"]
    return side_by_side("batch gradients by", ratios)


def where_the_notebook_step_loses(reps: int) -> str:
    """Two lines of the notebook's step and update against leaner ways of writing them, at
    batch 32 / hidden 200."""
    n = 32
    g = torch.Generator().manual_seed(0)
    d, Yb, rows = (
        torch.randn((n, VOCAB), generator=g),
        torch.randint(0, VOCAB, (n,), generator=g),
        torch.arange(n),
    )
    p, grad = (
        torch.randn((200, VOCAB), generator=g, requires_grad=True),
        torch.randn((200, VOCAB), generator=g),
    )

    def median(fn: Callable) -> float:
        with torch.no_grad():
            for _ in range(100):
                fn()
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter_ns()
                fn()
                ts.append(time.perf_counter_ns() - t0)
        return percentile(ts, 50)

    def by_range():
        d[range(n), Yb] -= 1

    def by_tensor():
        d[rows, Yb] -= 1

    def data_update():
        p.data += -LR * grad

    def add_update():
        p.add_(grad, alpha=-LR)

    return "\n".join(
        [
            f"  dlogits[range(n), Yb] -= 1 (the notebook)      {median(by_range):6.1f} µs   "
            f"with a tensor of row indices made once: {median(by_tensor):6.1f} µs",
            f"  p.data += -lr * grad (the notebook, per tensor) {median(data_update):6.1f} µs   "
            f"p.add_(grad, alpha=-lr): {median(add_update):6.1f} µs",
        ]
    )


def cmp_cost(scale: float) -> str:
    """checks.cmp on a right and on a wrong answer, with bench_cmp's graph and timer."""
    env = build_graph(retain_graph=True)
    a, s, ea = env["a"], env["s"], env["ea"]
    with torch.no_grad():
        da = s + ea * a.sum(1, keepdim=True)
    reps = max(20, int(2000 * scale))
    rows = run_case("right (by hand, rounding)", "a", da, a, reps)
    rows += run_case("wrong (sign)", "a", -da, a, max(10, int(500 * scale)))
    return cmp_table(rows)


def full_runs(Xtr, Ytr) -> list[str]:
    lines = []
    for name in ("hand", "autograd"):
        run, _ = VARIANTS[name](200)
        g = torch.Generator().manual_seed(SEED)
        started = time.perf_counter()
        for _ in range(200_000):
            ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
            loss = run(Xtr[ix], Ytr[ix])
            loss.log10().item()  # the notebook logs every step's loss
        seconds = time.perf_counter() - started
        lines.append(
            f"exercise 4, 200,000 steps at batch 32 / hidden 200, {name:8s}: {seconds:7.1f} s "
            f"({200_000 / seconds:,.0f} steps/s; batch drawn and loss logged every step, "
            "as in the notebook)"
        )
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "solutions/", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    last = (
        proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr.strip()[-200:]
    )
    steps = os.environ.get("WORKBOOK_STEPS", "2000 (conftest.py)")
    lines.append(
        f"pytest --nbval over solutions/ (WORKBOOK_STEPS={steps}): {seconds:.1f} s wall: {last}"
    )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads, the same for every variant (default 1)",
    )
    ap.add_argument(
        "--steps", type=int, default=3000, help="timed steps per variant and configuration"
    )
    ap.add_argument(
        "--full",
        action="store_true",
        help="also the full exercise 4 (200,000 steps) and pytest --nbval over solutions/",
    )
    ap.add_argument(
        "--device",
        default="auto",
        help="cpu, cuda, cuda:1, mps, ... for the gradients alone (default auto: the CPU, then the "
        "GPU where there is one)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a tenth of the steps and cmp repetitions, for a smoke test",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    steps = max(100, args.steps // 10) if args.quick else args.steps

    devices = bench_devices(args.device)
    print(header())
    print(devices_line(devices))
    print()

    split = split_dataset(load_names(), BLOCK)
    results = []
    for batch, hidden in [(32, 200), (512, 256)]:
        results.append((batch, hidden, time_steps(batch, hidden, steps, split.Xtr, split.Ytr)))
    print("one training step (forward, backward, update), microseconds per step:")
    print(step_table(results))
    print()
    print("the gradients alone (forward and backward, no update: checks.cost):")
    by_device = {}
    for device in devices:
        by_device[device] = [
            (batch, hidden, gradients_alone(batch, hidden, steps, split.Xtr, split.Ytr, device))
            for batch, hidden in [(32, 200), (512, 256)]
        ]
        print(gradients_table(by_device[device], device))
    if len(devices) > 1:
        print("the gradients alone, ratios to autograd side by side:")
        print(ratios_side_by_side(by_device))
        print()
    print("where the notebook's step spends time it need not (medians):")
    print(where_the_notebook_step_loses(300 if args.quick else 3000))
    print()
    print("operators per step at batch 32 / hidden 200 (TorchDispatchMode):")
    print(op_breakdown(results[0][2]["ops"]))
    print()
    print("checks.cmp on a (32, 64) float32 gradient (bench/measure.py):")
    print(cmp_cost(0.1 if args.quick else 1.0))
    if args.full:
        print()
        for line in full_runs(split.Xtr, split.Ytr):
            print(line)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
