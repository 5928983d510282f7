"""The record a bind leaves beside its lock (host/affinity/lock.py): what ascendtune wrote to a
process, read back by `watch` for that process (its PID and start time) only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ascendtune.core.bindplan import BindTarget
from ascendtune.host.affinity.lock import LOCK_DIR_ENV, read_record, start_time, write_record


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path))
    return tmp_path


def test_a_record_reads_back_for_its_process_only(folder: Path) -> None:
    pid = os.getpid()
    target = BindTarget(frozenset({0, 1, 2}), {"main": frozenset({0}), "acl": frozenset({1})})
    write_record(pid, target, use_roles=True, by="ascendtune bind --pid")
    got = read_record(pid, start_time(pid))
    assert got is not None
    assert got.target.cpus == target.cpus and dict(got.target.roles) == dict(target.roles)
    assert got.use_roles and got.by == "ascendtune bind --pid" and got.monotonic > 0
    assert read_record(pid, "1") is None  # another process under the same PID
    assert read_record(pid + 1, start_time(pid)) is None
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_damaged_record_is_no_record(folder: Path) -> None:
    pid = os.getpid()
    path = folder / f"pid-{pid}-{start_time(pid)}.bound"
    for text in ("{", json.dumps({"cpus": "0-x", "roles": {}}), json.dumps([1])):
        path.write_text(text)
        assert read_record(pid, start_time(pid)) is None


def test_a_folder_that_cannot_be_written_loses_only_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a folder")
    write_record(os.getpid(), BindTarget(frozenset({0})), use_roles=False, by="x")  # no raise
    assert read_record(os.getpid(), start_time(os.getpid())) is None
