"""`ascendtune bind` on real processes of this machine (needs CPUs 0 and 1 and Linux).

Children are small Python programs started here and killed at teardown; every test reads the
masks back with os.sched_getaffinity rather than trusting the report.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ascendtune.core.bindplan import BindTarget
from ascendtune.core.cpulist import format_cpulist
from ascendtune.host import affinity
from ascendtune.host.affinity import Tasks, bind_process
from tests.support import schemas
from tests.support.children import (  # noqa: F401 (spawn: a fixture)
    BOTH,
    CHILD,
    Spawn,
    assert_ready,
    masks,
    needs_cpus_0_1,
    popen_child,
)
from tests.support.cli import CLI

REPO = Path(__file__).resolve().parents[2]
pytestmark = needs_cpus_0_1


def names(pid: int) -> dict[int, str]:
    out: dict[int, str] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            out[int(tid)] = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
    return out


def bind(*args: str) -> tuple[int, dict[str, object] | None, str, str]:
    """Run `ascendtune bind ARGS` in process: (exit code, JSON doc or None, stdout, stderr)."""
    result = CLI("bind", *args)
    doc = None
    if "--json" in args and result.stdout.strip():
        doc = schemas.loads("bind", result.stdout)
    return result.exit_code, doc, result.stdout, result.stderr


def write_plan(tmp_path: Path, cpus: str, roles: dict[str, str] | None = None) -> Path:
    plan = {
        "schema_version": 1,
        "policy": "hand-made",
        "mode": "test",
        "ranks": [
            {
                "rank": 0,
                "device": 0,
                "logical_id": 0,
                "cpus": cpus,
                "numa_nodes": [0],
                "roles": roles or {},
            }
        ],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


# ---- binding a running process ------------------------------------------------------------


def test_binds_200_threads_to_cpu_1(spawn: Spawn) -> None:
    pid = spawn(threads=200)
    assert set(masks(pid).values()) == {BOTH}
    code, doc, _out, err = bind("--cpus", "1", "--pid", str(pid), "--json")
    assert code == 0, err
    assert doc is not None
    assert doc["schema_version"] == 1 and doc["pid"] == pid and doc["cpus"] == "1"
    assert doc["threads_total"] == 201 and doc["threads_bound"] == 201
    assert doc["threads_failed"] == [] and doc["verified"] is True
    got = masks(pid)
    assert len(got) == 201
    assert all(m == {1} for m in got.values())


def test_churning_process_every_thread_on_target_each_run(spawn: Spawn) -> None:
    pid = spawn(spawners=8)
    seen: set[int] = set()
    for run in range(10):
        cpus = frozenset({run % 2})
        code, doc, _out, err = bind("--cpus", str(run % 2), "--pid", str(pid), "--json")
        after = masks(pid)
        assert code == 0, err
        assert doc is not None and doc["verified"] is True and doc["threads_failed"] == []
        off = {tid: m for tid, m in after.items() if m != cpus}
        assert not off, f"run {run}: threads off target after bind returned: {off}"
        seen |= after.keys()
    # the churn was running: threads came and went between the runs (not a count at one instant,
    # which a loaded machine can catch between a spawner's exit and its replacement's start)
    assert len(seen) > 9 + 10


def test_role_threads_land_on_role_cpus(spawn: Spawn, tmp_path: Path) -> None:
    pid = spawn(threads=5, names=["acl_thread", "release_thread", "", "worker"], initial=[0])
    plan = write_plan(tmp_path, "0-1", {"irq": "", "main": "0-1", "acl": "1", "release": "0"})
    code, doc, _out, err = bind("--plan", str(plan), "--rank", "0", "--pid", str(pid), "--json")
    assert code == 0, err
    assert doc is not None and doc["verified"] is True
    by_name = names(pid)
    got = masks(pid)
    acl = [t for t, n in by_name.items() if n == "acl_thread"]
    release = [t for t, n in by_name.items() if n == "release_thread"]
    assert len(acl) == 1 and len(release) == 1
    assert got[acl[0]] == {1} and got[release[0]] == {0}
    others = [m for t, m in got.items() if t not in acl + release]
    assert len(others) == 4 and all(m == BOTH for m in others)
    assert doc["roles_placed"] == {"acl": acl, "release": release}

    # --no-roles: every thread on the whole pool
    code, doc, _out, err = bind(
        "--plan", str(plan), "--rank", "0", "--pid", str(pid), "--no-roles", "--json"
    )
    assert code == 0, err
    assert set(masks(pid).values()) == {BOTH}


def test_dry_run_changes_nothing(spawn: Spawn, tmp_path: Path) -> None:
    pid = spawn(threads=6, names=["acl_thread"], masks=[[0], [1], [0, 1]])
    before = masks(pid)
    assert len(set(before.values())) == 3
    plan = write_plan(tmp_path, "0-1", {"main": "0", "acl": "1", "release": "1"})
    code, doc, _out, err = bind(
        "--plan", str(plan), "--rank", "0", "--pid", str(pid), "--dry-run", "--json"
    )
    assert code == 0, err
    assert masks(pid) == before
    assert doc is not None and doc["dry_run"] is True and doc["passes"] == 0
    rows = {r["tid"]: r for r in doc["threads"]}  # type: ignore[union-attr]
    assert set(rows) == set(before)
    for tid, row in rows.items():
        assert row["current"] == format_cpulist(before[tid])
        assert row["target"] == ("1" if row["name"] == "acl_thread" else "0")
    # the table form says so too
    code, _doc, out, _err = bind("--cpus", "1", "--pid", str(pid), "--dry-run")
    assert code == 0 and "Nothing was changed" in out and "TARGET" in out
    assert masks(pid) == before


def test_a_failure_midway_puts_every_thread_back(spawn: Spawn) -> None:
    pid = spawn(threads=6, masks=[[0], [1], [0, 1]])
    before = masks(pid)
    # a thread that bind must move (not the newest TID: PIDs wrap, at 32768 here, and the
    # newest TID may be a thread already on CPU 1, which bind leaves alone)
    victim = max(t for t, m in before.items() if m != {1})

    class Failing(Tasks):
        def set(self, tid: int, cpus: frozenset[int]) -> None:
            if tid == victim:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            super().set(tid, cpus)

    report = bind_process(pid, BindTarget(cpus=frozenset({1})), tasks=Failing())
    assert masks(pid) == before
    assert not report.verified and report.rolled_back
    assert [(f.tid, f.errno_name) for f in report.threads_failed] == [(victim, "EINVAL")]

    # --keep-partial: the others stay bound, the failure is reported
    report = bind_process(pid, BindTarget(cpus=frozenset({1})), keep_partial=True, tasks=Failing())
    after = masks(pid)
    assert after[victim] == before[victim]
    assert all(m == {1} for t, m in after.items() if t != victim)
    assert not report.verified and not report.rolled_back
    assert [f.tid for f in report.threads_failed] == [victim]


def test_einval_through_the_cli_is_exit_5_and_changes_nothing(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = spawn(threads=4, masks=[[0], [0, 1]])
    before = masks(pid)
    victim = max(before)
    real_set = Tasks.set

    def failing_set(self: Tasks, tid: int, cpus: frozenset[int]) -> None:
        if tid == victim:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        real_set(self, tid, cpus)

    monkeypatch.setattr(Tasks, "set", failing_set)
    code, doc, _out, err = bind("--cpus", "1", "--pid", str(pid), "--json")
    assert code == 5
    assert masks(pid) == before
    assert "may use CPUs 0-1" in err and "put back" in err
    assert doc is not None and doc["threads_failed"][0]["tid"] == victim  # type: ignore[index]


# ---- failures -----------------------------------------------------------------------------


def test_no_such_pid_is_exit_3() -> None:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    code, _doc, _out, err = bind("--cpus", "1", "--pid", str(pid_max + 1))
    assert code == 3
    assert err.startswith("ascendtune: error: no process") and "Traceback" not in err


def test_cpu_not_online_is_exit_5_and_names_the_usable_cpus(spawn: Spawn, tmp_path: Path) -> None:
    pid = spawn(threads=2)
    before = masks(pid)
    code, _doc, _out, err = bind("--cpus", "7", "--pid", str(pid))
    assert code == 5
    assert "CPUs 7 are not online" in err and "may use CPUs 0-1" in err
    plan = write_plan(tmp_path, "0-7")
    code, _doc, _out, err = bind("--plan", str(plan), "--rank", "0", "--pid", str(pid))
    assert code == 5 and "CPUs 2-7 are not online" in err
    assert masks(pid) == before


def test_rank_with_a_demo_plan_does_not_fit_this_machine(spawn: Spawn) -> None:
    # --rank without --plan computes the plan (here of an embedded 192-CPU host); its dry run
    # plans against the demo's process, and this machine's PID is not one of them
    # (a bind that changes processes does not run from a demo at all: only its dry run)
    pid = spawn(threads=1)
    before = masks(pid)
    code, _doc, _out, err = bind(
        "--rank", "0", "--demo", "atlas-800i-a2", "--pid", str(pid), "--dry-run"
    )
    assert code == 3, err
    assert f"process {pid} is not in demo:atlas-800i-a2" in err
    assert masks(pid) == before
    code, _doc, _out, err = bind("--rank", "0", "--demo", "atlas-800i-a2", "--pid", str(pid))
    assert code == 2 and "only --dry-run is allowed" in err
    assert masks(pid) == before


def test_a_demo_dry_run_plans_against_the_captured_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def live(*_a: object, **_k: object) -> None:
        raise AssertionError("the live /proc was read")

    monkeypatch.setattr(affinity.masks.Tasks, "list_tids", live)
    monkeypatch.setattr(affinity.masks.Tasks, "tgid", live)
    # the unbound worker of the demo, as `doctor --demo container-a2-half` prints its fix
    args = ("--rank", "1", "--pid", "3418914", "--demo", "container-a2-half", "--dry-run")
    code, doc, out, err = bind(*args, "--json")
    assert code == 0, err
    assert doc is not None and doc["dry_run"] is True and doc["threads_total"] == 7
    rows = {t["name"]: t for t in doc["threads"]}  # type: ignore[attr-defined]
    assert rows["acl_thread"]["current"] == "0-23" and rows["acl_thread"]["target"] == "22"
    assert rows["release_thread"]["target"] == "23" and rows["VLLM::Worker_TP"]["target"] == "14-21"
    code, _doc, out, err = bind(*args)
    assert code == 0 and "7 of 7 threads would change" in out and "Nothing was changed" in out


def test_plan_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _doc, _out, err = bind("--plan", str(bad), "--rank", "0", "--pid", "1")
    assert code == 5 and "not JSON" in err
    plan = write_plan(tmp_path, "1")
    code, _doc, _out, err = bind("--plan", str(plan), "--rank", "3", "--pid", "1")
    assert code == 5 and "no rank 3" in err and "ranks: 0" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--pid", "1"],
        ["--cpus", "1"],
        ["--plan", "PLAN", "--pid", "1"],
        ["--cpus", "1", "--rank", "0", "--pid", "1"],
        ["--cpus", "1", "--pid", "1", "--", "true"],
        ["--cpus", "1", "--pid", "1", "--membind"],
        ["--cpus", "1", "--migrate-memory", "--", "true"],
        ["--cpus", "1", "--policy", "numa-local", "--pid", "1"],
    ],
)
def test_usage_errors_are_exit_2(args: list[str], tmp_path: Path) -> None:
    plan = write_plan(tmp_path, "1")
    code, _doc, _out, err = bind(*[str(plan) if a == "PLAN" else a for a in args])
    assert code == 2, err


def test_migrate_memory_says_when_migratepages_is_missing(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = spawn(threads=1)
    before = masks(pid)
    monkeypatch.setattr(affinity, "migratepages_path", lambda: None)
    code, _doc, _out, err = bind("--cpus", "1", "--pid", str(pid), "--migrate-memory")
    assert code == 3 and "migratepages is not installed" in err
    assert masks(pid) == before


def test_migrate_memory_runs_migratepages(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pid = spawn(threads=1)
    log = tmp_path / "argv"
    fake = tmp_path / "migratepages"
    fake.write_text(f'#!/bin/sh\necho "$@" > {log}\n')
    fake.chmod(0o755)
    monkeypatch.setattr(affinity, "migratepages_path", lambda: str(fake))
    code, doc, _out, err = bind("--cpus", "1", "--pid", str(pid), "--migrate-memory", "--json")
    assert code == 0, err
    assert log.read_text().split() == [str(pid), "all", "0"]
    assert doc is not None and doc["migrate_memory"]["ok"] is True  # type: ignore[index]


# ---- the launch form ----------------------------------------------------------------------


def run_cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "ascendtune", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
        **kw,  # type: ignore[arg-type]
    )


def test_launch_runs_the_command_bound_with_args_untouched() -> None:
    probe = "import os, sys; print(sorted(os.sched_getaffinity(0))); print(sys.argv[1:])"
    done = run_cli(
        "bind", "--cpus", "1", "--", sys.executable, "-c", probe, "a b", "--json", "$HOME"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[1]", "['a b', '--json', '$HOME']"]
    assert len(done.stderr.splitlines()) == 1 and "on CPUs 1" in done.stderr


def test_launch_leaves_a_bare_demo_flag_of_the_command_alone() -> None:
    done = run_cli(
        "bind", "--cpus", "1", "-q", "--", sys.executable, "-c",
        "import sys; print(sys.argv[1:])", "--demo",
    )  # fmt: skip
    assert done.stdout.strip() == "['--demo']"


def test_launch_exit_status_is_the_commands_and_quiet_is_quiet(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, "0", {"main": "0", "acl": "0", "release": "0"})
    done = run_cli(
        "bind", "--plan", str(plan), "--rank", "0", "--quiet", "--",
        sys.executable, "-c", "import os, sys; sys.exit(7 if os.sched_getaffinity(0) == {0} else 1)",
    )  # fmt: skip
    assert done.returncode == 7 and done.stderr == ""


def test_launch_checks_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # in process: these paths never reach exec
    monkeypatch.setattr(affinity, "numactl_path", lambda: None)
    code, _doc, _out, err = bind("--cpus", "1", "--membind", "--", "true")
    assert code == 3 and "numactl is not installed" in err
    code, _doc, _out, err = bind("--cpus", "1", "--", "no-such-command-here")
    assert code == 3 and "command not found" in err
    code, _doc, _out, err = bind("--cpus", "9", "--", "true")
    assert code == 5 and "may use CPUs 0-1" in err
    code, doc, _out, err = bind("--cpus", "1", "--dry-run", "--json", "--", "true", "x")
    assert code == 0, err
    assert doc is not None and doc["command"] == ["true", "x"] and doc["cpus"] == "1"


# ---- permission -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nobody_site() -> Iterator[tuple[str, str]]:
    """A python `nobody` can run, and a folder with copies of the packages the CLI imports
    (this interpreter's site-packages may sit under a folder nobody cannot enter)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    # which top-level packages a bind run imports
    probe = (
        "import atexit, os, runpy, sys, sysconfig\n"
        "roots = {sysconfig.get_paths()[k] for k in ('purelib', 'platlib')}\n"
        "def dump():\n"
        "    out = set()\n"
        "    for mod in list(sys.modules.values()):\n"
        "        f = getattr(mod, '__file__', None) or ''\n"
        "        for r in roots:\n"
        "            if f.startswith(r + os.sep):\n"
        "                out.add(os.path.join(r, f[len(r) + 1:].split(os.sep)[0]))\n"
        "    sys.stderr.write('MODULES=' + '|'.join(sorted(out)) + '\\n')\n"
        "atexit.register(dump)\n"
        "sys.argv = ['ascendtune', 'bind', '--cpus', '1', '--pid', str(os.getpid()), '--dry-run']\n"
        "runpy.run_module('ascendtune', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=False
    )
    found = [ln for ln in done.stderr.splitlines() if ln.startswith("MODULES=")]
    assert found, done.stderr
    site = tempfile.mkdtemp(prefix="ascendtune-nobody-")
    try:
        for src in found[0][len("MODULES=") :].split("|"):
            if not src:
                continue
            dest = os.path.join(site, os.path.basename(src))
            if os.path.isdir(src):
                shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, dest)
        for d, _dirs, files in os.walk(site):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        candidates = [sys.executable]
        system = shutil.which("python3", path="/usr/bin:/bin")
        if system:
            candidates.insert(0, system)
        for python in candidates:
            ok = subprocess.run(
                [*NOBODY, python, "-c", "import ascendtune.cli.app, rich.table"],
                env=nobody_env(site),
                cwd="/",
                capture_output=True,
                check=False,
            )
            if ok.returncode == 0:
                yield python, site
                return
        pytest.skip("no python that `nobody` can run with the CLI's packages")
    finally:
        shutil.rmtree(site, ignore_errors=True)


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def nobody_env(site: str) -> dict[str, str]:
    return {
        "PYTHONPATH": f"{REPO}{os.pathsep}{site}",
        "PATH": "/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/",
    }


def test_unprivileged_bind_is_exit_4_and_leaves_every_mask(
    spawn: Spawn, nobody_site: tuple[str, str]
) -> None:
    python, site = nobody_site
    pid = spawn(threads=5, masks=[[0], [1], [0, 1]])
    before = masks(pid)
    done = subprocess.run(
        [*NOBODY, python, "-m", "ascendtune", "bind", "--cpus", "1", "--pid", str(pid)],
        env=nobody_env(site),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 4, done.stderr
    assert masks(pid) == before
    assert "not permitted" in done.stderr and "CAP_SYS_NICE" in done.stderr
    assert "--cap-add SYS_NICE" in done.stderr and "Traceback" not in done.stderr
    # and the dry run works for anyone: reading masks needs no privilege
    done = subprocess.run(
        [*NOBODY, python, "-m", "ascendtune", "bind", "--cpus", "1", "--pid", str(pid),
         "--dry-run", "--json"],
        env=nobody_env(site), cwd="/", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert schemas.loads("bind", done.stdout)["threads_total"] == 6


def test_help_does_not_import_psutil() -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys, ascendtune.cli.app, ascendtune.cli.bind; assert 'psutil' not in sys.modules"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
