"""Capture everything the tool reads from a host into a sysroot (folder or .tar.gz).

The paths are those of SPEC.md section 2 plus what `doctor` reads; commands are run on a live
host and their output stored under commands/, so `--sysroot DIR` replays the host.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ascendtune import __version__
from ascendtune.core import vendors
from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.core.model import Soc
from ascendtune.core.redact import redact_args
from ascendtune.host import pci, reader
from ascendtune.host.sysroot import MemRoot, Root, command_file, error_file

TOOLS = (
    *(t for p in vendors.profiles() for t in p.tools),
    "numactl",
    "migratepages",
    "taskset",
    "lscpu",
    "irqbalance",
)
ENV_KEYS = ("LC_MESSAGES", "LANG", "LC_ALL", "CPU_AFFINITY_CONF", "OMP_PROC_BIND")


def env_keys() -> tuple[str, ...]:
    """The variables a snapshot records: ENV_KEYS and every vendor's visible-devices variable."""
    return ENV_KEYS[:3] + tuple(p.visible_devices_env for p in vendors.profiles()) + ENV_KEYS[3:]


@dataclass
class Capture:
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def take(self, root: Root, rel: str) -> None:
        text = root.read_text(rel)
        if text is None:
            self.missing.append(rel)
        else:
            self.files[rel] = text

    def take_link(self, root: Root, rel: str) -> None:
        target = root.readlink(rel)
        if target is not None:
            self.links[rel] = target


def host_paths(root: Root) -> list[str]:
    """Every file the host reader looks at on this root."""
    cpu = reader.CPU_DIR
    paths = ["proc/self/status", f"{cpu}/online", f"{cpu}/possible", f"{cpu}/present"]
    for entry in root.listdir(cpu) or []:
        if re.fullmatch(r"cpu\d+", entry):
            base = f"{cpu}/{entry}"
            paths += [
                f"{base}/topology/physical_package_id",
                f"{base}/topology/core_id",
                f"{base}/topology/thread_siblings_list",
                f"{base}/online",
            ]
            for idx in root.listdir(f"{base}/cache") or []:
                if re.fullmatch(r"index\d+", idx):
                    paths += [
                        f"{base}/cache/{idx}/{n}" for n in ("type", "level", "shared_cpu_list")
                    ]
    for entry in root.listdir(reader.NODE_DIR) or []:
        if re.fullmatch(r"node\d+", entry):
            paths += [f"{reader.NODE_DIR}/{entry}/cpulist", f"{reader.NODE_DIR}/{entry}/meminfo"]
    for bdf in root.listdir(pci.PCI_DIR) or []:
        base = f"{pci.PCI_DIR}/{bdf}/"
        vendor = (root.read_text(base + "vendor") or "").strip().lower()
        if vendors.by_pci_vendor(vendor) is not None:
            paths += [base + n for n in ("vendor", "device", "class", "numa_node", "local_cpulist")]
    return paths


