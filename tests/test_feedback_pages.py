"""Feedback pages (checks/grading/feedback.py): a self-contained HTML page per submission and one
for the class, read back as a learner reads them: the verdicts, words and hints, the instructor's
overrides, the totals and the class's pass rates, and never an expected value.

The reasons are the repository's own: rows built by ``checks.grade.judge_one`` (what the grader
writes into grades.csv) on small tensors, one per mistake whose reason carries a number, plus the
forms the grader writes without a comparison (a review, a cell that raised).
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from checks import check_numeric
from checks.grading.feedback import page_names, write_pages
from checks.grading.judge import judge_one
from checks.grading.reports import FIELDS
from checks.grading.settings import Settings
from checks.verdict import FAIL, PASS
from tests.browser import CHROMIUM, CHROMIUM_FLAGS, require_browser

NB3, NB2 = "03-makemore-backprop.ipynb", "02-tensor-backprop.ipynb"
NUMBER = re.compile(r"[-+]?(?:\d+\.\d+|\d+)(?:e[-+]?\d+)?|nan|inf")


def _tensor(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def check_row(
    var: str, yours: object, expected: torch.Tensor, code: str | None = None
) -> dict[str, str]:
    """The grader's row (``judge_one`` is how it judges an answer, ``row()`` its columns)."""
    return judge_one(f"ex1/{var}", var, yours, expected, Settings(batch=24), code).row()


E = _tensor(24, 27)
S = torch.tensor(-0.323575)


def _minitorch_row() -> dict[str, str]:
    """check_numeric's worst element, in minitorch's words ("received derivative ...")."""
    x = torch.tensor([1.5, 2.5, 0.5], dtype=torch.float64)  # 3x² = 6.75, 18.75, 0.75
    yours = torch.tensor([6.75, 20.0, 0.75], dtype=torch.float64)
    return check_numeric("u", yours, lambda u: (u**3).sum(), x, quiet=True).row()


# name -> (the grader's row, the numbers its reason gives as expected)
REAL = {
    "sign": (check_row("dlogits", -E, E), [E]),
    "scale": (check_row("dlogits", E * 24, E), [E]),
    "bessel": (check_row("dx", E * 24 / 23, E), [E]),
    "wrong": (check_row("dlogits", E + _tensor(24, 27, seed=1), E), [E]),
    "near": (check_row("dlogits", E + torch.where(torch.arange(27) == 3, 0.01, 0.0), E), [E]),
    "zeros": (check_row("dlogits", torch.zeros_like(E), E), [E]),
    "nan": (check_row("dlogits", E / 0 * 0, E), [E]),
    "shape": (check_row("dlogits", E[:, :5], E), []),
    "missing": (check_row("dlogits", ..., E), []),
    "wrong-scalar": (check_row("dloss", torch.tensor(-0.328152), S), [S]),
    "scale-scalar": (check_row("dloss", S * 2, S), [S]),
    "sign-scalar": (check_row("dloss", -S, S), [S]),
    "value-scalar": (
        check_row("p_new", torch.tensor(1.5), torch.tensor(1.25)),
        [torch.tensor(1.25)],
    ),
    "batch-size": (
        check_row(
            "dlogits",
            torch.zeros(32, 27),
            E,
            "dlogits = torch.zeros((32, 27))\ndlogits[range(n), Yb] = -1.0 / n",
        ),
        [],
    ),
    "minitorch": (_minitorch_row(), [torch.tensor(18.75)]),
}


def _shown(t: torch.Tensor) -> set[str]:
    """Every element of ``t`` as the reasons write it (``.6g``), but for small integers, which
    reasons hold as counts, indices and sizes too."""
    return {f"{float(v):.6g}" for v in t.flatten().tolist()} - {str(i) for i in range(-64, 65)}


def _expected_numbers(reason: str, expected: list[torch.Tensor]) -> set[str]:
    """The numbers of ``reason`` that are elements of an expected tensor (as written there)."""
    shown = set().union(*(_shown(t) for t in expected)) if expected else set()
    return {n for n in NUMBER.findall(reason) if n in shown}


