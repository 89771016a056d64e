"""In a real Jupyter kernel: cmp shows once, coloured; the summary is an HTML table; the plain text
stays the lecture's."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from checks.compare import FAIL, PASS, TODO

CELLS = [
    (
        "import torch, checks\n"
        "x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)\n"
        "(x**2).sum().backward()"
    ),
    "checks.cmp('x', 2 * x.detach(), x)",
    "checks.cmp('x2', -2 * x.detach(), x)",
    "checks.cmp('x3', ..., x)",
    "checks.cmp('<b>', -2 * x.detach(), x)",
    "print('before')\nr = checks.cmp('x', 2 * x.detach(), x)\nprint('after')\nr",
    "checks.summary()",
]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return nb


def test_cmp_as_last_expression_shows_once_in_colour_with_the_lecture_line_as_plain_text(executed):
    outs = executed.cells[1].outputs
    assert [o.output_type for o in outs] == ["display_data"]
    assert (
        outs[0].data["text/plain"]
        == "x               | exact: True  | approximate: True  | maxdiff: 0.0"
    )
    shown = outs[0].data["text/html"]
    assert "workbook-pass" in shown and PASS in shown and FAIL not in shown
    assert "✓</span> x               | exact: True  | approximate: True  | maxdiff: 0.0" in shown


def test_failure_shows_mistake_and_hint_in_red(executed):
    (out,) = executed.cells[2].outputs
    text = out.data["text/plain"]
    assert "approximate: False" in text and "✗ sign:" in text and "Mismatched elements" in text
    shown = out.data["text/html"]
    assert "workbook-fail" in shown and FAIL in shown and PASS not in shown
    assert (
        f"<span style='color:{FAIL};font-weight:bold'>  ✗ sign: </span>"
        "your dx2 is exactly the negative" in shown
    )


def test_not_written_yet_is_grey_not_red(executed):
    (out,) = executed.cells[3].outputs
    assert "✗ missing: not written yet" in out.data["text/plain"]
    assert TODO in out.data["text/html"] and FAIL not in out.data["text/html"]


def test_hints_are_escaped_in_html(executed):
    (out,) = executed.cells[4].outputs
    assert "<b>" not in out.data["text/html"] and "&lt;b&gt;" in out.data["text/html"]


def test_output_order_is_kept_between_prints(executed):
    outs = executed.cells[5].outputs
    assert [o.output_type for o in outs] == ["stream", "display_data", "stream"]
    assert outs[0].text == "before\n" and outs[2].text == "after\n"


def test_summary_is_an_html_table_with_plain_text(executed):
    outs = executed.cells[-1].outputs
    shown = [o for o in outs if o.output_type == "display_data"]
    assert len(shown) == 1 and not [o for o in outs if o.output_type == "execute_result"]
    data = shown[0].data
    assert "<table " in data["text/html"] and "sign" in data["text/html"]
    assert "1 / 4 checks pass" in data["text/plain"]
