"""Outcomes as data across the grader's boundaries (#24): a row is a ``Row`` with a boolean
``passed`` from the judge to the reports, text only in grades.csv and JSON only in a done file; an
answer without a value is a ``NoValue`` on both sides of the kernel, a tagged dict only on the
wire; and every fixed word a row can hold is registered in ``checks.words``."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest
import torch

from checks import MISTAKES, words
from checks.grading import novalue, recorder
from checks.grading.judge import check_row
from checks.grading.novalue import DELETED, MISSING, NoValue
from checks.grading.reports import write_reports
from checks.grading.rows import FIELDS, Row
from checks.grading.scores import read_grades
from checks.paths import PACKAGE
from tests.rows import row

GRADING = PACKAGE / "grading"


def test_a_row_has_grades_csv_columns_and_reads_back_from_each_form(tmp_path):
    rows = [
        row("ann", "03.ipynb", "ex1/dprobs", True, note="keepdim: a size-1 axis"),
        row("bob", "03.ipynb", "ex1/dprobs", False, "sign", "flipped", feedback="the sign"),
        check_row("-", False, "", "=not a notebook").of("cy", "-"),
    ]
    assert [f.name for f in Row.__dataclass_fields__.values()] == FIELDS
    assert rows[0].cells()[3] == "true" and rows[1].cells()[3] == "false"
    assert [Row.from_json(r.json()) for r in rows] == rows
    assert pickle.loads(pickle.dumps(rows)) == rows  # a dask worker's rows reach the client
    write_reports(rows, tmp_path)
    assert read_grades(tmp_path) == sorted(rows, key=lambda r: r.submission)
    with pytest.raises(AttributeError):
        rows[0].passed = False  # frozen
    read = Row.from_csv({"submission": "x", "notebook": "n", "check": "c", "passed": "True"})
    assert read == Row(submission="x", notebook="n", check="c", passed=False)  # "true" only


def test_no_value_crosses_the_kernels_wire_as_a_tagged_dict_and_comes_back():
    values = {
        "ex1/a": torch.ones(2),
        "ex1/b": MISSING,
        "ex1/c": DELETED,
        "ex1/d": novalue.raised(ZeroDivisionError()),
        "ex1/e": recorder.as_value("text"),
    }
    wire = novalue.to_wire(values)
    assert wire["ex1/d"] == {"novalue": "error", "type": "ZeroDivisionError"}
    assert wire["ex1/e"] == {"novalue": "other", "type": "str"}
    back = recorder.unpack(recorder.pack(values))  # torch.load with weights_only
    assert torch.equal(back.pop("ex1/a"), values.pop("ex1/a")) and back == values
    assert recorder.as_value(...) == recorder.as_value(None) == MISSING
    assert recorder.attempt(lambda: 1 / 0) == NoValue("error", "ZeroDivisionError")
    assert recorder.values_of(["x", "y"], {"x": 1}) == {"x": 1, "y": DELETED}
    forged = {"ex1/a": {"novalue": "nonsense", "type": "x"}, "ex1/b": [1]}
    assert novalue.from_wire(forged) == forged and novalue.from_wire([1]) == [1]


def _words(path: Path, name: str, arg: int) -> set[str]:
    """The words a module's calls of ``name`` pass as argument ``arg``."""
    tree = ast.parse(path.read_text())
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (getattr(n.func, "id", None) == name or getattr(n.func, "attr", None) == name)
    ]
    return {w for c in calls for w in _spelled(c.args[arg], tree)}


def _spelled(node: ast.expr, tree: ast.Module) -> set[str]:
    """The words an expression can be: a string, either side of ``a if c else b``, a name of
    ``checks.words``, or a name the module assigns one of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _spelled(node.body, tree) | _spelled(node.orelse, tree)
    assert isinstance(node, ast.Name), ast.unparse(node)
    if hasattr(words, node.id):
        return {getattr(words, node.id)}
    values = [
        a.value
        for a in ast.walk(tree)
        if isinstance(a, ast.Assign) and [ast.unparse(t) for t in a.targets] == [node.id]
    ]
    assert values, f"where does {node.id} come from?"
    return {w for v in values for w in _spelled(v, tree)}


def test_every_word_the_grader_writes_into_a_row_is_registered():
    """The mistake words of the grader's own rows (``check_row``), and the words of every note
    (``Note(word, text)``, the learner's side's and the grader's): in ``checks.words``,
    and each registered word written somewhere."""
    mistakes = {w for p in GRADING.glob("*.py") for w in _words(p, "check_row", 2)}
    assert mistakes and mistakes <= {"", *MISTAKES, *words.MISTAKE_WORDS}, mistakes
    assert set(words.MISTAKE_WORDS) <= mistakes and not set(words.MISTAKE_WORDS) & set(MISTAKES)
    notes = {w for p in PACKAGE.rglob("*.py") for w in _words(p, "Note", 0)}
    assert notes == set(words.NOTE_WORDS), notes ^ set(words.NOTE_WORDS)
    assert not set(words.REPORT_WORDS) & {*MISTAKES, *words.MISTAKE_WORDS}
    assert words.REVIEW in words.MISTAKE_WORDS and {words.PASS, words.ERROR} == set(
        words.REPORT_WORDS
    )
