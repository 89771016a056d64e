"""Where a learner's kernel runs when the grader runs it: an OS sandbox (bubblewrap) on Linux.

Inside the sandbox the kernel sees the system's programs and libraries, Python and the ``checks``
package and the data folder, all read-only (and matplotlib's list of those fonts, made once by the
grader in a sandbox like the kernel's); a scratch folder of its own (its working folder and home,
the only place it can write, with a private ``/tmp``); the runtime folder that holds its connection
file and sockets. It has no network (a network namespace of its own: the grader talks
to it over Unix sockets) and a process namespace of its own: every process it starts, detached or
not, is killed when the kernel ends. It does not see the solutions, the reference values, the
grading notebook, other submissions, the out folder or the user's home.

Without bubblewrap (macOS, Windows, a Linux without user namespaces) the kernel runs as the
grading user, with only the grader's limits: it can read what that user can read.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import checks
from checks.data import _data_dir

KERNEL_NAME = "workbook-sandbox"
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# harmless, and what makes runs alike
PASSED_ON = (
    "LANG",
    "LC_ALL",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "TZ",
)


@functools.cache
def bwrap() -> str | None:
    """The bubblewrap program, when it is installed and can make a sandbox here; else None."""
    exe = shutil.which("bwrap")
    if exe is None or sys.platform != "linux":
        return None
    probe = [*_base(exe), "--", "/bin/true" if Path("/bin/true").exists() else "/usr/bin/true"]
    try:
        return (
            exe if subprocess.run(probe, capture_output=True, timeout=30).returncode == 0 else None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _base(exe: str) -> list[str]:
    """bwrap with new namespaces (no network, its own processes), the system read-only,
    /proc, /dev."""
    return [
        exe,
        "--unshare-all",
        "--die-with-parent",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]


def _system_binds() -> list[str]:
    args = []
    for p in SYSTEM:
        if os.path.islink(p):
            args += ["--symlink", os.readlink(p), p]
        elif os.path.isdir(p):
            args += ["--ro-bind", p, p]
    return args


def readable() -> list[Path]:
    """What the kernel may read besides the system: Python, the ``checks`` package, the data."""
    paths = {
        Path(sys.prefix).resolve(),
        Path(sys.base_prefix).resolve(),
        Path(checks.__file__).resolve().parent,
        _data_dir().resolve(),
    }
    return sorted(p for p in paths if p.exists())


TMP_MB = 256  # the sandbox's private /tmp: a tmpfs in memory, capped
SCRATCH_MB = 256  # its working folder and home: the same
PROCESSES = 256  # processes and threads the kernel may have at once (RLIMIT_NPROC)
_UIDS = itertools.count(os.getpid() % 900 * 1000)  # a fresh unprivileged uid for each kernel


def argv(scratch: Path, runtime: Path, env: dict[str, str], hidden: list[Path]) -> list[str]:
    """The command that starts a kernel in the sandbox (``{connection_file}`` left for Jupyter).

    ``hidden`` are folders and files that must stay out of sight even where they lie inside a
    readable folder (the solutions inside an installed package, say). Its ``/tmp`` and scratch
    folder are size-capped tmpfs; its processes are capped (a grader running as root starts the
    kernel as an unprivileged uid of its own, for which the cap holds)."""
    exe = bwrap()
    if exe is None:
        raise RuntimeError("bubblewrap (bwrap) is not installed or cannot make a sandbox here")
    seen = readable()
    root = os.geteuid() == 0
    args = [*(_as_root(exe) if root else _base(exe)), "--new-session"]
    args += ["--perms", "1777", "--size", str(TMP_MB * 2**20), "--tmpfs", "/tmp"]  # first
    args += _parents([*seen, scratch, runtime]) if root else []
    args += _read_only(seen)
    args += ["--perms", "1777", "--size", str(SCRATCH_MB * 2**20), "--tmpfs", str(scratch)]
    args += _font_binds(scratch)
    args += ["--bind", str(runtime), str(runtime)]
    for p in hidden:
        p = p.resolve()
        if any(p == r or r in p.parents for r in seen):
            args += ["--tmpfs", str(p)] if p.is_dir() else ["--ro-bind", "/dev/null", str(p)]
    args += ["--chdir", str(scratch), "--clearenv"]
    for k, v in sorted(env.items()):
        args += ["--setenv", k, v]
    drop = ["--drop", str(100000 + next(_UIDS) % 900000)] if root else []
    launch = [sys.executable, "-m", "checks.grading.sandbox", "--chdir", str(scratch), *drop]
    return [*args, "--", *launch, "--nproc", str(PROCESSES), "--", "-f", "{connection_file}"]


def kernel_problem(
    scratch: Path, runtime: Path, env: dict[str, str], hidden: list[Path]
) -> str | None:
    """Why a kernel cannot start in this sandbox, if it cannot: the sandbox's Python asked to
    import what the kernel needs (``checks`` out of reach, say); its last error line, else None."""
    box = argv(scratch, runtime, env, hidden)
    box = box[: box.index("--") + 1]
    need = "import checks.grading.sandbox, checks.grading.recorder, ipykernel, torch"
    try:
        done = subprocess.run(
            [*box, sys.executable, "-c", need], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    if done.returncode == 0 or not lines:
        return None
    return f"the kernel cannot start in the sandbox: {lines[-1][:200]}"


def _as_root(exe: str) -> list[str]:
    """bwrap for a grader running as root: no user namespace (so that the kernel, started as an
    unprivileged uid, is that uid on the host and its process cap holds), and only the
    capabilities the launcher needs to hand the connection file over and drop to that uid."""
    unshare = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    caps = [a for c in ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN") for a in ("--cap-add", c)]
    return [exe, *unshare, "--unshare-cgroup-try", "--die-with-parent", *caps, *_base(exe)[3:]]


def _read_only(paths: list[Path]) -> list[str]:
    """bwrap's arguments that show each of ``paths`` in the sandbox where it is, read-only."""
    return [a for p in paths for a in ("--ro-bind", str(p), str(p))]


