"""Notebook 01 (scalar autograd): the student copy as handed out and filled in by a learner (with
the issue's slips too), the solution's numbers, prose and hints that leave the answers to the
learner, a `Value` class that reads like micrograd's engine, and the grader on notebook 01."""

from __future__ import annotations

import ast
import json
import re
import textwrap

import nbformat
import pytest

from checks.authoring.student import HINTS, ROOT, render, student_notebook
from tests.answers01 import (
    ANSWERS,
    BODIES,
    EQUALS,
    NAME,
    PRE_ORDER,
    fill_value_class,
    read,
    solution_source,
)
from tests.notebooks import LINE, STUB, errors_of, fill, run, run_then_rerun, text_of

pytestmark = pytest.mark.slow  # the notebook run as a learner and through the grader

# sections 1-2: 6 + 3 + 1 + 1; section 3: 6 operations, 6 nodes, backward(), 6 random expressions
# twice; section 5: the trained network; section 6: 6 parameters x 3 activations; section 7: 4
# inputs
N_CHECKS = 11 + 6 + 6 + 1 + 12 + 1 + 18 + 4
BASIC = ["__add__", "__mul__", "__pow__", "tanh", "exp", "relu"]
DERIVED = ["__neg__", "__sub__", "__truediv__", "__radd__", "__rmul__", "__rsub__", "__rtruediv__"]


def outputs(nb) -> str:
    return "\n".join(text_of(c) for c in nb.cells if c.cell_type == "code")


def value_class(nb) -> ast.ClassDef:
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("class Value"))
    return next(n for n in ast.parse(cell.source).body if isinstance(n, ast.ClassDef))


def methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


# -------------------------------------------- answers, written independently of the solution blocks


# ---------------------------------------------------------------- the student copy, as handed out


@pytest.fixture(scope="module")
def student():
    return run(read("notebooks"))


def test_student_copy_is_generated_from_the_solution():
    assert (ROOT / "notebooks" / NAME).read_text() == render(student_notebook(read("solutions")))


def test_student_copy_reports_not_written_for_every_check(student):
    out = outputs(student)
    lines = LINE.findall(out)
    assert len(lines) == N_CHECKS
    assert all(approx.strip() == "False" for _, _, approx, _ in lines)
    assert out.count("✗ missing: not written yet") == N_CHECKS
    # the demonstrations of section 3 and the pictures of section 4 say so too, and do not stop
    assert out.count("not written yet: write Value.backward() in section 3 first") >= 2 + 2


def test_student_copy_stops_only_where_it_must(student):
    errors = errors_of(student)
    assert len(errors) == 7  # 4 nudge checks of sections 1-2, the two trainings, the boundary plots
    for i, ename, evalue in errors:
        assert ename == "NotWritten", (i, ename, evalue)
        assert "first" in evalue
        src = student.cells[i].source
        assert "require(" in src or "raise NotWritten" in src or "loss.backward()" in src, src


# --------------------------------------------------------- the student copy, filled in by a learner


@pytest.fixture(scope="module")
def filled():
    nb = fill_value_class(fill(read("notebooks"), ANSWERS))
    assert not STUB.search("\n".join(c.source for c in nb.cells if c.cell_type == "code"))
    return run(nb)


def test_filled_student_copy_passes_every_check(filled):
    assert errors_of(filled) == []
    lines = LINE.findall(outputs(filled))
    assert len(lines) == N_CHECKS
    assert all(approx.strip() == "True" for _, _, approx, _ in lines), [
        m for m in lines if m[2].strip() != "True"
    ]


def test_filled_student_copy_trains_and_shows_what_the_solution_shows(filled):
    out = outputs(filled)
    assert "with  = : dL/da = 3.0" in out and "with += : dL/da = 6.0" in out
    assert "Value a.grad = 12.0" in out
    first = float(re.search(r"step  0: loss (\d+\.\d+)", out).group(1))
    last = float(re.search(r"after 40 steps: loss (\d+\.\d+)", out).group(1))
    assert first == pytest.approx(4.5167, abs=1e-3) and last == pytest.approx(0.0196, abs=1e-3)
    assert accuracies(out) == accuracies(outputs(read("solutions")))


def up_to(nb, heading: str):
    """``nb`` cut before the markdown cell that starts with ``heading``."""
    nb.cells = nb.cells[: next(i for i, c in enumerate(nb.cells) if c.source.startswith(heading))]
    return nb


def reports(out: str) -> dict[str, tuple[bool, str, str]]:
    """check -> (passed, mistake word, hint) for every check line in ``out``."""
    found, lines = {}, out.splitlines()
    for k, line in enumerate(lines):
        m = LINE.match(line)
        if m:
            ok = m.group(3).strip() == "True"
            said = lines[k + 1].strip() if k + 1 < len(lines) and not ok else ""
            word, _, hint = said.removeprefix("✗ ").partition(": ")
            found[m.group(1)] = (ok, word, hint)
    return found


