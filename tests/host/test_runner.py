"""The one subprocess runner and the tool budget of a root: output bounded, a tool that hangs
shares one deadline with the others and dies with its children."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ascendtune.host import runner
from ascendtune.host.roots import DirRoot

HANG = """#!/bin/sh
sleep 1000 &
echo $! > "{pidfile}"
exec sleep 1000
"""


def _gone(pid: int) -> bool:
    # the orphaned child is reaped by init; wait (without a time bound on the result) until it is
    for _ in range(200):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def test_hanging_tools_share_one_deadline_and_die_with_their_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("npu-smi", "nvidia-smi"):
        script = bin_dir / tool
        script.write_text(HANG.format(pidfile=tmp_path / f"{tool}.child"))
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    root = DirRoot("/", live=True)
    root.tool_budget_s = 1.0
    t0 = time.monotonic()
    first = root.command(["npu-smi", "info"])
    second = root.command(["nvidia-smi", "topo", "-m"])
    took = time.monotonic() - t0
    assert first is not None and first.timed_out and not first.ok
    # the budget was spent on the first: the second does not get a timeout of its own
    assert second is not None and second.timed_out
    assert "budget for tools is spent" in (second.error or "") or "within" in (second.error or "")
    grandchild = int((tmp_path / "npu-smi.child").read_text())
    assert _gone(grandchild), "the hung tool's own child outlived it"
    print(f"two hanging tools, 1 s budget: {took:.2f} s")


def test_runner_bounds_output(tmp_path: Path) -> None:
    with pytest.raises(runner.CommandTimeout, match="printed more than"):
        runner.run(["/bin/sh", "-c", "yes"], max_output=1 << 20)
    done = runner.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    # a tool that exits but leaves a child holding its stdout is done, not hung
    done = runner.run(["/bin/sh", "-c", "sleep 30 & echo hi"], timeout=10)
    assert done.stdout == "hi\n"


def test_tool_budget_is_the_runner_timeout() -> None:
    # sysroot.py writes the number out so that reading a sysroot does not import the runner
    from ascendtune.host import runner

    assert DirRoot.tool_budget_s == runner.DEFAULT_TIMEOUT_S
