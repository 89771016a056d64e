"""The `...` a learner has not replaced yet, and the clear stop it causes in code that needs it.

In IPython, :func:`install_hook` turns the raw ``TypeError`` of code that uses an unwritten answer
(``counts * dcounts`` with ``dcounts = ...``) into the same one-line :class:`NotWritten` stop.
"""

from __future__ import annotations

from typing import Any

from checks.kernel import ipython
from checks.source import code_text, placeholders_used


class NotWritten(Exception):
    """Raised when an answer is still a placeholder; Jupyter shows only the message."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook: the message, without our frames
        return [f"NotWritten: {self}"]


def is_placeholder(value: Any) -> bool:
    """True for what the student copy puts where an answer goes: `...` (or None)."""
    return value is None or value is Ellipsis


class WrongDtype(Exception):
    """Raised when an answer's dtype is not the network's (a numpy float64 in a float32 training
    step), before a matrix product fails on it; Jupyter shows only the message."""

    def _render_traceback_(self) -> list[str]:
        return [f"WrongDtype: {self}"]


def require(where: str = "", /, *, like: Any = None, **answers: Any) -> None:
    """Stop with a message naming every answer in ``answers`` that is still `...`, or, given
    ``like`` (a tensor of the step), that is a float tensor of another dtype than ``like``.

    ``require("the training loop", dlogits=dlogits, dh=dh)`` passes silently once both are
    written, and otherwise raises :class:`NotWritten` (or :class:`WrongDtype`).
    """
    missing = [name for name, value in answers.items() if is_placeholder(value)]
    place = f" in {where}" if where else ""
    if missing:
        names = ", ".join(missing)
        raise NotWritten(
            f"write {names}{place} first (replace each `...` with your code), "
            "then run this cell again."
        )
    want = getattr(like, "dtype", None)
    for name, value in answers.items():
        got = getattr(value, "dtype", None)
        if want is not None and got is not None and got != want and _is_float(value):
            raise WrongDtype(
                f"{name}{place} is {_dtype(got)} but the network is {_dtype(want)}: a later matrix "
                f"product would fail on it; compute {name} with torch operations on the inputs "
                f"(no numpy), or end with `.to(torch.{_dtype(want)})`."
            )


def _is_float(value: Any) -> bool:
    check = getattr(value, "is_floating_point", None)
    return bool(check()) if callable(check) else False


def _dtype(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- the IPython hook

_CAUGHT = (TypeError, AttributeError, RuntimeError)
_FLAG = "_workbook_not_written_hook"


def install_hook(ip: Any = None) -> bool:
    """In IPython, show one line instead of a traceback when a cell fails on an unwritten answer.

    When a ``TypeError``, ``AttributeError`` or ``RuntimeError`` mentions ``ellipsis`` or
    ``NoneType`` and the failing code reads a name that is still ``...`` (or None), the cell shows
    ``NotWritten: dcounts is still `...`: write it ...`` and still fails; any other error keeps its
    usual traceback. Returns True when the hook is in place (idempotent), False outside IPython or
    when another custom exception handler is already installed (it is left alone).
    """
    if ip is None:  # a shell exists only where IPython is imported: never import it here
        ip = ipython()
    if ip is None or not hasattr(ip, "set_custom_exc"):
        return False
    current = tuple(getattr(ip, "custom_exceptions", ()) or ())
    if getattr(ip, _FLAG, False) and current == _CAUGHT:
        return True
    if current:
        return False
    ip.set_custom_exc(_CAUGHT, _handler)
    setattr(ip, _FLAG, True)
    return True


def _handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    """IPython's custom exception handler: one :class:`NotWritten` line, or the usual traceback."""
    try:
        message = not_written_message(shell, value, tb)
    except Exception:
        message = None
    try:
        if message is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        error = NotWritten(message)
        error.__context__ = value
        shell.showtraceback((NotWritten, error, tb))
        _record_as_the_cell_error(value, error)
    except Exception:
        pass
    return None


def _record_as_the_cell_error(original: BaseException, error: NotWritten) -> None:
    """Make the kernel's execute reply name ``NotWritten`` too (IPython records ``original``)."""
    import sys

    frame = sys._getframe(1)
    for _ in range(6):  # _handler <- IPython's wrapper <- run_code, which holds `result`
        if frame is None:
            return
        result = frame.f_locals.get("result")
        if getattr(result, "error_in_exec", None) is original:
            result.error_in_exec = error
            return
        frame = frame.f_back


def not_written_message(shell: Any, value: BaseException, tb: Any) -> str | None:
    """The one-line message when the code failing with ``value`` reads an unwritten answer."""
    text = str(value).lower()
    wanted = [v for v, word in ((Ellipsis, "ellipsis"), (None, "nonetype")) if word in text]
    if not wanted:
        return None
    for source, namespace in _failing_code(shell, tb):
        names = [n for n in placeholders_used(source, namespace) if namespace[n] in wanted]
        if names:
            return _message(names, [namespace[n] for n in names])
    return None


def _failing_code(shell: Any, tb: Any) -> list[tuple[str, dict]]:
    """(source, namespace) of each notebook-cell frame of ``tb``, innermost first, then the cell."""
    cells = getattr(getattr(shell, "compile", None), "_filename_map", {}) or {}
    found = []
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
        filename = frame.f_code.co_filename
        if filename not in cells and not filename.startswith("<ipython-input-"):
            continue
        found.append((code_text(frame.f_code) or "", {**frame.f_globals, **frame.f_locals}))
    found.reverse()
    history = getattr(shell, "user_ns", {}).get("In") or [""]
    found.append((history[-1], getattr(shell, "user_ns", {})))
    return found


def _message(names: list[str], values: list[Any]) -> str:
    """``dcounts is still `...`: write it ...`` for one name, ``a and b are still ...`` for more."""
    shown = (
        "`...`"
        if all(v is Ellipsis for v in values)
        else ("None" if all(v is None for v in values) else "`...` or None")
    )
    if len(names) == 1:
        return (
            f"{names[0]} is still {shown}: write it (its cell comes earlier), run that cell, "
            "then this one again."
        )
    listed = ", ".join(names[:-1]) + f" and {names[-1]}"
    return (
        f"{listed} are still {shown}: write them (their cells come earlier), run those cells, "
        "then this one again."
    )