def test_the_real_reasons_state_expected_values_where_the_tests_assume():
    """The rows above are what the grader writes: the tests below prove something only if their
    reasons (the instructor's column) do give expected values away."""
    carrying = {k for k, (row, e) in REAL.items() if _expected_numbers(row["reason"], e)}
    assert carrying == {k for k, (_, e) in REAL.items() if e}, carrying
    assert "expected -0.323575 from autograd" in REAL["scale-scalar"][0]["reason"]
    assert "yours -0.328152, expected -0.323575 from autograd" in REAL["wrong-scalar"][0]["reason"]
    assert "but expected 18.75 from central difference" in REAL["minitorch"][0]["reason"]
    assert REAL["batch-size"][0]["note"].startswith("batch-size: ")


@pytest.mark.parametrize("name", list(REAL))
def test_the_feedback_column_keeps_the_hint_and_gives_no_expected_value(name):
    row, expected = REAL[name]
    said = row["feedback"]
    assert said, row
    assert not _expected_numbers(said, expected), said
    assert not re.search(r"\bexpected:?\s+[-+]?\d", said) and "yours " not in said, said
    assert "greatest absolute difference" not in said, said
    if "Mismatched elements" in row["reason"]:  # how many differ, and where the worst one is
        count = re.search(r"Mismatched elements: (\d+ / \d+ \([\d.]+%\))", row["reason"]).group(1)
        index = re.search(r"at index (\([\d, ]*\))", row["reason"]).group(1)
        assert f"Mismatched elements: {count}, the greatest difference at index {index}." in said, (
            said
        )
    assert row["reason"].startswith(
        said.split(" Mismatched elements:")[0].split(" for argument")[0]
    ), (said, row)


def test_the_feedback_column_in_the_single_number_and_minitorch_forms():
    assert (
        REAL["wrong-scalar"][0]["feedback"]
        == "your dloss is not the gradient (from autograd): re-derive it step by step."
    )
    assert REAL["scale-scalar"][0]["feedback"] == (
        "your dloss is 2 times the gradient: find the missing or extra constant factor."
    )
    assert REAL["minitorch"][0]["feedback"].endswith(
        "for argument 0, 1 / 3 elements differ, the greatest difference at index (1,)."
    )


# ---------------------------------------------------------------- a class

WORST = REAL["near"][0]["reason"]  # a hint, then the worst element with its expected value
WRONG_SCALAR = REAL["wrong-scalar"][0]["reason"]
REVIEW = (
    "the cell uses autograd itself (`loss.backward()`): look at it by hand: not credited "
    "until an instructor has looked at it"
)
KEEPDIM = REAL["batch-size"][0]["note"]
CLASS = [
    # ann: all right but a review; bob: a sign, a wrong single number (overridden); cy: little
    ("ann", NB3, "ex1/dlogprobs", True, "", "", ""),
    (
        "ann",
        NB3,
        "ex1/dprobs",
        True,
        "",
        "",
        "keepdim: the size-1 axis 1 was dropped (`keepdim=True`).",
    ),
    ("ann", NB3, "ex1/dloss", False, "review", REVIEW, "the value matches"),
    ("ann", NB2, "ex1/dY", True, "", "", ""),
    ("bob smith", NB3, "ex1/dlogprobs", True, "", "", ""),
    ("bob smith", NB3, "ex1/dprobs", False, "sign", REAL["sign"][0]["reason"], ""),
    ("bob smith", NB3, "ex1/dloss", False, "wrong", WRONG_SCALAR, ""),
    ("bob smith", NB2, "ex1/dY", False, "wrong", WORST, KEEPDIM),
    ("cy", NB3, "ex1/dlogprobs", False, "missing", REAL["missing"][0]["reason"], ""),
    ("cy", NB3, "ex1/dprobs", False, "", "NameError: name 'dlogprobs' is not defined", ""),
    ("cy", NB3, "ex1/dloss", False, "scale", REAL["scale-scalar"][0]["reason"], ""),
    # odd names: a space and a slash-like character, case twins, the class page's own name
    ("dee / Ø", NB3, "ex1/dlogprobs", True, "", "", ""),
    ("Eve", NB3, "ex1/dlogprobs", False, "sign", REAL["sign"][0]["reason"], ""),
    ("eve", NB3, "ex1/dlogprobs", True, "", "", ""),
    ("index", NB3, "ex1/dlogprobs", False, "nan", REAL["nan"][0]["reason"], ""),
]
EXPECTED_VALUES = [E, S]  # every expected value the reasons above give


