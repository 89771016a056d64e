"""``checks.heap.tensors``: every tensor alive, wherever it is held, before and after the freeze
that keeps the scans short, and after a notebook's own ``gc.freeze()``; none that has died.

Each case runs in a fresh interpreter: freezing is for the whole process."""

from __future__ import annotations

import textwrap

import pytest

from tests.fresh import run_fresh

SETUP = """
import gc
import torch
from checks import heap

class Holder:
    pass

def made(tag):
    '''Tensors where a notebook keeps them: a name, a list, a dict, an object, a closure, a cycle,
    and a non-leaf that retains its gradient.'''
    W = torch.randn(3, 4, requires_grad=True)
    h = torch.randn(5, 3) @ W
    h.retain_grad()
    box = Holder()
    box.t = torch.ones(2)
    cell = torch.zeros(1)
    cycle = [torch.full((1,), 7.0)]
    cycle.append(cycle)
    return {"W": W, "h": h, "list": [torch.arange(3)], "dict": {"k": torch.eye(2)}, "box": box,
            "closure": lambda: cell, "cycle": cycle, "tag": tag}

def held(kept):
    return [kept["W"], kept["h"], kept["list"][0], kept["dict"]["k"], kept["box"].t,
            kept["closure"](), kept["cycle"][0]]

def found():
    return {id(t) for t in heap.tensors()}
"""


def run(body: str) -> str:
    return run_fresh(SETUP + textwrap.dedent(body))


def test_every_tensor_made_before_and_after_the_first_scan_is_found():
    out = run("""
        before = made("before")
        everything = len(gc.get_objects())
        assert {id(t) for t in held(before)} <= found()  # the first scan settles
        assert len(gc.get_objects()) < everything / 4, "the imports were not moved out of the scan"
        after = made("after")
        seen = found()
        assert {id(t) for t in held(before) + held(after)} <= seen
        assert len(seen) == len(heap.tensors()), "a tensor was listed twice"
        print("ok")
    """)
    assert out.strip() == "ok"


def test_a_module_imported_after_the_first_scan_leaves_the_scans_at_the_next_one():
    """torch imports sympy the first time a gradient is asked for with grad_outputs (a wrong
    answer's diagnosis does): its objects last as long as the imports before it did."""
    out = run("""
        import sys
        before = made("before")
        found()
        settled = len(gc.get_objects())
        x = torch.randn(3, requires_grad=True)
        torch.autograd.grad(x * 2, x, grad_outputs=torch.ones(3))
        assert "sympy" in sys.modules and len(gc.get_objects()) > settled + 20_000
        after = made("after")
        assert {id(t) for t in held(before) + held(after) + [x]} <= found()
        assert len(gc.get_objects()) < settled + 5_000, "the import's objects are still scanned"
        later = made("later")
        assert {id(t) for t in held(before) + held(after) + held(later)} <= found()
        print("ok")
    """)
    assert out.strip() == "ok"


def test_a_tensor_that_died_is_not_found():
    out = run("""
        kept = made("before")
        found()
        gone = id(kept["list"].pop())
        assert gone not in found()
        print("ok")
    """)
    assert out.strip() == "ok"


@pytest.mark.parametrize(
    "hide", ["gc.freeze()", "gc.unfreeze(); gc.freeze()", "gc.collect(); gc.freeze()"]
)
def test_a_notebook_that_freezes_objects_itself_hides_no_tensor(hide):
    out = run(f"""
        before = made("before")
        found()
        after = made("after")
        {hide}
        later = made("later")
        assert {{id(t) for t in held(before) + held(after) + held(later)}} <= found()
        print("ok")
    """)
    assert out.strip() == "ok"
