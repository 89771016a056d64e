"""Generate the student notebooks from the solutions: \
``python -m checks.student [--check] [--full]``.

Each ``### BEGIN SOLUTION`` / ``### END SOLUTION`` block (the nbgrader delimiters) becomes
one placeholder line per name the block assigns, ``dX = ...  # TODO: <what>``. The comment
lines that stand right above the block in the solution say what (and are dropped from the
student copy):

- ``# dX: <what>``: what ``dX`` is the gradient of, and its shape (the TODO text);
- ``# dX full: <what>``: the fuller text of a self-study edition (``--full``), rule and formula;
- ``# hint dX: <rung>``: one rung of ``dX``'s hint ladder (``checks.hints``), in order: the idea,
  the local derivative, a skeleton with blanks; ``# hint dX+: <line>`` continues the last rung
  on a new line. The last rung, shown only on request, is the solution block's own lines;
- ``# stub: <code>``: for a block that assigns no name (the body of a ``_backward`` closure, say),
  its stub verbatim, e.g. ``# stub: raise NotWritten("the backward pass of a + b")``.

A drill's answer cell (notebook 06's first drill: cell metadata ``{"backprop-workbook": {"drill":
{"mistake": WORD, "seed": N}}}``) becomes the cell that drill puts beneath itself, a ``dX = ...``
line and a ``cmp`` for each tensor (:meth:`checks.drills.Drill.answer_cell`); its ladders are the
drill's own, made in the kernel.

The first code cell of every notebook, solutions included, is :func:`install_cell`: it installs
the workbook from :data:`checks.paths.INSTALL_SOURCE` where ``checks`` is missing (``--source``
with ``--out``: an instructor's own wheel or repository). The ladders are written to
``checks/hints/<notebook>.json``, and what the solution's steps cost, from the races its executed
cells show (:func:`checks.races.race`), to ``checks/hints/costs/<notebook>.json``. Outputs and
execution counts are cleared.
 With ``--check`` nothing is written: it exits 1 when a committed student copy or
ladder differs from what would be generated.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import textwrap
from pathlib import Path

import nbformat

from checks.parsing import parse
from checks.paths import COSTS, INSTALL_SOURCE, METADATA, ROOT
from checks.session import shown_checks, shown_races
from checks.variants import KINDS as VARIANTS_OF

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:[-+*/@]?=)(?!=)")
_DESCRIBE = re.compile(r"^#\s*(hint\s+)?([A-Za-z_]\w*)(\+|\s+full)?:\s*(.*)$")
from checks.drills.build import draw  # noqa: E402
from checks.hints import HINTS  # noqa: E402  (where the ladders are written)


def stub_source(source: str, full: bool = False) -> str:
    """The student version of one code cell's source (``full``: the self-study edition's TODOs)."""
    return _stub(source, full)[0]


def answer_names(source: str) -> list[str]:
    """The names a solution cell asks the learner to write (those its placeholders assign)."""
    return _stub(source)[1]


def ladders(source: str) -> dict[str, dict]:
    """The hint ladders of a solution cell: for each name, its rungs and its solution lines."""
    return _stub(source)[2]


def _stub(source: str, full: bool = False) -> tuple[str, list[str], dict[str, dict]]:
    """One cell's student source, the names it asks for and their hint ladders."""
    lines = source.split("\n")
    out: list[str] = []
    asked: list[str] = []
    ladder: dict[str, dict] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() != BEGIN:
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        comments = _Comments(out, indent)
        end, targets = _block_end(lines, i, indent, source)
        names = comments.names(targets)
        asked += names
        ladder.update(comments.ladders(names, "\n".join(lines[i + 1 : end])))
        out += comments.placeholders(indent, names, full)
        i = end + 1
    return "\n".join(out), asked, ladder


