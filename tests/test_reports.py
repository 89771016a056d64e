"""The class reports (checks/grading/reports.py): grades.csv and totals.csv that no spreadsheet runs
as formulas (OWASP's CSV injection rule), report.md whose names render as text, and the rows for
review listed learner by learner."""

from __future__ import annotations

import csv
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from checks.grading.reports import FIELDS, TOTALS, TOTALS_NUMERIC, md_text, write_reports
from checks.grading.rows import Row
from checks.grading.scores import FORMULA_STARTS, csv_text, plain_cell, read_grades, safe_cell
from tests.rows import HOSTILE, row

NB3 = "03-makemore-backprop.ipynb"
ODD_NOTEBOOK = "=evil() | <img src=y onerror=alert(2)>.ipynb"  # a notebook of no exercise
REVIEW_WHY = (
    "the cell reads `X.grad` where the handed-out cell does not: not credited until an "
    "instructor has looked at it"
)


def hostile_class() -> list[Row]:
    rows = []
    for k, name in enumerate(HOSTILE):
        rows.append(row(name, NB3, "ex1/dlogprobs", True))
        if k % 2:
            rows.append(row(name, NB3, "ex1/dprobs", False, "review", REVIEW_WHY, "it matches"))
        else:  # a message that quotes the learner's text, starting like a formula
            rows.append(row(name, NB3, "ex1/dprobs", False, "", "-dprobs: NameError: name 'x'"))
    rows.append(row("cy", ODD_NOTEBOOK, "-", False, "", "=1+2 is not a notebook"))
    return rows


@pytest.fixture()
def out(tmp_path) -> Path:
    folder = tmp_path / "grades"
    folder.mkdir()
    write_reports(hostile_class(), folder)
    return folder


def _raw(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.mark.parametrize("start", FORMULA_STARTS)
def test_the_owasp_rule_one_place(start):
    value = f"{start}1+1"
    assert safe_cell(value) == "'" + value and plain_cell(safe_cell(value)) == value
    assert safe_cell("'" + value) == "''" + value  # a quote itself is quoted: reads back exact
    assert safe_cell("ann") == "ann" and safe_cell(-3) == -3 and safe_cell(0.5) == 0.5


def test_a_number_column_keeps_its_numbers_and_only_those():
    assert safe_cell("-0.5", numeric=True) == "-0.5" and safe_cell("+1", numeric=True) == "+1"
    for text in ("-2+3", "-inf", "-nan", "=1", "- 1", "-1 "):  # not a number a platform reads
        assert safe_cell(text, numeric=True) == "'" + text, text
    assert safe_cell("-0.5") == "'-0.5"  # in a text column, a name that looks like a number
    text = csv_text(["who", "points"], [["-1", "-1"], {"who": "=x", "points": "=x"}], ["points"])
    assert text == "who,points\r\n'-1,-1\r\n'=x,'=x\r\n"


def test_no_cell_of_grades_or_totals_starts_a_formula_and_every_value_reads_back(out):
    for name in ("grades.csv", "totals.csv"):
        cells = [c for r in _raw(out / name) for c in r]
        assert not [c for c in cells if c.startswith(FORMULA_STARTS)], name
    grades = _raw(out / "grades.csv")
    assert grades[0] == FIELDS
    assert {r[0] for r in grades[1:]} >= {"'" + n for n in HOSTILE if n[0] in "=+-@\t\r'"}
    # exactly what the grader wrote, quotes and white space included
    wrote = sorted(hostile_class(), key=lambda r: (r.submission, r.notebook))
    assert read_grades(out) == wrote and {type(r.passed) for r in wrote} == {bool}
    totals = _raw(out / "totals.csv")
    assert totals[0] == TOTALS
    for r in totals[1:]:  # the number columns stay numbers
        for col in TOTALS_NUMERIC:
            float(r[TOTALS.index(col)])
    assert ["'" + ODD_NOTEBOOK] == [r[1] for r in totals[1:] if r[0] == "cy"]


def _cells(line: str) -> list[str]:
    """A GFM table row's cells: split at the pipes a backslash does not escape."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def _unmarkdown(cell: str) -> str:
    """The text a cell of md_text renders as: backslash escapes and entities resolved."""
    return html.unescape(re.sub(r"\\(.)", r"\1", cell.strip()))


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.cells: list[str] = []  # the text of every table cell and h3 heading
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("td", "th", "h3"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th", "h3") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_report_md_shows_every_name_as_text(out):
    text = (out / "report.md").read_text()
    assert "<" not in text  # no tag, no autolink: Markdown makes HTML only from a `<`
    tables = [ln for ln in text.splitlines() if ln.startswith("|")]
    heads = [ln for ln in tables if not ln.startswith("|---")]
    for line in heads:
        assert len(_cells(line)) == 4, line  # a `|` in a name does not split its cell
    shown = {_unmarkdown(c) for ln in heads for c in _cells(ln)}
    headings = {_unmarkdown(ln[4:]) for ln in text.splitlines() if ln.startswith("### ")}
    odd = [n for k, n in enumerate(HOSTILE) if k % 2]  # the learners with a row for review
    assert headings == {" ".join(n.split()) for n in odd}
    assert ODD_NOTEBOOK in shown and "-" in shown


def test_a_markdown_renderer_makes_no_html_of_a_name(out):
    mistune = pytest.importorskip("mistune")
    render = mistune.create_markdown(escape=False, plugins=["table"])  # raw HTML passes, as GFM
    raw = _Tags()
    raw.feed(render(f"| who |\n|---|\n| {HOSTILE[7]} |\n"))  # the name unescaped: a picture
    assert "img" in raw.tags
    page = _Tags()
    page.feed(render((out / "report.md").read_text()))
    assert "img" not in page.tags and "a" not in page.tags and "code" in page.tags
    # as text: the notebook's name in one table cell, each learner's in a heading
    assert ODD_NOTEBOOK in page.cells and HOSTILE[7] in page.cells and HOSTILE[9] in page.cells
    assert md_text(HOSTILE[9]) == (r"\*\*bold\*\* \[link\](http://evil.example) \`code\` &amp;lt;")


def test_report_lists_each_learners_rows_for_review(out, tmp_path):
    text = (out / "report.md").read_text()
    part = text.split("## For review", 1)[1]
    assert "5 rows of 5 learners not credited until you have looked at them" in part
    sections = re.split(r"^### ", part, flags=re.M)[1:]
    assert len(sections) == 5
    for section in sections:
        rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "ex1/" in ln]
        assert len(rows) == 1
        nb, check, why, override = (_unmarkdown(c) for c in _cells(rows[0]))
        assert (nb, check, override) == ("03-makemore-backprop", "ex1/dprobs", "")
        assert why == "the cell reads `X.grad` where the handed-out cell does not"
    # an override settles one: the report says so
    (out / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\n\"+cmd|' /C calc'!A0\",,ex1/dprobs,1,seen\n"
    )
    write_reports(hostile_class(), out)
    settled = (out / "report.md").read_text().split("### +cmd\\|' /C calc'\\!A0", 1)[1]
    assert _cells(settled.split("\n")[4])[-1].strip() == "1"


def test_no_review_section_when_nothing_waits(tmp_path):
    write_reports([row("ann", NB3, "ex1/dlogprobs", True)], tmp_path)
    assert "For review" not in (tmp_path / "report.md").read_text()