def test_a_forgotten_plus_equals_is_named_wherever_it_shows():
    """`=` for `+=` in the product: its own check and every whole graph it changes say
    missing-path and `+=`; the checks it cannot change pass; nothing names an internal tensor."""
    nb = up_to(fill_value_class(fill(read("notebooks"), ANSWERS), EQUALS), "## 4.")
    out = outputs(run(nb))
    got = reports(out)
    assert all(got[op][0] for op in ["add", "pow", "tanh", "exp", "relu", "a (Value)"])
    assert got["mul"][1] == "missing-path" and "in `x * x` at x = 1.5" in got["mul"][2], got["mul"]
    assert "with += : dL/da = 3.0" in out
    failed = {name: r for name, r in got.items() if not r[0]}
    assert {"mul", "backward"} <= set(failed) and any(n.startswith("L") for n in failed), failed
    for name, (_, word, hint) in failed.items():
        assert word == ("upstream" if name == "backward" else "missing-path"), (name, word, hint)
        assert "`+=`" in hint or name == "backward", hint
        assert not re.search(r"`(loss|result|tL|tL_sq)`|\btL\b", hint), hint


def test_a_pre_order_is_named_and_the_trained_network_says_so():
    """#22: a `backward()` whose topological order is never reversed passed every check, and the
    network trained to another loss than 0.0196 with nothing to say why; now backward()'s check
    and the trained network's say `order`, and the checks of the operations still pass."""
    nb = up_to(fill_value_class(fill(read("notebooks"), ANSWERS), PRE_ORDER), "## 6.")
    out = outputs(run(nb))
    got = reports(out)
    assert all(got[op][0] for op in ["add", "mul", "pow", "tanh", "exp", "relu"])
    assert got["backward"][1] == "order" and "reverse topological order" in got["backward"][2]
    assert got["net (trained)"][1] == "order", got["net (trained)"]
    trained = float(re.search(r"after 40 steps: loss (\d+\.\d+)", out).group(1))
    assert trained != pytest.approx(0.0196, abs=1e-3), trained


def cell_source(start: str) -> str:
    """The first solution code cell that starts with ``start``, up to its first answer comment."""
    return solution_source(start).split("\n# d", 1)[0]


def test_a_value_used_twice_names_its_uses_by_the_learners_L():
    """Section 2's checks name the operations after `L`, the name the learner knows, not an
    internal tensor's (`tL`, `tL_sq`)."""
    from checks import cmp, drawn

    ns = {"torch": __import__("torch"), "drawn": drawn, "cmp": cmp}
    exec(solution_source("a, b, c, f = drawn("), ns)  # section 1's cells, which define scalar()
    exec(solution_source("def scalar(x):"), ns)
    exec(cell_source("a, b = drawn(3.0, -2.0)"), ns)
    exec("da = b * 1.0\nres = cmp('a (used twice)', da, ta, quiet=True)", ns)
    assert ns["res"].mistake == "missing-path" and "add the one through `L` (add)" in ns["res"].hint
    exec(cell_source("a = drawn(3.0)"), ns)
    exec("da = a * 1.0\nres = cmp('a (a*a)', da, ta_sq, quiet=True)", ns)
    assert "(input 1 of `L` (mul), input 2 of `L` (mul))" in ns["res"].hint, ns["res"].hint


# ------------------------------------------------------ the solution: the issue's numbers, computed


def accuracies(out: str) -> dict[tuple[str, int], list[float]]:
    rows = re.findall(r"^(\w+)\s+(\d+)\s+(\d+)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%$", out, re.M)
    return {(name, int(hidden)): [float(x) for x in accs] for name, hidden, _, *accs in rows}


def test_solution_outputs_hold_the_numbers_of_the_issue():
    nb = read("solutions")
    out = outputs(nb)
    assert "e = -6.0, d = 4.0, L = -8.0" in out
    table = dict(re.findall(r"^([abcdef])\s+(-?\d+\.\d)\s", out, re.M))
    assert table == {"a": "6.0", "b": "-4.0", "c": "-2.0", "d": "-2.0", "e": "-2.0", "f": "4.0"}
    assert "dL/da = -1.0" in out and "dL/da = 6.0" in out
    assert "with  = : dL/da = 3.0" in out and "with += : dL/da = 6.0" in out
    assert "41 parameters" in out
    assert "step  0: loss 4.5167" in out and "after 40 steps: loss 0.0196" in out
    assert "L = -8.0   dL/da = 6.0   dL/db = -4.0   dL/dc = -2.0   dL/df = 4.0" in out
    acc = accuracies(out)  # tanh, relu, none
    assert set(acc) == {("moons", 4), ("rings", 4), ("xor", 4), ("spiral", 4), ("spiral", 32)}
    for name in ["moons", "rings", "xor"]:
        assert acc[name, 4][:2] == [100.0, 100.0]
    assert 85 <= acc["moons", 4][2] <= 95
    assert all(40 <= acc[name, 4][2] <= 60 for name in ["rings", "xor"])
    assert max(acc["spiral", 4][:2]) < 95 and acc["spiral", 32][:2] == [100.0, 100.0]