def feedback_of(reason: str) -> str:
    """The feedback column the grader writes beside ``reason``: the comparison's (``REAL``), or the
    grader's own reason where no comparison made the row."""
    return next((row["feedback"] for row, _ in REAL.values() if row["reason"] == reason), reason)


OVERRIDES = (
    "learner,notebook,check,score,comment\n"
    "bob smith,03-makemore-backprop,ex1/dloss,0.5,"
    '"right formula, wrong sign of n: half a point"\n'
    "ann,,ex1/dloss,1,checked by hand <ok>\n"
)
ROSTER = (
    "submission,student,id,sis_user_id,section\n"
    'ann,"Lovelace, Ann",101,S-101,A\n'
    'bob smith,"Smith, Bob",102,S-102,B\n'
)
PASS_RATE = {  # (notebook, check) -> passed, graded
    (NB3, "ex1/dlogprobs"): (4, 7),
    (NB3, "ex1/dprobs"): (1, 3),
    (NB3, "ex1/dloss"): (0, 3),
    (NB2, "ex1/dY"): (1, 2),
}


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("grades")
    with open(folder / "grades.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for sub, nb, check, passed, mistake, reason, note in CLASS:
            w.writerow(
                [
                    sub,
                    nb,
                    check,
                    "true" if passed else "false",
                    mistake,
                    reason,
                    note,
                    feedback_of(reason),
                ]
            )
    (folder / "overrides.csv").write_text(OVERRIDES)
    (folder.parent / "roster.csv").write_text(ROSTER)
    return folder


@pytest.fixture(scope="module")
def pages(out) -> dict[str, str]:
    paths = write_pages(out, out.parent / "roster.csv")
    assert all(p.parent == out / "feedback" for p in paths)
    return {p.name: p.read_text(encoding="utf-8") for p in paths}


def _page_of(pages: dict[str, str], sub: str) -> str:
    return pages[page_names(sorted({r[0] for r in CLASS}))[sub]]


class _Text(HTMLParser):
    """A page's visible text, and its table rows as lists of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.text, self.rows, self.check_row, self._cell = [], [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.check_row = []
        elif tag in ("td", "th") and self.check_row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.check_row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self.check_row is not None:
            self.rows.append(self.check_row)
            self.check_row = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _read(page: str) -> _Text:
    parser = _Text()
    parser.feed(page)
    return parser


def _visible(page: str) -> str:
    return " ".join(" ".join(_read(page).text).split())


def _rows_by_check(page: str, notebook: str) -> dict[str, list[str]]:
    """The rows of the table after the notebook's heading, by check."""
    part = re.split(rf">{re.escape(notebook.removesuffix('.ipynb'))}[ <]", page, maxsplit=1)[1]
    part = part.split("</table>", 1)[0]
    return {r[0]: r for r in _read(part).rows if r and r[0].startswith("ex")}


def test_one_page_per_submission_and_the_class_page(out, pages):
    subs = sorted({r[0] for r in CLASS})
    names = page_names(subs)
    assert len(set(names.values())) == len(subs) and "index.html" not in names.values()
    assert set(pages) == {*names.values(), "index.html"}
    assert sorted(p.name for p in (out / "feedback").iterdir()) == sorted(pages)
    assert names["ann"] == "ann.html" and names["cy"] == "cy.html"
    for odd in ("bob smith", "dee / Ø", "Eve", "eve", "index"):
        assert re.fullmatch(r"[A-Za-z0-9_-]+-[0-9a-f]{8}\.html", names[odd]), names[odd]
    assert len({n.lower() for n in names.values()}) == len(names)  # case-insensitive disks too


def test_file_names_are_safe_and_distinct_for_odd_names():
    odd = [
        "a b",
        "a_b",
        "a/b",
        "a\\b",
        "..",
        ".",
        "",
        "A B",
        "con",
        "x" * 300,
        "x" * 301,
        "ünï cødé",
        "a-b",
        "a b-" + "0" * 8,
        "tab\there",
        "new\nline",
    ]
    names = page_names(odd)
    assert len({n.lower() for n in names.values()}) == len(odd)
    for n in names.values():
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,140}\.html", n) and not n.startswith(("-", ".")), n
    assert page_names(odd) == names  # the same names every run


