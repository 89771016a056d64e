"""The whole run: the reference runs, then every submission through load, assemble, run and
judge, locally (threads) or on dask (:mod:`checks.grading.cluster`), into the reports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, as_completed, wait
from pathlib import Path

import torch

from checks.grading import variants
from checks.grading.assemble import NAMES, STATE, UNSET, Plan, assemble, same_value
from checks.grading.cluster import grade_on_dask
from checks.grading.exercise import (
    Exercise,
    Unreadable,
    course,
    exercise_for,
    find_notebooks,
    hints_shown,
    learner_cells,
    link_problem,
)
from checks.grading.facts import VERSION as FACTS_VERSION
from checks.grading.judge import check_row, judge_values
from checks.grading.novalue import MISSING, NoValue
from checks.grading.reports import write_reports
from checks.grading.review import autograd_uses, listed, source_reviews
from checks.grading.rows import Row
from checks.grading.run import STOPPING, Run, first_error, run_notebook, stop_all
from checks.grading.sandbox import isolation
from checks.grading.settings import (
    NONE,
    NOTEBOOK_TIMEOUT,
    ROWS,
    SOLUTION_SUBMISSION,
    Settings,
    SetupError,
    checks_version,
)
from checks.grading.similarity import similar_pairs
from checks.hints import HINTS
from checks.paths import PACKAGE, SOLUTIONS, cache_dir, class_wheel
from checks.variants import Variant, made_of


def refused_rows(sub: str, nb: Path, why: str, exercises: dict[str, Exercise]) -> list[Row]:
    """A notebook refused unread: a row per check of the exercise it is named like, else one."""
    ex = exercises.get(nb.name)
    return [check_row(c, False, "", why).of(sub, nb.name) for c in (ex.checks if ex else ["-"])]


def replace_whole(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a file beside ``path``, then put it in ``path``'s place in one step: a grader
    reading the cache at the same moment (another run, a self-check) sees the old file or the
    new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def one_at_a_time(path: Path):
    """Hold ``path``'s lock: of the graders that share a cache (a class run and a self-check, the
    test files of one session), one makes a reference run or a calibration while the others wait,
    then find its file. Where there is no ``fcntl`` (Windows), each makes its own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Grader:
    def __init__(
        self,
        out: Path,
        settings: Settings,
        solutions: Path = SOLUTIONS,
        cache: Path | None = None,
        handouts: dict[str, dict] | None = None,
    ) -> None:
        self.out, self.settings, self.solutions = out, settings, solutions
        self.cache = cache or out / ".reference"  # reference values, kept between runs
        self.exercises, self.practice = course(solutions)
        # who was handed which variant, by notebook (its file name; grading.variants)
        self.handouts = handouts or {}
        self.variants: dict[Variant, Exercise] = {}  # the variants' solutions met so far
        self._refs: dict[Path, dict] = {}
        self._environment: str | None = None
        self.refused: dict[Path, str] = {}  # notebooks refused unread (links): why
        # kept out of a sandbox even inside what it may read (the hint ladders hold the solution
        # lines)
        self.hidden = [solutions, out, self.cache, HINTS]

    def cache_of(self, ex: Exercise) -> Path:
        """The file that keeps ``ex``'s reference values for these settings (and versions of the
        graph facts and of the rows: the rows of version 5 need the solution's costs)."""
        s = self.settings
        versions = f"sealed/{FACTS_VERSION}/rows {ROWS}"
        key = hashlib.sha256(
            (ex.path.read_text() + f"{s.seed}/{s.batch}/{s.steps}/{versions}").encode()
        ).hexdigest()[:16]
        return self.cache / f"{ex.path.stem}-{key}.pt"

    def reference(self, ex: Exercise) -> dict:
        if ex.path not in self._refs:
            with one_at_a_time(self.cache_of(ex)):
                self._refs[ex.path] = self._reference_values(ex)
        return self._refs[ex.path]

    def exercise_of(self, submission: str, path: Path) -> tuple[Exercise | None, str]:
        """The exercise ``submission``'s notebook is graded against (a variant's, for a copy of
        a notebook that has variants), and what its rows say of the variant."""
        ex = exercise_for(path, self.exercises)
        if ex is None or not variants.has_variants(ex.name):
            return ex, ""
        record = self.handouts.get(ex.name)
        got = variants.assigned(record, submission, path, ex.name)
        if self.handouts and record is None:  # hand-outs of other notebooks only
            said = "; ".join(x for x in (got.note, variants.no_handout(ex.name)) if x)
            got = dataclasses.replace(got, note=said)
        if got.variant is None:
            return ex, got.note
        if got.variant not in self.variants:  # its solution generated once per grader
            folder = self.cache / "variants"
            with one_at_a_time(folder / "made"):
                self.variants[got.variant] = variants.variant_exercise(
                    got.variant, self.solutions, folder
                )
        ex, note = self.variants[got.variant], got.note
        handed = made_of(record, got.learner) if record and got.learner else None
        if handed is not None and handed != ex.path.parent.name:
            note = "; ".join(x for x in (note, variants.CHANGED) if x)
        return ex, note

    def all_exercises(self) -> list[Exercise]:
        """The exercises of the solutions, then the variants' met so far."""
        return [*self.exercises.values(), *self.variants.values()]

    def _reference_values(self, ex: Exercise) -> dict:
        """``ex``'s reference values: from the cache, else from a run of the solution (cached)."""
        cache = self.cache_of(ex)
        if cache.exists():
            return torch.load(cache, weights_only=True)
        # the instructor's own notebook: it needs no sandbox
        work = self.out / ".work" / f"reference-{cache.stem}"
        run = run_notebook(
            assemble(ex, None), work, dataclasses.replace(self.settings, sandbox="none")
        )
        # an answer recorded without a value (or none recorded) is never cached
        missing = [c for c in ex.checks if isinstance(run.values.get(c, MISSING), NoValue)]
        if missing or run.fault or run.cell_errors or len(run.states) < len(ex.answers):
            lacks = f"recorded no value for {listed(missing)}" if missing else "failed"
            raise SetupError(
                f"the reference run of {ex.name} (the instructor's solution) {lacks}: "
                f"{first_error(run, assemble(ex, None))}. Nothing was graded or cached."
            )
        values, last = dict(run.values), {}
        # a tensor unchanged since the last point is kept once
        for k, st in sorted(run.states.items()):
            st = {n: last[n] if same_value(last.get(n, UNSET), v) else v for n, v in st.items()}
            values[STATE + str(k)], values[NAMES + str(k)] = st, list(st)
            last.update(st)
        replace_whole(cache, lambda tmp: torch.save(values, tmp))
        shutil.rmtree(work, ignore_errors=True)  # its notebook holds the solutions
        return values

    def grade_notebook(self, submission: str, path: Path) -> list[Row]:
        return self._graded(submission, path)[0]

    def _graded(
        self, submission: str, path: Path, ex: Exercise | None = None
    ) -> tuple[list[Row], Run | None, Plan | None]:
        """A notebook's rows (against ``ex``, else the exercise it is a copy of), with the run and
        the grading notebook they came from (None where nothing ran: a notebook of no exercise,
        one that cannot be read)."""
        variant = ""
        if ex is None:
            ex, variant = self.exercise_of(submission, path)
        if ex is None and exercise_for(path, self.practice) is not None:
            return [], *NONE  # practice, not an exercise: no rows
        if ex is None:
            why = f"not one of the exercises ({', '.join(self.exercises)})"
            return [check_row("-", False, "", why).of(submission, path.name)], *NONE
        try:
            learner = learner_cells(ex, path)
        except Unreadable as why:
            return [
                check_row(c, False, "", str(why)).of(submission, ex.name) for c in ex.checks
            ], *NONE
        ref = self.reference(ex)
        plan = assemble(ex, learner, ref)
        work = self.out / ".work" / hashlib.sha256(f"{submission}/{path}".encode()).hexdigest()[:16]
        run = run_notebook(plan, work, self.budget(ex), self.hidden)
        sources = {c: learner.get(a.index) or "" for a in ex.answers for c in a.checks}
        reviews = source_reviews(ex, learner)
        for cell, calls in run.autograd.items():  # seen at run time: the handed-out cell runs none
            for a in ex.answers:
                if set(plan.learner[cell]) & set(a.checks) and not autograd_uses(a.template):
                    why = f"the cell ran autograd ({', '.join(dict.fromkeys(calls))})"
                    reviews.update({c: reviews.get(c, why) for c in a.checks})
        judged = judge_values(ex, ref, run, plan.concerns, self.settings, sources, reviews)
        said: dict[str, str] = dict.fromkeys(ex.checks, variant) if variant else {}
        hints = hints_shown(ex, path)
        for cell, dropped in run.truncated.items():
            for check in plan.learner.get(cell, []):
                cut = f"the grader cut {dropped} outputs of the cell (too many to send)"
                said[check] = "; ".join(x for x in (said.get(check), cut) if x)
        rows = [
            dataclasses.replace(
                r,
                submission=submission,
                notebook=ex.name,
                hints=hints.get(r.check, ""),
                note="; ".join(x for x in (r.note, said.get(r.check)) if x),
            )
            for r in judged
        ]
        shutil.rmtree(work, ignore_errors=True)
        return rows, run, plan

    def unlinked(
        self, sub: str, nbs: list[Path], progress: Callable[[str], object] = print
    ) -> tuple[list[Path], list[Row]]:
        """The notebooks of ``nbs`` to grade, and the rows of those refused unread (links)."""
        rows = []
        for nb in nbs:
            if nb in self.refused:
                progress(f"{sub}: {nb.name}: {self.refused[nb]}")
                rows += refused_rows(sub, nb, self.refused[nb], self.exercises)
        return [nb for nb in nbs if nb not in self.refused], rows

    def calibrate(self, ex: Exercise, progress: Callable[[str], object] = print) -> None:
        """Grade the instructor's own solution through the very pipeline a learner's notebook
        takes (sandbox, kernel, hand-ins, records): anything short of full marks is a broken
        set-up, raised as ``SetupError`` with the kernel's first error before any learner runs.
        A pass is remembered for exactly this solution, package, Python and settings."""
        mark = self.calibration_mark(ex)
        with one_at_a_time(mark):
            if not mark.exists():
                self._calibrate(ex, mark, progress)

    def _calibrate(self, ex: Exercise, mark: Path, progress: Callable[[str], object]) -> None:
        progress(f"grading the solution {ex.name} as a submission (it must score full marks)")
        rows, run, plan = self._graded(SOLUTION_SUBMISSION, ex.path, ex)
        bad = [r for r in rows if not r.passed]
        if bad:
            cause = first_error(run, plan) if run is not None and plan is not None else ""
            raise SetupError(
                f"the instructor's solution {ex.name}, graded as a learner's notebook is, scores "
                f"{len(rows) - len(bad)} / {len(rows)}: {cause or bad[0].check + ': '}"
                f"{'' if cause else bad[0].reason}. Nothing was graded: fix the set-up "
                "(the data, the package inside the sandbox) and run again."
            )
        kept = {"solution": ex.name, "checks": len(rows), "seconds": round(run.seconds, 1)}
        replace_whole(mark, lambda tmp: tmp.write_text(json.dumps(kept) + "\n"))

    def calibration_mark(self, ex: Exercise) -> Path:
        """The file that says ``ex``'s solution passed through this very set-up, and how long."""
        return self.cache / f"{ex.path.stem}-{self.environment(ex)}.calibrated"

    def budget(self, ex: Exercise) -> Settings:
        """The settings a learner's run of ``ex`` takes: the instructor's notebook timeout, else
        one scaled from the solution's own run through the same pipeline (5 times it, plus 120 s,
        at most ``NOTEBOOK_TIMEOUT``), so that a notebook that sleeps costs minutes, not a quarter
        of an hour."""
        if self.settings.notebook_timeout is not None:
            return self.settings
        mark = self.calibration_mark(ex)
        try:
            seconds = float(json.loads(mark.read_text())["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            return self.settings  # not calibrated yet (the calibration run itself)
        limit = int(min(NOTEBOOK_TIMEOUT, 5 * seconds + 120))
        return dataclasses.replace(self.settings, notebook_timeout=limit)

    def environment(self, ex: Exercise | None = None) -> str:
        """What a run's results depend on besides a submission: the solutions (or ``ex``'s), the
        package's code and version, the Python, the sandbox and the settings (not ``jobs``)."""
        if self._environment is None:
            h = hashlib.sha256(f"{sys.executable}\n{checks_version()}\n".encode())
            for p in sorted(PACKAGE.rglob("*.py")):
                h.update(str(p.relative_to(PACKAGE)).encode() + p.read_bytes())
            s = dataclasses.asdict(self.settings)
            s.pop("jobs")
            h.update(json.dumps(s, sort_keys=True).encode())
            self._environment = h.hexdigest()
        h = hashlib.sha256(self._environment.encode())
        for e in [ex] if ex is not None else self.exercises.values():
            h.update(e.name.encode() + e.path.read_bytes())
        return h.hexdigest()[:16]


def submissions_of(paths: list[Path]) -> tuple[list[tuple[str, list[Path]]], dict[Path, str]]:
    """Each submission's name and notebooks, and the notebooks refused unread (links: why)."""
    subs, refused = [], {}
    for p in paths:
        name = p.name if p.is_dir() else p.stem
        nbs = find_notebooks(p)
        subs.append((name, nbs))
        refused.update({nb: why for nb in nbs if (why := link_problem(nb, p))})
    return subs, refused


def grade(
    paths: list[Path],
    out: Path,
    settings: Settings,
    solutions: Path = SOLUTIONS,
    progress=print,
    cache: Path | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    handout: Path | list[Path] | None = None,
) -> list[Row]:
    """Grade every submission into ``out`` (resumable) and return all rows. Only the exercises that
    the submissions hold get a reference run; ``cache`` keeps reference values between runs.
    ``executor`` "dask" grades on a dask cluster (``scheduler``'s address, else a local one).
    ``handout``: the hand-out (or hand-outs, one per notebook) of the variants, who is graded
    against which."""
    try:  # before anything is written
        folders = [] if handout is None else [handout] if isinstance(handout, Path) else handout
        records = variants.read_handouts(folders)
    except variants.HandoutUnreadable as why:
        raise SetupError(f"{why}: nothing was graded") from None
    out = out.resolve()  # the grading runs in other working folders: relative paths would break
    paths = [Path(os.path.abspath(p)) for p in paths]  # links kept: each is judged, not followed
    out.mkdir(parents=True, exist_ok=True)
    requested = settings  # a dask worker decides on its own sandbox
    settings = dataclasses.replace(settings, sandbox=isolation(settings.sandbox))
    _warn_if_unsandboxed(settings, progress)
    grader = Grader(out, settings, solutions.resolve(), cache, records)
    done_dir = out / ".done"
    done_dir.mkdir(exist_ok=True)
    subs, grader.refused = submissions_of(paths)
    needed = _needed_exercises(grader, subs)
    salts = _salts(grader.environment(), records, subs)
    todo = [(s, nbs) for s, nbs in subs if not (done_dir / _key(s, nbs, salts[s])).exists()]
    books = _Books(done_dir, salts, len(subs), len(subs) - len(todo), progress)
    STOPPING.clear()
    try:
        prepare(grader, needed, progress)
        if len(todo) < len(subs):
            progress(f"resuming: {len(subs) - len(todo)} of {len(subs)} submissions already graded")
        if executor == "dask":
            grade_on_dask(
                todo,
                grader,
                requested,
                scheduler,
                books.record,
                books.shown,
                progress,
                grade_on_worker,
            )
        else:
            _grade_locally(grader, todo, books, progress)
    except KeyboardInterrupt:
        _report_stopped(subs, out, salts, settings, progress)
        raise
    rows, ignored = _recorded(subs, done_dir, salts)
    read = [(s, [nb for nb in nbs if nb not in grader.refused]) for s, nbs in subs]
    write_reports(rows, out, ignored, settings, similar_pairs(read, grader.exercises))
    return rows


def _warn_if_unsandboxed(settings: Settings, progress: Callable[[str], object]) -> None:
    """Say so when learner code will run without a sandbox."""
    if settings.sandbox == "none":
        progress(
            "no sandbox: learner code runs as you and can read what you can "
            "(see docs/grading.md, Isolation)"
        )


def _needed_exercises(grader: Grader, subs: list[tuple[str, list[Path]]]) -> list[Exercise]:
    """The exercises that the submissions' notebooks (those not refused) are graded against: the
    solutions' and the variants'."""
    needed = {
        ex.path
        for sub, nbs in subs
        for nb in nbs
        if nb not in grader.refused and (ex := grader.exercise_of(sub, nb)[0])
    }
    return [ex for ex in grader.all_exercises() if ex.path in needed]


@dataclasses.dataclass
class _Books:
    """A grading run's book-keeping: each submission's rows kept in ``done_dir`` (by its salt),
    and a progress line per submission graded, with the pace of this run."""

    done_dir: Path
    salts: dict[str, str]  # by submission
    total: int  # submissions
    before: int  # submissions graded by an earlier run
    progress: Callable[[str], object]
    started: float = dataclasses.field(default_factory=time.monotonic)
    finished: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.finished = self.before

    def record(self, sub: str, nbs: list[Path], rows: list[Row], ignored: list[str]) -> None:
        """Keep a submission's rows whole, in the out folder only (atomic: all or nothing)."""
        tmp = self.done_dir / (_key(sub, nbs, self.salts[sub]) + ".tmp")
        tmp.write_text(json.dumps({"rows": [r.json() for r in rows], "ignored": ignored}))
        tmp.replace(self.done_dir / _key(sub, nbs, self.salts[sub]))

    def shown(self, sub: str, rows: list[Row]) -> None:
        """Say that ``sub`` is graded: how many of its checks pass, and the run's pace."""
        self.finished += 1
        passed = sum(r.passed for r in rows)
        rate = (self.finished - self.before) / max(1e-9, (time.monotonic() - self.started) / 60)
        self.progress(
            f"[{self.finished}/{self.total}] {sub}: {passed}/{len(rows)} checks pass "
            f"({rate:.1f} submissions/min)"
        )


def _grade_locally(
    grader: Grader,
    todo: list[tuple[str, list[Path]]],
    books: _Books,
    progress: Callable[[str], object],
) -> None:
    """Grade ``todo`` in threads of this process (``jobs`` of them), each submission kept and
    shown as it is done; on Ctrl-C every run under way is killed."""
    with ThreadPoolExecutor(max_workers=grader.settings.jobs) as pool:
        try:
            futures = [
                pool.submit(_grade_and_keep, grader, books, s, nbs, progress) for s, nbs in todo
            ]
            for fut in as_completed(futures):
                books.shown(*fut.result())
        except KeyboardInterrupt:
            stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _grade_and_keep(
    grader: Grader, books: _Books, sub: str, nbs: list[Path], progress: Callable[[str], object]
) -> tuple[str, list[Row]]:
    """One submission graded and kept (not when Ctrl-C cut it short: it is graded again next
    time); its name and rows."""
    rows, ignored = grade_submission(grader, sub, nbs, progress)
    if STOPPING.is_set():
        return sub, []  # cut short by Ctrl-C: graded again next time
    books.record(sub, nbs, rows, ignored)
    return sub, rows


def _report_stopped(
    subs: list[tuple[str, list[Path]]],
    out: Path,
    salts: dict[str, str],
    settings: Settings,
    progress: Callable[[str], object],
) -> None:
    """After Ctrl-C: the reports of the submissions graded so far, and how many those are."""
    done_dir = out / ".done"
    rows, ignored = _recorded(subs, done_dir, salts)
    write_reports(rows, out, ignored, settings)
    done = sum((done_dir / _key(s, nbs, salts[s])).exists() for s, nbs in subs)
    progress(f"stopped: {done} of {len(subs)} submissions graded; reports written for those")


def grade_on_worker(
    sub: str,
    nbs: list[Path],
    settings: Settings,
    solutions: Path,
    cache: Path,
    out: Path,
    handouts: dict[str, dict] | None = None,
) -> tuple[list[Row], list[str]]:
    """One submission graded on a dask worker (:mod:`checks.grading.cluster` is handed this, by
    reference), in folders of the task's own: the solutions, the reference values and ``out``;
    no progress lines."""
    grader = Grader(out, settings, solutions, cache, handouts)
    return grade_submission(grader, sub, nbs, progress=lambda line: None)


def prepare(grader: Grader, exercises: list[Exercise], progress: Callable[[str], object]) -> None:
    """Before any learner: each exercise's reference run (or its cached values), then the
    instructor's solution graded as a submission (``Grader.calibrate``); the exercises side by
    side, ``jobs`` at a time. A broken set-up raises the first exercise's ``SetupError`` once the
    runs under way are done; on Ctrl-C every run under way is killed."""
    s = grader.settings
    for ex in exercises:
        variant = any(ex is v for v in grader.variants.values())
        name = ex.name + (f" (variant {ex.path.parent.name})" if variant else "")
        if grader.cache_of(ex).exists():
            progress(f"reference of {name}: from the cache ({grader.cache_of(ex).parent})")
        else:
            progress(f"reference run of {name} (seed {s.seed}, batch {s.batch}, {s.steps} steps)")
    with ThreadPoolExecutor(max_workers=max(1, min(s.jobs, len(exercises)))) as pool:
        try:
            futures = [pool.submit(_set_up, grader, ex, progress) for ex in exercises]
            wait(futures, return_when=FIRST_EXCEPTION)
            for fut in futures:
                fut.cancel()  # those not started, after a broken set-up
            for fut in futures:
                if not fut.cancelled():
                    fut.result()
        except KeyboardInterrupt:
            stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _set_up(grader: Grader, ex: Exercise, progress: Callable[[str], object]) -> None:
    """``ex``'s reference values, then its solution's pass through the learner's pipeline."""
    grader.reference(ex)
    grader.calibrate(ex, progress)


def grade_submission(
    grader: Grader, sub: str, nbs: list[Path], progress=print
) -> tuple[list[Row], list[str]]:
    """One submission's rows, and its copies not graded ("file (graded: file)")."""
    rows = []
    if not nbs:
        rows.append(check_row("-", False, "", "no notebook in this submission").of(sub, "-"))
    nbs, refused = grader.unlinked(sub, nbs, progress)
    rows += refused
    chosen, ignored = one_copy_each(nbs, grader.exercises)
    for other, kept in ignored:
        progress(
            f"{sub}: {other.name} is another copy of {kept.name}'s exercise: "
            f"only {kept.name} is graded"
        )
    for nb in chosen:
        rows += grader.grade_notebook(sub, nb)
    if nbs and not rows:  # practice notebooks alone: a row says so, never a silent absence
        why = f"no exercise in this submission, only practice ({', '.join(p.name for p in nbs)})"
        rows.append(check_row("-", False, "", why).of(sub, "-"))
    return rows, [f"{o.name} (graded: {k.name})" for o, k in ignored]


def one_copy_each(
    nbs: list[Path], exercises: dict[str, Exercise]
) -> tuple[list[Path], list[tuple[Path, Path]]]:
    """The notebooks to grade, one per exercise, and the (ignored, graded) other copies.

    Of several copies of one exercise in a submission, the one named exactly like the exercise is
    graded; without one, the first by name. Notebooks of no exercise are kept (they get a row)."""
    by_ex: dict[str, list[Path]] = {}
    chosen: list[Path] = []
    for nb in nbs:
        ex = exercise_for(nb, exercises)
        if ex is None:
            chosen.append(nb)
        else:
            by_ex.setdefault(ex.name, []).append(nb)
    ignored = []
    for name, copies in by_ex.items():
        keep = next((c for c in copies if c.name == name), sorted(copies, key=lambda p: p.name)[0])
        chosen.append(keep)
        ignored += [(c, keep) for c in copies if c is not keep]
    return sorted(chosen, key=lambda p: p.name), ignored


def _recorded(
    subs: list[tuple[str, list[Path]]], done_dir: Path, salts: dict[str, str]
) -> tuple[list[Row], list[str]]:
    """The rows of every graded submission, and its ignored copies ("sub: file (graded: file)")."""
    rows, ignored = [], []
    for s, nbs in subs:
        path = done_dir / _key(s, nbs, salts[s])
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        rows += [Row.from_json(r) for r in record["rows"]]
        ignored += [f"{s}: {x}" for x in record["ignored"]]
    return rows, ignored


def _salts(
    salt: str, records: dict[str, dict], subs: list[tuple[str, list[Path]]]
) -> dict[str, str]:
    """Each submission's salt (:func:`_key`): ``salt`` (:meth:`Grader.environment`) and, with
    hand-outs, the submission's own entries in them, so that learners added to one later leave
    the others graded."""
    if not records:
        return {s: salt for s, _ in subs}
    salts = {}
    for s, _ in subs:
        own = {  # the learner's entries only, by notebook: another hand-out changes no salt
            nb: [r["learners"][s], r["variants"][r["learners"][s]["variant"]]]
            for nb, r in records.items()
            if s in r["learners"]
        }
        salts[s] = hashlib.sha256((salt + json.dumps(own, sort_keys=True)).encode()).hexdigest()
    return salts


def _key(sub: str, nbs: list[Path], salt: str = "") -> str:
    """The name of a submission's done file: its notebooks' paths and bytes, and ``salt`` (what
    else the rows depend on: the solutions, the package, the settings: ``Grader.environment``)."""
    h = hashlib.sha256()
    h.update(f"rows {ROWS}\n{sub}\n{salt}".encode())
    for p in nbs:
        h.update(str(p).encode())
        with contextlib.suppress(OSError):
            h.update(p.read_bytes())
    return h.hexdigest()[:24] + ".json"


def self_check(
    path: Path,
    settings: Settings,
    only: str = "",
    fail_under: float = 0.0,
    solutions: Path = SOLUTIONS,
) -> int:
    """A learner's own score, as the grader would give it; exit 1 when the share of passed checks
    (those whose name starts with ``only``) is below ``fail_under``, and 2, before any run, when the
    notebook is not a copy of one of the exercises. Only that exercise's reference is run, and it
    is kept (``self_check_cache()``) for the next self-check."""
    if not is_exercise(path, solutions):
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        rows = grade(
            [path],
            Path(tmp),
            settings,
            solutions,
            progress=lambda s: print(s, file=sys.stderr),
            cache=self_check_cache(),
        )
    if only and not any(r.check.startswith(only) for r in rows):
        prefixes = sorted({r.check.split("/")[0] + "/" for r in rows})
        print(
            f"no check's name starts with {only!r}: this notebook's start with "
            f"{', '.join(prefixes)}",
            file=sys.stderr,
        )
        return 2
    rows = [r for r in rows if r.check.startswith(only)]
    width = max(len(r.check) for r in rows)
    common = set.intersection(*(set(r.note.split("; ")) - {""} for r in rows))
    for note in sorted(common):  # said of the whole notebook (its variant): once, above the table
        print(note)
    for r in rows:
        mark = "✓" if r.passed else "✗"
        text = r.reason or "; ".join(n for n in r.note.split("; ") if n not in common)
        print(f"{mark} {r.check:{width}s}  {r.mistake:12s} {text}".rstrip())
    passed = sum(r.passed for r in rows)
    print(f"{passed} / {len(rows)} checks pass")
    return 0 if passed >= fail_under * len(rows) else 1


def no_solutions(solutions: Path) -> str:
    """Why nothing can be graded against ``solutions``, and what to do."""
    if class_wheel() and solutions == SOLUTIONS:
        return (
            "this is a class wheel: it carries no solutions, so it cannot grade (the self-check "
            "included). Run the notebook top to bottom: its checks and summary() say where you "
            "stand; the instructor grades with the full workbook."
        )
    return f"no solution notebooks in {solutions}: pass --solutions DIR (the executed solutions)"


def is_exercise(path: Path, solutions: Path) -> bool:
    """Whether ``path`` is a copy of one of the exercises; says so when it is not."""
    exercises, practice = course(solutions)
    if path.is_file() and exercise_for(path, exercises) is not None:
        return True
    if path.is_file() and exercise_for(path, practice) is not None:
        print(f"{path}: practice, nothing to grade: its checks run as you run it", file=sys.stderr)
        return False
    print(
        f"{path}: not a copy of one of the exercises ({', '.join(exercises)}): nothing graded",
        file=sys.stderr,
    )
    return False


def draw_numbers(folder: Path, seed: int | None, batch: int | None) -> tuple[int, int]:
    """The seed and batch size of a grading run: the instructor's where given, else those kept in
    ``folder/settings.json`` (a resumed run grades with the same numbers), else drawn fresh (not
    from a seeded generator: they must not be guessable) and kept there."""
    path = folder / "settings.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    draw = random.SystemRandom()
    seed = seed if seed is not None else kept.get("seed") or draw.randrange(1, 2**31 - 1)
    batch = batch if batch is not None else kept.get("batch") or draw.randrange(16, 49)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seed": seed, "batch": batch}) + "\n")
    return int(seed), int(batch)


def self_check_cache() -> Path:
    """Where a learner's self-checks keep the reference values between calls."""
    return cache_dir() / "reference"
