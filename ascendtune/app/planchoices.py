"""What plan options accept, light enough for option help and completion: the policy names (from
core.policies, the registry's own list), auto and compare, the SoC families, device lists."""

from __future__ import annotations

from ascendtune.core.cpulist import parse_int_list
from ascendtune.core.errors import InvalidInput
from ascendtune.core.policies import POLICY_NAMES

AUTO = "auto"  # vllm-ascend on Ascend hosts (what will happen), numa-local on GPU hosts
COMPARE = "compare"
SOC_NAMES = ("A2", "A3", "310P", "A5", "910")


def policy_choices(*, compare: bool = False) -> tuple[str, ...]:
    """What `--policy` accepts, from the registry."""
    return (AUTO, *POLICY_NAMES, *((COMPARE,) if compare else ()))


def visible_list(text: str, source: str) -> tuple[int, ...]:
    """A device list in the order given; UUIDs and repeated ids are refused with a reason."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if any(x.upper().startswith(("GPU-", "MIG-")) for x in items):
        raise InvalidInput(
            f"{source} names devices by UUID ({items[0]}); ascendtune plans by index",
            "give --visible-devices with the indices nvidia-smi prints",
        )
    ids = parse_int_list(text, source=source)
    if len(ids) != len(items) and "-" not in text:
        raise InvalidInput(f"{source} {text} names a device twice")
    return ids
