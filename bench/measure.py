"""What the benches share: timing per call, percentiles, counting the operators of a step
(``count_ops``, by ``checks.cost``'s ``TorchDispatchMode``), a run's header, the devices a bench
measures on (``bench_devices``: the CPU, and the GPU where there is one), and the timing of
``checks.cmp`` against the lecture's four-line ``cmp``. A helper module beside the benches (each
imports it by name, from its own folder); nothing here is a bench of its own."""

from __future__ import annotations

import collections
import contextlib
import datetime
import io
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

# checks.cmp itself, not the learner's progress file: outside a kernel (here) every check would
# rewrite that file (about 3 ms with its 1,000 attempts kept); a kernel writes it once per cell
os.environ.setdefault("WORKBOOK_PROGRESS", "off")

import checks  # noqa: E402
from checks.cost import tally  # noqa: E402
from checks.inputs import device_named  # noqa: E402

N, D = 32, 64  # the batch and the width of the tensor checks.cmp is timed on


def count_ops(run: Callable, Xb: torch.Tensor, Yb: torch.Tensor) -> collections.Counter:
    """Every ATen operator of ``run(Xb, Yb)``, by kind (``checks.cost.tally``)."""
    return tally(run, Xb, Yb).ops


def percentile(xs: list[int], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))] / 1e3


def op_breakdown(ops: dict[str, collections.Counter]) -> str:
    names = sorted(set().union(*ops.values()), key=lambda k: (-max(c[k] for c in ops.values()), k))
    head = f"{'operator':28s}" + "".join(f"{v:>17s}" for v in ops)
    lines = [head, "-" * len(head)]
    for k in names:
        lines.append(f"{k:28s}" + "".join(f"{c[k]:17d}" for c in ops.values()))
    lines.append(f"{'total':28s}" + "".join(f"{sum(c.values()):17d}" for c in ops.values()))
    return "\n".join(lines)