def capture(root: Root) -> Capture:
    cap = Capture()
    from ascendtune.host.identity import IDENTITY_PATHS

    for rel in (*host_paths(root), *IDENTITY_PATHS):
        cap.take(root, rel)
    cap.missing = [
        m for m in cap.missing if not m.endswith(("/online", "/class", "/possible", "/present"))
    ]
    for bdf in root.listdir(pci.PCI_DIR) or []:
        if f"{pci.PCI_DIR}/{bdf}/vendor" in cap.files:
            cap.take_link(root, f"{pci.PCI_DIR}/{bdf}/driver")
    hung: set[str] = set()
    for command in (c for p in vendors.profiles() for c in p.commands):
        argv = list(command.argv)
        if command.tool in hung:
            continue
        out = root.command(argv, command.fallbacks)
        if out is None:
            continue
        if out.ok:
            cap.files[command_file(argv)] = out.text
        else:
            # a failure replays as a failure (commands/<name>.err), never as output to parse
            cap.files[error_file(argv)] = (out.error or "failed").splitlines()[0] + "\n"
            if out.timed_out:
                hung.add(argv[0])
    for rel in (d for p in vendors.profiles() for d in p.documents):
        doc = reader.read_document(root, rel) if root.live else None
        if doc is not None:
            cap.files[rel] = json.dumps(doc, indent=2, sort_keys=True) + "\n"
        elif not root.live:
            cap.take(root, rel)
            cap.missing = [m for m in cap.missing if m != rel]
    from ascendtune.host import facts

    try:
        # read what was just captured: on a live host this does not run npu-smi again
        host = reader.read_host(MemRoot(dict(cap.files), dict(cap.links)))
    except Exception:  # a host the reader refuses is still worth capturing for a bug report
        host = None
    for rel in facts.doctor_paths(root, host):
        if rel in cap.files or rel in cap.links:
            continue
        if "/fd/" in rel:
            cap.take_link(root, rel)
        else:
            text = root.read_text(rel)
            if text is not None:
                cap.files[rel] = redact_cmdline(text) if rel.endswith("/cmdline") else text
    meta = _meta(root)
    if root.live and host is not None and host.npus and host.soc is Soc.UNKNOWN:
        # names do not tell the family: keep torch_npu's answer so the replay plans the same
        from ascendtune.host.socinfo import runtime_soc

        soc = runtime_soc()
        if soc is not None:
            meta["soc_runtime"] = soc.value
    cap.files["meta.json"] = json.dumps(meta, indent=2, sort_keys=True) + "\n"
    return cap


def _meta(root: Root) -> dict[str, object]:
    if not root.live:
        old = reader.read_meta(root)
        return {**old, "resnapshot_by": f"ascendtune {__version__}"}
    import platform
    import socket

    from ascendtune.host import facts, runner

    return {
        "hostname": socket.gethostname(),
        "arch": platform.machine(),
        "kernel": platform.release(),
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "captured_by": f"ascendtune {__version__}",
        "tools": {**{t: runner.which(t) for t in TOOLS}, **(facts.tools_of(root, {}) or {})},
        "env": {k: os.environ[k] for k in env_keys() if k in os.environ},
        "uid": os.getuid(),
        # doctor_paths() was captured: a process absent here was absent on the host
        "proc_scanned": True,
    }


def redact_cmdline(raw: str) -> str:
    """Mask values of secret-looking flags (`--api-key X`, `--hf-token=X`) in a NUL-separated cmdline."""
    return "\0".join(redact_args(raw.split("\0")))


def is_archive(dest: str) -> bool:
    return dest.endswith((".tar.gz", ".tgz", ".tar"))


def write(cap: Capture, dest: str) -> Path:
    """Write a capture as a folder, or as a tar archive when dest ends in .tar.gz/.tgz/.tar."""
    path = Path(dest)
    try:
        if is_archive(dest):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive_bytes(cap, gzip=not dest.endswith(".tar")))
            return path
        if path.exists() and any(path.iterdir()):
            raise InvalidInput(
                f"{dest} exists and is not empty", "give a new folder, or DIR.tar.gz"
            )
        for rel, text in sorted(cap.files.items()):
            p = path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        for rel, target in sorted(cap.links.items()):
            p = path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.is_symlink():
                p.symlink_to(target)
    except PermissionError as e:
        raise PermissionDenied(f"cannot write {e.filename or dest}: permission denied") from None
    except FileNotFoundError as e:
        raise MissingError(f"cannot write {e.filename or dest}: no such folder") from None
    except OSError as e:  # a file where a folder should be, a full disk, a read-only mount
        raise InvalidInput(f"cannot write {e.filename or dest}: {e.strerror or e}") from None
    return path


def archive_bytes(cap: Capture, *, gzip: bool = True) -> bytes:
    """A deterministic tar (sorted members, mtime 0, root-owned) of the capture."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(set(cap.files) | set(cap.links)):
            info = tarfile.TarInfo(rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            if rel in cap.links:
                info.type = tarfile.SYMTYPE
                info.linkname = cap.links[rel]
                tar.addfile(info)
            else:
                data = cap.files[rel].encode()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    if not gzip:
        return raw.getvalue()
    import gzip as gz

    return gz.compress(raw.getvalue(), mtime=0)
