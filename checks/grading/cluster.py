"""Grading on a dask cluster: ``python -m checks.grade ... --executor dask [--scheduler ADDRESS]``.

Each submission is one task. It carries everything a worker needs: the submission's notebooks
(bytes), and, sent once to every worker, the solutions and the reference values. So a worker needs
the course installed (``pip install "backprop-workbook[grade,dask]"``) but no shared file system.
It grades in a temporary folder of its own, with the same limits and sandbox as the local
executor (decided on the worker: ``auto`` uses bubblewrap where the worker has it), and returns
the rows; only the client, on the instructor's machine, writes them into the out folder.

Without ``--scheduler`` a ``LocalCluster`` runs on loopback: one process per job, one thread each.
A task whose worker dies is retried by dask (``distributed.scheduler.allowed-failures``); when it
fails for good, its submission gets a row per notebook with the reason, and the rest go on.
On Ctrl-C the client cancels its tasks and has every worker kill their grading runs
(``run.stop_task_runs``); a task's later notebooks do not start.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from checks.grading import run
from checks.grading.grader import Grader, grade_submission
from checks.grading.judge import check_row
from checks.grading.sandbox import isolation
from checks.grading.settings import Settings


@dataclasses.dataclass
class Shared:
    """What every task needs, sent to each worker once: solution notebooks and reference values."""

    solutions: dict[str, bytes]
    references: dict[str, bytes]  # the cache file's name -> its bytes


def _files(nbs: list[Path]) -> dict[str, bytes]:
    """A submission's notebooks by their path below the folder they share (names are kept)."""
    root = Path(os.path.commonpath([p.parent for p in nbs])) if nbs else Path()
    return {str(p.relative_to(root)): p.read_bytes() for p in nbs}


def grade_task(
    sub: str, files: dict[str, bytes], settings: Settings, shared: Shared, task: str
) -> tuple[list[dict], list[str]]:
    """On a worker: write what the task carries into a temporary folder and grade it there. Its
    grading runs are known by ``task`` (the future's key), for the client's Ctrl-C."""
    settings = dataclasses.replace(settings, sandbox=isolation(settings.sandbox))
    run.TASK.name = task
    try:
        return _grade_in_folder(sub, files, settings, shared)
    finally:
        run.TASK.name = None


def _grade_in_folder(
    sub: str, files: dict[str, bytes], settings: Settings, shared: Shared
) -> tuple[list[dict], list[str]]:
    with tempfile.TemporaryDirectory(prefix="workbook-task-") as tmp:
        root = Path(tmp)
        for folder, items in (
            ("solutions", shared.solutions),
            ("cache", shared.references),
            ("sub", files),
        ):
            for name, data in items.items():
                (root / folder / name).parent.mkdir(parents=True, exist_ok=True)
                (root / folder / name).write_bytes(data)
        grader = Grader(root / "out", settings, root / "solutions", root / "cache")
        nbs = sorted(root / "sub" / name for name in files)
        return grade_submission(grader, sub, nbs, progress=lambda line: None)


def _died_rows(sub: str, nbs: list[Path], why: BaseException) -> list[dict]:
    """A row per notebook of a submission whose task failed for good (one, without notebooks)."""
    reason = (
        f"the grading worker failed ({type(why).__name__}: {str(why)[:200]}); "
        "grade it again with --executor local"
    )
    return [
        {"submission": sub, "notebook": name, **check_row("-", False, "", reason)}
        for name in [nb.name for nb in nbs] or ["-"]
    ]


def grade_on_dask(
    todo: list[tuple[str, list[Path]]],
    grader: Grader,
    settings: Settings,
    scheduler: str | None,
    record: Callable,
    shown: Callable,
    progress: Callable,
) -> None:
    """Grade ``todo`` as dask tasks; ``record`` keeps each submission's rows, ``shown``
    reports it."""
    from distributed import Client, LocalCluster, as_completed

    references = {}
    for ex in grader.exercises.values():
        # every exercise the submissions hold has had its reference run by now, and its solution
        # graded (a worker of the same set-up reads its time budget from that mark)
        for path in (grader.cache_of(ex), grader.calibration_mark(ex)):
            if path.exists():
                references[path.name] = path.read_bytes()
    shared = Shared(
        {ex.path.name: ex.path.read_bytes() for ex in grader.exercises.values()}, references
    )
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=settings.jobs,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
        progress(f"dask: a local cluster of {settings.jobs} workers at {cluster.scheduler_address}")
    client = Client(scheduler or cluster)
    try:
        on_workers = client.scatter(shared, broadcast=True)
        refused, kept = {}, {}  # a submission's notebooks refused unread (links): their rows
        for sub, nbs in todo:
            kept[sub], refused[sub] = grader.unlinked(sub, nbs, progress)
            if nbs and not kept[sub]:  # nothing to send
                record(sub, nbs, refused[sub], [])
                shown(sub, refused[sub])
        todo = [(sub, nbs) for sub, nbs in todo if not nbs or kept[sub]]
        futures = {
            client.submit(
                grade_task,
                sub,
                _files(kept[sub]),
                settings,
                on_workers,
                f"grade-{i}-{sub}",
                key=f"grade-{i}-{sub}",
                pure=False,
            ): (sub, nbs)
            for i, (sub, nbs) in enumerate(todo)
        }
        try:
            for fut in as_completed(futures):
                sub, nbs = futures[fut]
                try:
                    rows, ignored = fut.result()
                except (
                    Exception
                ) as why:  # the worker died for good (KilledWorker), or the task raised
                    rows, ignored = _died_rows(sub, nbs, why), []
                rows = refused[sub] + rows
                record(sub, nbs, rows, ignored)
                shown(sub, rows)
        # the workers kill these tasks' runs (pytest, the kernel and its children)
        except KeyboardInterrupt:
            client.cancel(list(futures))
            with contextlib.suppress(Exception):
                client.run(run.stop_task_runs, [f.key for f in futures])
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
