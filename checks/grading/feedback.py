"""Feedback pages: one self-contained HTML page per submission, and a page for the class.

    python -m checks.feedback OUT [--roster FILE]

reads the grader's out folder (``grades.csv``, the instructor's ``overrides.csv``; see
``checks.grading.scores``) and writes ``OUT/feedback/<submission>.html`` for every submission and
``OUT/feedback/index.html`` for the class. A learner's page has, per notebook, each check's
verdict, its mistake word and hint, the instructor's override, the share of the class that passed
it, and the points; the class page the pass rate and the most common mistakes per check, as a
chart (inline SVG) and as a table, and who has rows waiting for review (the instructor's page:
it names learners).

The pages are one file each with inline styles only: no ``<style>`` element, no script, no
stylesheet, font or picture to fetch, so they look the same in any browser and as an e-mail
attachment (the colours are the notebook's, ``checks.verdict``).

They never show an expected value: they show a row's ``feedback``
(``checks.verdict.Result.feedback``: the hint, which states no expected value, and how many elements
differ and where the worst one is), never its ``reason`` (the instructor's column, with the worst
element's expected value). Solution code never reaches a row: the grading kernel never holds it
(``checks.grade``).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from checks.grading.scores import Score, ScoresError, Student, class_scores, fmt_points, totals
from checks.render.html import COLOURS, FAIL, NOTE, PASS, TINT, TODO, code_html, esc
from checks.words import ERROR

FOLDER = "feedback"
INDEX = "index.html"

# ---------------------------------------------------------------- file names


def page_names(submissions: list[str]) -> dict[str, str]:
    """Submission -> its page's file name: letters, digits, ``-`` and ``_`` of the name, with a hash
    of the whole name when anything was changed or two names differ only in case (a Windows or
    macOS disk would take them for one), so that no two submissions share a page or the class's."""

    def slug(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:60] or "submission"

    def hashed(name: str, n: int = 8) -> str:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{slug(name)}-{digest[:n]}"

    folded = collections.Counter(slug(s).lower() for s in submissions)
    names = {
        s: slug(s)
        if slug(s) == s and folded[s.lower()] == 1 and s.lower() not in _RESERVED
        else hashed(s)
        for s in submissions
    }
    taken = collections.Counter(n.lower() for n in names.values())
    for s, n in names.items():  # a name that looks like another's hashed one: the whole hash
        if taken[n.lower()] > 1:
            names[s] = hashed(s, 64)
    assert len({n.lower() for n in names.values()}) == len(names), "two submissions share a page"
    return {s: n + ".html" for s, n in names.items()}


# the class page, and names Windows does not allow for a file
_RESERVED = {
    INDEX.removesuffix(".html"),
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}


# ---------------------------------------------------------------- the numbers


@dataclass
class CheckStats:
    notebook: str
    check: str
    graded: int = 0
    passed: int = 0
    mistakes: collections.Counter = field(default_factory=collections.Counter)
    hinted: int = 0  # submissions whose notebook shows hints used for this check
    revealed: int = 0  # of those, the ones that revealed the solution

    @property
    def rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0

    def common(self, most: int = 3) -> list[tuple[str, int]]:
        return self.mistakes.most_common(most)


@dataclass
class ClassStats:
    submissions: list[str]
    notebooks: list[str]  # in the order of grades.csv
    checks: dict[tuple[str, str], CheckStats]  # (notebook, check) -> stats, in notebook order
    sums: dict[tuple[str, str], tuple[float, float]]  # (submission, notebook) -> (points, max)
    reviews: list[Score] = field(default_factory=list)  # the rows for review, by submission

    def of(self, notebook: str) -> list[CheckStats]:
        return [c for (nb, _), c in self.checks.items() if nb == notebook]

    def mean(self, notebook: str) -> tuple[float, float, int]:
        """Mean points and mean max points over the submissions graded on ``notebook``, and how
        many they are."""
        got = [pm for (_, nb), pm in self.sums.items() if nb == notebook]
        if not got:
            return 0.0, 0.0, 0
        return sum(p for p, _ in got) / len(got), sum(m for _, m in got) / len(got), len(got)


def _word(s: Score) -> str:
    return s.mistake or ERROR  # as report.md counts a failure without a word


