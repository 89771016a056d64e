"""Time a new user's way from ``git clone`` to the first check result in JupyterLab, \
install included.

Run from anywhere (it clones the checkout it lives in, so only committed work is measured)::

    python bench/bench_first_check.py                      # notebook 01, pip cache as it is
    python bench/bench_first_check.py --notebook 03-makemore-backprop.ipynb
    python bench/bench_first_check.py --no-cache           # pip --no-cache-dir: a cold cache
    python bench/bench_first_check.py --repo URL --keep    # another repository; keep the temp dir

Phases, each timed with ``time.perf_counter``: ``git clone`` into a temporary directory;
``python -m venv`` (the Python that runs this script); ``pip install torch==2.13.0`` (the CPU build,
installed first as PyTorch's instructions say); the README's ``python -m pip install -e ".[lab]"``
in the clone; copying names.txt into the clone's data/ (a stand-in for the download on first use);
``backprop-workbook start DIR --no-lab`` (the README's ``start`` copies the notebooks into a folder
of the learner's own); then JupyterLab from the venv on that folder: the server answering, the
notebook open in headless Chromium with an idle kernel, and, after Run > Run All Cells, the first
check line visible. A screenshot of that cell goes to ``--shots`` (default tests/artifacts/, not
committed). Needs git, /usr/bin/chromium and the playwright package in the Python that runs it.
Nothing is asserted; it prints a table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import CHECK_LINE, CHROMIUM, CHROMIUM_FLAGS, KERNEL_IDLE_JS, Lab  # noqa: E402

# s, for each browser or server wait: a cold start imports torch and JupyterLab on a small machine
TIMEOUT = 300.0
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


class Timer:
    """Named phases with their durations, in order."""

    def __init__(self) -> None:
        self.phases: list[tuple[str, float]] = []

    def add(self, name: str, seconds: float) -> None:
        self.phases.append((name, seconds))
        print(f"  {name}: {seconds:.1f} s", flush=True)

    def run(
        self, name: str, cmd: list[str], cwd: Path | None = None, log: Path | None = None
    ) -> None:
        """Run ``cmd`` as one timed phase; on failure print the tail of its output and stop."""
        start = time.perf_counter()
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.add(name, time.perf_counter() - start)
        if log:
            log.write_text(proc.stdout)
        if proc.returncode:
            sys.exit(f"FAILED ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-4000:]}")

    def table(self) -> str:
        width = max(len(name) for name, _ in self.phases)
        lines = [f"{'phase':<{width}}  {'seconds':>8}  {'cumulative':>10}"]
        total = 0.0
        for name, seconds in self.phases:
            total += seconds
            lines.append(f"{name:<{width}}  {seconds:8.1f}  {total:10.1f}")
        return "\n".join(lines)


def lab_env(python: Path, home: Path) -> dict[str, str]:
    """A new user's environment: the venv first on PATH, none of this machine's WORKBOOK_/JUPYTER
    settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WORKBOOK_", "JUPYTER", "PYTHONPATH"))
    }
    return dict(
        env,
        VIRTUAL_ENV=str(python.parents[1]),
        PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}",
        JUPYTER_DATA_DIR=str(home / "data"),
    )


