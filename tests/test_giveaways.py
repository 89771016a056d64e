"""Hints and prose that teach the rule and leave the answer to the learner (#22).

The principle, tested on every answer of notebooks 02 to 05: what the skeleton (rung 3) leaves
blank, no earlier rung and no paragraph leading up to the answer may fill in. A "part" of an answer
is any compound expression (an operation, a call) with a name in it, taken from the solution
block's statements and normalised (spacing, parentheses, quotes, ``1.0`` as ``1``, ``·`` as ``*``);
a rung or a paragraph gives it away when it holds that text. Quoting the notebook's own forward
pass (`` `y = f(x)` ``, a statement the learner sees above) gives nothing away and is not counted.
The rule is taught on other symbols instead: an ``A @ B`` example, a generic ``x`` used twice.
"""

from __future__ import annotations

import ast
import re
import textwrap

import nbformat
import pytest

from checks.authoring.student import BEGIN, END, ROOT, ladders, stub_source
from checks.compare import expected_checks

# notebook 01's ladders and prose are another developer's work in progress (#22): add it here when
# they are done
NOTEBOOKS = [
    "01-scalar-autograd",
    "02-tensor-backprop",
    "03-makemore-backprop",
    "04-mlp-language-model",
    "05-transformer-backprop",
]
# AdamW is defined by the notebooks, not derived: its update rule is the specification to code
DEFINED = {"m_new", "v_new", "p_new"}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d*)?(?:[eE][-+]?\d+)?(?![\w.])")
_SYMBOLS = {"−": "-", "·": "*", "²": "**2", "³": "**3", '"': "'"}


def norm(text: str) -> str:
    """Code or prose with spacing, backticks and parentheses dropped and numbers in one form."""
    for sym, plain in _SYMBOLS.items():
        text = text.replace(sym, plain)
    text = _NUMBER.sub(lambda m: _number(m.group()), text)
    return re.sub(r"[\s`()]", "", text)


def _number(literal: str) -> str:
    value = float(literal)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def blocks(source: str) -> list[str]:
    """The solution blocks of a cell, dedented."""
    found = re.findall(rf"^[ \t]*{BEGIN}\n(.*?)^[ \t]*{END}", source, re.S | re.M)
    return [textwrap.dedent(b) for b in found]


def parts(code: str) -> set[str]:
    """Every compound expression with a name in it, of the values ``code``'s statements compute."""
    found = set()
    for stmt in ast.walk(ast.parse(code)):
        value = getattr(stmt, "value", None) if isinstance(stmt, ast.stmt) else None
        for node in ast.walk(value) if value is not None else ():
            compound = isinstance(node, (ast.BinOp, ast.Call)) or (
                isinstance(node, ast.UnaryOp) and not isinstance(node.operand, ast.Constant)
            )
            if compound and any(isinstance(n, ast.Name) for n in ast.walk(node)):
                found.add(norm(ast.unparse(node)))
    return found


def right_hand_sides(code: str) -> list[tuple[str, str]]:
    """(name, its whole value normalised) of each assignment in ``code`` that computes something."""
    found = []
    for stmt in ast.parse(code).body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        value = getattr(stmt, "value", None)
        if value is None:  # a statement that assigns no value (`for v in reversed(order):`)
            continue
        if isinstance(target, ast.Name) and not isinstance(value, (ast.Name, ast.Constant)):
            found.append((target.id, norm(ast.unparse(value))))
    return found


def forward(nb: nbformat.NotebookNode) -> set[str]:
    """The assignments a learner sees in the notebook's code (the student copy's), normalised."""
    seen = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(stub_source(cell.source))
        except SyntaxError:
            continue
        seen |= {norm(ast.unparse(s)) for s in ast.walk(tree) if isinstance(s, ast.Assign)}
    return seen


