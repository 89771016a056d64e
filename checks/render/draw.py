"""A network map: a computation graph drawn as SVG in pure Python.

No graphviz, no CSS file, no script: presentation attributes only, so that the drawing looks the
same in JupyterLab, VS Code, Colab and exported HTML. Tensors and parameters are rounded boxes,
operations ellipses; arrows run forwards, from the inputs on the left to the loss on the right.
A node's colour says how its check went (``state``), and an edge with state ``"missing"`` is a use
the learner's gradient left out.

    nodes, edges = makemore_graph()
    Drawing(nodes, edges, title="makemore")      # the last line of a cell shows it
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from checks.render.html import esc

__all__ = ["Drawing", "Edge", "Node", "layout", "makemore_graph", "svg", "value_graph"]

KINDS = ("tensor", "param", "op", "input")
STATES = ("pass", "note", "upstream", "fail", "missing", "")


@dataclass
class Node:
    """One box (or, for ``kind="op"``, one ellipse) of the map.

    ``detail`` is a smaller line under the label (`` / `` splits it into lines), ``state`` colours
    the node (pass, note, upstream, fail, missing = not written, "" = not checked), ``word`` is the
    mistake shown on a failing node, ``tip`` the hover text.
    """

    id: str
    label: str
    kind: str = "tensor"  # "tensor" | "param" | "op" | "input"
    detail: str = ""
    state: str = ""
    word: str = ""
    tip: str = ""


@dataclass
class Edge:
    """An arrow from operand ``src`` to result ``dst``; ``state="missing"`` draws it red."""

    src: str
    dst: str
    state: str = ""  # "" | "missing"


# fill, border, text colour per state (GitHub's Primer palette: green, amber, blue, red, grey)
_PALETTE = {
    "pass": ("#dafbe1", "#1a7f37", "#116329"),
    "note": ("#fff8c5", "#9a6700", "#7d4e00"),
    "upstream": ("#ddf4ff", "#0969da", "#0550ae"),
    "fail": ("#ffebe9", "#cf222e", "#a40e26"),
    "missing": ("#f6f8fa", "#6e7781", "#57606a"),
    "": ("#ffffff", "#6e7781", "#24292f"),
}
_OP = ("#ffffff", "#57606a", "#24292f")
_EDGE = "#57606a"
_RED = "#cf222e"
_DASH = "5 3"
_FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif"

_FONT_SIZE = 12  # the label
_SMALL = 11  # detail and mistake word
_LINE = 14  # line pitch inside a box
_BOX_H = 36
_BOX_MIN_W = 84
_PAD_X = 10
_OP_R = 15  # the ellipse's vertical radius
_GAP_X = 46  # between columns
_GAP_Y = 16  # between boxes in a column
_GAP_DUMMY = 12  # between a long edge passing through a column and a box
_MARGIN = 16
_TITLE_H = 26
_LEGEND_H = 34

_NARROW = set("fijlrtI.,:;'!|()[]{} -/")
_WIDE = set("mwMW@%")


def _text_width(text: str, size: float, bold: bool = False) -> float:
    """An estimate of ``text``'s width in px in a proportional sans-serif font."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.3
        elif ch in _WIDE:
            em += 0.86
        elif ch.isupper() or ch in "#&*+=<>~^_":
            em += 0.66
        else:
            em += 0.56
    return em * size * (1.07 if bold else 1.0)


def _lines(node: Node) -> list[tuple[str, str]]:
    """The text lines of a node, each with its role: label, detail or word."""
    out = [("label", node.label)] if node.label else []
    if node.kind != "op":
        out += [("detail", part) for part in node.detail.split(" / ") if part]
    if node.word:
        out.append(("word", node.word))
    return out or [("label", "")]


def _size(node: Node) -> tuple[float, float]:
    """Width and height of a node's shape in px."""
    if node.kind == "op":
        rx = max(_OP_R, _text_width(node.label, 13) / 2 + 9)
        h = 2 * _OP_R + (_LINE if node.word else 0)
        return (max(2 * rx, _text_width(node.word, _SMALL, True) + 8), h)
    lines = _lines(node)
    w = max(_text_width(t, _FONT_SIZE if r == "label" else _SMALL, r != "detail") for r, t in lines)
    return (max(_BOX_MIN_W, w + 2 * _PAD_X), max(_BOX_H, 16 + _LINE * len(lines)))


