"""Kernel side of a grading run: a cap on what one cell may print or display.

A cell that displays thousands of outputs (5,000 ``display()`` calls, a print in a long loop)
floods the test runner with messages until the cell runs out of time, and the notebook's honest
answers with it. ``cap()`` keeps the first ``DISPLAYS`` displays and ``TEXT_BYTES`` of printed
text of each cell and drops the rest in the kernel, before they are sent; at the end of such a
cell it prints one line that says so and tells the grader (a ``truncated`` record message), whose
rows then say it too. The grader's own record messages are never dropped.
"""

from __future__ import annotations

import sys
from typing import Any

from checks.grading.mime import MIME

DISPLAYS = 200  # displays a cell may send
TEXT_BYTES = 2**20  # printed text a cell may send

_cut = {"displays": 0, "text": 0, "dropped": 0}


def cap(displays: int = DISPLAYS, text_bytes: int = TEXT_BYTES) -> None:
    """Cap every later cell's displays and printed text (call once, at the start of a run)."""
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None or getattr(ip.display_pub, "_workbook_capped", False):
        return
    publish = ip.display_pub.publish

    def capped(data: dict, metadata: Any = None, *args: Any, **kw: Any) -> None:
        if isinstance(data, dict) and MIME in data:
            return publish(data, metadata, *args, **kw)
        _cut["displays"] += 1
        if _cut["displays"] > displays:
            _cut["dropped"] += 1
            return None
        return publish(data, metadata, *args, **kw)

    ip.display_pub.publish = capped
    ip.display_pub._workbook_capped = True
    for stream in (sys.stdout, sys.stderr):
        _cap_stream(stream, text_bytes)
    ip.events.register("pre_run_cell", lambda *_: _cut.update(displays=0, text=0, dropped=0))
    ip.events.register("post_run_cell", lambda *_: _said(publish))


def _cap_stream(stream: Any, text_bytes: int) -> None:
    write = stream.write

    def capped(text: str) -> int:
        _cut["text"] += len(text)
        if _cut["text"] > text_bytes:
            _cut["dropped"] += 1
            return len(text)
        return write(text)

    stream.write = capped


def _said(publish: Any) -> None:
    """After a cell whose outputs were cut: one line for the learner, a message for the grader."""
    dropped = _cut["dropped"]
    if not dropped:
        return
    line = f"[the grader cut this cell's output: {dropped} more outputs were not shown]"
    publish({"text/plain": line}, {})
    publish({MIME: {"kind": "truncated", "dropped": dropped}}, {})
