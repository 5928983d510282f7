"""Add a vLLM-Ascend release in one command: fetch it, read its config schema, compare it with
the release before, identify its CPU binding, and print the draft of its registry entry.

    python -m scripts.add_release 0.31.0rc1            # writes the schema file, prints the rest
    python -m scripts.add_release 0.30.0rc2 --dry-run  # writes nothing

Steps: the sdist from pip's index (scripts/releases.py: cached, sha256-checked); its schema
(scripts/extract_schema.py: ast only, written to ascendtune/core/vllm_ascend/config_schemas/); the keys
added, removed and whose default or type changed since the newest release below it that has a
schema file; the git blob id of its vllm_ascend/cpu_binding.py, named as the known implementation
it equals or flagged as new; the worker's call of bind_cpus; then the differential tier for that
version when this checkout has one (else the command to run it). Nothing from the release is
copied into the repository: the schema file holds names, types and defaults only.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scripts import extract_schema, releases

TOP = Path(__file__).resolve().parents[1]

# git blob ids of vllm_ascend/cpu_binding.py among releases (issue 23; VLLM_ASCEND_VERSIONS.md
# section 0), each with the releases that ship it. Reproduce with `git hash-object`.
KNOWN_BINDINGS: dict[str, str] = {
    "2cb1e84a": "0.9.1rc2-0.9.1 (NUMA split from PCI, whole process bound, ratio=1.0)",
    "280e516e": "0.11.0rc1-0.13.0 (the 0.9.1 algorithm, one line re-wrapped)",
    "062ff4f9": "0.14.0rc1 (topo-affinity pools, roles main/acl/release, no IRQ CPUs)",
    "c09e740a": "0.15.0rc1 (IRQ CPUs reserved)",
    "abb80aa1": "0.16.0rc1-0.18.0rc1 (named modes, global slicing for A3)",
    "10967e04": "0.18.0",
    "2d5ba9ec": "0.19.1rc1-0.20.2rc1 (the hidden-NPU rule)",
    "7b815e31": "0.21.0rc1",
    "5a947c7b": "0.22.1rc1",
    "0cbc0e2b": "0.23.0rc1-0.25.1rc1, 0.23.0.post1 (SPEC section 5)",
    "8448cd77": "main 182b75ea (the /proc/irq warning)",
    "cc55125b": "0.26.0rc1 (bind_cpus(rank, npu_id))",
    "daab93aa": "0.27.1rc1-0.29.0rc1 (hardware_profile.py)",
    "7ed2022f": "0.30.0rc1-0.30.0rc2 (migrate_memory optional)",
}
# the differential (reference) tier: each distinct cpu_binding.py is one Impl in its harness
REFERENCE = TOP / "tests" / "reference"


def known_binding(blob: str) -> str | None:
    return next((what for prefix, what in KNOWN_BINDINGS.items() if blob.startswith(prefix)), None)


def diff_schemas(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[str]]:
    """Keys added, removed, and whose default, type or unknown-key policy changed."""
    from ascendtune.core.vllm_config.extracted import entries

    a, b = dict(entries(old["keys"])), dict(entries(new["keys"]))
    out: dict[str, list[str]] = {"added": [], "removed": [], "changed": []}
    for path in b:
        if path not in a:
            e = b[path]
            what = e["type"] + (f", default {_show(e['default'])}" if "default" in e else "")
            if "default" in e.get("unknown", []):
                what += ", default unknown"
            out["added"].append(f"{path} ({what})")
    out["removed"] = [p for p in a if p not in b]
    for path in (p for p in b if p in a):
        x, y = a[path], b[path]
        if x["type"] != y["type"]:
            out["changed"].append(f"{path}: type {x['type']} -> {y['type']}")
        if ("default" in x or "default" in y) and x.get("default") != y.get("default"):
            before = _show(x["default"]) if "default" in x else "unknown"
            after = _show(y["default"]) if "default" in y else "unknown"
            out["changed"].append(f"{path}: default {before} -> {after}")
        if x.get("unknown_keys") != y.get("unknown_keys"):
            out["changed"].append(
                f"{path}: unknown keys {x.get('unknown_keys')} -> {y.get('unknown_keys')}"
            )
    for field in ("style", "unknown_keys", "unknown_keys_exception"):
        if old.get(field) != new.get(field):
            out["changed"].append(f"(top level) {field}: {old.get(field)} -> {new.get(field)}")
    return out


def _show(v: Any) -> str:
    import json

    return json.dumps(v, ensure_ascii=False)


def worker_calls(files: Mapping[str, bytes]) -> list[str]:
    """How the worker calls bind_cpus (the source of each call, with its file)."""
    out = []
    for rel, data in sorted(files.items()):
        if not rel.startswith("vllm_ascend/worker/") or not rel.endswith(".py"):
            continue
        try:
            tree = ast.parse(data)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and extract_schema._name(node.func) == "bind_cpus":
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def previous_release(version: str) -> str | None:
    from ascendtune.core.vllm_config import extracted

    k = extracted.release_key(version)
    below = [r for r in extracted.available() if extracted.release_key(r) < k]
    return below[-1] if below else None


def differential(blob: str | None) -> tuple[str, list[str] | None]:
    """The reference-tier run for this release's implementation (shown, and the command to run,
    None when there is nothing to run yet)."""
    if blob is None:
        return "nothing to run: the release ships no cpu_binding.py", None
    harness = REFERENCE / "harness.py"
    if not harness.is_file():
        return "no reference tier in this checkout (tests/reference)", None
    modelled = set(re.findall(r'Impl\(\s*"([0-9a-f]{8})"', harness.read_text()))
    if blob[:8] not in modelled:
        return (
            f"implementation {blob[:8]} is not in tests/reference/harness.py IMPLS yet: add it "
            f"(with how the worker calls bind_cpus), model it in the planner, then run "
            f"python3 -m pytest -m reference tests/reference -k {blob[:8]}",
            None,
        )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "reference",
        "tests/reference",
        "-k",
        blob[:8],
    ]
    return "python3 " + " ".join(cmd[1:]), cmd


def draft(
    version: str,
    sdist: releases.Sdist,
    doc: Mapping[str, Any],
    blob: str | None,
    calls: Sequence[str],
    prev: str | None,
) -> list[str]:
    from ascendtune.core.vllm_config.extracted import entries

    keys = dict(entries(doc["keys"]))
    cpu = keys.get("enable_cpu_binding", {})
    binding = (
        "none (no vllm_ascend/cpu_binding.py)"
        if blob is None
        else f"{blob[:8]} = {known_binding(blob)}"
        if known_binding(blob)
        else f"{blob[:8]}: NEW implementation (model it, then run the differential tier)"
    )
    return [
        f"v{version}:",
        f"  sdist: {sdist.filename} sha256 {sdist.sha256}",
        f"  config schema: ascendtune/core/vllm_ascend/config_schemas/{version}.json "
        f"({doc['style']} AscendConfig; unknown top-level keys {doc['unknown_keys']}"
        + (
            f", except with {doc['unknown_keys_exception']}"
            if doc.get("unknown_keys_exception")
            else ""
        )
        + ")",
        f"  binding: {binding}",
        "  enable_cpu_binding default: "
        + (_show(cpu["default"]) if "default" in cpu else "unknown" if cpu else "no such key"),
        "  worker call: " + ("; ".join(calls) if calls else "none found"),
        f"  compared with: v{prev}" if prev else "  compared with: (no older schema file)",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m scripts.add_release", description=__doc__.split("\n")[0]
    )
    ap.add_argument("version")
    ap.add_argument("--dry-run", action="store_true", help="write no schema file")
    ap.add_argument("--no-tests", action="store_true", help="do not run the differential tier")
    args = ap.parse_args(argv)
    version = args.version.removeprefix("v")
    try:
        sdist, path = releases.fetch_version(version)
        files = releases.read_members(path)
    except releases.ReleaseError as e:
        print(f"add_release: {e}", file=sys.stderr)
        return 1
    doc = extract_schema.document(sdist.version, sdist.filename, releases.sha256_of(path), files)
    if not args.dry_run:
        out = extract_schema.schema_path(version)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(extract_schema.render(doc))
        tmp.replace(out)
        print(f"wrote {out.relative_to(TOP)}")
    prev = previous_release(version)
    binding_src = files.get("vllm_ascend/cpu_binding.py")
    blob = releases.blob_id(binding_src) if binding_src is not None else None
    print()
    print("draft registry entry:")
    for line in draft(version, sdist, doc, blob, worker_calls(files), prev):
        print(line)
    if prev is not None:
        from ascendtune.core.vllm_config import extracted

        changes = diff_schemas(extracted.load(prev), doc)
        print()
        print(f"config keys since v{prev}:")
        for what in ("added", "removed", "changed"):
            for line in changes[what]:
                print(f"  {what}: {line}")
        if not any(changes.values()):
            print("  no change")
    shown, cmd = differential(blob)
    print()
    print(f"differential tier: {shown}")
    if cmd is not None and not args.no_tests:
        res = subprocess.run(cmd, cwd=TOP, timeout=3600, check=False)
        return res.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