def header() -> str:
    """The run's date, machine and load, Python, torch and its threads, and the command line."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join(
        [
            f"date:     {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
            f"machine:  {platform.platform()} ({platform.machine()}, {os.cpu_count()} CPUs), "
            f"load average {load} at the start",
            f"python:   {platform.python_version()}   torch: {torch.__version__}   "
            f"torch threads: {torch.get_num_threads()}",
            f"command:  python {' '.join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])}",
        ]
    )


def bench_devices(asked: str) -> list[torch.device]:
    """The devices a bench measures on: for ``"auto"`` the CPU, then the GPU where this machine has
    one (as a notebook's ``WORKBOOK_DEVICE=auto`` finds it); else the device ``asked`` names."""
    try:
        if asked != "auto":
            return [device_named(asked, "--device")]
        gpu = device_named("auto", "--device")
    except ValueError as error:  # a device this machine lacks: said in one sentence
        raise SystemExit(str(error)) from None
    return [torch.device("cpu")] + ([gpu] if gpu.type != "cpu" else [])


def devices_line(devices: list[torch.device]) -> str:
    """The header's line on the devices measured, saying so where no GPU is."""
    names = [_device_name(d) for d in devices]
    if all(d.type == "cpu" for d in devices):
        gpu = device_named("auto", "--device")
        if gpu.type == "cpu":
            names.append(f"no GPU: this machine has none that torch {torch.__version__} can use")
    return f"devices:  {'; '.join(names)}"


def side_by_side(label: str, ratios: dict[str, dict[torch.device, float]]) -> str:
    """Ratios to autograd, a line per step (``ratios``' keys, under ``label``) and a column per
    device."""
    devices = list(next(iter(ratios.values())))
    width = max(len(label), *map(len, ratios))
    lines = [f"{label:{width}s}" + "".join(f"{str(d):>12s}" for d in devices)]
    for name, by_device in ratios.items():
        lines.append(f"{name:{width}s}" + "".join(f"{by_device[d]:11.2f}x" for d in devices))
    return "\n".join(lines)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return str(device)


def lecture_cmp(s: str, dt: torch.Tensor, t: torch.Tensor, quiet: bool = False) -> bool:
    """The lecture's cmp ("Becoming a backprop ninja"), with an optional quiet mode for timing."""
    ex = torch.all(dt == t.grad).item()
    app = torch.allclose(dt, t.grad)
    maxdiff = (dt - t.grad).abs().max().item()
    if not quiet:
        print(f"{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}")
    return app


def build_graph(retain_graph: bool) -> dict[str, torch.Tensor]:
    """x (32, 64) -> a = 2x, used twice: loss = sum(rowsum(exp(a)) * a). Every intermediate keeps
    its grad."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, D, generator=g, requires_grad=True)
    a = x * 2
    ea = a.exp()
    s = ea.sum(1, keepdim=True)
    prod = s * a
    loss = prod.sum()
    for v in (a, ea, s, prod):
        v.retain_grad()
    loss.backward(retain_graph=retain_graph)
    return {"x": x, "a": a, "ea": ea, "s": s, "prod": prod, "loss": loss}


def nearest_rank(sorted_ns: list[int], q: float) -> float:
    """Nearest-rank percentile of sorted nanoseconds, in microseconds."""
    k = max(0, min(len(sorted_ns) - 1, round(q / 100 * len(sorted_ns) + 0.5) - 1))
    return sorted_ns[k] / 1e3


def time_calls(fn: Callable[[], object], reps: int, printed: bool) -> tuple[float, float] | None:
    """Median and p95 microseconds per call of ``fn``; None when it raises."""
    buf = io.StringIO()
    ns: list[int] = []
    with contextlib.redirect_stdout(buf) if printed else contextlib.nullcontext():
        try:
            for _ in range(max(1, min(10, reps // 20))):  # warm-up
                fn()
            for _ in range(reps):
                buf.seek(0)
                buf.truncate(0)
                t0 = time.perf_counter_ns()
                fn()
                ns.append(time.perf_counter_ns() - t0)
        except Exception:
            return None
    ns.sort()
    return nearest_rank(ns, 50), nearest_rank(ns, 95)


def run_case(label: str, name: str, dt: torch.Tensor, t: torch.Tensor, reps: int) -> list[dict]:
    res = checks.cmp(name, dt, t, quiet=True)
    try:
        lecture = "pass" if lecture_cmp(name, dt, t, quiet=True) else "fail"
    except Exception as exc:
        lecture = f"raises {type(exc).__name__}"
    rows = []
    for printed in (False, True):
        quiet = not printed
        ours = time_calls(lambda q=quiet: checks.cmp(name, dt, t, quiet=q), reps, printed)
        theirs = time_calls(lambda q=quiet: lecture_cmp(name, dt, t, quiet=q), reps, printed)
        rows.append(
            {
                "case": label,
                "checks": res.status,
                "lecture": lecture,
                "reps": reps,
                "mode": "printed" if printed else "quiet",
                "ours": ours,
                "theirs": theirs,
            }
        )
    return rows


def fmt(x: tuple[float, float] | None, i: int) -> str:
    return "raises" if x is None else f"{x[i]:.1f}"


def cmp_table(rows: list[dict]) -> str:
    head = [
        "case",
        "checks says",
        "lecture says",
        "reps",
        "mode",
        "cmp med µs",
        "cmp p95 µs",
        "lecture med µs",
        "lecture p95 µs",
        "ratio (med)",
    ]
    body = []
    for row in rows:
        ours, theirs = row["ours"], row["theirs"]
        ratio = f"{ours[0] / theirs[0]:.1f}x" if ours and theirs and theirs[0] > 0 else "-"
        body.append(
            [
                row["case"],
                row["checks"],
                row["lecture"],
                str(row["reps"]),
                row["mode"],
                fmt(ours, 0),
                fmt(ours, 1),
                fmt(theirs, 0),
                fmt(theirs, 1),
                ratio,
            ]
        )
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    numeric = set(range(3, len(head))) - {4}

    def line(cells):
        return "  ".join(
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(r) for r in body)])
