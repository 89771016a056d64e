"""Every HTML and SVG output is styled inline, so that VS Code and Colab show it as JupyterLab does.

JupyterLab's stylesheet styles bare elements inside an output (``.jp-RenderedHTMLCommon``: table
cells right-aligned, striped rows, bold headers, a grey chip behind ``<pre>``); VS Code and Colab
have their own or none, and neither knows JupyterLab's ``var(--jp-...)`` theme variables. So the
outputs carry no ``<style>``, ``<link>`` or ``<script>``, no CSS variable and no ``@import``; every
table cell says its alignment (a header its weight too), every table row its background, and every
element whose class names a check's state carries that state's colour itself: a class is a hook
for tests, never a look. Real outputs are built here (checks on small tensors with autograd, the
summary with notebook 03's map, notebook 01's Value graph, the hints) and parsed with the
standard library's ``html.parser``; the executed solutions' outputs are scanned as well.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import checks
from checks import cmp, hints
from checks.compare import Summary, expect, reset
from checks.hints import Hint
from checks.render.draw import Drawing, value_graph
from checks.render.heatmap import diff_html
from checks.verdict import COLOURS, FAIL, NOTE, PASS, UPSTREAM
from tests.builders import Value

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}
PAINTED = {"rect", "ellipse", "circle", "path", "line", "polygon", "polyline", "text"}
STATE = re.compile(r"^(?:workbook-|state-)?(pass|note|upstream|missing|fail)$")
SVG_COLOUR = {"pass": PASS, "fail": FAIL, "note": NOTE, "upstream": UPSTREAM}  # a map node's border


# ---------------------------------------------------------------- a small DOM from html.parser


@dataclass(eq=False)
class El:
    tag: str
    attrs: dict[str, str]
    parent: El | None = None
    children: list[El] = field(default_factory=list)
    data: list[str] = field(default_factory=list)  # its own text

    @property
    def text(self) -> str:
        """Its text and its descendants' (each element's own text first: enough for a cell)."""
        return "".join(self.data) + "".join(c.text for c in self.children)

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    @property
    def style(self) -> dict[str, str]:
        """The inline style as {property: value}, properties in lower case."""
        out = {}
        for decl in (self.attrs.get("style") or "").split(";"):
            prop, colon, value = decl.partition(":")
            if colon:
                out[prop.strip().lower()] = value.strip()
        return out

    def ancestors(self):
        el = self.parent
        while el is not None:
            yield el
            el = el.parent

    @property
    def in_svg(self) -> bool:
        return self.tag == "svg" or any(a.tag == "svg" for a in self.ancestors())

    def where(self) -> str:
        return f"<{self.tag} {self.attrs}>"


class Tree(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#document", {})
        self.current = self.root
        self.elements: list[El] = []
        self.feed(text)
        self.close()

    def _add(self, tag: str, attrs: list[tuple[str, str | None]]) -> El:
        el = El(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(el)
        self.elements.append(el)
        return el

    def handle_starttag(self, tag, attrs):
        el = self._add(tag, attrs)
        if tag not in VOID:
            self.current = el

    def handle_startendtag(self, tag, attrs):  # <rect .../>
        self._add(tag, attrs)

    def handle_data(self, data):
        self.current.data.append(data)

    def handle_endtag(self, tag):
        for el in [self.current, *self.current.ancestors()]:
            if el.tag == tag:
                self.current = el.parent or self.root
                return


# ---------------------------------------------------------------- the rules


def assert_no_stylesheet(text: str, what: str = "output") -> None:
    """No <style>, <link> or <script> element, no CSS variable, no @import."""
    found = {el.tag for el in Tree(text).elements} & {"style", "link", "script"}
    assert not found, f"{what}: a <{found.pop()}> element"
    assert not re.search(r"<\s*(style|link|script)\b", text, re.I), f"{what}: a style/link/script"
    assert "var(--" not in text, f"{what}: a CSS variable (var(--...)), which only one host defines"
    assert "@import" not in text.lower(), f"{what}: an @import"


def assert_inline(text: str, what: str = "output") -> list[El]:
    """Everything that decides the look is inline; returns the parsed elements."""
    assert_no_stylesheet(text, what)
    elements = Tree(text).elements
    assert elements, f"{what}: no element at all"
    for el in elements:
        style = el.style
        if el.tag in ("table", "th", "td"):
            assert "text-align" in style, f"{what}: no inline text-align on {el.where()}"
        if el.tag == "th":
            assert "font-weight" in style, f"{what}: no inline font-weight on {el.where()}"
        if el.tag in ("th", "td"):  # JupyterLab pads (0.5em) and borders cells; others differ
            assert "padding" in style and "border" in style, f"{what}: {el.where()}"
        if el.tag == "tr":  # JupyterLab stripes rows, so every row says its background
            assert "background" in style, f"{what}: no inline background on {el.where()}"
        if el.tag == "table":
            assert "border-collapse" in style, f"{what}: {el.where()}"
        if el.tag == "pre":  # JupyterLab: code font, no padding, the page's background
            assert {"font-family", "padding", "background"} <= set(style), f"{what}: {el.where()}"
        if not el.in_svg and el.classes:  # namespaced hooks: no host stylesheet can match them
            assert all(c.startswith("workbook-") for c in el.classes), f"{what}: {el.where()}"
        states = [m.group(1) for c in el.classes if (m := STATE.match(c))]
        if states and not el.in_svg:
            colour = COLOURS[states[-1]]  # workbook-check workbook-<pass|fail> workbook-<state>
            assert colour in style.get("border-left", ""), f"{what}: no state colour: {el.where()}"
            assert "background" in style, f"{what}: state background not inline: {el.where()}"
            mark = next((s for s in _descendants(el) if s.tag == "span"), None)
            assert mark is not None and mark.style.get("color") == colour, f"{what}: {el.where()}"
        if states and el.in_svg:
            _assert_svg_state(el, states[-1], what)
        if el.in_svg and el.tag in PAINTED:
            chain = [el, *el.ancestors()]
            assert any("fill" in a.attrs or "stroke" in a.attrs for a in chain), (
                f"{what}: {el.where()} is painted by no attribute (a stylesheet would decide)"
            )
            if el.tag == "text":
                assert any("fill" in a.attrs for a in chain), f"{what}: no fill: {el.where()}"
    return elements


def _descendants(el: El):
    for child in el.children:
        yield child
        yield from _descendants(child)


def _assert_svg_state(el: El, state: str, what: str) -> None:
    """A map node's outline, or a missing edge, carries its state's colour as attributes."""
    if el.tag == "g":
        shape = next((c for c in el.children if c.tag in ("rect", "ellipse")), None)
        assert shape is not None and shape.attrs.get("fill") and shape.attrs.get("stroke"), (
            f"{what}: the node {el.where()} has no fill and stroke of its own"
        )
        if state in SVG_COLOUR:
            assert shape.attrs["stroke"] == SVG_COLOUR[state], f"{what}: {el.where()}"
    else:  # an edge: class="edge missing"
        assert el.attrs.get("stroke") == FAIL, f"{what}: a missing edge not red: {el.where()}"


# ---------------------------------------------------------------- the rules can fail

BROKEN = {
    "a bare table": "<table><tr><td>1</td></tr></table>",
    "a header of no weight": (
        "<table style='text-align:left;border-collapse:collapse'>"
        "<tr style='background:transparent'><th style='text-align:left;"
        "padding:1px;border:none'>x</th></tr></table>"
    ),
    "a row of no background": (
        "<table style='text-align:left;border-collapse:collapse'><tr>"
        "<td style='text-align:left;padding:1px;border:none'>1</td></tr>"
        "</table>"
    ),
    "a style element": "<style>td { color: red }</style><div>x</div>",
    "a link": "<link rel='stylesheet' href='x.css'><div>x</div>",
    "a script": "<div>x</div><script>alert(1)</script>",
    "a CSS variable": "<div style='color:var(--jp-ui-font-color1)'>x</div>",
    "an @import": "<div style='background:url(x)'>@import url(x.css);</div>",
    "a state class without its colour": (
        "<div class='workbook-check workbook-fail workbook-fail'><span>✗</span> x</div>"
    ),
    "a state class with the wrong colour": (
        f"<div class='workbook-check workbook-pass' style="
        f"'border-left:4px solid {FAIL};background:#fff'>"
        f"<span style='color:{FAIL}'>✓</span></div>"
    ),
    "a class a host could style": "<div class='alert alert-danger'>x</div>",
    "a bare pre": "<div><pre>x = 1</pre></div>",
    "an SVG node painted by a class": (
        "<svg xmlns='http://www.w3.org/2000/svg'><g class='node "
        "state-fail'><rect x='0' y='0'/></g></svg>"
    ),
    "SVG text of no colour": "<svg xmlns='http://www.w3.org/2000/svg'><text>x</text></svg>",
}


@pytest.mark.parametrize("name", BROKEN)
def test_the_rules_fail_on_a_broken_output(name):
    with pytest.raises(AssertionError):
        assert_inline(BROKEN[name], name)


def test_the_rules_pass_a_sound_output():
    assert_inline(
        "<table style='text-align:left;border-collapse:collapse'><thead>"
        "<tr style='background:transparent'><th style='text-align:right;"
        "font-weight:bold;padding:1px;border:none'>n</th></tr></thead></table>"
        f"<div class='workbook-check workbook-fail workbook-missing' style='border-left:"
        f"4px solid {COLOURS['missing']};background:#eee'><span style='color:"
        f"{COLOURS['missing']}'>✗</span></div>"
    )


# ---------------------------------------------------------------- real outputs


@pytest.fixture(autouse=True)
def fresh():
    reset()
    hints.reset()
    yield
    reset()
    hints.reset()


def network():
    """A small softmax and its loss, each intermediate's gradient kept (names as in notebook 03)."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 5, generator=g, requires_grad=True)
    scale = torch.rand(1, 5, generator=g) + 0.5
    h = logits * scale
    counts = h.exp()
    counts_sum = counts.sum(1, keepdim=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    Yb = torch.tensor([0, 3, 1, 4])
    loss = -logprobs[range(4), Yb].mean()
    for t in (h, counts, counts_sum, counts_sum_inv, probs, logprobs):
        t.retain_grad()
    loss.backward(retain_graph=True)
    return dict(
        h=h,
        counts=counts,
        counts_sum=counts_sum,
        counts_sum_inv=counts_sum_inv,
        probs=probs,
        logprobs=logprobs,
        loss=loss,
        Yb=Yb,
    )


def run_checks():
    """A pass, a failure with its heatmap, a missing path, a keepdim note and a missing answer."""
    f = network()
    n = 4  # the batch size by name: a number written in would be noted, even on a pass
    dlogprobs = torch.zeros(n, 5)
    dlogprobs[range(n), f["Yb"]] = -1.0 / n
    dprobs = dlogprobs / f["probs"].detach()
    out = {
        "pass": cmp("logprobs", dlogprobs, f["logprobs"], quiet=True),
        "fail": cmp("probs", -dprobs, f["probs"], quiet=True),  # the sign, 2-D: a heatmap
        "missing-path": cmp(
            "counts", f["counts_sum_inv"].detach() * dprobs, f["counts"], loss=f["loss"], quiet=True
        ),
        "missing": cmp("h", None, f["h"], quiet=True),
    }
    bngain = torch.randn(1, 5, requires_grad=True)
    (bngain * 3).sum().backward()
    out["note"] = cmp("bngain", torch.full((5,), 3.0), bngain, quiet=True)  # keepdim dropped
    return out


def test_a_check_line_is_styled_inline_in_every_state():
    res = run_checks()
    assert [res[k].state for k in ("pass", "fail", "missing-path", "missing", "note")] == [
        "pass",
        "fail",
        "fail",
        "missing",
        "note",
    ]
    assert res["fail"].mistake == "sign"
    assert res["note"].notes[0].word == "keepdim"
    for kind, r in res.items():
        page = r.html()
        elements = assert_inline(page, f"the {kind} check")
        check = next(el for el in elements if "workbook-check" in el.classes)
        assert f"workbook-{r.state}" in check.classes
    assert "<svg" in res["fail"].html()  # the heatmap came with the failing 2-D answer
    assert "<svg" not in res["pass"].html()


def test_the_heatmap_alone_and_with_nan_is_inline():
    e = torch.linspace(-1, 1, 12)
    y = e.clone()
    y[3], y[7] = float("nan"), 2.0
    page = diff_html(y, e, name="b2")
    elements = assert_inline(page, "a 1-D heatmap")
    svg = next(el for el in elements if el.tag == "svg")
    assert "max-width" in svg.style  # JupyterLab shrinks an SVG to the output; now every host does
    assert "NaN/inf" in page


def test_the_summary_table_and_the_map_are_inline():
    res = run_checks()
    checks.hint("counts")  # a rung used: the hints column holds a number
    expect("logits", "W2")  # declared, not run: two grey rows
    table = Summary("03-makemore-backprop")
    page = table._repr_html_()
    elements = assert_inline(page, "the summary")
    assert "<svg" in page and page.count("<table") == 1
    # the columns line up: each cell aligned as its header, numbers to the right
    heads = [el for el in elements if el.tag == "th"]
    align = [th.style["text-align"] for th in heads]
    assert align == ["left", "left", "right", "right", "right", "left"]
    assert all(th.style["font-weight"] == "bold" for th in heads)
    body = [el for el in elements if el.tag == "tr" and el.parent.tag == "tbody"]
    assert len(body) == len(res) + 2
    for tr in body:
        cells = [c for c in tr.children if c.tag == "td"]
        assert [c.style["text-align"] for c in cells] == align
    # rows striped as JupyterLab stripes them: the first plain, the second tinted, and so on
    backgrounds = [tr.style["background"] for tr in body]
    assert backgrounds[0] == "transparent"
    assert all(a != b for a, b in zip(backgrounds, backgrounds[1:], strict=False))
    # the status carries its colour
    status = {tr.children[0].text: tr.children[1] for tr in body}
    assert status["probs"].style["color"] == FAIL and status["logprobs"].style["color"] == PASS
    assert status["bngain"].style["color"] == NOTE
    assert status["W2"].style["color"] == COLOURS["missing"]
    assert status["counts"].parent.children[4].text == "1"  # the hint used
    # the map: nodes coloured by their checks, the missing path red
    nodes = {el.attrs["data-id"]: el for el in elements if el.tag == "g" and "data-id" in el.attrs}
    assert "state-fail" in nodes["probs"].classes and "state-pass" in nodes["logprobs"].classes
    assert "state-note" in nodes["bngain"].classes and "state-missing" in nodes["h"].classes
    assert res["missing-path"].mistake == "missing-path"
    assert [el for el in elements if el.tag == "path" and "missing" in el.classes]
    assert assert_inline(table.map(), "the map")


def test_the_summary_without_a_map_is_inline_too():
    run_checks()
    page = Summary()._repr_html_()
    assert "<svg" not in page
    assert_inline(page, "the summary of another notebook")


def test_notebook_01s_value_graph_is_inline():
    a, b, c = Value(2.0, label="a"), Value(-3.0, label="b"), Value(10.0, label="c")
    e = a * b
    e.label = "e"
    d = e + c
    d.label = "d"
    d.grad, e.grad, c.grad, a.grad, b.grad = 1.0, 1.0, 1.0, -3.0, 2.0
    drawing = Drawing(*value_graph(d), title="d = a*b + c")
    assert_inline(str(drawing), "the Value graph (image/svg+xml)")
    page = drawing._repr_html_()
    elements = assert_inline(page, "the Value graph (text/html)")
    assert elements[0].tag == "div" and elements[1].tag == "svg"
    assert elements[1].style["max-width"] == "none"  # its own size, scrolling sideways


def test_the_hints_are_inline():
    f = network()
    cmp("counts", torch.zeros(4, 5), f["counts"], quiet=True)  # failed: the first rung says why
    shown = [checks.hint("counts") for _ in range(3)] + [checks.hint("counts", reveal=True)]
    shown.append(Hint("dx", 2, 2, "a skeleton", "dx = ____\ndx += ____", "that was the last"))
    shown.append(checks.hint("no_such_name"))
    pres = 0
    for h in shown:
        elements = assert_inline(h._repr_html_(), f"hint {h.number} for {h.name}")
        assert elements[0].style["text-align"] == "left"
        pres += sum(el.tag == "pre" for el in elements)
    assert pres >= 2  # the solution and a skeleton of two lines come as <pre>


# ---------------------------------------------------------------- the committed notebooks


def outputs(path: Path) -> list[tuple[int, str, str]]:
    """(cell, mime type, text) of every HTML and SVG output of an executed notebook."""
    found = []
    for k, cell in enumerate(json.loads(path.read_text())["cells"]):
        for out in cell.get("outputs", []):
            for mime, data in out.get("data", {}).items():
                if mime in ("text/html", "image/svg+xml"):
                    found.append((k, mime, "".join(data) if isinstance(data, list) else data))
    return found


def test_there_are_executed_solutions_to_scan():
    assert len(SOLUTIONS) >= 4
    assert all(outputs(p) for p in SOLUTIONS)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_the_executed_solutions_carry_no_stylesheet(path):
    for k, mime, text in outputs(path):
        assert_no_stylesheet(text, f"{path.name}, cell {k}, {mime}")
