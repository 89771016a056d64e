"""``python -m checks.classwheel``, kept working: it runs :mod:`checks.authoring.classwheel`."""

from checks.startup import run_program

if __name__ == "__main__":
    run_program("checks.authoring.classwheel")
