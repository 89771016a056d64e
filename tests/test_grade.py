"""Grading a class: fixture submissions for every case the grader must handle, graded in one run."""

from __future__ import annotations

import ast
import csv
import re
from pathlib import Path

import nbformat
import pytest
import torch

from checks.authoring.student import ROOT
from checks.grading.cli import main
from checks.grading.grader import Grader, grade, grade_submission, is_exercise
from checks.grading.sandbox import bwrap
from checks.grading.settings import Settings
from checks.paths import cache_dir
from tests import answers01 as t1
from tests import answers02 as t2
from tests.notebooks import ANSWERS, fill
from tests.signals import default_sigint
from tests.submissions import CLASS as SETTINGS
from tests.submissions import (
    NAME,
    STUDENT,
    cell_with,
    filled,
    keep_references,
    options,
    prepend,
)

pytestmark = pytest.mark.slow  # a class graded, with its reference runs


def hard_coded_dlogprobs() -> str:
    """dlogprobs as numbers, computed for the notebook's own seed and batch size."""
    from tests import makemore as mm

    p, f, Xb, Yb = mm.setup()
    d = torch.zeros_like(f["logprobs"])
    d[range(32), Yb] = -1 / 32
    return f"torch.tensor({d.tolist()})"


def make_submissions(root):
    subs = {}

    def save(name, nb=None, text=None):
        folder = root / name
        folder.mkdir()
        path = folder / NAME
        path.write_text(text if text is not None else nbformat.writes(nb))
        subs[name] = folder

    save("alice-complete", filled())
    a = ANSWERS
    save(
        "olga-issue-11",
        filled(  # the mistakes the notebook names from the graph and from the code
            dcounts=["counts_sum_inv * dprobs"],  # the path through counts_sum
            dW1=["dembcat.T @ dhprebn", a["dW1"][1]],  # a gradient for the input
            dC=[  # indexed +=; then, in step(), right by a Python loop (many more operations)
                "torch.zeros_like(C)\ndC[Xb] += demb",
                "torch.zeros_like(C)\n    for i in range(Xb.shape[0]):\n"
                "        for j in range(Xb.shape[1]):\n            dC[Xb[i, j]] += demb[i, j]",
            ],
            dhpreact=["hpreact.grad", a["dhpreact"][1]],  # autograd's own
            dbnmeani=["(-dbndiff).sum(0)"],  # the lecture's (64,)
            dprobs=["1.0 / probs"],  # the local derivative alone: no dlogprobs
            dnorm_logits=["counts"],  # the same: no dcounts
            dhprebn=[  # exercise 3's fused formula without bngain
                a["dhprebn"][0],
                "bnvar_inv / n * (n * dhpreact - dhpreact.sum(0)"
                " - n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))",
                *a["dhprebn"][2:],
            ],
        ),
    )
    save("ursula-two-copies", filled())
    blank = nbformat.read(STUDENT, as_version=4)
    # a stale copy
    nbformat.write(blank, subs["ursula-two-copies"] / "03-makemore-backprop-old.ipynb")
    victor = filled()
    ex2 = cell_with(victor, "cmp('logits (fused)'")
    ex2.source = "\n".join(
        line for line in ex2.source.split("\n") if not line.startswith("dlogits")
    )
    save("victor-assigns-nothing", victor)  # exercise 2's cell left with exercise 1's dlogits
    save(
        "wendy-runs-autograd",
        prepend(
            filled(), "cmp('probs'", "try:\n    loss.backward()\nexcept RuntimeError:\n    pass"
        ),
    )
    save(
        "nina-slips-then-fuses",  # exercise 1's dlogits and dhprebn wrong, the fused ones right
        filled(
            dlogits=["-dnorm_logits", *a["dlogits"][1:]],
            dhprebn=["dbndiff.clone()", *a["dhprebn"][1:]],
        ),
    )
    save(
        "carol-two-mistakes",
        filled(
            dbnvar=["0.5 * dbnvar_inv * (bnvar + 1e-5)**-1.5"],
            dW2=["dlogits.T @ h", "h.T @ dlogits"],
        ),
    )
    save("dave-invalid-json", text='{"cells": [ {"cell_type": "code", ')
    # a loop that never ends, waiting rather than spinning: the grader cuts a cell by the clock
    # either way, and a spinning one would hold a CPU of the test run for the whole cell timeout
    save("erin-infinite-loop", prepend(filled(), "cmp('probs'", "while True:\n    plt.pause(1)"))
    save("frank-kernel-crash", prepend(filled(), "cmp('probs'", "import os\nos._exit(1)"))
    save("grace-huge-allocation", prepend(filled(), "cmp('probs'", "big = torch.ones(10**11)"))
    save(
        "heidi-output-flood",
        # 13 MB of text: 13 times what a cell may print (checks.grading.outputs.TEXT_BYTES)
        prepend(filled(), "cmp('probs'", "for i in range(1_000_000):\n    print('flood', i)"),
    )
    ivan = filled()
    ivan.cells.remove(cell_with(ivan, "cmp('probs'"))
    a, b = (
        ivan.cells.index(cell_with(ivan, "cmp('h'")),
        ivan.cells.index(cell_with(ivan, "cmp('hpreact'")),
    )
    ivan.cells[a], ivan.cells[b] = ivan.cells[b], ivan.cells[a]
    save("ivan-deleted-and-reordered", ivan)
    # prose, no answers
    other = [c for c in nbformat.read(STUDENT, as_version=4).cells if c.cell_type == "markdown"]
    save(
        "judy-wrong-exercise",
        nbformat.v4.new_notebook(
            cells=other + [nbformat.v4.new_code_cell("print('another exercise')")]
        ),
    )
    mallory = filled(
        dlogprobs=[hard_coded_dlogprobs()],
        dprobs=["probs.grad.clone()"],
        dcounts_sum_inv=["torch.zeros(n, 1)"],
    )
    prepend(
        mallory,
        "cmp('counts_sum_inv'",
        "import checks, checks.compare\nchecks.compare.judge = lambda *a, **k: None\n"
        "cmp = lambda *a, **k: print('approximate: True')",
    )
    extra = nbformat.v4.new_code_cell("### BEGIN SOLUTION\n# nothing to see\n### END SOLUTION")
    extra.metadata["nbgrader"] = {"grade": True, "points": 100, "solution": True}
    mallory.cells.insert(3, extra)
    mallory.metadata["workbook"] = {"score": "35/35"}
    save("mallory-tampered", mallory)
    zoe = root / "zoe-notebooks-01-02"
    zoe.mkdir()

    nbformat.write(
        t1.fill_value_class(fill(t1.read("notebooks"), t1.ANSWERS)),
        zoe / "01-scalar-autograd.ipynb",
    )
    nbformat.write(
        fill(nbformat.read(t2.STUDENT, as_version=4), t2.ANSWERS), zoe / "02-tensor-backprop.ipynb"
    )
    subs["zoe-notebooks-01-02"] = zoe
    yuri = root / "yuri-value-bug"
    yuri.mkdir()
    bodies = dict(t1.BODIES)
    # = for +=
    bodies["self * other"] = [
        "self.grad = out.grad * other.data",
        "other.grad = out.grad * self.data",
    ]
    nbformat.write(
        t1.fill_value_class(fill(t1.read("notebooks"), t1.ANSWERS), bodies),
        yuri / "01-scalar-autograd.ipynb",
    )
    subs["yuri-value-bug"] = yuri
    return subs


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grade_class):
    subs = make_submissions(tmp_path_factory.mktemp("submissions"))
    run = grade_class(list(subs.values()), SETTINGS)
    return subs, run.out, run.rows, run.log


