"""The workbook's one command: ``backprop-workbook start [DIR]`` and ``check NOTEBOOK`` for a
learner; ``grade``, ``export``, ``feedback``, ``variants`` and ``class-wheel`` for an instructor;
``student`` for an author. Each of the last six is its module's own command line (``python -m
checks.grade`` and the others work as well)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

from checks.paths import SOLUTIONS, class_wheel
from checks.start import DEFAULT_DIR, start
from checks.startup import skip_unused_imports

GRADE_NEEDS = ("pytest", "nbval", "nbformat", "jupyter_client", "ipykernel")
# subcommand -> (the module whose main() it runs, its help line)
PASSED_ON = {
    "grade": ("checks.grading.cli", "(instructors) grade a class's notebooks into an out folder"),
    "export": (
        "checks.grading.export",
        "(instructors) Canvas, Gradescope or GitHub Classroom files",
    ),
    "feedback": ("checks.grading.feedback", "(instructors) one feedback page per learner"),
    "variants": (
        "checks.authoring.handout",
        "(instructors) hand out notebook 03 with a variant of its own to each learner of a roster",
    ),
    "class-wheel": (
        "checks.authoring.classwheel",
        "(instructors) build the workbook's wheel for a class: no solutions, reveal off",
    ),
    "student": (
        "checks.authoring.student",
        "(authors) generate the student copies and hint ladders",
    ),
}


def _missing_grade_needs(command: str) -> bool:
    """Say which of the grader's packages are missing, if any (``[grade]`` installs them)."""
    missing = [m for m in GRADE_NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        what = "writes notebooks" if command == "variants" else "runs the grader"
        learner = (
            ""
            if command == "variants"
            else (
                " Without it, run the notebook top to bottom and call summary() in its last cell."
            )
        )
        print(
            f"backprop-workbook {command} {what}, which needs {', '.join(missing)}: "
            f"pip install 'backprop-workbook[grade]'.{learner}",
            file=sys.stderr,
        )
    return bool(missing)


def _passed_on(command: str, argv: list[str]) -> int:
    """Run ``command``'s module's own command line on ``argv``."""
    if command in ("grade", "variants") and _missing_grade_needs(command):
        return 2
    module = importlib.import_module(PASSED_ON[command][0])
    return module.main(argv)


def _check(argv: list[str]) -> int:
    """Run the grader's self-check on one notebook (``python -m checks.grade --self``)."""
    if class_wheel():
        from checks.grading.grader import no_solutions

        print(no_solutions(SOLUTIONS), file=sys.stderr)
        return 2
    if _missing_grade_needs("check"):
        return 2
    from checks.grading.cli import main as grade_main

    return grade_main(["--self", *argv])


def main(argv: list[str] | None = None) -> int:
    skip_unused_imports()
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="backprop-workbook", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "start",
        help="copy the notebooks into a folder of your own and open JupyterLab",
        description="Copy the student notebooks into DIR (a notebook you have changed "
        "is never overwritten) and open JupyterLab there. Arguments after -- go to "
        "JupyterLab (e.g. -- --port 8890).",
    )
    s.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=DEFAULT_DIR,
        help=f"the folder for your notebooks (default {DEFAULT_DIR})",
    )
    s.add_argument(
        "--new",
        action="store_true",
        help="write a fresh copy (NAME-new.ipynb) beside each notebook you have changed",
    )
    s.add_argument(
        "--class",
        dest="class_edition",
        action="store_true",
        help="a class edition: hint(..., reveal=True) is off in this folder",
    )
    s.add_argument("--no-lab", action="store_true", help="copy only: do not open JupyterLab")
    s.add_argument("--no-browser", action="store_true", help="start JupyterLab without a browser")
    c = sub.add_parser(
        "check",
        help="grade one of your notebooks as the instructor's grader would",
        description="The self-check: runs the notebook in a fresh kernel against "
        "the solutions and prints a table of its checks. Options after NOTEBOOK "
        "are python -m checks.grade's (--only, --fail-under, --sandbox).",
    )
    c.add_argument("notebook", type=Path)
    for command, (_, line) in PASSED_ON.items():
        sub.add_parser(command, add_help=False, help=line)
    lab_args: list[str] = []
    if "--" in argv:
        argv, lab_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    a, rest = p.parse_known_args(argv)
    if a.command == "check":
        return _check([str(a.notebook), *rest])
    if a.command in PASSED_ON:
        return _passed_on(a.command, rest + (["--", *lab_args] if lab_args else []))
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    extra = (["--no-browser"] if a.no_browser else []) + lab_args
    return start(a.dir, new=a.new, lab=not a.no_lab, extra=extra, class_edition=a.class_edition)


if __name__ == "__main__":
    sys.exit(main())
