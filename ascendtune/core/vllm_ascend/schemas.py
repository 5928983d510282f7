"""Where a registry entry's additional-config schema comes from: the one seam between the registry
and the schema data.

A release with a data file (config_schemas/RELEASE.json, read from its own source by
scripts/extract_schema.py) takes its keys, types, defaults and unknown-key policy from it; the hand
table the entry names (ascendtune.core.vllm_ascend.tables: its own, or the nearest one it borrows,
said in `table_note`) adds the cross-key rules and the validation the source's shape cannot give
(ascendtune.core.vllm_config.extracted). An entry without a data file (the main snapshots) is its
hand table. `config_of` is the only function that decides, and every command reads schemas
through `VllmAscendVersion.config`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascendtune.core.vllm_ascend.registry import VllmAscendVersion
    from ascendtune.core.vllm_config.schema import Version as ConfigRules

_CACHE: dict[str, ConfigRules] = {}


def config_of(entry: VllmAscendVersion) -> ConfigRules:
    """The check-config schema of `entry`, named after it (built once per entry)."""
    got = _CACHE.get(entry.name)
    if got is None:
        got = _CACHE[entry.name] = _from_data(entry) or _from_table(entry)
    return got


def _from_data(entry: VllmAscendVersion) -> ConfigRules | None:
    """The entry's release as its own source has it, or None without a data file."""
    from ascendtune.core.vllm_config import extracted

    ver = extracted.for_entry(entry.name, entry.table(), entry.table_note)
    if ver is None:
        return None
    return dataclasses.replace(ver, source=f"{entry.source}; {ver.source}")


def _from_table(entry: VllmAscendVersion) -> ConfigRules:
    table = entry.table()
    if table.name == entry.name:
        return table
    from ascendtune.core.vllm_config.schema import drop, patch

    # what the registry read in the release itself outranks the borrowed table
    binding = entry.binding
    if not binding.ships:
        keys = drop(table.keys, "enable_cpu_binding")
    else:
        keys = patch(table.keys, {"enable_cpu_binding": {"default": binding.on_by_default}})
    return dataclasses.replace(
        table,
        name=entry.name,
        source=f"{entry.source}; {entry.table_note or table.source}",
        keys=keys,
    )


def schema_source(entry: VllmAscendVersion) -> str:
    """In words, where `entry`'s schema comes from (`explain versions`)."""
    from ascendtune.core.vllm_config import extracted

    if extracted.has(entry.name):
        return "read from the release's source" + (
            "; rules from its own hand table"
            if entry.table().name == entry.name
            else f"; rules: {entry.config.source.rsplit('; ', 1)[-1]}"
        )
    return entry.table_note or "hand table read from this version"
