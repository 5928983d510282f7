"""Random bytes and random JSON through every input path of the real CLI: only exit 0/1/3/4/5,
one line on stderr, never a traceback (issue 18, item 4).

Paths: files inside a sysroot folder, a sysroot archive, --file, --plan, --cmdline, --env-file,
the inline config. Exit 70 with "internal error" is a bug in the tool, reported as such.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builder import SysrootBuilder
from tests.support.cli import CLI, Cli
from tests.support.hosts import atlas_a2

FUZZ = settings(
    max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
raw_bytes = st.binary(max_size=600)
# text that looks a little like what the parsers expect, to get past their first checks
near_text = st.text(alphabet='0123456789-,: \t\nxGPUNICX\x1b[]{}"', max_size=300)

SYSROOT_FILES = [
    "sys/devices/system/cpu/online",
    "sys/devices/system/cpu/possible",
    "sys/devices/system/node/node0/cpulist",
    "sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
    "proc/self/status",
    "commands/npu-smi_info.txt",
    "commands/npu-smi_info_-t_topo.txt",
    "commands/npu-smi_info_-m.txt",
    "commands/npu-smi_info_-t_topo.err",
    "sys/bus/pci/devices/0000:c1:00.0/numa_node",
]


def check(res: Any, what: str) -> None:
    assert res.exit_code in (0, 1, 3, 4, 5), (what, res.exit_code, res.output[-500:])
    err = res.stderr
    assert "Traceback" not in err and "Traceback" not in res.stdout, what
    assert len(err.strip().splitlines()) <= 1, (what, err[-500:])
    assert "\x1b" not in err, what
    assert "internal error" not in err, (what, err)


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fuzz-"))
    atlas_a2(SysrootBuilder(d / "root"))
    yield d / "root"
    shutil.rmtree(d)


def _write(p: Path, data: bytes | str) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    p.write_bytes(data)


@FUZZ
@given(which=st.sampled_from(SYSROOT_FILES), data=raw_bytes | near_text.map(str.encode))
def test_sysroot_files(base: Path, which: str, data: bytes, cli: Cli) -> None:
    with tempfile.TemporaryDirectory() as t:
        root = Path(t) / "root"
        shutil.copytree(base, root, symlinks=True)
        _write(root / which, data)
        for argv in (["topo"], ["plan", "--json"], ["doctor", "--json"]):
            res = cli(*argv, "--sysroot", str(root))
            check(res, f"{argv[0]} with {which} = {data[:60]!r}")
            if "--json" in argv and res.exit_code in (0, 1):
                json.loads(res.stdout)


@FUZZ
@given(data=raw_bytes, gz=st.booleans())
def test_archives(data: bytes, gz: bool, cli: Cli) -> None:
    import gzip

    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / "s.tar.gz"
        p.write_bytes(gzip.compress(data) if gz else data)
        check(cli("topo", "--sysroot", str(p)), f"archive {data[:40]!r}")


@FUZZ
@given(data=raw_bytes | json_values.map(lambda v: json.dumps(v).encode()))
def test_config_file(data: bytes, cli: Cli) -> None:
    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / "c.json"
        p.write_bytes(data)
        res = cli("check-config", "--file", str(p))
        check(res, f"--file {data[:60]!r}")


@FUZZ
@given(doc=json_values, text=near_text)
def test_inline_config_and_cmdline(doc: Any, text: str, cli: Cli) -> None:
    # after "--": a config that starts with "-" is not an option (that would be exit 2, usage)
    check(cli("check-config", "--", json.dumps(doc)), f"config {doc!r}")
    check(cli("check-config", "--", text), f"config text {text!r}")
    cmd = f"vllm serve m --additional-config '{json.dumps(doc)}' {text}"
    check(cli("check-config", "--cmdline", cmd), f"--cmdline {cmd!r}")


@FUZZ
@given(data=raw_bytes | near_text.map(str.encode))
def test_env_file(data: bytes, cli: Cli) -> None:
    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / "env"
        p.write_bytes(data)
        res = cli("check-config", "--env-file", str(p), "{}")
        check(res, f"--env-file {data[:60]!r}")


def _plan_cases(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as t:
        p = Path(t) / "plan.json"
        p.write_bytes(data)
        # --dry-run on this test process itself: nothing is changed whatever the plan says
        argv = ["bind", "--plan", str(p), "--rank", "0", "--pid", str(os.getpid()), "--dry-run"]
        check(CLI(*argv), f"--plan {data[:60]!r}")


plan_data = raw_bytes | json_values.map(lambda v: json.dumps(v).encode())


@FUZZ
@given(data=plan_data)
def test_plan_file(data: bytes) -> None:
    """bind --plan reads through host.files.read_plan_json (app.bind.read_plan_file)."""
    _plan_cases(data)


HOSTILE = [
    ("a 5,000-digit integer", '{"enable_cpu_binding": ' + "9" * 5000 + "}"),
    ("JSON nested 10^5 deep", "[" * 100_000 + "]" * 100_000),
    ("a lone surrogate", '{"\\ud800": true}'),
    ("a lone surrogate value", '{"eplb_config": {"expert_map_path": "\\udfff"}}'),
    ("a million keys", json.dumps({f"k{i}": 0 for i in range(1_000_000)})),
]


@pytest.mark.parametrize(("name", "text"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_configs_are_exit_5(tmp_path: Path, name: str, text: str, cli: Cli) -> None:
    p = tmp_path / "c.json"
    p.write_text(text)
    res = cli("check-config", "--file", str(p))
    check(res, name)
    assert res.exit_code == 5, (name, res.stderr)
    if len(text) < 100_000:  # the inline form too (argv holds up to ~128 KiB per argument)
        res = cli("check-config", "--", text)
        check(res, name)
        assert res.exit_code == 5, (name, res.stderr)


@pytest.mark.parametrize(
    "flags",
    ["-tp 0", "--tensor-parallel-size -1", "-dp 99999999999999999999999", "--block-size 0"],
)
def test_impossible_sizes_in_a_cmdline_are_exit_5(flags: str, cli: Cli) -> None:
    res = cli("check-config", "--cmdline", f"vllm serve m {flags}")
    check(res, flags)
    assert res.exit_code == 5 and ("out of range" in res.stderr or "not an integer" in res.stderr)


# --- strict JSON (SPEC.md section 4): no bare NaN or Infinity in any --json document ---------


def strict_json(text: str) -> Any:
    def reject(token: str) -> Any:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=reject)


@pytest.mark.parametrize(
    "config",
    [
        '{"recompute_scheduler_enable": 1e400}',
        '{"short_request_first_config": {"long_max_wait_ms": NaN}}',
        '{"recompute_scheduler_enable": -Infinity, "x": Infinity}',
    ],
)
def test_check_config_json_is_strict_and_says_what_it_rewrote(cli: Cli, config: str) -> None:
    r = cli("check-config", config, "--json")
    assert r.exit_code in (0, 1), r.stderr
    doc = strict_json(r.stdout)
    said = [f for f in doc["findings"] if f["code"] == "non-finite-number"]
    assert len(said) == 1, doc["findings"]
    assert said[0]["keys"] and all(k in said[0]["message"] for k in said[0]["keys"])


LOGGED = (
    "(APIServer pid=5200) INFO 09-23 10:11:00 [api_server.py:1903] vLLM API server version 0.23.0\n"
    "(APIServer pid=5200) INFO 09-23 10:11:00 [utils.py:341] non-default args: {'model': '/m', "
    "'tensor_parallel_size': 4, 'additional_config': CONFIG}\n"
)


@pytest.mark.parametrize(
    "config",
    [
        "{'enable_cpu_binding': True, 'weight_nz_mode': -1e309}",
        "{'short_request_first_config': {'long_max_wait_ms': 1e999}}",
        "{(1, 2): 3, 1: 'a', 'enable_cpu_binding': True}",  # was internal error: TypeError
    ],
)
def test_log_json_of_a_logged_config_is_strict(cli: Cli, tmp_path: Path, config: str) -> None:
    log = tmp_path / "server.log"
    log.write_text(LOGGED.replace("CONFIG", config))
    r = cli("log", str(log), "--json")
    assert r.exit_code in (0, 1), r.stderr
    strict_json(r.stdout)
