"""``python -m checks.export``, kept working: it runs :mod:`checks.grading.export`."""

import sys

from checks.grading.export import main

if __name__ == "__main__":
    sys.exit(main())
