"""Headless Chromium for the browser tests (Debian's chromium driven by playwright), and a
JupyterLab server for it to open (``Lab``): tests/test_e2e.py and the first-check bench use both."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
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


TOKEN = "e2e-" + os.urandom(12).hex()


# Timeouts (ms): generous, since a cold start imports torch and JupyterLab on a small machine; each
# wait ends as soon as what it waits for is there.
START = 90_000  # the server answering, the page and the kernel ready


CHECK_LINE = r"\| exact: (True |False) \| approximate: (True |False) \| maxdiff: \S+"


# Kernel ready: a kernel is attached to the notebook (not "No Kernel") and it is idle, in the
# toolbar and the status bar.
KERNEL_IDLE_JS = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    if (!panel) return false;
    const name = panel.querySelector('.jp-Toolbar-kernelName');
    const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    const bar = document.querySelector('#jp-main-statusbar');
    return !!name && !!indicator && !!bar
        && !/No Kernel/.test(name.textContent)
        && indicator.getAttribute('data-status') === 'idle'
        && /\\|\\s*Idle/.test(bar.textContent);
}"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), children first: the kernels run in sessions of
    their own."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class Lab:
    """A JupyterLab server on 127.0.0.1 in its own process group, serving ``root``; ``stop()`` ends
    it and its kernels.

    ``python`` runs the server (default: this interpreter); ``env`` is the environment to start from
    (default: this process's, with WORKBOOK_STEPS=300 unless set). Either way the server gets no
    user settings, news or update check.
    """

    def __init__(
        self,
        root: Path,
        home: Path,
        python: str = sys.executable,
        env: dict[str, str] | None = None,
    ):
        self.root = root
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = TOKEN
        self.log_path = home / "jupyterlab.log"
        config = home / "config"
        # No "Would you like to get notified about official Jupyter news?" toast over the notebook,
        # no update check.
        settings = (
            config
            / "lab"
            / "user-settings"
            / "@jupyterlab"
            / "apputils-extension"
            / "notification.jupyterlab-settings"
        )
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        if env is None:
            env = dict(os.environ, WORKBOOK_STEPS=os.environ.get("WORKBOOK_STEPS", "300"))
        env = dict(
            env,
            JUPYTER_CONFIG_DIR=str(config),  # none of the user's own server or lab settings
            JUPYTERLAB_SETTINGS_DIR=str(config / "lab" / "user-settings"),
            # no restored layout from an earlier session
            JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
            JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        )
        cmd = [
            python,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.allow_root=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = START / 1000) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {self.proc.returncode}:\n"
                    f"{self.log_path.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(
                    f"{self.url}/api/status?token={self.token}", timeout=5
                ) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(
            f"JupyterLab did not answer on {self.url} within {timeout:.0f} s:\n"
            f"{self.log_path.read_text()[-3000:]}"
        )

    def stop(self) -> None:
        kernels = _descendants(self.proc.pid)
        if self.proc.poll() is None:
            try:  # a clean shutdown stops the kernels too
                req = urllib.request.Request(
                    f"{self.url}/api/shutdown",
                    method="POST",
                    headers={"Authorization": f"token {self.token}"},
                )
                urllib.request.urlopen(req, timeout=10).close()
                self.proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, sig)
                    self.proc.wait(timeout=10)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
        for pid in kernels:  # in sessions of their own, so not in the server's process group
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()
