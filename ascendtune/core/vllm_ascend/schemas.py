"""Where a registry entry's additional-config schema comes from: the one seam between the registry
and the schema data.

Today every schema is a hand table (ascendtune.core.vllm_ascend.tables), named by the entry; an
entry without a table of its own borrows the nearest one and says so in its `table_note`. Schemas
extracted from each release's source (one data file per release) plug in here: `config_of` is the
only function that decides, and every command reads schemas through `VllmAscendVersion.config`.
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
        got = _CACHE[entry.name] = _from_table(entry)
    return got


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
    return entry.table_note or "hand table read from this version"