def rows_of(rows, sub):
    return {r.check: r for r in rows if r.submission == sub}


def failing(rows, sub):
    return {c: r for c, r in rows_of(rows, sub).items() if not r.passed}


def test_files_and_columns(graded):
    subs, out, rows, log = graded
    with open(out / "grades.csv") as f:
        table = list(csv.DictReader(f))
    assert {"submission", "notebook", "check", "passed", "reason"} <= set(table[0])
    assert {r["passed"] for r in table} == {"true", "false"}
    report = (out / "report.md").read_text()
    assert (out / "totals.csv").exists() and report.startswith("# Class report")
    # the class shares the usual answers, and no pair of it more than two uncommon cells
    assert "## Similar answers" not in report
    assert any(line.startswith("[") and "submissions/min" in line for line in log)


def test_complete_submission_passes_everything(graded):
    _, _, rows, _ = graded
    mine = rows_of(rows, "alice-complete")
    assert len(mine) == 35 and not failing(rows, "alice-complete")


def test_no_cascade_only_the_mistakes_fail(graded):
    _, _, rows, _ = graded
    bad = failing(rows, "carol-two-mistakes")
    assert set(bad) == {"ex1/dbnvar", "ex1/dW2"}
    assert bad["ex1/dbnvar"].mistake == "sign" and bad["ex1/dW2"].mistake == "transpose"