def class_stats(scores: list[Score]) -> ClassStats:
    checks: dict[tuple[str, str], CheckStats] = {}
    for s in scores:
        if s.check == "-":  # "no notebook in this submission": no check of the class
            continue
        c = checks.setdefault((s.notebook, s.check), CheckStats(s.notebook, s.check))
        c.graded += 1
        c.passed += s.passed
        c.hinted += bool(s.hints)
        c.revealed += s.hints == "revealed"
        if not s.passed:
            c.mistakes[_word(s)] += 1
    notebooks = list(dict.fromkeys(nb for nb, _ in checks))
    reviews = sorted((s for s in scores if s.mistake == "review"), key=lambda s: s.submission)
    return ClassStats(
        sorted({s.submission for s in scores}), notebooks, checks, totals(scores), reviews
    )


# ---------------------------------------------------------------- the look

_FONT = (
    "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif;"
    "font-size:15px;line-height:1.45"
)
_INK, _MUTED, _RULE, _STRIPE = "#1f2328", "#59636e", "#d1d9e0", "#f6f8fa"
_BODY = f"margin:0;padding:24px;background:#ffffff;color:{_INK};{_FONT}"
_TABLE = (
    "border-collapse:collapse;border-spacing:0;margin:0 0 8px 0;width:100%;text-align:left;"
    "table-layout:fixed;overflow-wrap:anywhere"
)
_CELL = "padding:6px 8px;vertical-align:top;border:none"
_CODE = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:0.92em"
REVIEW = NOTE  # a row waiting for the instructor
LEARNER_COLUMNS = [
    ("check", "left", 13),
    ("", "center", 4),
    ("mistake", "left", 10),
    ("hint", "left", 38),
    ("instructor", "left", 15),
    ("points", "left", 7),
    ("class", "left", 13),
]
CLASS_COLUMNS = [
    ("check", "left", 22),
    ("passed", "left", 13),
    ("pass rate", "left", 13),
    ("most common mistakes", "left", 37),
    ("hints used", "left", 15),
]


def _hint_html(text: str) -> str:
    """Learner-safe text with `code` as code (``code_html`` escapes the rest)."""
    return code_html(text).replace("<code>", f"<code style='{_CODE}'>")


def _th(text: str, align: str = "left") -> str:
    return (
        f"<th style='{_CELL};text-align:{align};font-weight:600;"
        f"border-bottom:2px solid {_RULE};white-space:nowrap'>{text}</th>"
    )


def _td(content: str, style: str = "", cls: str = "") -> str:
    hook = f" class='{cls}'" if cls else ""
    return f"<td{hook} style='{_CELL};{style}'>{content}</td>"


def _tr(k: int, cells: str) -> str:
    background = _STRIPE if k % 2 else "#ffffff"
    return f"<tr style='background:{background};border-bottom:1px solid {_RULE}'>{cells}</tr>"


def _table(head: list[tuple[str, str, int]], rows: list[str], foot: str = "") -> str:
    """A table of the columns ``head`` (title, alignment, width in percent: every table of a
    kind lines up), its body ``rows`` (their cells) and ``foot``."""
    cols = "".join(f"<col style='width:{w}%'>" for _, _, w in head)
    heads = "".join(_th(esc(h), a) for h, a, _ in head)
    body = "".join(_tr(k, r) for k, r in enumerate(rows))
    return (
        f"<table style='{_TABLE}'><colgroup>{cols}</colgroup><thead><tr>{heads}</tr></thead>"
        f"<tbody>{body}</tbody>{foot}</table>"
    )


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title></head>\n<body style='{_BODY}'>"
        f"<div style='max-width:1100px;margin:0 auto'>{body}</div></body></html>\n"
    )


def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def _nb_name(notebook: str) -> str:
    return notebook.removesuffix(".ipynb") if notebook != "-" else "no notebook"


def _state(s: Score) -> tuple[str, str, str]:
    """(symbol, colour, what it means) of a row's verdict, in the notebook's colours."""
    if s.mistake == "review":
        return "?", REVIEW, "for review"
    if s.passed:
        return "✓", COLOURS["note" if s.note else "pass"], "pass"
    state = s.mistake if s.mistake in ("upstream", "missing") else "fail"
    return "✗", COLOURS[state], "fail"


# ---------------------------------------------------------------- a learner's page


