"""Notebook 01 (scalar autograd) filled in as a learner would: answers and Value-class bodies
written independently of the solution blocks, and the slips the notebook must name."""

from __future__ import annotations

import re

import nbformat

from checks.authoring.student import ROOT

NAME = "01-scalar-autograd.ipynb"


def read(folder: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / folder / NAME, as_version=4)


def solution_source(start: str) -> str:
    """The source of the solution's code cell that starts with ``start``."""
    cells = read("solutions").cells
    return next(c.source for c in cells if c.cell_type == "code" and c.source.startswith(start))


# One line per `dX = ...` placeholder, in the order they appear (da: section 1, a value used twice,
# the quiz).
ANSWERS = {
    "dd": ["f * 1"],
    "de": ["dd"],
    "dc": ["dd"],
    "da": ["de * b", "1 + b", "a + a"],
    "db": ["a * de"],
    "df": ["(a * b + c)"],
    "dy": ["y + y"],
    "du": ["dy - dy * y * y"],
    "dx": ["3 * du / 2"],
    "dlogits": [
        "(logits.softmax(1) - torch.nn.functional.one_hot(Y, 2).to(logits.dtype)) / X.shape[0]"
    ],
    "dW3": ["torch.einsum('ni,nj->ij', h2, dlogits)"],
    "db3": ["dlogits.sum(dim=0)"],
    "dh2": ["torch.einsum('nj,ij->ni', dlogits, W3)"],
    "dz2": ["dh2 * slope(act, z2, h2)"],
    "dW2": ["torch.einsum('ni,nj->ij', h1, dz2)"],
    "db2": ["dz2.sum(dim=0)"],
    "dh1": ["torch.einsum('nj,ij->ni', dz2, W2)"],
    "dz1": ["slope(act, z1, h1) * dh1"],
    "dW1": ["torch.einsum('ni,nj->ij', X, dz1)"],
    "db1": ["dz1.sum(dim=0)"],
}


# The body of each stub `raise NotWritten("...<key>...")` of the Value class.
BODIES = {
    "self + other": ["self.grad = self.grad + out.grad", "other.grad = other.grad + out.grad"],
    "self * other": ["self.grad += out.grad * other.data", "other.grad += out.grad * self.data"],
    "self ** k": ["self.grad += out.grad * k * self.data ** (k - 1)"],
    "tanh": ["self.grad += out.grad * (1 - out.data * out.data)"],
    "exp": ["self.grad += out.grad * math.exp(self.data)"],
    "relu": ["self.grad += out.grad if self.data > 0 else 0.0"],
    "Value.backward()": [  # an iterative depth-first walk instead of the recursive one
        "order, seen, stack = [], set(), [(self, False)]",
        "while stack:",
        "    v, finished = stack.pop()",
        "    if finished:",
        "        order.append(v)",
        "    elif v not in seen:",
        "        seen.add(v)",
        "        stack.append((v, True))",
        "        stack.extend((child, False) for child in v._prev)",
        "self.grad = 1.0",
        "for v in order[::-1]:",
        "    v._backward()",
    ],
}


# The slips, in the learner's Value class: `=` for `+=` in the product, and a topological
# order never reversed (each node listed when first reached, the list run from the front).
EQUALS = {
    **BODIES,
    "self * other": ["self.grad = out.grad * other.data", "other.grad = out.grad * self.data"],
}


PRE_ORDER = {
    **BODIES,
    "Value.backward()": [
        "order, seen, stack = [], set(), [self]",
        "while stack:",
        "    v = stack.pop()",
        "    if v not in seen:",
        "        seen.add(v)",
        "        order.append(v)",
        "        stack.extend(v._prev)",
        "self.grad = 1.0",
        "for v in order:",
        "    v._backward()",
    ],
}


RAISE = re.compile(
    r'^(\s*)raise NotWritten\("write (?:the _backward of )?(.+?) '
    r"in (?:the Value class|section 3) first.*$",
    re.M,
)


def fill_value_class(nb, bodies=BODIES):
    def one(m: re.Match) -> str:
        return "\n".join(m.group(1) + line for line in bodies[m.group(2)])

    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("class Value"):
            cell.source, n = RAISE.subn(one, cell.source)
            assert n == len(bodies), n
    return nb