def test_prose_quotes_what_the_solution_computes():
    nb = read("solutions")
    out = outputs(nb)
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    training = re.search(r"the loss falls from ([\d.]+) to ([\d.]+) in 40 steps", prose)
    assert (
        f"step  0: loss {training.group(1)}" in out
        and f"after 40 steps: loss {training.group(2)}" in out
    )
    quoted = re.search(r"What the table and the pictures show.*", prose, re.S).group(0)
    computed = {f"{x:.1f}%" for row in accuracies(out).values() for x in row}
    percentages = set(re.findall(r"\d+\.\d%", quoted))
    assert percentages and percentages <= computed, percentages - computed


# ---------------------------------------------- the prose and the hints leave the answers to you


def _squeezed(text: str) -> str:
    """Code or prose in one form: ``1 − t²`` and ``(1 - t**2)`` are ``1-t**2``, ``2y`` is
    ``2*y``."""
    for sym, plain in {"\\cdot": "*", "−": "-", "·": "*", "²": "**2", "^": "**"}.items():
        text = text.replace(sym, plain)
    text = re.sub(r"[\s`$(){}\\]", "", text)
    return re.sub(r"(?<![\w.])(\d+)(?=[A-Za-z])", r"\1*", text)


def _factors(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _from_above(node: ast.expr) -> bool:
    """The gradient arriving from above, as an answer names it: ``dd``, ``out.grad``."""
    text = ast.unparse(node)
    return text == "out.grad" or (isinstance(node, ast.Name) and re.fullmatch(r"d\w+", text))


def answer_parts(solution: str) -> set[str]:
    """What states an answer, in the cell's own names: each statement's whole value, and its local
    derivative (the value without the gradient from above: ``1 - t**2`` of
    ``(1 - t**2) * out.grad``); an operand's number as a local derivative (``other.data``) states
    it only multiplied by something."""
    found = set()
    for node in ast.walk(ast.parse(textwrap.dedent(solution))):
        value = node.value if isinstance(node, (ast.Assign, ast.AugAssign)) else None
        if not isinstance(value, ast.BinOp):
            continue
        local = [f for f in _factors(value) if not _from_above(f)]
        for part in [value, *local] if len(local) == 1 else [value]:
            if isinstance(part, ast.Attribute) and part is not value:
                found.add(_squeezed(ast.unparse(part)) + "*")
            elif not isinstance(part, (ast.Name, ast.Constant, ast.Attribute)):
                found.add(_squeezed(ast.unparse(part)))
    return found


def giveaways(nb: nbformat.NotebookNode, ladders: dict[str, list[dict]]) -> list[str]:
    """Each answer's part that a rung before its skeleton, or any paragraph, states."""
    prose = _squeezed(" ".join(c.source for c in nb.cells if c.cell_type == "markdown"))
    found = []
    for name, options in ladders.items():
        for ladder in options:
            parts = answer_parts(ladder["solution"])
            for k, rung in enumerate(ladder["rungs"][:-1], start=1):
                found += [f"{name} rung {k}: {p}" for p in sorted(parts) if p in _squeezed(rung)]
            found += [f"the prose: {p} ({name})" for p in sorted(parts) if p in prose]
    return found


def test_no_rung_before_the_skeleton_and_no_paragraph_states_an_answer():
    """The rules are taught on other symbols (p, q, z): neither the prose nor the first two rungs
    write an answer, or its local derivative, in the cell's own names."""
    ladders = json.loads((HINTS / "01-scalar-autograd.json").read_text())
    assert not giveaways(read("solutions"), ladders)


def test_the_principle_catches_what_the_issue_found():
    """The table of `_backward` rules and the rungs as they were before #22."""
    nb = nbformat.v4.new_notebook()
    table = "| `self * other` | `other.data * g` |\n| `self.tanh()` | `(1 - t**2) * g` |"
    nb.cells = [nbformat.v4.new_markdown_cell(table)]
    was = {
        "mul": [{"rungs": ["", "", ""], "solution": "self.grad += other.data * out.grad"}],
        "tanh": [
            {
                "rungs": ["", "the slope is 1 − t².", ""],
                "solution": "self.grad += (1 - t**2) * out.grad",
            }
        ],
        "dy": [{"rungs": ["", "", ""], "solution": "dy = 2 * y"}],
    }
    found = giveaways(nb, was)
    assert found == [
        "the prose: other.data* (mul)",
        "tanh rung 2: 1-t**2",
        "the prose: 1-t**2 (tanh)",
    ]
    nb.cells = [
        nbformat.v4.new_markdown_cell("The local slopes are $\\partial L / \\partial y = 2y$")
    ]
    assert "the prose: 2*y (dy)" in giveaways(nb, was)


# ---------------------------------------------------- the Value class reads like micrograd's engine


def test_value_class_has_one_short_closure_per_operation():
    m = methods(value_class(read("solutions")))
    for name in BASIC:
        body = m[name].body
        closures = [n for n in body if isinstance(n, ast.FunctionDef)]
        assert [c.name for c in closures] == ["_backward"], name
        statements = closures[0].body
        assert 1 <= len(statements) <= 2, name
        assert all(
            isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) and s.target.attr == "grad"
            for s in statements
        ), name
        assert (
            ast.unparse(body[-2]) == "out._backward = _backward"
            and ast.unparse(body[-1]) == "return out"
        ), name
    for name in DERIVED:
        body = m[name].body
        # built from the basic operations
        assert len(body) == 1 and isinstance(body[0], ast.Return), name
    assert ast.unparse(m["__sub__"].body[0]) == "return self + -other"
    assert ast.unparse(m["__truediv__"].body[0]) == "return self * other ** (-1)"
    assert "reversed" in ast.unparse(m["backward"])