def learner_page(
    submission: str, scores: list[Score], stats: ClassStats, student: Student | None = None
) -> str:
    mine = [s for s in scores if s.submission == submission]
    who = student.student if student and student.student else submission
    got = sum(s.points for s in mine)
    most = sum(s.max_points for s in mine)
    parts = [f"<h1 style='font-size:26px;margin:0 0 4px 0'>Feedback for {esc(who)}</h1>"]
    sub = f"submission <code style='{_CODE}'>{esc(submission)}</code>"
    if student and student.section:
        sub += f" · section {esc(student.section)}"
    parts.append(
        f"<p style='margin:0 0 16px 0;color:{_MUTED}'>{sub} · {len(stats.submissions)} "
        f"submission{'s' if len(stats.submissions) != 1 else ''} in the class</p>"
    )
    parts.append(
        f"<p class='workbook-grand-total' style='font-size:18px;margin:0 0 20px 0'>"
        f"<b>Total: {fmt_points(got)} / {fmt_points(most)} points</b> "
        f"<span style='color:{_MUTED}'>(one point per check)</span></p>"
    )
    for nb in dict.fromkeys(s.notebook for s in mine):
        rows = [s for s in mine if s.notebook == nb]
        p, m = stats.sums.get((submission, nb), (0.0, 0.0))
        parts.append(
            f"<h2 style='font-size:20px;margin:24px 0 8px 0'>{esc(_nb_name(nb))} "
            f"<span class='workbook-notebook-total' "
            f"style='font-weight:normal;color:{_MUTED}'>"
            f"— {fmt_points(p)} / {fmt_points(m)} points</span></h2>"
        )
        body = [_learner_row(s, stats) for s in rows]
        foot = (
            f"<tfoot><tr><td colspan='5' style='{_CELL};text-align:right;font-weight:600'>"
            f"{esc(_nb_name(nb))}</td><td style='{_CELL};font-weight:600;white-space:nowrap'>"
            f"{fmt_points(p)} / {fmt_points(m)}</td><td style='{_CELL}'></td></tr></tfoot>"
        )
        parts.append(_table(LEARNER_COLUMNS, body, foot))
    parts.append(
        f"<p style='margin:24px 0 0 0;color:{_MUTED};font-size:13px'>✓ passed · "
        "✗ not yet · ? not credited until the instructor has looked at it. The class "
        "column is the share of the class's submissions whose answer passed that "
        "check.</p>"
    )
    return _page(f"Feedback for {who}", "".join(parts))


def _learner_row(s: Score, stats: ClassStats) -> str:
    symbol, colour, meaning = _state(s)
    check = _td(f"<code style='{_CODE}'>{esc(s.check)}</code>", "white-space:nowrap")
    verdict = _td(
        symbol,
        f"color:{colour};background:{TINT.get(colour, 'transparent')};"
        "font-weight:bold;text-align:center;font-size:18px",
        f"workbook-verdict workbook-{meaning.replace(' ', '-')}",
    )
    word = "" if s.passed else s.mistake
    mistake = _td(
        f"<b style='color:{colour}'>{esc(word)}</b>" if word else "", "white-space:nowrap"
    )
    said = _hint_html(s.feedback if not s.passed else s.note)
    # a fail's notes (a hard-coded batch size, a dtype, the cell's error), but not a review's,
    # which tells the instructor whether the value matches
    extra = s.note if not s.passed and s.mistake != "review" else ""
    if extra:
        said += f"<div style='margin-top:4px;color:{_MUTED}'>{_hint_html(extra)}</div>"
    hint = _td(said, cls="workbook-hint")
    if s.overridden:
        comment = f": {esc(s.comment)}" if s.comment else ""
        over = f"<b>{fmt_points(s.points)} / {fmt_points(s.max_points)}</b>{comment}"
    else:
        over = ""
    instructor = _td(over, cls="workbook-override")
    points = _td(f"{fmt_points(s.points)} / {fmt_points(s.max_points)}", "white-space:nowrap")
    c = stats.checks.get((s.notebook, s.check))
    rate = _td(
        f"{_pct(c.rate)} of the class" if c else "", f"color:{_MUTED}", "workbook-class-rate"
    )
    return check + verdict + mistake + hint + instructor + points + rate


# ---------------------------------------------------------------- the class page


# the chart's matplotlib settings: ids from a fixed salt, text as paths, the pages' colours
_CHART_RC = {
    "svg.hashsalt": "checks.feedback",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "text.color": _INK,
    "axes.edgecolor": _RULE,
    "xtick.color": _MUTED,
    "ytick.color": _INK,
    "axes.labelcolor": _MUTED,
}


