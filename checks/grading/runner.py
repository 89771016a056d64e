"""The test runner of a grading run: ``python -m checks.grading.runner ARGS`` is
``python -m pytest ARGS`` without the optional imports no grading run uses
(:mod:`checks.startup`), so that each notebook graded starts its runner 1.7 s sooner."""

from __future__ import annotations

from checks.startup import skip_unused_imports


def main(argv: list[str] | None = None) -> int:
    """pytest's ``main`` on ``argv`` (the process's own arguments when None)."""
    skip_unused_imports()
    import pytest

    return int(pytest.main(argv))


if __name__ == "__main__":
    raise SystemExit(main())
