"""The handoff from vLLM-Ascend's own binding: whether the workers bind by themselves (their
--additional-config, the version's default), said by `bind --workers`; and check-config's
warning when enable_cpu_binding runs inside an outer binder's mask. Captured hosts only
(sysroots built in tmp_path); nothing here changes a process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ascendtune.core.vllm_config.rules import outer_binder
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.hosts import A2_BUS, atlas_a2, npu_smi_info


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASCENDTUNE_SYSROOT", "ASCEND_RT_VISIBLE_DEVICES", "CPU_AFFINITY_CONF"):
        monkeypatch.delenv(name, raising=False)


def vllm(config: str | None) -> list[str]:
    argv = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "/models/qwen", "-tp", "2"]
    return argv + (["--additional-config", config] if config is not None else [])


def server(sb: SysrootBuilder, config: str | None) -> SysrootBuilder:
    """An A2 host with two workers (NPUs 0 and 1) forked by one `vllm serve` (PID 4000)."""
    atlas_a2(sb)
    procs = [(0, 4100, "VLLM::Worker_TP"), (1, 4101, "VLLM::Worker_TP")]
    sb.command("npu-smi_info", npu_smi_info(dict.fromkeys(range(8), "910B3"), A2_BUS, procs))
    sb.proc(4000, comm="vllm", cmdline=vllm(config), cpus_allowed="0-191")
    for pid in (4100, 4101):
        sb.proc(
            pid,
            comm="VLLM::Worker_TP",
            cmdline=["VLLM::Worker_TP"],
            cpus_allowed="0-191",
            threads={pid: ("VLLM::Worker_TP", "0-191"), pid + 1000: ("acl_thread", "0-191")},
        )
        sb.file(f"proc/{pid}/stat", f"{pid} (VLLM::Worker_TP) S 4000 4000 4000 0 -1\n")
    sb.file("proc/4000/stat", "4000 (vllm) S 1 4000 4000 0 -1\n")
    sb.meta(arch="aarch64", hostname="a2", proc_scanned=True)
    return sb


def workers_doc(root: Path) -> dict[str, Any]:
    res = CLI("bind", "--workers", "--dry-run", "--sysroot", str(root), "--json")
    assert res.exit_code == 0, res.stderr
    doc: dict[str, Any] = schemas.loads("bind-workers", res.stdout)
    return doc


def test_workers_that_bind_themselves_are_named(sysroot: SysrootBuilder) -> None:
    doc = workers_doc(server(sysroot, None).root)
    assert [w["self_binding"] for w in doc["workers"]] == [True, True]
    [note] = doc["handoff"]
    assert "4100, 4101" in note and "enable_cpu_binding" in note
    assert "would override its once-per-start binding" in note
    assert "a restarted worker binds the vLLM-Ascend way again" in note


def test_workers_with_binding_off_keep_ours(sysroot: SysrootBuilder) -> None:
    cfg = '{"enable_cpu_binding": false, "ascend_scheduler_config": {"enabled": true}}'
    doc = workers_doc(server(sysroot, cfg).root)
    assert [w["self_binding"] for w in doc["workers"]] == [False, False]
    [note] = doc["handoff"]
    assert note.startswith("enable_cpu_binding is off for worker(s) 4100, 4101")


def test_workers_dry_run_from_a_sysroot_shows_targets(sysroot: SysrootBuilder, cli: Cli) -> None:
    doc = workers_doc(server(sysroot, None).root)
    by_dev = {w["device"]: w for w in doc["workers"]}
    # the plan is the one `plan` prints for this host, matched by device
    res = cli("plan", "--sysroot", str(sysroot.root), "--json")
    plan = {r["device"]: r for r in schemas.loads("plan", res.stdout)["ranks"]}
    for dev in (0, 1):
        assert by_dev[dev]["target_cpus"] == plan[dev]["cpus"]
        assert by_dev[dev]["rank"] == plan[dev]["rank"]
    assert all(w["changed"] and w["cpus_before"] == "0-191" for w in doc["workers"])
    res = cli("bind", "--workers", "--sysroot", str(sysroot.root))
    assert res.exit_code == 2 and "only --dry-run is allowed" in res.stderr


@pytest.mark.parametrize(
    ("argv", "binder"),
    [
        (["taskset", "-c", "144-155", "vllm", "serve", "m"], "taskset -c 144-155"),
        (
            ["A=1", "numactl", "--physcpubind=1-4", "--", "vllm", "serve"],
            "numactl --physcpubind=1-4",
        ),
        (["ascendtune", "bind", "--rank", "0", "--", "vllm", "serve"], "ascendtune bind --rank 0"),
        (["vllm", "serve", "m"], None),
        (["ascendtune", "plan", "--cmdline", "vllm serve"], None),
    ],
)
def test_outer_binder(argv: list[str], binder: str | None) -> None:
    assert outer_binder(argv) == binder


def check(*args: str) -> tuple[int, list[dict[str, Any]]]:
    res = CLI("check-config", *args, "--json")
    assert res.exit_code in (0, 1), res.stderr
    doc = schemas.loads("check-config", res.stdout)
    return res.exit_code, [f for f in doc["findings"] if f["code"] == "outer-binder-narrowed"]


def test_check_config_cmdline_under_taskset_warns() -> None:
    _, found = check(
        "--arch",
        "aarch64",
        "--cmdline",
        "taskset -c 144-155 vllm serve /m --additional-config '{}'",
    )
    [f] = found
    assert f["severity"] == "warning" and "taskset -c 144-155" in f["message"]
    assert '"enable_cpu_binding": false' in f["hint"] and "bind --workers" in f["hint"]
    _, found = check(
        "--arch",
        "aarch64",
        "--cmdline",
        "taskset -c 144-155 vllm serve /m --additional-config '{\"enable_cpu_binding\": false}'",
    )
    assert found == []


def test_check_config_pid_narrower_than_its_cpuset_warns(sysroot: SysrootBuilder) -> None:
    server(sysroot, "{}")
    sysroot.proc(4000, comm="vllm", cmdline=vllm("{}"), cpus_allowed="144-155")
    sysroot.file("proc/4000/stat", "4000 (vllm) S 3999 4000 4000 0 -1\n")
    sysroot.file("proc/4000/cgroup", "0::/vllm\n")
    sysroot.file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n")
    sysroot.file("sys/fs/cgroup/vllm/cpuset.cpus.effective", "0-191\n")
    sysroot.file(
        "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    )
    _, found = check("--pid", "4000", "--sysroot", str(sysroot.root))
    [f] = found
    assert "its mask 144-155 is narrower than its cpuset 0-191" in f["message"]
    # a parent that started it under numactl says so too
    sysroot.proc(3999, comm="numactl", cmdline=["numactl", "--physcpubind=144-155", "bash", "x"])
    _, found = check("--pid", "4000", "--sysroot", str(sysroot.root))
    [f] = found
    assert "started under `numactl --physcpubind=144-155 bash x`" in f["message"]


@pytest.mark.parametrize("vllm_server", [True, False])
def test_the_version_is_looked_up_only_for_a_vllm_worker(
    sysroot: SysrootBuilder, cli: Cli, monkeypatch: pytest.MonkeyPatch, vllm_server: bool
) -> None:
    """Only a worker with a vLLM command line needs the version's defaults: with a plan file,
    workers of another server cost no search of their memory maps for vllm_ascend, and vLLM
    workers one lookup for all."""
    from ascendtune.app import plan as app_plan

    sb = server(sysroot, None)
    if not vllm_server:
        sb.proc(4000, comm="mindie", cmdline=["/usr/bin/mindie_daemon"], cpus_allowed="0-191")
    plan = sysroot.root.parent / "plan.json"
    plan.write_text(cli("plan", "--sysroot", str(sysroot.root), "--json").stdout)
    calls: list[str] = []
    real = app_plan.resolve_version

    def counted(*args: Any) -> Any:
        calls.append("resolve_version")
        return real(*args)

    monkeypatch.setattr(app_plan, "resolve_version", counted)
    res = cli("bind", "--workers", "--dry-run", "--sysroot", str(sysroot.root), "--plan", str(plan))
    assert res.exit_code == 0, res.stderr
    if vllm_server:
        assert calls == ["resolve_version"]
        assert "vLLM-Ascend binds worker(s) 4100, 4101 itself" in res.stdout
    else:
        assert calls == []
        assert "note:" not in res.stdout


@pytest.mark.parametrize(
    "name", ["VLLM::Worker_TP", "VLLM::Wörker", "worker [bold]x[/]", "w" * 150]
)
def test_the_workers_table_without_rich_is_what_rich_prints(
    sysroot: SysrootBuilder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:
    """Piped, `bind --workers` prints its table without Rich where it can tell Rich's lines
    (core.text.table_as_rich): the same bytes; a name Rich would treat otherwise (not ASCII,
    markup, too wide for the pipe) leaves it to Rich."""
    from dataclasses import replace

    from ascendtune.app.options import HostSource
    from ascendtune.app.workers import WorkersOptions, bind_workers
    from ascendtune.cli import bind as cli_bind

    for var in cli_bind._RICH_ENV:
        monkeypatch.delenv(var, raising=False)
    opts = WorkersOptions(source=HostSource(sysroot=server(sysroot, None).root), dry_run=True)
    report = bind_workers(opts)
    first = replace(report.workers[0], name=name, error=f"holds NPUs 0,1: {name}")
    report = replace(report, workers=(first, *report.workers[1:]))
    cli_bind._rich_workers(report)
    rich_out = capsys.readouterr().out
    lines = cli_bind._plain_workers(report)
    if name == "VLLM::Worker_TP":
        assert lines is not None
        assert "\n".join(lines) + "\n" == rich_out
        cli_bind._render_workers(report)
        assert capsys.readouterr().out == rich_out
    else:
        assert lines is None
        cli_bind._render_workers(report)
        assert capsys.readouterr().out == rich_out
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert cli_bind._plain_workers(report) is None
