"""Tests for checks.data: loading, download and verification, the lecture's split."""

from __future__ import annotations

import functools
import hashlib
import http.server
import random
import socket
import string
import threading
import traceback
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from checks import data
from checks.data import (
    NAMES_SHA256,
    DataIntegrityError,
    DataUnavailableError,
    build_dataset,
    load_names,
    split_dataset,
    vocab,
)

REPO = Path(__file__).resolve().parent.parent
ALPHABET_STOI = vocab(string.ascii_lowercase)[0]
Serve = Callable[..., str]


def _real_names_path() -> Path | None:
    for candidate in (
        data.DATA_DIR / "names.txt",
        REPO.parent / "shared" / "data" / "names.txt",
    ):
        if candidate.is_file():
            return candidate
    return None


@pytest.fixture(scope="session")
def names_path() -> Path:
    path = _real_names_path()
    if path is None:
        pytest.skip("names.txt is neither in DATA_DIR nor in ../shared/data (offline?)")
    return path


@pytest.fixture(scope="session")
def names(names_path: Path) -> list[str]:
    return load_names(names_path)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty default data folder; the download URL points at a closed port."""
    d = tmp_path / "data"
    d.mkdir()
    monkeypatch.setenv("WORKBOOK_DATA_DIR", str(d))
    monkeypatch.setenv("WORKBOOK_NAMES_URL", f"http://127.0.0.1:{_closed_port()}/names.txt")
    return d


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    """``serve(content) -> url``: serve bytes as names.txt from a loopback server."""
    root = tmp_path / "www"
    root.mkdir()

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def _serve(content: bytes, name: str = "names.txt") -> str:
        (root / name).write_bytes(content)
        return f"http://127.0.0.1:{server.server_address[1]}/{name}"

    try:
        yield _serve
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- real data ------------------------------------------------------------------------


def test_real_file_hash_and_names(names_path: Path, names: list[str]) -> None:
    assert hashlib.sha256(names_path.read_bytes()).hexdigest() == NAMES_SHA256
    assert len(names) == 32_033
    assert names[:3] == ["emma", "olivia", "ava"]
    assert all(w and set(w) <= set(string.ascii_lowercase) for w in names)
    assert max(len(w) for w in names) == 15


def test_vocab_of_real_data(names: list[str]) -> None:
    stoi, itos = vocab(names)
    assert len(stoi) == len(itos) == 27
    assert stoi["."] == 0 and stoi["a"] == 1 and stoi["z"] == 26
    assert stoi == ALPHABET_STOI
    assert all(itos[i] == s for s, i in stoi.items())


def test_split_sizes_dtypes_shapes(names: list[str]) -> None:
    sp = split_dataset(names)
    expected = {"tr": 182_625, "dev": 22_655, "te": 22_866}
    for part, n in expected.items():
        X, Y = getattr(sp, f"X{part}"), getattr(sp, f"Y{part}")
        assert X.dtype == Y.dtype == torch.int64
        assert X.shape == (n, 3) and Y.shape == (n,)
        assert int(X.min()) >= 0 and int(X.max()) <= 26 and int(Y.max()) <= 26
    assert sum(expected.values()) == sum(len(w) + 1 for w in names)
    assert sp.stoi == ALPHABET_STOI and len(sp.itos) == 27
    first = "".join(sp.itos[i] for i in sp.Ytr[:7].tolist())
    assert first == "yuheng."  # the first training word after the lecture's shuffle


def test_split_matches_lecture_global_shuffle(names: list[str]) -> None:
    state = random.getstate()
    try:
        random.seed(42)
        lecture_words = list(names)
        random.shuffle(lecture_words)
    finally:
        random.setstate(state)
    n1, n2 = int(0.8 * len(lecture_words)), int(0.9 * len(lecture_words))
    sp = split_dataset(names)
    for (X, Y), ws in zip(
        [(sp.Xtr, sp.Ytr), (sp.Xdev, sp.Ydev), (sp.Xte, sp.Yte)],
        [lecture_words[:n1], lecture_words[n1:n2], lecture_words[n2:]],
        strict=True,
    ):
        Xl, Yl = build_dataset(ws, 3, ALPHABET_STOI)
        assert torch.equal(X, Xl) and torch.equal(Y, Yl)


def test_split_deterministic_and_input_untouched(names: list[str]) -> None:
    words = list(names)
    state = random.getstate()
    a = split_dataset(words)
    assert words == names  # the input list is not shuffled in place
    assert random.getstate() == state  # nor is the global RNG used
    b = split_dataset(words)
    for x, y in zip(a[:6], b[:6], strict=True):
        assert torch.equal(x, y)
    c = split_dataset(words, seed=1)
    assert not torch.equal(a.Xtr, c.Xtr)


def test_split_uses_full_vocabulary_for_all_parts() -> None:
    # 'z' only appears in one word; wherever it lands it keeps its full-data index.
    words = ["ab"] * 9 + ["z"]
    sp = split_dataset(words, seed=0)
    assert sp.stoi == {".": 0, "a": 1, "b": 2, "z": 3}
    all_y = torch.cat([sp.Ytr, sp.Ydev, sp.Yte])
    assert sorted(all_y.tolist()) == sorted([1, 2, 0] * 9 + [3, 0])


def test_split_block_size(names: list[str]) -> None:
    sp = split_dataset(names, block_size=8)
    assert sp.Xtr.shape == (182_625, 8) and sp.Xte.shape == (22_866, 8)


def test_load_names_default_existing_file(data_dir: Path, names_path: Path) -> None:
    (data_dir / "names.txt").write_bytes(names_path.read_bytes())
    names = load_names()  # the URL points at a closed port: no download is attempted
    assert len(names) == 32_033 and names[-1] == "zzyzx"


# --- build_dataset / vocab ------------------------------------------------------------


def test_build_dataset_emma_matches_lecture() -> None:
    X, Y = build_dataset(["emma"], stoi=ALPHABET_STOI)
    e, m, a = 5, 13, 1
    assert X.tolist() == [[0, 0, 0], [0, 0, e], [0, e, m], [e, m, m], [m, m, a]]
    assert Y.tolist() == [e, m, m, a, 0]
    assert X.dtype == Y.dtype == torch.int64


def lecture_build_dataset(words, block_size, stoi):
    """The lecture's own loop, one example at a time."""
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X, dtype=torch.int64).reshape(len(X), block_size), torch.tensor(Y)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="abqz-é", max_size=9), max_size=8),
    st.integers(min_value=1, max_value=9),
)
def test_build_dataset_is_the_lectures_loop(words: list[str], block_size: int) -> None:
    stoi = vocab(words + ["a"])[0]
    X, Y = build_dataset(words, block_size, stoi)
    Xl, Yl = lecture_build_dataset(words, block_size, stoi)
    assert X.shape == Xl.shape and torch.equal(X, Xl) and torch.equal(Y, Yl)
    assert X.dtype == Y.dtype == torch.int64 and X.is_contiguous()


