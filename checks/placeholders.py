"""The `...` a learner has not replaced yet, and the clear stop it causes in code that needs the answer."""

from __future__ import annotations

from typing import Any


class NotWritten(Exception):
    """Raised by :func:`require` when an answer is still a placeholder; Jupyter shows only the message."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook: the message, without our frames
        return [f"NotWritten: {self}"]


def is_placeholder(value: Any) -> bool:
    """True for what the student copy puts where an answer goes: `...` (or None)."""
    return value is None or value is Ellipsis


def require(where: str = "", /, **answers: Any) -> None:
    """Stop with a message naming every answer in ``answers`` that is still `...`.

    ``require("the training loop", dlogits=dlogits, dh=dh)`` passes silently once both are
    written, and otherwise raises :class:`NotWritten`.
    """
    missing = [name for name, value in answers.items() if is_placeholder(value)]
    if missing:
        names = ", ".join(missing)
        place = f" in {where}" if where else ""
        raise NotWritten(f"write {names}{place} first (replace each `...` with your code), then run this cell again.")
