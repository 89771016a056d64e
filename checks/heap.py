"""Every tensor alive in this process, found fast enough to look for it at each check.

A scan of the garbage collector's objects sees everything, but a kernel holds some 250,000 objects
from its imports (torch, IPython) and a test process several times that, and a check may scan more
than once (a graph's unnamed root, the gradients a second backward pass adds to). So the first scan
``settle``s: it moves every object alive then to the collector's permanent generation (out of
``gc.get_objects()``, as a pre-fork server does) and remembers the tensors among them by weak
reference; later scans read the objects made since, plus those tensors still alive. A notebook
that freezes objects itself (``gc.freeze()``, which would hide its tensors) is seen whole again:
everything is thawed, and the scans read every object from then on.
"""

from __future__ import annotations

import gc
import itertools
import operator
import warnings
import weakref

import torch


class _Marker:
    """An object made just after a freeze: the collector loses sight of it only if frozen again."""


_FROZEN: weakref.WeakSet[torch.Tensor] = weakref.WeakSet()  # the tensors alive at the freeze
_MARK: list[_Marker] = []  # the marker while our freeze holds
_SETTLED: list[bool] = []  # settle ran in this process (once: a thawed process is not frozen again)


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
    gc.collect()
    _FROZEN.update(_tensors_in(gc.get_objects()))
    gc.freeze()
    _MARK[:] = [_Marker()]


def objects() -> list[object]:
    """The objects the collector sees, all of them again if the notebook froze objects since our
    freeze (our remembered tensors then need no remembering)."""
    found = gc.get_objects()
    if _MARK and not any(map(operator.is_, found, itertools.repeat(_MARK[0]))):
        gc.unfreeze()
        _MARK.clear()
        _FROZEN.clear()
        found = gc.get_objects()
    return found


def tensors() -> list[torch.Tensor]:
    """Every tensor alive in this process (in a name, a list, a dict, an object, or nowhere)."""
    settle()
    found = _tensors_in(objects())
    seen = set(map(id, found))
    return found + [t for t in list(_FROZEN) if id(t) not in seen]