def first_check(
    timer: Timer, python: Path, folder: Path, home: Path, notebook: str, shot: Path
) -> None:
    """Open ``notebook`` in JupyterLab, Run All Cells from the menu, and time until the first check
    line is visible."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as pw:
        # The browser starts before the clock: a user has one open already.
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        start = time.perf_counter()
        server = Lab(folder, home, python=str(python), env=lab_env(python, home))
        try:
            server.wait_ready(TIMEOUT)
            timer.add("JupyterLab server up", time.perf_counter() - start)

            start = time.perf_counter()
            page.goto(
                f"{server.url}/lab/tree/{notebook}?token={server.token}", timeout=TIMEOUT * 1000
            )
            page.wait_for_function(KERNEL_IDLE_JS, timeout=TIMEOUT * 1000)
            timer.add("notebook open, kernel idle", time.perf_counter() - start)

            start = time.perf_counter()
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.locator(".lm-Menu").get_by_text("Run All Cells", exact=True).click()
            check_output = page.locator(".jp-OutputArea-output", has_text=re.compile(CHECK_LINE))
            cell = page.locator(f"{PANEL} .jp-Cell").filter(has=check_output).first
            output = cell.locator(check_output).first
            output.wait_for(state="attached", timeout=TIMEOUT * 1000)
            output.scroll_into_view_if_needed()
            expect(output).to_be_visible()
            timer.add("Run All -> first check visible", time.perf_counter() - start)

            shot.parent.mkdir(parents=True, exist_ok=True)
            cell.screenshot(path=str(shot))
            print(f"  first check line: {output.inner_text().splitlines()[0]}")
        except Exception:
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot.with_name(shot.stem + "-failure.png")), full_page=True)
            print(f"JupyterLab log tail:\n{server.log_path.read_text()[-3000:]}")
            raise
        finally:
            server.stop()
            browser.close()


def dir_mb(path: Path) -> float:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
        if path.is_dir()
        else 0.0
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repo",
        default=str(ROOT),
        help="what to git clone (default: this checkout, its committed HEAD)",
    )
    ap.add_argument(
        "--notebook", default="01-scalar-autograd.ipynb", help="the notebook in notebooks/ to open"
    )
    ap.add_argument(
        "--no-cache",
        action="store_true",
        help="pass --no-cache-dir to pip (a cold-cache measurement)",
    )
    ap.add_argument(
        "--torch-spec",
        default="torch==2.13.0",
        help="what to pip install before the README's command",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument(
        "--names",
        type=Path,
        default=ROOT.parent / "shared" / "data" / "names.txt",
        help="names.txt to copy",
    )
    ap.add_argument(
        "--shots", type=Path, default=ROOT / "tests" / "artifacts", help="where the screenshot goes"
    )
    args = ap.parse_args()
    if not args.names.is_file():
        sys.exit(f"{args.names} not found: pass --names PATH")

    cache = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True
    ).stdout.strip()
    pip_config = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout.split()
    print(f"bench_first_check  {datetime.datetime.now().isoformat(timespec='seconds')}")
    print(
        f"platform: {platform.platform()}  python: {platform.python_version()} ({sys.executable})  "
        f"cpus: {os.cpu_count()}"
    )
    print(f"repo: {args.repo}  notebook: {args.notebook}  torch: {args.torch_spec}")
    print(
        f"pip cache: {'off (--no-cache-dir)' if args.no_cache else f'{cache} ({dir_mb(Path(cache)):.0f} MB before the run)'}"  # noqa: E501
    )
    print(f"pip config: {' '.join(pip_config) or '(none)'}")

    tmp = Path(tempfile.mkdtemp(prefix="bench-first-check-"))
    clone, venv, home = tmp / "workbook", tmp / "venv", tmp / "jupyter"
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", *(["--no-cache-dir"] if args.no_cache else [])]
    timer = Timer()
    try:
        timer.run("git clone", ["git", "clone", "--quiet", args.repo, str(clone)])
        commit = subprocess.run(
            ["git", "-C", str(clone), "log", "-1", "--format=%h %s"], capture_output=True, text=True
        ).stdout
        print(f"  commit: {commit.strip()[:100]}")
        timer.run("python -m venv", [sys.executable, "-m", "venv", str(venv)])
        timer.run(
            f"pip install {args.torch_spec}", [*pip, args.torch_spec], log=tmp / "pip-torch.log"
        )
        timer.run(
            'pip install -e ".[lab]" (README)',
            [*pip, "-e", ".[lab]"],
            cwd=clone,
            log=tmp / "pip-lab.log",
        )

        start = time.perf_counter()
        (clone / "data").mkdir(exist_ok=True)
        shutil.copyfile(args.names, clone / "data" / "names.txt")
        timer.add("data: copy names.txt (stands in for the download)", time.perf_counter() - start)

        versions = subprocess.run(
            [str(python), "-c", "from importlib.metadata import version as v; "
             "print(*(f'{p} {v(p)}' for p in ('torch', 'jupyterlab', 'ipykernel', 'matplotlib')), "
             "sep=', ')"],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        print(f"  installed: {versions}  venv: {dir_mb(venv):.0f} MB")

        home.mkdir()
        mine = tmp / "my-notebooks"
        timer.run(
            "backprop-workbook start DIR --no-lab (README)",
            [str(venv / "bin" / "backprop-workbook"), "start", str(mine), "--no-lab"],
        )
        shot = args.shots.resolve() / f"first-check-{Path(args.notebook).stem}.png"
        first_check(timer, python, mine, home, args.notebook, shot)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        if timer.phases:
            print(f"\n{timer.table()}")
    print(f"\nscreenshot: {shot}")
    print("notes:")
    cache_note = (
        "ran with --no-cache-dir (cold cache)"
        if args.no_cache
        else "used its cache as it was; a cold cache adds download time"
    )
    cache_note += f" (cache after the run: {dir_mb(Path(cache)):.0f} MB)"
    print(
        f"- pip {cache_note}; where packages come from is the pip config above. torch is the CPU "
        "wheel: the multi-GB CUDA build that an unpinned install pulls on Linux is not measured."
    )
    print(
        "- names.txt is copied, not downloaded (a real user downloads ~230 KB on first use); "
        "its row is the copy only."
    )
    print(
        "- the clone is of a local path (no network); the browser is launched before the server "
        "clock starts."
    )
    print(
        "- WORKBOOK_STEPS is not set: Run All in a student copy stops at the first unwritten "
        "answer, before any training loop."
    )


if __name__ == "__main__":
    main()