@dataclass
class _Layout:
    """Everything ``svg`` needs: item centres (dummies of long edges included), sizes, routes."""

    pos: dict[Hashable, tuple[float, float]]
    size: dict[str, tuple[float, float]]
    column: dict[int, tuple[float, float]]  # layer -> (centre x, width)
    layer: dict[Hashable, int]
    routes: list[tuple[str, str, str, list[Hashable]]]  # src, dst, state, dummies in between
    width: float
    height: float


def _check(nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
    """Refuse a graph that cannot be drawn: repeated ids, unknown kinds, states or nodes, loops."""
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        raise ValueError("node ids must be unique")
    for n in nodes:
        if n.kind not in KINDS:
            raise ValueError(f"node {n.id!r}: kind must be one of {KINDS}, not {n.kind!r}")
        if n.state not in STATES:
            raise ValueError(f"node {n.id!r}: state must be one of {STATES}, not {n.state!r}")
    known = set(ids)
    for e in edges:
        if e.src not in known or e.dst not in known:
            raise ValueError(f"edge {e.src!r} -> {e.dst!r} names an unknown node")
        if e.src == e.dst:
            raise ValueError(f"edge {e.src!r} -> {e.dst!r} is a loop")


def _crossings(order: list[list[Hashable]], succ: dict[Hashable, list[Hashable]]) -> int:
    """Edge crossings between neighbouring layers."""
    total = 0
    for a, b in pairwise(order):
        where = {item: i for i, item in enumerate(b)}
        ends = sorted((i, where[s]) for i, item in enumerate(a) for s in succ[item])
        for k, (_, lo) in enumerate(ends):
            total += sum(1 for _, other in ends[k + 1 :] if other < lo)
    return total


def _pava(target: list[float], weight: list[float], sep: list[float]) -> list[float]:
    """Positions closest to ``target`` (weighted least squares) with ``y[i+1] - y[i] >= sep[i]``."""
    offset = [0.0]
    for s in sep:
        offset.append(offset[-1] + s)
    blocks: list[list[float]] = []  # value, weight, count
    for t, w, o in zip(target, weight, offset, strict=True):
        blocks.append([t - o, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    out: list[float] = []
    for v, _, c in blocks:
        out += [v] * int(c)
    return [z + o for z, o in zip(out, offset, strict=True)]


_Links = dict[Hashable, list[Hashable]]  # an item -> its neighbours in the layer before (after)


def _layout(nodes: Sequence[Node], edges: Sequence[Edge]) -> _Layout:
    """Lay a graph out: layers, long edges through dummies, order in layers, heights, columns."""
    _check(nodes, edges)
    ids = [n.id for n in nodes]
    state = _merged(edges)
    layer = _layers(ids, state)
    up, down, routes = _routes(ids, state, layer)
    order = _order(_by_layer(ids, layer), down, up)
    size = {n.id: _size(n) for n in nodes}
    y = _heights(order, size, up, down)
    return _place(order, layer, size, y, routes)


def _merged(edges: Sequence[Edge]) -> dict[tuple[str, str], str]:
    """One edge per (src, dst), in order of first appearance: missing if any of its copies is."""
    state: dict[tuple[str, str], str] = {}
    for e in edges:
        key = (e.src, e.dst)
        state[key] = "missing" if "missing" in (state.get(key), e.state) else e.state
    return state


def _layers(ids: list[str], state: dict[tuple[str, str], str]) -> dict[Hashable, int]:
    """Each node's layer: its longest path from a source, a source moved right in front of its
    first use, the first layer 0."""
    pred: dict[str, list[str]] = {i: [] for i in ids}
    succ: dict[str, list[str]] = {i: [] for i in ids}
    for s, d in state:
        succ[s].append(d)
        pred[d].append(s)
    layer: dict[Hashable, int] = {}
    for v in _topological(ids, pred, succ):
        layer[v] = 1 + max((layer[p] for p in pred[v]), default=-1)
    for v in ids:
        if not pred[v] and succ[v]:
            layer[v] = min(layer[d] for d in succ[v]) - 1
    low = min(layer.values(), default=0)
    for v in ids:
        layer[v] -= low
    return layer


def _topological(
    ids: list[str], pred: dict[str, list[str]], succ: dict[str, list[str]]
) -> list[str]:
    """The nodes in Kahn's order, ties broken by the caller's order; a cycle is an error."""
    index = {i: k for k, i in enumerate(ids)}
    indeg = {i: len(pred[i]) for i in ids}
    ready = [i for i in ids if indeg[i] == 0]
    topo: list[str] = []
    while ready:
        ready.sort(key=index.__getitem__)
        v = ready.pop(0)
        topo.append(v)
        for d in succ[v]:
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    if len(topo) != len(ids):
        raise ValueError("the graph has a cycle")
    return topo


def _routes(
    ids: list[str], state: dict[tuple[str, str], str], layer: dict[Hashable, int]
) -> tuple[_Links, _Links, list[tuple[str, str, str, list[Hashable]]]]:
    """Links between neighbouring layers (``up``: to the layer before, ``down``: after) and each
    edge's route. A long edge passes through its middle layers as dummies, added to ``layer``."""
    up: _Links = {i: [] for i in ids}
    down: _Links = {i: [] for i in ids}
    routes = []
    for k, ((s, d), st) in enumerate(state.items()):
        chain: list[Hashable] = []
        for j in range(layer[s] + 1, layer[d]):
            item = ("dummy", k, j)
            chain.append(item)
            layer[item] = j
            up[item], down[item] = [], []
        for a, b in pairwise([s, *chain, d]):
            down[a].append(b)
            up[b].append(a)
        routes.append((s, d, st, chain))
    return up, down, routes


def _by_layer(ids: list[str], layer: dict[Hashable, int]) -> list[list[Hashable]]:
    """The items of each layer: the nodes in the caller's order, then the dummies."""
    order: list[list[Hashable]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for item in [*ids, *(i for i in layer if isinstance(i, tuple))]:
        order[layer[item]].append(item)
    return order


def _order(order: list[list[Hashable]], down: _Links, up: _Links) -> list[list[Hashable]]:
    """The order within layers: barycentre sweeps, forwards and backwards; the ordering with the
    fewest crossings seen wins."""
    depth = len(order)
    best, fewest = [list(c) for c in order], _crossings(order, down)
    for sweep in range(8):
        forward = sweep % 2 == 0
        for li in range(1, depth) if forward else range(depth - 2, -1, -1):
            near = order[li - 1] if forward else order[li + 1]
            _sort_by_barycentre(order[li], near, up if forward else down)
        count = _crossings(order, down)
        if count < fewest:
            best, fewest = [list(c) for c in order], count
    return best


def _sort_by_barycentre(col: list[Hashable], near: list[Hashable], links: _Links) -> None:
    """Sort ``col`` by the mean place of each item's links in the layer ``near`` (in place)."""
    where = {item: i for i, item in enumerate(near)}
    keys = {}
    for i, item in enumerate(col):
        nb = [where[x] for x in links[item]]
        keys[item] = (sum(nb) / len(nb) if nb else float(i), i)
    col.sort(key=keys.__getitem__)


def _height(item: Hashable, size: dict[str, tuple[float, float]]) -> float:
    """A node's height; 0 for a dummy."""
    return size[item][1] if item in size else 0.0


def _gap(a: Hashable, b: Hashable, size: dict[str, tuple[float, float]]) -> float:
    """The least distance between the centres of neighbours ``a`` and ``b`` in a column."""
    both = a in size and b in size
    return (_height(a, size) + _height(b, size)) / 2 + (_GAP_Y if both else _GAP_DUMMY)


def _heights(
    order: list[list[Hashable]], size: dict[str, tuple[float, float]], up: _Links, down: _Links
) -> dict[Hashable, float]:
    """Each item's y: every column stacked around 0, then moved as close as it can get to its
    neighbours (backwards and forwards sweeps, then both ways at once), boxes kept apart."""
    y: dict[Hashable, float] = {}
    for col in order:
        at = 0.0
        for k, item in enumerate(col):
            at += _gap(col[k - 1], item, size) if k else 0.0
            y[item] = at
        for item in col:
            y[item] -= at / 2
    depth = len(order)
    for _ in range(6):
        for li in range(1, depth):
            _settle(order[li], [up], y, size, up, down)
        for li in range(depth - 2, -1, -1):
            _settle(order[li], [down], y, size, up, down)
    for _ in range(2):
        for li in range(depth):
            _settle(order[li], [up, down], y, size, up, down)
    return y


def _pull(x: Hashable, size: dict[str, tuple[float, float]], up: _Links, down: _Links) -> float:
    """How hard ``x`` pulls its neighbours: a parameter or input pulls its one user a little."""
    return 0.15 if x in size and not up[x] and len(down[x]) == 1 else 1.0


def _settle(
    col: list[Hashable],
    nbrs: list[_Links],
    y: dict[Hashable, float],
    size: dict[str, tuple[float, float]],
    up: _Links,
    down: _Links,
) -> None:
    """Move one column's items (in ``y``) as close as they can get to the weighted mean of their
    neighbours in ``nbrs``, in their order and kept apart. Dummies hold straight, sources give."""
    target, weight = [], []
    for item in col:
        near = [(y[x], _pull(x, size, up, down)) for nb in nbrs for x in nb[item]]
        total = sum(w for _, w in near)
        target.append(sum(v * w for v, w in near) / total if near else y[item])
        weight.append(
            (4.0 if isinstance(item, tuple) else 1.0)
            * (1.0 if near else 0.2)
            * (0.1 if item in size and not up[item] else 1.0)
        )
    sep = [_gap(a, b, size) for a, b in pairwise(col)]
    for item, v in zip(col, _pava(target, weight, sep), strict=True):
        y[item] = v


def _place(
    order: list[list[Hashable]],
    layer: dict[Hashable, int],
    size: dict[str, tuple[float, float]],
    y: dict[Hashable, float],
    routes: list[tuple[str, str, str, list[Hashable]]],
) -> _Layout:
    """Columns as wide as their widest box, and every item's centre, the top at y = 0."""
    column: dict[int, tuple[float, float]] = {}
    at = 0.0
    for li, col in enumerate(order):
        w = max((size[i][0] for i in col if i in size), default=20.0)
        column[li] = (at + w / 2, w)
        at += w + _GAP_X
    top = min((y[i] - _height(i, size) / 2 for i in y), default=0.0)
    bottom = max((y[i] + _height(i, size) / 2 for i in y), default=0.0)
    pos = {i: (column[layer[i]][0], y[i] - top) for i in y}
    return _Layout(pos, size, column, layer, routes, max(at - _GAP_X, 0.0), bottom - top)


def layout(nodes: Sequence[Node], edges: Sequence[Edge]) -> dict[str, tuple[float, float]]:
    """Centre (x, y) in px of every node: layered left to right, sources in front of first use."""
    lay = _layout(nodes, edges)
    return {n.id: lay.pos[n.id] for n in nodes}


def _f(v: float) -> str:
    """A coordinate: one decimal at most, no trailing zeros."""
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _port(node: Node, box: tuple[float, float, float, float], dy: float, side: int) -> tuple:
    """Where an edge leaves (side=+1) or enters (side=-1) a node, ``dy`` from its middle."""
    x, y, w, h = box
    if node.kind == "op":
        rx, ry = w / 2, h / 2
        dy = max(-ry + 3, min(ry - 3, dy))
        return (x + side * rx * (1 - (dy / ry) ** 2) ** 0.5, y + dy)
    return (x + side * w / 2, y + dy)


def _spread(count: int, h: float, op: bool) -> list[float]:
    """Offsets from a side's middle for ``count`` edges, evenly spaced within a height ``h``."""
    if count < 2:
        return [0.0] * count
    step = min(6.0 if op else 7.0, (h - 12) / (count - 1))
    return [(k - (count - 1) / 2) * step for k in range(count)]


def _legend(nodes: Sequence[Node], edges: Sequence[Edge]) -> list[tuple[str, str]]:
    """The legend's entries: (what, label)."""
    items = [
        ("pass", "pass"),
        ("note", "note"),
        ("upstream", "right, on a wrong earlier answer"),
        ("fail", "wrong"),
        ("missing", "not written"),
    ]
    if any(n.state == "" and n.kind != "op" for n in nodes):
        items.append(("", "not checked"))
    if any(e.state == "missing" for e in edges):
        items.append(("edge", "missing path"))
    if any(n.kind == "param" for n in nodes):
        items.append(("param", "parameter"))
    if any(n.kind == "input" for n in nodes):
        items.append(("input", "input"))
    return items


def _shape(node: Node, x: float, y: float, w: float, h: float) -> list[str]:
    """The outline of a node (one or two elements)."""
    fill, stroke, _ = _OP if node.kind == "op" and node.state == "" else _PALETTE[node.state]
    dash = f' stroke-dasharray="{_DASH}"' if node.state == "missing" else ""
    width = "2" if node.state == "fail" else "1.3"
    paint = f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}'
    if node.kind == "op":
        ry = _OP_R
        return [
            f'<ellipse cx="{_f(x)}" cy="{_f(y - (h / 2 - ry))}" rx="{_f(w / 2)}" '
            f'ry="{ry}" {paint}/>'
        ]
    rx = {"param": 3.0, "input": h / 2}.get(node.kind, 8.0)
    out = [
        f'<rect x="{_f(x - w / 2)}" y="{_f(y - h / 2)}" width="{_f(w)}" height="{_f(h)}" '
        f'rx="{_f(rx)}" {paint}/>'
    ]
    if node.kind == "param":  # a double border
        out.append(
            f'<rect x="{_f(x - w / 2 + 3)}" y="{_f(y - h / 2 + 3)}" width="{_f(w - 6)}" '
            f'height="{_f(h - 6)}" rx="1.5" fill="none" stroke="{stroke}" '
            f'stroke-width="0.8"{dash}/>'
        )
    return out


def _text(node: Node, x: float, y: float, h: float) -> list[str]:
    """The lines of text of a node centred on (x, y), each a ``<text>`` element."""
    colour = (_OP if node.kind == "op" and node.state == "" else _PALETTE[node.state])[2]
    if node.kind == "op":
        out = [
            f'<text x="{_f(x)}" y="{_f(y - h / 2 + _OP_R + 4.5)}" text-anchor="middle" '
            f'font-size="13" fill="{colour}">{esc(node.label)}</text>'
        ]
        if node.word:
            out.append(
                f'<text x="{_f(x)}" y="{_f(y + h / 2 - 1)}" text-anchor="middle" '
                f'font-size="{_SMALL}" font-weight="700" fill="{_RED}">'
                f"{esc(node.word)}</text>"
            )
        return out
    lines = _lines(node)
    out = []
    first = y - (len(lines) - 1) * _LINE / 2 + 4
    for k, (role, text) in enumerate(lines):
        style = {
            "label": f'font-size="{_FONT_SIZE}" font-weight="600" fill="{colour}"',
            "detail": f'font-size="{_SMALL}" fill="{colour}"',
            "word": f'font-size="{_SMALL}" font-weight="700" '
            f'fill="{_RED if node.state == "fail" else colour}"',
        }[role]
        out.append(
            f'<text x="{_f(x)}" y="{_f(first + k * _LINE)}" text-anchor="middle" {style}>'
            f"{esc(text)}</text>"
        )
    return out


def svg(
    nodes: Sequence[Node],
    edges: Sequence[Edge],
    title: str = "",
    width: int | None = None,
    legend: bool | None = None,
) -> str:
    """The map as an ``<svg>`` string; ``width`` scales it (px); a legend if any state is set."""
    lay = _layout(nodes, edges)
    uid = "map" + uuid.uuid4().hex[:10]  # the markers' ids: fresh, so that maps can share a page
    if legend is None:
        legend = any(n.state for n in nodes) or any(e.state for e in edges)
    entries = _legend(nodes, edges) if legend else []
    top = _MARGIN + (_TITLE_H if title else 0)
    inner_w = max(lay.width, _legend_width(entries), _text_width(title, 14, True))
    total_w = inner_w + 2 * _MARGIN
    total_h = top + lay.height + (_LEGEND_H + 8 if entries else 0) + _MARGIN
    boxes = {n.id: _box(lay, n.id, top) for n in nodes}
    parts = _head(uid, title, total_w, total_h, width)
    parts += _edges_svg(nodes, lay, boxes, top, uid)
    for n in nodes:
        parts += _node_svg(n, boxes[n.id])
    if entries:
        parts += _legend_svg(entries, top + lay.height + 8 + _LEGEND_H / 2, total_w, uid)
    parts.append("</svg>")
    return "\n".join(parts)


_Box = tuple[float, float, float, float]  # centre x, centre y, width, height


def _box(lay: _Layout, i: str, top: float) -> _Box:
    """Node ``i``'s box on the page: below the title, inside the margin."""
    x, y = lay.pos[i]
    return (x + _MARGIN, y + top, *lay.size[i])


def _legend_width(entries: list[tuple[str, str]]) -> float:
    """The width of the legend's row of entries."""
    return sum(34 + _text_width(label, _SMALL) + 14 for _, label in entries)


def _head(uid: str, title: str, total_w: float, total_h: float, width: int | None) -> list[str]:
    """The ``<svg>`` element's opening, its title, the arrowheads, the background, the title."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_f(total_w)} {_f(total_h)}" '
        + (
            f'width="{width}" height="{_f(total_h * width / total_w)}" '
            if width
            else f'width="{_f(total_w)}" height="{_f(total_h)}" '
        )
        + f'font-family="{esc(_FONT)}" role="img">',
        f"<title>{esc(title or 'network map')}</title>",
        "<defs>",
    ]
    for name, colour, size in (("a", _EDGE, 8), ("m", _RED, 10)):
        parts.append(
            f'<marker id="{uid}-{name}" viewBox="0 0 10 10" refX="10" refY="5" '
            f'markerWidth="{size}" markerHeight="{size}" markerUnits="userSpaceOnUse" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        )
    parts.append("</defs>")
    parts.append(f'<rect x="0" y="0" width="{_f(total_w)}" height="{_f(total_h)}" fill="#ffffff"/>')
    if title:
        parts.append(
            f'<text x="{_MARGIN}" y="{_MARGIN + 14}" font-size="14" font-weight="600" '
            f'fill="#24292f">{esc(title)}</text>'
        )
    return parts


def _ports(
    nodes: Sequence[Node], lay: _Layout, boxes: dict[str, _Box]
) -> tuple[dict[int, float], dict[int, float]]:
    """Where each route leaves its source and enters its destination, as ``dy`` from the node's
    middle, by route: a node's edges fan out along its side, in the order of where they go."""

    def first_hop(route: tuple) -> Hashable:
        return route[3][0] if route[3] else route[1]

    def last_hop(route: tuple) -> Hashable:
        return route[3][-1] if route[3] else route[0]

    out_dy: dict[int, float] = {}
    in_dy: dict[int, float] = {}
    for n in nodes:
        _, _, _, h = boxes[n.id]
        leaving = sorted(
            (k for k, r in enumerate(lay.routes) if r[0] == n.id),
            key=lambda k: lay.pos[first_hop(lay.routes[k])][1],
        )
        arriving = sorted(
            (k for k, r in enumerate(lay.routes) if r[1] == n.id),
            key=lambda k: lay.pos[last_hop(lay.routes[k])][1],
        )
        for ks, store in ((leaving, out_dy), (arriving, in_dy)):
            for k, dy in zip(ks, _spread(len(ks), h, n.kind == "op"), strict=True):
                store[k] = dy
    return out_dy, in_dy


def _edges_svg(
    nodes: Sequence[Node], lay: _Layout, boxes: dict[str, _Box], top: float, uid: str
) -> list[str]:
    """The edges, under the nodes: a ``<path>`` each, missing ones last (on top)."""
    by_id = {n.id: n for n in nodes}
    out_dy, in_dy = _ports(nodes, lay, boxes)
    drawn = sorted(range(len(lay.routes)), key=lambda k: lay.routes[k][2] == "missing")
    parts = ['<g fill="none">']
    for k in drawn:
        src, dst, st, chain = lay.routes[k]
        points = [_port(by_id[src], boxes[src], out_dy[k], +1)]
        for d in chain:
            cx, w = lay.column[lay.layer[d]]
            dy = lay.pos[d][1] + top
            points += [(cx + _MARGIN - w / 2, dy), (cx + _MARGIN + w / 2, dy)]
        points.append(_port(by_id[dst], boxes[dst], in_dy[k], -1))
        parts.append(_edge_svg(by_id[src], by_id[dst], st, points, uid))
    parts.append("</g>")
    return parts


def _curve(points: list[tuple[float, float]]) -> str:
    """A path's ``d`` through ``points``: curves between columns, straight across a column that
    a long edge passes through."""
    d = [f"M{_f(points[0][0])},{_f(points[0][1])}"]
    for j, ((x0, y0), (x1, y1)) in enumerate(pairwise(points)):
        if j % 2 == 1:  # across a column a long edge passes through
            d.append(f"L{_f(x1)},{_f(y1)}")
        else:
            mid = (x1 - x0) / 2
            d.append(f"C{_f(x0 + mid)},{_f(y0)} {_f(x1 - mid)},{_f(y1)} {_f(x1)},{_f(y1)}")
    return " ".join(d)


def _edge_svg(src: Node, dst: Node, st: str, points: list[tuple[float, float]], uid: str) -> str:
    """One edge through ``points``, with its hover text; a missing one red and dashed."""
    tip = f"{src.label} \u2192 {dst.label}"
    if st == "missing":
        tip += ": this path is missing from the gradient"
        paint = (
            f'stroke="{_RED}" stroke-width="2.6" stroke-dasharray="7 4" marker-end="url(#{uid}-m)"'
        )
    else:
        paint = f'stroke="{_EDGE}" stroke-width="1.3" marker-end="url(#{uid}-a)"'
    return (
        f'<path class="edge{" missing" if st else ""}" d="{_curve(points)}" {paint}>'
        f"<title>{esc(tip)}</title></path>"
    )


def _node_svg(n: Node, box: _Box) -> list[str]:
    """One node: a group with its hover text, its outline and its lines of text."""
    x, y, w, h = box
    tip = n.tip or " / ".join(t for t in (n.label, n.detail, n.word) if t)
    return [
        f'<g class="node {n.kind} state-{n.state or "none"}" data-id="{esc(n.id)}">'
        f"<title>{esc(tip)}</title>",
        *_shape(n, x, y, w, h),
        *_text(n, x, y, h),
        "</g>",
    ]


def _legend_svg(entries: list[tuple[str, str]], ly: float, total_w: float, uid: str) -> list[str]:
    """The legend under a rule: a sample and a label per entry, in a row centred on ``ly``."""
    parts = [
        f'<line x1="{_MARGIN}" y1="{_f(ly - _LEGEND_H / 2)}" '
        f'x2="{_f(total_w - _MARGIN)}" y2="{_f(ly - _LEGEND_H / 2)}" '
        f'stroke="#d0d7de" stroke-width="1"/>'
    ]
    x = float(_MARGIN)
    parts.append('<g class="legend">')
    for what, label in entries:
        if what == "edge":
            parts.append(
                f'<path d="M{_f(x)},{_f(ly)} L{_f(x + 26)},{_f(ly)}" stroke="{_RED}" '
                f'stroke-width="2.6" stroke-dasharray="7 4" fill="none" '
                f'marker-end="url(#{uid}-m)"/>'
            )
        else:
            sample = Node(
                "",
                "",
                kind=what if what in ("param", "input") else "tensor",
                state=what if what in STATES else "",
            )
            parts += _shape(sample, x + 13, ly, 26, 16)
        parts.append(
            f'<text x="{_f(x + 32)}" y="{_f(ly + 4)}" font-size="{_SMALL}" '
            f'fill="#24292f">{esc(label)}</text>'
        )
        x += 34 + _text_width(label, _SMALL) + 14
    parts.append("</g>")
    return parts


class Drawing:
    """A map that shows itself when a notebook cell returns it; ``str()`` gives the SVG.

    Every rendering gets fresh marker ids, so that any number of maps can share a page.
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        edges: Sequence[Edge],
        title: str = "",
        width: int | None = None,
        legend: bool | None = None,
    ) -> None:
        self.nodes, self.edges = list(nodes), list(edges)
        self.title, self.width, self.legend = title, width, legend

    def __str__(self) -> str:
        return svg(self.nodes, self.edges, self.title, self.width, self.legend)

    def __repr__(self) -> str:  # the plain-text output: the same on every run
        title = f": {self.title}" if self.title else ""
        return f"<a drawing of {len(self.nodes)} nodes and {len(self.edges)} edges{title}>"

    def _repr_svg_(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        """The SVG at its own size (JupyterLab would shrink it to the page), scrolling sideways."""
        drawing = str(self).replace("<svg ", '<svg style="max-width:none;height:auto" ', 1)
        return f'<div style="overflow-x:auto;max-width:100%">{drawing}</div>'


# notebook 03's forward pass: result, operands, line, shape
_MAKEMORE = [
    ("emb", ("C", "Xb"), "emb = C[Xb]", "(32, 3, 10)"),
    ("embcat", ("emb",), "embcat = emb.view(emb.shape[0], -1)", "(32, 30)"),
    ("hprebn", ("embcat", "W1", "b1"), "hprebn = embcat @ W1 + b1", "(32, 64)"),
    ("bnmeani", ("hprebn",), "bnmeani = 1/n * hprebn.sum(0, keepdim=True)", "(1, 64)"),
    ("bndiff", ("hprebn", "bnmeani"), "bndiff = hprebn - bnmeani", "(32, 64)"),
    ("bndiff2", ("bndiff",), "bndiff2 = bndiff**2", "(32, 64)"),
    ("bnvar", ("bndiff2",), "bnvar = 1/(n-1) * bndiff2.sum(0, keepdim=True)", "(1, 64)"),
    ("bnvar_inv", ("bnvar",), "bnvar_inv = (bnvar + 1e-5)**-0.5", "(1, 64)"),
    ("bnraw", ("bndiff", "bnvar_inv"), "bnraw = bndiff * bnvar_inv", "(32, 64)"),
    ("hpreact", ("bngain", "bnraw", "bnbias"), "hpreact = bngain * bnraw + bnbias", "(32, 64)"),
    ("h", ("hpreact",), "h = torch.tanh(hpreact)", "(32, 64)"),
    ("logits", ("h", "W2", "b2"), "logits = h @ W2 + b2", "(32, 27)"),
    ("logit_maxes", ("logits",), "logit_maxes = logits.max(1, keepdim=True).values", "(32, 1)"),
    ("norm_logits", ("logits", "logit_maxes"), "norm_logits = logits - logit_maxes", "(32, 27)"),
    ("counts", ("norm_logits",), "counts = norm_logits.exp()", "(32, 27)"),
    ("counts_sum", ("counts",), "counts_sum = counts.sum(1, keepdim=True)", "(32, 1)"),
    ("counts_sum_inv", ("counts_sum",), "counts_sum_inv = counts_sum**-1", "(32, 1)"),
    ("probs", ("counts", "counts_sum_inv"), "probs = counts * counts_sum_inv", "(32, 27)"),
    ("logprobs", ("probs",), "logprobs = probs.log()", "(32, 27)"),
    ("loss", ("logprobs", "Yb"), "loss = -logprobs[range(n), Yb].mean()", "a number"),
]
_MAKEMORE_LEAVES = {
    "Xb": ("input", "Xb: the batch's contexts, (32, 3)"),
    "Yb": ("input", "Yb: the batch's next characters, (32,)"),
    "C": ("param", "C: the embedding table, (27, 10)"),
    "W1": ("param", "W1: (30, 64)"),
    "b1": ("param", "b1: (64,)"),
    "bngain": ("param", "bngain: the batch-norm gain, (1, 64)"),
    "bnbias": ("param", "bnbias: the batch-norm bias, (1, 64)"),
    "W2": ("param", "W2: (64, 27)"),
    "b2": ("param", "b2: (27,)"),
}


def makemore_graph() -> tuple[list[Node], list[Edge]]:
    """Notebook 03's forward pass: every named tensor and parameter, operand -> result."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    seen: set[str] = set()
    for name, operands, line, shape in _MAKEMORE:
        for op in operands:
            if op in _MAKEMORE_LEAVES and op not in seen:
                kind, tip = _MAKEMORE_LEAVES[op]
                nodes.append(Node(op, op, kind=kind, tip=tip))
                seen.add(op)
            edges.append(Edge(op, name))
        nodes.append(Node(name, name, tip=f"{line}\n{shape}"))
        seen.add(name)
    return nodes, edges


def _num(x: object) -> str:
    """A Value's data or grad with four decimals (as given when it is not a number)."""
    try:
        return f"{x:.4f}"
    except (TypeError, ValueError):
        return str(x)


def value_graph(root: object) -> tuple[list[Node], list[Edge]]:
    """A micrograd ``Value``'s graph: a box per Value (data, grad), an ellipse per operation."""
    order: list[object] = []
    seen: set[int] = set()
    stack: list[tuple[object, bool]] = [(root, False)]
    while stack:  # depth first, each Value after the Values it was computed from
        v, done = stack.pop()
        if done:
            order.append(v)
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        stack.append((v, True))
        for child in reversed(tuple(getattr(v, "_prev", ()))):
            if id(child) not in seen:
                stack.append((child, False))
    nodes: list[Node] = []
    edges: list[Edge] = []
    # ids in graph order: the same on every run
    name = {id(v): f"v{k}" for k, v in enumerate(order)}
    for v in order:
        vid = name[id(v)]
        label = str(getattr(v, "label", "") or "")
        data, grad = _num(getattr(v, "data", "")), _num(getattr(v, "grad", ""))
        op = str(getattr(v, "_op", "") or "")
        if op:
            nodes.append(Node(f"{vid}:op", op, kind="op", tip=f"{op} makes {label or 'a value'}"))
            for child in {id(c): c for c in v._prev}.values():  # a * a uses a once
                edges.append(Edge(name[id(child)], f"{vid}:op"))
            edges.append(Edge(f"{vid}:op", vid))
        tip = f"{label + ': ' if label else ''}data {data}, grad {grad}"
        nodes.append(Node(vid, label, detail=f"data {data} / grad {grad}", tip=tip))
    return nodes, edges
