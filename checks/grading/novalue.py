"""What the grader records for an answer that is no value: missing, deleted, raised, or not a
tensor. One record for the kernel's side (:mod:`checks.grading.recorder` and the cells
:mod:`checks.grading.assemble` writes) and the judge's, with its one wire form.

Answers leave the kernel packed by ``torch.save`` (``recorder.pack``) and are read back with
``weights_only`` (``recorder.unpack``), which loads tensors and plain containers only: there
:func:`to_wire` turns each ``NoValue`` of a dict into a tagged dict (``{"novalue": "error",
"type": "ZeroDivisionError"}``) and :func:`from_wire` turns it back. A reference run never
records one (``Grader`` refuses to cache it), so the reference cache holds tensors only.
"""

from __future__ import annotations

from dataclasses import dataclass

# what an answer without a value can be: ``...`` or None (not written yet), a name the cell no
# longer assigns, a computation (a probe of the learner's functions) that raised, and a value
# that is no tensor and cannot be made one
KINDS = MISSING_KIND, DELETED_KIND, ERROR_KIND, OTHER_KIND = (
    "missing",
    "deleted",
    "error",
    "other",
)
TAG = "novalue"


@dataclass(frozen=True, slots=True)
class NoValue:
    """An answer recorded without a value: ``kind`` one of ``KINDS``; ``type`` names the exception
    (``error``) or the value's type (``other``)."""

    kind: str
    type: str = ""


MISSING, DELETED = NoValue(MISSING_KIND), NoValue(DELETED_KIND)


def raised(error: BaseException) -> NoValue:
    """The record of an answer whose computation raised ``error``."""
    return NoValue(ERROR_KIND, type(error).__name__)


def other(value: object) -> NoValue:
    """The record of an answer that is no tensor and cannot be made one."""
    return NoValue(OTHER_KIND, type(value).__name__)


def to_wire(values: object) -> object:
    """``values`` (a dict) as ``torch.save`` may send them to a ``weights_only`` reader: each
    ``NoValue`` a tagged dict; anything else as it is."""
    if not isinstance(values, dict):
        return values
    return {
        k: {TAG: v.kind, "type": v.type} if isinstance(v, NoValue) else v for k, v in values.items()
    }


def from_wire(values: object) -> object:
    """``values`` as :func:`to_wire` sent them, each tagged dict a ``NoValue`` again (anything else,
    a record a learner's code forged included, is left as it came)."""
    return {k: _read(v) for k, v in values.items()} if isinstance(values, dict) else values


def _read(v: object) -> object:
    if isinstance(v, dict) and set(v) == {TAG, "type"} and v[TAG] in KINDS:
        if isinstance(v["type"], str):
            return NoValue(v[TAG], v["type"])
    return v
