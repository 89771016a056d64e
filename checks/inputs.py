"""A notebook's inputs: its own by default, others where the grader (or you) set them.

>>> a, b = drawn(3.0, -2.0)   # (3.0, -2.0) unless WORKBOOK_SEED is set
>>> x = drawn(0.5)            # one number in, one number out
>>> seed = setting("seed", 2147483647)   # WORKBOOK_SEED where set, else the notebook's own
>>> device = setting("device", "cpu")     # torch.device("cpu") unless WORKBOOK_DEVICE says "cuda"
"""

from __future__ import annotations

import os
import random
from typing import overload

import torch

__all__ = ["drawn", "setting"]

# a notebook's settings: the environment variable that overrides each (the grader sets the first
# three in every kernel it starts; WORKBOOK_TEXT is notebook 04's own text file; WORKBOOK_DEVICE
# where the training runs, which the grader never sets: a class is graded on the CPU)
SETTINGS = {
    "seed": "WORKBOOK_SEED",
    "batch": "WORKBOOK_BATCH",
    "steps": "WORKBOOK_STEPS",
    "text": "WORKBOOK_TEXT",
    "device": "WORKBOOK_DEVICE",
}
# the devices a notebook can train on, and how to ask torch whether this machine has one
DEVICES = {
    "cpu": lambda: True,
    "cuda": lambda: torch.cuda.is_available(),
    "mps": lambda: torch.backends.mps.is_available(),
    "xpu": lambda: hasattr(torch, "xpu") and torch.xpu.is_available(),
}

LOW, HIGH = 0.6, 1.4  # the factor's range: a number keeps its sign and stays within 40% of itself


@overload
def drawn(default: float, /) -> float: ...


@overload
def drawn(first: float, second: float, /, *more: float) -> tuple[float, ...]: ...


def drawn(*defaults: float) -> float | tuple[float, ...]:
    """``defaults`` unchanged while ``WORKBOOK_SEED`` is unset (or empty). With it set, each one
    times a factor uniform in [0.6, 1.4], rounded to 3 decimals, from a generator seeded with the
    seed and the defaults: signs are kept, and a seed gives the same numbers in every run. One
    number in gives a float, several give a tuple."""
    if not defaults:
        raise TypeError("drawn() needs at least one number")
    seed = os.environ.get("WORKBOOK_SEED", "").strip()
    values = tuple(float(x) for x in defaults)
    if seed:
        rng = random.Random(f"{int(seed)}/{values}")
        # .12g drops the float noise of the product (2.0 * 1.137 is 2.274, not 2.2739999999999996)
        values = tuple(float(f"{x * round(rng.uniform(LOW, HIGH), 3):.12g}") for x in values)
    return values[0] if len(values) == 1 else values


def setting(name: str, default: int | str | None) -> int | str | torch.device | None:
    """The notebook's ``name`` setting (``seed``, ``batch``, ``steps``, ``text``, ``device``):
    ``default`` unless its environment variable (``SETTINGS``) is set and not empty, then that
    value, as an int where ``default`` is one. The grader sets seed, batch and steps this way, so
    the notebook's own cells need read no environment. ``device`` is a ``torch.device`` this
    machine has (see :func:`device_named`)."""
    if name not in SETTINGS:
        raise ValueError(f"no setting {name!r}: the settings are {', '.join(SETTINGS)}")
    variable = SETTINGS[name]
    value = os.environ.get(variable, "").strip()
    if name == "device":
        return device_named(value or str(default), variable if value else "the notebook's device")
    if not value:
        return default
    if not isinstance(default, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{variable}={value!r} is not a whole number") from None


def device_named(name: str, said: str = "device") -> torch.device:
    """The device called ``name`` ("cpu", "cuda", "cuda:1", "mps", or "auto": the machine's GPU
    where it has one, else the CPU), where this machine has it; else ValueError in one sentence
    that says what ``said`` asked for and what to do."""
    name = name.strip()
    cpu = torch.device("cpu")
    if name.lower() == "auto":
        return next((torch.device(k) for k, has in DEVICES.items() if k != "cpu" and has()), cpu)
    try:
        device = torch.device(name.lower())
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in DEVICES:
        raise ValueError(
            f"{said} is {name!r}, which is no device to train on: use one of "
            f"{', '.join(repr(k) for k in DEVICES)} (or 'cuda:1' for a second GPU), or 'auto'"
        )
    if not DEVICES[device.type]():
        colab = " (in Colab: Runtime > Change runtime type > a GPU, then run the notebook again)"
        colab = colab if device.type == "cuda" else ""
        raise ValueError(
            f"{said} is {name!r}, but this machine has no {device.type} device that torch can use "
            f"(torch {torch.__version__}): use 'cpu', or 'auto'{colab}"
        )
    if device.type == "cuda" and device.index is not None and device.index >= _cuda_count():
        raise ValueError(
            f"{said} is {name!r}, but this machine has {_cuda_count()} cuda device(s), numbered "
            "from 0: use 'cuda' or 'cuda:0'"
        )
    return device


def _cuda_count() -> int:
    return torch.cuda.device_count()
