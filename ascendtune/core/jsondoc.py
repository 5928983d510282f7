"""The version every `--json` document carries, and the one function that stamps it on a
document (the CLI's printer, `ascendtune.api` and `fleet`'s node reports all call it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# goes up on a breaking change (a key removed, or given another type or meaning), not when a
# key is added; a key renamed keeps its old name beside the new one for one version
SCHEMA_VERSION = 1


def versioned(body: Mapping[str, Any]) -> dict[str, Any]:
    """body as printed: `schema_version` first, then its own keys in their order."""
    return {"schema_version": SCHEMA_VERSION, **body}