def unquoted(text: str, seen: set[str]) -> str:
    """``text`` without its quotes of the forward pass (backticked statements found in ``seen``)."""

    def drop(m: re.Match) -> str:
        try:
            stmt = ast.parse(m.group(1)).body
        except SyntaxError:
            return m.group()
        quoted = len(stmt) == 1 and isinstance(stmt[0], ast.Assign)
        return " " if quoted and norm(ast.unparse(stmt[0])) in seen else m.group()

    return re.sub(r"`([^`]+)`", drop, text)


def answer_cells(name: str):
    """(index, cell, its ladders, the parts of its solution blocks) of every answer cell."""
    nb = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and BEGIN in cell.source:
            code = "\n".join(blocks(cell.source))
            yield i, cell, ladders(cell.source), code


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_rung_before_the_skeleton_fills_in_what_it_leaves_blank(name):
    seen = forward(nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4))
    found = []
    for i, _, by_name, code in answer_cells(name):
        for answer, ladder in by_name.items():
            *before, skeleton = ladder["rungs"]
            for k, rung in enumerate(before, start=1):
                text = norm(unquoted(rung, seen))
                given = [p for p in sorted(parts(code)) if p not in norm(skeleton) and p in text]
                found += [f"cell {i}, {answer}, rung {k}: {p}" for p in given]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_paragraph_before_an_answer_gives_it_away(name):
    """The paragraphs since the last answer cell fill in no blank of this one's skeletons, and no
    paragraph before an answer's first cell states the whole value it assigns."""
    nb = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
    seen, found, last, first = forward(nb), [], -1, {}
    for i, _, by_name, code in answer_cells(name):
        asked = [a for a in by_name if a not in DEFINED]
        skeletons = norm(" ".join(by_name[a]["rungs"][-1] for a in asked))
        blanks = sorted(p for p in parts(code) if p not in skeletons) if asked else []
        wholes = [
            (first.setdefault(t, i), v) for t, v in right_hand_sides(code) if t not in DEFINED
        ]
        for j, cell in enumerate(nb.cells[:i]):
            if cell.cell_type == "markdown":
                text = norm(unquoted(cell.source, seen))
                given = [p for p in blanks if j > last and p in text]
                given += [v for before, v in wholes if j < before and v in text]
                found += [f"markdown {j} before cell {i}: {p}" for p in dict.fromkeys(given)]
        last = i
    assert not found, "\n".join(found)


def test_the_principle_catches_the_giveaways_it_was_written_for():
    """The rung and the paragraphs #22 found, as they were: each is caught."""
    seen = {norm("loss = -logprobs[range(n), Yb].mean()")}
    assert "-1/n" in parts("dlogprobs[range(n), Yb] = -1.0 / n")
    assert "-1/n" in norm(unquoted("d loss / d logprobs[i, Yb[i]] = -1/n. Every other", seen))
    assert norm("1.0 / (n - 1)") in norm("= 1/(n-1) for every row i")
    was = "`dh` must be `(32, 64)` from `dlogits (32, 27)` and `W2 (64, 27)`: `dlogits @ W2.T`."
    assert norm("dlogits @ W2.T") in parts("dh = dlogits @ W2.T") and "dlogits@W2.T" in norm(was)
    assert "range(n)" not in norm(
        unquoted("used once, in `loss = -logprobs[range(n), Yb].mean()`", seen)
    )


# ---------------------------------------------------------------- the summaries' headings


def summary_cells():
    for name in NOTEBOOKS:
        nb = nbformat.read(ROOT / "solutions" / f"{name}.ipynb", as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and re.search(r"^summary\(", cell.source, re.M):
                yield name, cell.source, nb.cells[i - 1].source


@pytest.mark.parametrize("name, code, heading", list(summary_cells()), ids=lambda v: v[:12])
def test_a_summary_heading_states_no_count_that_can_drift(name, code, heading):
    """``summary(nb, last=...)`` shows every check run so far, so its count grows when the later
    cells have run: its heading names none. A whole notebook's summary may, if it is right."""
    counts = [int(n) for n in re.findall(r"\b(\d+) checks?\b", heading)]
    if "last=" in code:
        assert not counts, heading
    assert all(n == len(expected_checks(name)) for n in counts), heading
