"""Running notebooks as a learner would, and filling a student copy in: what the notebook tests
share (run cells on past errors, read what a cell showed, fill `dX = ...  # TODO` lines)."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from checks.authoring.student import ROOT
from checks.races import COLUMNS

STUDENT = sorted((ROOT / "notebooks").glob("*.ipynb"))
# the lecture's line; a name may hold spaces ("logits (fused)", "C (trained)", "x * y",
# "p (5 steps)")
LINE = re.compile(
    r"^(.+?)\s*\| exact: (True |False) \| approximate: (True |False) \| maxdiff: (\S+)$", re.M
)


@contextlib.contextmanager
def _client(nb: nbformat.NotebookNode, steps: int):
    """A kernel for ``nb`` (in notebooks/, errors allowed) with WORKBOOK_STEPS=steps, restored
    afterwards."""
    env_steps = os.environ.get("WORKBOOK_STEPS")
    os.environ["WORKBOOK_STEPS"] = str(steps)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    try:
        with client.setup_kernel():
            yield client
    finally:
        if env_steps is None:
            del os.environ["WORKBOOK_STEPS"]
        else:
            os.environ["WORKBOOK_STEPS"] = env_steps


def run_then_rerun(nb: nbformat.NotebookNode, again: dict[int, str], steps: int = 300) -> list[str]:
    """Run every cell, then, in the same kernel, run cell i again with source ``again[i]`` for each
    i in order, as a learner going back to an earlier cell; returns what those re-runs show."""
    shown = []
    with _client(nb, steps) as client:
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        for i, source in again.items():
            cell = nbformat.v4.new_code_cell(source)
            client.execute_cell(cell, i)
            shown.append(
                text_of(cell)
                + "".join(
                    f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"
                )
            )
    return shown


def run(nb: nbformat.NotebookNode, steps: int = 300) -> nbformat.NotebookNode:
    """Every cell, top to bottom, on past errors (as Run All would if it did not stop)."""
    run_then_rerun(nb, {}, steps)
    return nb


def text_of(cell) -> str:
    """What a cell printed, in order: its streams and the plain text of what it displayed (the
    checks, in Jupyter)."""
    parts = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type in ("display_data", "execute_result") and "text/plain" in o.get(
            "data", {}
        ):
            parts.append(o.data["text/plain"] + "\n")
    return "".join(parts)


def race_shown(nb: nbformat.NotebookNode) -> tuple[str, dict[str, list[str]]]:
    """What the notebook's ``race(step_fast, ...)`` cell showed, and its table's rows by step: the
    columns after the step's name (median µs, ratio, operators, kB; "" where the row has none:
    a step not timed, the time of a solution's step), the notes under a row and the line on
    where the solution's rows come from left out."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "race(step_fast" in c.source]
    shown = text_of(cell)
    ends = list(itertools.accumulate(w + 1 for w in COLUMNS))
    rows = {}
    for ln in shown.splitlines()[3:]:
        if ln[:1] != " " and not ln.startswith("the solution's rows"):
            cells = [ln[a:b].strip() for a, b in zip([0, *ends[:-1]], ends, strict=True)]
            rows[cells[0]] = cells[1:] if any(cells[1:]) else []
    return shown, rows


def errors_of(nb) -> list[tuple[int, str, str]]:
    return [
        (i, o.ename, o.evalue)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]


# One line per placeholder, written independently of the solution blocks (in the order the
# placeholders appear).
ANSWERS = {
    "dlogprobs": ["-F.one_hot(Yb, num_classes=logprobs.shape[1]).float() / n"],
    "dprobs": ["dlogprobs / probs"],
    "dcounts_sum_inv": ["(dprobs * counts).sum(dim=1, keepdim=True)"],
    "dcounts_sum": ["-dcounts_sum_inv / counts_sum**2"],
    "dcounts": ["dprobs * counts_sum_inv + dcounts_sum.expand_as(counts)"],
    "dnorm_logits": ["dcounts * norm_logits.exp()"],
    "dlogit_maxes": ["-dnorm_logits.sum(1, keepdim=True)"],
    "dlogits": [
        "dnorm_logits + (logits == logit_maxes).float() * dlogit_maxes",
        "(F.softmax(logits, 1) - F.one_hot(Yb, num_classes=logits.shape[1])) / n",
        "(F.softmax(logits, 1) - F.one_hot(Yb, num_classes=logits.shape[1])) / n",
    ],
    "dh": ["dlogits @ W2.T"] * 2,
    "dW2": ["h.T @ dlogits"] * 2,
    "db2": ["dlogits.sum(0)"] * 2,
    "dhpreact": ["dh * (1 - torch.tanh(hpreact)**2)"] * 2,
    "dbngain": ["(dhpreact * bnraw).sum(0, keepdim=True)"] * 2,
    "dbnraw": ["dhpreact * bngain"],
    "dbnbias": ["dhpreact.sum(0, keepdim=True)"] * 2,
    "dbnvar_inv": ["(dbnraw * bndiff).sum(0, keepdim=True)"],
    "dbnvar": ["-0.5 * dbnvar_inv * (bnvar + 1e-5)**-1.5"],
    "dbndiff2": ["dbnvar.expand_as(bndiff2) / (n - 1)"],
    "dbndiff": ["dbnraw * bnvar_inv + 2 * bndiff * dbndiff2"],
    "dbnmeani": ["-dbndiff.sum(0, keepdim=True)"],
    "dhprebn": [
        "dbndiff + dbnmeani.expand_as(hprebn) / n",
        (
            "bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        ),
        (
            "bngain * bnvar_inv / n * (n * dhpreact - dhpreact.sum(0) "
            "- n / (n - 1) * bnraw * (dhpreact * bnraw).sum(0))"
        ),
    ],
    "dembcat": ["dhprebn @ W1.T"] * 2,
    "dW1": ["embcat.T @ dhprebn"] * 2,
    "db1": ["dhprebn.sum(0)"] * 2,
    "demb": ["dembcat.view(emb.shape)"] * 2,
    "dC": ["torch.zeros_like(C).index_add_(0, Xb.flatten(), demb.view(-1, demb.shape[-1]))"] * 2,
}
STUB = re.compile(r"^(\s*)(\w+) = \.\.\.  # TODO.*$", re.M)


def fill(
    nb: nbformat.NotebookNode, answers: dict[str, list[str]], complete: bool = True
) -> nbformat.NotebookNode:
    """Replace each `X = ...  # TODO` line with the next answer for X; ``complete``: every answer
    must be used."""
    left = {k: list(v) for k, v in answers.items()}

    def one(m: re.Match) -> str:
        return f"{m.group(1)}{m.group(2)} = {left[m.group(2)].pop(0)}"

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = STUB.sub(one, cell.source)
    assert not complete or not any(left.values()), {k: v for k, v in left.items() if v}
    return nb


def assert_passes_nbval(nb: nbformat.NotebookNode, folder: Path, steps: int) -> None:
    """``nb`` written into ``folder`` passes ``pytest --nbval-lax`` there, its training
    ``steps`` long: every cell runs without an error."""
    nbformat.write(nb, folder / "variant.ipynb")
    env = {**os.environ, "WORKBOOK_STEPS": str(steps), "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["--nbval-lax", "--rootdir", str(folder), "-c", os.devnull, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"\b\d+ passed\b", proc.stdout)
