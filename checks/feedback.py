"""``python -m checks.feedback``, kept working: it runs :mod:`checks.grading.feedback`."""

from checks.startup import run_program

if __name__ == "__main__":
    run_program("checks.grading.feedback")
