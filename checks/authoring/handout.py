"""A hand-out: one student notebook per learner of a roster (03, or 05 with ``--notebook 05``), each
a variant of its own, and the instructor's record of who got what::

    backprop-workbook variants --roster roster.csv --out DIR [--notebook 03] [--variants 20] [--add]

The roster is a CSV file with the columns ``id`` and ``name`` (others are kept out). The class
draws ``--variants`` variants of the notebook (``draw`` of :mod:`checks.variants.makemore` or
:mod:`checks.variants.transformer`) from its seed, and each learner gets one of them by a hash of
the class seed and the learner's id, so a class of 300 over 20 variants costs the grader 20
reference runs. Written: ``DIR/<id>/03-makemore-backprop.ipynb`` (or ``05-transformer-backprop``'s;
the variant and the learner's id in its metadata), ``DIR/handout.json`` (the record the grader
checks each submission against: ``grade --handout DIR``) and ``DIR/variants.csv`` (the same, to
read). Everything is checked before anything is written; a folder that already holds a hand-out
is refused unless ``--add`` asks to add learners to it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import hashlib
import importlib.util
import io
import json
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from checks.authoring.student import render
from checks.paths import INSTALL_SOURCE, METADATA
from checks.variants import KINDS, NOTEBOOK, RECORD, Variant, check_record, kind_of, variant_of

TABLE = "variants.csv"
COLUMNS = ("id", "name")
MAX_ID = 64  # characters: an id is a folder name


class HandoutError(ValueError):
    """A roster or an out folder that no hand-out can be made from: nothing was written."""


@dataclass(frozen=True)
class Learner:
    id: str
    name: str


def read_roster(path: Path) -> list[Learner]:
    """The learners of a roster CSV, in its order; every fault of it at once, as one error."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as why:
        raise HandoutError(f"cannot read the roster {path}: {why}") from None
    if not rows:
        raise HandoutError(f"the roster {path} is empty: it needs a header line with id,name")
    header = [h.strip().lower() for h in rows[0]]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise HandoutError(
            f"the roster {path} has no column {', '.join(missing)} "
            f"(its header: {', '.join(rows[0]) or 'empty'}); it needs id and name"
        )
    at = {c: header.index(c) for c in COLUMNS}
    learners, faults, first = [], [], {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        who, name = (row[at[c]].strip() if at[c] < len(row) else "" for c in COLUMNS)
        faults += [f"line {line}: {w}" for w in _faults(who, name, first.get(who.casefold()))]
        first.setdefault(who.casefold(), line)
        learners.append(Learner(who, name))
    if faults:
        raise HandoutError(f"the roster {path} cannot be handed out: " + "; ".join(faults))
    if not learners:
        raise HandoutError(f"the roster {path} lists no learner")
    return learners


def _faults(who: str, name: str, seen_at: int | None) -> list[str]:
    """What is wrong with one roster line (its id's first line ``seen_at``, if it came before)."""
    faults = []
    unsafe = who.startswith(".") or any(c in who for c in '/\\:*?"<>|') or not who.isprintable()
    if not who:
        faults.append("the id is empty")
    elif unsafe or len(who) > MAX_ID or who.casefold() in {RECORD, TABLE}:
        faults.append(f"the id {who!r} cannot be a folder name")
    if seen_at is not None and who:  # ids that differ in case only are one folder on macOS
        faults.append(f"the id {who!r} is on line {seen_at} already (letter case aside)")
    if not name:
        faults.append(f"the name of {who or 'this learner'} is empty")
    return faults


def notebook_named(name: str) -> str:
    """The file name of the notebook that ``name`` (``05``, its stem, its file name or a path to
    it) names, one that has variants."""
    try:
        return kind_of(name).NOTEBOOK
    except ValueError:
        raise HandoutError(
            f"--notebook {name}: only {' and '.join(s[:2] for s in KINDS)} have variants"
        ) from None


def class_variants(
    class_seed: int, count: int, notebook: str = NOTEBOOK
) -> list[tuple[int, Variant]]:
    """The class's ``count`` variants of ``notebook``, each with the seed it is drawn from, all
    different."""
    found: list[tuple[int, Variant]] = []
    k = 0
    while len(found) < count:
        seed = _hash(f"{class_seed}/variant/{k}")
        k += 1
        v = kind_of(notebook).draw(seed)
        if all(v != other for _, other in found):
            found.append((seed, v))
    return found


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def assign(learner: Learner, class_seed: int, variants: list) -> int:
    """The index of ``learner``'s variant: the same in every run and every ``--add``."""
    return _hash(f"{class_seed}/learner/{learner.id}") % len(variants)


def _kept(out: Path, add: bool) -> dict | None:
    """The hand-out already in ``out`` (None: there is none); refused when there is one and
    ``add`` is not asked, or when ``out`` holds files of something else."""
    record = out / RECORD
    if out.exists() and not out.is_dir():
        raise HandoutError(f"{out} is a file, not a folder: choose a folder for the hand-out")
    if record.is_file():
        if not add:
            raise HandoutError(
                f"{out} already holds a hand-out ({RECORD}): pass --add to add learners to it, "
                "or choose another folder"
            )
        try:
            return check_record(json.loads(record.read_text()))
        except (OSError, ValueError) as why:
            raise HandoutError(f"{record} is not a hand-out's record: {why}") from None
    if out.exists() and any(out.iterdir()):
        raise HandoutError(f"{out} holds files and no hand-out: choose an empty or new folder")
    if add:
        raise HandoutError(f"{out} holds no hand-out to add to: leave --add out to start one")
    return None


def plan(
    learners: list[Learner],
    kept: dict | None,
    count: int | None,
    class_seed: int | None,
    notebook: str | None = None,
) -> dict:
    """The hand-out's record with ``learners`` in it: ``kept``'s, with the learners it lacks;
    ``count`` variants of ``notebook`` in a new one (20 of notebook 03 when None)."""
    from checks.authoring.variants import build  # the variants' answers: not in a class wheel

    if kept is not None:
        if notebook is not None and notebook != kept["notebook"]:
            raise HandoutError(
                f"the hand-out is of {kept['notebook']}, not {notebook}: leave --notebook out "
                "to add to it, or hand out another notebook into another folder"
            )
        if class_seed is not None and class_seed != kept["class_seed"]:
            raise HandoutError(
                f"the hand-out was drawn with the class seed {kept['class_seed']}, not "
                f"{class_seed}: leave --seed out to add to it"
            )
        if count is not None and count != len(kept["variants"]):
            raise HandoutError(
                f"the hand-out has {len(kept['variants'])} variants, not {count}: leave "
                "--variants out to add to it"
            )
        record = json.loads(json.dumps(kept))
    else:
        count = 20 if count is None else count
        if count < 1:
            raise HandoutError(f"--variants {count}: a class needs at least one variant")
        seed = class_seed if class_seed is not None else secrets.randbits(31)
        notebook = notebook or NOTEBOOK
        drawn = class_variants(seed, count, notebook)
        record = {
            "notebook": notebook,
            "class_seed": seed,
            "variants": [
                {"seed": s, **v.to_metadata(), "made": build.digest(build.written(v))}
                for s, v in drawn
            ],
            "learners": {},
        }
    faults = []
    for who in learners:
        was = record["learners"].get(who.id)
        if was is not None and was["name"] != who.name:
            faults.append(
                f"{who.id} is {was['name']!r} in the hand-out, {who.name!r} in the roster"
            )
        elif was is None:
            index = assign(who, record["class_seed"], record["variants"])
            record["learners"][who.id] = {"name": who.name, "variant": index}
    if faults:
        raise HandoutError("the roster does not match the hand-out: " + "; ".join(faults))
    return record


def write(out: Path, record: dict, source: str = INSTALL_SOURCE) -> list[Path]:
    """Each learner's notebook that ``out`` lacks, then the record and its table; the notebooks
    written. A learner's folder that holds anything already is an error before anything is
    written."""
    name = record["notebook"]
    todo = [who for who in record["learners"] if not (out / who / name).exists()]
    taken = [who for who in todo if (out / who).exists() and any((out / who).iterdir())]
    if taken:
        raise HandoutError(
            f"{out} has folders of {', '.join(taken)} already, without their notebook"
        )
    texts = _notebooks(record, todo, source)  # all made before any is written
    written: list[Path] = []
    try:
        for who, text in texts.items():
            (out / who).mkdir(parents=True, exist_ok=True)
            (out / who / name).write_text(text)
            written.append(out / who / name)
        _replace(out / TABLE, _table(record))
        _replace(out / RECORD, json.dumps(record, indent=1) + "\n")
    except OSError as why:  # a full disk, a folder not ours: what this run wrote is taken back
        for path in written:
            path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                path.parent.rmdir()
        raise HandoutError(f"could not write into {out} ({why}); nothing of it is left") from None
    return written


def _notebooks(record: dict, learners: list[str], source: str) -> dict[str, str]:
    """Each of ``learners``' notebooks as text: their variant's student copy, their id in it."""
    from checks.authoring.variants import build

    made: dict[int, nbformat.NotebookNode] = {}
    texts = {}
    for who in learners:
        index = record["learners"][who]["variant"]
        if index not in made:
            seed, v = variant_of(record, who)
            made[index] = build.student(v, seed, source=source)
        nb = copy.deepcopy(made[index])
        nb.metadata[METADATA]["learner"] = who
        texts[who] = render(nb)
    return texts


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _table(record: dict) -> str:
    """The record as a CSV table an instructor reads: a line per learner."""
    lines = io.StringIO()
    w = csv.writer(lines, lineterminator="\n")
    keys = [k for k in record["variants"][0] if k != "order"]
    w.writerow(["id", "name", *keys, "notebook"])
    for who, entry in record["learners"].items():
        variant = record["variants"][entry["variant"]]
        w.writerow([who, entry["name"], *(variant[k] for k in keys), f"{who}/{record['notebook']}"])
    return lines.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="backprop-workbook variants", description=__doc__.split("\n")[0]
    )
    p.add_argument("--roster", type=Path, required=True, help="CSV with the columns id and name")
    p.add_argument("--out", type=Path, required=True, help="the hand-out's folder")
    p.add_argument(
        "--notebook", help="the notebook handed out: 03 (the default) or 05; its file name too"
    )
    p.add_argument("--variants", type=int, help="variants in a new hand-out's class (20)")
    p.add_argument("--seed", type=int, help="the class seed (default: drawn, kept in the record)")
    p.add_argument("--add", action="store_true", help="add the roster's new learners to --out")
    p.add_argument("--source", default=INSTALL_SOURCE, help="what the install cell installs")
    a = p.parse_args(argv)
    if importlib.util.find_spec("checks.authoring.variants") is None:
        print(
            "no hand-out: this install of the workbook has no variants (a class wheel): hand out "
            "from the full workbook",
            file=sys.stderr,
        )
        return 2
    try:
        notebook = notebook_named(a.notebook) if a.notebook is not None else None
        learners = read_roster(a.roster)
        record = plan(learners, _kept(a.out, a.add), a.variants, a.seed, notebook)
        written = write(a.out, record, a.source)
    except HandoutError as why:
        print(f"no hand-out: {why}", file=sys.stderr)
        return 2
    used = len({e["variant"] for e in record["learners"].values()})
    print(
        f"wrote {len(written)} notebooks into {a.out} ({len(record['learners'])} learners, "
        f"{used} variants); the record: {a.out / RECORD}, {a.out / TABLE}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