def _parents(paths: list[Path]) -> list[str]:
    """Folders made readable (0755) above each mounted path, which bwrap would otherwise copy
    from the host (``/root`` is 0700: an unprivileged kernel could not reach Python below it)."""
    made: list[str] = []
    for p in paths:
        for parent in reversed(p.parents[:-1]):
            if str(parent) not in made and not str(parent).startswith(SYSTEM):
                made.append(str(parent))
    return [a for d in made for a in ("--perms", "0755", "--dir", d)]


MPL_FOLDER = ".matplotlib"  # the kernel's MPLCONFIGDIR, in its scratch folder


_FONTS = threading.Lock()  # one list made, however many jobs ask for it at once


def font_list(boxed: bool) -> Path | None:
    """matplotlib's list of the fonts a kernel can use, made once in this process where the kernel
    runs (``boxed``: in a sandbox like the kernel's, which sees the fonts the kernel sees) and given
    to every kernel, which otherwise reads every font file afresh when its notebook imports
    matplotlib (0.13 s of CPU a kernel on a 2-core machine). None where it cannot be made (no
    matplotlib): each kernel then makes its own."""
    with _FONTS:
        fonts = _made_font_list(boxed)
        if fonts is not None and not fonts.exists():  # removed since (a cleaner of /tmp)
            _made_font_list.cache_clear()
            fonts = _made_font_list(boxed)
        return fonts


@functools.cache
def _made_font_list(boxed: bool) -> Path | None:
    folder = Path(tempfile.mkdtemp(prefix="wb-fonts-"))
    atexit.register(shutil.rmtree, folder, True)
    made = [sys.executable, "-c", "import matplotlib.font_manager"]
    exe = bwrap() if boxed else None
    if exe is not None:  # the kernel's view: the system, Python, checks and data, read-only
        seen = _read_only(readable())
        made = [*_base(exe), "--tmpfs", "/tmp", *seen, "--bind", str(folder), str(folder), *made]
    env = kernel_env(folder, {})
    try:  # in its own folder: a module lying in the grader's would be imported first
        done = subprocess.run(made, env=env, cwd=folder, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    found = sorted((folder / MPL_FOLDER).glob("fontlist-v*.json"))
    if done.returncode != 0 or not found:
        return None
    found[-1].chmod(0o644)  # readable by the kernel's own uid, whatever the grader's umask
    return found[-1]


def _font_binds(scratch: Path) -> list[str]:
    """:func:`font_list` read-only in the kernel's matplotlib folder, which it may write (its
    lock files)."""
    fonts = font_list(boxed=True)
    if fonts is None:
        return []
    mpl = scratch / MPL_FOLDER
    return ["--perms", "1777", "--dir", str(mpl), "--ro-bind", str(fonts), str(mpl / fonts.name)]


def give_fonts(scratch: Path) -> None:
    """A copy of :func:`font_list` in the matplotlib folder of a kernel without a sandbox (a kernel
    that cannot have it makes its own)."""
    fonts = font_list(boxed=False)
    if fonts is not None:
        with contextlib.suppress(OSError):
            (scratch / MPL_FOLDER).mkdir(exist_ok=True)
            shutil.copy(fonts, scratch / MPL_FOLDER / fonts.name)


def kernel_env(scratch: Path, extra: dict[str, str]) -> dict[str, str]:
    """The kernel's whole environment: nothing of the grader's but a few harmless settings."""
    env = {k: os.environ[k] for k in PASSED_ON if k in os.environ}
    env.update(
        PATH=os.pathsep.join(
            [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
        HOME=str(scratch),
        TMPDIR="/tmp",
        MPLCONFIGDIR=str(scratch / MPL_FOLDER),
        IPYTHONDIR=str(scratch / ".ipython"),
        WORKBOOK_DATA_DIR=str(_data_dir()),
        PYTHONDONTWRITEBYTECODE="1",
        MPLBACKEND="Agg",
    )
    env.update(extra)
    return env


def write_kernelspec(folder: Path, command: list[str], env: dict[str, str] | None = None) -> str:
    """A kernelspec in ``folder/kernels`` (put ``folder`` on ``JUPYTER_PATH``); its name."""
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": command,
                "display_name": "Python 3 (grading)",
                "language": "python",
                "interrupt_mode": "message",
                "env": env or {},
            }
        )
    )
    return KERNEL_NAME