def test_invalid_json_gets_a_reason_per_check(graded):
    _, _, rows, _ = graded
    mine = rows_of(rows, "dave-invalid-json")
    assert len(mine) == 35 and all("not a readable notebook" in r.reason for r in mine.values())


@pytest.mark.parametrize(
    ("sub", "needle"),
    [
        ("erin-infinite-loop", "ran out of time"),
        ("grace-huge-allocation", "Error"),
    ],
)
def test_a_broken_cell_fails_only_its_check(graded, sub, needle):
    _, _, rows, _ = graded
    bad = failing(rows, sub)
    assert set(bad) == {"ex1/dprobs"}, {c: r.reason for c, r in bad.items()}
    assert needle in bad["ex1/dprobs"].reason


def test_an_output_flood_is_cut_in_the_kernel_and_the_answer_still_counts(graded):
    """5,000,000 printed lines before an answer: the kernel keeps the first megabyte, the cell
    ends in time, and the row says the output was cut."""
    _, _, rows, _ = graded
    assert not failing(rows, "heidi-output-flood")
    assert "the grader cut" in rows_of(rows, "heidi-output-flood")["ex1/dprobs"].note


def test_kernel_crash_is_reported_and_later_checks_not_reached(graded):
    _, _, rows, _ = graded
    bad = failing(rows, "frank-kernel-crash")
    crash = bad["ex1/dprobs"]  # os._exit is not an answer's to call: held, the note says why
    assert crash.mistake == "review" and "kernel" in crash.note, crash
    later = [r for c, r in bad.items() if c != "ex1/dprobs"]
    assert later and all("not reached" in r.reason or "kernel" in r.reason for r in later)
    assert rows_of(rows, "frank-kernel-crash")["ex1/dlogprobs"].passed


def test_deleted_cell_is_missing_and_reordering_changes_nothing(graded):
    _, _, rows, _ = graded
    bad = failing(rows, "ivan-deleted-and-reordered")
    assert set(bad) == {"ex1/dprobs"} and bad["ex1/dprobs"].mistake == "missing"


def test_wrong_exercise(graded):
    _, _, rows, _ = graded
    mine = rows_of(rows, "judy-wrong-exercise")
    assert mine and all(not r.passed and "does not look like" in r.reason for r in mine.values())


def test_tampering_does_not_pass(graded):
    _, _, rows, _ = graded
    bad = failing(rows, "mallory-tampered")
    assert set(bad) == {"ex1/dlogprobs", "ex1/dprobs", "ex1/dcounts_sum_inv"}, {
        c: r.reason for c, r in bad.items()
    }
    pasted = bad["ex1/dlogprobs"]  # numbers for batch 32, graded at batch 24: held, and wrong
    assert pasted.mistake == "review" and "shape" in pasted.note, pasted
    copied = bad["ex1/dprobs"]  # a copy of probs.grad: held; .grad is wiped before learner code
    assert copied.mistake == "review" and "AttributeError" in copied.note, copied


def test_no_submission_affects_another(graded):
    _, _, rows, _ = graded
    assert not failing(rows, "alice-complete")
    assert {r.submission for r in rows} == set(graded[0])


