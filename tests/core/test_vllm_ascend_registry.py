"""The vLLM-Ascend registry (issues 22, 23): every release from 0.9.1rc1 on, each with the binding
its own source ships, and how a version string a host reports finds its entry."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tarfile
from pathlib import Path

import pytest

from ascendtune.core import vllm_ascend as va
from ascendtune.core.errors import UsageError
from ascendtune.core.vllm_ascend import pep440
from tests.support.cli import CLI

# VLLM_ASCEND_VERSIONS.md section 0, restated: the cpu_binding.py blob of every release (None: the
# release ships none), and where enable_cpu_binding defaults to false
SECTION_0: dict[str | None, tuple[str, ...]] = {
    None: ("0.9.1rc1", "0.9.2rc1", "0.10.0rc1", "0.10.1rc1", "0.10.2rc1", "0.11.0rc0"),
    "2cb1e84a": ("0.9.1rc2", "0.9.1rc3", "0.9.1"),
    "280e516e": (
        *("0.11.0rc1", "0.11.0rc2", "0.11.0rc3", "0.11.0", "0.12.0rc1"),
        *("0.13.0rc1", "0.13.0rc2", "0.13.0rc3", "0.13.0"),
    ),
    "062ff4f9": ("0.14.0rc1",),
    "c09e740a": ("0.15.0rc1",),
    "abb80aa1": ("0.16.0rc1", "0.17.0rc1", "0.18.0rc1"),
    "10967e04": ("0.18.0",),
    "2d5ba9ec": ("0.19.1rc1", "0.20.2rc1"),
    "7b815e31": ("0.21.0rc1",),
    "5a947c7b": ("0.22.1rc1",),
    "0cbc0e2b": ("0.23.0rc1", "0.23.0", "0.23.0.post1", "0.24.0rc1", "0.25.1rc1"),
    "cc55125b": ("0.26.0rc1",),
    "daab93aa": ("0.27.1rc1", "0.28.0rc1", "0.29.0rc1"),
    "7ed2022f": ("0.30.0rc1", "0.30.0rc2"),
}
OFF_BY_DEFAULT_UP_TO = "0.14.0rc1"
FIXED = pep440.parse("0.26.0rc1") or pep440.parse("x")  # the first with npu_id=
# the releases' source distributions, as the registry names them (a shared download cache)
RUNS_IN = {
    va.RUNS_AT_START: "__init__",
    va.RUNS_AT_DEVICE: "_init_device",
    va.RUNS_AFTER_WARMUP: "compile_or_warm_up_model",
}
SDISTS = Path(os.environ.get("ASCENDTUNE_SDISTS", "/root/.cache/ascendtune/sdists"))


def release(pkg: str) -> va.VllmAscendVersion:
    [entry] = [e for e in va.ENTRIES if pkg in e.package_versions]
    return entry


# --- the entries ---------------------------------------------------------------------------------


def test_every_release_of_section_0_is_an_entry_with_its_implementation() -> None:
    listed = {pkg: impl for impl, pkgs in SECTION_0.items() for pkg in pkgs}
    releases = [e for e in va.ENTRIES if e.is_release]
    assert sorted(p for e in releases for p in e.package_versions) == sorted(listed)
    for e in releases:
        [pkg] = e.package_versions
        assert e.name == f"v{pkg}" and e.binding.impl == listed[pkg], e.name
        assert e.binding.ships is (e.binding.impl is not None)


def test_main_snapshots_keep_their_names_and_place() -> None:
    names = va.names()
    assert names.index("v0.26.0rc1") < names.index("main-2026-08") < names.index("v0.27.1rc1")
    assert names.index("v0.27.1rc1") < names.index("main-2026-09") < names.index("v0.28.0rc1")
    assert va.VERSIONS["main-2026-08"].binding.impl == "8448cd77"


def test_releases_are_in_pep440_order_and_the_newest_is_last() -> None:
    keys = [pep440.parse(e.package_versions[0]) for e in va.ENTRIES if e.is_release]
    assert [k.key for k in keys if k] == sorted(k.key for k in keys if k)
    assert va.NEWEST is va.ENTRIES[-1] and va.NEWEST.name == "v0.30.0rc2"


def test_enable_cpu_binding_default_and_the_worker_call() -> None:
    cut = pep440.parse(OFF_BY_DEFAULT_UP_TO)
    assert cut is not None
    for e in va.ENTRIES:
        b = e.binding
        if not e.is_release or not b.ships:
            continue
        key = pep440.parse(e.package_versions[0])
        assert key is not None
        assert b.on_by_default is (key.key > cut.key), e.name
        if b.impl in ("2cb1e84a", "280e516e"):
            assert "ratio=1.0" in b.call and b.npu_of_rank == va.VISIBLE_INDEX
        elif key.key >= FIXED.key:
            assert "npu_id=" in b.call and b.npu_of_rank == va.DEVICE_ID
        else:
            assert b.call == "bind_cpus(local_rank)" and b.npu_of_rank == va.SORTED_BUSY
        assert ("migrate_memory=" in b.call) is (b.impl == "7ed2022f") is (not b.migrate_memory)


def test_data_parallel_follows_the_paired_vllm() -> None:
    for e in va.ENTRIES:
        minor = int(e.vllm.split(".")[1].split()[0]) if e.is_release else 27
        assert (e.binding.dp == va.DP_RESTART) is (minor >= 24), e.name
        assert e.binding.device_ids_flag is (minor >= 24)
        old_allocator = e.binding.impl in ("0cbc0e2b", "8448cd77")
        assert e.binding.dp_overlap is (e.binding.dp == "restart" and old_allocator), e.name
    assert va.VERSIONS["main-2026-08"].binding.dp_overlap


def test_every_entry_says_where_its_schema_comes_from() -> None:
    from ascendtune.core.vllm_ascend.schemas import schema_source
    from ascendtune.core.vllm_config import extracted

    for e in va.ENTRIES:
        borrowed = e.table()
        if extracted.has(e.name):
            # a release: its keys come from its own source (config_schemas/), its rules from
            # the table it names unless that table was written for a newer release
            assert e.config.name == e.name and "keys read from its source" in e.config.source
            assert schema_source(e).startswith("read from the release's source")
        elif e.table_note:
            assert borrowed.name != e.name and borrowed.name in e.table_note
            assert e.config.name == e.name and e.table_note in e.config.source
        else:
            assert e.config is borrowed and borrowed.name == e.name
    assert va.get("v0.18.0").table().name == "v0.23.0"  # none below: the oldest table
    assert va.get("v0.30.0rc2").table().name == "main-2026-09"  # the nearest below


def test_spans_name_runs_of_entries() -> None:
    names = ["v0.9.1rc1", "v0.9.1rc2", "v0.9.1rc3", "main-2026-08", "v0.23.0"]
    assert va.spans(names) == "v0.9.1rc1 to v0.9.1rc3, v0.23.0, main-2026-08"


# --- resolution ----------------------------------------------------------------------------------

RESOLUTION = [
    # text, entry, exact, words in the inference
    ("0.18.0", "v0.18.0", True, ""),
    ("0.23.0.post1", "v0.23.0.post1", True, ""),
    ("0.9.1rc1", "v0.9.1rc1", True, ""),
    ("0.18.0+cust.7", "v0.18.0", True, "a local build of 0.18.0"),
    ("0.26.0rc2", "v0.26.0rc1", False, "nearest release below it, v0.26.0rc1"),
    ("0.24.0", "v0.24.0rc1", False, "nearest release below it, v0.24.0rc1"),
    ("0.23.0.post2", "v0.23.0.post1", False, "nearest release below"),
    ("0.25.2.dev3+gabc1234", "v0.25.1rc1", False, "a development build"),
    # a dev build precedes its version: 0.24.0rc1.dev3 is older than 0.24.0rc1
    ("0.24.0rc1.dev3+gabc", "v0.23.0.post1", False, "a development build"),
    ("0.13.5", "v0.13.0", False, "nearest release below it, v0.13.0"),
    ("0.8.5", "v0.9.1rc1", False, "older than every known release"),
    ("0.31.0", "v0.30.0rc2", False, "newer than every known release"),
    ("1.0.0rc1", "v0.30.0rc2", False, "newer than every known release"),
    ("0.27.2rc1.dev40+g182b75ea84", "main-2026-08", True, "main 182b75ea"),
]


@pytest.mark.parametrize("text, name, exact, words", RESOLUTION)
def test_resolution(text: str, name: str, exact: bool, words: str) -> None:
    got = va.package_version(text)
    assert got is not None and (got.entry.name, got.exact) == (name, exact)
    assert words in got.how and (got.how == "") is (exact and not words)


@pytest.mark.parametrize("text", ["", "main", "0.x", "latest"])
def test_not_a_version(text: str) -> None:
    assert va.package_version(text) is None


@pytest.mark.parametrize(
    "smaller, larger",
    [
        ("0.9.1rc1", "0.9.1rc2"),
        ("0.9.1rc3", "0.9.1"),
        ("0.23.0", "0.23.0.post1"),
        ("0.23.0.post1", "0.24.0rc1"),
        ("0.25.2.dev3", "0.25.2"),
        ("0.25.2.dev3", "0.25.2rc1"),
        ("0.25.2a1", "0.25.2b1"),
        ("0.13.0rc3", "0.13.0"),
        ("0.9.2rc1", "0.10.0rc1"),
        ("1.0", "1.0.post0.dev1"),
    ],
)
def test_pep440_order(smaller: str, larger: str) -> None:
    a, b = pep440.parse(smaller), pep440.parse(larger)
    assert a is not None and b is not None and a.key < b.key


def test_pep440_trailing_zeros_do_not_count() -> None:
    a, b = pep440.parse("0.18"), pep440.parse("v0.18.0")
    assert a is not None and b is not None and a.key == b.key


@pytest.mark.parametrize("text", ["v0.18.0", "0.18.0", "main-2026-09", "0.30.0rc2"])
def test_target_takes_names_and_package_versions(text: str) -> None:
    assert va.get(text).name in (text, f"v{text}")


@pytest.mark.parametrize("text", ["0.26.0rc2", "v9", "latest", "0.18"])
def test_unknown_target_points_to_the_list(text: str) -> None:
    with pytest.raises(UsageError) as e:
        va.get(text)
    assert "explain versions" in str(e.value.hint) and len(str(e.value.hint)) < 200


# --- plan on every implementation ------------------------------------------------------------------

ONE_PER_IMPL = [
    next(e.name for e in va.ENTRIES if e.binding.impl == impl)
    for impl in dict.fromkeys(e.binding.impl for e in va.ENTRIES)
]


def run(*args: str) -> tuple[int, str, str]:
    r = CLI(*args, width=100)
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("name", ONE_PER_IMPL)
def test_plan_runs_on_one_release_per_implementation(name: str) -> None:
    code, out, err = run("plan", "--demo", "atlas-800i-a2", "--target", name, "--json")
    assert code == 0, err
    doc = json.loads(out)
    entry = va.get(name)
    codes = {f["code"] for f in doc["findings"]}
    assert doc["target"] == name and doc["target_reason"] == "given with --target"
    if not entry.binding.ships:
        assert "no_cpu_binding" in codes and doc["mode"] == "no_binding"
        assert all(r["binding_skipped"] and r["cpus"] == "" for r in doc["ranks"])
        assert not any("vllm_log_line" in r for r in doc["ranks"])
    else:
        # a rank the release skips (rank 0 on the NUMA-split lines: NPU 0 shows no node) has none
        assert all(r["cpus"] or r["binding_skipped"] for r in doc["ranks"])
        assert any(r["cpus"] for r in doc["ranks"])
        assert ("cpu_binding_off_by_default" in codes) is (not entry.binding.on_by_default)


def test_no_binding_says_so_in_words() -> None:
    code, out, _ = run("plan", "--demo", "atlas-800i-a2", "--target", "v0.10.0rc1")
    assert code == 0 and "ships no CPU binding" in out


def test_off_by_default_still_shows_the_pools() -> None:
    code, out, _ = run("plan", "--demo", "atlas-800i-a2", "--target", "0.13.0")
    assert code == 0 and "enable_cpu_binding defaults to false" in out and "144-167" in out


def test_unknown_target_on_the_command_line() -> None:
    code, _, err = run("plan", "--demo", "atlas-800i-a2", "--target", "0.26.0rc2")
    assert code == 2 and "explain versions" in err and len(err.strip().splitlines()) == 1


def test_explain_versions_lists_every_entry() -> None:
    code, out, _ = run("explain", "versions", "--json")
    doc = json.loads(out)
    assert code == 0 and [v["name"] for v in doc["versions"]] == va.names()
    assert doc["newest"] == va.NEWEST.name
    row = {v["name"]: v for v in doc["versions"]}["v0.13.0"]
    assert (row["binding_impl"], row["binding_default"]) == ("280e516e", False)
    code, out, _ = run("explain", "versions")
    assert code == 0 and "v0.10.0rc1" in out and "none" in out and "280e516e" in out


# --- the releases' own files, when their source distributions are at hand ------------------------


def _blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's object id


# one release per cpu_binding.py (each tarball costs about a second); every release with
# ASCENDTUNE_ALL_RELEASES=1
CHECKED = [
    e
    for e in va.ENTRIES
    if e.is_release
    and (
        os.environ.get("ASCENDTUNE_ALL_RELEASES") == "1"
        or e is next(x for x in va.ENTRIES if x.binding.impl == e.binding.impl and x.is_release)
    )
]


@pytest.mark.skipif(not SDISTS.is_dir(), reason=f"no source distributions in {SDISTS}")
@pytest.mark.parametrize("entry", CHECKED, ids=lambda e: e.name)
def test_the_release_source_has_the_recorded_binding(entry: va.VllmAscendVersion) -> None:
    pkg = entry.package_versions[0]
    path = SDISTS / f"vllm_ascend-{pkg}.tar.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not downloaded")
    files: dict[str, bytes] = {}
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            rel = m.name.split("/", 1)[-1]
            if m.isfile() and re.fullmatch(
                r"vllm_ascend/(cpu_binding|ascend_config|worker/worker(_v1)?)\.py|Dockerfile", rel
            ):
                got = tar.extractfile(m)
                assert got is not None
                files[rel] = got.read()
    binding = files.get("vllm_ascend/cpu_binding.py")
    assert (binding and _blob(binding)[:8]) == (entry.binding.impl or None)
    assert f"VLLM_TAG={entry.vllm}".encode() in files["Dockerfile"]
    if binding is None:
        return
    [worker] = [v for k, v in files.items() if "/worker/" in k and b"bind_cpus(" in v]
    for arg in ("ratio=1.0", "npu_id=", "migrate_memory="):
        assert (arg.encode() in worker) is (arg in entry.binding.call), arg
    # the method that calls it: the last `def` before the call
    call = re.search(rb"bind_cpus\(\s*self\.local_rank", worker)
    assert call is not None
    before = worker[: call.start()]
    method = re.findall(rb"\n    def (\w+)", before)[-1].decode()
    assert method == RUNS_IN[entry.binding.runs]
    default = re.search(
        rb"enable_cpu_binding\W+(?:bool\s*=\s*)?(True|False)", files["vllm_ascend/ascend_config.py"]
    )
    assert default is not None and (default.group(1) == b"True") is entry.binding.on_by_default


@pytest.mark.parametrize(
    "installed, target, inferred",
    [("0.24.0", "v0.24.0rc1", True), ("0.18.0", "v0.18.0", False), ("0.31.0", "v0.30.0rc2", True)],
)
def test_auto_on_a_host_says_what_it_inferred(
    tmp_path: Path, installed: str, target: str, inferred: bool
) -> None:
    from tests.support.fleethosts import demo_copy

    root = demo_copy(tmp_path / "host", "h", demo="container-a2-half")
    meta = root / f"usr/local/lib/python3.11/site-packages/vllm_ascend-{installed}.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Name: vllm_ascend\nVersion: {installed}\n")
    code, out, err = run("plan", "--sysroot", str(root), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"] == target and f"vllm_ascend {installed} found" in doc["target_reason"]
    [*found] = [f for f in doc["findings"] if f["code"] == "target_inferred"]
    assert bool(found) is inferred
    if inferred:
        assert found[0]["message"].endswith(target) and "release" in doc["target_reason"]


def test_readme_version_list_is_current() -> None:
    from scripts import gen_versions

    assert gen_versions.main(["--check"]) == 0, "run python scripts/gen_versions.py"
    assert "| v0.11.0rc1 … v0.13.0 | `280e516e` | off | worker start |" in gen_versions.section()


def test_explain_binding_of_a_release_without_binding_says_so() -> None:
    code, _, err = run("explain", "binding", "--demo", "atlas-800i-a2", "--target", "v0.11.0rc0")
    assert code == 2 and "ships no CPU binding" in err
