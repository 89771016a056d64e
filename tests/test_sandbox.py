"""The grader's sandbox (checks/grading/sandbox.py), seen from a kernel inside it: what it can read,
write and reach, and that nothing it starts outlives it."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from checks.authoring.student import ROOT
from checks.grading.run import run_notebook
from checks.grading.sandbox import bwrap
from checks.grading.sandbox import readable as sandbox_readable
from checks.grading.settings import Settings

pytestmark = pytest.mark.skipif(not bwrap(), reason="bubblewrap cannot make a sandbox here")


def said(cells: list[str], tmp_path: Path) -> dict[int, str]:
    """Run ``cells`` in the sandbox; each cell reports by raising RuntimeError(text)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    run = run_notebook(
        nb, tmp_path / "run", Settings(cell_timeout=30, notebook_timeout=120, sandbox="bwrap")
    )
    return {i: e.removeprefix("RuntimeError: ") for i, e in run.cell_errors.items()}


def attempt(code: str) -> str:
    """A cell that runs ``code`` and reports 'done' or the exception's type."""
    body = "\n".join("    " + line for line in code.split("\n"))
    return (
        f"try:\n{body}\n    r = 'done'\n"
        "except Exception as e:\n    r = type(e).__name__\nraise RuntimeError(r)"
    )


def test_it_sees_checks_and_data_but_not_the_solutions_or_home(tmp_path):
    home = Path.home()
    secret = tmp_path / "secret.txt"
    secret.write_text("the answers")
    out = said(
        [
            "import os\nraise RuntimeError(str(sorted(os.listdir(" + repr(str(ROOT)) + "))))",
            attempt(f"open({str(ROOT / 'solutions' / '03-makemore-backprop.ipynb')!r}).read()"),
            attempt(f"open({str(secret)!r}).read()"),
            f"raise RuntimeError(str(sorted(os.listdir({str(home)!r})) "
            f"if os.path.isdir({str(home)!r}) else []))",
            attempt("import checks, torch\nchecks.load_names()"),
            "raise RuntimeError(os.getcwd() + ' ' + os.environ['HOME'])",
        ],
        tmp_path,
    )
    assert out[0] == "['checks', 'data']"
    assert out[1] == "FileNotFoundError" and out[2] == "FileNotFoundError"
    readable = [str(p) for p in sandbox_readable()]
    listed = eval(out[3])  # the home shows at most the folders that lead to Python
    assert all(any(r.startswith(str(home / name)) for r in readable) for name in listed), listed
    assert out[4] == "done"
    cwd, home_inside = out[5].split()
    assert cwd == home_inside and cwd.startswith("/tmp/wb-")  # a scratch folder of its own


def test_it_writes_only_its_scratch_folder_and_has_no_network(tmp_path):
    target = ROOT / "checks" / f"pwned-{uuid.uuid4().hex}.txt"
    mine = tmp_path / "outside.txt"
    out = said(
        [
            attempt(f"open({str(target)!r}, 'w').write('x')"),
            attempt(f"open({str(mine)!r}, 'w').write('x')"),
            attempt("open('mine.txt', 'w').write('x')\nopen('/tmp/mine.txt', 'w').write('x')"),
            attempt("import socket\nsocket.create_connection(('pypi.org', 443), timeout=5)"),
            attempt("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=5)"),
        ],
        tmp_path,
    )
    assert out[0] == "OSError" and not target.exists()  # read-only
    assert out[1] in ("FileNotFoundError", "OSError") and not mine.exists()
    assert out[2] == "done"
    assert out[3] in ("gaierror", "OSError") and out[4] == "OSError"  # no name service, no route


def test_no_process_it_starts_outlives_it(tmp_path):
    marker = f"sandbox-marker-{uuid.uuid4().hex}"
    spawn = (
        "import subprocess, sys\n"
        f"code = 'import time\\nwhile True: time.sleep(0.2)  # {marker}'\n"
        "subprocess.Popen([sys.executable, '-c', code], start_new_session=True,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "if os.fork() == 0:  # a double-forked daemon as well\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execv(sys.executable, [sys.executable, '-c', code])\n"
        "    os._exit(0)\n"
    )
    out = said(["import os\n" + attempt(spawn)], tmp_path)
    assert out[0] == "done"
    time.sleep(1)
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                alive.append(entry.name)
        except OSError:
            continue
    assert not alive, f"still running: {alive}"
    assert os.getpid()  # the test process itself is untouched


