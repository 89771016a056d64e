"""A class wheel: the workbook for a graded class, with no solutions in it.

The ordinary wheel carries the executed solutions (the self-check grades against them) and every
hint ladder ends in the solution's lines. For a class the instructor hands out this one instead::

    backprop-workbook class-wheel --out DIR      # or: python -m checks.classwheel --out DIR

It is built from the workbook's source checkout the way the platform builds any wheel (pip's PEP
517 build of a copy of the sources) with three changes: the solutions package and the variants'
edits (every variant's solution lines) are left out, the ladders keep their rungs but not the
solution lines, and ``checks/edition.json`` makes every folder a class edition (``hint(...,
reveal=True)`` off). Its version carries ``+class``. The learner's checks need no solutions
(they compare with autograd on the learner's own forward); the self-check and the grader refuse
with a reason. The built wheel is read back before it is kept: a solution inside it is an error,
never a warning.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from checks.paths import CHECKOUT

SOLUTIONS_PACKAGE = "checks.workbook.solutions"
# the variants' edits of notebook 03 hold every variant's solution lines (checks.authoring.variants)
VARIANTS = "checks/authoring/variants"
EDITION_FILE = "checks/edition.json"
_COPIED = ("pyproject.toml", "README.md", "checks", "notebooks")


class BuildError(RuntimeError):
    """The class wheel cannot be built, or the built one still holds a solution."""


def class_pyproject(text: str) -> str:
    """``pyproject.toml`` without the solutions package, with the edition file and ``+class``."""
    edits = [
        (r'^(version = "[^"+]+)"', r'\1+class"'),
        (rf', "{re.escape(SOLUTIONS_PACKAGE)}"', ""),
        (rf'"{re.escape(VARIANTS.replace("/", "."))}", ', ""),
        (rf'^"{re.escape(SOLUTIONS_PACKAGE)}" = [^\n]*\n', ""),  # its package-dir line
        (rf'^"{re.escape(SOLUTIONS_PACKAGE)}" = [^\n]*\n', ""),  # its package-data line
        (r"^(\[tool\.setuptools\.package-data\]\n)", r'\1"checks" = ["edition.json"]\n'),
    ]
    for pattern, replacement in edits:
        text, done = re.subn(pattern, replacement, text, count=1, flags=re.M)
        if not done:
            raise BuildError(f"pyproject.toml has changed shape: no match for {pattern!r}")
    for package in (SOLUTIONS_PACKAGE, VARIANTS.replace("/", ".")):
        if f'"{package}"' in text:
            raise BuildError(f"pyproject.toml still names {package}")
    return text


def without_solution_lines(ladders):
    """Ladders (a notebook's by answer name, or a variant's by axis and choice) with their rungs
    only: every ``solution`` key gone, at any depth."""
    if isinstance(ladders, list):
        return [without_solution_lines(x) for x in ladders]
    if isinstance(ladders, dict):
        return {k: without_solution_lines(v) for k, v in ladders.items() if k != "solution"}
    return ladders


def _holds_solution(ladders) -> bool:
    """Whether ladders keep a ``solution`` key at any depth."""
    if isinstance(ladders, list):
        return any(map(_holds_solution, ladders))
    return isinstance(ladders, dict) and (
        "solution" in ladders or any(map(_holds_solution, ladders.values()))
    )


def class_sources(root: Path, into: Path) -> Path:
    """Copy the sources a wheel is built from, then make them the class edition's."""
    into.mkdir(parents=True)
    for name in _COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, into / name)
    shutil.rmtree(into / "checks" / "workbook", ignore_errors=True)
    shutil.rmtree(into / VARIANTS, ignore_errors=True)
    pyproject = into / "pyproject.toml"
    pyproject.write_text(class_pyproject(pyproject.read_text()))
    for path in sorted((into / "checks" / "hints").rglob("*.json")):
        stripped = without_solution_lines(json.loads(path.read_text()))
        path.write_text(json.dumps(stripped, indent=1) + "\n")
    (into / EDITION_FILE).write_text(json.dumps({"edition": "class"}) + "\n")
    return into


def audit(wheel: Path) -> list[str]:
    """What makes ``wheel`` no class wheel: a solution notebook or solution lines inside it, no
    edition file, a student notebook missing."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        answers = ("checks/workbook/solutions/", f"{VARIANTS}/")
        problems = [f"{n} is inside" for n in names if n.startswith(answers)]
        for name in (n for n in names if re.fullmatch(r"checks/hints/.+\.json", n)):
            if _holds_solution(json.loads(z.read(name))):
                problems.append(f"{name} holds solution lines")
        if EDITION_FILE not in names:
            problems.append(f"{EDITION_FILE} is missing")
        elif json.loads(z.read(EDITION_FILE)).get("edition") != "class":
            problems.append(f"{EDITION_FILE} does not say class")
        if not any(n.startswith("checks/workbook/notebooks/") for n in names):
            problems.append("the student notebooks are missing")
    return problems


def build(out: Path, root: Path | None = CHECKOUT, isolation: bool = True) -> Path:
    """Build the class wheel from the checkout ``root`` into ``out``; its path. ``isolation``:
    pip's build environment (off: build with this Python's setuptools)."""
    if root is None or not (root / "solutions").is_dir():
        raise BuildError("a class wheel is built from the workbook's source checkout (--source)")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="class-wheel-") as tmp:
        sources = class_sources(root, Path(tmp) / "src")
        built = Path(tmp) / "built"
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(built)]
        cmd += [] if isolation else ["--no-build-isolation"]
        proc = subprocess.run([*cmd, str(sources)], capture_output=True, text=True)
        wheels = sorted(built.glob("*.whl"))
        if proc.returncode or len(wheels) != 1:
            raise BuildError(f"pip could not build it:\n{(proc.stdout + proc.stderr)[-2000:]}")
        problems = audit(wheels[0])
        if problems:
            raise BuildError("the built wheel is no class wheel: " + "; ".join(problems))
        return Path(shutil.copy2(wheels[0], out / wheels[0].name))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="backprop-workbook class-wheel", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", type=Path, default=Path("dist"), help="where the wheel goes (dist)")
    p.add_argument("--source", type=Path, default=CHECKOUT, help="the workbook's checkout")
    p.add_argument("--no-isolation", action="store_true", help="build with this Python's tools")
    a = p.parse_args(argv)
    try:
        wheel = build(a.out, a.source and a.source.resolve(), isolation=not a.no_isolation)
    except BuildError as why:
        print(f"no class wheel: {why}", file=sys.stderr)
        return 2
    print(f"wrote {wheel}: no solutions, no solution lines in the hints, reveal off")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
