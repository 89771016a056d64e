"""Time a new drill (``checks.drill``: drawn, run, shown) and a check of a drill's answer against a
check in notebook 03 (the makemore MLP's exercise 1, at the lecture's sizes).

Run from the repository root (no install needed)::

    python bench/bench_drills.py            # 200 drills, 30 repetitions of each check
    python bench/bench_drills.py --quick    # 40 drills, 10 repetitions

Times are per call, with ``time.perf_counter_ns``; each table row gives the median and the 95th
percentile in milliseconds. A check is ``cmp(..., quiet=True)`` on a right answer (autograd's
gradient times 1.0, a new tensor) and on a wrong one (its negative: the ``sign`` diagnosis),
for every gradient a drill asks for and for eight of notebook 03's. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

# a checkout works without `pip install -e .`
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checks import cmp  # noqa: E402
from tests import makemore  # noqa: E402  (the lecture's forward pass, shared with the tests)

NOTEBOOK_03_CHECKED = ("logprobs", "probs", "counts", "logits", "h", "bndiff", "hprebn", "emb")


def percentile(ns: list[int], q: float) -> float:
    ordered = sorted(ns)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


def timed(code: str, ns: dict, reps: int) -> list[int]:
    """The time of each of ``reps`` runs of ``code`` in ``ns``, in nanoseconds."""
    compiled, out = compile(code, "<bench>", "exec"), []
    for _ in range(reps):
        start = time.perf_counter_ns()
        exec(compiled, ns)
        out.append(time.perf_counter_ns() - start)
    return out


def checks_of(ns: dict, names: list[str], reps: int) -> tuple[list[int], list[int]]:
    """Each of ``names`` checked ``reps`` times with a right answer, then with a wrong one."""
    right, wrong = [], []
    for name in names:
        ns[f"d{name}"] = ns[name].grad * 1.0
        right += timed(f"cmp({name!r}, d{name}, {name}, quiet=True)", ns, reps)
        assert ns["cmp"](name, ns[f"d{name}"], ns[name], quiet=True).ok, name
        ns[f"d{name}"] = -ns[name].grad
        wrong += timed(f"cmp({name!r}, d{name}, {name}, quiet=True)", ns, reps)
    return right, wrong


def drill_rows(count: int, reps: int) -> list[tuple[str, list[int]]]:
    """A new drill (``drill(seed=s)`` where a notebook calls it, its output kept: after the first
    wrong check it is drawn for that check's mistake), then the checks of its answers."""
    made, right, wrong = [], [], []
    for seed in range(count):
        ns: dict = {}
        exec("from checks import drill", ns)
        with contextlib.redirect_stdout(io.StringIO()):
            made += timed(f"_drill = drill(seed={seed})", ns, 1)
        r, w = checks_of(ns, ns["_drill"].answers, reps)
        right, wrong = right + r, wrong + w
    return [
        ("a new drill: drawn, run, shown", made),
        ("drill: check of a right answer", right),
        ("drill: check of a wrong one (sign)", wrong),
    ]


def notebook_rows(reps: int) -> list[tuple[str, list[int]]]:
    """Checks of notebook 03's exercise 1 at the lecture's sizes (batch 32, 3 characters of
    context, 27 letters, embeddings of 10, 64 hidden units: ``tests.makemore``), on random data
    (the cost of a check does not depend on it)."""
    g = torch.Generator().manual_seed(42)
    Xb, Yb = torch.randint(0, 27, (32, 3), generator=g), torch.randint(0, 27, (32,), generator=g)
    params = makemore.init_params()
    steps = makemore.forward(params, Xb, Yb)
    steps["loss"].backward(retain_graph=True)
    ns: dict = {**params, **steps, "cmp": cmp}
    right, wrong = checks_of(ns, list(NOTEBOOK_03_CHECKED), reps)
    return [("notebook 03: right answer", right), ("notebook 03: wrong one (sign)", wrong)]


def progress_row(reps: int) -> tuple[str, list[int]]:
    """The write of a progress file holding as many attempts as it keeps (``checks.practice``):
    what a kernel pays once at the end of each cell that ran a check."""
    from checks import practice

    attempt = {"at": "2026-12-06T02:13:44+00:00", "kind": "drill", "where": "drill 3"}
    attempt |= {"check": "h3", "ok": False, "mistake": "sign", "first_try": True, "hints": 0}
    data = practice.fresh()
    data["attempts"] = [{**attempt, "seconds": 1.5} for _ in range(practice.KEPT)]
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch) / "progress.json"
        times = []
        for _ in range(reps * 3):
            started = time.perf_counter_ns()
            practice.save(where, data)
            times.append(time.perf_counter_ns() - started)
    return f"progress file written ({practice.KEPT} attempts)", times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 drills, 10 repetitions")
    args = parser.parse_args()
    count, reps = (40, 10) if args.quick else (200, 30)
    # the checks alone: a learner's progress file is written once per cell (its own row below)
    os.environ["WORKBOOK_PROGRESS"] = "off"
    print(f"date:     {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine:  {platform.platform()} ({platform.machine()}, {os.cpu_count()} CPUs)")
    print(f"python:   {platform.python_version()}   torch: {torch.__version__}")
    (nb_right, nb_wrong), drills = notebook_rows(reps), drill_rows(count, reps)
    base = {"right": percentile(nb_right[1], 0.5), "wrong": percentile(nb_wrong[1], 0.5)}
    print(f"\n{'':38s} {'calls':>6s} {'median ms':>10s} {'p95 ms':>8s} {'vs notebook 03':>15s}")
    for label, ns in [nb_right, nb_wrong, *drills, progress_row(reps)]:
        median = percentile(ns, 0.5)
        kind = "right" if "right" in label else "wrong" if "wrong" in label else None
        ratio = f"{median / base[kind]:.2f}x" if kind and label.startswith("drill") else ""
        print(f"{label:38s} {len(ns):6d} {median:10.3f} {percentile(ns, 0.95):8.3f} {ratio:>15s}")


if __name__ == "__main__":
    main()
