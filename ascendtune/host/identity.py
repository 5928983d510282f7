"""Which host a document was made for: hostname, a digest of its machine-id and boot-id, and
whether it was read live, from a sysroot or from a demo. `bind --plan` compares the identity a
plan carries with this host's, so a plan of another host is not applied here by mistake."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hashlib import sha256
else:  # the built-in SHA-256: hashlib would load OpenSSL (~2 ms) for a digest of a few bytes
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:  # a Python built without it
            from hashlib import sha256

from ascendtune.host.roots import Root

MACHINE_ID = "etc/machine-id"
BOOT_ID = "proc/sys/kernel/random/boot_id"
IDENTITY_PATHS = (MACHINE_ID, BOOT_ID)


def _digest(text: str | None) -> str | None:
    value = (text or "").strip()
    if not value:
        return None
    # a digest, not the id: a plan file travels, and machine-id is meant to stay private
    return sha256(value.encode()).hexdigest()[:16]


def machine_id_digest(text: str | None) -> str | None:
    """What documents and snapshots carry of /etc/machine-id: a digest, never the id."""
    return _digest(text)


def _meta_str(root: Root, key: str) -> str | None:
    text = root.read_text("meta.json")
    try:
        meta = json.loads(text) if text else None
    except (ValueError, RecursionError):  # the reader reports a bad meta.json; a name is optional
        return None
    value = meta.get(key) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def _machine_id_sha256(root: Root) -> str | None:
    digest = _digest(root.read_text(MACHINE_ID))
    if digest is None and not root.live:
        # a snapshot keeps only the digest, in its meta.json (`snapshot` never writes the id)
        digest = _meta_str(root, "machine_id_sha256")
    return digest


def live_hostname() -> str:
    """This host's name: the kernel's nodename, which is what socket.gethostname() returns on
    Linux (glibc's gethostname reads uname's), without socket's import (about 2 ms of a bind's
    start-up)."""
    return os.uname().nodename


def host_identity(root: Root) -> dict[str, Any]:
    label = root.describe()
    if root.live:
        source = "live"
        hostname: str | None = live_hostname()
    else:
        source = "demo" if label.startswith("demo:") else "sysroot"
        hostname = _meta_str(root, "hostname")
    return {
        "source": source,
        "root": label,
        "hostname": hostname,
        "machine_id_sha256": _machine_id_sha256(root),
        "boot_id_sha256": _digest(root.read_text(BOOT_ID)),
    }


def same_host(plan_id: dict[str, Any], here: dict[str, Any]) -> tuple[bool, str]:
    """Whether a plan's identity names this host, and in words why not."""
    if plan_id.get("source") != "live":
        where = str(plan_id.get("root") or plan_id.get("source"))
        # "demo demo:x" says the source twice: the demo's name, or the sysroot's path
        said = (
            f"the demo {where.removeprefix('demo:')}"
            if plan_id.get("source") == "demo"
            else f"the {plan_id.get('source')} {where}"
        )
        return False, f"it was computed from {said}, not from a live host"
    for key, what in (("machine_id_sha256", "machine-id"), ("hostname", "hostname")):
        theirs, ours = plan_id.get(key), here.get(key)
        if theirs and ours and theirs != ours:
            return False, f"its {what} differs from this host's ({plan_id.get('hostname')})"
    return True, ""
