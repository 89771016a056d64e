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

import html
import math
from dataclasses import dataclass
from typing import Any

import torch

RED = (178, 24, 43)  # ColorBrewer RdBu ends
BLUE = (33, 102, 172)
WHITE = "#ffffff"
NONFINITE = "#3b3b3b"
OUTLINE = "#9a9a9a"
GRID = "#e4e4e4"  # between the cells of a small picture
SHADES = 8  # shades per sign
FLOOR = 0.2  # the lightest shade of a cell outside tolerance (0: white, 1: full colour)
RTOL = 1e-5
CELL_TITLES = 256  # draw a tooltip on every cell when there are at most this many


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
        return sep.join(f"<span style='white-space:nowrap'>{_esc(p)}</span>" for p in parts)

    return (
        "<div class='workbook-heatmap' style='margin:4px 0 2px 4ch;font:11px monospace;"
        "line-height:1.35;max-width:64ch;white-space:normal;text-align:left'>"
        f"<div>{line(pic.parts[:2], ', ')}</div>"
        f"<div style='opacity:0.75;margin-bottom:3px'>{line(pic.parts[2:], '; ')}</div>"
        f"{pic.svg}</div>"
    )


@dataclass(frozen=True)
class _Picture:
    svg: str
    parts: tuple[str, ...]  # of the caption: what and size, max |diff|, then the details