def test_the_drills_notebook_is_practice_and_gets_no_row_beside_an_exercise(tmp_path, capsys):
    """06's drills hold nothing to grade: its copy (renamed too) adds no row and runs nothing; a
    submission of practice alone gets one row that says so, never a silent absence."""
    grader = Grader(tmp_path / "out", SETTINGS)
    assert "06-drills.ipynb" in grader.practice and "06-drills.ipynb" not in grader.exercises
    mine = tmp_path / "06-drills (1).ipynb"
    mine.write_bytes((ROOT / "notebooks" / "06-drills.ipynb").read_bytes())
    assert grader.grade_notebook("lee", mine) == []
    [row], ignored = grade_submission(grader, "lee", [mine], progress=lambda line: None)
    assert not row.passed and row.check == "-"
    assert "only practice (06-drills (1).ipynb)" in row.reason
    assert not ignored and not (tmp_path / "out" / ".work").exists()
    assert not is_exercise(mine, ROOT / "solutions")
    assert "practice, nothing to grade" in capsys.readouterr().err


def test_rerun_resumes_and_gives_the_same_file(graded, reference_cache):
    subs, out, rows, _ = graded
    before = (out / "grades.csv").read_bytes()
    # as if interrupted before alice's rows were recorded (a whole run of notebook 03 to make again)
    alice = [p for p in (out / ".done").glob("*.json") if '"alice-complete"' in p.read_text()]
    assert len(alice) == 1, alice
    alice[0].unlink()
    log = []
    again = grade(list(subs.values()), out, SETTINGS, progress=log.append, cache=reference_cache)
    assert any(f"resuming: {len(subs) - 1} of {len(subs)}" in line for line in log)
    assert (out / "grades.csv").read_bytes() == before
    assert len(again) == len(rows)


def test_self_check_prints_the_score(graded, reference_cache, capsys, tmp_path, monkeypatch):
    subs, *_ = graded
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # the class's settings, and its reference values and calibration of 03 where the self-check
    # keeps its own (the user's cache): a reference run of 03 is the class fixture's to make
    keep_references(reference_cache, cache_dir() / "reference", "03-makemore-backprop")
    settings = [*options(SETTINGS), "--jobs", "1"]
    copy = tmp_path / "my work (copy).ipynb"  # a renamed duplicate: matched by its cell ids
    copy.write_bytes((subs["carol-two-mistakes"] / NAME).read_bytes())
    assert main(["--self", str(copy), *settings]) == 0
    first = capsys.readouterr()
    assert (
        "33 / 35 checks pass" in first.out and "✗ ex1/dbnvar" in first.out and "sign" in first.out
    )
    assert f"reference of {NAME}: from the cache ({cache_dir() / 'reference'})" in first.err
    assert "of 01" not in first.err and "of 02" not in first.err and "grading the" not in first.err
    assert main(["--self", str(copy), *settings]) == 0
    again = capsys.readouterr()
    assert "from the cache" in again.err and "reference run" not in again.err
    assert again.out == first.out


def test_self_check_on_a_notebook_of_no_exercise_exits_2_before_any_run(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    other = tmp_path / "shopping-list.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('eggs')")]), other
    )
    assert main(["--self", str(other)]) == 2
    assert "not a copy of one of the exercises" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()
    assert main(["--self", str(tmp_path / "missing.ipynb")]) == 2


def test_a_relative_out_folder_works(graded, reference_cache, tmp_path, monkeypatch, capsys):
    subs, *_ = graded
    work = tmp_path / "course"
    (work / "subs" / "zoe").mkdir(parents=True)
    (work / "subs" / "zoe" / "02-tensor-backprop.ipynb").write_bytes(
        (subs["zoe-notebooks-01-02"] / "02-tensor-backprop.ipynb").read_bytes()
    )
    # the class's settings: its reference values and calibration, kept where grades/ keeps them
    keep_references(reference_cache, work / "grades" / ".reference", "02-tensor-backprop")
    monkeypatch.chdir(work)
    assert main(["subs/zoe", "--out", "grades/", "--jobs", "1", *options(SETTINGS)]) == 0
    said = "".join(capsys.readouterr())  # neither made again
    assert "from the cache" in said and "grading the solution" not in said, said
    with open(work / "grades" / "grades.csv") as f:
        table = list(csv.DictReader(f))
    assert table and all(r["passed"] == "true" for r in table), table


