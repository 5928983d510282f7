"""The one cgroup cpuset resolver: its parsers table by table, the resolver on small roots, and a
Kubernetes pod layout on which topo, plan, doctor, bind and a snapshot replay all agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendtune.core.cgroup import (
    CgroupEntry,
    CgroupMount,
    candidates,
    directory_of,
    is_pure_v2,
    parse_mountinfo,
    parse_proc_cgroup,
    version_of,
    walk_up,
)
from ascendtune.core.cpulist import parse_cpulist
from ascendtune.host.affinity import cpuset_cpus
from ascendtune.host.cgroup import cgroup_version, cpuset_paths, resolve_cpuset
from ascendtune.host.facts import doctor_paths, gather_host_facts
from ascendtune.host.reader import read_host
from ascendtune.host.roots import DirRoot, MemRoot, open_root
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.hosts import atlas_a2

POD = parse_cpulist("4-7,12")

V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
V1_CPUSET_MOUNT = "35 25 0:30 / /sys/fs/cgroup/cpuset rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpuset\n"
HYBRID = (
    "25 23 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "27 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd\n"
    "35 25 0:30 / /sys/fs/cgroup/cpuset,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpuset,cpuacct\n"
)


# ---- /proc/PID/cgroup ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0::/kubepods/pod1\n", (CgroupEntry(0, (), "/kubepods/pod1"),)),
        ("0::/\n", (CgroupEntry(0, (), "/"),)),
        (
            "4:memory:/docker/abc\n3:cpuset:/docker/abc\n0::/\n",
            (
                CgroupEntry(4, ("memory",), "/docker/abc"),
                CgroupEntry(3, ("cpuset",), "/docker/abc"),
                CgroupEntry(0, (), "/"),
            ),
        ),
        (
            "5:cpuset,cpuacct:/svc\n1:name=systemd:/user.slice\n",
            (
                CgroupEntry(5, ("cpuset", "cpuacct"), "/svc"),
                CgroupEntry(1, ("name=systemd",), "/user.slice"),
            ),
        ),
        # a path may hold colons (only the first two split)
        ("0::/a:b\n", (CgroupEntry(0, (), "/a:b"),)),
        # malformed lines are skipped, good ones kept
        ("garbage\nx::/a\n3:cpuset\n0::relative\n\n0::/ok\n", (CgroupEntry(0, (), "/ok"),)),
        ("", ()),
    ],
)
def test_parse_proc_cgroup(text: str, want: tuple[CgroupEntry, ...]) -> None:
    assert parse_proc_cgroup(text) == want


def test_pure_v2_is_only_the_unified_line() -> None:
    assert is_pure_v2(parse_proc_cgroup("0::/x\n"))
    assert not is_pure_v2(parse_proc_cgroup("3:cpuset:/x\n0::/x\n"))
    assert not is_pure_v2(())


# ---- mountinfo ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            V2_MOUNT,
            (
                CgroupMount(
                    "/", "/sys/fs/cgroup", "cgroup2", ("rw", "nsdelegate", "memory_recursiveprot")
                ),
            ),
        ),
        (V1_CPUSET_MOUNT, (CgroupMount("/", "/sys/fs/cgroup/cpuset", "cgroup", ("rw", "cpuset")),)),
        # no optional fields at all
        (
            "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            (CgroupMount("/", "/sys/fs/cgroup", "cgroup2", ("rw",)),),
        ),
        # a container without its own cgroup namespace: the mount root is its own cgroup
        (
            "1200 1190 0:30 /docker/abc /sys/fs/cgroup/cpuset ro,nosuid master:15 - cgroup cgroup rw,cpuset\n",
            (CgroupMount("/docker/abc", "/sys/fs/cgroup/cpuset", "cgroup", ("rw", "cpuset")),),
        ),
        # octal escapes in paths
        (
            "30 1 0:26 /a\\040b /mnt/cg\\040x rw - cgroup2 none rw\n",
            (CgroupMount("/a b", "/mnt/cg x", "cgroup2", ("rw",)),),
        ),
        # other file systems, truncated and malformed lines are skipped
        (
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
            "30 1 0:26 / /sys/fs/cgroup rw\n"
            "31 1 0:27 / /x rw - cgroup2\n"
            "garbage\n",
            (),
        ),
    ],
)
def test_parse_mountinfo(text: str, want: tuple[CgroupMount, ...]) -> None:
    assert parse_mountinfo(text) == want


def test_hybrid_mountinfo_keeps_every_cgroup_mount() -> None:
    mounts = parse_mountinfo(HYBRID)
    assert [(m.mountpoint, m.fstype) for m in mounts] == [
        ("/sys/fs/cgroup/unified", "cgroup2"),
        ("/sys/fs/cgroup/systemd", "cgroup"),
        ("/sys/fs/cgroup/cpuset,cpuacct", "cgroup"),
    ]


def test_the_same_mountinfo_is_parsed_once_and_a_changed_one_again() -> None:
    """The resolver reads mountinfo once per process it resolves: an equal text is parsed once
    (the answer is immutable), a changed text (a mount since) anew."""
    first = parse_mountinfo(HYBRID)
    assert parse_mountinfo("".join(HYBRID)) is first  # an equal text, another string
    changed = parse_mountinfo(HYBRID.replace("cpuset,cpuacct", "cpuset", 1))
    assert changed is not first and changed[2].mountpoint == "/sys/fs/cgroup/cpuset"


# ---- where a cgroup sits under a mount ----------------------------------------------------------

HOST_V2 = CgroupMount("/", "/sys/fs/cgroup", "cgroup2")
CONTAINER_V2 = CgroupMount("/system.slice/docker-abc.scope", "/sys/fs/cgroup", "cgroup2")


@pytest.mark.parametrize(
    ("path", "mount", "want"),
    [
        ("/kubepods/pod1", HOST_V2, "sys/fs/cgroup/kubepods/pod1"),
        ("/", HOST_V2, "sys/fs/cgroup"),
        ("/kubepods//pod1/", HOST_V2, "sys/fs/cgroup/kubepods/pod1"),
        # the container's own cgroup is the mount root: in the container it is `/`
        ("/system.slice/docker-abc.scope", CONTAINER_V2, "sys/fs/cgroup"),
        ("/system.slice/docker-abc.scope/sub", CONTAINER_V2, "sys/fs/cgroup/sub"),
        # another container's cgroup, or one above ours, is not visible through this mount
        ("/system.slice/docker-def.scope", CONTAINER_V2, None),
        ("/system.slice", CONTAINER_V2, None),
        ("/system.slice/docker-abc.scopex", CONTAINER_V2, None),
        # outside our cgroup namespace the kernel writes /../..: never collapse it onto ours
        ("/../../kubepods", HOST_V2, None),
    ],
)
def test_directory_of(path: str, mount: CgroupMount, want: str | None) -> None:
    assert directory_of(path, mount) == want


def test_walk_up_stops_at_the_mount_point() -> None:
    assert walk_up("sys/fs/cgroup/kubepods/pod1", HOST_V2) == (
        "sys/fs/cgroup/kubepods/pod1",
        "sys/fs/cgroup/kubepods",
        "sys/fs/cgroup",
    )
    assert walk_up("sys/fs/cgroup", CONTAINER_V2) == ("sys/fs/cgroup",)


def test_v1_cpuset_comes_before_the_unified_hierarchy() -> None:
    entries = parse_proc_cgroup("5:cpuset,cpuacct:/svc\n0::/user.slice\n")
    mounts = parse_mountinfo(HYBRID)
    got = [(e.path, m.fstype, d) for e, m, d in candidates(entries, mounts)]
    assert got == [
        ("/svc", "cgroup", "sys/fs/cgroup/cpuset,cpuacct/svc"),
        ("/user.slice", "cgroup2", "sys/fs/cgroup/unified/user.slice"),
    ]
    assert version_of(entries, mounts) == 1
    assert version_of(parse_proc_cgroup("0::/x\n"), parse_mountinfo(V2_MOUNT)) == 2
    assert version_of(entries, ()) is None


_SEGMENT = st.sampled_from(["a", "b", "kubepods", "pod1", "..", ".", "", "x y"])
_PATH = st.lists(_SEGMENT, max_size=5).map(lambda parts: "/" + "/".join(parts))


@given(text=st.text(max_size=300))
def test_parsers_never_raise_on_any_text(text: str) -> None:
    for e in parse_proc_cgroup(text):
        assert e.path.startswith("/")
    for m in parse_mountinfo(text):
        assert m.fstype in ("cgroup", "cgroup2") and m.mountpoint.startswith("/")


@given(path=_PATH, mount_root=_PATH)
def test_a_cgroup_folder_never_leaves_its_mount(path: str, mount_root: str) -> None:
    m = CgroupMount(mount_root, "/sys/fs/cgroup", "cgroup2")
    d = directory_of(path, m)
    if d is not None:
        assert d == "sys/fs/cgroup" or d.startswith("sys/fs/cgroup/")
        assert ".." not in d.split("/")
        assert walk_up(d, m)[-1] == "sys/fs/cgroup"


# ---- the resolver on small roots ----------------------------------------------------------------


def _root(files: dict[str, str]) -> MemRoot:
    return MemRoot(files)


def test_v2_nearest_ancestor_with_the_controller() -> None:
    root = _root(
        {
            "proc/self/cgroup": "0::/kubepods/pod1\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/cpuset.cpus.effective": "0-191\n",
            "sys/fs/cgroup/kubepods/cpuset.cpus.effective": "4-7,12\n",
            "sys/fs/cgroup/kubepods/cpuset.mems.effective": "0\n",
        }
    )
    got = resolve_cpuset(root)
    assert got is not None
    assert got.cpus == POD and got.mems == {0} and got.version == 2
    assert got.file == "sys/fs/cgroup/kubepods/cpuset.cpus.effective"
    assert got.mems_file == "sys/fs/cgroup/kubepods/cpuset.mems.effective"
    assert got.cgroup_path == "/kubepods/pod1" and not got.mount_assumed


def test_v1_cpuset_cpuacct_hierarchy_prefers_effective_cpus() -> None:
    root = _root(
        {
            "proc/7/cgroup": "5:cpuset,cpuacct:/svc\n1:name=systemd:/user.slice\n0::/user.slice\n",
            "proc/self/mountinfo": HYBRID,
            "sys/fs/cgroup/cpuset,cpuacct/svc/cpuset.cpus": "0-15\n",
            "sys/fs/cgroup/cpuset,cpuacct/svc/cpuset.effective_cpus": "0-7\n",
            "sys/fs/cgroup/cpuset,cpuacct/svc/cpuset.mems": "0-1\n",
        }
    )
    got = resolve_cpuset(root, 7)
    assert got is not None and got.version == 1
    assert got.cpus == set(range(8)) and got.mems == {0, 1}
    assert got.file == "sys/fs/cgroup/cpuset,cpuacct/svc/cpuset.effective_cpus"
    assert cgroup_version(root, 7) == 1


def test_v1_plain_cpuset_cpus_when_there_is_no_effective_file() -> None:
    root = _root(
        {
            "proc/self/cgroup": "3:cpuset:/docker/abc\n",
            "proc/self/mountinfo": V1_CPUSET_MOUNT,
            "sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus": "2-3\n",
        }
    )
    got = resolve_cpuset(root)
    assert got is not None and got.cpus == {2, 3} and got.mems is None


def test_container_whose_mount_root_is_its_own_cgroup() -> None:
    root = _root(
        {
            "proc/self/cgroup": "0::/system.slice/docker-abc.scope\n",
            "proc/42/cgroup": "0::/system.slice/docker-def.scope\n",  # another container
            "proc/self/mountinfo": "1200 1190 0:26 /system.slice/docker-abc.scope /sys/fs/cgroup "
            "ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
            "sys/fs/cgroup/cpuset.cpus.effective": "8-15\n",
        }
    )
    got = resolve_cpuset(root)
    assert got is not None and got.cpus == set(range(8, 16))
    assert got.file == "sys/fs/cgroup/cpuset.cpus.effective"
    assert resolve_cpuset(root, 42) is None  # not visible from here: unknown, not ours


def test_other_pid_goes_through_our_mounts() -> None:
    root = _root(
        {
            "proc/self/cgroup": "0::/\n",
            "proc/self/mountinfo": V2_MOUNT,
            "proc/4000/cgroup": "0::/kubepods/pod1\n",
            "proc/4000/mountinfo": "garbage\n",  # its own view: not where we read files
            "sys/fs/cgroup/cpuset.cpus.effective": "0-191\n",
            "sys/fs/cgroup/kubepods/cpuset.cpus.effective": "4-7,12\n",
        }
    )
    got = resolve_cpuset(root, 4000)
    assert got is not None and got.cpus == POD
    assert cpuset_paths(root, 4000) == [
        "proc/4000/cgroup",
        "proc/self/mountinfo",
        "sys/fs/cgroup/kubepods/cpuset.cpus.effective",
    ]


@pytest.mark.parametrize(
    "files",
    [
        {},  # no proc/self/cgroup
        {"proc/self/cgroup": "garbage\n", "proc/self/mountinfo": V2_MOUNT},
        {"proc/self/cgroup": "0::/a\n", "proc/self/mountinfo": ""},  # no cgroup mount
        {"proc/self/cgroup": "0::/a\n", "proc/self/mountinfo": V2_MOUNT},  # no cpuset file
        {  # the cpuset is bound to v1 but no v1 hierarchy is mounted, the v2 one has no files
            "proc/self/cgroup": "3:cpuset:/a\n0::/a\n",
            "proc/self/mountinfo": V2_MOUNT,
        },
        {  # an unreadable file is unknown, never its parent's answer
            "proc/self/cgroup": "0::/a\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/a/cpuset.cpus.effective": "x-y\n",
            "sys/fs/cgroup/cpuset.cpus.effective": "0-7\n",
        },
    ],
)
def test_unknown_is_none(files: dict[str, str]) -> None:
    assert resolve_cpuset(_root(files)) is None


def test_an_empty_file_defers_to_the_parent() -> None:
    root = _root(
        {
            "proc/self/cgroup": "0::/a\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/a/cpuset.cpus.effective": "\n",
            "sys/fs/cgroup/cpuset.cpus.effective": "0-7\n",
            "sys/fs/cgroup/cpuset.mems.effective": "garbage\n",
        }
    )
    got = resolve_cpuset(root)
    assert got is not None and got.cpus == set(range(8))
    assert got.mems is None  # a bad mems file leaves the CPUs known


def test_without_mountinfo_the_conventional_layout_is_assumed_and_said() -> None:
    v2 = _root(
        {
            "proc/self/cgroup": "0::/svc\n",
            "sys/fs/cgroup/svc/cpuset.cpus.effective": "0-3\n",
        }
    )
    got = resolve_cpuset(v2)
    assert got is not None and got.cpus == set(range(4)) and got.mount_assumed
    v1 = _root(
        {
            "proc/self/cgroup": "4:memory:/docker/abc\n3:cpuset:/docker/abc\n0::/\n",
            "sys/fs/cgroup/cpuset/cpuset.effective_cpus": "0-191\n",
            "sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus": "0-47\n",
        }
    )
    got = resolve_cpuset(v1)
    assert got is not None and got.cpus == set(range(48)) and got.version == 1
    # hybrid without mountinfo and without a v1 cpuset folder: nothing is assumed for v2
    assert resolve_cpuset(_root({"proc/self/cgroup": "3:cpuset:/a\n0::/a\n"})) is None


# ---- a Kubernetes pod: every command reports 4-7,12 ---------------------------------------------


def pod(b: SysrootBuilder) -> SysrootBuilder:
    """An Atlas 800I A2 whose Cpus_allowed_list says 0-191 while the pod's cgroup allows 4-7,12
    (the cpuset controller is enabled on kubepods only, so pod1 has no cpuset files)."""
    atlas_a2(b)
    b.file("proc/self/cgroup", "0::/kubepods/pod1\n")
    b.file("proc/self/mountinfo", V2_MOUNT)
    b.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    b.file("sys/fs/cgroup/cpuset.cpus.effective", "0-191\n")
    b.file("sys/fs/cgroup/kubepods/cpuset.cpus.effective", "4-7,12\n")
    b.file("sys/fs/cgroup/kubepods/cpuset.mems.effective", "0\n")
    b.file("sys/fs/cgroup/kubepods/pod1/cgroup.procs", "1\n")
    b.proc(4000, comm="python3", cpus_allowed="4-7,12", fds={20: "/dev/davinci4"})
    b.file("proc/4000/cgroup", "0::/kubepods/pod1\n")
    b.meta(arch="aarch64", hostname="pod", proc_scanned=True)
    return b


def _json(*args: str) -> tuple[int, dict[str, object]]:
    res = CLI(*args, "--json")
    return res.exit_code, schemas.loads_cli(args, res.stdout) if res.stdout.strip() else {}


def _check(doc: dict[str, object], cid: str) -> dict[str, object]:
    checks = doc["checks"]
    assert isinstance(checks, list)
    return next(c for c in checks if c["id"] == cid)


def _pod_answers(where: str) -> None:
    code, topo = _json("topo", "--sysroot", where)
    assert code == 0 and topo["cpus_allowed"] == "4-7,12"

    # every rank of a plan that fits lies inside the pod's cpuset ...
    code, plan = _json("plan", "--sysroot", where, "--visible-devices", "4,5", "--policy", "node")
    assert code == 0 and plan["cpus_allowed"] == "4-7,12"
    ranks = plan["ranks"]
    assert isinstance(ranks, list) and len(ranks) == 2
    assert all(parse_cpulist(r["cpus"]) <= POD for r in ranks)
    # ... and vLLM-Ascend's own binding refuses it, naming the pod's cpuset
    res = CLI("plan", "--sysroot", where, "--json")
    assert res.exit_code != 0 and "the cpuset 4-7,12" in res.stderr

    _code, doctor = _json("doctor", "--sysroot", where)
    row = _check(doctor, "cgroup_cpuset")
    assert row["value"] == "cgroup v2, cpuset 4-7,12 (5 of 192 online CPUs)"
    assert row["status"] == "fail" and "4-7,12" in str(row["detail"])
    worker = _check(doctor, "worker:4000")
    assert isinstance(worker["data"], dict) and worker["data"]["cpuset"] == "4-7,12"

    root = open_root(where)
    assert cpuset_cpus(4000, root=root) == POD  # what bind checks the target PID against
    host = read_host(root)
    assert host.cpus_allowed == POD and host.cgroup_cpuset == POD
    assert host.cgroup_cpuset_file == "sys/fs/cgroup/kubepods/cpuset.cpus.effective"
    facts = gather_host_facts(root)
    assert facts.cgroup_cpuset == POD and facts.cgroup_version == 2


def test_pod_layout_every_command_agrees(sysroot: SysrootBuilder) -> None:
    _pod_answers(str(pod(sysroot).root))


def test_doctor_paths_hold_what_the_resolver_read(sysroot: SysrootBuilder) -> None:
    root = DirRoot(pod(sysroot).root)
    paths = doctor_paths(root, read_host(root))
    for p in (
        "proc/self/cgroup",
        "proc/self/mountinfo",
        "sys/fs/cgroup/kubepods/cpuset.cpus.effective",
        "sys/fs/cgroup/kubepods/cpuset.mems.effective",
        "proc/4000/cgroup",
    ):
        assert p in paths, p


@pytest.mark.parametrize("dest", ["snap", "snap.tar.gz"])
def test_pod_snapshot_replays_the_same_cpuset(
    sysroot: SysrootBuilder, tmp_path: Path, dest: str, cli: Cli
) -> None:
    pod(sysroot)
    out = tmp_path / dest
    res = cli("snapshot", "--sysroot", str(sysroot.root), str(out))
    assert res.exit_code == 0, res.output
    _pod_answers(str(out))
    assert read_host(open_root(str(out))) == read_host(DirRoot(sysroot.root))


def test_status_and_cgroup_sharing_no_cpu_is_a_clear_error(
    sysroot: SysrootBuilder, cli: Cli
) -> None:
    pod(sysroot).allowed("0-3", "0")
    res = cli("topo", "--sysroot", str(sysroot.root))
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "share no online CPU" in res.stderr and "4-7,12" in res.stderr