def test_build_dataset_of_every_name_is_the_lectures_loop(names: list[str]) -> None:
    for block_size in (1, 3, 8):
        X, Y = build_dataset(names, block_size, ALPHABET_STOI)
        Xl, Yl = lecture_build_dataset(names, block_size, ALPHABET_STOI)
        assert torch.equal(X, Xl) and torch.equal(Y, Yl)


def test_build_dataset_default_stoi_and_empty() -> None:
    X, Y = build_dataset(["emma"])  # own vocabulary: a=1, e=2, m=3
    assert Y.tolist() == [2, 3, 3, 1, 0]
    X, Y = build_dataset([], block_size=4)
    assert X.shape == (0, 4) and Y.shape == (0,) and X.dtype == torch.int64
    with pytest.raises(ValueError):
        build_dataset(["emma"], block_size=0)
    with pytest.raises(KeyError, match="'q'"):
        build_dataset(["qa"], stoi={".": 0, "a": 1})


def test_vocab_rejects_dot_and_is_sorted() -> None:
    stoi, itos = vocab(["cab", "ba"])
    assert stoi == {".": 0, "a": 1, "b": 2, "c": 3}
    assert itos == {0: ".", 1: "a", 2: "b", 3: "c"}
    with pytest.raises(ValueError):
        vocab(["a.b"])


words_strategy = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), max_size=20)


