"""The notebooks: student copies generated from the solutions, runnable before and after a learner
fills them in."""

from __future__ import annotations

import json
import re
import shutil

import nbformat
import pytest

from checks.authoring.student import ROOT, generate, stub_source
from checks.paths import METADATA
from checks.session import expected_checks, shown_checks
from tests.notebooks import (
    ANSWERS,
    LINE,
    STUDENT,
    errors_of,
    fill,
    race_shown,
    run,
    run_then_rerun,
    text_of,
)

# ---------------------------------------------------------------- generation


def test_committed_student_copies_are_what_the_script_generates():
    assert generate(check=True) == [], (
        "notebooks/ is not what `python -m checks.student` generates: run it and commit "
        "notebooks/; if the difference is your own work, keep it in a folder of your own "
        "(`backprop-workbook start DIR` copies the notebooks there), since notebooks/ holds "
        "generated files"
    )


def test_the_solutions_races_are_shipped_and_a_stale_one_is_removed(tmp_path):
    """``student`` ships the races an executed solution shows (its data from the outputs'
    metadata), and takes out the file of a solution that shows none any more."""
    (tmp_path / "solutions").mkdir()
    for name in ("03-makemore-backprop.ipynb", "02-tensor-backprop.ipynb"):
        shutil.copy(ROOT / "solutions" / name, tmp_path / "solutions" / name)
    hints = tmp_path / "checks" / "hints"
    stale = hints / "costs" / "02-tensor-backprop.json"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"races": []}\n')
    differ = generate(check=True, root=tmp_path, out=tmp_path / "notebooks")
    assert stale in differ and stale.exists()  # --check only says so
    generate(root=tmp_path, out=tmp_path / "notebooks")
    shipped = json.loads((hints / "costs" / "03-makemore-backprop.json").read_text())["races"]
    assert (
        not stale.exists()
        and shipped
        == json.loads(
            (ROOT / "checks" / "hints" / "costs" / "03-makemore-backprop.json").read_text()
        )["races"]
    )
    assert [lap["name"] for lap in shipped[0]["laps"]] == ["autograd", "step_fast", "step"]


def test_every_solution_has_a_student_copy_without_outputs():
    solutions = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
    assert solutions and solutions == [p.name for p in STUDENT]
    for path in STUDENT:
        nb = nbformat.read(path, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code)
        assert not any("BEGIN SOLUTION" in c.source or "END SOLUTION" in c.source for c in code)


def test_stub_source_keeps_indentation_and_order():
    src = (
        "x = 1\n# dA: first\n# dB: second\n"
        "### BEGIN SOLUTION\ndA = 2\ndB = dA\n### END SOLUTION\nprint(dA)"
    )
    assert stub_source(src) == (
        "x = 1\ndA = ...  # TODO: first\ndB = ...  # TODO: second\nprint(dA)"
    )
    src = (
        "def f():\n    # dW: a shape\n    ### BEGIN SOLUTION\n"
        "    dW = 1\n    if dW:\n        tmp = 2\n"
        "    ### END SOLUTION\n    return dW"
    )
    assert stub_source(src) == "def f():\n    dW = ...  # TODO: a shape\n    return dW"


def test_stub_lines_verbatim_for_blocks_without_names():
    src = (
        "    def _backward():\n        # stub: raise NotWritten('the backward pass of +')\n"
        "        ### BEGIN SOLUTION\n"
        "        self.grad += out.grad\n        ### END SOLUTION\n    out._backward = _backward"
    )
    assert (
        stub_source(src)
        == "    def _backward():\n        raise NotWritten('the backward pass of +')\n"
        "    out._backward = _backward"
    )


@pytest.mark.parametrize(
    "bad",
    [
        "### BEGIN SOLUTION\nx = 1",
        "# dZ: described but never assigned\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION",
    ],
)
def test_stub_source_refuses_malformed_blocks(bad):
    with pytest.raises(ValueError):
        stub_source(bad)