def test_every_page_is_self_contained_and_keeps_expected_values_off(out, pages):
    shown = set().union(*(_shown(t) for t in EXPECTED_VALUES))
    in_grades = {n for n in NUMBER.findall((out / "grades.csv").read_text()) if n in shown}
    assert in_grades == {"-0.323575", "4.10149", "0.209843", "-1.12584"}  # the reasons give them
    for name, page in pages.items():
        low = page.lower()
        for banned in (
            "<style",
            "<script",
            "<link",
            "<img",
            "<iframe",
            "<object",
            "<embed",
            "src=",
            "@import",
            "url(",
            "javascript:",
        ):
            assert banned not in low.replace("url(#", ""), (name, banned)  # an SVG clip is inline
        hrefs = re.findall(r"href\s*=\s*['\"]([^'\"]*)", low)
        assert all(h.startswith("#") for h in hrefs), name  # only the chart's own glyphs
        text = _visible(page)
        outside_chart = re.sub(r"<svg.*</svg>", "", page, flags=re.S)  # its coordinates aside
        for where in (text, outside_chart):
            leaked = {n for n in NUMBER.findall(where) if n in shown}
            assert not leaked, (name, leaked)
        assert "-0.323575" not in page and "expected -" not in page
        assert "greatest absolute" not in page and "yours " not in text
        assert not re.search(r"\bexpected:?\s+[-+]?\d", text), name


def test_a_learners_page_shows_each_check_the_words_hints_overrides_totals_and_class_rates(pages):
    bob = _page_of(pages, "bob smith")
    assert "<title>Feedback for Smith, Bob</title>" in bob
    assert "Feedback for Smith, Bob</h1>" in bob
    rows = _rows_by_check(bob, NB3)
    assert set(rows) == {"ex1/dlogprobs", "ex1/dprobs", "ex1/dloss"}
    check, verdict, word, hint, instructor, points, rate = rows["ex1/dprobs"]
    assert (verdict, word, points, rate) == ("✗", "sign", "0 / 1", "33% of the class")
    assert hint.startswith("your dlogits is exactly the negative of the gradient: check the sign")
    assert "Mismatched elements: 648 / 648 (100.0%)" in hint and instructor == ""
    check, verdict, word, hint, instructor, points, rate = rows["ex1/dloss"]
    assert (verdict, word, points, rate) == ("✗", "wrong", "0.5 / 1", "0% of the class")
    assert hint == "your dloss is not the gradient (from autograd): re-derive it step by step."
    assert instructor == "0.5 / 1: right formula, wrong sign of n: half a point"
    assert rows["ex1/dlogprobs"][1:4] == ["✓", "", ""]
    assert rows["ex1/dlogprobs"][6] == "57% of the class"
    assert "<b style='color:#cf222e'>sign</b>" in bob  # the word in bold, in the fail colour
    nb2 = _rows_by_check(bob, NB2)["ex1/dY"]
    assert nb2[2] == "wrong" and "Mismatched elements: 24 / 648 (3.7%)" in nb2[3]
    assert "the number 32" in nb2[3] and "24" in nb2[3]  # a fail's note (a hard-coded batch size)
    assert "03-makemore-backprop — 1.5 / 3 points" in _visible(bob)
    assert "02-tensor-backprop — 0 / 1 points" in _visible(bob)
    assert "Total: 1.5 / 4 points" in bob


def test_a_review_a_pass_note_and_an_override_to_full_marks(pages):
    ann = _page_of(pages, "ann")
    assert "Feedback for Lovelace, Ann" in ann and "section A" in ann
    rows = _rows_by_check(ann, NB3)
    check, verdict, word, hint, instructor, points, rate = rows["ex1/dloss"]
    assert (verdict, word, points) == ("?", "review", "1 / 1")
    assert hint.startswith("the cell uses autograd itself (loss.backward())")
    assert "the value matches" not in hint  # the grader's word to the instructor
    assert instructor == "1 / 1: checked by hand <ok>"  # escaped in the page, read back as text
    assert "checked by hand &lt;ok&gt;" in ann
    assert rows["ex1/dprobs"][1] == "✓"
    assert rows["ex1/dprobs"][3].startswith("keepdim: the size-1 axis")
    assert "<code style=" in ann and ">keepdim=True</code>" in ann  # `code` in a hint shown as code
    assert "Total: 4 / 4 points" in ann and "— 3 / 3 points" in ann


