"""Headless Chromium for the browser tests (Debian's chromium driven by playwright)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("WORKBOOK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_browser() -> None:
    """Skip the test where Chromium or the playwright package is missing."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} not found: run `bash tests/e2e_setup.sh` (apt-get install chromium)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip(
            "the playwright package is not installed: run `bash tests/e2e_setup.sh` "
            "(pip install playwright)"
        )