# ---------------------------------------------------------------- the student copy, as handed out


@pytest.fixture(scope="module")
def makemore_student():
    return run(nbformat.read(ROOT / "notebooks" / "03-makemore-backprop.ipynb", as_version=4))


def test_student_copy_reports_not_written_for_every_check(makemore_student):
    lines, hints = [], 0
    for cell in makemore_student.cells:
        out = text_of(cell)
        lines += LINE.findall(out)
        hints += out.count("✗ missing: not written yet")
    assert len(lines) == 28  # 26 in exercise 1, one each in exercises 2 and 3
    assert all(approx.strip() == "False" for _, _, approx, _ in lines)
    assert hints == 28


def test_student_copy_stops_only_where_it_must(makemore_student):
    errors = errors_of(makemore_student)
    assert errors, "the cells that need answers must stop"
    for i, ename, evalue in errors:
        assert ename == "NotWritten", (i, ename, evalue)
        assert "first" in evalue
        src = makemore_student.cells[i].source
        assert "require(" in src or "step(" in src


# --------------------------------------------------------- the student copy, filled in by a learner


@pytest.fixture(scope="module")
def makemore_filled():
    nb = fill(
        nbformat.read(ROOT / "notebooks" / "03-makemore-backprop.ipynb", as_version=4), ANSWERS
    )
    return run(nb)


@pytest.mark.slow
def test_filled_student_copy_passes_every_check(makemore_filled):
    assert errors_of(makemore_filled) == []
    lines = [m for cell in makemore_filled.cells for m in LINE.findall(text_of(cell))]
    # the 28 checks and the 7 parameters of exercise 4's final comparison
    assert len(lines) == 28 + 7
    assert all(approx.strip() == "True" for _, _, approx, _ in lines), [
        m for m in lines if m[2].strip() != "True"
    ]


def test_a_run_names_its_checks_in_its_outputs_metadata(makemore_filled):
    """A kernel's run says which checks it showed in its outputs' metadata, the way
    ``checks.student`` lists a solution's: every check of the notebook once, in order. Text that
    reads like a check's line and a hint's output (whose marker names a check too) are none."""
    cells = list(makemore_filled.cells)
    assert shown_checks(cells) == expected_checks("03-makemore-backprop")
    look_alike = "probs           | exact: True  | approximate: True  | maxdiff: 0.0\n"
    hint = {"hint": "dprobs", "check": "probs", "notebook": "03-makemore-backprop", "rung": 1}
    extra = nbformat.v4.new_code_cell(
        outputs=[
            nbformat.v4.new_output("stream", name="stdout", text=look_alike),
            nbformat.v4.new_output("display_data", {"text/plain": "x"}, metadata={METADATA: hint}),
            nbformat.v4.new_output("display_data", {"text/plain": "y"}, metadata={METADATA: "z"}),
        ]
    )
    assert shown_checks([extra]) == [] and shown_checks([extra, *cells]) == shown_checks(cells)


def test_filled_student_copy_trains(makemore_filled):
    out = "".join(text_of(c) for c in makemore_filled.cells)
    losses = [float(x) for x in re.findall(r"loss (\d\.\d+)  \(", out)]
    assert losses[-1] < losses[0]
    val = float(re.search(r"val\s+(\d\.\d+)", out).group(1))
    assert val < 3.0


