"""checks.render.draw: the network map is valid SVG, coloured by state, laid out forwards, and its
makemore graph is notebook 03's forward pass (read from the solutions notebook: no drift).
"""

from __future__ import annotations

import ast
import colorsys
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from checks.render.draw import Drawing, Edge, Node, layout, makemore_graph, svg, value_graph
from tests.builders import Value

NS = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[1]

MAKEMORE_NAMES = (
    "C emb embcat W1 b1 hprebn bnmeani bndiff bndiff2 bnvar bnvar_inv bnraw bngain bnbias "
    "hpreact h W2 b2 logits logit_maxes norm_logits counts counts_sum counts_sum_inv probs "
    "logprobs loss Xb Yb"
).split()


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    return root


def groups(root: ET.Element) -> dict[str, ET.Element]:
    """The node groups of a drawing by node id."""
    return {g.get("data-id"): g for g in root.iter(f"{NS}g") if g.get("data-id") is not None}


def texts(g: ET.Element) -> list[str]:
    return [t.text or "" for t in g.iter(f"{NS}text")]


def outline(g: ET.Element) -> ET.Element:
    return next(e for e in g if e.tag in (f"{NS}rect", f"{NS}ellipse"))


def hue(colour: str) -> tuple[float, float, float]:
    """Hue in degrees, saturation and value of a ``#rrggbb`` colour."""
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    h, s, v = colorsys.rgb_to_hsv(r, g, b)
    return h * 360, s, v


def is_red(colour: str) -> bool:
    h, s, _ = hue(colour)
    return (h >= 340 or h <= 15) and s > 0.05


def is_green(colour: str) -> bool:
    h, s, _ = hue(colour)
    return 100 <= h <= 160 and s > 0.05


def is_grey(colour: str) -> bool:
    return hue(colour)[1] < 0.2


def small() -> tuple[list[Node], list[Edge]]:
    nodes = [
        Node("x", "x", kind="input"),
        Node("w", "w", kind="param", state="pass"),
        Node("mul", "*", kind="op"),
        Node("y", "y", state="fail", word="transpose", tip="y = x * w"),
        Node("z", "z", state="missing"),
        Node("u", "u", state="note"),
    ]
    edges = [
        Edge("x", "mul"),
        Edge("w", "mul"),
        Edge("mul", "y"),
        Edge("y", "z"),
        Edge("x", "z", state="missing"),
        Edge("z", "u"),
    ]
    return nodes, edges


def test_svg_parses_with_a_group_per_node_and_the_labels():
    nodes, edges = small()
    root = parse(svg(nodes, edges, title="small"))
    g = groups(root)
    assert set(g) == {n.id for n in nodes}
    for n in nodes:
        assert n.label in texts(g[n.id])
    assert root.get("viewBox").startswith("0 0 ")
    edge_paths = [p for p in root.iter(f"{NS}path") if "edge" in (p.get("class") or "")]
    assert len(edge_paths) == len(edges)
    assert "small" in "".join(t.text or "" for t in root.iter(f"{NS}text"))


def test_colours_follow_the_state():
    nodes, edges = small()
    root = parse(svg(nodes, edges))
    g = groups(root)
    fail = outline(g["y"])
    assert is_red(fail.get("fill")) and is_red(fail.get("stroke"))
    assert hue(fail.get("fill"))[2] > 0.9  # a light fill: the label stays legible
    assert texts(g["y"]) == ["y", "transpose"]
    assert is_green(outline(g["w"]).get("fill")) and is_green(outline(g["w"]).get("stroke"))
    note = outline(g["u"])
    assert 30 <= hue(note.get("stroke"))[0] <= 60  # amber
    missing = outline(g["z"])
    assert is_grey(missing.get("stroke")) and missing.get("stroke-dasharray")
    assert not outline(g["x"]).get("stroke-dasharray")  # not checked: grey, solid
    assert is_grey(outline(g["x"]).get("stroke"))
    # each node's hover text
    assert g["y"].find(f"{NS}title").text == "y = x * w"
    assert all(grp.find(f"{NS}title") is not None for grp in g.values())


def test_a_missing_edge_is_red_dashed_and_thicker():
    nodes, edges = small()
    root = parse(svg(nodes, edges))
    paths = [p for p in root.iter(f"{NS}path") if "edge" in (p.get("class") or "")]
    red = [p for p in paths if "missing" in p.get("class")]
    plain = [p for p in paths if "missing" not in p.get("class")]
    assert len(red) == 1 and len(plain) == len(edges) - 1
    assert is_red(red[0].get("stroke")) and red[0].get("stroke-dasharray")
    assert float(red[0].get("stroke-width")) > max(float(p.get("stroke-width")) for p in plain)
    assert all(not is_red(p.get("stroke")) for p in plain)


