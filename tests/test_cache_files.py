"""The grader's cache files (reference values, calibration marks) are replaced whole: a run or a
self-check reading one while another grader writes it sees the old file or the new one; and
graders sharing a cache take turns making each file, so it is made once."""

from __future__ import annotations

import importlib.util
import threading

import pytest
import torch

from checks.grading.grader import one_at_a_time, replace_whole


def test_a_write_that_fails_leaves_the_old_file_and_no_scrap(tmp_path):
    path = tmp_path / "cache" / "03-abc.pt"
    replace_whole(path, lambda tmp: torch.save({"x": torch.ones(3)}, tmp))

    def half(tmp):
        tmp.write_bytes(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        replace_whole(path, half)
    assert torch.equal(torch.load(path, weights_only=True)["x"], torch.ones(3))
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_readers_never_see_half_a_file_while_writers_replace_it(tmp_path):
    path = tmp_path / "03-abc.pt"
    big = {"x": torch.arange(200_000.0)}
    replace_whole(path, lambda tmp: torch.save(big, tmp))
    stop, seen, errors = threading.Event(), [], []

    def write():
        while not stop.is_set():
            replace_whole(path, lambda tmp: torch.save(big, tmp))

    def read():
        for _ in range(40):
            try:
                seen.append(torch.equal(torch.load(path, weights_only=True)["x"], big["x"]))
            except Exception as exc:  # noqa: BLE001 - any failure to read is the defect
                errors.append(repr(exc))

    writers = [threading.Thread(target=write) for _ in range(2)]
    for w in writers:
        w.start()
    read()
    stop.set()
    for w in writers:
        w.join()
    assert not errors and all(seen) and len(seen) == 40, errors[:3]


@pytest.mark.skipif(importlib.util.find_spec("fcntl") is None, reason="no fcntl locks (Windows)")
def test_a_second_grader_waits_for_the_file_the_first_is_making(tmp_path):
    """Two graders (threads here; processes take the same lock) after one reference: the second
    comes in only once the first has made it, so finds it and runs nothing."""
    path = tmp_path / "cache" / "02-abc.pt"
    inside, made, seen = threading.Event(), [], []

    def first():
        with one_at_a_time(path):
            inside.set()
            threading.Event().wait(0.5)  # a reference run
            replace_whole(path, lambda tmp: torch.save({"x": torch.ones(2)}, tmp))
            made.append(path)

    def second():
        inside.wait()
        with one_at_a_time(path):
            seen.append(path.exists())

    threads = [threading.Thread(target=f) for f in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert made and seen == [True]
    assert sorted(p.name for p in path.parent.iterdir()) == [".02-abc.pt.lock", "02-abc.pt"]
