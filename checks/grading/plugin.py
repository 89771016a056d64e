"""A pytest plugin for the grader's nbval runs (``-p checks.grading.plugin``), in the test runner,
outside the kernel: it keeps, cell by cell, the messages the grader's cells send
(``checks.grading.mime.MIME``) in a file the kernel cannot reach (``--grade-records FILE``), and
with ``--grade-ipc`` it talks to the kernel over Unix sockets (a sandboxed kernel has no network).
"""

from __future__ import annotations

import json
import os
import pprint
import sys
import uuid

import pytest
from jupyter_client.manager import KernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import CaselessStrEnum

from checks.grading.mime import MAX_CELL_BYTES, MIME

# jsonschema (under nbformat, under nbval) imports rfc3987_syntax where it is installed, for its
# "iri" format check, and that builds a grammar at import: 0.7 s of every grading run. nbformat's
# schema checks no such format, so this process, loaded before nbval, goes without it.
sys.modules.setdefault("rfc3987_syntax", None)

# what another cell (a learner's) may send: its autograd calls and the outputs cut from it
# (``checks.grading.outputs``), so many at most
LEARNER_KINDS = ("autograd", "truncated")
OTHER_CELL_MESSAGES = 64


class IpcKernelManager(KernelManager):
    """A kernel manager whose connection goes through Unix sockets in the runtime folder."""

    transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        # the folder the sandbox shares
        base = os.path.join(jupyter_runtime_dir(), f"kernel-{uuid.uuid4()}")
        self.connection_file, self.ip = base + ".json", base + "-ipc"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--grade-records", default=None, help="file for the messages of the grader's cells"
    )
    parser.addoption(
        "--grade-ipc", action="store_true", help="connect to the kernel over Unix sockets"
    )
    parser.addoption(
        "--grade-cells",
        default=None,
        help="the grader's cells (comma-separated): the others may send only autograd calls",
    )
    parser.addoption(
        "--grade-cell-bytes", type=int, default=MAX_CELL_BYTES, help="what a grader cell may send"
    )


class _Formatted:
    """``pprint.pformat(msg)``, made only when a log line is written."""

    def __init__(self, msg: object) -> None:
        self.msg = msg

    def __str__(self) -> str:
        return pprint.pformat(self.msg)


def pytest_configure(config: pytest.Config) -> None:
    import nbval.kernel

    # nbval pretty-prints every kernel message for its debug log before asking whether that log is
    # on (it never is here): 0.1-0.4 s of a run, the most for the hand-ins of notebook 05
    nbval.kernel.pformat = _Formatted
    if config.getoption("--grade-ipc"):
        nbval.kernel.KernelManager = IpcKernelManager


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    yield
    path = item.config.getoption("--grade-records")
    if call.when != "call" or not path or not hasattr(item, "cell_num"):
        return
    cells = item.config.getoption("--grade-cells")
    graders = None if cells is None else {int(c) for c in cells.split(",") if c}
    ours = graders is None or item.cell_num in graders
    room = item.config.getoption("--grade-cell-bytes")
    messages, size = [], 0
    for out in getattr(item, "test_outputs", None) or []:
        data = (
            out.get("data", {})
            if out.get("output_type") in ("display_data", "execute_result")
            else {}
        )
        msg = data.get(MIME)
        if not isinstance(msg, dict) or not (ours or msg.get("kind") in LEARNER_KINDS):
            continue
        short = {k: v if isinstance(v, int) else str(v)[:200] for k, v in list(msg.items())[:4]}
        text = json.dumps(msg if ours else short)
        size += len(text)
        if size > room or (not ours and len(messages) >= OTHER_CELL_MESSAGES):
            break
        messages.append(json.loads(text))
    with open(path, "a") as f:
        f.write(json.dumps({"cell": item.cell_num, "messages": messages}) + "\n")
