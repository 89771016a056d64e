"""``python -m checks.grade``, kept working: it runs :mod:`checks.grading.cli`."""

from checks.startup import run_program

if __name__ == "__main__":
    run_program("checks.grading.cli")
