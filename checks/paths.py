"""Where the workbook's files are, in a source checkout and in an installed wheel.

In a checkout (``pip install -e .``) the notebooks, solutions and data are the repository's
folders. A wheel carries the notebooks and solutions inside the package (``checks/workbook/``)
and keeps the downloaded data and the self-check's reference values in the user's cache
(``$XDG_CACHE_HOME/backprop-workbook``, else ``~/.cache/backprop-workbook``).

The install cell of every notebook installs the workbook from :data:`INSTALL_SOURCE`, and a folder
that ``backprop-workbook start --class`` made says so in its :data:`MANIFEST`
(:func:`class_edition`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
HINTS = PACKAGE / "hints"  # the hint ladders, generated from the solutions (checks.hints)
COSTS = HINTS / "costs"  # what the solutions' steps cost, from their race() (checks.races)


def _checkout(folder: Path) -> Path | None:
    """``folder`` when it is the workbook's source checkout (the package's parent), else None."""
    looks = all((folder / name).exists() for name in ("pyproject.toml", "notebooks", "solutions"))
    return folder if looks else None


CHECKOUT: Path | None = _checkout(PACKAGE.parent)
"""The repository the package is imported from, or None for an installed wheel."""

ROOT: Path = CHECKOUT or PACKAGE / "workbook"
"""The folder that holds ``notebooks/`` and ``solutions/``."""

NOTEBOOKS: Path = ROOT / "notebooks"
SOLUTIONS: Path = ROOT / "solutions"


def cache_dir() -> Path:
    """The user's cache folder for the workbook, honouring ``$XDG_CACHE_HOME`` at call time."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "backprop-workbook"


def default_data_dir() -> Path:
    """Where ``names.txt`` lives unless ``$WORKBOOK_DATA_DIR`` says otherwise."""
    return CHECKOUT / "data" if CHECKOUT else cache_dir() / "data"


INSTALL_SOURCE = ""
"""What the notebooks' first cell installs where ``checks`` is missing (Colab): one pip argument,
pinned (a released wheel's URL, ``backprop-workbook==0.1.0`` only once the project holds that name
on the index). Empty while the project has published none: the cell then installs nothing and asks
for the instructor's own wheel or repository URL. ``python -m checks.student`` writes it into
every notebook; never an index name the project does not hold."""

METADATA = "backprop-workbook"
"""The key of the workbook's entry in a notebook's metadata (a student copy lists its checks)."""

MANIFEST = ".backprop-workbook.json"
"""The file ``backprop-workbook start`` writes beside the learner's copies."""


EDITION = PACKAGE / "edition.json"
"""Present in a class wheel only (``backprop-workbook class-wheel``): ``{"edition": "class"}``."""


def class_wheel() -> bool:
    """Whether this install is a class wheel: no solutions in it, no solution lines in its
    ladders, and every folder a class edition."""
    try:
        return json.loads(EDITION.read_text()).get("edition") == "class"
    except (OSError, ValueError, AttributeError):
        return False


def class_edition(folder: Path | None = None) -> bool:
    """Whether the notebooks in ``folder`` (default: the working folder, where JupyterLab and VS
    Code start a notebook's kernel) are a class edition: ``start --class`` wrote
    ``"edition": "class"`` in their :data:`MANIFEST`, ``$WORKBOOK_EDITION`` is ``class`` (a
    course's JupyterHub), or the workbook is a class wheel. A course setting, not a lock: the
    learner can edit the first two."""
    if class_wheel() or os.environ.get("WORKBOOK_EDITION", "").strip().lower() == "class":
        return True
    try:
        manifest = json.loads(((folder or Path.cwd()) / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("edition") == "class"