def test_a_learner_without_a_roster_entry_and_failures_without_a_word(pages):
    cy = _page_of(pages, "cy")
    assert "Feedback for cy</h1>" in cy
    rows = _rows_by_check(cy, NB3)
    assert rows["ex1/dprobs"][1:4] == ["✗", "", "NameError: name 'dlogprobs' is not defined"]
    assert rows["ex1/dlogprobs"][2] == "missing"
    assert rows["ex1/dloss"][3] == (
        "your dloss is 2 times the gradient: find the missing or extra constant factor."
    )
    assert "Total: 0 / 3 points" in cy and NB2.removesuffix(".ipynb") not in cy
    odd = _page_of(pages, "dee / Ø")
    assert "Feedback for dee / Ø" in odd and "Total: 1 / 1 points" in odd


def test_the_class_page_has_the_chart_and_the_same_numbers(pages):
    index = pages["index.html"]
    text = _visible(index)
    assert index.count("<svg") == 1 and "</svg>" in index and "workbook-chart" in index
    assert "7 submissions" in text
    assert "<!DOCTYPE svg" not in index and "<?xml" not in index and "<metadata" not in index
    for (nb, check), (passed, graded) in PASS_RATE.items():
        row = _rows_by_check(index.split("</svg>", 1)[1], nb)[check]
        assert row[1:3] == [f"{passed} / {graded}", f"{round(100 * passed / graded)}%"], row
    words = _rows_by_check(index.split("</svg>", 1)[1], NB3)
    assert words["ex1/dlogprobs"][3] == "missing ×1, sign ×1, nan ×1"  # ties: as they come
    assert words["ex1/dprobs"][3] == "sign ×1, error ×1"
    assert words["ex1/dloss"][3] == "review ×1, wrong ×1, scale ×1"
    means = {r[0]: r for r in _read(index.split("<svg", 1)[0]).rows if r and r[0] != "notebook"}
    # 03: ann 3 (override), bob 1.5 (override), cy 0, dee 1/1, Eve 0/1, eve 1/1, index 0/1
    assert means["03-makemore-backprop"][1:] == ["7", "0.93 / 1.86", "50%"]
    assert means["02-tensor-backprop"][1:] == ["2", "0.5 / 1", "50%"]
    # a learner is named only under "For review", by folder name, never by the roster's name
    assert "Lovelace" not in index and "bob smith" not in index


def test_the_chart_is_deterministic_and_names_each_check_and_mistake(out, pages):
    again = write_pages(out, out.parent / "roster.csv")
    assert {p.name: p.read_text(encoding="utf-8") for p in again} == pages
    svg = pages["index.html"].split("<svg", 1)[1].split("</svg>", 1)[0]
    assert svg.count(f"fill: {PASS}") >= len(PASS_RATE)  # a bar per check (with a pass)
    assert "stroke-linejoin='round'" in pages["index.html"]  # its stylesheet rule, as attributes