def chart_svg(stats: ClassStats) -> str:
    """Horizontal bars of each check's pass rate, one panel per notebook, the most common mistake
    written after each bar: an inline SVG (matplotlib's SVG canvas, no pyplot and no display;
    fixed ids and no date, so the same grades give the same bytes)."""
    import matplotlib
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    nbs = [nb for nb in stats.notebooks if stats.of(nb)]
    if not nbs:
        return ""
    sizes = [len(stats.of(nb)) for nb in nbs]
    with matplotlib.rc_context(_CHART_RC):
        fig = Figure(figsize=(8.0, 0.28 * sum(sizes) + 0.75 * len(nbs) + 0.3))
        FigureCanvasSVG(fig)
        axes = fig.subplots(
            len(nbs), 1, squeeze=False, gridspec_kw={"height_ratios": [k + 1.5 for k in sizes]}
        )[:, 0]
        for ax, nb in zip(axes, nbs, strict=True):
            _chart_panel(ax, stats.of(nb), _chart_title(stats, nb))
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(
            buf,
            format="svg",
            bbox_inches="tight",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    return _inline_svg(buf.getvalue())


def _chart_panel(ax, checks: list[CheckStats], title: str) -> None:
    """One notebook's panel on the matplotlib ``Axes`` ``ax``: per check (the first on top) a
    grey track, a green bar of its pass rate and, after it, the rate and the commonest mistake."""
    y = list(range(len(checks)))[::-1]
    ax.barh(y, [100] * len(checks), color="#eaeef2", height=0.7)
    ax.barh(y, [100 * c.rate for c in checks], color=PASS, height=0.7)
    for yy, c in zip(y, checks, strict=True):
        said, colour = _bar_note(c)
        ax.text(102, yy, said, va="center", ha="left", fontsize=8.5, clip_on=False, color=colour)
    ax.set_yticks(y, [c.check for c in checks], fontfamily="DejaVu Sans Mono", fontsize=8.5)
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.6, len(checks) - 0.4)
    ax.set_xticks([0, 25, 50, 75, 100], ["0%", "25%", "50%", "75%", "100%"])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, loc="left", fontsize=10, fontweight="bold")


def _bar_note(c: CheckStats) -> tuple[str, str]:
    """What is written after a check's bar, and its colour: the pass rate, and the most common
    mistake with its count (red) if there is one."""
    top = c.common(1)
    said = f"{_pct(c.rate)}" + (f"   {top[0][0]} ×{top[0][1]}" if top else "")
    return said, FAIL if top else PASS


def _chart_title(stats: ClassStats, nb: str) -> str:
    """A panel's title: the notebook, its submissions and mean points."""
    mean, most, n = stats.mean(nb)
    return (
        f"{_nb_name(nb)}: pass rate per check ({n} submission"
        f"{'s' if n != 1 else ''}, mean {fmt_points(mean)} / {fmt_points(most)} points)"
    )


