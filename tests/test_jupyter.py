"""In a real Jupyter kernel: cmp prints once, the summary is an HTML table (plain text stays right)."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    "import torch, checks\nx = torch.randn(3, 4, generator=torch.Generator().manual_seed(0), requires_grad=True)\n(x**2).sum().backward()",
    "checks.cmp('x', 2 * x.detach(), x)",
    "checks.cmp('x2', -2 * x.detach(), x)",
    "checks.summary()",
]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    return nb


def test_cmp_as_last_expression_prints_once(executed):
    outs = executed.cells[1].outputs
    assert [o.output_type for o in outs] == ["stream"]
    assert outs[0].text.startswith("x               | exact: True  | approximate: True  | maxdiff: 0.0")


def test_failure_shows_mistake_and_hint(executed):
    text = "".join(o.get("text", "") for o in executed.cells[2].outputs)
    assert "approximate: False" in text and "✗ sign:" in text and "Mismatched elements" in text


def test_summary_is_an_html_table_with_plain_text(executed):
    outs = executed.cells[3].outputs
    shown = [o for o in outs if o.output_type == "display_data"]
    assert len(shown) == 1 and not [o for o in outs if o.output_type == "execute_result"]
    data = shown[0].data
    assert "<table>" in data["text/html"] and "sign" in data["text/html"]
    assert "1 / 2 checks pass" in data["text/plain"]
