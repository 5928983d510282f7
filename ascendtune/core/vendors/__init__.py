"""One home per accelerator vendor: a VendorProfile each, in a registry keyed by Vendor.

Adding a vendor is a member of `Vendor` (core/model.py), a module beside ascend.py and
nvidia.py building its VendorProfile, and one entry in `_BUILTIN` below: the host reader,
the PCI filter, worker discovery, the planner and doctor ask the registry, never a vendor by name.
"""

from __future__ import annotations

from ascendtune.core.model import Host, Vendor
from ascendtune.core.vendors.ascend import ASCEND
from ascendtune.core.vendors.base import (
    PCIE_LINKS,
    Command,
    LinkCode,
    ToolCheck,
    VendorInput,
    VendorProfile,
    VendorReading,
    links_json,
    single_node,
)
from ascendtune.core.vendors.nvidia import NVIDIA

__all__ = [
    "ASCEND",
    "NVIDIA",
    "PCIE_LINKS",
    "Command",
    "LinkCode",
    "ToolCheck",
    "VendorInput",
    "VendorProfile",
    "VendorReading",
    "by_device_file",
    "by_pci_vendor",
    "links_json",
    "profile",
    "profiles",
    "register",
    "single_node",
    "unregister",
    "vendor_of",
]

# Order matters where vendors meet on one host: the first one with devices is the host's.
_BUILTIN: tuple[VendorProfile, ...] = (ASCEND, NVIDIA)
_REGISTRY: dict[Vendor, VendorProfile] = {p.vendor: p for p in _BUILTIN}


def register(p: VendorProfile) -> None:
    """Add (or replace) a vendor's profile; a new vendor goes last."""
    _REGISTRY[p.vendor] = p


def unregister(vendor: Vendor) -> None:
    """Drop a vendor added by register (tests); the built-in ones come back on their own."""
    _REGISTRY.pop(vendor, None)
    for p in _BUILTIN:
        _REGISTRY.setdefault(p.vendor, p)


def profiles() -> tuple[VendorProfile, ...]:
    return tuple(_REGISTRY.values())


def profile(vendor: Vendor | str) -> VendorProfile:
    """The profile of a Vendor, or of its value as JSON documents carry it ("huawei")."""
    for p in _REGISTRY.values():
        if p.vendor is vendor or p.vendor.value == vendor:
            return p
    raise KeyError(f"no vendor profile for {vendor!r}")


def vendor_of(host: Host | None) -> VendorProfile:
    """The vendor whose devices the host holds (the first registered when several do); Ascend,
    the tool's own, when it holds none."""
    if host is not None:
        for p in _REGISTRY.values():
            if any(a.vendor is p.vendor for a in host.accelerators):
                return p
    return ASCEND


def by_pci_vendor(vendor_id: str) -> VendorProfile | None:
    vid = vendor_id.strip().lower()
    return next((p for p in _REGISTRY.values() if p.pci_vendor_id == vid), None)


def by_device_file(path: str) -> tuple[VendorProfile, int] | None:
    """(profile, N) for /dev/<device_file>N, None for anything else (control nodes included)."""
    for p in _REGISTRY.values():
        n = p.device_file_number(path)
        if n is not None:
            return p, n
    return None
