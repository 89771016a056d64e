"""``python -m checks.grade``, kept working: it runs :mod:`checks.grading.cli`."""

import sys

from checks.grading.cli import main

if __name__ == "__main__":
    sys.exit(main())
