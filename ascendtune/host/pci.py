"""Accelerators on the PCI bus: from sysfs files under a root, or from pyudev on a live host.

Both return the same PciDevice tuples for the same host, so the reader does not care which ran.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ascendtune.core import vendors
from ascendtune.core.cpulist import parse_cpulist
from ascendtune.core.errors import ParseError
from ascendtune.core.model import PciDevice
from ascendtune.host.roots import Root

PCI_DIR = "sys/bus/pci/devices"


def is_accelerator(vendor: str, device: str, pci_class: str | None) -> bool:
    """A device of a registered vendor that its profile calls an accelerator (by class, or by
    device id where a captured sysroot has no `class` file)."""
    p = vendors.by_pci_vendor(vendor)
    return p is not None and p.is_accelerator(device, pci_class)


def _numa(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        v = int(text.strip())
    except ValueError:
        return None
    return v if v >= 0 else None


def _cpus(text: str | None, source: str) -> frozenset[int]:
    if text is None:
        return frozenset()
    try:
        return parse_cpulist(text, source=source)
    except ParseError:
        return frozenset()


def pci_from_sysfs(root: Root) -> tuple[PciDevice, ...]:
    out: list[PciDevice] = []
    for bdf in root.listdir(PCI_DIR) or []:
        base = f"{PCI_DIR}/{bdf}/"
        vendor = (root.read_text(base + "vendor") or "").strip()
        device = (root.read_text(base + "device") or "").strip()
        pci_class = root.read_text(base + "class")
        if not is_accelerator(vendor, device, pci_class.strip() if pci_class else None):
            continue
        link = root.readlink(base + "driver")
        out.append(
            PciDevice(
                bus_id=bdf.lower(),
                vendor_id=vendor.lower(),
                device_id=device.lower(),
                numa_node=_numa(root.read_text(base + "numa_node")),
                local_cpus=_cpus(root.read_text(base + "local_cpulist"), base + "local_cpulist"),
                driver=link.rsplit("/", 1)[-1] if link else None,
            )
        )
    return tuple(sorted(out, key=lambda d: d.bus_id))


def pci_from_udev(context: Any) -> tuple[PciDevice, ...]:
    """The same facts from pyudev; `context` is a pyudev.Context (passed in, so tests can fake it)."""
    out: list[PciDevice] = []
    devices: Iterable[Any] = context.list_devices(subsystem="pci")
    for dev in devices:
        attrs = dev.attributes

        def attr(name: str, _attrs: Any = attrs) -> str | None:
            try:
                raw = _attrs.get(name)
            except (KeyError, OSError):
                return None
            if raw is None:
                return None
            return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)

        vendor = (attr("vendor") or "").strip()
        device = (attr("device") or "").strip()
        pci_class = attr("class")
        if not is_accelerator(vendor, device, pci_class.strip() if pci_class else None):
            continue
        nodes = sorted({c.device_node for c in dev.children if getattr(c, "device_node", None)})
        out.append(
            PciDevice(
                bus_id=str(dev.sys_name).lower(),
                vendor_id=vendor.lower(),
                device_id=device.lower(),
                numa_node=_numa(attr("numa_node")),
                local_cpus=_cpus(attr("local_cpulist"), f"udev {dev.sys_name} local_cpulist"),
                driver=dev.driver,
                device_nodes=tuple(nodes),
            )
        )
    return tuple(sorted(out, key=lambda d: d.bus_id))


def live_pci() -> tuple[PciDevice, ...] | None:
    """pyudev's view of this host, or None when pyudev (or libudev) is unavailable."""
    try:
        import pyudev
    except ImportError:
        return None
    try:
        return pci_from_udev(pyudev.Context())
    except Exception:  # libudev missing or broken: fall back to sysfs
        return None
