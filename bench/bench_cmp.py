"""Time ``checks.cmp`` against the lecture's four-line ``cmp`` on a (32, 64) float32 gradient.

Run from the repository root (no install needed)::

    python bench/bench_cmp.py            # the full run, about a minute
    python bench/bench_cmp.py --quick    # a tenth of the repetitions

Each case is timed per call with ``time.perf_counter_ns``, twice: with ``quiet=True`` (the
verdict alone) and with the report printed into an ``io.StringIO`` (what a learner pays to see
it). The table gives the median and the 95th percentile in microseconds, and the ratio of the
medians, checks.cmp / lecture cmp. Nothing is asserted: the numbers depend on the machine and
on how many Python objects are alive (a wrong answer that is not a plain sign, shape or NaN
error makes ``cmp`` look through the autograd graph and the live tensors).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import io
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

# a checkout works without `pip install -e .`
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import checks  # noqa: E402

N, D = 32, 64  # the batch and the width of the tensor under test


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


def percentile(sorted_ns: list[int], q: float) -> float:
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
    return percentile(ns, 50), percentile(ns, 95)


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


def simple_cases(scale: float) -> list[dict]:
    """Answers for ``a`` (and for the (32, 1) row sum ``s``) in the graph kept alive."""
    env = build_graph(retain_graph=True)
    a, s, ea = env["a"], env["s"], env["ea"]
    with torch.no_grad():
        da = s + ea * a.sum(1, keepdim=True)  # by hand: the mul path plus the exp path
        ds = a.sum(1, keepdim=True)
    r = lambda k: max(1, int(k * scale))
    rows = []
    rows += run_case("correct (by hand, rounding)", "a", da, a, r(2000))
    rows += run_case("correct (exact copy)", "a", a.grad.clone(), a, r(2000))
    rows += run_case("sign", "a", -da, a, r(500))
    rows += run_case("scale (1/32 too many)", "a", da / N, a, r(50))
    rows += run_case("shape: dropped keepdim (32,1)", "s", ds.squeeze(1), s, r(500))
    rows += run_case("transpose", "a", da.T, a, r(500))
    rows += run_case("missing-path (graph alive)", "a", s.detach().expand(N, D).clone(), a, r(50))
    return rows


def freed_graph_cases(scale: float) -> list[dict]:
    """The lecture's set-up: a plain loss.backward(), so contributions are rebuilt from retained
    grads."""
    env = build_graph(retain_graph=False)
    a, s = env["a"], env["s"]
    return run_case(
        "missing-path (graph freed)",
        "a",
        s.detach().expand(N, D).clone(),
        a,
        max(1, int(50 * scale)),
    )


def fmt(x: tuple[float, float] | None, i: int) -> str:
    return "raises" if x is None else f"{x[i]:.1f}"


def table(rows: list[dict]) -> str:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the repetitions")
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0

    print(f"date:     {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine:  {platform.platform()} ({platform.machine()}, {os.cpu_count()} CPUs)")
    print(
        f"python:   {platform.python_version()}   torch: {torch.__version__}   "
        f"torch threads: {torch.get_num_threads()}"
    )
    rows = simple_cases(scale) + freed_graph_cases(scale)
    print(f"objects:  {len(gc.get_objects())} live Python objects (what a graph diagnosis scans)")
    print(
        f"tensor:   ({N}, {D}) float32; times per call in microseconds (perf_counter_ns), "
        "'printed' = report"
    )
    print("          printed into an io.StringIO; ratio = checks.cmp median / lecture cmp median")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