def test_student_value_class_has_a_stub_per_closure():
    m = methods(value_class(read("notebooks")))
    for name in BASIC:
        closure = next(n for n in m[name].body if isinstance(n, ast.FunctionDef))
        assert len(closure.body) == 1 and isinstance(closure.body[0], ast.Raise), name
    assert len(m["backward"].body) == 1 and isinstance(m["backward"].body[0], ast.Raise)


def test_going_back_after_later_sections():
    """The quiz keeps its tensor under a name of its own, so the "used twice" answer re-run after it
    still checks against its own tensor; and after the whole notebook, that section run again from
    its first code cell passes."""
    nb = read("solutions")
    code = {i: c.source for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    (twice,) = [i for i, s in code.items() if "cmp('a (used twice)'" in s]
    (quiz,) = [i for i, s in code.items() if "cmp('a (a*a)'" in s]
    assert code[twice - 1].startswith("a, b = drawn(3.0, -2.0)")  # the section's first code cell
    up_to_quiz = read("solutions")
    up_to_quiz.cells = up_to_quiz.cells[: quiz + 1]
    (shown,) = run_then_rerun(up_to_quiz, {twice: code[twice]})
    assert "approximate: True" in shown, shown
    shown = run_then_rerun(nb, {twice - 1: code[twice - 1], twice: code[twice]})
    assert "approximate: True" in shown[1], shown[1]


# ------------------------------------------------------------- the grader grades notebook 01


@pytest.fixture(scope="module")
def graded(grade_class):
    """Three learners' notebook 01 graded in one run: right, `=` for `+=` in the product, and a
    pre-order."""
    from tests.submissions import CLASS

    bodies = {"right": BODIES, "equals": EQUALS, "pre-order": PRE_ORDER}
    learners = {
        who: fill_value_class(fill(read("notebooks"), ANSWERS), b) for who, b in bodies.items()
    }
    run = grade_class(learners, CLASS, NAME)
    return {who: run.of(who) for who in learners}


def test_the_grader_passes_a_right_notebook_01(graded):
    rows = graded["right"]
    # sections 1-2: 11 answers; the Value class: 10 probes; forward_backward(): 6 gradients
    assert len(rows) == 11 + 10 + 6 and all(r.passed for r in rows.values()), [
        r for r in rows.values() if not r.passed
    ]
    assert {"ex3/mul_same", "ex3/backward", "ex6/dW1"} <= set(rows)


def test_the_grader_names_the_issues_slips(graded):
    bad = {c: r for c, r in graded["equals"].items() if not r.passed}
    assert set(bad) == {"ex3/mul_same"}, {c: r.reason for c, r in bad.items()}
    assert bad["ex3/mul_same"].mistake == "missing-path"
    assert "input 1 of `out` (mul)" in bad["ex3/mul_same"].feedback
    assert not any("`result`" in r.feedback or "`loss`" in r.feedback for r in bad.values())
    bad = {c: r for c, r in graded["pre-order"].items() if not r.passed}
    assert set(bad) == {"ex3/backward"}, {c: r.reason for c, r in bad.items()}
