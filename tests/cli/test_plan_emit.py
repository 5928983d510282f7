"""`plan --emit KIND`: every line printed is a comment of its own or runs as it stands.

The whole text goes through `bash -n`, every command line alone too, and on a sysroot shaped
like this machine (plans on CPUs 0-1) the taskset/numactl lines are run, wrapping a harmless
probe that reports its own mask.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ascendtune.app.emit import EMITS, disable_cpu_binding, shell_join
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.gpu_hosts import Gpu, write_gpus

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

VLLM = (
    "ASCEND_RT_VISIBLE_DEVICES=0,1 vllm serve /models/qwen -tp 2 "
    '--additional-config \'{"ascend_scheduler_config": {"enabled": true}, "note": "it\'"\'"\'s"}\''
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASCENDTUNE_SYSROOT", "ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)


def emit(*args: str) -> list[str]:
    res = CLI("plan", *args)
    assert res.exit_code == 0, res.stderr
    return res.stdout.splitlines()


def bash_n(text: str) -> None:
    assert BASH is not None
    done = subprocess.run([BASH, "-n"], input=text, text=True, capture_output=True, check=False)
    assert done.returncode == 0, f"bash -n: {done.stderr}\n{text}"


def command_lines(lines: list[str]) -> list[str]:
    """The lines outside comments and here-documents."""
    out, heredoc = [], None
    for line in lines:
        if heredoc is not None:
            if line == heredoc:
                heredoc = None
            continue
        if line.startswith("#"):
            continue
        out.append(line)
        if "<<'" in line:
            heredoc = line.rsplit("<<'", 1)[1].rstrip("'")
    return out


HOSTS = [("atlas-800i-a2", "numa-local"), ("atlas-800i-a2", "vllm-ascend"), ("dgx-h100", "auto")]


@pytest.mark.parametrize(("demo", "policy"), HOSTS)
@pytest.mark.parametrize("kind", [k for k in EMITS if k != "cpu-affinity-conf"])
@pytest.mark.parametrize("cmdline", [None, VLLM])
def test_every_line_is_a_comment_or_a_whole_command(
    demo: str, policy: str, kind: str, cmdline: str | None
) -> None:
    if kind == "vllm" and cmdline is None:
        return  # a usage error (test_vllm_without_cmdline_says_what_it_needs)
    args = ["--demo", demo, "--policy", policy, "--emit", kind]
    lines = emit(*args, *(["--cmdline", cmdline] if cmdline else []))
    assert lines
    bash_n("\n".join(lines) + "\n")
    for line in lines:
        assert line.startswith("#") or " #" not in line.replace('"$@"; }', ""), line
    for line in command_lines(lines):
        bash_n(line + "\n")


def run_bash(script: str) -> subprocess.CompletedProcess[str]:
    """script under `bash -e`, in a clean environment: the suite's own ASCENDTUNE_* settings
    (CI's tier switches) stay out of what the emitted lines define."""
    assert BASH is not None
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    return subprocess.run(
        [BASH, "-e", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env=clean,
        timeout=60,
    )


def test_cpu_affinity_conf_is_one_export_on_ascend() -> None:
    lines = emit("--demo", "atlas-800i-a2", "--emit", "cpu-affinity-conf")
    bash_n("\n".join(lines))
    assert next(x for x in lines if not x.startswith("#")).startswith("export CPU_AFFINITY_CONF=1,")


@pytest.fixture
def here(tmp_path: Path) -> tuple[str, list[int]]:
    """A GPU sysroot shaped like this machine: two usable CPUs on one node, a GPU for each;
    the exclusive plan gives GPU g the g-th CPU."""
    mine = sorted(os.sched_getaffinity(0))[:2]
    if len(mine) < 2:
        pytest.skip("needs two usable CPUs")
    sb = SysrootBuilder(tmp_path / "root")
    cpulist = ",".join(map(str, mine)) if mine[1] != mine[0] + 1 else f"{mine[0]}-{mine[1]}"
    sb.cpus(cpulist, topology=False).node(0, cpulist)
    write_gpus(sb, [Gpu(0, cpulist), Gpu(0, cpulist)])
    return str(sb.root), mine


PROBE = "import os; print(sorted(os.sched_getaffinity(0)))"


@pytest.mark.parametrize("kind", ["taskset", "numactl"])
def test_emitted_commands_run_and_bind(here: tuple[str, list[int]], kind: str) -> None:
    root, mine = here
    if shutil.which(kind) is None:
        pytest.skip(f"{kind} is not installed here")
    probe = shell_join([sys.executable, "-c", PROBE])
    assert BASH is not None
    # one rank: its command, on its CPUs
    lines = emit("--sysroot", root, "--policy", "exclusive", "--ranks", "1", "--emit", kind,
                 "--cmdline", probe)  # fmt: skip
    done = subprocess.run(
        [BASH, "-e", "-c", "\n".join(lines)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str([mine[0]])]
    # two ranks: ONE server (a pasted `vllm serve -tp 2` must not start twice), on the CPUs of
    # both ranks, then the line that gives each worker its own
    lines = emit("--sysroot", root, "--policy", "exclusive", "--emit", kind, "--cmdline", probe)
    commands = command_lines(lines)
    assert len(commands) == 2, lines
    assert commands[1] == "ascendtune bind --workers --policy exclusive"
    done = subprocess.run(
        [BASH, "-e", "-c", commands[0]], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(mine)]


def test_a_tp_server_is_one_command_not_one_per_rank() -> None:
    cmd = "vllm serve /models/qwen -tp 2"
    for kind in ("taskset", "numactl"):
        lines = emit("--demo", "atlas-800i-a2", "--ranks", "2", "--emit", kind, "--cmdline", cmd)
        commands = command_lines(lines)
        servers = [c for c in commands if "vllm serve" in c]
        assert len(servers) == 1, lines
        argv = shlex.split(servers[0])
        # the CPUs of both ranks (144-167 and 168-191), vLLM-Ascend's own binding off
        assert "144-191" in " ".join(argv[:3]), argv
        assert json.loads(argv[argv.index("--additional-config") + 1]) == {
            "enable_cpu_binding": False
        }
        assert commands[-1].startswith("ascendtune bind --workers")


def test_env_lines_are_exports() -> None:
    lines = emit("--demo", "atlas-800i-a2", "--ranks", "2", "--emit", "env")
    commands = command_lines(lines)
    assert commands and all(c.startswith("export ") for c in commands), lines
    assert BASH is not None
    script = "\n".join([*lines, 'env | grep -E "^(ASCEND|ASCENDTUNE)" | sort'])
    done = run_bash(script)
    assert done.returncode == 0, done.stderr
    # a child of the shell sees every rank's values (not only the last rank's)
    assert done.stdout.splitlines() == [
        "ASCENDTUNE_CPUS_RANK0=144-167",
        "ASCENDTUNE_CPUS_RANK1=168-191",
        "ASCENDTUNE_MEMBIND_RANK0=6",
        "ASCENDTUNE_MEMBIND_RANK1=7",
        "ASCEND_RT_VISIBLE_DEVICES=0,1",
    ]
    one = command_lines(emit("--demo", "atlas-800i-a2", "--ranks", "1", "--emit", "env"))
    assert one[-1] == "export ASCENDTUNE_CPUS=144-167 ASCENDTUNE_MEMBIND=6"


def test_vllm_without_cmdline_says_what_it_needs(cli: Cli) -> None:
    res = cli("plan", "--demo", "atlas-800i-a2", "--emit", "vllm")
    assert res.exit_code == 2 and res.stdout == ""
    assert "--emit vllm needs the server's command line: give --cmdline" in res.stderr
    assert "MODEL" not in res.stderr


@pytest.mark.parametrize("kind", ["taskset", "numactl"])
def test_functions_without_cmdline_run_in_a_launch_script(
    here: tuple[str, list[int]], kind: str
) -> None:
    root, mine = here
    if shutil.which(kind) is None:
        pytest.skip(f"{kind} is not installed here")
    lines = emit("--sysroot", root, "--policy", "exclusive", "--emit", kind)
    script = "\n".join([*lines, f"rank1 {shell_join([sys.executable, '-c', PROBE])}"])
    assert BASH is not None
    done = run_bash(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([mine[1]])


def test_systemd_drop_ins_are_written_where_asked(
    here: tuple[str, list[int]], tmp_path: Path
) -> None:
    root, mine = here
    lines = emit("--sysroot", root, "--policy", "exclusive", "--emit", "systemd")
    assert BASH is not None
    env = {**os.environ, "SYSTEMD_DROPIN_DIR": str(tmp_path / "units")}
    done = subprocess.run(
        [BASH, "-e", "-c", "\n".join(lines)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    conf = (tmp_path / "units" / "vllm-rank1.service.d" / "ascendtune-cpus.conf").read_text()
    assert conf.splitlines() == [
        "[Service]",
        f"CPUAffinity={mine[1]}",
        "NUMAPolicy=bind",
        "NUMAMask=0",
    ]


def test_docker_arrays_hold_the_cpuset_flags(here: tuple[str, list[int]]) -> None:
    root, mine = here
    lines = emit("--sysroot", root, "--policy", "exclusive", "--emit", "docker")
    assert BASH is not None
    script = "\n".join([*lines, 'printf "%s\\n" "${rank1_docker[@]}"'])
    done = run_bash(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"--cpuset-cpus={mine[1]}", "--cpuset-mems=0"]


def test_vllm_merges_enable_cpu_binding_false_and_keeps_every_key() -> None:
    lines = emit("--demo", "atlas-800i-a2", "--policy", "numa-local", "--emit", "vllm",
                 "--cmdline", VLLM)  # fmt: skip
    commands = command_lines(lines)
    assert len(commands) == 2
    argv = shlex.split(commands[0])
    assert argv[:3] == ["ASCEND_RT_VISIBLE_DEVICES=0,1", "vllm", "serve"]
    cfg = json.loads(argv[argv.index("--additional-config") + 1])
    assert cfg == {
        "ascend_scheduler_config": {"enabled": True},
        "note": "it's",
        "enable_cpu_binding": False,
    }
    assert commands[1] == "ascendtune bind --workers --policy numa-local"


@pytest.mark.parametrize(
    ("argv", "config"),
    [
        (["vllm", "serve", "m"], {"enable_cpu_binding": False}),
        (
            ["vllm", "serve", "m", '--additional-config={"enable_cpu_binding": true, "x": 1}'],
            {"enable_cpu_binding": False, "x": 1},
        ),
    ],
)
def test_disable_cpu_binding(argv: list[str], config: dict[str, object]) -> None:
    out = disable_cpu_binding(argv)
    last = out[-1].split("=", 1)[1] if out[-1].startswith("--additional-config=") else out[-1]
    assert json.loads(last) == config and out[:3] == argv[:3]


def test_emit_with_json_puts_the_lines_in_the_document(cli: Cli) -> None:
    res = cli("plan", "--demo", "atlas-800i-a2", "--ranks", "2", "--emit", "taskset", "--json")
    assert res.exit_code == 0, res.stderr
    doc = schemas.loads("plan", res.stdout)
    assert doc["emit"]["kind"] == "taskset"
    assert doc["emit"]["lines"] == emit("--demo", "atlas-800i-a2", "--ranks", "2", "--emit",
                                        "taskset")  # fmt: skip
    assert doc["ranks"][0]["cpus"] == "144-167"


def test_an_unknown_emit_is_a_usage_error(cli: Cli) -> None:
    res = cli("plan", "--demo", "atlas-800i-a2", "--emit", "yaml")
    assert res.exit_code == 2 and "--emit yaml: expected one of" in res.stderr
