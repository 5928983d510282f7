"""The one cgroup cpuset resolver of every command (topo, plan, doctor, bind, snapshot).

It reads a process's /proc/PID/cgroup and this process's /proc/self/mountinfo through a Root,
finds the process's cgroup folder under the cpuset (v1) or cgroup2 mount, and takes the CPUs
and memory nodes from the nearest folder up the tree that has the cpuset files.
"""

from __future__ import annotations

import posixpath

from ascendtune.core.cgroup import (
    CPUS_FILES,
    MEMS_FILES,
    CgroupEntry,
    CgroupMount,
    Cpuset,
    candidates,
    is_pure_v2,
    parse_mountinfo,
    parse_proc_cgroup,
    version_of,
    walk_up,
)
from ascendtune.core.cpulist import CpuSet, parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.host.roots import Root

Pid = int | str  # a number, or "self"

# /proc/PID/cgroup paths are relative to the reader's cgroup namespace and the cgroup files
# are reached through the reader's mounts: another PID is resolved through our mountinfo.
MOUNTINFO = "proc/self/mountinfo"
# Without mountinfo (a hand-made or older sysroot) the conventional systemd layout is assumed,
# and the answer says so.
V2_MOUNT = "sys/fs/cgroup"
V2_MARK = "sys/fs/cgroup/cgroup.controllers"
V1_CPUSET_MOUNT = "sys/fs/cgroup/cpuset"


def cgroup_file(pid: Pid) -> str:
    return f"proc/{pid}/cgroup"


class _Reads:
    """A Root that remembers which files it found, so snapshot captures exactly those."""

    __slots__ = ("root", "seen")

    def __init__(self, root: Root) -> None:
        self.root = root
        self.seen: list[str] = []

    def text(self, rel: str) -> str | None:
        got = self.root.read_text(rel)
        if got is not None and rel not in self.seen:
            self.seen.append(rel)
        return got


def _mounts(
    reads: _Reads, entries: tuple[CgroupEntry, ...]
) -> tuple[tuple[CgroupMount, ...], bool]:
    """The cgroup mounts, and whether they were assumed (no mountinfo under this root)."""
    text = reads.text(MOUNTINFO)
    if text is not None:
        return parse_mountinfo(text), False
    out: list[CgroupMount] = []
    if reads.root.listdir(V1_CPUSET_MOUNT) is not None:
        out.append(CgroupMount("/", f"/{V1_CPUSET_MOUNT}", "cgroup", ("cpuset",)))
    if reads.text(V2_MARK) is not None or is_pure_v2(entries):
        out.append(CgroupMount("/", f"/{V2_MOUNT}", "cgroup2"))
    return tuple(out), True


class _Unreadable(Exception):
    """A cpuset file that is there but not a cpulist: the answer is unknown, not its parent's."""


def _cpulist(reads: _Reads, rel: str) -> CpuSet | None:
    text = reads.text(rel)
    if text is None or not text.strip():
        return None  # absent, or empty (nothing configured at this level)
    try:
        return parse_cpulist(text, source=rel)
    except ParseError:
        raise _Unreadable(rel) from None


def _first(reads: _Reads, folder: str, names: tuple[str, ...]) -> tuple[CpuSet, str] | None:
    for name in names:
        rel = posixpath.join(folder, name) if folder else name
        got = _cpulist(reads, rel)
        if got is not None:
            return got, rel
    return None


def _resolve(reads: _Reads, pid: Pid) -> Cpuset | None:
    text = reads.text(cgroup_file(pid))
    if text is None:
        return None
    entries = parse_proc_cgroup(text)
    if not entries:
        return None
    mounts, assumed = _mounts(reads, entries)
    try:
        for entry, mount, folder in candidates(entries, mounts):
            for d in walk_up(folder, mount):
                cpus = _first(reads, d, CPUS_FILES[mount.version])
                if cpus is None:
                    continue
                try:
                    mems = _first(reads, d, MEMS_FILES[mount.version])
                except _Unreadable:
                    mems = None
                return Cpuset(
                    cpus=cpus[0],
                    mems=mems[0] if mems else None,
                    file=cpus[1],
                    cgroup_path=entry.path,
                    version=mount.version,
                    mount_assumed=assumed,
                    mems_file=mems[1] if mems else None,
                )
    except _Unreadable:
        return None
    return None


def resolve_cpuset(root: Root, pid: Pid = "self") -> Cpuset | None:
    """The cgroup cpuset of `pid` seen through root; None when it cannot be told (no cgroup
    file, no mount showing the cgroup, no cpuset file on the way up, or an unreadable one)."""
    return _resolve(_Reads(root), pid)


def cpuset_paths(root: Root, pid: Pid = "self") -> list[str]:
    """The files resolve_cpuset reads for pid that exist under root: what a snapshot captures
    so that the replay resolves the same cpuset."""
    reads = _Reads(root)
    _resolve(reads, pid)
    return list(reads.seen)


def cgroup_version(root: Root, pid: Pid = "self") -> int | None:
    """The cgroup version that holds the cpuset controller for pid (1, 2), None when unknown."""
    found = resolve_cpuset(root, pid)
    if found is not None:
        return found.version
    reads = _Reads(root)
    text = reads.text(cgroup_file(pid))
    entries = parse_proc_cgroup(text) if text is not None else ()
    mounts, _assumed = _mounts(reads, entries)
    return version_of(entries, mounts)
