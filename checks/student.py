"""Generate the student notebooks from the solutions: ``python -m checks.student [--check]``.

Each ``### BEGIN SOLUTION`` / ``### END SOLUTION`` block (the nbgrader delimiters) becomes
one placeholder line per name the block assigns, ``dX = ...  # TODO: <what>``. The text
after ``# TODO:`` comes from the comment lines ``# dX: <what>`` that stand right above the
block in the solution (and are dropped from the student copy). A block that assigns no
name (the body of a ``_backward`` closure, say) gets its stub verbatim from comment lines
``# stub: <code>`` above it, e.g. ``# stub: raise NotWritten("the backward pass of a + b")``. Outputs and execution
counts are cleared. With ``--check`` nothing is written: it exits 1 when a committed
student copy differs from what would be generated.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:[-+*/@]?=)(?!=)")
_DESCRIBE = re.compile(r"^#\s*([A-Za-z_]\w*):\s*(.+)$")


def stub_source(source: str) -> str:
    """The student version of one code cell's source."""
    return _stub(source)[0]


def answer_names(source: str) -> list[str]:
    """The names a solution cell asks the learner to write (those its placeholders assign)."""
    return _stub(source)[1]


def _stub(source: str) -> tuple[str, list[str]]:
    lines = source.split("\n")
    out: list[str] = []
    asked: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() != BEGIN:
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        above: list[tuple[str, str]] = []
        while out and _DESCRIBE.match(out[-1].strip()) and out[-1].startswith(indent + "#"):
            above.insert(0, _DESCRIBE.match(out.pop().strip()).groups())
        stubs = [what for name, what in above if name == "stub"]
        described = {name: what for name, what in above if name != "stub"}
        j = i + 1
        targets: list[str] = []
        while j < len(lines) and lines[j].strip() != END:
            body = lines[j]
            if body.startswith(indent) and not body[len(indent):].startswith((" ", "\t")):
                m = _ASSIGN.match(body[len(indent):])
                if m and m.group(1) not in targets:
                    targets.append(m.group(1))
            j += 1
        if j == len(lines):
            raise ValueError(f"{BEGIN} without {END} in:\n{source}")
        stray = [n for n in described if n not in targets]
        if stray:
            raise ValueError(f"the comment '# {stray[0]}: ...' describes no name assigned in its solution block")
        names = list(described) or ([] if stubs else targets)
        asked += names
        out.extend(f"{indent}{code}" for code in stubs)
        if not names and not stubs:
            out.append(f"{indent}# YOUR CODE HERE")
        for name in names:
            what = described.get(name)
            out.append(f"{indent}{name} = ...  # TODO: {what}" if what else f"{indent}{name} = ...  # TODO")
        i = j + 1
    return "\n".join(out), asked


def student_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = stub_source(cell.source)
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb, version=4) + "\n"


def generate(check: bool = False, root: Path = ROOT) -> list[Path]:
    """Write (or, with ``check``, compare) every student copy; returns the paths that differ."""
    differ = []
    for sol in sorted((root / "solutions").glob("*.ipynb")):
        target = root / "notebooks" / sol.name
        text = render(student_notebook(nbformat.read(sol, as_version=4)))
        if not target.exists() or target.read_text() != text:
            differ.append(target)
            if not check:
                target.write_text(text)
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m checks.student", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only report student copies that are out of date")
    args = parser.parse_args(argv)
    differ = generate(check=args.check)
    for path in differ:
        print(f"{'out of date' if args.check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
