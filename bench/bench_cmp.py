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
import datetime
import gc
import os
import platform
import sys
from pathlib import Path

import torch

# a checkout works without `pip install -e .`
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure import D, N, build_graph, cmp_table, run_case  # noqa: E402  (bench/measure.py)


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
    print(cmp_table(rows))


if __name__ == "__main__":
    main()
