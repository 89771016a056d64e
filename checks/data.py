"""The makemore names data: loading (downloaded on first use) and the lecture's splits.

The data is ``names.txt`` from Andrej Karpathy's makemore repository (32,033 lowercase
names). It lives in ``DATA_DIR`` (the checkout's ``data/`` folder, in an installed wheel the
user's cache folder, or ``$WORKBOOK_DATA_DIR``), is fetched from ``NAMES_URL`` (or
``$WORKBOOK_NAMES_URL``) when missing, and is always checked against ``NAMES_SHA256``. The
dataset construction and the 80/10/10 split reproduce the lecture exactly.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import random
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from checks.paths import default_data_dir

__all__ = [
    "DATA_DIR",
    "DOWNLOAD_TIMEOUT",
    "NAMES_FILENAME",
    "NAMES_SHA256",
    "NAMES_URL",
    "DataIntegrityError",
    "DataUnavailableError",
    "Split",
    "build_dataset",
    "load_names",
    "split_dataset",
    "vocab",
]

NAMES_FILENAME = "names.txt"
NAMES_URL = "https://raw.githubusercontent.com/karpathy/makemore/master/names.txt"
NAMES_SHA256 = "0a30b5557f192f32ab962680889aac5f6fda0f4cecf40a6d0b5694f58ea8cc4d"
DOWNLOAD_TIMEOUT = 20.0  # seconds


def _data_dir() -> Path:
    """The data folder, honouring ``$WORKBOOK_DATA_DIR`` at call time."""
    override = os.environ.get("WORKBOOK_DATA_DIR")
    return Path(override).expanduser() if override else default_data_dir()


def _names_url() -> str:
    """The download URL, honouring ``$WORKBOOK_NAMES_URL`` at call time."""
    return os.environ.get("WORKBOOK_NAMES_URL") or NAMES_URL


DATA_DIR: Path = _data_dir()
"""The data folder at import time (``load_names`` re-reads the env var on each call)."""


class DataUnavailableError(RuntimeError):
    """names.txt is missing and could not be downloaded; Jupyter shows only the message.

    The message already names the download error and both ways to get the file, so it is
    raised without a chained traceback (``from None``) and IPython shows it as one block.
    """

    def _render_traceback_(self) -> list[str]:  # IPython's hook: the message, without frames
        return [f"DataUnavailableError: {self}"]


class DataIntegrityError(RuntimeError):
    """names.txt (on disk or just downloaded) does not have the expected sha256."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manual_instructions(url: str, target: Path) -> str:
    return (
        "To provide the file, either\n"
        f"  (1) connect to the internet and run again (it downloads {url}), or\n"
        f"  (2) copy names.txt by hand to {target}\n"
        f"      (expected sha256 {NAMES_SHA256}; see data/README.md)."
    )