class _Comments:
    """The comment lines right above a solution block, taken off the end of ``out``, by kind:
    its stubs (``# stub:``), what each name is (``# dX:``), the fuller text (``# dX full:``) and
    the hint rungs (``# hint dX:``, a rung continued by ``# hint dX+:``)."""

    def __init__(self, out: list[str], indent: str) -> None:
        above: list[tuple[str, str, str, str]] = []  # (hint, name, "+" or "full" or "", text)
        while out and _DESCRIBE.match(out[-1].strip()) and out[-1].startswith(indent + "#"):
            hint_, name_, kind, text = _DESCRIBE.match(out.pop().strip()).groups()
            above.insert(0, (hint_ or "", name_, (kind or "").strip(), text))
        self.stubs = [text for h, name, kind, text in above if name == "stub" and not h]
        self.described = {
            name: text for h, name, kind, text in above if not h and not kind and name != "stub"
        }
        self.fuller = {name: text for h, name, kind, text in above if not h and kind == "full"}
        self.rungs: dict[str, list[str]] = {}
        for h, name, kind, text in above:
            if h and kind == "+" and self.rungs.get(name):
                self.rungs[name][-1] += "\n" + text
            elif h:
                self.rungs.setdefault(name, []).append(text)

    def names(self, targets: list[str]) -> list[str]:
        """The names the block asks for: those described, else (with no stub) those it assigns.
        A comment about a name the block does not assign is an error."""
        about = [*self.described, *self.fuller, *(self.rungs if not self.stubs else [])]
        stray = [n for n in about if n not in targets]
        if stray:
            raise ValueError(
                f"the comment '# {stray[0]}: ...' describes no name assigned in its solution block"
            )
        return list(self.described) or ([] if self.stubs else targets)

    def ladders(self, names: list[str], block: str) -> dict[str, dict]:
        """The hint ladder of each name asked, and of each name a stubbed block has rungs for
        (a block of no name, a closure's body: its ladders go by the check's name)."""
        found = {
            name: {"rungs": self.rungs.get(name, []), "solution": _solution_lines(block, name)}
            for name in names
        }
        if self.stubs:
            for name, steps in self.rungs.items():
                found[name] = {"rungs": steps, "solution": textwrap.dedent(block).strip()}
        return found

    def placeholders(self, indent: str, names: list[str], full: bool) -> list[str]:
        """The student's lines in the block's place: its stubs, then ``dX = ...  # TODO: ...``
        for each name asked (``# YOUR CODE HERE`` for neither)."""
        lines = [f"{indent}{code}" for code in self.stubs]
        if not names and not self.stubs:
            lines.append(f"{indent}# YOUR CODE HERE")
        for name in names:
            what = self.described.get(name)
            what = self.fuller.get(name, what) if full else what
            lines.append(
                f"{indent}{name} = ...  # TODO: {what}" if what else f"{indent}{name} = ...  # TODO"
            )
        return lines


def _block_end(lines: list[str], begin: int, indent: str, source: str) -> tuple[int, list[str]]:
    """The index of the END line of the block that starts at ``begin``, and the names its
    top-level lines assign, in order."""
    end = begin + 1
    targets: list[str] = []
    while end < len(lines) and lines[end].strip() != END:
        body = lines[end]
        if body.startswith(indent) and not body[len(indent) :].startswith((" ", "\t")):
            m = _ASSIGN.match(body[len(indent) :])
            if m and m.group(1) not in targets:
                targets.append(m.group(1))
        end += 1
    if end == len(lines):
        raise ValueError(f"{BEGIN} without {END} in:\n{source}")
    return end, targets


def _solution_lines(block: str, name: str) -> str:
    """The statements of a solution block that assign ``name`` (or change it in place)."""
    code = textwrap.dedent(block)
    try:
        tree = parse(code)
    except SyntaxError:
        return code.strip()
    keep = []
    for stmt in tree.body:
        stores = any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
            for n in ast.walk(stmt)
        )
        stores = stores or any(
            isinstance(n, (ast.Subscript, ast.Attribute))
            and isinstance(n.ctx, ast.Store)
            and isinstance(getattr(n, "value", None), ast.Name)
            and n.value.id == name
            for n in ast.walk(stmt)
        )
        # dC.index_add_(...)
        stores = stores or any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr.endswith("_")
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == name
            for n in ast.walk(stmt)
        )
        if stores:
            keep.append(ast.get_source_segment(code, stmt))
    return "\n".join(keep) or code.strip()


_INSTALL = """\
# The workbook's `checks` package, where it is missing (Colab, a fresh kernel): pip installs
# WORKBOOK_SOURCE, {what}
WORKBOOK_SOURCE = {source}
import importlib.util, os, subprocess, sys

if importlib.util.find_spec("checks") is None:
    WORKBOOK_SOURCE = WORKBOOK_SOURCE or os.environ.get("WORKBOOK_SOURCE", "")
    if not WORKBOOK_SOURCE:
        raise RuntimeError("checks is not installed and the workbook is on no package index: "
                           "set WORKBOOK_SOURCE above to the URL your instructor gives you")
    if subprocess.run([sys.executable, "-m", "pip", "install", "-q", WORKBOOK_SOURCE]).returncode:
        raise RuntimeError(f"pip could not install {{WORKBOOK_SOURCE}}: see its messages above")
    importlib.invalidate_caches()"""
_UNSET = "the wheel or git+ URL your instructor gives you (none: nothing is installed)."


def install_cell(source: str = INSTALL_SOURCE) -> str:
    """The first code cell of every notebook: where ``checks`` is missing, pip installs
    ``source`` (one pip argument), or, when it is empty, the instructor's ``WORKBOOK_SOURCE``."""
    what = "the workbook's release." if source else _UNSET
    return _INSTALL.format(what=what, source=json.dumps(source))


def is_install_cell(source: str) -> bool:
    return 'find_spec("checks") is None' in source


