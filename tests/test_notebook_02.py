"""Notebook 02 (backprop through tensors): the student copy as handed out, filled in right, and
filled in wrong."""

from __future__ import annotations

import re

import nbformat
import pytest

from checks.authoring.student import render, student_notebook
from tests.answers02 import ANSWERS, SOLUTION, STUDENT
from tests.notebooks import errors_of, fill, run, text_of

# Every check in the notebook, in order: section 1 (Y, s, X), section 2 (Z), the 2x2 layer entry by
# entry (W, A, b), as matrix products (W, A, b) and by central differences (W), the 784 -> 100 layer
# (A, W, b), section 4 (vmax, V).
CHECKS = ["Y", "s", "X", "Z", "W", "A", "b", "W", "A", "b", "W", "A", "W", "b", "vmax", "V"]
# A check's line and, when it fails, the mistake word and hint on the next line.
VERDICT = re.compile(
    r"^(\S+)\s+\| exact: (?:True |False) \| approximate: (True |False) \| maxdiff: \S+\n"
    r"(?:  ✗ ([a-z-]+): (.*))?",
    re.M,
)


def verdicts(nb) -> list[tuple[str, bool, str | None, str | None]]:
    """(name, passed, mistake, hint) for every check line printed by the executed notebook,
    in order."""
    out = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            out += [
                (m[0], m[1].strip() == "True", m[2] or None, m[3] or None)
                for m in VERDICT.findall(text_of(cell))
            ]
    return out


def outputs(nb) -> str:
    return "".join(text_of(c) for c in nb.cells if c.cell_type == "code")


# ---------------------------------------------------------------- generation


def test_student_copy_is_generated_from_the_solution():
    expected = render(student_notebook(nbformat.read(SOLUTION, as_version=4)))
    assert STUDENT.read_text() == expected, "regenerate notebooks/ with `python -m checks.student`"


# ---------------------------------------------------------------- the student copy, as handed out


@pytest.fixture(scope="module")
def handed_out():
    return run(nbformat.read(STUDENT, as_version=4))


def test_student_copy_reports_not_written_for_every_check(handed_out):
    found = verdicts(handed_out)
    assert [name for name, *_ in found] == CHECKS
    assert all(
        not ok and mistake == "missing" and hint.startswith("not written yet")
        for _, ok, mistake, hint in found
    ), found


def test_student_copy_stops_only_where_it_must(handed_out):
    errors = errors_of(handed_out)
    # the printouts of sections 1 and 2 and the shape table of section 3
    assert len(errors) == 3, errors
    for i, ename, evalue in errors:
        assert ename == "NotWritten", (i, ename, evalue)
        assert "require(" in handed_out.cells[i].source and "first" in evalue


# --------------------------------------------------------- the student copy, filled in by a learner


def with_changes(changes: dict[str, dict[int, str]]) -> dict[str, list[str]]:
    """ANSWERS with some of them replaced: {placeholder: {occurrence: expression}}."""
    answers = {k: list(v) for k, v in ANSWERS.items()}
    for name, at in changes.items():
        for k, expr in at.items():
            answers[name][k] = expr
    return answers


@pytest.fixture(scope="module")
def filled():
    return run(fill(nbformat.read(STUDENT, as_version=4), ANSWERS))


def test_filled_student_copy_passes_every_check(filled):
    assert errors_of(filled) == []
    found = verdicts(filled)
    assert [name for name, *_ in found] == CHECKS
    assert all(ok for _, ok, _, _ in found), [v for v in found if not v[1]]


def test_filled_student_copy_shows_the_gradient_shapes(filled):
    out = outputs(filled)
    for line in [
        "your dA (32, 784), A (32, 784)",
        "your dW (784, 100), W (784, 100)",
        "your db (1, 100), b (1, 100)",
    ]:
        assert line in out


# ---------------------------------------------- realistic wrong answers, named by the right mistake

