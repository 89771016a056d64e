"""``from checks.draw import Drawing, value_graph``, kept working for the notebooks already handed
out: the drawing lives in :mod:`checks.render.draw`."""

from checks.render.draw import Drawing, Edge, Node, makemore_graph, value_graph

__all__ = ["Drawing", "Edge", "Node", "makemore_graph", "value_graph"]