def _picture(
    yours: Any, expected: Any, max_cells: int, cell: int, name: str | None
) -> _Picture | None:
    y, e = _as_float(yours), _as_float(expected)
    if y is None or e is None or max_cells < 1 or cell < 1:
        return None
    if not bool(torch.isfinite(y).any()) or not bool(torch.isfinite(e).any()):
        return None
    yshape, eshape = tuple(y.shape), tuple(e.shape)
    aligned = _align(y, e)
    if aligned is None:
        return None
    y, e, how = aligned
    dropped = len(eshape) - e.ndim  # leading axes of expected dropped
    one_d = e.ndim == 1

    def where(i: int, j: int) -> tuple[int, ...]:
        """A drawn (row, column) as an index into ``expected`` as the learner passed it."""
        return (0,) * dropped + ((j,) if one_d else (i, j))

    diff = y - e
    if one_d:
        diff, y, e = diff[None], y[None], e[None]
    finite = torch.isfinite(diff)
    absd = torch.where(finite, diff.abs(), torch.zeros_like(diff))
    scale = min(1.0, float(e[torch.isfinite(e)].abs().max()))
    ok = finite & (absd <= RTOL * (scale + e.abs()))
    top = float(absd.max())
    rows, cols = diff.shape

    # blocks of br x bc elements per drawn cell
    br, bc = math.ceil(rows / max_cells), math.ceil(cols / max_cells)
    nr, nc = math.ceil(rows / br), math.ceil(cols / bc)
    signed = _blocks(torch.where(finite, diff, torch.zeros_like(diff)), br, bc)
    pick = signed.abs().argmax(-1, keepdim=True)
    value = signed.gather(-1, pick)[..., 0]
    bad = _blocks(~ok & finite, br, bc).any(-1)
    nonfinite = _blocks(~finite, br, bc).any(-1)

    side = cell if max(nr, nc) >= 16 else max(cell, min(3 * cell, 16 * cell // max(nr, nc)))
    small = br == bc == 1 and nr * nc <= CELL_TITLES
    label = f"{name}: " if name else ""
    what = "yours.T − expected" if how == "transposed" else "yours − expected"
    size = f"{cols} elements" if one_d else f"{rows} × {cols}"
    parts = [f"{label}{what}, {size}"]
    flat = int(absd.argmax())
    parts.append(
        f"max |diff| {_num(top)}" + (f" at {where(flat // cols, flat % cols)}" if top > 0 else "")
    )
    wrong, total, n_nonfinite = int((~ok).sum()), diff.numel(), int((~finite).sum())
    parts.append(f"{wrong} / {total} outside tolerance" if wrong else "all within tolerance")
    if n_nonfinite:
        parts.append(f"{n_nonfinite} NaN/inf (dark)")
    if how == "transposed":
        parts.append(f"transposed: yours {yshape} for {eshape}")
    elif how == "broadcast":
        parts.append(f"yours {yshape} broadcast to {eshape}")
    elif yshape != eshape:
        parts.append(f"yours {yshape} for {eshape}")
    if br > 1 or bc > 1:
        parts.append(f"each cell: the largest |diff| of {br} × {bc} elements")
    caption = ", ".join(parts[:2]) + "; " + "; ".join(parts[2:])

    # layout
    digits = max(len(str(rows - 1)), 1) if rows > 1 else 0
    x0 = 6 * digits + 6 if digits else 2
    y0 = 13
    width, height = nc * side, nr * side
    legend_y = y0 + height + 6
    legend_w = (2 * SHADES + 1) * 7
    svg_w = max(x0 + width, x0 + legend_w + 130) + 2
    svg_h = legend_y + 20
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{svg_w}' height='{svg_h}' "
        f"viewBox='0 0 {svg_w} {svg_h}' role='img' aria-label='{_esc(caption)}' "
        "style='display:block;max-width:100%;height:auto;font:9px monospace;overflow:visible'>",
        f"<title>{_esc(caption)}</title>",
        f"<rect x='{x0 - 0.5}' y='{y0 - 0.5}' width='{width + 1}' height='{height + 1}' "
        f"fill='{WHITE}' stroke='{OUTLINE}'/>",
    ]
    # axis hints: first and last index of each axis, and, when only a few rows (columns) are
    # wrong, their indices in bold (in a block, the worst one's)
    score = torch.where(finite, absd, torch.full_like(absd, math.inf))
    score = torch.where(ok, torch.full_like(absd, -1.0), score)
    col_score, row_score = score.max(0).values, score.max(1).values
    wrong_cols = [j for j in range(nc) if bool(bad[:, j].any() | nonfinite[:, j].any())]
    wrong_rows = [i for i in range(nr) if bool(bad[i].any() | nonfinite[i].any())]
    ticks_c = {0: "0", nc - 1: str(cols - 1)}
    bold_c = set(wrong_cols) if 0 < len(wrong_cols) <= 3 and len(wrong_cols) < nc else set()
    ticks_c.update(
        {j: str(j * bc + int(col_score[j * bc : (j + 1) * bc].argmax())) for j in bold_c}
    )
    ticks_r = {} if one_d else {0: "0", nr - 1: str(rows - 1)}
    bold_r = (
        set(wrong_rows)
        if not one_d and 0 < len(wrong_rows) <= 3 and len(wrong_rows) < nr
        else set()
    )
    ticks_r.update(
        {i: str(i * br + int(row_score[i * br : (i + 1) * br].argmax())) for i in bold_r}
    )
    out.extend(
        _ticks(ticks_c, side, lambda j, t, a: _text(x0 + j * side + side / 2, y0 - 3, t, a), bold_c)
    )
    out.extend(
        _ticks(
            ticks_r,
            side,
            lambda i, t, a: _text(x0 - 3, y0 + (i + 1) * side - 1, t, a),
            bold_r,
            anchor="end",
        )
    )

    for i in range(nr):
        r0, r1 = i * br, min(rows, (i + 1) * br)
        block = absd[r0:r1]
        flat = int(block.argmax())
        at = where(r0 + flat // cols, flat % cols)
        head = "" if one_d else f"rows {r0}–{r1 - 1}" if r1 > r0 + 1 else f"row {r0}"
        tip = f"max |diff| {_num(float(block.max()))} at {at}"
        n_bad = int((~finite[r0:r1]).sum())
        if n_bad:
            tip += f", {n_bad} NaN/inf"
        if not bool((~ok[r0:r1]).any()):
            tip = f"all within tolerance ({tip})"
        out.append(
            f"<g transform='translate({x0},{y0 + i * side})'>"
            f"<title>{_esc(f'{head}: {tip}' if head else tip)}</title>"
        )
        fills = [
            NONFINITE if nonfinite[i, j] else _fill(float(value[i, j]), top) if bad[i, j] else WHITE
            for j in range(nc)
        ]
        if small:
            for j, fill in enumerate(fills):
                tip = (
                    f"{where(i, j)}: yours {_num(float(y[i, j]))}, expected "
                    f"{_num(float(e[i, j]))}, diff {_num(float(diff[i, j]))}"
                )
                out.append(
                    f"<rect x='{j * side}' width='{side}' height='{side}' fill='{fill}' "
                    f"stroke='{GRID}' stroke-width='0.5'><title>{_esc(tip)}</title></rect>"
                )
        else:
            out.extend(_runs(fills, side))
        out.append("</g>")

    # legend: -max ... 0 ... +max, and the NaN swatch when there is one
    lx = x0
    for k in range(-SHADES, SHADES + 1):
        fill = WHITE if k == 0 else _shade(k / abs(k), abs(k))
        out.append(
            f"<rect x='{lx + (k + SHADES) * 7}' y='{legend_y}' width='7' height='7' "
            f"fill='{fill}' stroke='{OUTLINE}' stroke-width='0.3'/>"
        )
    m = _num(top)
    out.append(_text(lx + legend_w / 2, legend_y + 17, "0", "middle"))
    if top > 0:
        out.append(_text(lx, legend_y + 17, f"−{m}", "start"))
        out.append(_text(lx + legend_w, legend_y + 17, f"+{m}", "end"))
    note = "blue: yours too small, red: too large"
    if n_nonfinite:
        out.append(
            f"<rect x='{lx + legend_w + 6}' y='{legend_y}' width='7' height='7' "
            f"fill='{NONFINITE}'/>"
        )
        out.append(_text(lx + legend_w + 16, legend_y + 7, "NaN/inf", "start"))
    else:
        out.append(_text(lx + legend_w + 6, legend_y + 7, note, "start"))
    out.append("</svg>")
    return _Picture("".join(out), tuple(parts))


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
    return f"<text x='{x}' y='{y}' text-anchor='{anchor}' fill='currentColor'>{_esc(text)}</text>"


def _num(x: float) -> str:
    return f"{x:.3g}"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