def test_the_other_notebooks_are_graded_too(graded):
    _, _, rows, _ = graded
    mine = [r for r in rows if r.submission == "zoe-notebooks-01-02"]
    by_nb = {
        nb: [r for r in mine if r.notebook == nb]
        for nb in ("01-scalar-autograd.ipynb", "02-tensor-backprop.ipynb")
    }
    assert all(len(v) >= 15 for v in by_nb.values())
    assert all(r.passed for r in mine), [r for r in mine if not r.passed]
    # repeated names get their own ids
    assert len({(r.notebook, r.check) for r in mine}) == len(mine)


def test_the_value_class_is_graded_operation_by_operation(graded):
    _, _, rows, _ = graded
    bad = failing(rows, "yuri-value-bug")
    # x * x: 3 instead of 6
    assert set(bad) == {"ex3/mul_same"}, {c: r.reason for c, r in bad.items()}
    assert bad["ex3/mul_same"].mistake == "missing-path"  # as the notebook says: used twice
    assert rows_of(rows, "yuri-value-bug")["ex3/mul"].passed


def test_a_functions_passed_answers_show_what_its_call_cost_beside_the_solutions(graded):
    _, out, rows, _ = graded
    said = re.compile(r"(\d+) ops, ([\d,.]+) kB \(the solution's: (\d+) ops, ([\d,.]+) kB\)")
    alice, olga = rows_of(rows, "alice-complete"), rows_of(rows, "olga-issue-11")
    # step()'s answers, which its probe reads; none of the cells' own answers
    assert {c for c, r in alice.items() if r.cost} == {c for c in alice if c.startswith("ex4/")}
    costs = {said.fullmatch(r.cost).groups() for c, r in alice.items() if r.cost}
    assert len(costs) == 1  # one call of step() gave every one of them
    ops, _, solution_ops, _ = costs.pop()
    assert 40 < int(solution_ops) < 100 and abs(int(ops) - int(solution_ops)) < 10
    # olga's step() gathers dC in a Python loop: right, and many more operations
    looped = said.fullmatch(olga["ex4/dC"].cost)
    assert olga["ex4/dC"].passed and int(looped[1]) > 5 * int(looped[3])
    assert not bad_with_cost(rows)
    with open(out / "grades.csv") as f:
        table = {(r["submission"], r["check"]): r for r in csv.DictReader(f)}
    assert table["olga-issue-11", "ex4/dC"]["cost"] == olga["ex4/dC"].cost
    with open(out / "totals.csv") as f:  # never part of a score
        assert "cost" not in next(csv.reader(f))


def bad_with_cost(rows):
    """The failed rows that show a cost: none should."""
    return [r for r in rows if r.cost and not r.passed]


def test_report_counts_mistakes(graded):
    _, out, _, _ = graded
    report = (out / "report.md").read_text()
    line = next(ln for ln in report.splitlines() if "| ex1/dW2 |" in ln)
    assert "transpose (1)" in line


def test_grader_names_what_the_notebook_names(graded):
    """The words the notebook reads off the graph and the code, from the reference run's facts."""
    _, _, rows, _ = graded
    mine = rows_of(rows, "olga-issue-11")
    bad = failing(rows, "olga-issue-11")
    words = {c: r.mistake for c, r in bad.items()}
    assert words == {
        "ex1/dcounts": "missing-path",
        "ex1/dW1": "operand",
        "ex1/dC": "accumulate",
        "ex1/dhpreact": "review",  # a copy of hpreact.grad: held, whatever its value
        "ex1/dprobs": "chain",
        "ex1/dnorm_logits": "chain",
        "ex3/dhprebn": "factor",
    }, {c: r.reason for c, r in bad.items()}
    assert "`hpreact.grad`" in bad["ex1/dhpreact"].reason, bad["ex1/dhpreact"]
    assert "the factor `bngain` is missing" in bad["ex3/dhprebn"].reason
    assert "from above, `dlogprobs`, is missing" in bad["ex1/dprobs"].reason
    assert "`dembcat` where `embcat` belongs" in bad["ex1/dW1"].reason
    assert "through `counts_sum`" in bad["ex1/dcounts"].reason
    assert mine["ex1/dbnmeani"].passed and mine["ex1/dbnmeani"].note.startswith("keepdim: ")
    assert all("\x1b" not in r.reason and "#x1B" not in r.reason for r in rows)


