"""Every tensor alive in this process, found fast enough to look for it at each check.

A scan of the garbage collector's objects sees everything, but a kernel holds some 250,000 objects
from its imports (torch, IPython) and a test process several times that, and a check may scan more
than once (a graph's unnamed root, the gradients a second backward pass adds to). So the first scan
``settle``s: it moves every object alive then to the collector's permanent generation (out of
``gc.get_objects()``, as a pre-fork server does) and remembers the tensors among them by weak
reference; later scans read the objects made since, plus those tensors still alive. A notebook
that freezes objects itself (``gc.freeze()``, which would hide its tensors) is seen whole again:
everything is thawed, and the scans read every object from then on.

A module imported after the freeze settles again at the next scan: its objects last as long as the
process, as the first imports' do (torch imports sympy the first time a gradient is asked for with
``torch.autograd.grad``, which a wrong answer's diagnosis does: 100,000 objects more in every later
scan).
"""

from __future__ import annotations

import gc
import itertools
import operator
import sys
import warnings
import weakref

import torch


class _Marker:
    """An object made just after a freeze: the collector loses sight of it only if frozen again."""


# the tensors alive at our freezes, the last freeze's first, each in the collector's order
_FROZEN: list[weakref.ref[torch.Tensor]] = []
_MARK: list[_Marker] = []  # the marker while our freeze holds
_SETTLED: list[bool] = []  # settle ran in this process (once: a thawed process is not frozen again)
_MODULES: list[int] = []  # how many modules were imported at our last freeze


def _tensors_in(objects: list[object]) -> list[torch.Tensor]:
    with warnings.catch_warnings():  # some module attributes warn when touched
        warnings.simplefilter("ignore")
        kinds = map(isinstance, objects, itertools.repeat(torch.Tensor))
        return list(itertools.compress(objects, kinds))


def settle() -> None:
    """Move what is alive now (the imports, in a grading run before the notebook's first cell) out
    of the scans, its tensors remembered; once per process."""
    if _SETTLED:
        return
    _SETTLED.append(True)
    _freeze()


def _freeze() -> None:
    """Remember the tensors alive now and move every object alive out of the scans."""
    gc.collect()
    _FROZEN[:0] = map(weakref.ref, _tensors_in(gc.get_objects()))
    gc.freeze()
    _MARK[:] = [_Marker()]
    _MODULES[:] = [len(sys.modules)]


def objects() -> list[object]:
    """The objects the collector sees, all of them again if the notebook froze objects since our
    freeze (our remembered tensors then need no remembering); those made since our freeze, which
    is made again first if a module was imported since."""
    found = gc.get_objects()
    if _MARK and not any(map(operator.is_, found, itertools.repeat(_MARK[0]))):
        gc.unfreeze()
        _MARK.clear()
        _FROZEN.clear()
        found = gc.get_objects()
    elif _MARK and len(sys.modules) > _MODULES[0]:
        del found
        _freeze()
        found = gc.get_objects()
    return found


def tensors() -> list[torch.Tensor]:
    """Every tensor alive in this process (in a name, a list, a dict, an object, or nowhere)."""
    settle()
    found = _tensors_in(objects())
    seen, kept = set(map(id, found)), []
    for ref in _FROZEN:  # the remembered tensors still alive, each looked up once
        t = ref()
        if t is not None:
            kept.append(ref)
            if id(t) not in seen:
                found.append(t)
    _FROZEN[:] = kept
    return found