def plain_argv(scratch: Path) -> list[str]:
    """The command without a sandbox: the same kernel, started in the scratch folder."""
    return [
        sys.executable,
        "-m",
        "checks.grading.sandbox",
        "--chdir",
        str(scratch),
        "--",
        "-f",
        "{connection_file}",
    ]


def _main(args: list[str]) -> None:
    """``python -m checks.grading.sandbox --chdir DIR [--drop UID] [--nproc N] -- ARGS``: start a
    kernel in DIR; with ``--drop`` (in the sandbox, as root) as that uid, given its connection file;
    with ``--nproc`` at most N processes of its own."""
    opts, rest = args[: args.index("--")], args[args.index("--") + 1 :]
    os.chdir(opts[opts.index("--chdir") + 1])
    if "--drop" in opts:
        _drop_to(int(opts[opts.index("--drop") + 1]), Path(rest[rest.index("-f") + 1]))
    if "--nproc" in opts:
        _cap_processes(int(opts[opts.index("--nproc") + 1]))
    sys.argv = ["ipykernel_launcher", *rest]
    from ipykernel import kernelapp

    kernelapp.IPKernelApp.launch_instance(kernel_class=grading_kernel())


def grading_kernel() -> type:
    """ipykernel's kernel with its cells named as IPython names them (a SHA-1 of the cell's code):
    ipykernel's own names, for its debugger, hash each cell in pure Python, about 1 s for the 8 MB
    of hand-ins in a notebook-05 grading run, and no grading kernel is ever debugged."""
    from ipykernel.compiler import XCachingCompiler
    from ipykernel.ipkernel import IPythonKernel
    from traitlets import Type

    class Compiler(XCachingCompiler):
        def get_code_name(self, raw_code: str, code: str, number: int) -> str:
            return super(XCachingCompiler, self).get_code_name(raw_code, code, number)

    class GradingKernel(IPythonKernel):
        compiler_class = Type(Compiler)

    return GradingKernel


def _drop_to(uid: int, connection: Path) -> None:
    """Become ``uid`` (and its own group), after giving it the connection file and its folder
    (where the kernel makes its sockets)."""
    for p in (connection.parent, connection):
        os.chown(p, uid, uid)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _cap_processes(extra: int) -> None:
    """RLIMIT_NPROC: ``extra`` more processes (threads count) than this uid has now."""
    import resource

    uid, now = os.getuid(), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(ln.split(":", 1) for ln in status.read_text().splitlines() if ":" in ln)
            if int(fields["Uid"].split()[0]) == uid:
                now += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (now + extra, now + extra))


if __name__ == "__main__":
    _main(sys.argv[1:])


def isolation(wanted: str) -> str:
    """The sandbox a run uses: ``bwrap`` where asked for or, with ``auto``, where it works here."""
    if wanted == "none":
        return "none"
    if bwrap():
        return "bwrap"
    if wanted == "bwrap":
        raise RuntimeError(
            "--sandbox bwrap: bubblewrap is not installed or cannot make a sandbox here "
            "(Debian/Ubuntu: apt-get install bubblewrap)"
        )
    return "none"
