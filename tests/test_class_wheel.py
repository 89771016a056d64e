"""A class wheel: built by pip from a copy of the checkout, no solution inside it, and a learner's
install of it checks, hints and summarises as ever, with reveal off and no self-check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from checks.authoring.classwheel import (
    BuildError,
    audit,
    build,
    class_pyproject,
    without_solution_lines,
)
from checks.authoring.student import HINTS
from checks.compare import expected_checks
from checks.paths import CHECKOUT, NOTEBOOKS

pytestmark = pytest.mark.skipif(CHECKOUT is None, reason="built from the repository")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("dist"), isolation=False)


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The class wheel installed into a folder of its own (no dependencies: this Python's)."""
    target = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-compile", "--no-deps"]
    pip += ["--target", str(target)]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    return target


def _run(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """Python without this checkout's editable install (``-S``: no .pth files), the class wheel
    first on the path, then this interpreter's site-packages for torch and IPython."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKBOOK_", "PYTHON"))}
    env["PYTHONPATH"] = os.pathsep.join([str(installed), sysconfig.get_paths()["purelib"]])
    return subprocess.run(
        [sys.executable, "-S", *args], capture_output=True, text=True, env=env, cwd=cwd
    )


def test_the_wheel_holds_the_notebooks_and_ladders_but_no_solution(wheel):
    assert wheel.name.endswith("+class-py3-none-any.whl") and audit(wheel) == []
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for nb in NOTEBOOKS.glob("*.ipynb"):
            assert z.read(f"checks/workbook/notebooks/{nb.name}") == nb.read_bytes()
            if not (HINTS / f"{nb.stem}.json").exists():  # 06's drills: ladders made in the kernel
                assert f"checks/hints/{nb.stem}.json" not in names
                continue
            ladders = json.loads(z.read(f"checks/hints/{nb.stem}.json"))
            full = json.loads((HINTS / f"{nb.stem}.json").read_text())
            assert ladders == without_solution_lines(full) and ladders.keys() == full.keys()
    assert not [n for n in names if "solutions/" in n]
    with zipfile.ZipFile(wheel) as z:
        changed = json.loads(z.read("checks/hints/variants/03-makemore-backprop.json"))
    full = json.loads((HINTS / "variants" / "03-makemore-backprop.json").read_text())
    assert changed == without_solution_lines(full) and "relu" in changed["activation"]
    # the variants' edits hold every variant's answers: none of them travels to a class
    assert not [n for n in names if n.startswith("checks/authoring/variants/")]
    assert "checks/authoring/student.py" in names


def test_a_learner_on_the_class_wheel_checks_and_hints_without_reveal(installed, tmp_path):
    full = json.loads((HINTS / "03-makemore-backprop.json").read_text())
    solution = full["dcounts"][0]["solution"]
    script = textwrap.dedent("""
        import json, torch, checks, checks.paths as p
        from checks.compare import expected_checks
        h, rung = checks.hint("counts", reveal=True), checks.hint("counts")
        checks.variant(activation="relu", n_hidden=48)  # a variant's notebook says this
        relu = checks.hint("hpreact")
        a = torch.randn(3, generator=torch.Generator().manual_seed(0), requires_grad=True)
        (a * a).sum().backward()
        right = checks.cmp("a", 2 * a.detach(), a, quiet=True)
        wrong = checks.cmp("a", a.detach(), a, quiet=True)
        print(json.dumps({
            "file": checks.__file__, "checkout": p.CHECKOUT is None, "wheel": p.class_wheel(),
            "solutions": p.SOLUTIONS.exists(), "edition": p.class_edition(),
            "checks": expected_checks("03-makemore-backprop"), "hint": str(h),
            "rung": str(rung), "cmp": [right.ok, wrong.ok], "relu": str(relu),
        }))
    """)
    proc = _run(installed, tmp_path, "-c", script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said, last = proc.stdout.splitlines()[-2:]
    seen = json.loads(last)
    assert said.startswith("your variant of notebook 03: relu, batch norm with Bessel's")
    assert seen["file"].startswith(str(installed)) and seen["checkout"] and seen["wheel"]
    assert not seen["solutions"] and seen["edition"]
    assert seen["checks"] == expected_checks("03-makemore-backprop") and len(seen["checks"]) == 35
    assert "off for this course" in seen["hint"] and solution not in seen["hint"]
    assert "(1 of 3" in seen["rung"] and seen["cmp"] == [True, False]
    assert "torch.relu(hpreact)" in seen["relu"]


@pytest.mark.parametrize(
    "command", [("-m", "checks.cli", "check"), ("-m", "checks.grade", "--self")], ids=str
)
def test_the_self_check_on_a_class_wheel_says_why_it_cannot_grade(installed, tmp_path, command):
    nb = tmp_path / "03-makemore-backprop.ipynb"
    nb.write_bytes((NOTEBOOKS / nb.name).read_bytes())
    proc = _run(installed, tmp_path, *command, str(nb))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "class wheel" in proc.stderr and "carries no solutions" in proc.stderr
    assert "Traceback" not in proc.stderr and not list(tmp_path.glob("*.csv"))


def test_the_class_pyproject_leaves_out_the_solutions_package():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    toml = tomllib.loads(class_pyproject((CHECKOUT / "pyproject.toml").read_text()))
    tool = toml["tool"]["setuptools"]
    assert toml["project"]["version"].endswith("+class")
    # the learner's checks.variants stays: it holds no answer, the variants' edits do
    assert not [p for p in tool["packages"] if "solutions" in p or "authoring.variants" in p]
    assert "checks.variants" in tool["packages"]
    assert "solutions" not in json.dumps(tool["package-dir"] | tool["package-data"])
    assert tool["package-data"]["checks"] == ["edition.json"]
    with pytest.raises(BuildError, match="changed shape"):
        class_pyproject('[project]\nname = "x"\n')


def test_audit_names_a_solution_left_inside(tmp_path):
    leaky = tmp_path / "leaky.whl"
    with zipfile.ZipFile(leaky, "w") as z:
        z.writestr("checks/workbook/notebooks/03-makemore-backprop.ipynb", "{}")
        z.writestr("checks/workbook/solutions/03-makemore-backprop.ipynb", "{}")
        z.writestr("checks/authoring/variants/makemore.py", "")
        z.writestr(
            "checks/hints/variants/03.json", json.dumps({"a": {"b": {"dh": [{"solution": ""}]}}})
        )
        z.writestr("checks/hints/03.json", json.dumps({"dh": [{"rungs": [], "solution": "x"}]}))
    assert audit(leaky) == [
        "checks/workbook/solutions/03-makemore-backprop.ipynb is inside",
        "checks/authoring/variants/makemore.py is inside",
        "checks/hints/variants/03.json holds solution lines",
        "checks/hints/03.json holds solution lines",
        "checks/edition.json is missing",
    ]