def test_exercise_5_times_only_the_steps_whose_gradients_agree(makemore_filled):
    """The optional exercise left as handed out: autograd's step and the learner's ``step`` are
    timed side by side; ``step_fast``, not written, is not timed, and stops nothing. The
    solution's steps follow, as the package ships them, and the learner's ``step`` is told its
    biggest saving against the solution's fast one."""
    shown, rows = race_shown(makemore_filled)
    assert shown.startswith("steps on minibatches of 32:")
    assert list(rows) == [
        "autograd",
        "step_fast",
        "step",
        "solution's step_fast",
        "solution's step",
    ]
    assert rows["autograd"][1] == "1.00x" and re.fullmatch(r"\d+\.\d\dx", rows["step"][1])
    assert "not timed: it raised NotWritten: step_fast: your fast step" in shown
    fast = rows["solution's step_fast"]
    assert (
        fast[0] == ""  # no time of its own: its ratio, operators and kB
        and re.fullmatch(r"\d\.\d\dx", fast[1])
        and int(fast[2]) < int(rows["step"][2])
    )
    assert "where the solution's `step_fast` takes" in shown
    summary = text_of(makemore_filled.cells[-1])  # the last cell: every check and the race
    assert (
        summary.split("from the last race(): time, tensor operations and memory allocated\n")[1]
        in shown
    )


def test_the_solutions_fast_step_is_timed_and_leaner_than_autograd():
    """The committed run of the solution: its ``step_fast`` agrees with autograd and makes fewer
    tensor operations and allocations (times are the machine's, and not asserted)."""
    solution = nbformat.read(ROOT / "solutions" / "03-makemore-backprop.ipynb", as_version=4)
    shown, rows = race_shown(solution)
    assert "not timed" not in shown, shown
    ops, kb = {k: int(v[2]) for k, v in rows.items()}, {k: v[3] for k, v in rows.items()}
    assert ops["step_fast"] < ops["step"] and ops["step_fast"] < ops["autograd"], shown
    assert float(kb["step_fast"].replace(",", "")) < float(kb["autograd"].replace(",", ""))


def test_a_mistake_fails_exactly_the_affected_checks():
    answers = {k: list(v) for k, v in ANSWERS.items()}
    answers["dbnvar"] = ["0.5 * dbnvar_inv * (bnvar + 1e-5)**-1.5"]  # sign slip
    nb = nbformat.read(ROOT / "notebooks" / "03-makemore-backprop.ipynb", as_version=4)
    nb.cells = nb.cells[: _first("# Exercise 2", nb)]  # exercise 1 only
    nb = run(fill(nb, answers, complete=False))
    verdicts = [
        (name, approx.strip() == "True")
        for c in nb.cells
        for name, _, approx, _ in LINE.findall(text_of(c))
    ]
    assert len(verdicts) == 26
    failing = {name for name, ok in verdicts if not ok}
    # bnvar, and what the learner computes from it; the variance path sums to zero over the batch
    # (bndiff does), so dbnmeani and db1 are right all the same and must pass
    assert failing == {"bnvar", "bndiff2", "bndiff", "hprebn", "embcat", "W1", "emb", "C"}


def _first(heading: str, nb) -> int:
    return next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and c.source.startswith(heading)
    )


@pytest.mark.slow
def test_exercise_1_can_be_rerun_after_the_whole_notebook():
    """Exercises 2-4 keep their names to themselves: after Run All, exercise 1's checks still pass
    when re-run, and the summary keeps one row per check (exercise 2's `logits (fused)` does not
    replace exercise 1's `logits`)."""
    nb = fill(
        nbformat.read(ROOT / "notebooks" / "03-makemore-backprop.ipynb", as_version=4), ANSWERS
    )
    code = {i: c.source for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    rerun = [
        i
        for i, src in code.items()
        if "cmp('bngain'" in src or "cmp('counts'" in src or "cmp('logits'" in src
    ]
    assert len(rerun) == 3
    (i_summary,) = [
        i for i, src in code.items() if src.startswith('summary("03-makemore-backprop", last=')
    ]
    shown = run_then_rerun(nb, {**{i: code[i] for i in rerun}, i_summary: "summary()"})
    for out in shown[:3]:
        assert "approximate: True" in out and "Error" not in out, out
    rows = re.findall(r"^(\S.*?)\s+[✓✗] ", shown[3], re.M)
    assert len(rows) == len(set(rows)) == 28 + 7, rows
    assert {"logits", "logits (fused)", "hprebn", "hprebn (fused)", "C", "C (trained)"} <= set(rows)