def student_notebook(
    solution: nbformat.NotebookNode, full: bool = False, source: str = INSTALL_SOURCE
) -> nbformat.NotebookNode:
    """The student copy of a solution notebook (``source``: what its install cell installs); its
    metadata lists the checks the executed solution shows (a class edition has no solutions)."""
    nb = nbformat.from_dict(solution)
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            install = cell is first and is_install_cell(cell.source)
            cell.source = install_cell(source) if install else _student_source(cell, full)
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    nb.metadata[METADATA] = {"checks": shown_checks(solution.cells)}
    return nb


def _student_source(cell: nbformat.NotebookNode, full: bool) -> str:
    """A code cell's student source: a drill's answer cell as the drill puts it beneath itself,
    any other with its solution blocks stubbed."""
    drawn = cell.metadata.get(METADATA, {}).get("drill")
    if drawn:
        return draw(drawn["seed"], drawn.get("mistake")).answer_cell()
    return stub_source(cell.source, full)


def _with_install_cell(text: str) -> str:
    """A solution notebook's JSON text with its first code cell set to :func:`install_cell`,
    changed in that cell's ``source`` only (the rest stays byte for byte as executed)."""
    first = next(c for c in json.loads(text)["cells"] if c["cell_type"] == "code")
    new = install_cell().splitlines(keepends=True)
    if "".join(first["source"]) == "".join(new):
        return text

    def block(lines: list[str]) -> str:
        return '"source": ' + json.dumps(lines, indent=1, ensure_ascii=False).replace("\n", "\n   ")

    old = block(first["source"] if isinstance(first["source"], list) else [first["source"]])
    if text.count(old) != 1 or not is_install_cell("".join(first["source"])):
        raise ValueError("the first code cell of a solution is not the install cell")
    return text.replace(old, block(new))


def notebook_ladders(solution: nbformat.NotebookNode) -> dict[str, list[dict]]:
    """Every hint ladder of a solution notebook, by answer name, in order; each with the name its
    cell's ``cmp`` checks it under (``check``), which tells a name asked twice apart."""
    from checks.grading.facts import CMP

    found: dict[str, list[dict]] = {}
    for cell in solution.cells:
        if cell.cell_type == "code":
            labels = {m.group(3): m.group(2) for m in CMP.finditer(cell.source)}
            for name, ladder in ladders(cell.source).items():
                found.setdefault(name, []).append({"check": labels.get(name, name), **ladder})
    return found


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb, version=4) + "\n"


def generate(
    check: bool = False,
    root: Path = ROOT,
    full: bool = False,
    out: Path | None = None,
    hints: Path | None = None,
    source: str = INSTALL_SOURCE,
) -> list[Path]:
    """Write (or, with ``check``, compare) every student copy and hint ladder, and, for the
    repository's own notebooks/, the solutions' install cell; the paths that differ."""
    differ = []
    own = out is None
    out = out or root / "notebooks"
    hints = hints or (HINTS if root == ROOT else root / "checks" / "hints")
    for sol in sorted((root / "solutions").glob("*.ipynb")):
        solution = nbformat.read(sol, as_version=4)
        texts = {out / sol.name: render(student_notebook(solution, full, source))}
        found = notebook_ladders(solution)
        if found:  # a notebook of drills alone has none: each drill makes its own in the kernel
            texts[hints / f"{sol.stem}.json"] = json.dumps(found, indent=1) + "\n"
        races = shown_races(solution.cells)
        costs = hints / COSTS.name / f"{sol.stem}.json"
        if races:  # what the solution's steps cost, for the solution's rows of a learner's race
            texts[costs] = json.dumps({"races": races}) + "\n"
        elif costs.exists():  # a solution that shows no race any more ships none
            differ.append(costs)
            if not check:
                costs.unlink()
        if own:
            texts[sol] = _with_install_cell(sol.read_text())
        if sol.stem in VARIANTS_OF:  # the ladders its variants change (checks.variants)
            from checks.authoring.variants.build import changed_ladders  # it builds on this module

            changed = changed_ladders(root / "solutions", sol.stem)
            texts[hints / "variants" / f"{sol.stem}.json"] = json.dumps(changed, indent=1) + "\n"
        for target, text in texts.items():
            if not target.exists() or target.read_text() != text:
                differ.append(target)
                if not check:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text)
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="backprop-workbook student", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="only report student copies that are out of date"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="a self-study edition: TODO comments that give the rule and formula",
    )
    parser.add_argument(
        "--out", type=Path, help="folder for the student copies (default notebooks/)"
    )
    parser.add_argument(
        "--source",
        default=INSTALL_SOURCE,
        help="what the install cell installs where checks is missing: your own wheel or git+ URL "
        "(with --out; default checks.paths.INSTALL_SOURCE)",
    )
    args = parser.parse_args(argv)
    if args.full and not args.out and not args.check:
        parser.error("--full writes a self-study edition: give it its own --out folder")
    if args.source != INSTALL_SOURCE and not args.out:
        parser.error("--source writes a course's own edition: give it its own --out folder")
    differ = generate(check=args.check, full=args.full, out=args.out, source=args.source)
    for path in differ:
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{'out of date' if args.check else 'wrote'}: {shown}")
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
