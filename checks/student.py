"""``python -m checks.student``, kept working: it runs :mod:`checks.authoring.student`."""

from checks.startup import run_program

if __name__ == "__main__":
    run_program("checks.authoring.student")
