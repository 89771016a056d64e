"""``python -m checks.feedback``, kept working: it runs :mod:`checks.grading.feedback`."""

import sys

from checks.startup import skip_unused_imports

if __name__ == "__main__":
    skip_unused_imports()  # a process of its own: before its imports reach nbformat
    from checks.grading.feedback import main

    sys.exit(main())
