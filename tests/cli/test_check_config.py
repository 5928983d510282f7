"""`ascendtune check-config` through the CLI: output, JSON, exit codes, inputs and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascendtune.core import vllm_ascend
from tests.support import schemas
from tests.support.builder import SysrootBuilder
from tests.support.cli import Cli

FIXTURES = Path(__file__).parents[1] / "fixtures" / "check_config"
FUSED = '{"enable_fused_mc2": 1, "multistream_overlap_shared_expert": true}'
REWRITE = "multistream_overlap_shared_expert: true → false (because enable_fused_mc2 = 1)"
# a clean environment: no binders, no VLLM_ASCEND_* fallbacks leak in from the test machine
ENV_FILE = str(FIXTURES / "empty.env")


def one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("ascendtune: error: ")
    return lines[0]


def test_fused_mc2_turns_overlap_off(cli: Cli) -> None:
    r = cli("check-config", FUSED, "--arch", "aarch64", "--env-file", ENV_FILE)
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    out = r.stdout
    assert "warnings (1)" in out
    assert "fused-mc2-disables-overlap  multistream_overlap_shared_expert, enable_fused_mc2" in out
    assert REWRITE in out
    assert "overlap you asked for never happens" in out
    assert "errors" not in out.splitlines()[1]


def test_strict_makes_warnings_fail(cli: Cli) -> None:
    r = cli("check-config", FUSED, "--strict", "--arch", "aarch64", "--env-file", ENV_FILE)
    assert r.exit_code == 1
    assert REWRITE in r.stdout
    assert r.stderr == ""


def test_json_output(cli: Cli) -> None:
    r = cli("check-config", FUSED, "--json", "--arch", "aarch64", "--env-file", ENV_FILE)
    assert r.exit_code == 0
    doc = schemas.loads("check-config", r.stdout)
    assert doc["schema_version"] == 1
    assert doc["target"] == vllm_ascend.NEWEST.name
    f = next(f for f in doc["findings"] if f["code"] == "fused-mc2-disables-overlap")
    assert f["severity"] == "warning"
    assert f["keys"] == ["multistream_overlap_shared_expert", "enable_fused_mc2"]
    assert f["message"] and f["hint"]
    assert f["rewrite"] == {
        "key": "multistream_overlap_shared_expert",
        "from": True,
        "to": False,
        "because": "enable_fused_mc2 = 1",
    }
    assert doc["effective"]["multistream_overlap_shared_expert"] is False
    assert doc["effective"]["enable_fused_mc2"] == 1
    for finding in doc["findings"]:
        assert set(finding) >= {"code", "severity", "keys", "message", "hint"}


def test_show_effective(cli: Cli) -> None:
    r = cli("check-config", FUSED, "--show-effective", "--arch", "aarch64", "--env-file", ENV_FILE)
    assert r.exit_code == 0
    head, _, body = r.stdout.partition("effective:\n")
    assert REWRITE in head
    eff = json.loads(body)
    assert eff["multistream_overlap_shared_expert"] is False
    # the newest release's own source (the hand table it borrows said 131072)
    assert eff["mega_moe_max_tokens"] == 65536


def test_errors_exit_1_and_targets_differ(cli: Cli) -> None:
    r = cli(
        "check-config",
        '{"enable_fused_mc2": 2}',
        "--target",
        "main-2026-08",
        "--env-file",
        ENV_FILE,
    )
    assert r.exit_code == 1
    assert "errors (1)" in r.stdout
    assert "enable_fused_mc2 must be one of 0, 1, got 2" in r.stdout
    r = cli(
        "check-config",
        '{"enable_fused_mc2": 2}',
        "--target",
        "v0.23.0",
        "--arch",
        "aarch64",
        "--env-file",
        ENV_FILE,
    )
    assert r.exit_code == 0
    assert "no findings" in r.stdout


def test_clean_config_has_no_findings(cli: Cli) -> None:
    r = cli("check-config", "{}", "--arch", "aarch64", "--env-file", ENV_FILE)
    assert r.exit_code == 0
    assert r.stdout.splitlines()[-1] == "no findings"


def test_file_and_stdin(cli: Cli) -> None:
    r = cli("check-config", "--file", str(FIXTURES / "fused_overlap.json"), "--env-file", ENV_FILE)
    assert r.exit_code == 0 and REWRITE in r.stdout
    r = cli("check-config", "-", "--env-file", ENV_FILE, input=FUSED)
    assert r.exit_code == 0 and REWRITE in r.stdout


def test_cmdline_supplies_the_deployment_facts(cli: Cli) -> None:
    cmd = (
        "vllm serve /models/m -tp 1 --enable-expert-parallel "
        "--additional-config '{\"enable_shared_expert_dp\": true}'"
    )
    r = cli("check-config", "--cmdline", cmd, "--json", "--env-file", ENV_FILE)
    doc = schemas.loads("check-config", r.stdout)
    f = next(f for f in doc["findings"] if f["code"] == "shared-expert-dp-off")
    assert f["severity"] == "warning" and f["needs"] == []
    assert doc["effective"]["enable_shared_expert_dp"] is False
    # an explicit option wins over the command line
    r = cli("check-config", "--cmdline", cmd, "--tp", "4", "--json", "--env-file", ENV_FILE)
    doc = schemas.loads("check-config", r.stdout)
    assert "shared-expert-dp-off" not in [f["code"] for f in doc["findings"]]
    assert doc["effective"]["enable_shared_expert_dp"] is True


def test_cmdline_kv_role_from_kv_transfer_config(cli: Cli) -> None:
    cmd = (
        'vllm serve m --kv-transfer-config \'{"kv_role": "kv_producer"}\' '
        '--additional-config \'{"scheduler_config": {"recompute_scheduler_enable": true}}\''
    )
    r = cli("check-config", "--cmdline", cmd, "--json", "--env-file", ENV_FILE)
    doc = schemas.loads("check-config", r.stdout)
    assert r.exit_code == 0
    assert doc["effective"]["scheduler_config"]["recompute_scheduler_enable"] is False


def test_facts_without_cmdline_are_unknown(cli: Cli) -> None:
    r = cli("check-config", '{"enable_shared_expert_dp": true}', "--json", "--env-file", ENV_FILE)
    doc = schemas.loads("check-config", r.stdout)
    f = next(f for f in doc["findings"] if f["code"] == "shared-expert-dp-off")
    assert f["severity"] == "info"
    assert f["needs"] == ["--enable-expert-parallel", "--tp"]


def test_hf_config_and_soc(cli: Cli) -> None:
    r = cli(
        "check-config",
        '{"enable_fused_mc2": 1, "enable_mc2_hierarchy_comm": true}',
        "--json",
        "--hf-config",
        str(FIXTURES / "minimax_m3_config.json"),
        "--soc",
        "950",
        "--env-file",
        ENV_FILE,
    )
    assert r.exit_code == 1
    codes = {f["code"]: f["severity"] for f in schemas.loads("check-config", r.stdout)["findings"]}
    assert codes["fused-mc2-minimax"] == "error"
    assert codes["mc2-hierarchy-soc"] == "error"
    assert codes["fused-mc2-with-hierarchy"] == "error"


def test_binders_from_env_file_on_arm(cli: Cli) -> None:
    r = cli(
        "check-config",
        "{}",
        "--arch",
        "aarch64",
        "--env-file",
        str(FIXTURES / "server.env"),
        "--json",
    )
    doc = schemas.loads("check-config", r.stdout)
    f = next(f for f in doc["findings"] if f["code"] == "two-cpu-binders")
    assert f["severity"] == "info"
    assert "OMP_PROC_BIND=true" in f["message"] and "CPU_AFFINITY_CONF=mode:1" in f["message"]
    assert "--env-file" in f["message"]
    # the env file's VLLM_ASCEND_ENABLE_NZ fills weight_nz_mode
    assert doc["effective"]["weight_nz_mode"] == 2
    assert r.exit_code == 0


def test_cpu_binding_on_x86(cli: Cli) -> None:
    r = cli("check-config", "{}", "--arch", "x86_64", "--env-file", ENV_FILE)
    assert r.exit_code == 0
    assert "cpu-binding-not-arm" in r.stdout
    assert "does nothing on this x86_64 host" in r.stdout


def _vllm_proc(root: SysrootBuilder, pid: int, config: str, environ: str = "") -> None:
    argv = [
        "/usr/bin/python3",
        "/usr/local/bin/vllm",
        "serve",
        "/models/dsv3",
        "-tp",
        "16",
        "--enable-expert-parallel",
        "--additional-config",
        config,
    ]
    root.file(f"proc/{pid}/cmdline", "\0".join(argv) + "\0")
    root.file(f"proc/{pid}/environ", environ)


def test_pid_under_sysroot(sysroot: SysrootBuilder, cli: Cli) -> None:
    _vllm_proc(sysroot, 4242, FUSED, "OMP_PROC_BIND=spread\0HOME=/root\0")
    sysroot.file("meta.json", json.dumps({"hostname": "a2", "arch": "aarch64"}))
    r = cli("check-config", "--pid", "4242", "--sysroot", str(sysroot.root), "--json")
    assert r.exit_code == 0, r.output
    doc = schemas.loads("check-config", r.stdout)
    codes = [f["code"] for f in doc["findings"]]
    assert "fused-mc2-disables-overlap" in codes
    assert "cpu-binding-not-arm" not in codes  # meta.json says aarch64
    f = next(f for f in doc["findings"] if f["code"] == "two-cpu-binders")
    assert "OMP_PROC_BIND=spread" in f["message"] and "process's environment" in f["message"]


def test_pid_env_file_wins_over_its_environ(sysroot: SysrootBuilder, cli: Cli) -> None:
    _vllm_proc(sysroot, 4242, "{}", "OMP_PROC_BIND=spread\0")
    r = cli(
        "check-config",
        "--pid",
        "4242",
        "--sysroot",
        str(sysroot.root),
        "--arch",
        "aarch64",
        "--env-file",
        ENV_FILE,
    )
    assert r.exit_code == 0
    assert "two-cpu-binders" not in r.stdout


# --- bad input: one stderr line and its exit code ---------------------------------------------


def test_malformed_json(cli: Cli) -> None:
    r = cli("check-config", '{"enable_fused_mc2": 1,}')
    assert r.exit_code == 5
    line = one_line(r.stderr)
    assert "not valid JSON" in line and "line 1 column 24" in line
    assert r.stdout == ""


def test_malformed_json_file_names_line_and_column(cli: Cli) -> None:
    r = cli("check-config", "--file", str(FIXTURES / "malformed.json"))
    assert r.exit_code == 5
    assert "line 3 column 40" in one_line(r.stderr)


def test_json_array(cli: Cli) -> None:
    r = cli("check-config", '[{"enable_fused_mc2": 1}]')
    assert r.exit_code == 5
    assert "is an array, not a JSON object" in one_line(r.stderr)
    assert r.stdout == ""


def test_cmdline_without_additional_config_checks_the_defaults(cli: Cli) -> None:
    # issue 24: the defaults apply (it exited 5 before), and the binders are reported
    r = cli(
        "check-config", "--cmdline", "vllm serve /models/m -tp 8", "--arch", "aarch64", "--json"
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["effective"]["enable_cpu_binding"] is True
    assert [b["id"] for b in doc["binders"]["binders"]] == ["vllm-ascend"]


def test_pid_not_vllm(sysroot: SysrootBuilder, cli: Cli) -> None:
    sysroot.file("proc/77/cmdline", "bash\0-c\0sleep 100\0")
    r = cli("check-config", "--pid", "77", "--sysroot", str(sysroot.root))
    assert r.exit_code == 3
    assert "PID 77 is not vLLM: bash -c sleep 100" in one_line(r.stderr)


def test_pid_missing(sysroot: SysrootBuilder, cli: Cli) -> None:
    sysroot.file("meta.json", "{}")
    r = cli("check-config", "--pid", "78", "--sysroot", str(sysroot.root))
    assert r.exit_code == 3
    assert "no process with PID 78" in one_line(r.stderr)


def test_unknown_target(cli: Cli) -> None:
    r = cli("check-config", "{}", "--target", "v0.99.0")
    assert r.exit_code == 2
    line = one_line(r.stderr)
    assert "unknown --target 'v0.99.0'" in line and "explain versions" in line
    assert r.stdout == ""


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "give the config once: none given"),
        (("{}", "--cmdline", "vllm serve m"), "give the config once: CONFIG or --cmdline"),
        (("{}", "--kv-role", "decode"), "unknown --kv-role 'decode'"),
        (("{}", "--soc", "H100"), "unknown --soc 'H100'"),
    ],
)
def test_usage_errors(args: tuple[str, ...], needle: str, cli: Cli) -> None:
    r = cli("check-config", *args)
    assert r.exit_code == 2
    assert needle in one_line(r.stderr)


def test_missing_files(cli: Cli) -> None:
    r = cli("check-config", "--file", "/nonexistent/config.json")
    assert r.exit_code == 3
    assert "--file /nonexistent/config.json does not exist" in one_line(r.stderr)
    r = cli("check-config", "{}", "--hf-config", "/nonexistent/config.json")
    assert r.exit_code == 3


def test_malformed_hf_config(tmp_path: Path, cli: Cli) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{\n  'hidden_size': 1\n}")
    r = cli("check-config", "{}", "--hf-config", str(bad))
    assert r.exit_code == 5
    assert "line 2 column 3" in one_line(r.stderr)
