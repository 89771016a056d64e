"""Copy the student notebooks into a learner's own folder, and open JupyterLab there.

A copy the learner has edited is never overwritten. ``.backprop-workbook.json`` in the folder
records the sha256 of every copy as it was handed out, so a later ``start`` can tell

- a copy as handed out (replaced when this version of the workbook brings a newer one),
- a copy the learner has changed (kept; when the workbook's own copy has changed since, or on
  ``--new``, a fresh copy is written beside it as ``NAME-new.ipynb``).

``start --class`` makes the folder a class edition: the manifest says ``"edition": "class"``, and
a kernel working there (:func:`checks.paths.class_edition`) keeps ``hint(..., reveal=True)`` off.
A later ``start`` keeps the folder's edition.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from checks import paths
from checks.paths import CHECKOUT, MANIFEST, NOTEBOOKS, PACKAGE

DEFAULT_DIR = Path("~/backprop-workbook")


@dataclass
class Copied:
    """What ``start`` did with one notebook: ``action`` is copied, same, updated, kept or new."""

    name: str
    action: str
    path: Path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def forbidden(folder: Path) -> str | None:
    """Why ``folder`` cannot hold a learner's copies, or None: not inside the package, nor inside
    the repository's notebooks/ (generated files), solutions/ or tests/ (what its tests read)."""
    folder = folder.expanduser().resolve()
    places = [(PACKAGE, "the installed package")]
    if CHECKOUT:
        places += [
            (CHECKOUT / "notebooks", "the repository's notebooks/ (generated files)"),
            (CHECKOUT / "solutions", "the repository's solutions/"),
            (CHECKOUT / "tests", "the repository's tests/"),
        ]
    for place, what in places:
        if folder == place or place in folder.parents:
            return f"{folder} is inside {what}: choose a folder of your own"
    return None


def _free(folder: Path, stem: str) -> Path:
    path, k = folder / f"{stem}-new.ipynb", 2
    while path.exists():
        path, k = folder / f"{stem}-new-{k}.ipynb", k + 1
    return path


def _manifest(path: Path) -> dict:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def copy_notebooks(
    folder: Path, new: bool = False, source: Path = NOTEBOOKS, class_edition: bool = False
) -> list[Copied]:
    """Copy the student notebooks into ``folder`` without overwriting the learner's edits; with
    ``class_edition``, mark the folder a class edition (a folder once marked stays one)."""
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / MANIFEST
    manifest = _manifest(manifest_path)
    handed = manifest.get("copies") if isinstance(manifest.get("copies"), dict) else {}
    done: list[Copied] = []
    for src in sorted(source.glob("*.ipynb")):
        dest, fresh = folder / src.name, _sha(src)
        if not dest.exists():
            shutil.copyfile(src, dest)
            handed[src.name], action = fresh, "copied"
        elif (mine := _sha(dest)) == fresh:
            handed[src.name], action = fresh, "same"
        elif mine == handed.get(src.name):  # untouched since it was handed out: a newer workbook
            shutil.copyfile(src, dest)
            handed[src.name], action = fresh, "updated"
        else:  # the learner's work: keep it, and offer a version of the workbook not offered yet
            done.append(Copied(src.name, "kept", dest))
            if new or handed.get(src.name) != fresh:
                extra = _free(folder, src.stem)
                shutil.copyfile(src, extra)
                handed[src.name] = handed[extra.name] = fresh
                done.append(Copied(src.name, "new", extra))
            continue
        done.append(Copied(src.name, action, dest))
    kept = {"copies": handed}
    if class_edition or manifest.get("edition") == "class":
        kept["edition"] = "class"
    manifest_path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return done


_SAID = {
    "copied": "copied",
    "same": "unchanged",
    "updated": "updated (you had not changed it)",
    "kept": "kept: it holds your work",
    "new": "a fresh copy, beside yours",
}


def describe(done: list[Copied]) -> str:
    """One line per file written or kept."""
    return "\n".join(f"  {c.path.name:<34} {_SAID[c.action]}" for c in done)


def lab_command(folder: Path, extra: list[str]) -> list[str] | None:
    """The command that opens JupyterLab in ``folder``, or None when JupyterLab is missing."""
    if importlib.util.find_spec("jupyterlab") is None:
        return None
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and Colab-like machines run as root
    return cmd + extra


def start(
    folder: Path,
    new: bool = False,
    lab: bool = True,
    extra: list[str] | None = None,
    class_edition: bool = False,
) -> int:
    """``backprop-workbook start``: copy, then open JupyterLab (exit code of JupyterLab);
    ``class_edition``: ``start --class``, hint(..., reveal=True) off in this folder."""
    if why := forbidden(folder):
        print(f"backprop-workbook start: {why}.", file=sys.stderr)
        return 2
    folder = folder.expanduser().resolve()
    done = copy_notebooks(folder, new=new, class_edition=class_edition)
    print(f"Your notebooks are in {folder}:\n{describe(done)}")
    if paths.class_edition(folder):
        print("(a class edition: hint(..., reveal=True) is off for this course)")
    if any(c.action == "kept" for c in done) and not any(c.action == "new" for c in done):
        print("(start --new writes a fresh copy beside a notebook you have changed)")
    if not lab:
        return 0
    cmd = lab_command(folder, extra or [])
    if cmd is None:
        print(
            "JupyterLab is not installed here, so it cannot open: pip install 'jupyterlab>=4', "
            "or open the notebooks in VS Code or another Jupyter.",
            file=sys.stderr,
        )
        return 1
    if "--allow-root" in cmd:
        print("(running as root: JupyterLab starts with --allow-root)")
    try:
        return subprocess.call(cmd, cwd=folder)
    except KeyboardInterrupt:
        return 130
