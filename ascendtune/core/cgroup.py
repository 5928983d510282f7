"""Pure parsing for the cgroup cpuset resolver: /proc/PID/cgroup and /proc/PID/mountinfo text,
where a cgroup's files sit under a mount, and the frozen answer (`Cpuset`).

ascendtune.host.cgroup does the reads through a Root; nothing here touches the host.
"""

import functools
import posixpath
import re
from typing import NamedTuple

from ascendtune.core.cpulist import CpuSet

# The files that hold a cgroup's CPUs and memory nodes, best first, per cgroup version.
CPUS_FILES: dict[int, tuple[str, ...]] = {
    2: ("cpuset.cpus.effective",),
    1: ("cpuset.effective_cpus", "cpuset.cpus"),
}
MEMS_FILES: dict[int, tuple[str, ...]] = {
    2: ("cpuset.mems.effective",),
    1: ("cpuset.effective_mems", "cpuset.mems"),
}


class CgroupEntry(NamedTuple):
    """One line of /proc/PID/cgroup: `hierarchy:controllers:path`."""

    hierarchy: int
    controllers: tuple[str, ...]  # () for the v2 line `0::/path`
    path: str

    @property
    def unified(self) -> bool:
        return self.hierarchy == 0 and not self.controllers


class CgroupMount(NamedTuple):
    """A cgroup or cgroup2 mount from mountinfo: which cgroup (`root`) shows at `mountpoint`."""

    root: str  # "/" on the host; the container's own cgroup when a runtime bind-mounts it
    mountpoint: str  # absolute, as the reading process sees it
    fstype: str  # "cgroup" (v1) or "cgroup2"
    options: tuple[str, ...] = ()  # super options: the v1 controllers ("rw", "cpuset", ...)

    @property
    def version(self) -> int:
        return 2 if self.fstype == "cgroup2" else 1


class Cpuset(NamedTuple):
    """The cpuset of a process's cgroup, as the nearest cgroup holding the files says."""

    cpus: CpuSet
    mems: frozenset[int] | None  # None: no mems file beside the cpus file
    file: str  # the cpus file it came from, relative to the root
    cgroup_path: str  # the process's cgroup as /proc/PID/cgroup names it
    version: int  # 1 or 2
    mount_assumed: bool = False  # no mountinfo: the conventional /sys/fs/cgroup layout was used
    mems_file: str | None = None


def parse_proc_cgroup(text: str) -> tuple[CgroupEntry, ...]:
    """Every well-formed line of /proc/PID/cgroup; malformed lines are skipped."""
    out: list[CgroupEntry] = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if (
            len(parts) != 3
            or not (parts[0].isascii() and parts[0].isdigit())
            or not parts[2].startswith("/")
        ):
            continue
        controllers = tuple(c for c in parts[1].split(",") if c)
        out.append(CgroupEntry(int(parts[0]), controllers, parts[2]))
    return tuple(out)


def is_pure_v2(entries: tuple[CgroupEntry, ...]) -> bool:
    """Only the `0::` line: the host runs the unified hierarchy alone (no v1 controllers)."""
    return bool(entries) and all(e.unified for e in entries)


_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash as octal escapes (\040 ...)
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


# the resolver reads this process's mountinfo once per process it resolves (host.cgroup): 16
# workers, 16 equal texts, parsed once (49 us each with 20 mounts, 5 ms with 2,000 as on a
# Kubernetes node)
@functools.lru_cache(maxsize=4)
def parse_mountinfo(text: str) -> tuple[CgroupMount, ...]:
    """The cgroup and cgroup2 mounts of a mountinfo text, in its order; other lines skipped.

    A line is `id parent maj:min root mountpoint options [optional fields...] - fstype source
    super-options`; the optional fields end at a lone `-`.
    """
    out: list[CgroupMount] = []
    for line in text.splitlines():
        fields = line.split()
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 3:
            continue
        fstype = fields[sep + 1]
        if fstype not in ("cgroup", "cgroup2"):
            continue
        root, point = _unescape(fields[3]), _unescape(fields[4])
        if not root.startswith("/") or not point.startswith("/"):
            continue
        out.append(CgroupMount(root, point, fstype, tuple(fields[sep + 3].split(","))))
    return tuple(out)


def _clean(path: str) -> str | None:
    """A cgroup path without `.`/`..` tricks; None when it climbs (outside our namespace)."""
    parts = [p for p in path.split("/") if p and p != "."]
    if ".." in parts:
        return None
    return "/" + "/".join(parts)


def directory_of(cgroup_path: str, mount: CgroupMount) -> str | None:
    """The root-relative folder of cgroup_path under mount; None when the mount does not show it
    (the cgroup lies above or beside the mount's root, as another container's cgroup does)."""
    path, root = _clean(cgroup_path), _clean(mount.root)
    if path is None or root is None:
        return None
    if root == "/":
        rel = path.lstrip("/")
    elif path == root:
        rel = ""
    elif path.startswith(root + "/"):
        rel = path[len(root) + 1 :]
    else:
        return None
    point = mount.mountpoint.strip("/")
    return posixpath.join(point, rel) if rel else point


def walk_up(directory: str, mount: CgroupMount) -> tuple[str, ...]:
    """directory, its parent, ... up to the mount point: the cgroups to ask, nearest first.

    A cgroup without the cpuset controller enabled has no cpuset files and runs on its parent's
    cpuset, so the nearest folder that has them rules; above the mount point nothing is visible.
    """
    stop = mount.mountpoint.strip("/")
    out = [directory]
    d = directory
    while d != stop and d:  # directory_of builds folders under the mount point: this ends there
        d = posixpath.dirname(d)
        out.append(d)
    return tuple(out)


def candidates(
    entries: tuple[CgroupEntry, ...], mounts: tuple[CgroupMount, ...]
) -> tuple[tuple[CgroupEntry, CgroupMount, str], ...]:
    """(entry, mount, folder) to try in order: a v1 cpuset hierarchy first (when the cpuset
    controller is bound to v1 it cannot be on v2: the hybrid layout), then the unified one."""
    out: list[tuple[CgroupEntry, CgroupMount, str]] = []
    for e in entries:
        if "cpuset" not in e.controllers:
            continue
        for m in mounts:
            if m.fstype == "cgroup" and "cpuset" in m.options:
                d = directory_of(e.path, m)
                if d is not None:
                    out.append((e, m, d))
    for e in entries:
        if not e.unified:
            continue
        for m in mounts:
            if m.fstype == "cgroup2":
                d = directory_of(e.path, m)
                if d is not None:
                    out.append((e, m, d))
    return tuple(out)


def version_of(entries: tuple[CgroupEntry, ...], mounts: tuple[CgroupMount, ...]) -> int | None:
    """Which cgroup version holds the cpuset controller: 1 when a v1 cpuset hierarchy is mounted
    and names this process, else 2 when a cgroup2 mount is there; None when neither."""
    if any("cpuset" in e.controllers for e in entries) and any(
        m.fstype == "cgroup" and "cpuset" in m.options for m in mounts
    ):
        return 1
    if any(m.fstype == "cgroup2" for m in mounts):
        return 2
    return None