WRONG = {
    "transposes-and-missing-sums": (
        {
            "ds": {0: "-dD"},  # the sum over the copied axis forgotten
            "dX": {0: "-dD.sum(1, keepdim=True)"},  # the sum's gradient not broadcast back
            "dZ": {0: "torch.ones_like(Z) * dzmax"},  # every entry treated as the winner
            "dW12": {0: "a2 * dN1 + a4 * dN3"},  # i and j swapped in the entries
            "dW21": {0: "a1 * dN2 + a3 * dN4"},
            # the product the wrong way round
            "dW": {0: "dN.T @ A.detach()", 1: "dN.T @ A.detach()"},
            "db": {1: "dN.sum(0)"},  # keepdim forgotten: a pass, with a note
            "dV": {0: "dU.clone()"},  # the path through the max forgotten
        },
        {
            1: ("shape", "over axis 1 (`.sum(1"),
            2: ("shape", "broadcast it back"),
            3: ("mask", "those a max, an index or a mask did not pick"),
            4: ("transpose", None),
            7: ("transpose", None),
            10: ("transpose", None),  # central differences catch it too
            12: ("transpose", "(100, 784)"),
            15: ("missing-path", "vmax"),
        },
    ),
    "signs-keepdims-and-sums": (
        {
            "dY": {0: "-dD"},  # the subtraction's sign put on the wrong operand
            "ds": {0: "-dD.sum(1)"},  # keepdim forgotten
            "db1": {0: "dN1"},  # the second sample forgotten
            "db2": {0: "dN2"},
            "db": {0: "dN.sum(0)", 1: "dN"},  # keepdim forgotten (a note); the batch sum forgotten
            "dA": {1: "W.detach() @ dN.T"},  # transposed
            "dvmax": {0: "dU.sum(1, keepdim=True)"},  # the minus sign forgotten
        },
        {
            0: ("sign", None),
            1: ("shape", "keepdim=True"),
            6: ("wrong", None),
            11: ("transpose", "(784, 32)"),
            13: ("shape", "over axis 0 (`.sum(0"),
            14: ("sign", None),
        },
    ),
}


@pytest.mark.parametrize(
    "case, seed", [("transposes-and-missing-sums", None), ("signs-keepdims-and-sums", "1234567")]
)
def test_wrong_answers_fail_with_the_right_mistake(case, seed, monkeypatch):
    """Each wrong answer fails its own check with the right word, and every other check passes
    (with other seeds too)."""
    if seed is not None:
        # the kernel inherits it: other numbers, same verdicts
        monkeypatch.setenv("WORKBOOK_SEED", seed)
    changes, expected = WRONG[case]
    nb = run(fill(nbformat.read(STUDENT, as_version=4), with_changes(changes)))
    assert errors_of(nb) == []
    first_entries = re.compile(r"^a1  = .*$", re.M)
    shown, default = (
        first_entries.search(outputs(nb))[0],
        first_entries.search(outputs(nbformat.read(SOLUTION, as_version=4)))[0],
    )
    assert (shown != default) == (seed is not None), (shown, default)
    found = verdicts(nb)
    assert [name for name, *_ in found] == CHECKS
    for i, (name, ok, mistake, hint) in enumerate(found):
        if i not in expected:
            assert ok, (i, name, mistake, hint)  # a wrong answer fails its own check only
            continue
        want, fragment = expected[i]
        assert not ok and mistake == want, (i, name, mistake, hint)
        assert fragment is None or fragment in hint, (i, name, hint)
    # the one `b` summed without keepdim: (2,) or (100,) for (1, 2) or (1, 100) broadcasts back
    # exactly
    assert outputs(nb).count("  ! keepdim: your db has shape") == 1


# ---------------------------------------------------------------- the numbers the prose quotes


@pytest.fixture(scope="module")
def solution():
    return nbformat.read(SOLUTION, as_version=4)


def test_solution_outputs_pass_every_check(solution):
    found = verdicts(solution)
    assert [name for name, *_ in found] == CHECKS
    assert all(ok for _, ok, _, _ in found)


def test_every_shape_in_the_prose_is_computed_in_the_outputs(solution):
    out = outputs(solution)
    prose = "".join(c.source for c in solution.cells if c.cell_type == "markdown")
    quoted = set(re.findall(r"\(\d+, \d+\)", prose))
    assert {"(32, 784)", "(784, 100)", "(1, 100)", "(32, 100)", "(1, 2)"} <= quoted
    assert {q for q in quoted if q not in out} == set()


def test_solution_shows_the_layer_and_gradient_shapes(solution):
    out = outputs(solution)
    for line in [
        "A  (32, 784)",
        "W  (784, 100)",
        "b  (1, 100)",
        "N  (32, 100)",
        "dN (32, 100)",
        "your dA (32, 784), A (32, 784)",
        "your dW (784, 100), W (784, 100)",
        "your db (1, 100), b (1, 100)",
        "(32, 100) @ (100, 784) -> (32, 784)",
        "(784, 32) @ (32, 100) -> (784, 100)",
        "(32, 100) -> (1, 100)",
    ]:
        assert line in out, line
