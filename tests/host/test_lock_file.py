"""The binder's lock file: what it says of its holder after a holder with a longer line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ascendtune.host.affinity import lock


def test_a_shorter_holder_line_replaces_a_longer_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(tmp_path))
    path = tmp_path / "workers.lock"
    path.write_text("1 " + "x" * 250 + "\n")  # the last holder's, longer than ours
    with lock.workers_lock() as held:
        assert held == str(path)
        mine = f"{os.getpid()} {lock._own_command()}\n"
        assert path.read_text() == mine
        assert lock.holder_of(held) == f"PID {os.getpid()} ({lock._own_command()})"
    path.write_text("7 ascendtune bind --workers\n1 " + "x" * 40)  # a line cut short after it
    assert lock.holder_of(str(path)) == "PID 7 (ascendtune bind --workers)"
