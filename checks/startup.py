"""Start-up cost of the processes the workbook starts: optional imports none of them uses.

jsonschema, which nbformat validates notebooks with, imports the optional IRI checker
``rfc3987_syntax`` when it starts, and that module compiles some 35 Earley parsers as it is
imported: 1.7 s of CPU on a 2-core machine, more than the rest of pytest and nbval together
(python-jsonschema/jsonschema#1428). No notebook schema has an ``iri`` field. Every grading run
starts a test runner that imports nbformat (and every dask worker imports it with the grader),
so the runner, the command line (its ``python -m checks.X`` forms too, before their imports)
and the workers (``dask_setup``) block that import:
jsonschema then leaves its ``iri`` formats unchecked, and validates everything else as before.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

UNUSED = ("rfc3987_syntax",)  # jsonschema's "iri" and "iri-reference" formats


def skip_unused_imports() -> None:
    """Make ``import`` of each module of ``UNUSED`` raise ImportError in this process (an optional
    import then falls back as if it were not installed), unless one is already imported."""
    for name in UNUSED:
        sys.modules.setdefault(name, None)


def run_program(module: str) -> NoReturn:
    """A ``python -m checks.X`` form's whole process: the skip, then ``module``'s ``main()``, its
    return value the exit status (``module`` imported after the skip, so that its imports are)."""
    skip_unused_imports()
    sys.exit(importlib.import_module(module).main())


def dask_setup(worker: object) -> None:
    """dask's hook for a worker's preload (``LocalCluster(preload=["checks.startup"])``, or
    ``dask worker --preload checks.startup``): the skip, before the worker's first task."""
    skip_unused_imports()
