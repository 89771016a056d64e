"""Grading on dask (checks/grading/cluster.py): the same rows as the local executor, a resume, and a
worker that dies, on a LocalCluster of two worker processes."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from checks.grading.grader import grade
from checks.paths import NOTEBOOKS
from tests.signals import default_sigint
from tests.submissions import CLASS as SETTINGS
from tests.submissions import keep_references, options

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = pytest.mark.slow
NB2 = "02-tensor-backprop.ipynb"


def a_class(root: Path) -> list[Path]:
    """Three learners of notebook 02: one answer right, a folder with a second copy and a stray
    notebook, and a bare notebook file."""
    blank = (NOTEBOOKS / NB2).read_text()
    (root / "ann").mkdir(parents=True)
    (root / "ann" / NB2).write_text(blank.replace("dY = ...", "dY = dD.clone()", 1))
    (root / "bob" / "old").mkdir(parents=True)
    (root / "bob" / NB2).write_text(blank.replace("dY = ...", "dY = -dD", 1))
    (root / "bob" / "old" / "02-tensor-backprop-copy.ipynb").write_text(blank)
    (root / "bob" / "notes.ipynb").write_text(
        '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )
    (root / "cy.ipynb").write_text(blank)
    return [root / "ann", root / "bob", root / "cy.ipynb"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory, reference_cache):
    """The class graded locally and on dask, with the class fixtures' settings and the session's
    reference values of notebook 02."""
    root = tmp_path_factory.mktemp("cluster")
    subs = a_class(root / "subs")
    cache = reference_cache
    local = grade(subs, root / "local", SETTINGS, progress=lambda s: None, cache=cache)
    said: list[str] = []
    on_dask = grade(
        subs, root / "dask", SETTINGS, progress=said.append, cache=cache, executor="dask"
    )
    return root, subs, cache, local, on_dask, said


def test_dask_gives_the_local_executors_rows_byte_for_byte(graded):
    root, _, _, local, on_dask, said = graded
    assert local == on_dask and len(local) == 22 + 22 + 1 + 22
    assert (root / "local" / "grades.csv").read_bytes() == (
        root / "dask" / "grades.csv"
    ).read_bytes()
    assert (root / "local" / "report.md").read_bytes() == (root / "dask" / "report.md").read_bytes()
    assert any(s.startswith("dask: a local cluster of 2 workers at tcp://127.0.0.1:") for s in said)
    passed = {(r.submission, r.check) for r in on_dask if r.passed}
    assert passed == {("ann", "ex1/dY")}
    bob = {r.check: r for r in on_dask if r.submission == "bob"}
    assert bob["ex1/dY"].mistake == "sign" and "not one of the exercises" in bob["-"].reason
    assert (
        "02-tensor-backprop-copy.ipynb (graded: 02-tensor-backprop.ipynb)"
        in (root / "dask" / "report.md").read_text()
    )


def test_dask_resumes_where_it_stopped(graded):
    root, subs, cache, _, on_dask, _ = graded
    done = sorted((root / "dask" / ".done").glob("*.json"))
    assert len(done) == 3
    done[0].unlink()  # as if the run had stopped before this submission
    said: list[str] = []
    again = grade(subs, root / "dask", SETTINGS, progress=said.append, cache=cache, executor="dask")
    assert "resuming: 2 of 3 submissions already graded" in said
    assert sum(s.startswith("[3/3]") for s in said) == 1 and again == on_dask


def _executing(dask_worker) -> list[str]:
    """The keys of the tasks a dask worker runs now (``Client.run`` passes the worker)."""
    return [str(ts.key) for ts in dask_worker.state.executing]


def test_a_worker_that_dies_gives_its_submission_a_row_and_the_rest_finish(graded):
    root, subs, cache, local, _, _ = graded
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            preload=["checks.startup"],  # as docs/grading.md starts an instructor's workers
        )
    watcher = distributed.Client(cluster)
    pids = watcher.run(os.getpid)
    killed: list[int] = []

    def kill_bobs_worker() -> None:
        # the worker that runs bob's task, not one that only holds it queued behind another
        # learner's: killing that one would fail the other learner's task too
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            for worker, keys in watcher.run(_executing).items():
                if any("-bob" in k for k in keys) and worker in pids:
                    time.sleep(1.0)  # let it start the notebook
                    os.kill(pids[worker], signal.SIGKILL)
                    killed.append(pids[worker])
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=kill_bobs_worker, daemon=True)
    thread.start()
    try:
        rows = grade(
            subs,
            root / "killed",
            SETTINGS,
            progress=lambda s: None,
            cache=cache,
            executor="dask",
            scheduler=cluster.scheduler_address,
        )
    finally:
        thread.join(timeout=5)
        watcher.close()
        cluster.close()
    assert killed
    bob = [r for r in rows if r.submission == "bob"]
    assert len(bob) == 3 and all(
        not r.passed and "the grading worker failed (KilledWorker" in r.reason for r in bob
    )
    assert [r for r in rows if r.submission != "bob"] == [r for r in local if r.submission != "bob"]


def processes_under(folder: Path) -> list[str]:
    """The command lines of the processes that name ``folder`` (test runners,
    kernels, sandboxes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(folder) in cmd:
                found.append(f"{entry.name}: {cmd[:160]}")
    return found


@pytest.mark.skipif(
    not Path("/proc").is_dir(), reason="needs /proc to find the processes left behind"
)
@pytest.mark.parametrize("executor", ["dask", "local"])
def test_ctrl_c_leaves_no_test_runner_or_kernel_behind(graded, tmp_path, executor):
    """Ctrl-C in the terminal (SIGINT to the grader's process group, dask's workers included) while
    two learners' kernels sit in a 200 s cell (the cell timeout: 45 s): the grader exits, and
    within seconds nothing it started (pytest, the sandbox, the kernel) is left running."""
    import shutil
    import subprocess
    import sys

    root, _, cache, _, _, _ = graded
    blank = (NOTEBOOKS / NB2).read_text()
    subs = []
    for name in ("dora", "eli"):
        (tmp_path / "subs" / name).mkdir(parents=True)
        slow = blank.replace("dY = ...", "import time\\ntime.sleep(200)\\ndY = dD.clone()", 1)
        (tmp_path / "subs" / name / NB2).write_text(slow)
        subs.append(tmp_path / "subs" / name)
    out = tmp_path / "out"
    # short: the kernels' sockets live under it
    scratch = Path(tempfile.mkdtemp(prefix="wbc-", dir="/tmp"))
    # the same settings: the reference values and the solution's calibration are kept
    keep_references(cache, out / ".reference", Path(NB2).stem)
    cmd = [sys.executable, "-m", "checks.grade", *map(str, subs), "--out", str(out)]
    cmd += ["--executor", executor, "--jobs", "2", *options(SETTINGS)]
    # every folder the runs make, so every process names it
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 180
        kernels = ("ipykernel", "checks.grading.sandbox")  # as the sandbox's launcher starts it
        while len([p for p in processes_under(scratch) if any(k in p for k in kernels)]) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, processes_under(scratch)
            time.sleep(0.5)
        time.sleep(2)
        os.killpg(proc.pid, signal.SIGINT)
        text, _ = proc.communicate(timeout=90)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert "stopped: 0 of 2 submissions graded" in text, text[-3000:]
    deadline = time.monotonic() + 15
    while processes_under(scratch) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = processes_under(scratch)
    for line in left:  # do not leave them to the rest of the suite
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    shutil.rmtree(scratch, ignore_errors=True)
    assert not left, left
