"""Settings for every pytest run (the nbval run over solutions/ included) and its workers."""

import os

# The training loops run WORKBOOK_STEPS steps: a short run under test (the full runs are longer:
# 200,000 steps in 03, 20,000 in 04, 10,000 in 05). Under nbval a loop's outputs, and what follows
# from them, are not compared (the cells are nbval-ignore-output; the trained network's last check
# keeps its verdicts, its differences masked), so 200 steps run every line a full run runs;
# tests/test_own_steps.py trains the solutions' networks for 300 and 3,000 steps and checks them.
os.environ.setdefault("WORKBOOK_STEPS", "200")
# no progress file (checks.practice) in the user's cache from the suite's checks: the tests of it
# name their own
os.environ.setdefault("WORKBOOK_PROGRESS", "off")

try:  # the suite draws the same examples on every run: a red run is a defect, found again at will
    from hypothesis import settings as _hypothesis

    _hypothesis.register_profile("workbook", derandomize=True, database=None)
    _hypothesis.register_profile("explore")  # HYPOTHESIS_PROFILE=explore: new draws each run
    _hypothesis.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "workbook"))
except ImportError:  # hypothesis is in [dev]; the notebooks' nbval run needs none of it
    pass


def pytest_xdist_auto_num_workers(config) -> int | None:
    """``-n auto``: one worker more than the CPUs this process may use (unless
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says). A good part of the suite waits (on a kernel to start, a
    cell's time limit, a browser, pip): on 2 CPUs, two workers left 77-81 CPU-seconds of a full
    run idle, three 14-33."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cpus or 1) + 1


def pytest_collection_modifyitems(items: list) -> None:
    """The files that hold a slow test (the ``slow`` marker) run first, then the notebooks under
    nbval (each a kernel's whole run), then the rest, each file's tests in their own order: under
    ``--dist loadfile`` (and ``--no-loadscope-reorder``, which keeps this order) the workers start
    on the long files, and the short ones fill the end of the run instead of a long file running
    alone on one worker while the others sit idle."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (item.path not in slow, item.path.suffix != ".ipynb"))