def test_the_command_line_writes_the_pages(out, pages, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "checks.grading.feedback",
            str(out),
            "--roster",
            str(out.parent / "roster.csv"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 7 learner page(s)" in result.stdout
    again = (out / "feedback" / "index.html").read_text(encoding="utf-8")
    assert again == pages["index.html"]  # another process, the same bytes (the chart's ids too)
    bad = subprocess.run(
        [sys.executable, "-m", "checks.feedback", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "grades" in bad.stderr


# ---------------------------------------------------------------- in a browser


def _chromium():
    require_browser()
    from playwright.sync_api import sync_playwright

    return sync_playwright, CHROMIUM, CHROMIUM_FLAGS


def _rgb(colour: str) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


@pytest.mark.e2e
def test_the_pages_in_headless_chromium(out, pages):
    sync_playwright, chromium, flags = _chromium()
    folder = out / "feedback"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=flags, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto((folder / page_names(sorted({r[0] for r in CLASS}))["bob smith"]).as_uri())
            body = page.inner_text("body")
            assert "Feedback for Smith, Bob" in body and "Total: 1.5 / 4 points" in body
            assert "33% of the class" in body and "right formula, wrong sign of n" in body
            assert "-0.323575" not in body
            fail = page.locator(".workbook-verdict.workbook-fail").first
            assert fail.inner_text() == "✗" and fail.is_visible()
            assert fail.evaluate("e => getComputedStyle(e).color") == _rgb(FAIL)
            ok = page.locator(".workbook-verdict.workbook-pass").first
            assert ok.inner_text() == "✓"
            assert ok.evaluate("e => getComputedStyle(e).color") == _rgb(PASS)
            word = page.locator("b", has_text="sign").first
            assert word.evaluate("e => getComputedStyle(e).fontWeight") in ("700", "bold")

            page.goto((folder / "index.html").as_uri())
            body = page.inner_text("body")
            assert "Class results" in body and "7 submissions" in body and "57%" in body
            chart = page.locator("svg.workbook-chart")
            box = chart.bounding_box()
            assert box and box["width"] > 200 and box["height"] > 100, box
            assert chart.evaluate("e => e.getBBox().width * e.getBBox().height") > 0
            assert all(u.startswith("file://") for u in requests), requests  # nothing from afar
        finally:
            browser.close()


def test_names_that_differ_only_in_white_space_get_pages_of_their_own(tmp_path):
    """grades.csv is read as the grader wrote it: "ann " is another submission than "ann"."""
    with open(tmp_path / "grades.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        w.writerow(["ann", NB3, "ex1/dlogprobs", "true", "", "", "", ""])
        w.writerow(
            [
                "ann ",
                NB3,
                "ex1/dlogprobs",
                "false",
                "sign",
                REAL["sign"][0]["reason"],
                "",
                REAL["sign"][0]["feedback"],
            ]
        )
    paths = write_pages(tmp_path)
    assert len(paths) == 3 and len({p.name for p in paths}) == 3
    pages = [p.read_text(encoding="utf-8") for p in paths[:2]]
    assert sum("Total: 1 / 1 points" in p for p in pages) == 1
    assert sum("Total: 0 / 1 points" in p for p in pages) == 1


def test_an_override_with_an_unquoted_comma_is_refused_not_cut(out, tmp_path):
    """A comment is the instructor's word to the learner: cut at a comma it would say less."""
    (tmp_path / "grades.csv").write_text((out / "grades.csv").read_text())
    (tmp_path / "overrides.csv").write_text(
        "learner,notebook,check,score,comment\ncy,,ex1/dloss,0.5,right idea, wrong sign\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "checks.feedback", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and "line 2" in result.stderr and "double quotes" in result.stderr


def test_the_class_page_lists_who_waits_for_review(pages):
    index = pages["index.html"]
    part = index.split("workbook-for-review", 1)[1]
    assert "1 row of 1 learner, not credited until you have looked at them" in _visible(part)
    rows = [r for r in _read(part).rows if r and r[0] != "learner"]
    assert rows == [
        [
            "ann",
            "03-makemore-backprop",
            "ex1/dloss",
            "the cell uses autograd itself (loss.backward()): look at it by hand: not credited "
            "until an instructor has looked at it",
            "1",  # settled by ann's override
        ]
    ]


def test_a_learner_named_like_html_is_text_on_the_class_page(tmp_path):
    names = ["<img src=x onerror=alert(1)>", "a | b <b>bold</b>", '=HYPERLINK("http://x")']
    with open(tmp_path / "grades.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for name in names:
            w.writerow([name, NB3, "ex1/dloss", "false", "review", REVIEW, "", REVIEW])
    index = write_pages(tmp_path)[-1].read_text(encoding="utf-8")
    part = index.split("workbook-for-review", 1)[1]
    assert "<img" not in index.lower() and "<b>bold" not in index
    assert [r[0] for r in _read(part).rows if r and r[0] != "learner"] == sorted(names)


def test_the_class_page_counts_the_hints_used_per_check():
    """The rows' ``hints`` column (what the notebooks show of ``hint()``) per check on the class
    page: how many learners used hints, and how many of them revealed the solution."""
    from checks.grading.feedback import class_page, class_stats
    from checks.grading.scores import Score

    def score(who: str, hints: str) -> Score:
        return Score(who, NB3, "ex1/dcounts", 1.0, True, "", "", "", hints=hints)

    page = class_page(class_stats([score("ann", "2/3"), score("bo", "revealed"), score("cy", "")]))
    cells = re.findall(r"class=.workbook-hints.[^>]*>([^<]*)<", page)
    assert cells == ["2 (1 revealed)"], cells
