"""Notebook 03's network (exercise 4: embedding, linear, batch norm with Bessel's correction,
tanh, linear, cross-entropy) stepped two ways, as exercise 5 of ``solutions/03`` defines them,
each returning ``(loss, grads)`` as the notebook's ``step(net, Xb, Yb)`` does, ``net`` and
``grads`` in the order [C, W1, b1, W2, b2, bngain, bnbias]: ``autograd_step`` (its
``step_autograd``, by ``loss.backward()``) and ``fused_step`` (its ``step_fast``: fused
cross-entropy and batch-norm gradients, no graph, in-place work on its own temporaries).

Read from the solution, so that the tests and benches check and time the notebook's own cells
(``tests/test_fast_steps.py``, ``tests/test_cost.py``, ``bench/bench_train.py``);
``defining`` reads notebook 05's fast GPT the same way (``tests/fast_gpt.py``)."""

from __future__ import annotations

import linecache
import re
from pathlib import Path

import nbformat
import torch
import torch.nn.functional as F

from checks.authoring.student import ROOT
from checks.placeholders import NotWritten

SOLUTIONS = ROOT / "solutions"


def defining(solution: Path, *names: str, **given) -> dict:
    """The scope of the code cells of ``solution`` that define the functions ``names`` (one cell
    each), run in order with their nbgrader delimiters taken out, ``torch``, ``F`` and ``given``
    their globals. Each cell's source is kept in ``linecache`` (as IPython keeps a cell's), where
    ``checks.cost`` reads the names its statements assign."""
    nb = nbformat.read(solution, as_version=4)
    scope = {"torch": torch, "F": F, "NotWritten": NotWritten, **given}
    for name in names:
        cells = [c.source for c in nb.cells if c.cell_type == "code" and f"def {name}(" in c.source]
        if len(cells) != 1:
            raise LookupError(f"{len(cells)} cells of {solution.name} define {name}()")
        source = re.sub(r"(?m)^\s*### (BEGIN|END) SOLUTION\n?", "", cells[0])
        where = f"<{solution.stem}: {name}>"
        linecache.cache[where] = (len(source), None, source.splitlines(keepends=True), where)
        exec(compile(source, where, "exec"), scope)
    return scope


_EXERCISE_5 = defining(SOLUTIONS / "03-makemore-backprop.ipynb", "step_autograd", "step_fast")
autograd_step = _EXERCISE_5["step_autograd"]
fused_step = _EXERCISE_5["step_fast"]
