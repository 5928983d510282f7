"""Every line the tool prints for pasting, through a real terminal at 60, 80 and 200 columns:
what a user copies is the command the JSON document holds, whole, and it runs in bash.

doctor's `fix:` / `persistent:` lines of every demo, every `plan --emit` form, and every command
quoted in a hint, a detail or a note (`ascendtune ...`) of doctor, plan, topo, check-config and
explain. The persistent fixes are also run for real, twice, in a scratch root (their paths moved
under it, sysctl, systemctl and grub's tools stubbed): the second run changes nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendtune.app.emit import EMITS
from ascendtune.app.hosts import demo_names
from tests.support.cli import Cli
from tests.support.terminal import run_in_terminal

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

WIDTHS = (60, 80, 200)
DEMOS = [name for name, _ in demo_names()]
VLLM = 'vllm serve /models/qwen -tp 2 --additional-config \'{"kv_cache_dtype": "auto"}\''
CONFIG = "vllm serve /m --numa-bind --additional-config '{\"enable_cpu_binding\": true}'"
# the marker of a line to paste: `    fix: CMD`, `    persistent: CMD`, with where it runs
PASTE = re.compile(r"^    (fix|persistent)( \(on the host, not in this container\))?: (.+)$")
# what a pasted line may start with: a program a fix runs, an assignment, or a comment
PROGRAMS = {
    "apt-get", "ascendtune", "cat", "cfg=/etc/default/irqbalance", "docker", "echo", "export",
    "grubby", "mkdir", "numactl", "printf", "sed", "systemctl", "sysctl", "taskset", "touch",
    "tuned-adm", "yum",
}  # fmt: skip


def _emit_cases() -> list[list[str]]:
    out = []
    for demo, kinds in (("atlas-800i-a2", EMITS), ("dgx-h100", EMITS)):
        for kind in kinds:
            if kind == "cpu-affinity-conf" and demo == "dgx-h100":
                continue
            out.append(["plan", "--demo", demo, "--ranks", "2", "--emit", kind, "--cmdline", VLLM])
        out.append(["plan", "--demo", demo, "--emit", "taskset"])  # the shell functions
    return out


COMMANDS: list[list[str]] = [
    *(["doctor", "--demo", d] for d in DEMOS),
    *(["plan", "--demo", d] for d in DEMOS),
    *(["topo", "--demo", d] for d in DEMOS),
    *(["explain", "binding", "--demo", d] for d in DEMOS if d != "dgx-h100"),
    ["check-config", "--cmdline", CONFIG],
    ["plan", "--demo", "container-a2-half", "--policy", "compare"],
    *_emit_cases(),
]


@pytest.fixture(scope="module")
def screens() -> dict[int, list[list[str]]]:
    """Width -> each command's copied lines (one interpreter per width)."""
    return {w: run_in_terminal(COMMANDS, w) for w in WIDTHS}


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any] | None]:
    """Each command's --json document (None: the command has none, or failed)."""
    from tests.support.cli import CLI

    docs: list[dict[str, Any] | None] = []
    for args in COMMANDS:
        res = CLI(*args, "--json")
        try:
            docs.append(json.loads(res.stdout))
        except ValueError:
            docs.append(None)
    return docs