@settings(max_examples=60, deadline=None)
@given(words=words_strategy, block_size=st.integers(1, 6))
def test_build_dataset_roundtrip(words: list[str], block_size: int) -> None:
    X, Y = build_dataset(words, block_size, ALPHABET_STOI)
    itos = {i: s for s, i in ALPHABET_STOI.items()}
    assert X.shape == (sum(len(w) + 1 for w in words), block_size) and Y.shape == (X.shape[0],)
    assert "".join(itos[i] for i in Y.tolist()) == "".join(w + "." for w in words)
    i = 0
    for w in words:
        assert X[i].tolist() == [0] * block_size  # each word starts from an empty context
        for j in range(len(w)):  # the context slides by the previous target
            assert X[i + j + 1].tolist() == X[i + j].tolist()[1:] + [int(Y[i + j])]
        i += len(w) + 1


# --- loading and downloading ----------------------------------------------------------


def test_explicit_missing_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("an explicit path must never trigger a download")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    missing = tmp_path / "nope" / "names.txt"
    with pytest.raises(FileNotFoundError, match="names file not found") as info:
        load_names(missing)
    assert str(missing) in str(info.value)
    assert not missing.exists()


def test_explicit_path_reads_lines(tmp_path: Path) -> None:
    p = tmp_path / "few.txt"
    p.write_text("anna\nbob\ncyd")
    assert load_names(p) == load_names(str(p)) == ["anna", "bob", "cyd"]


def test_download_and_verify(
    data_dir: Path, names_path: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    nested = data_dir / "sub" / "dir"
    monkeypatch.setenv("WORKBOOK_DATA_DIR", str(nested))
    monkeypatch.setenv("WORKBOOK_NAMES_URL", serve(names_path.read_bytes()))
    names = load_names()
    target = nested / "names.txt"
    assert target.read_bytes() == names_path.read_bytes()
    assert len(names) == 32_033 and names[0] == "emma"
    assert sorted(p.name for p in nested.iterdir()) == ["names.txt"]  # no temp file left


def test_download_corrupted(
    data_dir: Path, names_path: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = bytearray(names_path.read_bytes())
    content[100] = ord("Q")
    url = serve(bytes(content))
    monkeypatch.setenv("WORKBOOK_NAMES_URL", url)
    with pytest.raises(DataIntegrityError, match="sha256") as info:
        load_names()
    assert url in str(info.value) and NAMES_SHA256 in str(info.value)
    assert list(data_dir.iterdir()) == []  # neither names.txt nor a temp file


def test_download_wrong_small_file(
    data_dir: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBOOK_NAMES_URL", serve(b"<html>captive portal</html>"))
    with pytest.raises(DataIntegrityError):
        load_names()
    assert list(data_dir.iterdir()) == []


def test_download_offline(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/names.txt"
    monkeypatch.setenv("WORKBOOK_NAMES_URL", url)
    with pytest.raises(DataUnavailableError) as info:
        load_names()
    msg = str(info.value)
    assert url in msg
    assert str(data_dir / "names.txt") in msg
    assert "internet" in msg and "by hand" in msg and NAMES_SHA256 in msg
    assert "ConnectionRefusedError" in msg or "URLError" in msg  # the cause, named in the message
    assert isinstance(info.value, RuntimeError)
    assert list(data_dir.iterdir()) == []
    _assert_shown_alone(info.value)


def _assert_shown_alone(error: DataUnavailableError) -> None:
    """No chained urllib traceback, and in IPython one block: ``DataUnavailableError: <msg>``."""
    assert error.__cause__ is None and error.__suppress_context__ is True
    printed = "".join(traceback.format_exception(error))
    assert "direct cause" not in printed and "During handling" not in printed
    assert printed.count("Traceback (most recent call last)") == 1
    shown = error._render_traceback_()
    assert shown == [f"DataUnavailableError: {error}"]
    assert "internet" in shown[0] and "by hand" in shown[0]  # both ways to get the file


def test_download_http_error(data_dir: Path, serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    url = serve(b"x", name="other.txt").replace("other.txt", "missing.txt")
    monkeypatch.setenv("WORKBOOK_NAMES_URL", url)
    with pytest.raises(DataUnavailableError, match="404") as info:
        load_names()
    assert url in str(info.value) and str(data_dir / "names.txt") in str(info.value)
    assert list(data_dir.iterdir()) == []
    _assert_shown_alone(info.value)


def test_existing_file_with_wrong_content(data_dir: Path) -> None:
    target = data_dir / "names.txt"
    target.write_text("emma\nolivia\n")
    with pytest.raises(DataIntegrityError, match="Delete it") as info:
        load_names()
    assert str(target) in str(info.value)
    assert target.read_text() == "emma\nolivia\n"  # left alone, not silently replaced
