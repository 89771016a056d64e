"""Where the checks run: the IPython shell, if any, whether it is a notebook's kernel, and the
execution count of the cell that runs now.

Read by a result's display (:mod:`checks.verdict`), the record of results
(:mod:`checks.session`) and the summary (:mod:`checks.overview`). IPython is looked up in
``sys.modules``, never imported: in a terminal it is absent and every answer here says so.
"""

from __future__ import annotations

import sys
from typing import Any


def ipython() -> Any:
    """The running IPython shell, or None (no IPython imported, or no shell)."""
    mod = sys.modules.get("IPython")
    if mod is None:
        return None
    try:
        return mod.get_ipython()
    except Exception:
        return None


def in_notebook() -> bool:
    """Whether the shell is a kernel's (Jupyter, VS Code, Colab), not a terminal's."""
    ip = ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def execution_count() -> int | None:
    """The execution count of the cell that runs now; None outside IPython."""
    ip = ipython()
    return getattr(ip, "execution_count", None) if ip is not None else None


def open_notebook() -> str:
    """The path of the notebook open in the kernel, from JupyterLab's ``__session__`` or VS
    Code's ``__vsc_ipynb_file__``; "" where neither is known."""
    ip = ipython()
    ns = getattr(ip, "user_ns", None) or {}
    return str(ns.get("__session__") or ns.get("__vsc_ipynb_file__") or "")