def bash_n(command: str) -> None:
    assert BASH is not None
    done = subprocess.run([BASH, "-n", "-c", command], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"bash -n: {done.stderr}\n{command}"


def pasted(lines: list[str]) -> list[tuple[str, bool, str]]:
    """(label, on the host, command) of each line to paste."""
    out = []
    for line in lines:
        m = PASTE.match(line)
        if m:
            out.append((m.group(1), bool(m.group(2)), m.group(3)))
    return out


def strings(doc: Any) -> Iterator[str]:
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from strings(v)


@pytest.mark.parametrize("width", WIDTHS)
def test_doctor_fixes_are_copied_whole_and_parse(
    width: int, screens: dict[int, list[list[str]]], documents: list[Any]
) -> None:
    on_host_seen = False
    for i, args in enumerate(COMMANDS):
        if args[0] != "doctor":
            continue
        lines, doc = screens[width][i], documents[i]
        got = pasted(lines)
        for label, _, command in got:
            bash_n(command)
            first = command.split()[0]
            assert command.startswith("#") or first in PROGRAMS, (label, command)
        fixes = {(on_host, cmd) for label, on_host, cmd in got if label == "fix"}
        persistent = [(on_host, cmd) for label, on_host, cmd in got if label == "persistent"]
        for c in doc["checks"]:
            if c["fix"]:
                assert (c["fix_on_host"], c["fix"]) in fixes, (args, width, c["id"])
            if c["fix_persistent"]:
                # printed once however many rows need it (the npu_irq rows share irqbalance's)
                assert persistent.count((c["fix_on_host"], c["fix_persistent"])) == 1, c["id"]
            on_host_seen |= c["fix_on_host"]
    assert on_host_seen  # the container demo's kernel fixes say they run on the host


@pytest.mark.parametrize("width", WIDTHS)
def test_emitted_lines_are_copied_as_the_document_holds_them(
    width: int, screens: dict[int, list[list[str]]], documents: list[Any]
) -> None:
    n = 0
    for i, args in enumerate(COMMANDS):
        if "--emit" not in args:
            continue
        lines = [ln for ln in screens[width][i] if ln]
        held = documents[i]["emit"]["lines"]
        # the screen's blank lines are not told apart from the pty's own; every other line is
        assert lines == [ln for ln in held if ln], (args, width)
        bash_n("\n".join(held) + "\n")
        n += 1
    assert n >= 12


@pytest.mark.parametrize("width", WIDTHS)
def test_no_quoted_command_is_split_across_lines(
    width: int, screens: dict[int, list[list[str]]], documents: list[Any]
) -> None:
    checked = 0
    for i, args in enumerate(COMMANDS):
        lines, doc = screens[width][i], documents[i]
        if doc is None:
            continue
        flat = " ".join(" ".join(ln.split()) for ln in lines)
        spans = {s for text in strings(doc) for s in re.findall(r"`([^`]+)`", text)}
        for span in spans:
            one = " ".join(span.split())
            if one in flat:  # shown: then on one line of its own
                assert any(one in " ".join(ln.split()) for ln in lines), (args, width, span)
                checked += 1
    assert checked >= 10


STUBBED = ("sysctl", "systemctl", "grubby", "update-grub", "grub2-mkconfig", "tuned-adm")


def _scratch(tmp: Path) -> dict[str, str]:
    for d in ("etc/sysctl.d", "etc/tmpfiles.d", "etc/default", "etc/sysconfig", "sbin", "bin"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    (tmp / "etc/default/grub").write_text('GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX="quiet"\n')
    (tmp / "etc/sysconfig/irqbalance").write_text("#IRQBALANCE_ARGS=\nONESHOT=no\n")
    for name in STUBBED:
        stub = tmp / "bin" / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{tmp}/calls"\n')
        stub.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp}/bin:{os.environ['PATH']}"}


def _moved(command: str, tmp: Path) -> str:
    """The command with the host paths it writes moved under tmp."""
    return (
        command.replace("/etc/", f"{tmp}/etc/")
        .replace("/usr/local/sbin/", f"{tmp}/sbin/")
        .replace("/boot/", f"{tmp}/boot/")
    )


def _files(tmp: Path) -> dict[str, str]:
    return {
        str(p.relative_to(tmp)): p.read_text()
        for p in sorted((tmp / "etc").rglob("*")) + sorted((tmp / "sbin").rglob("*"))
        if p.is_file()
    }


def test_persistent_fixes_run_and_twice_is_once(cli: Cli, tmp_path: Path) -> None:
    assert BASH is not None
    commands: set[str] = set()
    for demo in DEMOS:
        doc = json.loads(cli("doctor", "--demo", demo, "--json").stdout)
        commands |= {c["fix_persistent"] for c in doc["checks"] if c["fix_persistent"]}
    runnable = sorted(c for c in commands if not c.startswith("#"))
    assert any("irqbalance" in c for c in runnable) and any("sysctl.d" in c for c in runnable)
    for k, command in enumerate(runnable):
        tmp = tmp_path / str(k)
        env = _scratch(tmp)
        line = _moved(command, tmp)
        after: list[dict[str, str]] = []
        for _ in range(2):
            done = subprocess.run(
                [BASH, "-e", "-c", line], capture_output=True, text=True, env=env, check=False
            )
            assert done.returncode == 0, (command, done.stderr)
            after.append(_files(tmp))
        assert after[0] == after[1], command  # pasted twice: nothing appended twice
        fresh = tmp_path / f"fresh{k}"
        _scratch(fresh)
        # it did something: wrote a file, or ran a (stubbed) tool
        assert after[0] != _files(fresh) or (tmp / "calls").exists(), command
        irq = after[0].get("etc/sysconfig/irqbalance", "")
        if "IRQBALANCE_BANNED_CPULIST" in command:
            assert irq.count("IRQBALANCE_BANNED_CPULIST=") == 1, irq
            assert "ONESHOT=no" in irq  # the other settings kept
            assert os.access(tmp / "sbin/ascendtune-irqbalance-policy", os.X_OK)
        grub = after[0]["etc/default/grub"]
        assert grub.count("GRUB_CMDLINE_LINUX=") == 1 and grub.count("quiet") == 1
        for arg in ("cpufreq.default_governor=performance", "transparent_hugepage=never"):
            if f"&{arg} " in command and "grubby" not in command.split()[0]:
                assert grub.count(arg) == 1, grub
