"""A second device on a machine with only a CPU: tensors that compute on the CPU but live, as torch
sees them, on another device, and that refuse what a CUDA tensor refuses.

CUDA cannot be faked on a CPU-only build (autograd asks the device for a guard that build lacks),
so the stand-in device is ``meta``, whose guard every build has; a ``meta`` tensor made here holds
real numbers. Inside :func:`on_other_device`:

- factories given ``device=OTHER`` (``torch.zeros(..., device=x.device)``, ``torch.tensor(ids,
  device=device)``) make such tensors;
- an operator that mixes one with a CPU tensor of more than one element raises torch's own
  "Expected all tensors to be on the same device" error, as CUDA does (a 0-d CPU tensor mixes,
  as on CUDA);
- ``.cpu()``/``.to("cpu")`` give an ordinary CPU tensor, ``.to(OTHER)`` moves one back;
- an index of lists, ranges or CPU tensors works, as on CUDA;
- ``.numpy()`` fails as on CUDA, and so does a CPU generator drawing for it
  (``torch.multinomial(probs, 1, generator=g)``, ``torch.randn(3, generator=g, device=OTHER)``).

So code that works here on ``OTHER`` makes no CPU tensor where the data's device is wanted, and
moves data to the CPU before it reads it as numbers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

OTHER = torch.device("meta")
MIXED = "Expected all tensors to be on the same device, but found at least two devices, {} and cpu!"
GENERATOR = "Expected a '{}' device type for generator but found 'cpu'"


class Elsewhere(torch.Tensor):
    """A tensor on ``OTHER`` whose numbers are ``elem``, a CPU tensor."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> Elsewhere:
        out = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.shape,
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=OTHER,
            requires_grad=elem.requires_grad,
        )
        out.elem = elem
        return out

    def __repr__(self) -> str:
        return f"Elsewhere({self.elem!r})"

    def __getitem__(self, key):
        return super().__getitem__(_indices(key))

    def __setitem__(self, key, value) -> None:
        super().__setitem__(_indices(key), value)

    def tolist(self) -> list:  # a CUDA tensor's numbers come back to Python as a CPU tensor's
        return self.elem.tolist()

    def untyped_storage(self) -> torch.UntypedStorage:  # a meta tensor's is empty, at address 0
        return self.elem.untyped_storage()

    def data_ptr(self) -> int:
        return self.elem.data_ptr()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


def _indices(key):
    """An index as CUDA takes it: its lists, ranges and CPU tensors moved to ``OTHER`` (torch
    would make a ``meta`` tensor without numbers of a list or a range)."""
    parts = key if isinstance(key, tuple) else (key,)
    moved = tuple(_index_part(k) for k in parts)
    return moved if isinstance(key, tuple) else moved[0]


def _index_part(k):
    if isinstance(k, range | list):
        return Elsewhere(torch.tensor(k))
    if _plain_cpu(k):
        return Elsewhere(k)
    return k


def _run(func, args, kwargs):
    """``func`` on the CPU numbers of its arguments, its tensors wrapped back where they belong."""
    flat, _ = tree_flatten((args, kwargs))
    elsewhere = any(isinstance(x, Elsewhere) for x in flat)
    wanted = kwargs.get("device")
    there = wanted is not None and torch.device(wanted) == OTHER  # a factory asked for OTHER
    if elsewhere and func is not torch.ops.aten._to_copy.default:
        if any(_plain_cpu(x) and x.dim() > 0 for x in flat):
            raise RuntimeError(MIXED.format(OTHER))
    if (elsewhere or there) and any(isinstance(x, torch.Generator) for x in flat):
        raise RuntimeError(GENERATOR.format(OTHER.type))
    if there:
        kwargs = {**kwargs, "device": torch.device("cpu")}
    out = func(*tree_map(_cpu, args), **tree_map(_cpu, kwargs))
    to_cpu = func is torch.ops.aten._to_copy.default and wanted is not None and not there
    if to_cpu or not (elsewhere or there):
        return out
    return tree_map(lambda x: Elsewhere(x) if type(x) is torch.Tensor else x, out)


def _plain_cpu(x) -> bool:
    return type(x) is torch.Tensor and x.device.type == "cpu"


def _cpu(x):
    return x.elem if isinstance(x, Elsewhere) else x


class _Factories(TorchDispatchMode):
    """Factories asked for ``OTHER`` (which would make a ``meta`` tensor without numbers) make an
    :class:`Elsewhere` instead; every other operator runs as it would (:func:`_run` changes
    nothing of a call with neither)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


class _Data(TorchFunctionMode):
    """``torch.tensor`` and ``torch.as_tensor`` asked for ``OTHER`` copy their data there (torch
    would make a ``meta`` tensor without numbers, below the dispatcher that :class:`_Factories`
    sees)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        wanted = kwargs.get("device")
        if func in (torch.tensor, torch.as_tensor) and wanted is not None:
            if torch.device(wanted) == OTHER:
                return Elsewhere(func(*args, **{**kwargs, "device": torch.device("cpu")}))
        return func(*args, **kwargs)


@contextlib.contextmanager
def on_other_device() -> Iterator[None]:
    """Within: factories asked for ``OTHER`` make tensors that hold numbers."""
    with _Data(), _Factories():
        yield


def to_other(t: torch.Tensor) -> torch.Tensor:
    """``t`` (a CPU tensor) on ``OTHER``, a leaf that requires grad where ``t`` does."""
    out = Elsewhere(t.detach().clone())
    return out.requires_grad_(t.requires_grad)
