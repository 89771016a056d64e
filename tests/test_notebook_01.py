"""Notebook 01 (scalar autograd): the student copy as handed out and filled in by a learner, the
solution's numbers, and a `Value` class that reads like micrograd's engine."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from checks.student import ROOT, render, student_notebook
from tests.test_notebooks import LINE, STUB, errors_of, fill, run, run_then_rerun, text_of

NAME = "01-scalar-autograd.ipynb"
# sections 1-2: 6 + 3 + 1 + 1; section 3: 9 operations, 6 nodes, 6 random expressions twice;
# section 6: 6 parameters x 3 activations; section 7: 4 inputs
N_CHECKS = 11 + 9 + 6 + 12 + 18 + 4
BASIC = ["__add__", "__mul__", "__pow__", "tanh", "exp", "relu"]
DERIVED = ["__neg__", "__sub__", "__truediv__", "__radd__", "__rmul__", "__rsub__", "__rtruediv__"]


def read(folder: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / folder / NAME, as_version=4)


def outputs(nb) -> str:
    return "\n".join(text_of(c) for c in nb.cells if c.cell_type == "code")


def value_class(nb) -> ast.ClassDef:
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("class Value"))
    return next(n for n in ast.parse(cell.source).body if isinstance(n, ast.ClassDef))


def methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


# -------------------------------------------- answers, written independently of the solution blocks

# One line per `dX = ...` placeholder, in the order they appear (da: section 1, a value used twice,
# the quiz).
ANSWERS = {
    "dd": ["f * 1"],
    "de": ["dd"],
    "dc": ["dd"],
    "da": ["de * b", "1 + b", "a + a"],
    "db": ["a * de"],
    "df": ["(a * b + c)"],
    "dy": ["y + y"],
    "du": ["dy - dy * y * y"],
    "dx": ["3 * du / 2"],
    "dlogits": [
        "(logits.softmax(1) - torch.nn.functional.one_hot(Y, 2).to(logits.dtype)) / X.shape[0]"
    ],
    "dW3": ["torch.einsum('ni,nj->ij', h2, dlogits)"],
    "db3": ["dlogits.sum(dim=0)"],
    "dh2": ["torch.einsum('nj,ij->ni', dlogits, W3)"],
    "dz2": ["dh2 * slope(act, z2, h2)"],
    "dW2": ["torch.einsum('ni,nj->ij', h1, dz2)"],
    "db2": ["dz2.sum(dim=0)"],
    "dh1": ["torch.einsum('nj,ij->ni', dz2, W2)"],
    "dz1": ["slope(act, z1, h1) * dh1"],
    "dW1": ["torch.einsum('ni,nj->ij', X, dz1)"],
    "db1": ["dz1.sum(dim=0)"],
}

# The body of each stub `raise NotWritten("...<key>...")` of the Value class.
BODIES = {
    "self + other": ["self.grad = self.grad + out.grad", "other.grad = other.grad + out.grad"],
    "self * other": ["self.grad += out.grad * other.data", "other.grad += out.grad * self.data"],
    "self ** k": ["self.grad += out.grad * k * self.data ** (k - 1)"],
    "tanh": ["self.grad += out.grad * (1 - out.data * out.data)"],
    "exp": ["self.grad += out.grad * math.exp(self.data)"],
    "relu": ["self.grad += out.grad if self.data > 0 else 0.0"],
    "Value.backward()": [  # an iterative depth-first walk instead of the recursive one
        "order, seen, stack = [], set(), [(self, False)]",
        "while stack:",
        "    v, finished = stack.pop()",
        "    if finished:",
        "        order.append(v)",
        "    elif v not in seen:",
        "        seen.add(v)",
        "        stack.append((v, True))",
        "        stack.extend((child, False) for child in v._prev)",
        "self.grad = 1.0",
        "for v in order[::-1]:",
        "    v._backward()",
    ],
}
RAISE = re.compile(
    r'^(\s*)raise NotWritten\("write (?:the _backward of )?(.+?) '
    r"in (?:the Value class|section 3) first.*$",
    re.M,
)


def fill_value_class(nb, bodies=BODIES):
    def one(m: re.Match) -> str:
        return "\n".join(m.group(1) + line for line in bodies[m.group(2)])

    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("class Value"):
            cell.source, n = RAISE.subn(one, cell.source)
            assert n == len(bodies), n
    return nb


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


def test_a_forgotten_plus_equals_fails_the_checks_that_use_a_value_twice():
    bodies = dict(BODIES)
    bodies["self * other"] = [
        "self.grad = out.grad * other.data",
        "other.grad = out.grad * self.data",
    ]
    nb = fill_value_class(fill(read("notebooks"), ANSWERS), bodies)
    nb.cells = nb.cells[: next(i for i, c in enumerate(nb.cells) if c.source.startswith("## 4."))]
    out = outputs(run(nb))
    verdicts = {name: approx.strip() == "True" for name, _, approx, _ in LINE.findall(out)}
    assert verdicts["x * y"] and verdicts["x + y"] and verdicts["a (Value)"]
    assert not verdicts["x * x"]
    assert "with += : dL/da = 3.0" in out
    # the used-twice bug the notebook teaches, named as such (not as a factor of 1/2)
    assert "✗ missing-path: its input is used 2 times (input 1 of a mul" in out, out


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
        assert len(body) == 1 and isinstance(body[0], ast.Return), (
            name
        )  # built from the basic operations
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
