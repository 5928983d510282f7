"""No silent wrong answers from the sysfs part of the reader: an unreadable NUMA folder is a
note, CPUs that nodes or the host contradict are bad input (exit 5), an empty sysroot is
nothing to read (exit 3) (issue 18, item 5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.hosts import atlas_a2

NODE = "sys/devices/system/node"


def _topo(root: Path, *extra: str) -> tuple[int, str, str]:
    res = CLI("topo", "--sysroot", str(root), *extra)
    return res.exit_code, res.stdout, res.stderr


def test_an_unreadable_numa_folder_is_a_note_not_a_fact(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    node = sysroot.root / NODE
    if os.geteuid() == 0:
        # root lists any folder: make the node view unreadable another way (a file in its place)
        for p in sorted(node.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        node.rmdir()
        node.write_text("")
    else:
        node.chmod(0)
    try:
        host = read_host(DirRoot(sysroot.root))
        assert any("NUMA nodes are unknown" in n and "guess" in n for n in host.notes)
        code, out, _err = _topo(sysroot.root)
        assert code == 0 and "NUMA nodes are unknown" in out
        code, out, _err = _topo(sysroot.root, "--json")
        assert any("guess" in w for w in json.dumps(json.loads(out)).split('"'))
    finally:
        if node.is_dir():
            node.chmod(0o755)


def test_two_nodes_listing_one_cpu_is_exit_5(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    sysroot.file(f"{NODE}/node1/cpulist", "0-47\n")
    code, _out, err = _topo(sysroot.root)
    assert (
        code == 5
        and "node0 and node1 both list CPUs 0-23" in err
        and len(err.strip().splitlines()) == 1
    )


def test_a_node_cpu_the_host_does_not_have_is_exit_5(sysroot: SysrootBuilder) -> None:
    atlas_a2(sysroot)
    sysroot.file(f"{NODE}/node0/cpulist", "0-23,5000\n")
    code, _out, err = _topo(sysroot.root)
    assert code == 5 and "5000 this host does not have" in err


@pytest.mark.parametrize("name", ["online", "present"])
def test_cpus_outside_possible_are_exit_5(sysroot: SysrootBuilder, name: str) -> None:
    atlas_a2(sysroot)
    sysroot.file("sys/devices/system/cpu/possible", "0-95\n")
    if name == "present":
        sysroot.file("sys/devices/system/cpu/online", "0-95\n")
    code, _out, err = _topo(sysroot.root)
    assert code == 5 and f"{name} lists CPUs" in err and "outside" in err


@pytest.mark.parametrize("command", ["topo", "plan", "doctor", "check-config"])
def test_an_empty_sysroot_is_exit_3(tmp_path: Path, command: str, cli: Cli) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = [command, "--sysroot", str(empty)] + (["{}"] if command == "check-config" else [])
    res = cli(*argv)
    assert res.exit_code == 3 and "holds no captured host" in res.stderr
