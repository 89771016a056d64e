"""The distribution: what the sdist and wheel carry, what each extra lets import, and a learner's
path from the wheel alone (a fresh venv: install, ``backprop-workbook start``, run a notebook)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

import checks
import checks.start
from checks.authoring.student import install_cell
from checks.hints import HINTS
from checks.paths import CHECKOUT, INSTALL_SOURCE, NOTEBOOKS, PACKAGE, SOLUTIONS
from checks.start import MANIFEST, copy_notebooks, forbidden, lab_command, start

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REPO_URL = PYPROJECT["project"]["urls"]["Repository"]
# [grade], [dask]: the grading run's stages that read notebooks or run pytest, and authoring
GRADE_STAGES = (
    "assemble",
    "cli",
    "cluster",
    "exercise",
    "grader",
    "judge",
    "plugin",
    "review",
    "run",
    "similarity",
    "variants",
)
GRADE_ONLY = {f"checks.grading.{stage}" for stage in GRADE_STAGES} | {
    "checks.authoring.student",
    "checks.authoring.handout",
    "checks.authoring.variants.build",
    "checks.grade",
    "checks.student",
}
NOT_IN_LEARNER_INSTALL = [
    "nbformat",
    "nbval",
    "pytest",
    "jupyter_client",
    "jupyter_core",
    "IPython",
    "ipykernel",
    "nbclient",
    "jupyterlab",
    "numpy",
    "distributed",
    "dask",
]


def _code(nb: Path) -> list[dict]:
    return [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


# --------------------------------------------------------------- what the learner's install imports


def package_modules() -> set[str]:
    """Every module of the package, subpackages included, by its dotted name."""
    names = (p.relative_to(ROOT).with_suffix("").parts for p in (ROOT / "checks").rglob("*.py"))
    return {".".join(parts[:-1] if parts[-1] == "__init__" else parts) for parts in names}


def learner_script(blocked: list[str]) -> str:
    """Import every module but the grader's, then use cmp, hint, summary, start and check, with the
    ``blocked`` packages unimportable (in a venv with the learner's install, nothing is blocked)."""
    modules = sorted(package_modules() - {"checks"})
    return textwrap.dedent(f"""
        import sys, tempfile
        for m in {blocked!r}:
            sys.modules[m] = None  # import m raises ImportError
        import importlib, torch
        for m in {[m for m in modules if m not in GRADE_ONLY]!r}:
            importlib.import_module(m)
        from checks import cmp, hint, summary
        x = torch.randn(3, requires_grad=True); (x * 2).sum().backward()
        assert cmp("x", torch.full((3,), 2.0), x).ok
        hint("counts"); summary()
        from checks.cli import main
        print("start", main(["start", tempfile.mkdtemp(), "--no-lab"]))
        print("check", main(["check", "nb.ipynb"]))
    """)


def assert_learner_install_works(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "start 0" in proc.stdout and "check 2" in proc.stdout
    assert "pip install 'backprop-workbook[grade]'" in proc.stderr


def test_learner_modules_import_without_the_grading_tools():
    """Every module but the grader's imports, and cmp, hint, summary and start work, with none of
    the optional packages importable (not even IPython or numpy)."""
    script = learner_script(NOT_IN_LEARNER_INSTALL)
    assert_learner_install_works(
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    )
    assert GRADE_ONLY <= package_modules()


def test_a_public_name_is_the_same_whichever_module_was_imported_first():
    """``from checks import X`` gives the function ``X`` even after ``checks.<its module>`` was
    imported: no public name is also a submodule's (importing ``checks.race`` once bound the
    module in place of ``race()``, and a notebook's race cell called a module)."""
    submodules = {p.stem for p in (PACKAGE).iterdir() if p.suffix == ".py" or p.is_dir()}
    assert not submodules & set(checks.__all__)
    script = "import importlib, checks\n" + "".join(
        f"importlib.import_module({module!r}); from checks import {name}; "
        f"assert not isinstance({name}, type(checks)), {name!r}\n"
        for name, module in checks._WHERE.items()
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_extras_split_by_who_installs_them():
    project = PYPROJECT["project"]
    assert sorted(project["dependencies"]) == ["matplotlib", "torch"]  # torch uncapped
    extras = project["optional-dependencies"]
    names = {k: {d.split(">")[0].split("=")[0].split("[")[0] for d in v} for k, v in extras.items()}
    assert names["lab"] == {"jupyterlab"}
    assert {"nbval", "nbformat", "pytest"} <= names["grade"] and "jupyterlab" not in names["grade"]
    assert names["dask"] == {"distributed"} and "backprop-workbook[lab,grade,dask]" in extras["dev"]
    assert project["scripts"]["backprop-workbook"] == "checks.cli:main"


# ---------------------------------------------------------------- start: the learner's own folder


def test_start_copies_then_keeps_the_learners_edits(tmp_path):
    done = copy_notebooks(tmp_path)
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert [c.action for c in done] == ["copied"] * len(names) and sorted(
        c.name for c in done
    ) == names
    mine = tmp_path / names[2]
    mine.write_text(mine.read_text().replace("dlogprobs = ...", "dlogprobs = -1.0", 1))
    edited = mine.read_bytes()
    again = {c.path.name: c.action for c in copy_notebooks(tmp_path)}
    assert again == {name: "kept" if name == names[2] else "same" for name in names}
    assert mine.read_bytes() == edited and len(list(tmp_path.glob("*.ipynb"))) == len(names)
    fresh = {c.path.name: c.action for c in copy_notebooks(tmp_path, new=True)}
    new = names[2].replace(".ipynb", "-new.ipynb")
    assert fresh[names[2]] == "kept" and fresh[new] == "new"
    assert (tmp_path / new).read_bytes() == (NOTEBOOKS / names[2]).read_bytes()
    assert mine.read_bytes() == edited


def test_start_updates_only_untouched_copies_when_the_workbook_changes(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    for p in NOTEBOOKS.glob("*.ipynb"):  # an older version of the workbook
        (old / p.name).write_text(p.read_text().replace("# TODO", "# TO DO"))
    folder = tmp_path / "mine"
    copy_notebooks(folder, source=old)
    names = sorted(p.name for p in old.glob("*.ipynb"))
    worked = folder / names[1]
    worked.write_text(worked.read_text() + " ")
    done = {c.path.name: c.action for c in copy_notebooks(folder)}
    assert (
        done[names[0]] == "updated"
        and (folder / names[0]).read_bytes() == (NOTEBOOKS / names[0]).read_bytes()
    )
    assert done[names[1]] == "kept" and worked.read_text().endswith(" ")
    new = names[1].replace(".ipynb", "-new.ipynb")
    assert done[new] == "new"  # the newer version, offered beside the learner's work, once
    assert new not in {c.path.name for c in copy_notebooks(folder)}
    assert json.loads((folder / MANIFEST).read_text())["copies"][names[0]]


def test_start_refuses_the_package_and_the_repositorys_generated_folders(tmp_path, capsys):
    assert forbidden(tmp_path) is None
    assert "installed package" in forbidden(PACKAGE / "workbook")
    if CHECKOUT:
        assert "notebooks/" in forbidden(CHECKOUT / "notebooks")
        assert forbidden(CHECKOUT / "solutions" / "x") and forbidden(CHECKOUT / "tests")
        assert start(CHECKOUT / "notebooks", lab=False) == 2
        assert "choose a folder of your own" in capsys.readouterr().err


def test_start_opens_jupyterlab_there_with_allow_root_only_as_root(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    cmd = lab_command(tmp_path, ["--no-browser"])
    assert (
        cmd[:3] == [sys.executable, "-m", "jupyterlab"]
        and f"--ServerApp.root_dir={tmp_path}" in cmd
    )
    assert "--allow-root" in cmd and cmd[-1] == "--no-browser"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "--allow-root" not in lab_command(tmp_path, [])
    monkeypatch.setattr(checks.start.importlib.util, "find_spec", lambda name: None)
    assert start(tmp_path / "w", lab=True) == 1
    assert "JupyterLab is not installed" in capsys.readouterr().err
    copied = list((tmp_path / "w").glob("*.ipynb"))
    assert len(copied) == len(list(NOTEBOOKS.glob("*.ipynb"))) == 6  # copied all the same


@pytest.mark.slow
@pytest.mark.skipif(CHECKOUT is None, reason="needs the repository")
def test_the_repositorys_tests_never_collect_a_learners_folder():
    """A learner who starts into the clone itself (``backprop-workbook start my-work``) and works
    there: pytest, as the README runs it, collects nothing of theirs."""
    folder = CHECKOUT / f".learner-{os.getpid()}"
    try:
        copy_notebooks(folder)
        mine = folder / "03-makemore-backprop.ipynb"
        mine.write_text(mine.read_text().replace("dlogprobs = ...", "dlogprobs = 0", 1))
        proc = subprocess.run(
            # -n0: collected here, in one process (the workers would each collect the same)
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
            + ["-n0"],
            capture_output=True,
            text=True,
            cwd=CHECKOUT,
        )
        assert proc.returncode == 0, proc.stdout[-2000:]
        # nbval collects the solutions
        assert "solutions/03-makemore-backprop.ipynb::Cell 0" in proc.stdout
        assert folder.name not in proc.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_check_runs_the_self_check_and_refuses_an_only_that_matches_nothing(
    tmp_path, monkeypatch, capsys
):
    from checks.grading import cli, grader
    from checks.grading.rows import Row

    rows = [
        Row(check=c, passed=p, mistake=m)
        for c, p, m in [
            ("ex1/dY", True, ""),
            ("ex1/ds", False, "sign"),
            ("ex2/dX", False, "missing"),
        ]
    ]
    for module in (cli, grader):  # the command line asks first, the self-check again
        monkeypatch.setattr(module, "is_exercise", lambda path, solutions: True)
    monkeypatch.setattr(grader, "grade", lambda *a, **k: rows)
    monkeypatch.setattr(cli, "isolation", lambda sandbox: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from checks.cli import main

    assert main(["check", "nb.ipynb", "--only", "ex1/", "--fail-under", "0.5"]) == 0
    assert "1 / 2 checks pass" in capsys.readouterr().out
    assert main(["check", "nb.ipynb", "--only", "ex1/", "--fail-under", "0.6"]) == 1
    capsys.readouterr()
    assert main(["check", "nb.ipynb", "--only", "ex9/"]) == 2
    said = capsys.readouterr()
    assert "no check's name starts with 'ex9/'" in said.err and "ex1/, ex2/" in said.err
    assert "checks pass" not in said.out


# ------------------------------------------------------------ Colab: the first code cell, the badge


def test_every_notebook_starts_with_the_same_install_cell_and_a_colab_badge():
    firsts = {nb.name: _source(_code(nb)[0]) for nb in sorted(SOLUTIONS.glob("*.ipynb"))}
    cell = install_cell()
    assert len(firsts) == 6 and set(firsts.values()) == {cell}
    assert f"WORKBOOK_SOURCE = {json.dumps(INSTALL_SOURCE)}" in cell
    assert 'find_spec("checks") is None' in cell
    owner_repo = REPO_URL.removeprefix("https://github.com/")
    page = (ROOT / "docs" / "anywhere.md").read_text()  # the README's page on Colab
    for nb in sorted(NOTEBOOKS.glob("*.ipynb")):
        assert _source(_code(nb)[0]) == cell  # the student copies too
        link = (
            f"https://colab.research.google.com/github/{owner_repo}/blob/main/notebooks/{nb.name}"
        )
        title = json.loads(nb.read_text())["cells"][0]
        assert (
            f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({link})"
            in _source(title)
        )
        assert link in page


def test_the_install_source_is_one_pinned_place_and_never_a_bare_index_name():
    """Set in checks.paths alone; until the project publishes a release it is empty, and
    docs/anywhere.md (the README's page on Colab) says the Colab route needs the instructor's own
    wheel or repository."""
    version = PYPROJECT["project"]["version"]
    pinned = f"backprop-workbook=={version}"  # only once the project holds the name
    assert INSTALL_SOURCE in ("", pinned) or (version in INSTALL_SOURCE and "://" in INSTALL_SOURCE)
    section = (ROOT / "docs" / "anywhere.md").read_text()  # "Without a clone: pip, Colab, VS Code"
    assert "WORKBOOK_SOURCE" in section and "your own wheel" in section
    bare = re.compile(r"pip install ['\"]?backprop-workbook(\[[\w,]*\])?['\"]?(?! @)(\s|$)")
    assert "pip install" in section and not bare.search(section)  # no unclaimed index name
    for nb in [*NOTEBOOKS.glob("*.ipynb"), *SOLUTIONS.glob("*.ipynb")]:
        text = json.loads(nb.read_text())
        cells = [_source(c) for c in text["cells"] if c["cell_type"] == "code"]
        assert not any("pip install" in c or '"pip"' in c for c in cells[1:]), nb.name
        assert '"backprop-workbook"' not in cells[0] and REPO_URL not in cells[0]
    course = install_cell("https://example.edu/backprop_workbook-0.1.0-py3-none-any.whl")
    assert 'WORKBOOK_SOURCE = "https://example.edu/backprop_workbook-0.1.0-py3-none-any.whl"' in (
        course
    )


def test_the_install_cell_installs_only_the_source_it_is_given(tmp_path):
    """Run the cell with a fake ``pip`` that records what it is asked for: nothing without a
    source (a clear error instead), the environment's or the cell's source, pip's failure said."""
    script = textwrap.dedent("""
        import importlib.util, json, os, subprocess, sys
        asked = []
        class Done:
            def __init__(self, code): self.returncode = code
        def pip(code):
            return lambda cmd, **kw: asked.append(cmd[1:]) or Done(code)
        importlib.util.find_spec = lambda name: None
        for cell, env, code in json.loads(sys.argv[1]):
            os.environ.pop("WORKBOOK_SOURCE", None)
            os.environ.update(env)
            subprocess.run = pip(code)
            try:
                exec(cell, {})
                print("ok", asked)
            except RuntimeError as e:
                print("error:", e, asked)
            asked.clear()
    """)
    wheel = "/w/backprop_workbook-0.1.0-py3-none-any.whl"
    runs = [
        (install_cell(""), {}, 0),
        (install_cell(""), {"WORKBOOK_SOURCE": wheel}, 0),
        (install_cell("https://x.edu/b.whl"), {}, 0),
        (install_cell("https://x.edu/b.whl"), {}, 1),
    ]
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(runs)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("error: checks is not installed") and lines[0].endswith("[]")
    assert "set WORKBOOK_SOURCE above" in lines[0]
    assert lines[1] == f"ok [['-m', 'pip', 'install', '-q', '{wheel}']]"
    assert lines[2] == "ok [['-m', 'pip', 'install', '-q', 'https://x.edu/b.whl']]"
    assert lines[3].startswith("error: pip could not install https://x.edu/b.whl")


# ---------------------------------------------------------------- the sdist and the wheel


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build``: an sdist, and a wheel built from it."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.mark.slow
def test_sdist_and_wheel_carry_the_package_the_notebooks_and_the_solutions(dist):
    wheel = next(dist.glob("*.whl"))
    files = set(zipfile.ZipFile(wheel).namelist())
    for nb in NOTEBOOKS.glob("*.ipynb"):
        assert f"checks/workbook/notebooks/{nb.name}" in files
        assert (
            zipfile.ZipFile(wheel).read(f"checks/workbook/notebooks/{nb.name}") == nb.read_bytes()
        )
        assert f"checks/workbook/solutions/{nb.name}" in files
        # its ladders, where it has any (06's drills make theirs in the kernel, so it has none)
        has_ladders = (HINTS / f"{nb.stem}.json").exists()
        assert (f"checks/hints/{nb.stem}.json" in files) == has_ladders
    # every module of the package, its subpackages' included (one left out of pyproject's list of
    # packages would import in the checkout and fail in an install)
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "checks").rglob("*.py")}
    assert modules <= files, sorted(modules - files)
    meta = zipfile.ZipFile(wheel).read(next(f for f in files if f.endswith("/METADATA"))).decode()
    assert (
        "Requires-Dist: torch\n" in meta and 'Requires-Dist: jupyterlab>=4; extra == "lab"' in meta
    )
    assert (
        "backprop-workbook = checks.cli:main"
        in zipfile.ZipFile(wheel)
        .read(next(f for f in files if f.endswith("entry_points.txt")))
        .decode()
    )
    sdist = {
        n.split("/", 1)[1] for n in tarfile.open(next(dist.glob("*.tar.gz"))).getnames() if "/" in n
    }
    assert {
        "pyproject.toml",
        "notebooks/03-makemore-backprop.ipynb",
        "solutions/03-makemore-backprop.ipynb",
        "checks/hints/03-makemore-backprop.json",
        "data/README.md",
    } <= sdist
    assert not any(n.startswith(("tests/", "bench/", "data/names.txt")) for n in sdist)


@pytest.mark.slow
def test_the_wheel_alone_in_a_fresh_venv(dist, tmp_path):
    """A learner's path without the repository: install the wheel, start, run notebook 03's first
    checks; the learner's extra brings no grading tools; the grade extra runs the self-check."""
    import torch

    wheel = next(dist.glob("*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py, cli = str(bindir / "python"), str(bindir / "backprop-workbook")
    home = tmp_path / "home"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("WORKBOOK_", "PYTHON", "JUPYTER"))
    }
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        PATH=f"{bindir}{os.pathsep}{env['PATH']}",
    )
    data = home / ".cache" / "backprop-workbook" / "data"
    data.mkdir(parents=True)  # names.txt as downloaded before (this machine has no way to github)
    (data / "names.txt").write_bytes((ROOT / "data" / "names.txt").read_bytes())

    def run(*cmd: str, ok: bool = True, **kw) -> subprocess.CompletedProcess:
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**env, **kw}, cwd=tmp_path)
        assert not ok or proc.returncode == 0, (
            f"{cmd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
        return proc

    def installed() -> set[str]:
        listed = json.loads(run(py, "-m", "pip", "list", "--format=json").stdout)
        return {p["name"].lower().replace("_", "-") for p in listed}

    # --no-compile: Python compiles what it imports when it imports it; pip compiling all of
    # torch's and JupyterLab's files first took a third of this test
    pip = (py, "-m", "pip", "install", "-q", "--no-compile")
    run(*pip, f"torch=={torch.__version__.split('+')[0]}")  # the CPU wheel on this machine's disk
    run(*pip, str(wheel))
    assert not {"pytest", "nbval", "nbformat", "jupyterlab", "ipython"} & installed()
    where = run(
        py, "-c", "import checks, checks.paths as p; print(checks.__file__, p.ROOT, p.CHECKOUT)"
    ).stdout
    assert str(venv) in where and where.split()[2] == "None" and str(ROOT) not in where
    assert_learner_install_works(run(py, "-c", learner_script([]), ok=False))

    # the learner's extra: JupyterLab, and no grading tools
    run(*pip, f"backprop-workbook[lab] @ {wheel.as_uri()}")
    assert "jupyterlab" in installed() and not {"pytest", "nbval"} & installed()
    folder = tmp_path / "mine"
    out = run(cli, "start", str(folder), "--no-lab").stdout
    assert "03-makemore-backprop.ipynb" in out and "copied" in out
    nb = folder / "03-makemore-backprop.ipynb"
    nb.write_text(
        nb.read_text().replace(
            "dlogprobs = ...",
            "dlogprobs = torch.zeros_like(logprobs)\\ndlogprobs[range(n), Yb] = -1.0/n",
            1,
        )
    )
    execute = textwrap.dedent(f"""
        import nbformat
        from nbclient import NotebookClient
        nb = nbformat.read({str(nb)!r}, as_version=4)
        NotebookClient(nb, timeout=600, allow_errors=True, \
resources={{"metadata": {{"path": {str(folder)!r}}}}}).execute()
        nbformat.write(nb, {str(nb)!r})
    """)
    run(py, "-c", execute, WORKBOOK_STEPS="50")
    cells = json.loads(nb.read_text())["cells"]
    shown = "".join(
        "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
        for c in cells
        if c["cell_type"] == "code"
        for o in c["outputs"]
    )
    assert "logprobs        | exact: True  | approximate: True" in shown
    assert (
        "probs           | exact: False | approximate: False" in shown
        and "not written yet" in shown
    )
    saved = nb.read_bytes()
    again = run(cli, "start", str(folder), "--no-lab").stdout
    assert "03-makemore-backprop.ipynb         kept" in again and nb.read_bytes() == saved

    # Colab's way in: without the package, the first cell installs nothing until it is given a
    # source (the instructor's WORKBOOK_SOURCE), then installs exactly that: here the local wheel
    run(py, "-m", "pip", "uninstall", "-y", "-q", "backprop-workbook")
    colab = tmp_path / "colab.ipynb"
    fresh = nbformat_cells(
        _source(_code(NOTEBOOKS / "02-tensor-backprop.ipynb")[0]), "import checks"
    )
    colab.write_text(json.dumps(fresh))
    run(py, "-c", execute.replace(str(nb), str(colab)))
    unset = json.loads(colab.read_text())["cells"]
    assert "set WORKBOOK_SOURCE above" in json.dumps(unset[0]["outputs"])
    assert "backprop-workbook" not in installed() and "ModuleNotFoundError" in json.dumps(unset[1])
    fresh["cells"][1]["source"] = "import checks\nprint(checks.__file__)"
    colab.write_text(json.dumps(fresh))
    run(py, "-c", execute.replace(str(nb), str(colab)), WORKBOOK_SOURCE=str(wheel))
    ran = json.loads(colab.read_text())["cells"]
    assert not [o for c in ran for o in c["outputs"] if o["output_type"] == "error"], ran
    assert str(venv) in "".join(ran[1]["outputs"][0]["text"])

    # the instructor's extra: the self-check, from the wheel's own solutions
    run(*pip, f"backprop-workbook[grade] @ {wheel.as_uri()}")
    two = folder / "02-tensor-backprop.ipynb"
    # the hint's last rung
    two.write_text(two.read_text().replace("dY = ...", "dY = dD.clone()", 1))
    checked = run(cli, "check", str(two))
    assert (
        "✓ ex1/dY" in checked.stdout
        and "✗ ex1/ds     missing      not written yet" in checked.stdout
    )
    assert "1 / 22 checks pass" in checked.stdout
    probe = textwrap.dedent("""
        import nbformat, sys
        from pathlib import Path
        from checks.grading.grader import Grader
        from checks.grading.settings import Settings
        from checks.grading.run import run_notebook
        from checks.paths import SOLUTIONS, NOTEBOOKS
        from checks.grading.sandbox import bwrap
        if not bwrap():
            sys.exit("no sandbox")
        reads = [SOLUTIONS / "03-makemore-backprop.ipynb", NOTEBOOKS / "03-makemore-backprop.ipynb"]
        cells = [nbformat.v4.new_code_cell(f"try:\\n    open({str(p)!r}).read(); r = 'read'\\n"
                                           "except OSError as e:\\n    r = \
type(e).__name__\\nraise RuntimeError(r)")
                 for p in reads]
        settings = Settings(cell_timeout=30, notebook_timeout=120, sandbox="bwrap")
        run = run_notebook(nbformat.v4.new_notebook(cells=cells), Path("probe").resolve(), settings,
                           Grader(Path("out").resolve(), settings).hidden)
        print(run.cell_errors, run.fault)
    """)
    seen = run(py, "-c", probe, ok=False)
    if "no sandbox" not in seen.stderr:  # the wheel's solutions are out of a graded kernel's sight
        assert seen.returncode == 0, seen.stderr
        assert "{0: 'RuntimeError: FileNotFoundError', 1: 'RuntimeError: read'}" in seen.stdout, (
            seen.stdout
        )


def nbformat_cells(*sources: str) -> dict:
    """A minimal notebook of code cells (no nbformat needed)."""
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "source": s,
        }
        for i, s in enumerate(sources)
    ]
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
