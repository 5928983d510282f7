"""Binders through the CLI: check-config's chain (issue 24's done-when), `doctor --section
binders` on the demo, and one sysroot worker per binder (environ, cmdline, threads and masks)
read by `explain binders --pid` and `check-config --pid`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli
from tests.support.hosts import atlas_a2

TEXTBOOK = "taskset -c 0-9 vllm serve /m -tp 2"


def test_check_config_cmdline_reports_the_outer_mask_against_the_default_binding(cli: Cli) -> None:
    r = cli("check-config", "--cmdline", TEXTBOOK, "--arch", "aarch64")
    assert r.exit_code == 0, r.output
    assert "binders-conflict" in r.stdout
    assert "taskset -c 0-9" in r.stdout
    assert "switch: drop the wrapper from the command line" in r.stdout
    strict = cli("check-config", "--cmdline", TEXTBOOK, "--arch", "aarch64", "--strict")
    assert strict.exit_code == 1


def test_check_config_cmdline_json_has_the_chain_and_every_owners_switches(cli: Cli) -> None:
    args = ("check-config", "--cmdline", TEXTBOOK, "--arch", "aarch64", "--json")
    r = cli(*args, "--owner", "ascendtune")
    assert r.exit_code == 0, r.output
    doc = schemas.loads("check-config", r.stdout)
    chain = doc["binders"]
    assert [b["id"] for b in chain["binders"]] == ["outer", "vllm-ascend"]
    assert chain["binders"][0]["leaves"]["main"] == "0-9"
    assert chain["owner"] == "ascendtune"
    assert [s["binder"] for s in chain["switches"]] == ["outer", "vllm-ascend", "ascendtune"]
    assert chain["switches_by_owner"]["vllm-ascend"] == [
        {
            "binder": "outer",
            "switch": "drop the wrapper from the command line (or CPUAffinity= from the unit)",
        }
    ]
    f = next(f for f in doc["findings"] if f["code"] == "binders-conflict")
    assert f["severity"] == "warning" and f["keys"] == ["enable_cpu_binding"]


def test_check_config_env_and_leading_words_reach_the_chain(cli: Cli) -> None:
    r = cli(
        "check-config", "--cmdline", "OMP_PROC_BIND=TRUE vllm serve /m", "--arch", "aarch64",
        "--env", "CPU_AFFINITY_CONF=1", "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    chain = json.loads(r.stdout)["binders"]
    assert [b["id"] for b in chain["binders"]] == ["openmp", "torch_npu", "vllm-ascend"]
    assert cli("check-config", "--cmdline", "vllm serve", "--env", "OOPS").exit_code == 2
    assert cli("check-config", "--cmdline", "vllm serve", "--owner", "me").exit_code == 2


def test_doctor_demo_section_binders(cli: Cli) -> None:
    args = ("doctor", "--demo", "container-a2-half", "--section", "binders", "--json")
    r = cli(*args)
    doc = schemas.loads_cli(args, r.stdout)
    rows = {c["id"]: c for c in doc["checks"]}
    assert set(rows) == {"binders:3418790", "binders:3418914"}
    bound, unbound = rows["binders:3418790"], rows["binders:3418914"]
    # the demo's workers inherit CPU_AFFINITY_CONF=1: torch_npu's default ranges (0-95, 96-191)
    # are not inside the 0-23 cpuset, so it skips, silently
    steps = bound["data"]["binders"]
    assert [(b["id"], b["outcome"]) for b in steps] == [
        ("cgroup", "narrows"),
        ("torch_npu", "skips"),
        ("vllm-ascend", "binds"),
    ]
    assert bound["status"] == "warn"
    assert (
        bound["fix"] == "# in the server's launch: unset CPU_AFFINITY_CONF (or CPU_AFFINITY_CONF=0)"
    )
    assert "binders-silent-skip" in [f["code"] for f in bound["data"]["findings"]]
    assert bound["data"]["predicted"]["main"] == bound["data"]["observed"]["main"] == "2-9"
    # the unbound worker: vLLM-Ascend should have bound it, the masks say it did not
    assert unbound["status"] == "warn"
    codes = [f["code"] for f in unbound["data"]["findings"]]
    assert "binders-observed-differs" in codes
    assert r.exit_code == 0


# ---- one sysroot worker per binder -----------------------------------------------------------

PID = 5000
SITE = "usr/local/lib/python3.11/site-packages"


def _worker(
    b: SysrootBuilder,
    *,
    argv: list[str],
    env: dict[str, str] | None = None,
    masks: dict[str, str] | None = None,
    plugins: dict[str, str] | None = None,
    parent: list[str] | None = None,
    cpuset: str = "0-191",
    comm: str = "VLLM::Worker_TP",
) -> str:
    """An Atlas 800I A2 with one worker on NPU 0: its command line, environment, threads (main,
    acl_thread, release_thread, python3) on `masks`, the packages beside vllm_ascend."""
    atlas_a2(b, cpuset=cpuset)
    b.file("proc/self/cgroup", "0::/\n")
    b.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu\n")
    b.file("sys/fs/cgroup/cpuset.cpus.effective", cpuset + "\n")
    m = {"main": cpuset, "acl": cpuset, "omp": cpuset, **(masks or {})}
    b.proc(
        PID,
        comm=comm,
        cmdline=argv,
        cpus_allowed=m["main"],
        threads={
            PID: (comm, m["main"]),
            PID + 1: ("python3", m["omp"]),
            PID + 71: ("acl_thread", m["acl"]),
            PID + 72: ("release_thread", m["acl"]),
        },
        fds={27: "/dev/davinci0"},
    )
    b.file(f"proc/{PID}/environ", "".join(f"{k}={v}\0" for k, v in (env or {}).items()))
    ppid = 4000 if parent else 1
    b.file(f"proc/{PID}/stat", f"{PID} ({comm}) S {ppid} {PID} {PID} 0 -1 0\n")
    if parent:
        b.file(f"proc/{ppid}/cmdline", "\0".join(parent) + "\0")
        b.file(f"proc/{ppid}/stat", f"{ppid} (sh) S 1 {ppid} {ppid} 0 -1 0\n")
    b.file(
        f"proc/{PID}/maps", f"ffff0000-ffff1000 r-xp 00000000 00:00 1 /{SITE}/torch/lib/libc10.so\n"
    )
    pkgs = {"vllm_ascend": "0.30.0rc2", **(plugins or {})}
    for name, version in pkgs.items():
        b.file(f"{SITE}/{name}-{version}.dist-info/METADATA", f"Name: {name}\nVersion: {version}\n")
    b.meta(hostname="a2", arch="aarch64", proc_scanned=True)
    return str(b.root)


SERVE = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "/models/m", "-tp", "8"]

# binder -> (worker, the chain's binder ids, winner of the main thread, an owner, its switches)
CASES: dict[str, tuple[dict[str, Any], list[str], str | None, str, list[str]]] = {
    "cgroup": (
        {"argv": SERVE, "cpuset": "0-23", "masks": {"main": "0-23"}},
        ["cgroup", "vllm-ascend"],
        "cgroup",
        "ascendtune",
        ["vllm-ascend", "ascendtune"],
    ),
    "outer": (
        {"argv": SERVE, "parent": ["taskset", "-c", "144-150", "/bin/sh", "-c", "run"]},
        ["outer", "vllm-ascend"],
        "outer",  # 7 CPUs for two NPUs of one node: vLLM-Ascend fails, the wrapper's mask stays
        "vllm-ascend",
        ["outer"],
    ),
    "ascendtune": (
        {"argv": SERVE, "parent": ["ascendtune", "bind", "--rank", "0", "--", "sh"]},
        ["ascendtune", "vllm-ascend"],
        "vllm-ascend",
        "ascendtune",
        ["vllm-ascend"],
    ),
    "openmp": (
        {"argv": SERVE, "env": {"OMP_PROC_BIND": "TRUE"}, "masks": {"main": "0", "acl": "0"}},
        ["openmp", "vllm-ascend"],
        "openmp",
        "vllm-ascend",
        ["openmp"],
    ),
    "torch_npu": (
        {
            "argv": SERVE,
            "env": {"CPU_AFFINITY_CONF": "1"},
            "plugins": {"torch_npu": "2.10.0.post4"},
        },
        ["torch_npu", "vllm-ascend"],
        "vllm-ascend",
        "torch_npu",
        ["vllm-ascend"],
    ),
    "ucm": (
        {"argv": SERVE, "env": {"VLLM_CPU_AFFINITY": "1"}, "plugins": {"ucm": "0.4.0"}},
        ["vllm-ascend", "ucm"],
        "ucm",
        "outer",
        ["vllm-ascend", "ucm", "outer"],
    ),
    "afd-plugin": (
        {
            "argv": ["python3", "-m", "afd_plugin.ffn_worker"],
            "plugins": {"afd_plugin": "0.2.0"},
            "comm": "python3",
        },
        ["afd-plugin"],
        "afd-plugin",
        "ascendtune",
        ["afd-plugin", "ascendtune"],
    ),
    "mindie": (
        {"argv": ["mindieservice_daemon"], "env": {"BIND_CPU": "1"}, "comm": "mindie"},
        ["mindie"],
        "mindie",
        "ascendtune",
        ["mindie", "ascendtune"],
    ),
    "vllm-numa-bind": (
        {"argv": [*SERVE, "--numa-bind"]},
        ["vllm-numa-bind", "vllm-ascend"],
        "vllm-ascend",
        "outer",
        ["vllm-numa-bind", "vllm-ascend", "outer"],
    ),
    "sglang": (
        {
            "argv": ["python3", "-m", "sglang.launch_server"],
            "env": {"SGLANG_SET_CPU_AFFINITY": "1"},
            "comm": "python3",
        },
        ["sglang"],
        "sglang",
        "ascendtune",
        ["sglang", "ascendtune"],
    ),
    "vllm-ascend": (
        {"argv": SERVE, "masks": {"main": "146-165", "acl": "166-167"}},
        ["vllm-ascend"],
        "vllm-ascend",
        "torch_npu",
        ["vllm-ascend", "torch_npu"],
    ),
}


@pytest.mark.parametrize("binder", sorted(CASES))
def test_sysroot_worker_chain_winner_and_switches(
    binder: str, sysroot: SysrootBuilder, cli: Cli
) -> None:
    spec, chain_ids, winner, owner, switched = CASES[binder]
    root = _worker(sysroot, **spec)
    args = ("explain", "binders", "--pid", str(PID), "--sysroot", root, "--owner", owner, "--json")
    r = cli(*args, "--target", "v0.30.0rc2")
    assert r.exit_code == 0, r.output
    doc = schemas.loads("explain", r.stdout)
    (w,) = doc["workers"]
    assert [b["id"] for b in w["binders"]] == chain_ids
    assert w["winner"] == winner
    assert w["owner"] == owner
    assert [s["binder"] for s in w["switches"]] == switched
    assert binder in {b["id"] for b in doc["binders"]}


def test_sysroot_omp_worker_is_found_pinned_with_its_cause(
    sysroot: SysrootBuilder, cli: Cli
) -> None:
    root = _worker(sysroot, **CASES["openmp"][0])
    r = cli(
        "check-config", "--pid", str(PID), "--sysroot", root, "--target", "v0.30.0rc2", "--json"
    )
    assert r.exit_code == 0, r.output
    doc = schemas.loads("check-config", r.stdout)
    chain = doc["binders"]
    assert chain["observed"]["main"] == chain["predicted"]["main"] == "0"
    f = next(f for f in chain["findings"] if f["code"] == "binders-pin-first-cpu")
    assert "OMP_PROC_BIND=TRUE" in f["message"] and "CPU 0" in f["message"]
    fails = next(b for b in chain["binders"] if b["id"] == "vllm-ascend")
    assert fails["outcome"] == "fails"


def test_snapshot_replays_the_chain_with_secrets_masked(
    sysroot: SysrootBuilder, tmp_path: Any, cli: Cli
) -> None:
    env = {"VLLM_CPU_AFFINITY": "1", "HF_TOKEN": "hf_abcdefghijkl"}
    root = _worker(sysroot, **{**CASES["ucm"][0], "env": env})
    out = tmp_path / "snap"
    assert cli("snapshot", str(out), "--sysroot", root).exit_code == 0
    environ = (out / f"proc/{PID}/environ").read_text()
    assert "HF_TOKEN=***" in environ and "hf_abcdefghijkl" not in environ
    assert (out / f"{SITE}/ucm-0.4.0.dist-info/METADATA").is_file()
    args = ("explain", "binders", "--pid", str(PID), "--target", "v0.30.0rc2", "--json")
    before = json.loads(cli(*args, "--sysroot", root).stdout)["workers"]
    after = json.loads(cli(*args, "--sysroot", str(out)).stdout)["workers"]
    assert after == before
    assert [b["id"] for b in after[0]["binders"]] == ["vllm-ascend", "ucm"]


def test_plan_emit_owner_switches_the_other_binders_off(cli: Cli) -> None:
    args = ("plan", "--demo", "atlas-800i-a2", "--ranks", "1", "--emit", "taskset")
    plain = cli(*args, "--cmdline", "vllm serve /m").stdout
    r = cli(*args, "--cmdline", "vllm serve /m", "--owner", "outer")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "export OMP_PROC_BIND=false" in lines
    assert "unset CPU_AFFINITY_CONF" in lines
    assert "export VLLM_CPU_AFFINITY=0" in lines
    assert (
        "taskset -c 144-167 vllm serve /m --additional-config '{\"enable_cpu_binding\": false}'"
        in lines
    )
    assert "enable_cpu_binding" not in plain  # without --owner the form is as before
    conf = cli(
        "plan", "--demo", "atlas-800i-a2", "--emit", "cpu-affinity-conf", "--owner", "torch_npu"
    )
    assert "unset CPU_AFFINITY_CONF" not in conf.stdout.splitlines()
    assert any(line.startswith("export CPU_AFFINITY_CONF=") for line in conf.stdout.splitlines())
    wrong = cli(*args, "--owner", "vllm-ascend")
    assert wrong.exit_code == 2 and "hands the CPUs to outer" in wrong.stderr
