"""The sandbox that runs vLLM-Ascend's own binding code must not touch this machine: what it
imports is a stub or refused, and an audit hook refuses real subprocesses, affinity changes and
reads of /proc and /sys. These tests need no download (the code under test is made up here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ascendtune.synth.standard import atlas_800i_a2
from tests.reference import harness as h

SANDBOX = str(h.REPO / "tests" / "reference" / "sandbox.py")


def _run_py(code: str) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys; sys.path.insert(0, {str(h.REPO)!r}); import runpy\n"
    prelude += f"s = runpy.run_path({SANDBOX!r})\n"
    return subprocess.run(
        [sys.executable, "-I", "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "attempt",
    [
        "open('/proc/self/status').read()",
        "open('/sys/devices/system/cpu/online').read()",
        "import subprocess; subprocess.run(['true'])",
        "import os; os.system('true')",
        "import os; os.sched_setaffinity(0, {0})",
    ],
)
def test_the_audit_hook_refuses_real_host_access(attempt: str) -> None:
    proc = _run_py(f"s['arm']()\n{attempt}\n")
    assert proc.returncode != 0
    assert "GuardError" in proc.stderr and "refused" in proc.stderr


def test_unarmed_the_same_code_runs() -> None:
    """The attempts above fail because of the guard, not for another reason."""
    proc = _run_py("open('/proc/self/status').read()\n")
    assert proc.returncode == 0, proc.stderr


def _case() -> h.Case:
    return h.Case("guard", atlas_800i_a2(), "A2")


def _run_module(source: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    impl = h.Impl("00000000", "made-up", "rank")
    monkeypatch.setattr(h, "modules", lambda _impl: {"vllm_ascend.cpu_binding": source})
    return h.run_reference(impl, [_case()])["guard"]


@pytest.mark.parametrize(
    "body",
    [
        "import os\n    os.system('true')",  # not in the os stub
        "import socket",  # not an allowed import
        "import ctypes",
        "open('/etc/passwd', 'w')",  # writes only to /proc/irq/N/smp_affinity
        "import subprocess\n    subprocess.Popen('ls', shell=True)",
    ],
)
def test_reference_code_cannot_reach_around_the_stubs(
    body: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = f"def bind_cpus(rank):\n    {body}\n"
    with pytest.raises(RuntimeError, match="GuardError"):
        _run_module(source, monkeypatch)


def test_stubs_answer_from_the_synthetic_host(monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "import subprocess, os, psutil\n"
        "def bind_cpus(rank):\n"
        "    out = subprocess.Popen(['npu-smi', 'info', '-m'], shell=False,\n"
        "        stdout=subprocess.PIPE).communicate()[0].decode()\n"
        "    assert 'Chip Logic ID' in out\n"
        "    assert 'Cpus_allowed_list' in open('/proc/self/status').read()\n"
        "    subprocess.Popen(['taskset', '-acp', '3-5', str(psutil.Process().pid)])\n"
        "    subprocess.Popen(['not-a-program'])\n"
    )
    got = _run_module(source, monkeypatch)
    assert got[0]["main"] == [3, 4, 5]  # recorded, not applied
    assert "FileNotFoundError" in str(got[0]["error"])  # a program the host lacks
