"""``python -m checks.classwheel``, kept working: it runs :mod:`checks.authoring.classwheel`."""

import sys

from checks.authoring.classwheel import main

if __name__ == "__main__":
    sys.exit(main())
