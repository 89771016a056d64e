"""The processes the grader starts skip the optional imports no grading run uses, and still
validate notebooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

PROBE = """
import sys
from checks.startup import skip_unused_imports, UNUSED
skip_unused_imports()
import nbformat
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
nbformat.validate(nb)
nb.cells[0]["execution_count"] = "one"
try:
    nbformat.validate(nb)
except nbformat.ValidationError:
    print("invalid caught")
print("skipped:", sorted(set(UNUSED) - {m for m in sys.modules if sys.modules[m] is not None}))
"""


def test_the_runner_skips_the_iri_checker_and_still_validates_notebooks():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout
    assert "invalid caught" in out
    assert "skipped: ['rfc3987_syntax']" in out


def test_a_grading_run_starts_its_runner_through_the_module_that_skips_them(tmp_path):
    from checks.grading import run

    argv = run._runner_argv(
        run.Plan(nbformat.v4.new_notebook(), []), run.Settings(), run._Files.of(tmp_path), False
    )
    assert argv[1:3] == ["-m", "checks.grading.runner"]


def _skipped_here() -> list[str]:
    from checks.startup import UNUSED

    return [m for m in UNUSED if m in sys.modules and sys.modules[m] is None]


def test_the_local_clusters_workers_skip_them_before_their_first_task():
    from checks.grading.cluster import _connect
    from checks.grading.settings import Settings

    client, cluster = _connect(Settings(jobs=1), None, lambda line: None)
    try:
        assert client.submit(_skipped_here, pure=False).result(timeout=60) == ["rfc3987_syntax"]
    finally:
        client.close()
        cluster.close()


ENTRY = """
import runpy, sys
sys.argv = [{module!r}, "--help"]
try:
    runpy.run_module({module!r}, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
from checks.startup import UNUSED
print("skipped:", [m for m in UNUSED if m in sys.modules and sys.modules[m] is None])
print("nbformat:", "nbformat" in sys.modules)
"""


def _command_line_modules() -> list[str]:
    """``checks.X`` for every ``python -m checks.X`` form: the package's top-level modules that run
    as a program."""
    import checks

    return sorted(
        f"checks.{p.stem}"
        for p in Path(checks.__file__).parent.glob("*.py")
        if 'if __name__ == "__main__":' in p.read_text()
    )


def test_every_python_m_form_skips_them_before_its_imports_reach_nbformat():
    """``python -m checks.grade`` (dask's workers start from it too), ``checks.export``
    (Gradescope's run_autograder calls its ``gradescope-run``), and the others: each is a process
    of its own."""
    modules = _command_line_modules()
    assert {"checks.cli", "checks.grade", "checks.export"} <= set(modules)
    procs = {
        m: subprocess.Popen(
            [sys.executable, "-c", ENTRY.format(module=m)], stdout=subprocess.PIPE, text=True
        )
        for m in modules
    }
    said = {m: p.communicate(timeout=120)[0] for m, p in procs.items()}
    for module, out in said.items():
        assert "skipped: ['rfc3987_syntax']" in out, (module, out)
    assert any("nbformat: True" in out for out in said.values())  # the check had something to see
