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

The grader hands in what this module needs (itself, as ``Setup``, and the per-submission
function ``grader.grade_on_worker``, sent to the workers by reference), so that this module does
not import the grader: the dependency goes one way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from checks.grading import run
from checks.grading.exercise import Exercise
from checks.grading.judge import check_row
from checks.grading.rows import Row
from checks.grading.sandbox import isolation
from checks.grading.settings import Settings

Todo = list[tuple[str, list[Path]]]  # each submission's name and notebooks
# on a worker, one submission graded from folders of the task's own:
# (submission, notebooks, settings, solutions, reference values, out) -> (rows, copies not graded)
# (and the hand-outs of the variants, by notebook, if any)
GradeOnWorker = Callable[
    [str, list[Path], Settings, Path, Path, Path, "dict[str, dict] | None"],
    tuple[list[Row], list[str]],
]


class Setup(Protocol):
    """What the client needs of the grader (:class:`checks.grading.grader.Grader`, which hands
    itself in: this module does not import it)."""

    exercises: dict[str, Exercise]
    handouts: dict[str, dict]

    def all_exercises(self) -> list[Exercise]: ...

    def cache_of(self, ex: Exercise) -> Path: ...

    def calibration_mark(self, ex: Exercise) -> Path: ...

    def unlinked(
        self, sub: str, nbs: list[Path], progress: Callable[[str], object] = ...
    ) -> tuple[list[Path], list[Row]]: ...


@dataclasses.dataclass
class Shared:
    """What every task needs, sent to each worker once: solution notebooks and reference values."""

    solutions: dict[str, bytes]
    references: dict[str, bytes]  # the cache file's name -> its bytes
    handouts: dict[str, dict] | None = None  # who was handed which variant, by notebook


def _files(nbs: list[Path]) -> dict[str, bytes]:
    """A submission's notebooks by their path below the folder they share (names are kept)."""
    root = Path(os.path.commonpath([p.parent for p in nbs])) if nbs else Path()
    return {str(p.relative_to(root)): p.read_bytes() for p in nbs}


def grade_task(
    sub: str,
    files: dict[str, bytes],
    settings: Settings,
    shared: Shared,
    task: str,
    grade_on_worker: GradeOnWorker,
) -> tuple[list[Row], list[str]]:
    """On a worker: write what the task carries into a temporary folder and grade it there
    (``grade_on_worker``). Its grading runs are known by ``task`` (the future's key), for the
    client's Ctrl-C."""
    settings = dataclasses.replace(settings, sandbox=isolation(settings.sandbox))
    run.TASK.name = task
    try:
        return _grade_in_folder(sub, files, settings, shared, grade_on_worker)
    finally:
        run.TASK.name = None


def _grade_in_folder(
    sub: str,
    files: dict[str, bytes],
    settings: Settings,
    shared: Shared,
    grade_on_worker: GradeOnWorker,
) -> tuple[list[Row], list[str]]:
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
        nbs = sorted(root / "sub" / name for name in files)
        return grade_on_worker(
            sub, nbs, settings, root / "solutions", root / "cache", root / "out", shared.handouts
        )


def _died_rows(sub: str, nbs: list[Path], why: BaseException) -> list[Row]:
    """A row per notebook of a submission whose task failed for good (one, without notebooks)."""
    reason = (
        f"the grading worker failed ({type(why).__name__}: {str(why)[:200]}); "
        "grade it again with --executor local"
    )
    return [
        check_row("-", False, "", reason).of(sub, name) for name in [nb.name for nb in nbs] or ["-"]
    ]


def grade_on_dask(
    todo: Todo,
    grader: Setup,
    settings: Settings,
    scheduler: str | None,
    record: Callable,
    shown: Callable,
    progress: Callable,
    grade_on_worker: GradeOnWorker,
) -> None:
    """Grade ``todo`` as dask tasks, each submission by ``grade_on_worker`` on a worker;
    ``record`` keeps each submission's rows, ``shown`` reports it."""
    shared = _shared(grader)
    client, cluster = _connect(settings, scheduler, progress)
    try:
        on_workers = client.scatter(shared, broadcast=True)
        todo, kept, refused = _unlinked(todo, grader, record, shown, progress)
        futures = {
            client.submit(
                grade_task,
                sub,
                _files(kept[sub]),
                settings,
                on_workers,
                f"grade-{i}-{sub}",
                grade_on_worker,
                key=f"grade-{i}-{sub}",
                pure=False,
            ): (sub, nbs)
            for i, (sub, nbs) in enumerate(todo)
        }
        _gather(client, futures, refused, record, shown)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _shared(grader: Setup) -> Shared:
    """The solutions and the reference values (with the calibration marks) every worker gets."""
    references = {}
    for ex in grader.all_exercises():
        # every exercise the submissions hold has had its reference run by now, and its solution
        # graded (a worker of the same set-up reads its time budget from that mark)
        for path in (grader.cache_of(ex), grader.calibration_mark(ex)):
            if path.exists():
                references[path.name] = path.read_bytes()
    return Shared(
        {ex.path.name: ex.path.read_bytes() for ex in grader.exercises.values()},
        references,
        grader.handouts,
    )


def _connect(settings: Settings, scheduler: str | None, progress: Callable) -> tuple[Any, Any]:
    """A client of the scheduler at ``scheduler``, else of a local cluster of ``settings.jobs``
    workers started here (returned too, to be closed; None with ``scheduler``)."""
    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=settings.jobs,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            preload=["checks.startup"],  # each worker skips an import none of its runs uses
        )
        progress(f"dask: a local cluster of {settings.jobs} workers at {cluster.scheduler_address}")
    return Client(scheduler or cluster), cluster


def _unlinked(
    todo: Todo, grader: Setup, record: Callable, shown: Callable, progress: Callable
) -> tuple[Todo, dict[str, list[Path]], dict[str, list[Row]]]:
    """The submissions left to send, each one's notebooks to send, and each one's rows of
    notebooks refused unread (links); a submission with nothing to send is recorded here."""
    refused, kept = {}, {}  # a submission's notebooks refused unread (links): their rows
    for sub, nbs in todo:
        kept[sub], refused[sub] = grader.unlinked(sub, nbs, progress)
        if nbs and not kept[sub]:  # nothing to send
            record(sub, nbs, refused[sub], [])
            shown(sub, refused[sub])
    return [(sub, nbs) for sub, nbs in todo if not nbs or kept[sub]], kept, refused


def _gather(
    client: Any,
    futures: dict[Any, tuple[str, list[Path]]],
    refused: dict[str, list[Row]],
    record: Callable,
    shown: Callable,
) -> None:
    """Each task's rows recorded and shown as it ends (a row per notebook where it failed for
    good); on Ctrl-C the tasks are cancelled and the workers kill their runs."""
    from distributed import as_completed

    try:
        for fut in as_completed(futures):
            sub, nbs = futures[fut]
            try:
                rows, ignored = fut.result()
            except Exception as why:  # the worker died for good (KilledWorker), or the task raised
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
