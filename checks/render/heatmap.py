"""A small picture of where a gradient is wrong: a heatmap of ``yours - expected`` as inline SVG.

Shown in Jupyter next to a failing check's hint, so that a missing broadcast (stripes), one
wrong row (one coloured row) or a transposed answer stands out at a glance. Inline SVG with
inline attributes only: no matplotlib, no image files, no ``<style>`` that could leak into the
page, so it renders alike in JupyterLab, VS Code, Colab and exported HTML.

Decisions:

- Shapes. Leading size-1 axes are dropped from both tensors (``(64,)`` vs ``(1, 64)`` is drawn
  as one row). An answer whose shape broadcasts *to* the expected shape (``(32, 1)`` for
  ``(32, 27)``) is broadcast and drawn over the expected shape: the missing broadcast shows as
  stripes. A transposed answer (``(27, 32)`` for ``(32, 27)``) is drawn as ``yours.T -
  expected`` in the expected layout, captioned "transposed": the cells then line up with the
  tensor the learner is looking at, and an answer that is right but transposed shows as an
  all-white picture whose caption says so. Any other shape gives no picture (None): the
  shape hint says more than a picture could.
- Colour. Diverging, centred on 0: blue for negative (yours too small), white for 0, red for
  positive (yours too large), linear in ``diff / max|diff|``, in 8 shades per sign. A cell
  outside tolerance is never lighter than the lightest shade, so a small error next to a big
  one still shows; a cell within tolerance is white. NaN or infinity is dark grey.
- Tolerance. ``|diff| <= 1e-5 * (s + |expected|)`` where ``s`` is 1, or the gradient's own
  largest ``|expected|`` when that is below 1: for gradients of order 1 this is the usual
  ``1e-5 * (1 + |expected|)``, and a gradient whose entries are all about ``1e-4`` is not
  all "within tolerance" when it is wrong by a percent. Float32 rounding (a few ``1e-7`` of
  the gradient's size) stays white.
- Size. At most ``max_cells`` cells per side: blocks of rows and columns are reduced to the
  element of largest ``|diff|`` (its sign kept), so one wrong element in a block still shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from checks.render.html import esc, num
from checks.tolerances import RTOL

RED = (178, 24, 43)  # ColorBrewer RdBu ends
BLUE = (33, 102, 172)
WHITE = "#ffffff"
NONFINITE = "#3b3b3b"
OUTLINE = "#9a9a9a"
GRID = "#e4e4e4"  # between the cells of a small picture
SHADES = 8  # shades per sign
FLOOR = 0.2  # the lightest shade of a cell outside tolerance (0: white, 1: full colour)
CELL_TITLES = 256  # draw a tooltip on every cell when there are at most this many
_LEGEND_W = (2 * SHADES + 1) * 7  # the legend's swatches, -max ... 0 ... +max


def diff_svg(
    yours: torch.Tensor,
    expected: torch.Tensor,
    max_cells: int = 64,
    cell: int = 7,
    *,
    name: str | None = None,
) -> str | None:
    """An inline SVG heatmap of ``yours - expected``, or None when a picture would not help.

    None for: shapes that are not 1-D or 2-D after dropping leading size-1 axes, shapes that
    neither match, nor broadcast to ``expected``'s, nor are its transpose; fewer than two
    elements; no finite value in either tensor; input that is not numeric. ``max_cells`` caps
    the cells drawn per side, ``cell`` is a cell's side in pixels (small tensors get larger
    cells, up to three times). ``name`` (the gradient's name) goes into the caption.
    """
    pic = _picture(yours, expected, max_cells, cell, name)
    return None if pic is None else pic.svg


def diff_html(yours: torch.Tensor, expected: torch.Tensor, *, name: str | None = None) -> str:
    """The heatmap with its caption in a small ``<div>``, or "" when there is no picture."""
    pic = _picture(yours, expected, 64, 7, name)
    if pic is None:
        return ""

    def line(parts: tuple[str, ...], sep: str) -> str:  # break lines between parts only
        return sep.join(f"<span style='white-space:nowrap'>{esc(p)}</span>" for p in parts)

    return (
        "<div class='workbook-heatmap' style='margin:4px 0 2px 4ch;font:11px monospace;"
        "line-height:1.35;max-width:64ch;white-space:normal;text-align:left'>"
        f"<div>{line(pic.parts[:2], ', ')}</div>"
        f"<div style='opacity:0.75;margin-bottom:3px'>{line(pic.parts[2:], '; ')}</div>"
        f"{pic.svg}</div>"
    )


@dataclass(frozen=True)
class _Picture:
    """A heatmap and its caption."""

    svg: str
    parts: tuple[str, ...]  # of the caption: what and size, max |diff|, then the details


@dataclass(frozen=True)
class _Diff:
    """``yours - expected`` as drawn (rows x columns; a 1-D pair as one row) and its parts."""

    y: torch.Tensor  # yours, laid out as expected
    e: torch.Tensor  # expected
    diff: torch.Tensor
    finite: torch.Tensor  # diff is finite
    absd: torch.Tensor  # |diff|, 0 where it is not finite
    ok: torch.Tensor  # within tolerance
    top: float  # max |diff|
    how: str  # "same", "transposed" or "broadcast"
    yshape: tuple[int, ...]  # as the learner passed them
    eshape: tuple[int, ...]
    dropped: int  # leading axes of expected dropped
    one_d: bool

    @property
    def rows(self) -> int:
        """Rows as drawn."""
        return self.diff.shape[0]

    @property
    def cols(self) -> int:
        """Columns as drawn."""
        return self.diff.shape[1]

    def where(self, i: int, j: int) -> tuple[int, ...]:
        """A drawn (row, column) as an index into ``expected`` as the learner passed it."""
        return (0,) * self.dropped + ((j,) if self.one_d else (i, j))


@dataclass(frozen=True)
class _Grid:
    """The drawn cells: blocks of ``br`` x ``bc`` elements, ``nr`` x ``nc`` of them."""

    br: int
    bc: int
    nr: int
    nc: int
    value: torch.Tensor  # per cell: the block's diff of largest |diff|, its sign kept
    bad: torch.Tensor  # per cell: a finite element outside tolerance
    nonfinite: torch.Tensor  # per cell: a NaN or infinity
    side: int  # a cell's side in px

    @property
    def small(self) -> bool:
        """One element per cell, and few enough cells for a tooltip on each."""
        return self.br == self.bc == 1 and self.nr * self.nc <= CELL_TITLES


def _picture(
    yours: Any, expected: Any, max_cells: int, cell: int, name: str | None
) -> _Picture | None:
    """The heatmap and its caption's parts, or None (see ``diff_svg``)."""
    y, e = _as_float(yours), _as_float(expected)
    if y is None or e is None or max_cells < 1 or cell < 1:
        return None
    d = _diff(y, e)
    if d is None:
        return None
    g = _grid(d, max_cells, cell)
    parts = _caption(d, g, name)
    caption = ", ".join(parts[:2]) + "; " + "; ".join(parts[2:])
    return _Picture(_svg(d, g, caption), tuple(parts))


def _diff(y: torch.Tensor, e: torch.Tensor) -> _Diff | None:
    """``y - e`` with its tolerance, or None when there is nothing finite or no way to align."""
    if not bool(torch.isfinite(y).any()) or not bool(torch.isfinite(e).any()):
        return None
    yshape, eshape = tuple(y.shape), tuple(e.shape)
    aligned = _align(y, e)
    if aligned is None:
        return None
    y, e, how = aligned
    dropped = len(eshape) - e.ndim
    one_d = e.ndim == 1
    diff = y - e
    if one_d:
        diff, y, e = diff[None], y[None], e[None]
    finite = torch.isfinite(diff)
    absd = torch.where(finite, diff.abs(), torch.zeros_like(diff))
    scale = min(1.0, float(e[torch.isfinite(e)].abs().max()))
    ok = finite & (absd <= RTOL * (scale + e.abs()))
    top = float(absd.max())
    return _Diff(y, e, diff, finite, absd, ok, top, how, yshape, eshape, dropped, one_d)


def _grid(d: _Diff, max_cells: int, cell: int) -> _Grid:
    """At most ``max_cells`` cells per side, each the element of largest |diff| in its block;
    cells larger than ``cell`` px (up to three times) when there are few."""
    br, bc = math.ceil(d.rows / max_cells), math.ceil(d.cols / max_cells)
    nr, nc = math.ceil(d.rows / br), math.ceil(d.cols / bc)
    signed = _blocks(torch.where(d.finite, d.diff, torch.zeros_like(d.diff)), br, bc)
    pick = signed.abs().argmax(-1, keepdim=True)
    value = signed.gather(-1, pick)[..., 0]
    bad = _blocks(~d.ok & d.finite, br, bc).any(-1)
    nonfinite = _blocks(~d.finite, br, bc).any(-1)
    side = cell if max(nr, nc) >= 16 else max(cell, min(3 * cell, 16 * cell // max(nr, nc)))
    return _Grid(br, bc, nr, nc, value, bad, nonfinite, side)


def _caption(d: _Diff, g: _Grid, name: str | None) -> list[str]:
    """The caption's parts: what and its size, max |diff| and where, then the details."""
    label = f"{name}: " if name else ""
    what = "yours.T − expected" if d.how == "transposed" else "yours − expected"
    size = f"{d.cols} elements" if d.one_d else f"{d.rows} × {d.cols}"
    parts = [f"{label}{what}, {size}"]
    flat = int(d.absd.argmax())
    at = f" at {d.where(flat // d.cols, flat % d.cols)}" if d.top > 0 else ""
    parts.append(f"max |diff| {_num(d.top)}{at}")
    wrong, total, n_nonfinite = int((~d.ok).sum()), d.diff.numel(), int((~d.finite).sum())
    parts.append(f"{wrong} / {total} outside tolerance" if wrong else "all within tolerance")
    if n_nonfinite:
        parts.append(f"{n_nonfinite} NaN/inf (dark)")
    if d.how == "transposed":
        parts.append(f"transposed: yours {d.yshape} for {d.eshape}")
    elif d.how == "broadcast":
        parts.append(f"yours {d.yshape} broadcast to {d.eshape}")
    elif d.yshape != d.eshape:
        parts.append(f"yours {d.yshape} for {d.eshape}")
    if g.br > 1 or g.bc > 1:
        parts.append(f"each cell: the largest |diff| of {g.br} × {g.bc} elements")
    return parts


def _svg(d: _Diff, g: _Grid, caption: str) -> str:
    """The picture: axis labels above and left of the cells, a legend below."""
    digits = max(len(str(d.rows - 1)), 1) if d.rows > 1 else 0
    x0 = 6 * digits + 6 if digits else 2
    y0 = 13
    width, height = g.nc * g.side, g.nr * g.side
    legend_y = y0 + height + 6
    svg_w = max(x0 + width, x0 + _LEGEND_W + 130) + 2
    svg_h = legend_y + 20
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{svg_w}' height='{svg_h}' "
        f"viewBox='0 0 {svg_w} {svg_h}' role='img' aria-label='{esc(caption)}' "
        "style='display:block;max-width:100%;height:auto;font:9px monospace;overflow:visible'>",
        f"<title>{esc(caption)}</title>",
        f"<rect x='{x0 - 0.5}' y='{y0 - 0.5}' width='{width + 1}' height='{height + 1}' "
        f"fill='{WHITE}' stroke='{OUTLINE}'/>",
    ]
    out += _axes(d, g, x0, y0)
    for i in range(g.nr):
        out += _row(d, g, i, x0, y0)
    out += _legend(d.top, int((~d.finite).sum()), x0, legend_y)
    out.append("</svg>")
    return "".join(out)


def _axes(d: _Diff, g: _Grid, x0: int, y0: int) -> list[str]:
    """Axis hints: the first and last index of each axis, and, when only a few rows (columns)
    are wrong, their indices in bold (in a block, the worst one's)."""
    score = torch.where(d.finite, d.absd, torch.full_like(d.absd, math.inf))
    score = torch.where(d.ok, torch.full_like(d.absd, -1.0), score)
    col_score, row_score = score.max(0).values, score.max(1).values
    wrong_cols = [j for j in range(g.nc) if bool(g.bad[:, j].any() | g.nonfinite[:, j].any())]
    wrong_rows = [i for i in range(g.nr) if bool(g.bad[i].any() | g.nonfinite[i].any())]
    ticks_c = {0: "0", g.nc - 1: str(d.cols - 1)}
    bold_c = _few(wrong_cols, g.nc)
    ticks_c.update(_worst(bold_c, col_score, g.bc))
    ticks_r = {} if d.one_d else {0: "0", g.nr - 1: str(d.rows - 1)}
    bold_r = set() if d.one_d else _few(wrong_rows, g.nr)
    ticks_r.update(_worst(bold_r, row_score, g.br))
    side = g.side
    above = lambda j, t, a: _text(x0 + j * side + side / 2, y0 - 3, t, a)  # column j's label
    left = lambda i, t, a: _text(x0 - 3, y0 + (i + 1) * side - 1, t, a)  # row i's label
    return [
        *_ticks(ticks_c, side, above, bold_c),
        *_ticks(ticks_r, side, left, bold_r, anchor="end"),
    ]


def _few(wrong: list[int], n: int) -> set[int]:
    """The wrong rows (columns) to label in bold: all of them when 1 to 3 of ``n`` are wrong."""
    return set(wrong) if 0 < len(wrong) <= 3 and len(wrong) < n else set()


def _worst(cells: set[int], score: torch.Tensor, b: int) -> dict[int, str]:
    """Each drawn row (column) in ``cells`` labelled with its block's worst element's index."""
    return {k: str(k * b + int(score[k * b : (k + 1) * b].argmax())) for k in cells}


def _row(d: _Diff, g: _Grid, i: int, x0: int, y0: int) -> list[str]:
    """Drawn row ``i``: a group with its tooltip, its cells (each with a tooltip when small)."""
    out = [
        f"<g transform='translate({x0},{y0 + i * g.side})'><title>{esc(_row_tip(d, g, i))}</title>"
    ]
    fills = [_colour(g, i, j, d.top) for j in range(g.nc)]
    if g.small:
        for j, fill in enumerate(fills):
            tip = (
                f"{d.where(i, j)}: yours {_num(float(d.y[i, j]))}, expected "
                f"{_num(float(d.e[i, j]))}, diff {_num(float(d.diff[i, j]))}"
            )
            out.append(
                f"<rect x='{j * g.side}' width='{g.side}' height='{g.side}' fill='{fill}' "
                f"stroke='{GRID}' stroke-width='0.5'><title>{esc(tip)}</title></rect>"
            )
    else:
        out.extend(_runs(fills, g.side))
    out.append("</g>")
    return out


def _colour(g: _Grid, i: int, j: int, top: float) -> str:
    """Cell (i, j)'s fill: dark for NaN/inf, a shade outside tolerance, else white."""
    if g.nonfinite[i, j]:
        return NONFINITE
    return _fill(float(g.value[i, j]), top) if g.bad[i, j] else WHITE


def _row_tip(d: _Diff, g: _Grid, i: int) -> str:
    """Drawn row ``i``'s tooltip: its rows, their max |diff| and where, how many NaN/inf."""
    r0, r1 = i * g.br, min(d.rows, (i + 1) * g.br)
    block = d.absd[r0:r1]
    flat = int(block.argmax())
    at = d.where(r0 + flat // d.cols, flat % d.cols)
    head = "" if d.one_d else f"rows {r0}–{r1 - 1}" if r1 > r0 + 1 else f"row {r0}"
    tip = f"max |diff| {_num(float(block.max()))} at {at}"
    n_bad = int((~d.finite[r0:r1]).sum())
    if n_bad:
        tip += f", {n_bad} NaN/inf"
    if not bool((~d.ok[r0:r1]).any()):
        tip = f"all within tolerance ({tip})"
    return f"{head}: {tip}" if head else tip


def _legend(top: float, n_nonfinite: int, lx: int, legend_y: int) -> list[str]:
    """The legend: -max ... 0 ... +max, and the NaN swatch when there is one (else a note)."""
    out = []
    for k in range(-SHADES, SHADES + 1):
        fill = WHITE if k == 0 else _shade(k / abs(k), abs(k))
        out.append(
            f"<rect x='{lx + (k + SHADES) * 7}' y='{legend_y}' width='7' height='7' "
            f"fill='{fill}' stroke='{OUTLINE}' stroke-width='0.3'/>"
        )
    m = _num(top)
    out.append(_text(lx + _LEGEND_W / 2, legend_y + 17, "0", "middle"))
    if top > 0:
        out.append(_text(lx, legend_y + 17, f"−{m}", "start"))
        out.append(_text(lx + _LEGEND_W, legend_y + 17, f"+{m}", "end"))
    if n_nonfinite:
        out.append(
            f"<rect x='{lx + _LEGEND_W + 6}' y='{legend_y}' width='7' height='7' "
            f"fill='{NONFINITE}'/>"
        )
        out.append(_text(lx + _LEGEND_W + 16, legend_y + 7, "NaN/inf", "start"))
    else:
        note = "blue: yours too small, red: too large"
        out.append(_text(lx + _LEGEND_W + 6, legend_y + 7, note, "start"))
    return out


def _as_float(x: Any) -> torch.Tensor | None:
    """``x`` as a float64 tensor on the CPU, or None when it is not numeric."""
    if x is None or x is Ellipsis:
        return None
    try:
        t = x.detach() if isinstance(x, torch.Tensor) else torch.as_tensor(x)
        if t.is_complex() or t.layout != torch.strided:
            return None
        return t.cpu().to(torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return None


def _align(y: torch.Tensor, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, str] | None:
    """``yours`` and ``expected`` with leading size-1 axes dropped and ``yours`` laid out as
    ``expected`` ("same", "transposed" or "broadcast"), or None when they cannot be."""
    y, e = _squeeze(y, 2), _squeeze(e, 2)
    transposed = (
        y.ndim == 2
        and e.ndim == 2
        and y.shape != e.shape
        and tuple(y.shape) == tuple(e.shape)[::-1]
    )
    if transposed:
        y = y.T
    y, e = _squeeze(y, 1), _squeeze(e, 1)
    if e.ndim not in (1, 2) or e.numel() < 2 or y.ndim > 2:
        return None
    if y.shape == e.shape:
        return y, e, "transposed" if transposed else "same"
    try:
        if torch.broadcast_shapes(y.shape, e.shape) != e.shape:
            return None
    except RuntimeError:
        return None
    return y.expand(e.shape), e, "broadcast"


def _squeeze(t: torch.Tensor, ndim: int) -> torch.Tensor:
    """Drop leading size-1 axes while ``t`` has more than ``ndim`` axes."""
    while t.ndim > ndim and t.shape[0] == 1:
        t = t[0]
    return t


def _blocks(t: torch.Tensor, br: int, bc: int) -> torch.Tensor:
    """``t`` (rows, cols) padded and cut into blocks: (rows/br, cols/bc, br*bc)."""
    rows, cols = t.shape
    nr, nc = math.ceil(rows / br), math.ceil(cols / bc)
    pad = torch.zeros(nr * br, nc * bc, dtype=t.dtype)
    pad[:rows, :cols] = t
    return pad.reshape(nr, br, nc, bc).permute(0, 2, 1, 3).reshape(nr, nc, br * bc)


def _fill(v: float, top: float) -> str:
    """The colour of a cell outside tolerance: shade 1..SHADES of red (v > 0) or blue."""
    if top <= 0 or v == 0:
        return _shade(1.0, 1)
    level = min(SHADES, max(1, math.ceil(abs(v) / top * SHADES)))
    return _shade(math.copysign(1.0, v), level)


def _shade(sign: float, level: int) -> str:
    """Shade ``level`` (1..SHADES, light to full) of red (sign > 0) or blue."""
    end = RED if sign > 0 else BLUE
    a = FLOOR + (1 - FLOOR) * (level - 1) / (SHADES - 1)
    r, g, b = (round(255 + (c - 255) * a) for c in end)
    return f"#{r:02x}{g:02x}{b:02x}"


def _runs(fills: list[str], side: int) -> list[str]:
    """One row's cells as one ``<path>`` per colour, neighbours of the same colour merged and
    white left out (a 64 x 64 picture stays well under 100 kB)."""
    paths: dict[str, list[str]] = {}
    j = 0
    while j < len(fills):
        k = j
        while k + 1 < len(fills) and fills[k + 1] == fills[j]:
            k += 1
        if fills[j] != WHITE:
            w = (k - j + 1) * side
            paths.setdefault(fills[j], []).append(f"M{j * side} 0h{w}v{side}h-{w}z")
        j = k + 1
    return [f"<path fill='{fill}' d='{''.join(d)}'/>" for fill, d in paths.items()]


def _ticks(
    ticks: dict[int, str], side: int, draw: Any, wrong: set[int], anchor: str = "middle"
) -> list[str]:
    """Tick labels at drawn cells, wrong ones first and bold; none closer than 10 px to another."""
    out: list[str] = []
    placed: list[int] = []
    for k in sorted(ticks, key=lambda k: (k not in wrong, k)):
        if all(abs(k - p) * side >= 10 for p in placed):
            placed.append(k)
            label = draw(k, ticks[k], anchor)
            out.append(
                label.replace("<text ", "<text font-weight='bold' ") if k in wrong else label
            )
    return out


def _text(x: float, y: float, text: str, anchor: str) -> str:
    """A label at (x, y) in the text's colour."""
    return f"<text x='{x}' y='{y}' text-anchor='{anchor}' fill='currentColor'>{esc(text)}</text>"


def _num(x: float) -> str:
    """A number with three significant digits."""
    return num(x, 3)
