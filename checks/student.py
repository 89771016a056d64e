"""``python -m checks.student``, kept working: it runs :mod:`checks.authoring.student`."""

import sys

from checks.authoring.student import main

if __name__ == "__main__":
    sys.exit(main())