def test_two_copies_of_one_exercise_grade_the_one_named_like_it(graded):
    _, out, rows, log = graded
    mine = rows_of(rows, "ursula-two-copies")
    assert len(mine) == 35 and not failing(rows, "ursula-two-copies")
    assert {r.notebook for r in rows if r.submission == "ursula-two-copies"} == {NAME}
    assert any("03-makemore-backprop-old.ipynb is another copy" in line for line in log)
    assert (
        "ursula-two-copies: 03-makemore-backprop-old.ipynb (graded: 03-makemore-backprop.ipynb)"
        in (out / "report.md").read_text()
    )


def test_ctrl_c_stops_at_once_and_writes_the_reports(graded, reference_cache, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    subs, *_ = graded
    mine = tmp_path / "out"
    # the same settings: the reference values and the solution's calibration are kept
    keep_references(reference_cache, mine / ".reference", Path(NAME).stem)
    learners = [str(subs["erin-infinite-loop"]), str(subs["alice-complete"])]
    cmd = [sys.executable, "-m", "checks.grade", *learners, "--out", str(mine), "--jobs", "1"]
    cmd += options(SETTINGS)
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 120
    while not list((mine / ".work").glob("*/grading.ipynb")) and time.monotonic() < deadline:
        time.sleep(0.5)  # until the first submission's run has started
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    text, _ = proc.communicate(timeout=60)  # erin's loop is cut (0 of 2 graded), not timed out
    assert proc.returncode == 130, text
    assert "stopped: 0 of 2 submissions graded" in text and "interrupted" in text
    assert (mine / "grades.csv").exists() and (mine / "report.md").exists()
    assert not list((mine / ".done").glob("*.json"))  # nothing cut short is recorded as graded


@pytest.mark.parametrize(
    "box",
    [
        "none",
        pytest.param(
            "bwrap",
            marks=pytest.mark.skipif(not bwrap(), reason="bubblewrap cannot make a sandbox here"),
        ),
    ],
)
def test_a_dead_kernel_is_noticed_before_the_cell_timeout(tmp_path, box, monkeypatch):
    from checks.grading import run as running
    from checks.grading.judge import _stopped_in
    from checks.grading.run import KERNEL_DIED, run_notebook

    # how long a test runner may outlive its kernel: 10 s in a real run, where a run that ends
    # normally shuts its kernel down first; here the runner never ends of itself
    monkeypatch.setattr(running, "KERNEL_GONE_GRACE", 1.0)

    cells = ["x = 1", "import os\nos._exit(1)", "y = 2"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    run = run_notebook(
        nb, tmp_path / "run", Settings(cell_timeout=3000, notebook_timeout=3000, sandbox=box)
    )
    assert run.fault == KERNEL_DIED  # the cell timeout (50 min) did not have to run out
    # the rows name the cell it died in: the first the test runner did not see finish
    assert _stopped_in(run, ["", "ex1/dx,ex1/dy", ""]) == ", in your cell of ex1/dx, ex1/dy"


@pytest.mark.skipif(not bwrap(), reason="bubblewrap cannot make a sandbox here")
def test_a_long_temporary_folder_still_gives_the_kernel_its_sockets(tmp_path, monkeypatch):
    """$TMPDIR 130 characters long: the sandboxed kernel's Unix socket paths would pass the limit
    (about 107), so its folder goes to /tmp instead, and every cell runs."""
    import tempfile

    from checks.grading.run import run_notebook

    long = tmp_path / ("t" * max(1, 130 - len(str(tmp_path))))
    long.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x = 1 + 1"), nbformat.v4.new_code_cell("x")]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    run = run_notebook(
        nb, tmp_path / "run", Settings(cell_timeout=120, notebook_timeout=300, sandbox="bwrap")
    )
    assert run.fault is None and not run.cell_errors, (run.fault, run.cell_errors)
    assert len(run.cell_seconds) == 2


def test_seed_and_batch_are_drawn_fresh_kept_for_a_resumed_run_and_reported(tmp_path):
    from checks.grading.grader import draw_numbers

    seed, batch = draw_numbers(tmp_path / "a", None, None)
    assert 16 <= batch <= 48 and (tmp_path / "a" / "settings.json").exists()
    assert draw_numbers(tmp_path / "a", None, None) == (seed, batch)  # resumed: the same numbers
    assert draw_numbers(tmp_path / "a", 7, None) == (7, batch)  # the instructor's seed wins
    # not the numbers that ship with the code
    assert (seed, batch) != (
        Settings().seed,
        Settings().batch,
    )


def test_the_report_names_the_seed_and_batch(graded):
    _, out, *_ = graded
    head = (out / "report.md").read_text().split("\n")[2]
    assert f"seed {SETTINGS.seed}, batch {SETTINGS.batch}" in head and "reproduces it" in head


def test_a_cell_that_assigns_nothing_earns_nothing(graded):
    _, _, rows, _ = graded
    bad = failing(rows, "victor-assigns-nothing")
    assert set(bad) == {"ex2/dlogits"}, {c: r.reason for c, r in bad.items()}
    assert "dlogits" in bad["ex2/dlogits"].reason and "not defined" in bad["ex2/dlogits"].reason


def test_a_cell_that_runs_autograd_is_marked_for_review(graded):
    _, _, rows, _ = graded
    mine = rows_of(rows, "wendy-runs-autograd")
    # a right value, but autograd ran in the cell: not credited until looked at
    row = mine["ex1/dprobs"]
    assert not row.passed and row.mistake == "review", row
    assert (
        row.reason.startswith("the cell uses what an answer may not (")
        and "backward" in row.reason
        and row.note
    )
    assert not [c for c, r in mine.items() if r.mistake == "review" and c != "ex1/dprobs"]
    # the handed-out cells that run backward themselves (notebook 01) are not marked
    assert not [r for r in rows if r.submission == "zoe-notebooks-01-02" and r.mistake == "review"]


def test_a_right_fused_answer_after_a_slip_in_exercise_1_is_credited(graded, reference_cache):
    """Exercise 2's fused dlogits and exercise 3's fused dhprebn are exercise 1's quantities: the
    grader hands in only what the instructor's cell reads, none of exercise 1's answers, so a
    right fused answer after a slip in exercise 1 is earned and passes, not held for review."""
    from checks.grading.assemble import hand_ins
    from checks.grading.exercise import load_exercise

    _, out, rows, _ = graded
    mine = rows_of(rows, "nina-slips-then-fuses")
    assert set(failing(rows, "nina-slips-then-fuses")) == {"ex1/dlogits", "ex1/dhprebn"}
    assert mine["ex2/dlogits"].mistake == mine["ex3/dhprebn"].mistake == ""
    ex = load_exercise(ROOT / "solutions" / NAME)
    ref = torch.load(Grader(out, SETTINGS, cache=reference_cache).cache_of(ex), weights_only=True)
    given = {  # check -> the names its hand-in cell gives (restore's third argument)
        a.checks[0]: set(ast.literal_eval(ast.parse(cell).body[0].value.args[2]))
        for a, cell in zip(ex.answers, hand_ins(ex, ref), strict=True)
    }
    assert "dnorm_logits" not in given["ex2/dlogits"] and "dbndiff" not in given["ex3/dhprebn"]
    assert "dhpreact" in given["ex3/dhprebn"] and "logits" in given["ex2/dlogits"]
