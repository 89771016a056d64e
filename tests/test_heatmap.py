"""The heatmap of ``yours - expected`` shown next to a failing check's hint
(checks/render/heatmap.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import torch

from checks.render.heatmap import WHITE, diff_html, diff_svg

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str | None) -> ET.Element:
    assert svg is not None
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def grid(svg: str | None) -> list[list[str]]:
    """The fill of every drawn cell, row by row (white where nothing is drawn).

    Small pictures draw a ``<rect>`` per cell; larger ones a ``<path>`` per colour and row made
    of runs ``M{x} 0h{w}v{side}h-{w}z``.
    """
    root = parse(svg)
    rows = [g for g in root.iter(f"{SVG}g") if g.get("transform", "").startswith("translate")]
    spans = []  # (row, x, width, fill)
    for i, g in enumerate(rows):
        for r in g.iter(f"{SVG}rect"):
            spans.append(
                (i, int(r.get("x")), int(r.get("width")), int(r.get("height")), r.get("fill"))
            )
        for p in g.iter(f"{SVG}path"):
            for x, w, h in re.findall(r"M(\d+) 0h(\d+)v(\d+)h-\d+z", p.get("d")):
                spans.append((i, int(x), int(w), int(h), p.get("fill")))
    side = min(h for *_, h, _ in spans)
    ncols = (int(float(root.find(f"{SVG}rect").get("width"))) - 1) // side
    out = [[WHITE] * ncols for _ in rows]
    for i, x, w, _, fill in spans:
        for j in range(x // side, (x + w) // side):
            out[i][j] = fill
    return out


def family(fill: str) -> str:
    """ "red", "blue", "white" or "dark" for a cell colour."""
    r, g, b = (int(fill[k : k + 2], 16) for k in (1, 3, 5))
    if (r, g, b) == (255, 255, 255):
        return "white"
    if max(r, g, b) < 100:
        return "dark"
    return "red" if r > b else "blue"


def caption(html: str) -> str:
    return re.sub(r"<svg.*</svg>", "", html, flags=re.S)


def test_svg_parses_as_xml_and_has_a_caption() -> None:
    torch.manual_seed(0)
    e = torch.randn(32, 27)
    y = e + 0.01 * torch.randn(32, 27)
    root = parse(diff_svg(y, e))
    assert root.find(f"{SVG}title").text.startswith("yours − expected, 32 × 27, max |diff| ")
    html = diff_html(y, e)
    assert html.startswith("<div") and "<svg" in html and "32 × 27" in caption(html)
    ET.fromstring(html)  # the whole block is well-formed too


def test_a_single_wrong_row_lights_only_that_row() -> None:
    torch.manual_seed(1)
    e = torch.randn(32, 27)
    y = e.clone()
    y[4] += 0.5 + torch.rand(27)  # every element of row 4 too large
    cells = grid(diff_svg(y, e))
    assert len(cells) == 32 and len(cells[0]) == 27
    assert {family(f) for f in cells[4]} == {"red"}
    assert all(f == WHITE for i, row in enumerate(cells) if i != 4 for f in row)
    assert "at (4, " in parse(diff_svg(y, e)).find(f"{SVG}title").text


def test_a_sign_error_is_the_opposite_colour_of_a_scaled_up_answer() -> None:
    torch.manual_seed(2)
    e = torch.randn(10, 12)
    sign, scaled = grid(diff_svg(-e, e)), grid(diff_svg(2 * e, e))
    for i in range(10):
        for j in range(12):
            a, b = family(sign[i][j]), family(scaled[i][j])
            assert {a, b} == {"red", "blue"}, (i, j, a, b)
    # and where expected is positive, a sign error is "too small": blue
    assert family(sign[0][0]) == ("blue" if e[0, 0] > 0 else "red")


def test_within_tolerance_is_white_and_rounding_does_not_colour() -> None:
    torch.manual_seed(3)
    e = torch.randn(8, 8)
    y = e.double().mul(1 + 3e-7).float()  # float rounding, not a mistake
    y[2, 5] += 1.0
    cells = grid(diff_svg(y, e))
    assert [(i, j) for i in range(8) for j in range(8) if cells[i][j] != WHITE] == [(2, 5)]
    assert "1 / 64 outside tolerance" in caption(diff_html(y, e))


def test_a_small_error_next_to_a_big_one_still_shows() -> None:
    e = torch.zeros(4, 6)
    y = e.clone()
    y[0, 0], y[3, 5] = 100.0, 0.01
    cells = grid(diff_svg(y, e))
    assert family(cells[0][0]) == "red" and family(cells[3][5]) == "red"
    assert cells[3][5] != cells[0][0]  # lighter, but not white


def test_small_gradients_are_not_all_within_tolerance() -> None:
    e = torch.full((5, 5), 1e-4)
    y = e * 1.01  # one percent off everywhere: allclose fails, so must the picture
    assert {family(f) for row in grid(diff_svg(y, e)) for f in row} == {"red"}


def test_one_dimensional_is_one_row() -> None:
    e = torch.linspace(-1, 1, 20)
    y = e.clone()
    y[7] -= 1
    svg = diff_svg(y, e)
    cells = grid(svg)
    assert len(cells) == 1 and len(cells[0]) == 20
    assert [family(f) for f in cells[0]] == ["white"] * 7 + ["blue"] + ["white"] * 12
    assert "20 elements" in caption(diff_html(y, e)) and "at (7,)" in caption(diff_html(y, e))


def test_squeezed_leading_axis_64_for_1_64() -> None:
    torch.manual_seed(4)
    e = torch.randn(1, 64)
    y = e[0].clone()
    y[17] += 2
    cells = grid(diff_svg(y, e))
    assert len(cells) == 1 and len(cells[0]) == 64
    assert [j for j, f in enumerate(cells[0]) if f != WHITE] == [17]
    text = caption(diff_html(y, e))
    assert "at (0, 17)" in text  # an index into expected as passed
    assert "yours (64,) for (1, 64)" in text


def test_transposed_answer_is_drawn_transposed_and_says_so() -> None:
    torch.manual_seed(5)
    e = torch.randn(6, 9)
    right = diff_html(e.T.clone(), e)
    text = caption(right)
    assert "yours.T − expected" in text and "transposed: yours (9, 6) for (6, 9)" in text
    assert "all within tolerance" in text
    assert all(f == WHITE for row in grid(diff_svg(e.T.clone(), e)) for f in row)
    y = e.T.clone()
    y[8, 2] += 1  # yours[8, 2] is expected[2, 8]
    cells = grid(diff_svg(y, e))
    assert len(cells) == 6 and len(cells[0]) == 9
    assert [(i, j) for i in range(6) for j in range(9) if cells[i][j] != WHITE] == [(2, 8)]


def test_a_missing_broadcast_is_drawn_over_the_expected_shape() -> None:
    torch.manual_seed(6)
    e = torch.randn(8, 5)
    y = e[:, :1].clone()  # (8, 1): only the first column, not broadcast
    cells = grid(diff_svg(y, e))
    assert len(cells) == 8 and len(cells[0]) == 5
    assert all(row[0] == WHITE for row in cells) and all(row[1] != WHITE for row in cells)
    assert "yours (8, 1) broadcast to (8, 5)" in caption(diff_html(y, e))


@pytest.mark.parametrize(
    "yours, expected",
    [
        (torch.zeros(5, 3), torch.zeros(3, 4)),  # unrelated shapes
        (torch.zeros(4, 5), torch.zeros(4, 1)),  # yours does not broadcast to expected
        (torch.zeros(32), torch.zeros(32, 1)),  # broadcasts the wrong way: (32, 32)
        (torch.zeros(2, 3, 4), torch.zeros(2, 3, 4)),  # 3-D
        (torch.tensor(1.0), torch.tensor(2.0)),  # one number: the hint says both
        (torch.full((3, 3), float("nan")), torch.zeros(3, 3)),  # NaN only
        (torch.zeros(3, 3), torch.full((3, 3), float("inf"))),
        (None, torch.zeros(3)),
        (..., torch.zeros(3)),
        ("abc", torch.zeros(3)),
        (torch.zeros(3, dtype=torch.complex64), torch.zeros(3)),
    ],
)
def test_no_picture_when_it_would_not_help(yours: object, expected: torch.Tensor) -> None:
    assert diff_svg(yours, expected) is None  # type: ignore[arg-type]
    assert diff_html(yours, expected) == ""  # type: ignore[arg-type]


def test_huge_tensors_are_downsampled() -> None:
    torch.manual_seed(7)
    e = torch.randn(1000, 300)
    y = e.clone()
    y[:, 123] += 1
    y[777, 5] = -50
    for max_cells in (64, 20):
        svg = diff_svg(y, e, max_cells=max_cells)
        cells = grid(svg)
        assert len(cells) <= max_cells and all(len(row) <= max_cells for row in cells)
        assert len(svg) < 100_000
        br, bc = -(-1000 // max_cells), -(-300 // max_cells)
        assert family(cells[777 // br][5 // bc]) == "blue"  # the max-abs element keeps its sign
        assert {family(row[123 // bc]) for row in cells} <= {"red", "blue"}
    assert "each cell: the largest |diff| of 16 × 5 elements" in caption(diff_html(y, e))


def test_nan_in_yours_does_not_raise_and_is_dark() -> None:
    e = torch.ones(4, 4)
    y = e.clone()
    y[1, 2] = float("nan")
    y[3, 3] = float("inf")
    y[0, 0] = 2.0
    cells = grid(diff_svg(y, e))
    assert family(cells[1][2]) == "dark" and family(cells[3][3]) == "dark"
    assert family(cells[0][0]) == "red"
    text = caption(diff_html(y, e))
    assert "2 NaN/inf" in text and "max |diff| 1 at (0, 0)" in text


def test_integer_and_bool_tensors_and_lists() -> None:
    svg = diff_svg(torch.tensor([[1, 2], [3, 5]]), torch.tensor([[1, 2], [3, 4]]))
    assert [[family(f) for f in row] for row in grid(svg)] == [["white", "white"], ["white", "red"]]
    assert diff_svg(torch.tensor([True, False, True]), torch.tensor([1.0, 1.0, 1.0])) is not None
    assert diff_svg([1.0, 2.0, 3.0], torch.tensor([1.0, 2.0, 4.0])) is not None  # type: ignore


def test_requires_grad_and_float64_inputs() -> None:
    e = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert diff_svg(e * 2, e) is not None


def test_text_is_escaped() -> None:
    name = "<b>d&x</b>'\""
    html = diff_html(torch.zeros(3, 3), torch.ones(3, 3), name=name)
    assert "<b>" not in html and "&lt;b&gt;d&amp;x&lt;/b&gt;" in html
    svg = diff_svg(torch.zeros(3, 3), torch.ones(3, 3), name=name)
    root = parse(svg)
    assert root.find(f"{SVG}title").text.startswith(name + ": yours − expected")
    assert root.get("aria-label").startswith(name)
    ET.fromstring(html)


def test_tooltips_on_rows_and_small_cells() -> None:
    e = torch.zeros(3, 4)
    y = e.clone()
    y[1, 2] = 0.5
    root = parse(diff_svg(y, e))
    rows = [g for g in root.iter(f"{SVG}g")]
    assert rows[1].find(f"{SVG}title").text == "row 1: max |diff| 0.5 at (1, 2)"
    assert rows[0].find(f"{SVG}title").text.startswith("row 0: all within tolerance")
    cell = rows[1].findall(f"{SVG}rect")[2].find(f"{SVG}title").text
    assert cell == "(1, 2): yours 0.5, expected 0, diff 0.5"
    big = parse(diff_svg(torch.ones(200, 100), torch.zeros(200, 100)))
    first = next(g for g in big.iter(f"{SVG}g"))
    assert first.find(f"{SVG}title").text.startswith("rows 0–3: max |diff| 1 at ")
    assert all(r.find(f"{SVG}title") is None for r in first.iter(f"{SVG}rect"))
