"""``python -m checks.feedback``, kept working: it runs :mod:`checks.grading.feedback`."""

import sys

from checks.grading.feedback import main

if __name__ == "__main__":
    sys.exit(main())
