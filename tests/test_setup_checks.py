"""A broken grading set-up stops the grader before any learner is graded (#23): the reference run
that records no value, the instructor's own solution short of full marks through the learner's
pipeline (a sandbox that cannot import ``checks``), each with the kernel's first real error, a
non-zero exit and nothing cached; a notebook that is a link is refused unread; a changed
solution grades the class again (resuming with the same solution: tests/test_grade.py)."""

from __future__ import annotations

import csv
import os
import shutil
import threading
from pathlib import Path

import nbformat
import pytest

import checks
from checks.grading import grader, sandbox, settings
from checks.grading.cli import main
from checks.paths import SOLUTIONS

pytestmark = pytest.mark.slow  # reference runs on broken set-ups

# notebook 02: the quickest solution to run (a set-up check runs it several times)
NB = "02-tensor-backprop.ipynb"
RUN = ["--seed", "11", "--batch", "20", "--steps", "20", "--cell-timeout", "60", "--jobs", "1"]
OFFLINE = 'words = open("data/names.txt").read().splitlines()  # the data set, offline: missing'


def solutions_with(folder: Path, extra: str | None = None) -> Path:
    """A solutions folder holding notebook 02, with ``extra`` as an instructor's cell after the
    imports (a set-up step that can break)."""
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(SOLUTIONS / NB, as_version=4)
    if extra is not None:
        nb.cells.insert(3, nbformat.v4.new_code_cell(extra))
    nbformat.write(nb, folder / NB)
    return folder


def learner(tmp: Path) -> Path:
    sub = tmp / "submissions" / "ada"
    sub.mkdir(parents=True)
    shutil.copy(SOLUTIONS / NB, sub / NB)
    return sub


def test_a_reference_run_that_records_nothing_stops_loudly_and_caches_nothing(tmp_path, capsys):
    sub, out = learner(tmp_path), tmp_path / "out"
    broken = solutions_with(tmp_path / "broken", OFFLINE)
    assert main([str(sub), "--out", str(out), "--solutions", str(broken), *RUN]) == 3
    err = capsys.readouterr().err
    assert "stopped before grading" in err and "FileNotFoundError" in err, err
    assert 'open("data/names.txt")' in err  # the cell that failed, by its first line
    assert not list(out.rglob("*.pt")) and not list(out.rglob("*.calibrated"))
    assert not (out / "grades.csv").exists() and not list((out / ".done").glob("*"))
    # the data supplied (the cell fixed): graded at once, nothing of the broken run reused
    fixed = solutions_with(tmp_path / "broken")
    assert main([str(sub), "--out", str(out), "--solutions", str(fixed), *RUN]) == 0
    log = capsys.readouterr().out
    assert "from the cache" not in log and "resuming" not in log
    assert "grading the solution 02-tensor-backprop.ipynb as a submission" in log
    # the instructor changes the solution: the class is graded again, not resumed
    solutions_with(fixed, "# the instructor fixed a step of the solution\nscale = 1.0")
    assert main([str(sub), "--out", str(out), "--solutions", str(fixed), *RUN]) == 0
    log = capsys.readouterr().out
    assert "resuming" not in log and "reference run of 02" in log, log