def _inline_svg(svg: str) -> str:
    """matplotlib's SVG document as an element of a page: no XML prologue, no metadata, and its
    one stylesheet rule (``*{stroke-linejoin: round; stroke-linecap: butt}``, which would style
    the whole page) as attributes of the ``<svg>`` element, which its shapes inherit."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r"\s*<style[^>]*>.*?</style>", "", svg, flags=re.S)
    svg = re.sub(r"\s*<defs>\s*</defs>", "", svg)
    return svg.replace(
        "<svg ",
        "<svg class='workbook-chart' role='img' "
        "aria-label='pass rate per check' stroke-linejoin='round' "
        "stroke-linecap='butt' style='max-width:100%;height:auto;display:block' ",
        1,
    )


def class_page(stats: ClassStats) -> str:
    n = len(stats.submissions)
    parts = [
        "<h1 style='font-size:26px;margin:0 0 4px 0'>Class results</h1>",
        f"<p class='workbook-submissions' style='margin:0 0 16px 0;color:{_MUTED}'>{n} "
        f"submission{'s' if n != 1 else ''}</p>",
    ]
    means = []
    for nb in stats.notebooks:
        mean, most, graded = stats.mean(nb)
        share = mean / most if most else 0.0
        means.append(
            _td(esc(_nb_name(nb)))
            + _td(str(graded))
            + _td(f"{fmt_points(mean)} / {fmt_points(most)}", cls="workbook-mean")
            + _td(_pct(share))
        )
    parts.append(
        _table(
            [
                ("notebook", "left", 40),
                ("submissions", "left", 20),
                ("mean points", "left", 20),
                ("mean score", "left", 20),
            ],
            means,
        )
    )
    svg = chart_svg(stats)
    if svg:
        parts.append(f"<div style='margin:20px 0'>{svg}</div>")
    for nb in stats.notebooks:
        rows = []
        for c in stats.of(nb):
            words = ", ".join(f"<b>{esc(w)}</b> ×{k}" for w, k in c.common())
            rows.append(
                _td(f"<code style='{_CODE}'>{esc(c.check)}</code>", "white-space:nowrap")
                + _td(f"{c.passed} / {c.graded}", "white-space:nowrap", "workbook-passed")
                + _td(
                    _pct(c.rate),
                    f"color:{PASS if c.rate >= 0.5 else FAIL};font-weight:600",
                    "workbook-rate",
                )
                + _td(words, cls="workbook-mistakes")
                + _td(_hinted(c), cls="workbook-hints")
            )
        parts.append(f"<h2 style='font-size:20px;margin:24px 0 8px 0'>{esc(_nb_name(nb))}</h2>")
        parts.append(_table(CLASS_COLUMNS, rows))
    parts.append(_review_table(stats))
    parts.append(
        f"<p style='margin:24px 0 0 0;color:{_MUTED};font-size:13px'>A check's pass "
        "rate is the grader's verdict (before the instructor's overrides); the mean "
        f"points include the overrides. <span style='color:{TODO}'>error</span> counts a "
        "failure without a mistake word (a cell that raised, a notebook that "
        "stopped).</p>"
    )
    return _page("Class results", "".join(parts))


def _hinted(c: CheckStats) -> str:
    """How many learners' notebooks show hints used for a check (self-reported: a floor)."""
    if not c.hinted:
        return ""
    return f"{c.hinted}" + (f" ({c.revealed} revealed)" if c.revealed else "")


def _review_table(stats: ClassStats) -> str:
    """Who has rows waiting for review (a submission's folder name, escaped), each row with its
    hint and the override that settles it; empty when nobody has."""
    if not stats.reviews:
        return ""
    people = list(dict.fromkeys(s.submission for s in stats.reviews))
    rows = []
    for s in stats.reviews:
        rows.append(
            _td(esc(s.submission), cls="workbook-review-learner")
            + _td(esc(_nb_name(s.notebook)))
            + _td(f"<code style='{_CODE}'>{esc(s.check)}</code>", "white-space:nowrap")
            + _td(_hint_html(s.feedback), cls="workbook-hint")
            + _td(fmt_points(s.points) if s.overridden else "", cls="workbook-override")
        )
    head = [
        ("learner", "left", 18),
        ("notebook", "left", 18),
        ("check", "left", 16),
        ("why", "left", 38),
        ("override", "left", 10),
    ]
    return (
        f"<h2 class='workbook-for-review' style='font-size:20px;margin:24px 0 8px 0'>For review "
        f"<span style='font-weight:normal;color:{_MUTED}'>— {len(stats.reviews)} "
        f"row{'s' if len(stats.reviews) != 1 else ''} of {len(people)} "
        f"learner{'s' if len(people) != 1 else ''}, not credited until you have looked at "
        "them</span></h2>" + _table(head, rows)
    )


# ---------------------------------------------------------------- writing them


def write_pages(out: Path, roster: Path | None = None) -> list[Path]:
    """``out/feedback/<submission>.html`` for every submission of ``out/grades.csv`` and
    ``out/feedback/index.html`` for the class; the paths written (the class page last)."""
    scores, _, people = class_scores(Path(out), roster)
    return _write(Path(out), scores, people)


def _write(out: Path, scores: list[Score], people: dict[str, Student]) -> list[Path]:
    stats = class_stats(scores)
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for sub, name in page_names(stats.submissions).items():
        path = folder / name
        path.write_text(learner_page(sub, scores, stats, people.get(sub)), encoding="utf-8")
        written.append(path)
    index = folder / INDEX
    index.write_text(class_page(stats), encoding="utf-8")
    return [*written, index]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="backprop-workbook feedback", description=__doc__.split("\n")[0]
    )
    p.add_argument("out", type=Path, help="the grader's out folder (holds grades.csv)")
    p.add_argument("--roster", type=Path, help="CSV: submission,student,id,sis_user_id,section")
    a = p.parse_args(argv)
    try:
        scores, warnings, people = class_scores(a.out, a.roster)
        paths = _write(a.out, scores, people)
    except ScoresError as why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {len(paths) - 1} learner page(s) and the class page to {a.out / FOLDER}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
