"""``python -m checks.export``, kept working: it runs :mod:`checks.grading.export`."""

from checks.startup import run_program

if __name__ == "__main__":
    run_program("checks.grading.export")