def test_legend_names_the_states():
    nodes, edges = small()
    root = parse(svg(nodes, edges))
    legend = next(g for g in root.iter(f"{NS}g") if g.get("class") == "legend")
    words = texts(legend)
    for word in ("pass", "note", "right, on a wrong earlier answer", "wrong", "not written"):
        assert word in words
    assert "missing path" in words
    plain = [Node("a", "a"), Node("b", "b")]
    assert not [
        g for g in parse(svg(plain, [Edge("a", "b")])).iter(f"{NS}g") if g.get("class") == "legend"
    ]


def test_upstream_has_a_colour_of_its_own():
    """A right step on a wrong earlier answer is neither a pass, a note nor a failure: its own
    colour in the check's line, the summary and the map, and its own entry in the legend."""
    from checks.verdict import COLOURS

    assert len(set(COLOURS.values())) == len(COLOURS)
    nodes = [Node("a", "a", state="upstream"), Node("b", "b", state="note")]
    root = parse(svg(nodes, [Edge("a", "b")]))
    strokes = {
        g.get("data-id"): {s.get("stroke") for s in g if s.get("stroke")}
        for g in root.iter(f"{NS}g")
        if g.get("data-id")
    }
    assert strokes["a"] == {COLOURS["upstream"]} and strokes["a"] != strokes["b"]


def test_layout_runs_forwards_and_boxes_do_not_overlap():
    for nodes, edges in (small(), makemore_graph()):
        pos = layout(nodes, edges)
        assert set(pos) == {n.id for n in nodes}
        for e in edges:
            assert pos[e.src][0] < pos[e.dst][0], (e.src, e.dst)
        assert layout(nodes, edges) == pos  # deterministic
        root = parse(svg(nodes, edges))
        boxes = []
        for g in groups(root).values():
            shape = outline(g)
            if shape.tag == f"{NS}rect":
                x, y = float(shape.get("x")), float(shape.get("y"))
                boxes.append((x, y, x + float(shape.get("width")), y + float(shape.get("height"))))
            else:
                cx, cy = float(shape.get("cx")), float(shape.get("cy"))
                rx, ry = float(shape.get("rx")), float(shape.get("ry"))
                boxes.append((cx - rx, cy - ry, cx + rx, cy + ry))
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def test_a_source_sits_right_in_front_of_its_first_use():
    nodes, edges = makemore_graph()
    pos = layout(nodes, edges)
    columns = sorted({x for x, _ in pos.values()})
    col = {k: columns.index(x) for k, (x, _) in pos.items()}
    assert col["Xb"] == col["C"] == 0
    assert col["Yb"] == col["loss"] - 1
    assert col["W2"] == col["b2"] == col["logits"] - 1
    assert col["bngain"] == col["bnbias"] == col["hpreact"] - 1
    assert col["loss"] == max(col.values())


