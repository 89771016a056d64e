"""A notebook run cell by cell in the test's own process (no kernel): fast enough to run the
solutions of many variants, with some answer lines replaced by a learner's."""

from __future__ import annotations

import contextlib
import io
import re

import matplotlib
import matplotlib.pyplot as plt
import nbformat

from checks import session

matplotlib.use("Agg")
# the namespaces that cells left behind, by the cell's text: a cell that loads the data set runs
# once for every variant that has it unchanged
_KEPT: dict[str, dict] = {}


def run_cells(
    nb: nbformat.NotebookNode,
    answers: dict[str, str] | None = None,
    stop: str | None = None,
    keep: str | None = None,
    namespace: dict | None = None,
) -> tuple[dict, list]:
    """Run ``nb``'s code cells in this process up to the one that holds ``stop`` (that one
    included; None: to the end), each solution line ``dX = ...`` of ``answers`` replaced by the
    learner's; the namespace and the checks' results. The cell that holds ``keep`` runs once per
    text in the whole session: what it defines is kept and given again. ``namespace``: what
    earlier cells left (a copy of it is run in), for a notebook's cells from some cell on."""
    session.reset()
    namespace = {"__name__": "__main__", **(namespace or {})}
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        source = cell.source
        for name, line in (answers or {}).items():
            source = re.sub(rf"(?m)^{name} = .*$", lambda _, line=line: line, source)
        if keep is not None and keep in source and source in _KEPT:
            namespace.update(_KEPT[source])
        else:
            before = set(namespace)
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, "<cell>", "exec"), namespace)
            if keep is not None and keep in source:
                _KEPT[source] = {k: namespace[k] for k in set(namespace) - before}
        if stop is not None and stop in source:
            break
    plt.close("all")  # the notebook's pictures, kept by pyplot otherwise
    return namespace, session.results()


def split_at(nb: nbformat.NotebookNode, text: str) -> tuple[nbformat.NotebookNode, ...]:
    """``nb`` cut in two before its first cell that holds ``text``."""
    at = next(i for i, cell in enumerate(nb.cells) if text in cell.source)
    parts = (nb.cells[:at], nb.cells[at:])
    return tuple(nbformat.from_dict({**nb, "cells": part}) for part in parts)