def test_the_hint_ladders_are_hidden_from_a_graded_kernel(tmp_path):
    """They hold the solution lines; the grader passes them as hidden (checks.grade.Grader)."""
    from checks.grading.grader import Grader
    from checks.hints import HINTS

    hidden = Grader(tmp_path / "out", Settings()).hidden
    assert HINTS in hidden
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                attempt(f"open({str(HINTS / '03-makemore-backprop.json')!r}).read()")
            ),
            nbformat.v4.new_code_cell(
                attempt("from checks import hint\nassert 'no hint' in str(hint('counts'))")
            ),
        ]
    )
    run = run_notebook(
        nb,
        tmp_path / "run",
        Settings(cell_timeout=30, notebook_timeout=120, sandbox="bwrap"),
        hidden,
    )
    said = {i: e.removeprefix("RuntimeError: ") for i, e in run.cell_errors.items()}
    assert said == {0: "FileNotFoundError", 1: "done"}, said


def test_its_tmp_scratch_and_processes_are_capped(tmp_path):
    """/tmp and the scratch folder are tmpfs of ``TMP_MB`` and ``SCRATCH_MB`` (memory that
    docs/grading.md counts), and the kernel may not have more than ``PROCESSES`` processes and
    threads: a grader running as root starts it as an unprivileged uid of its own, for which the cap
    holds."""
    from checks.grading.sandbox import PROCESSES, SCRATCH_MB, TMP_MB

    fill = (
        "with open({path!r}, 'wb') as f:\n    for _ in range({mb}):\n        f.write(b'0' * 2**20)"
    )
    forks = (
        "import os, time\nkids = []\ntry:\n"
        f"    for _ in range({PROCESSES + 40}):\n"
        "        pid = os.fork()\n        if pid == 0:\n"
        "            time.sleep(30)\n            os._exit(0)\n"
        "        kids.append(pid)\nexcept OSError:\n    pass\n"
        "for k in kids:\n    os.kill(k, 9)\nraise RuntimeError(f'{len(kids)} {os.getuid()}')"
    )
    out = said(
        [
            attempt(fill.format(path="/tmp/big", mb=TMP_MB + 16)),
            attempt(fill.format(path="big", mb=SCRATCH_MB + 16)),
            attempt("import os\nos.remove('/tmp/big')\n" + fill.format(path="/tmp/small", mb=8)),
            forks,
        ],
        tmp_path,
    )
    assert out[0] == out[1] == "OSError" and out[2] == "done", out  # no space left on device
    started, uid = map(int, out[3].split())
    assert started < PROCESSES, started
    assert uid != 0 or os.geteuid() != 0  # never root on the host


def test_its_cells_are_named_as_ipython_names_them_and_read_back(tmp_path):
    """The grading kernel names a cell by a SHA-1 of its code (ipykernel's own names hash it in
    pure Python: 1 s for a notebook-05 run's hand-ins); a function of an earlier cell still shows
    its own source, and a cell of 1 MB runs."""
    out = said(
        [
            "def f():\n    return 'from the first cell'",
            "import inspect, sys\n"
            "raise RuntimeError(sys._getframe().f_code.co_filename + ' | ' + inspect.getsource(f))",
            "blob = '" + "x" * 1_000_000 + "'\nraise RuntimeError(str(len(blob)))",
        ],
        tmp_path,
    )
    name, source = out[1].split(" | ")
    assert name.startswith("<ipython-input-") and source.startswith("def f():"), out[1]
    assert out[2] == "1000000"


FONTS = """import io, logging, os
seen = sorted(os.listdir(os.environ["MPLCONFIGDIR"]))
log = io.StringIO()
logging.getLogger("matplotlib.font_manager").addHandler(logging.StreamHandler(log))
logging.getLogger("matplotlib.font_manager").setLevel(logging.INFO)
import matplotlib.pyplot as plt
plt.plot([0, 1], [1, 0])
plt.title("fonts")
plt.savefig("figure.png")
made = "made its own" if "generated new fontManager" in log.getvalue() else "used the grader's"
raise RuntimeError(f"{made} {seen}")"""


@pytest.mark.parametrize("box", ["bwrap", "none"])
def test_every_kernel_uses_the_graders_list_of_fonts(tmp_path, box):
    """matplotlib in a graded kernel reads the font list the grader made once, instead of reading
    every font file again, and draws with it (in the sandbox, where the list is read-only)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FONTS)])
    settings = Settings(cell_timeout=30, notebook_timeout=120, sandbox=box)
    run = run_notebook(nb, tmp_path / "run", settings)
    made, _, seen = run.cell_errors[0].removeprefix("RuntimeError: ").partition(" [")
    assert made == "used the grader's", run.cell_errors
    assert seen.startswith("'fontlist-v") and seen.endswith(".json']"), seen
