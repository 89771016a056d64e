"""Where the workbook's files are, in a source checkout and in an installed wheel.

In a checkout (``pip install -e .``) the notebooks, solutions and data are the repository's
folders. A wheel carries the notebooks and solutions inside the package (``checks/workbook/``)
and keeps the downloaded data and the self-check's reference values in the user's cache
(``$XDG_CACHE_HOME/backprop-workbook``, else ``~/.cache/backprop-workbook``).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


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