def forward_cell() -> str:
    nb = json.loads((ROOT / "solutions" / "03-makemore-backprop.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    found = [s for s in cells if "emb = C[Xb]" in s and "logprobs[range(n), Yb].mean()" in s]
    assert len(found) == 1
    return found[0]


def test_makemore_graph_is_the_forward_pass_of_notebook_03():
    nodes, edges = makemore_graph()
    ids = [n.id for n in nodes]
    assert sorted(ids) == sorted(MAKEMORE_NAMES)
    assert all(n.label == n.id for n in nodes)
    kinds = {n.id: n.kind for n in nodes}
    assert {k for k, v in kinds.items() if v == "input"} == {"Xb", "Yb"}
    assert {k for k, v in kinds.items() if v == "param"} == {
        "C",
        "W1",
        "b1",
        "bngain",
        "bnbias",
        "W2",
        "b2",
    }
    # the edges, read off the forward cell: each assignment's operands -> its target
    names = set(ids)
    expected, assigned = set(), set()
    for stmt in ast.parse(forward_cell()).body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in names
        ):
            target = stmt.targets[0].id
            assigned.add(target)
            expected |= {
                (sub.id, target)
                for sub in ast.walk(stmt.value)
                if isinstance(sub, ast.Name) and sub.id in names
            }
    got = [(e.src, e.dst) for e in edges]
    assert len(got) == len(set(got))
    assert set(got) == expected
    assert assigned == {k for k, v in kinds.items() if v == "tensor"}
    for pair in [
        ("counts", "counts_sum"),
        ("counts", "probs"),
        ("bndiff", "bndiff2"),
        ("bndiff", "bnraw"),
        ("logits", "logit_maxes"),
        ("logits", "norm_logits"),
    ]:
        assert pair in got


def test_makemore_graph_flows_from_the_inputs_to_the_loss():
    nodes, edges = makemore_graph()
    succ: dict[str, set[str]] = {n.id: set() for n in nodes}
    for e in edges:
        succ[e.src].add(e.dst)
    assert [k for k, v in succ.items() if not v] == ["loss"]
    seen, todo = set(), ["Xb"]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo += succ[v]
    assert {n.id for n in nodes if n.kind == "tensor"} <= seen
    sources = {n.id for n in nodes} - {e.dst for e in edges}
    assert sources == {n.id for n in nodes if n.kind in ("input", "param")}


def test_value_graph_draws_a_box_per_value_and_an_ellipse_per_operation():
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    c = a * b
    c.label = "c"
    d = c + a
    d.label = "d"
    sq = a * a  # one edge for a Value used twice by one operation
    d.grad, c.grad, a.grad, b.grad = 1.0, 1.0, -2.0, 2.0
    nodes, edges = value_graph(d)
    boxes = {n.id: n for n in nodes if n.kind != "op"}
    ops = [n for n in nodes if n.kind == "op"]
    by_label = {n.label: n.id for n in boxes.values()}
    assert set(by_label) == {"a", "b", "c", "d"} and len(boxes) == 4
    assert set(boxes) == {f"v{k}" for k in range(4)}  # ids in graph order: the same on every run
    assert value_graph(d)[0] == nodes
    assert sorted(n.label for n in ops) == ["*", "+"]
    ia, ic, idd = by_label["a"], by_label["c"], by_label["d"]
    assert boxes[ia].detail == "data 2.0000 / grad -2.0000"
    assert boxes[idd].detail == "data -4.0000 / grad 1.0000"
    pairs = {(e.src, e.dst) for e in edges}
    assert len(pairs) == len(edges) == 6
    assert (ia, f"{ic}:op") in pairs and (f"{ic}:op", ic) in pairs
    pos = layout(nodes, edges)
    for e in edges:
        assert pos[e.src][0] < pos[e.dst][0]
    root = parse(svg(nodes, edges, title="value"))
    g = groups(root)
    assert texts(g[ia]) == ["a", "data 2.0000", "grad -2.0000"]
    assert outline(g[f"{ic}:op"]).tag == f"{NS}ellipse"
    assert len(value_graph(sq)[1]) == 2


def test_two_drawings_have_their_own_marker_ids():
    nodes, edges = small()
    first, second = parse(svg(nodes, edges)), parse(svg(nodes, edges))
    ids = [{m.get("id") for m in root.iter(f"{NS}marker")} for root in (first, second)]
    assert ids[0] and ids[1] and not ids[0] & ids[1]
    for root, own in zip((first, second), ids, strict=True):
        used = {
            m
            for el in root.iter()
            for m in re.findall(r"url\(#([^)]+)\)", el.get("marker-end") or "")
        }
        assert used and used <= own


def test_text_is_escaped():
    nodes = [
        Node("a<b", "a<b & c", tip='"quoted" <tip>'),
        Node("d", "d", detail="x < 1", state="fail", word="<sign>"),
    ]
    text = svg(nodes, [Edge("a<b", "d")], title="1 < 2")
    assert "a<b" not in text and "<sign>" not in text and "1 < 2" not in text
    g = groups(parse(text))
    assert texts(g["a<b"]) == ["a<b & c"]
    assert g["a<b"].find(f"{NS}title").text == '"quoted" <tip>'
    assert texts(g["d"]) == ["d", "x < 1", "<sign>"]


def test_drawing_shows_itself_in_a_notebook():
    nodes, edges = makemore_graph()
    d = Drawing(nodes, edges, title="makemore", width=800)
    root = parse(str(d))
    assert root.get("width") == "800"
    assert parse(d._repr_svg_()).tag == f"{NS}svg"
    html = d._repr_html_()
    assert html.startswith("<div") and "<svg" in html
    ET.fromstring(html)  # still well-formed


def test_empty_and_bad_graphs():
    parse(svg([], []))
    with pytest.raises(ValueError, match="unknown"):
        svg([Node("a", "a")], [Edge("a", "b")])
    with pytest.raises(ValueError, match="cycle"):
        layout([Node("a", "a"), Node("b", "b")], [Edge("a", "b"), Edge("b", "a")])
    with pytest.raises(ValueError, match="state"):
        svg([Node("a", "a", state="wrong")], [])


def test_the_summary_of_notebook_03_maps_a_missing_path_as_a_red_edge():
    """cmp names the use a gradient left out (Result.missing_uses); the map draws that edge red."""
    from checks import cmp
    from checks.compare import Summary, reset
    from tests import makemore as mm

    reset()
    p, f, Xb, Yb = mm.setup(retain_graph=True)
    n = Xb.shape[0]
    dlogprobs = torch.zeros_like(f["logprobs"])
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = dlogprobs / f["probs"].detach()
    cmp("probs", dprobs, f["probs"], quiet=True)
    # the path through counts_sum left out
    res = cmp("counts", f["counts_sum_inv"] * dprobs, f["counts"], quiet=True)
    assert res.mistake == "missing-path" and res.missing_uses == ("counts_sum",)
    page = Summary("03-makemore-backprop").map()
    root = parse(page[page.index("<svg") : page.rindex("</svg>") + 6])
    red = [e for e in root.iter(f"{NS}path") if "missing" in (e.get("class") or "")]
    assert len(red) == 1 and red[0].get("stroke") == "#cf222e"
    g = groups(root)
    assert g["counts"].get("class").endswith("state-fail") and g["probs"].get("class").endswith(
        "state-pass"
    )
    assert "missing-path" in texts(g["counts"])[-1] or "missing" in " ".join(texts(g["counts"]))
    reset()
