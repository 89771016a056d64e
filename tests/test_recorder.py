"""The grading kernel's scan for autograd's gradients (``checks.grading.recorder``): after
``settle`` it looks at the notebook's objects only, and a notebook that freezes objects itself
(``gc.freeze()``, which would hide its tensors from the scan) is seen in full again.

Each case runs in a fresh interpreter: freezing is for the whole process."""

from __future__ import annotations

import textwrap

import pytest

from tests.fresh import run_fresh

SETUP = """
import gc
import torch
import checks.grading.recorder as r

before = len(gc.get_objects())
r.settle()
after = len(gc.get_objects())

class Holder:
    pass

def made():
    '''Tensors with gradients where a notebook keeps them: a name, a list, a dict, an object,
    and a non-leaf that retains its gradient.'''
    W = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    h = torch.randn(5, 3) @ W + b
    h.retain_grad()
    box = Holder()
    box.params = [W]
    kept = {"b": b}
    h.tanh().sum().backward()
    return [W, b, h], box, kept
"""


def run(body: str) -> str:
    return run_fresh(SETUP + textwrap.dedent(body))


def test_settle_puts_the_imports_out_of_the_scan():
    out = run("""
        tensors, box, kept = made()
        assert after < before / 4, (before, after)
        found = {id(t) for t in r._with_grad()}
        assert {id(t) for t in tensors} <= found, "a tensor with a gradient was missed"
        r.wipe()
        assert all(t.grad is None for t in tensors) and not r._with_grad()
        print("ok")
    """)
    assert out.strip() == "ok"


@pytest.mark.parametrize(
    "hide", ["gc.freeze()", "gc.unfreeze(); gc.freeze()", "gc.collect(); gc.freeze()"]
)
def test_a_notebook_that_freezes_its_tensors_cannot_keep_their_gradients(hide):
    """The notebook freezes after its tensors exist: autograd fills them in later, and the wipe
    before the next answer cell (and the check after it) still finds every one."""
    out = run(f"""
        tensors, box, kept = made()
        for t in tensors:
            t.grad = None
        {hide}
        W, b = tensors[:2]
        (torch.randn(5, 3) @ W + b).tanh().sum().backward()  # the gradients come after the freeze
        assert all(t.grad is not None for t in tensors[:2])
        assert {{id(t) for t in tensors[:2]}} <= {{id(t) for t in r._with_grad()}}
        r.wipe()
        assert all(t.grad is None for t in tensors)
        print("ok")
    """)
    assert out.strip() == "ok"


def test_without_settle_the_scan_sees_everything():
    """The reference run and a self-check outside the grader never call ``settle``."""
    code = """
import torch
import checks.grading.recorder as r
W = torch.randn(3, requires_grad=True)
(W * 2).sum().backward()
assert any(t is W for t in r._with_grad())
r.wipe()
assert W.grad is None
print("ok")
"""
    assert run_fresh(code).strip() == "ok"