def test_self_check_on_a_broken_set_up_stops_the_same_way(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sub = learner(tmp_path)
    broken = solutions_with(tmp_path / "broken", OFFLINE)
    assert main(["--self", str(sub / NB), "--solutions", str(broken), *RUN]) == 3
    assert "FileNotFoundError" in capsys.readouterr().err
    assert not list((tmp_path / "cache").rglob("*.pt"))


@pytest.mark.skipif(not sandbox.bwrap(), reason="needs bubblewrap")
def test_a_sandbox_that_cannot_import_checks_stops_before_grading(tmp_path, capsys, monkeypatch):
    """The package out of the sandbox's reach (installed from another checkout, say): the
    reference runs outside the sandbox and passes; the solution graded as a learner's notebook,
    inside it, cannot import ``checks``, and the grader says so instead of zeroing the class."""
    package = Path(checks.__file__).parent
    monkeypatch.setattr(grader, "HINTS", package)  # one more folder the sandbox hides: checks/
    sub, out = learner(tmp_path), tmp_path / "out"
    sols = solutions_with(tmp_path / "sols")
    args = [str(sub), "--out", str(out), "--solutions", str(sols), "--sandbox", "bwrap", *RUN]
    assert main(args) == 3
    err = capsys.readouterr().err
    assert "graded as a learner's notebook is, scores 0 / 22" in err, err
    assert "No module named 'checks" in err, err
    assert not list(out.rglob("*.calibrated")) and not (out / "grades.csv").exists()


def test_a_notebook_that_is_a_link_is_refused_unread(tmp_path, capsys):
    """A link to the solutions (absolute, or relative below a folder of the submission) would be
    read by the grader's process: refused with a reason, nothing run for it."""
    mallory, eve = tmp_path / "subs" / "mallory", tmp_path / "subs" / "eve" / "work"
    mallory.mkdir(parents=True)
    eve.mkdir(parents=True)
    (mallory / NB).symlink_to(SOLUTIONS / NB)
    (eve / NB).symlink_to(os.path.relpath(SOLUTIONS / NB, eve))
    out = tmp_path / "out"
    assert main([str(mallory), str(eve.parent), "--out", str(out), *RUN]) == 0
    log = capsys.readouterr().out
    with open(out / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["submission"] for r in rows} == {"mallory", "eve"} and len(rows) == 2 * 22
    assert not any(r["passed"] == "true" for r in rows)
    assert all("symbolic link" in r["reason"] for r in rows)
    assert "reference run" not in log  # nothing of theirs needed one


def test_self_check_refuses_a_committed_relative_link(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mine = tmp_path / "repo" / "notebooks"
    mine.mkdir(parents=True)
    (mine / NB).symlink_to(os.path.relpath(SOLUTIONS / NB, mine))
    assert main(["--self", str(mine / NB), "--fail-under", "1.0", *RUN]) == 1
    assert "0 / 22 checks pass" in capsys.readouterr().out


def test_the_time_budget_scales_with_the_solutions_own_run(tmp_path):
    """A notebook that sleeps under the cell timeout in every cell holds a job slot only as long
    as the budget: 5 times the solution's run through the learner's pipeline, plus 120 s, unless
    the instructor sets ``--notebook-timeout``."""
    sols = solutions_with(tmp_path / "sols")
    run = grader.Grader(tmp_path / "out", settings.Settings(), sols)
    (ex,) = run.exercises.values()
    assert run.budget(ex).notebook_timeout is None  # not calibrated: the calibration itself
    mark = run.cache / f"{ex.path.stem}-{run.environment(ex)}.calibrated"
    mark.parent.mkdir(parents=True)
    mark.write_text('{"solution": "02", "checks": 22, "seconds": 24.0}\n')
    assert run.budget(ex).notebook_timeout == 240
    mark.write_text('{"solution": "02", "checks": 22, "seconds": 4000.0}\n')
    assert run.budget(ex).notebook_timeout == settings.NOTEBOOK_TIMEOUT
    fixed = grader.Grader(tmp_path / "out", settings.Settings(notebook_timeout=300), sols)
    assert fixed.budget(ex).notebook_timeout == 300


def _two_exercises(tmp_path: Path, jobs: int) -> tuple[grader.Grader, list]:
    sols = tmp_path / "sols"
    sols.mkdir(parents=True)
    for name in (NB, "03-makemore-backprop.ipynb"):
        shutil.copy(SOLUTIONS / name, sols / name)
    run = grader.Grader(tmp_path / "out", settings.Settings(jobs=jobs), sols)
    return run, list(run.exercises.values())


def test_the_exercises_are_set_up_side_by_side_and_a_broken_one_stops_the_rest(
    tmp_path, monkeypatch
):
    """With two jobs, two exercises' reference runs are under way at once (each waits for the
    other at a barrier: one after the other, the first would time out); with one job, a broken
    set-up raises its SetupError and the next exercise's set-up never starts."""
    run, exercises = _two_exercises(tmp_path / "two", jobs=2)
    both = threading.Barrier(2, timeout=20)
    monkeypatch.setattr(run, "reference", lambda ex: both.wait())
    monkeypatch.setattr(run, "calibrate", lambda ex, progress: None)
    said: list[str] = []
    grader.prepare(run, exercises, said.append)
    assert [s.split(" (")[0] for s in said] == [f"reference run of {e.name}" for e in exercises]

    run, exercises = _two_exercises(tmp_path / "one", jobs=1)
    started: list[str] = []

    def broken(ex):
        started.append(ex.name)
        raise grader.SetupError(f"the reference run of {ex.name} failed")

    monkeypatch.setattr(run, "reference", broken)
    with pytest.raises(grader.SetupError, match=exercises[0].name):
        grader.prepare(run, exercises, said.append)
    assert started == [exercises[0].name]
