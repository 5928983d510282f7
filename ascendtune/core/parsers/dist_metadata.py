"""Parse a Python distribution's `*.dist-info/METADATA` (RFC 822 style headers) for its name
and version: how ascendtune learns which vLLM-Ascend a server imports."""

from __future__ import annotations

from typing import NamedTuple


class DistMetadata(NamedTuple):
    name: str | None
    version: str | None


def parse_metadata(text: str) -> DistMetadata:
    """`Name:` and `Version:` from the header block (it ends at the first blank line)."""
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if not sep:
            continue
        k = key.strip().lower()
        if k == "name" and name is None:
            name = value.strip() or None
        elif k == "version" and version is None:
            version = value.strip() or None
    return DistMetadata(name, version)


def dist_info_version(dirname: str, project: str) -> str | None:
    """The version in a dist-info folder name: `vllm_ascend-0.25.1rc1.dist-info` → 0.25.1rc1."""
    if not dirname.endswith(".dist-info"):
        return None
    stem = dirname[: -len(".dist-info")]
    name, sep, version = stem.partition("-")
    if not sep or name.replace("-", "_").lower() != project:
        return None
    return version or None