def _download(url: str, target: Path) -> None:
    """Download ``url`` to ``target`` via a verified temp file in the same folder."""
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
            payload = response.read()
    except (
        urllib.error.URLError,
        http.client.HTTPException,
        OSError,
        ValueError,
    ) as exc:
        raise DataUnavailableError(
            f"{target.name} is not in {target.parent} and downloading it from {url} "
            f"failed ({type(exc).__name__}: {exc}).\n" + _manual_instructions(url, target)
        ) from None  # the message names the error; urllib's long traceback would bury it

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        digest = _sha256(tmp.read_bytes())
        if digest != NAMES_SHA256:
            raise DataIntegrityError(
                f"The file downloaded from {url} has sha256 {digest}, expected "
                f"{NAMES_SHA256}; it was discarded. The URL may not serve the makemore "
                "names.txt.\n" + _manual_instructions(url, target)
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def load_names(path: str | Path | None = None) -> list[str]:
    """Return the names in ``names.txt``, one per line (32,033 for the real file).

    With ``path=None`` the file is ``DATA_DIR/names.txt``: it is downloaded if missing
    and its sha256 is always verified. An explicit ``path`` is read as is (no download,
    no hash check).

    Raises:
        FileNotFoundError: an explicit ``path`` does not exist.
        DataUnavailableError: the default file is missing and the download failed.
        DataIntegrityError: the default or the downloaded file has the wrong sha256.
    """
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(
                f"names file not found: {path} (an explicit path is never downloaded)"
            )
        return path.read_text(encoding="utf-8").splitlines()

    target = _data_dir() / NAMES_FILENAME
    if not target.exists():
        _download(_names_url(), target)
    data = target.read_bytes()
    digest = _sha256(data)
    if digest != NAMES_SHA256:
        raise DataIntegrityError(
            f"{target} has sha256 {digest}, expected {NAMES_SHA256}: it is not the "
            "makemore names.txt (corrupted, truncated or edited). Delete it so it is "
            "downloaded again on next use, or replace it by hand with the right file."
        )
    return data.decode("utf-8").splitlines()


def vocab(words: Iterable[str]) -> tuple[dict[str, int], dict[int, str]]:
    """The lecture's ``(stoi, itos)``: sorted characters get 1..n, ``'.'`` gets 0."""
    chars = sorted(set("".join(words)))
    if "." in chars:
        raise ValueError("words must not contain '.', it is the start/end token")
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    return stoi, itos


def build_dataset(
    words: Sequence[str], block_size: int = 3, stoi: Mapping[str, int] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The lecture's ``build_dataset``: contexts ``X`` and next characters ``Y``.

    Returns int64 tensors ``X`` (N, block_size) and ``Y`` (N,); each word contributes
    ``len(word) + 1`` examples and its contexts start as ``[0] * block_size``. ``stoi``
    defaults to ``vocab(words)[0]``; pass the full data's ``stoi`` for a subset.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if stoi is None:
        stoi = vocab(words)[0]
    try:  # every character and each word's end token, one word after another
        Y = torch.tensor([stoi[ch] for w in words for ch in w + "."], dtype=torch.int64)
    except KeyError:
        w, ch = next((w, ch) for w in words for ch in w + "." if ch not in stoi)
        raise KeyError(f"character {ch!r} of word {w!r} is not in stoi") from None
    # the same codes with block_size zeros before each word: an example's context is the
    # block_size codes before its next character there
    lengths = torch.tensor([len(w) + 1 for w in words], dtype=torch.int64)
    word = torch.repeat_interleave(torch.arange(len(words)), lengths)
    at = torch.arange(len(Y)) + block_size * (word + 1)
    padded = torch.zeros(len(Y) + block_size * len(words), dtype=torch.int64)
    padded[at] = Y
    X = padded.unfold(0, block_size, 1)[at - block_size] if len(Y) else padded.new_zeros(0, 0)
    return X.reshape(len(Y), block_size), Y


class Split(NamedTuple):
    """Train/dev/test tensors of the lecture's 80/10/10 split, and the vocabulary."""

    Xtr: torch.Tensor
    Ytr: torch.Tensor
    Xdev: torch.Tensor
    Ydev: torch.Tensor
    Xte: torch.Tensor
    Yte: torch.Tensor
    stoi: dict[str, int]
    itos: dict[int, str]


def split_dataset(words: Sequence[str], block_size: int = 3, seed: int = 42) -> Split:
    """The lecture's split: shuffle a copy of ``words`` with ``seed``, then 80/10/10 %.

    Same permutation as the lecture's ``random.seed(42); random.shuffle(words)``, but
    without touching the global RNG or ``words``. For names.txt and block_size 3 the
    sizes are 182,625 / 22,655 / 22,866.
    """
    stoi, itos = vocab(words)
    shuffled = list(words)
    random.Random(seed).shuffle(shuffled)
    n1 = int(0.8 * len(shuffled))
    n2 = int(0.9 * len(shuffled))
    Xtr, Ytr = build_dataset(shuffled[:n1], block_size, stoi)
    Xdev, Ydev = build_dataset(shuffled[n1:n2], block_size, stoi)
    Xte, Yte = build_dataset(shuffled[n2:], block_size, stoi)
    return Split(Xtr, Ytr, Xdev, Ydev, Xte, Yte, stoi, itos)
