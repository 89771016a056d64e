"""In a real Jupyter kernel: a cell failing on an earlier answer still `...` shows one line."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from checks.placeholders import install_hook, not_written_message

CELLS = [
    "from checks.placeholders import install_hook\nprint(install_hook(), install_hook())",
    "import torch\ncounts = torch.ones(2)\ndcounts = ...\ndprobs = ...\ndnone = None",
    "dnorm_logits = counts * dcounts",  # 2
    "x = torch.mul(counts, dprobs)",  # 3: torch's own wording
    "y = dcounts.view(-1)",  # 4: AttributeError
    "z = dprobs * 2 + dcounts",  # 5: two names, the first used fails
    "def step():\n    return counts * dprobs",  # 6
    "step()",  # 7: in a function from an earlier cell
    "w = counts * 'text'",  # 8: a genuine TypeError, unrelated
    "dcounts = torch.ones(2)\nv = counts * dcounts",  # 9: written now: no error
    "q = counts * dnone",  # 10: None
    "r = [counts * d for d in (dprobs,)]",  # 11: in a comprehension
    "dfresh = ...\nu = counts * dfresh",  # 12: `...` in this very cell: the usual traceback
]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True)
    replies = {}

    def on_reply(cell, cell_index, execute_reply):
        replies[cell_index] = execute_reply["content"]

    client.on_cell_executed = on_reply
    client.execute()
    return nb, replies


def _error(nb, index):
    errors = [o for o in nb.cells[index].outputs if o.output_type == "error"]
    assert len(errors) == 1, nb.cells[index].outputs
    return errors[0]


def test_install_hook_is_idempotent_and_true_in_a_kernel(executed):
    nb, _ = executed
    assert nb.cells[0].outputs[0].text == "True True\n"


@pytest.mark.parametrize("index", [2, 3, 4])
def test_one_line_naming_the_unwritten_answer(executed, index):
    nb, replies = executed
    error = _error(nb, index)
    name = "dprobs" if index == 3 else "dcounts"
    line = (
        f"NotWritten: {name} is still `...`: write it (its cell comes earlier), "
        "run that cell, then this one again."
    )
    assert error.traceback == [line]
    assert error.ename == "NotWritten" and error.evalue == line.removeprefix("NotWritten: ")
    reply = replies[index]
    assert reply["status"] == "error" and reply["ename"] == "NotWritten"  # Run All stops here


def test_several_names_and_functions_from_earlier_cells(executed):
    nb, _ = executed
    assert _error(nb, 5).evalue.startswith("dprobs and dcounts are still `...`: write them")
    assert _error(nb, 7).evalue.startswith("dprobs is still `...`: write it")
    assert _error(nb, 10).evalue.startswith("dnone is still None: write it")
    assert _error(nb, 11).evalue.startswith("dprobs is still `...`")


def test_other_errors_keep_their_traceback(executed):
    nb, replies = executed
    error = _error(nb, 8)
    assert error.ename == "TypeError" and "ellipsis" not in error.evalue
    shown = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback))
    assert len(error.traceback) > 1 and "counts * 'text'" in shown
    assert replies[8]["ename"] == "TypeError"
    error = _error(nb, 12)
    assert error.ename == "TypeError" and len(error.traceback) > 1


def test_written_answers_run(executed):
    nb, replies = executed
    assert not nb.cells[9].outputs and replies[9]["status"] == "ok"


class _Shell:
    """Just enough of an IPython shell for install_hook's bookkeeping."""

    def __init__(self, custom=()):
        self.custom_exceptions = custom
        self.calls = 0

    def set_custom_exc(self, exc_tuple, handler):
        self.custom_exceptions, self.calls = exc_tuple, self.calls + 1


def test_install_hook_outside_ipython_and_with_another_handler():
    assert install_hook() is False  # plain Python: no IPython shell
    shell = _Shell()
    assert install_hook(shell) and install_hook(shell) and shell.calls == 1
    assert install_hook(_Shell(custom=(KeyError,))) is False


def test_message_needs_a_placeholder_word_and_a_culprit():
    shell = type("S", (), {"user_ns": {"In": ["", "y = a * b"], "a": ..., "b": 1}})()
    assert not_written_message(shell, TypeError("unsupported ... 'int' and 'str'"), None) is None
    assert not_written_message(shell, TypeError("... 'int' and 'NoneType'"), None) is None
    found = not_written_message(shell, TypeError("... 'int' and 'ellipsis'"), None)
    assert found.startswith("a is still `...`")
