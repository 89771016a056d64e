"""The grader's cache files (reference values, calibration marks) are replaced whole: a run or a
self-check reading one while another grader writes it sees the old file or the new one."""

from __future__ import annotations

import threading

import pytest
import torch

from checks.grading.grader import replace_whole


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
