"""Capture everything the tool reads from a host into a sysroot (folder or .tar.gz).

The paths are those of SPEC.md section 2 plus what `doctor` reads; commands are run on a live
host and their output stored under commands/, so `--sysroot DIR` replays the host.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ascendtune import __version__
from ascendtune.core import vendors
from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.core.model import Host, Soc
from ascendtune.core.redact import redact_cmdline, redact_env, redact_environ, redact_text
from ascendtune.host import forked, pci, reader
from ascendtune.host.roots import (
    CommandOutput,
    DirRoot,
    MemRoot,
    Root,
    command_file,
    error_file,
)

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
    # the host as read from the capture (None: the reader refused it); read once, for the
    # doctor paths and the summary (a 1,000-GPU matrix is a million cells to parse)
    host: Host | None = None
    # what that reading asked of the capture and was told (see _Asked); None: not read
    asked: dict[tuple[str, str], object] | None = None

    def take(self, root: Root, rel: str) -> None:
        text = root.read_text(rel)
        if text is None:
            self.missing.append(rel)
        else:
            self.files[rel] = redact_file(rel, text)

    def take_link(self, root: Root, rel: str) -> None:
        target = root.readlink(rel)
        if target is not None:
            self.links[rel] = target


def host_paths(root: Root, cpu_paths: list[str] | None = None) -> list[str]:
    """Every file the host reader looks at on this root (cpu_paths: its CPU folders' files,
    when already known)."""
    cpu = reader.CPU_DIR
    paths = ["proc/self/status", f"{cpu}/online", f"{cpu}/possible", f"{cpu}/present"]
    paths += _cpu_paths(root, _cpus(root)) if cpu_paths is None else cpu_paths
    for entry in root.listdir(reader.NODE_DIR) or []:
        if re.fullmatch(r"node\d+", entry):
            paths += [f"{reader.NODE_DIR}/{entry}/cpulist", f"{reader.NODE_DIR}/{entry}/meminfo"]
    for bdf in root.listdir(pci.PCI_DIR) or []:
        base = f"{pci.PCI_DIR}/{bdf}/"
        vendor = (root.read_text(base + "vendor") or "").strip().lower()
        if vendors.by_pci_vendor(vendor) is not None:
            paths += [base + n for n in ("vendor", "device", "class", "numa_node", "local_cpulist")]
    return paths


def _cpus(root: Root) -> list[str]:
    """The CPU folders (cpuN) of the root, in listing order."""
    return [e for e in root.listdir(reader.CPU_DIR) or [] if re.fullmatch(r"cpu\d+", e)]


def _cache_dir(entry: str) -> str:
    return f"{reader.CPU_DIR}/{entry}/cache"


def _cpu_paths(root: Root, entries: list[str]) -> list[str]:
    """The files host_paths reads of these CPU folders, in order (one listing each, all of
    them asked for in one call)."""
    paths: list[str] = []
    caches = root.listdirs([_cache_dir(entry) for entry in entries])
    for entry, indexes in zip(entries, caches, strict=True):
        base = f"{reader.CPU_DIR}/{entry}"
        paths += [
            f"{base}/topology/physical_package_id",
            f"{base}/topology/core_id",
            f"{base}/topology/thread_siblings_list",
            f"{base}/online",
        ]
        for idx in indexes or []:
            if re.fullmatch(r"index\d+", idx):
                paths += [f"{base}/cache/{idx}/{n}" for n in ("type", "level", "shared_cpu_list")]
    return paths


# from this many CPUs a forked child reads part of them (_read_cpus). Measured on the
# 1,024-CPU bench host (/tmp/sp/h1k): one process reads the CPU folders in 42 ms of CPU; forked,
# the parent takes 25 ms and the child 28 ms (fork, copied pages, marshal: 11 ms more in all),
# so a free second core saves about 15 ms there and 512 CPUs is about where it stops paying.
# At 8,192 CPUs (/tmp/sp/h8k, the CLI's modules loaded): 364-370 ms of CPU in one process;
# forked, 199-214 ms in the parent and 210 ms in the child (about 4,800 copy-on-write faults)
FORK_FROM_CPUS = 512
# the child's share of the CPUs: it also marshals and writes what it read, the parent unmarshals
CHILD_SHARE = 0.5


def _read_cpus(root: _Recorder) -> list[str]:
    """_cpu_paths of every CPU folder, their listings and texts put into root, the last
    CHILD_SHARE of them read by a forked child on the second core (forked.Child) while this
    process reads the rest; each also reads its share of the files doctor declares in
    every CPU folder (_declared_paths). The child reads through the same Root (every bound and
    refusal of the sysroot reader holds there too); its answers are taken only when well
    formed, else this process reads its share too, so the capture is the same either way."""
    cpus = _cpus(root)
    split = len(cpus) - int(len(cpus) * CHILD_SHARE) if _fork_share(root, cpus) else len(cpus)
    share = cpus[split:]
    inner = root.inner
    with forked.Child((lambda: _child_read(inner, share)) if share else None) as child:
        paths = _cpu_paths(root, cpus[:split])
        root.fork_files = not share  # one child at a time: none for this share's batch
        try:
            # with a child, this share's doctor files too, as the child reads its own: doctor's
            # batch then finds them all read (else its 4,096 at 8,192 CPUs would fork again)
            root.read_files(paths + _declared_paths(cpus[:split]) if share else paths)
        finally:
            root.fork_files = True
        got = child.result()
    theirs: list[str] | None = None
    if isinstance(got, tuple) and len(got) == 2 and _well_formed(*got, len(share)):
        lists, texts = got
        taken = [_cache_dir(entry) for entry in share if _cache_dir(entry) not in root.lists]
        for entry, names in zip(share, lists, strict=True):
            root.lists.setdefault(_cache_dir(entry), names)
        theirs = _cpu_paths(root, share)  # from the listings just taken
        read = theirs + _declared_paths(share)
        if len(read) == len(texts):
            for rel, text in zip(read, texts, strict=True):
                root.texts.setdefault(rel, text)
        else:  # texts that do not match the listings: neither is taken
            for rel in taken:
                del root.lists[rel]
            theirs = None
    if theirs is None:
        theirs = _cpu_paths(root, share)
    root.read_files(theirs)  # what the child did not give (all of it when it gave nothing)
    return paths + theirs


# from this many paths not yet read in one read_files, a forked child reads half of them
# (_Recorder._read_new). Measured on the bench's 5,000-thread worker (10,000 task files, nearly
# all of their cost the kernel's; medians of 10, CLI modules loaded): one process 73 ms wall,
# forked 48 ms wall (about 40 ms of CPU in each process); with the second core busy, 84 -> 77.
# Below about 4,000 files the fork and the copied pages eat most of the gain
FORK_FROM_FILES = 4000
# the paths that name the reading process itself: a forked child would read its own
_OWN_PROC = ("proc/self/", "proc/thread-self/", "/proc/self/", "/proc/thread-self/")


def _child_files(root: Root, rels: list[str]) -> list[str | None]:
    """In the child: root's read_files of rels, through folders of its own (see _child_read)."""
    close = getattr(root, "close", None)
    if close is not None:
        close()
    return root.read_files(rels)


def _declared_paths(entries: list[str]) -> list[str]:
    """The files doctor declares in every CPU folder (cpu[0-9]*/..., e.g. the governor), of
    these folders: doctor_paths reads them all, 8,192 at 8,192 CPUs (0.07 s of one core)."""
    from ascendtune.core.doctor.facts import is_pattern
    from ascendtune.core.doctor.host_rules import declared_reads

    every = f"{reader.CPU_DIR}/cpu[0-9]*/"
    rests = [
        d[len(every) :]
        for d in declared_reads()
        if d.startswith(every) and not is_pattern(d[len(every) :])
    ]
    return [f"{reader.CPU_DIR}/{entry}/{rest}" for entry in entries for rest in rests]


def _fork_share(root: _Recorder, cpus: list[str]) -> bool:
    """Whether a child is to read a share: a host of FORK_FROM_CPUS or more read from files (a
    folder sysroot or the live host; an archive is in memory already). forked.Child decides
    whether one can be forked; where none is, this process reads the share after its own."""
    return len(cpus) >= FORK_FROM_CPUS and isinstance(root.inner, DirRoot)


def _child_read(root: Root, share: list[str]) -> tuple[list[list[str] | None], list[str | None]]:
    """In the child: the cache listing of each CPU folder of share, and the texts of their
    files (_cpu_paths' order), then of _declared_paths(share)."""
    close = getattr(root, "close", None)
    if close is not None:
        # the folders the parent keeps open are its descriptors' twins, offsets shared: a
        # listing here (which rewinds) would move the parent's; the child opens its own
        close()
    rec = _Recorder(root)
    paths = _cpu_paths(rec, share) + _declared_paths(share)
    return [rec.lists[_cache_dir(entry)] for entry in share], root.read_files(paths)


def _well_formed(lists: object, texts: object, n: int) -> bool:
    """Whether the child's answer has the shape _child_read gives for n CPU folders."""
    return (
        isinstance(lists, list)
        and len(lists) == n
        and all(
            names is None or (isinstance(names, list) and all(isinstance(x, str) for x in names))
            for names in lists
        )
        and isinstance(texts, list)
        and all(t is None or isinstance(t, str) for t in texts)
    )


class _Recorder(Root):
    """root, with every text and listing it answers kept: the capture takes the files that
    host_paths and doctor_paths have already read (a 5,000-thread worker's 10,000 task files
    were read three times), and the snapshot holds one view of each file, as read once."""

    def __init__(self, inner: Root) -> None:
        self.inner = inner
        self.label = inner.label
        self.live = inner.live
        self.texts: dict[str, str | None] = {}
        self.lists: dict[str, list[str] | None] = {}
        self.fork_files = True  # whether a large batch may be read partly by a child

    def read_text(self, rel: str) -> str | None:
        texts = self.texts
        if rel in texts:
            return texts[rel]
        text = texts[rel] = self.inner.read_text(rel)
        return text

    def read_files(self, rels: list[str]) -> list[str | None]:
        texts = self.texts
        new = [rel for rel in rels if rel not in texts]
        if new:
            texts.update(zip(new, self._read_new(new), strict=True))
        return [texts[rel] for rel in rels]

    def _read_new(self, rels: list[str]) -> list[str | None]:
        """The inner root's read_files of rels; from FORK_FROM_FILES paths on (a 5,000-thread
        worker's task files), the second half read by a forked child on the second core as
        _read_cpus reads a share of the CPU folders, and by this process when the child gives
        nothing well formed: the texts are the same either way."""
        inner = self.inner
        if len(rels) < FORK_FROM_FILES or not self.fork_files or not isinstance(inner, DirRoot):
            return inner.read_files(rels)
        half = len(rels) // 2
        # a child's proc/self is the child: what names this process is read here, never there
        theirs = [rel for rel in rels[half:] if not rel.startswith(_OWN_PROC)]
        if len(theirs) == len(rels) - half:
            ours = rels[:half]
        else:
            given = set(theirs)
            ours = [rel for rel in rels if rel not in given]
        with forked.Child(lambda: _child_files(inner, theirs)) as child:
            mine = inner.read_files(ours)
            got = child.result()
        if not (
            isinstance(got, list)
            and len(got) == len(theirs)
            and all(t is None or isinstance(t, str) for t in got)
        ):
            got = inner.read_files(theirs)
        if len(ours) == half:  # the halves as cut: in order already
            return mine + got
        by_rel = dict(zip(ours, mine, strict=True))
        by_rel.update(zip(theirs, got, strict=True))
        return [by_rel[rel] for rel in rels]

    def listdir(self, rel: str) -> list[str] | None:
        if rel not in self.lists:
            self.lists[rel] = self.inner.listdir(rel)
        got = self.lists[rel]
        return None if got is None else list(got)

    def listdirs(self, rels: list[str]) -> list[list[str] | None]:
        lists = self.lists
        new = [rel for rel in rels if rel not in lists]
        if new:
            lists.update(zip(new, self.inner.listdirs(new), strict=True))
        return [None if (got := lists[rel]) is None else list(got) for rel in rels]

    def readlink(self, rel: str) -> str | None:
        return self.inner.readlink(rel)

    def readlinks(self, rel: str) -> list[str] | None:
        return self.inner.readlinks(rel)

    def read_children(
        self, folder: str, names: list[str], file: str | None, links: str, *, skip_below: int = 0
    ) -> list[tuple[str | None, list[str] | None]]:
        # the root's own pass (a sysroot reads each entry from its descriptor), kept; a ""
        # may stand for a file left unread (skip_below), so it is not kept
        rows = self.inner.read_children(folder, names, file, links, skip_below=skip_below)
        if file is not None:
            base = folder.strip("/")
            for name, (text, _) in zip(names, rows, strict=True):
                if text != "" or not skip_below:
                    self.texts.setdefault(f"{base}/{name}/{file}", text)
        return rows

    def renew_tool_budget(self) -> None:
        self.inner.renew_tool_budget()

    def command(self, argv: list[str], fallbacks: tuple[str, ...] = ()) -> CommandOutput | None:
        return self.inner.command(argv, fallbacks)

    def describe(self) -> str:
        return self.inner.describe()


def capture(root: Root) -> Capture:
    cap = Capture()
    host_root = root  # the kubelet's socket is looked for in the folder itself
    # every file is read from the host once: host_paths, doctor_paths and the capture share it
    root = recorder = _Recorder(root)
    from ascendtune.host.identity import IDENTITY_PATHS

    # the CPU folders' files first, a share of them read on the second core
    paths = [*host_paths(root, _read_cpus(recorder)), *IDENTITY_PATHS]
    for rel, text in zip(paths, root.read_files(paths), strict=True):
        if text is None:
            cap.missing.append(rel)
        else:
            cap.files[rel] = redact_file(rel, text)
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
            line = (out.error or "failed").splitlines()[0]
            cap.files[error_file(argv)] = redact_text(line) + "\n"
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
    from ascendtune.host.cgroup import cpuset_paths
    from ascendtune.host.identity import MACHINE_ID, machine_id_digest

    # this process's cgroup files (doctor's too): the host reader resolves the cpuset from them
    own = cpuset_paths(root)
    for rel, text in zip(own, root.read_files(own), strict=True):
        if text is not None:
            cap.files.setdefault(rel, redact_file(rel, text))
    meta = _meta(root)
    # the id itself stays on the host: a snapshot travels (bug reports), so it carries the
    # digest every JSON document carries, which a replay reports as the host's
    machine_id = cap.files.pop(MACHINE_ID, None)
    if machine_id is not None:
        meta["machine_id_sha256"] = machine_id_digest(machine_id)
    # meta.json before the host is read, as the replay will read it with the rest
    cap.files["meta.json"] = _meta_json(meta)
    asked = _Asked(MemRoot(cap.files, cap.links))  # MemRoot keeps its own copies
    try:
        # read what was just captured: on a live host this does not run the vendor tools again
        host = reader.read_host(asked)
    except Exception:  # a host the reader refuses is still worth capturing for a bug report
        host = None
    cap.host = host
    cap.asked = asked.asked if host is not None else None
    for rel in facts.doctor_paths(root, host):
        if rel in cap.files or rel in cap.links:
            continue
        if "/fd/" in rel:
            cap.take_link(root, rel)
        else:
            text = root.read_text(rel)
            if text is not None:
                cap.files[rel] = redact_file(rel, text)
            if rel.endswith("/cmdline"):
                # a worker's environment, secrets masked: `check-config --pid` replays it
                env_rel = rel[: -len("cmdline")] + "environ"
                env = root.read_text(env_rel)
                if env is not None:
                    cap.files[env_rel] = redact_environ(env)
    from ascendtune.host.k8s.files import capture as kubelet_capture

    for rel, text in kubelet_capture(host_root).items():  # a Kubernetes node: what the kubelet gave
        cap.files.setdefault(rel, text)
    if root.live and host is not None and host.npus and host.soc is Soc.UNKNOWN:
        # names do not tell the family: keep torch_npu's answer so the replay plans the same
        from ascendtune.host.socinfo import runtime_soc

        soc = runtime_soc()
        if soc is not None:
            meta["soc_runtime"] = soc.value
            cap.files["meta.json"] = _meta_json(meta)  # the read-back reads the host again
    return cap


def _meta_json(meta: dict[str, object]) -> str:
    return json.dumps(meta, indent=2, sort_keys=True) + "\n"


class _Asked(Root):
    """root, with every answer it gave kept by question: what the capture's read_host asked
    and was told. read_host is a function of those answers alone (a MemRoot runs no tool, and
    base Root methods answer through these three), so a written snapshot that gives the same
    answers reads back as the same host."""

    def __init__(self, inner: Root) -> None:
        self.inner = inner
        self.label = inner.label
        self.live = inner.live
        self.asked: dict[tuple[str, str], object] = {}

    def read_text(self, rel: str) -> str | None:
        got = self.asked[("text", rel)] = self.inner.read_text(rel)
        return got

    def listdir(self, rel: str) -> list[str] | None:
        got = self.inner.listdir(rel)
        self.asked[("list", rel)] = None if got is None else list(got)
        return got

    def readlink(self, rel: str) -> str | None:
        got = self.asked[("link", rel)] = self.inner.readlink(rel)
        return got


def _answers_hold(root: Root, asked: dict[tuple[str, str], object]) -> bool:
    """Whether root answers every question read_host asked of the capture as it was told."""
    ask = {"text": root.read_text, "list": root.listdir, "link": root.readlink}
    return all(ask[kind](rel) == told for (kind, rel), told in asked.items())


def _meta(root: Root) -> dict[str, object]:
    if not root.live:
        old = reader.read_meta(root)
        env = old.get("env")
        if isinstance(env, dict):  # an older snapshot's, masked as a new one's would be
            old["env"] = redact_env({str(k): str(v) for k, v in env.items()})
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
        "env": redact_env({k: os.environ[k] for k in env_keys() if k in os.environ}),
        "uid": os.getuid(),
        # doctor_paths() was captured: a process absent here was absent on the host
        "proc_scanned": True,
    }


def redact_file(rel: str, text: str) -> str:
    """What of a /proc file goes into a snapshot: command lines and environments masked."""
    if rel.endswith("/cmdline"):
        return redact_cmdline(text)
    if rel.endswith("/environ"):
        return redact_environ(text)
    return text


def is_archive(dest: str) -> bool:
    return dest.endswith((".tar.gz", ".tgz", ".tar"))


def write(cap: Capture, dest: str, *, force: bool = False) -> Path:
    """Write a capture as a folder, or as a tar archive when dest ends in .tar.gz/.tgz/.tar.

    Atomic and private: everything goes to a temporary name beside dest (files 0600, folders
    0700), is read back as a sysroot, and only then renamed onto dest; a failure leaves nothing
    behind. An existing dest (a file, or a folder that is not empty) needs force.
    """
    path = Path(dest)
    tmp: Path | None = None
    try:
        if not force:
            _refuse_existing(path, dest)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        if is_archive(dest):
            _write_archive(tmp, cap, gzip=not dest.endswith(".tar"))
        else:
            _write_folder(cap, tmp)
        _read_back(tmp, dest, cap)
        _put_in_place(tmp, path, force)
        tmp = None
    except PermissionError as e:
        raise PermissionDenied(f"cannot write {e.filename or dest}: permission denied") from None
    except FileNotFoundError as e:
        raise MissingError(f"cannot write {e.filename or dest}: no such folder") from None
    except OSError as e:  # a file where a folder should be, a full disk, a read-only mount
        raise InvalidInput(f"cannot write {e.filename or dest}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            _remove(tmp)
    return path


def _refuse_existing(path: Path, dest: str) -> None:
    if path.is_dir() and not path.is_symlink():
        if any(path.iterdir()):
            raise InvalidInput(
                f"{dest} exists and is not empty", "give a new folder, DIR.tar.gz, or --force"
            )
    elif path.exists() or path.is_symlink():
        raise InvalidInput(f"{dest} exists", "give a new name, or --force to replace it")


def _write_private(p: Path, data: bytes) -> None:
    # no fsync per file: a folder of 6,000 files took 26 s of fsync on a busy host; the capture
    # is made whole by the rename at the end, and a crash before it leaves only the .tmp folder
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_folder(cap: Capture, base: Path) -> None:
    os.mkdir(base, 0o700)
    for rel, text in sorted(cap.files.items()):
        p = base / rel
        _mkdirs(base, p.parent)
        _write_private(p, text.encode("utf-8", errors="surrogateescape"))
    for rel, target in sorted(cap.links.items()):
        p = base / rel
        _mkdirs(base, p.parent)
        if not p.is_symlink():
            p.symlink_to(target)


def _mkdirs(base: Path, folder: Path) -> None:
    todo: list[Path] = []
    while folder != base and not folder.is_dir():
        todo.append(folder)
        folder = folder.parent
    for d in reversed(todo):
        os.mkdir(d, 0o700)


def _read_back(tmp: Path, dest: str, cap: Capture) -> None:
    """A snapshot that does not replay is worse than none: read it as the user will.

    It is opened through the replay's own reader (an archive inflated and parsed member by
    member under the replay's bounds, a folder walked), then asked what the capture's
    read_host asked: the same answers make the same host, so read_host runs again only when
    one differs (or the capture's own reading failed)."""
    from ascendtune.core.errors import AscendtuneError
    from ascendtune.host.roots import open_root

    try:
        written = open_root(str(tmp))
        if cap.asked is None or not _answers_hold(written, cap.asked):
            reader.read_host(written)
    except AscendtuneError as e:
        raise e.reworded(f"{dest} was not written: it does not read back: ") from None


def _put_in_place(tmp: Path, path: Path, force: bool) -> None:
    if not force:
        if tmp.is_dir():
            os.rename(tmp, path)  # onto nothing or an empty folder; ENOTEMPTY otherwise
        else:
            os.link(tmp, path)  # EEXIST if a file appeared meanwhile: never clobber
            os.unlink(tmp)
        return
    if path.is_dir() and not path.is_symlink():
        old = path.parent / f".{path.name}.old-{os.getpid()}-{os.urandom(4).hex()}"
        os.rename(path, old)
        try:
            os.rename(tmp, path)
        except OSError:
            os.rename(old, path)
            raise
        _remove(old)
    else:
        os.replace(tmp, path)


def _remove(p: Path) -> None:
    import shutil

    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    except OSError:
        pass


def archive_bytes(cap: Capture, *, gzip: bool = True) -> bytes:
    """A deterministic tar (sorted members, mtime 0, root-owned) of the capture."""
    raw = io.BytesIO()
    sink: _GzipSink | io.BytesIO = _GzipSink(raw) if gzip else raw
    for piece in _tar_pieces(cap):
        sink.write(piece)
    if isinstance(sink, _GzipSink):
        sink.close()
    return raw.getvalue()


def _write_archive(p: Path, cap: Capture, *, gzip: bool) -> None:
    """archive_bytes(cap) streamed into a new private file: the tar is never held whole.

    With gzip, the tar is deflated and written by a second thread (_Deflater) while this one
    makes the next pieces: zlib lets go of the GIL while it compresses, so the two run on two
    cores, as `tar czf`'s tar and gzip do."""
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        raw = io.FileIO(fd, "wb")
    except BaseException:
        os.close(fd)
        raise
    # buffered: gzip hands over each compressed block as it goes, one write(2) apiece; raw
    # closed (and fd with it) on every path, so the buffer is never flushed after that
    sink = io.BufferedWriter(raw, 1 << 20)
    # no fsync, as for a folder's files (and as `tar czf` writes): it waited for the disk
    # longer than the whole capture took on a busy host (1,024 CPUs: 0.22 s against a
    # 0.19 s `tar czf`); the archive is read back and put in place by name, so a crash
    # before the kernel writes it out leaves at worst an empty archive the replay refuses
    if gzip:
        _Deflater(sink, raw).run(_tar_pieces(cap))
        return
    try:
        for piece in _tar_pieces(cap):
            sink.write(piece)
        sink.flush()
    finally:
        raw.close()


class _Deflater:
    """A thread that deflates (_GzipSink) the tar pieces handed to it and writes them to out,
    then closes raw (out's file): the file is the thread's, so it is never closed while the
    thread writes.

    At most _QUEUED pieces (about 1 MiB each) wait between the threads, so memory stays flat
    whatever the host's size. The thread ends on every path: the pieces end (gzip trailer
    written and flushed), the tar's thread fails or is interrupted (it stops at its next piece,
    nothing more written), or a write fails (the error is kept, the pieces still coming are
    dropped, and run raises the error in the tar's thread)."""

    def __init__(self, out: IO[bytes], raw: IO[bytes]) -> None:
        self.out = out
        self.raw = raw
        self.pieces: queue.Queue[bytes | None] = queue.Queue(_QUEUED)
        self.error: BaseException | None = None
        self.abandoned = False  # the tar's thread stopped short: write no trailer

    def run(self, pieces: Iterator[bytes]) -> None:
        """Hand pieces to the thread and wait for it: the archive is whole on return, and any
        error of either thread is raised here."""
        thread = threading.Thread(target=self._deflate, name="snapshot-deflate", daemon=True)
        try:
            thread.start()
        except BaseException:
            self.raw.close()
            raise
        try:
            for piece in pieces:
                if self.error is not None:
                    break
                self.pieces.put(piece)
        except BaseException:  # the tar failed, or Ctrl-C: let the thread go at once
            self.abandoned = True
            while True:  # emptied here (only this thread puts), so the stop never waits
                try:
                    self.pieces.get_nowait()
                except queue.Empty:
                    break
            raise
        finally:
            self.pieces.put(None)
            thread.join()
        if self.error is not None:
            raise self.error

    def _deflate(self) -> None:
        stopped = False  # the stop (None) taken from the queue: no piece comes after it
        try:
            gz = _GzipSink(self.out)
            while (piece := self.pieces.get()) is not None:
                gz.write(piece)
            stopped = True
            if not self.abandoned:
                gz.close()
                self.out.flush()
        except BaseException as e:  # kept for run; the tar's thread stops at its next piece
            self.error = e
            while not stopped and self.pieces.get() is not None:
                pass  # dropped, so that the tar's thread never waits for room
        finally:
            self.raw.close()


def _tar_pieces(cap: Capture) -> Iterator[bytes]:
    """The capture as a tar stream, in pieces of about _FLUSH_AT bytes.

    The tar is what tarfile writes in PAX format (a plain ustar header per member, a PAX header
    only for a long or non-ASCII name; sorted, mtime 0, root-owned), so every reader of the
    older archives reads these: the headers are built here rather than through a TarInfo per
    member, which cost more than reading and compressing tens of thousands of small sysfs files
    together. The gzip around it (_GzipSink) is GzipFile's framing (mtime 0) at level
    GZIP_LEVEL.
    """
    from ascendtune.host.roots.archive import tar_native

    native = tar_native()
    pending: list[bytes] = []
    size = 0
    written = 0
    links = cap.links
    files = cap.files
    rels = sorted(files.keys() | links.keys())
    i, n = 0, len(rels)
    while i < n:
        if native is not None:
            # compiled: the plain members, up to a full piece or one that is not plain (a
            # 4,096-CPU host's 12,700 members: 35 -> 6 ms of the thread feeding the deflate)
            run, i = native.pack(rels, i, files, links, _FLUSH_AT - size)
            pending.append(run)
            size += len(run)
        if i < n and size < _FLUSH_AT:  # the member the compiled run left, or each one
            rel = rels[i]
            i += 1
            target = links.get(rel)
            if target is not None:
                head = _header(rel, b"2", 0, target)
                pending.append(head)
                size += len(head)
            else:
                data = files[rel].encode()
                length = len(data)
                head = _header(rel, b"0", length, "")
                pending.append(head)
                pending.append(data)
                pad = -length % _BLOCK
                if pad:
                    pending.append(_ZEROS[:pad])
                size += len(head) + length + pad
        if size >= _FLUSH_AT:
            yield b"".join(pending)
            written += size
            pending.clear()
            size = 0
    # the end: two zero blocks, then zeros up to a whole record of 20 blocks (tar -b20)
    end = 2 * _BLOCK
    end += -(written + size + end) % _RECORD
    pending.append(bytes(end))
    yield b"".join(pending)


# zlib's fast deflate (levels 1-3) takes a third of the time of gzip's default 6 on a large
# host's tar (an 8,192-CPU host: 0.06 s instead of 0.19 s) for a larger archive (469 KiB
# instead of 314 KiB; a 5,000-thread worker 185 KiB instead of 137 KiB); 3 is the smallest
# of the fast levels at the same speed
GZIP_LEVEL = 3
_BLOCK = 512
_RECORD = 20 * _BLOCK
_ZEROS = bytes(_BLOCK)
_FLUSH_AT = 1 << 20
# pieces waiting for the deflate thread: with the one it deflates and the one being made, at
# most about 6 MiB of tar in memory beside the capture
_QUEUED = 4
# the fields every member shares, as tarfile writes them for mtime 0, root:root (uid/gid 0)
_IDS = b"0000000\0" * 2  # uid, gid
_MTIME = b"00000000000\0"
_SUM_SPACES = b" " * 8
_OWNER = b"ustar\x0000" + b"root".ljust(32, b"\0") * 2 + bytes(16 + 155 + 12)  # no device, prefix
_MODES = {b"0": b"0000600\0", b"2": b"0000644\0"}  # a file 0600; a link as TarInfo makes it


def _header(name: str, kind: bytes, size: int, link: str) -> bytes:
    """The header block(s) tarfile's PAX format writes for this member: one ustar block for
    an ASCII name and link target of at most 100 characters, else tarfile's own (a PAX header
    first)."""
    if len(name) <= 100 and len(link) <= 100 and name.isascii() and link.isascii():
        block = b"".join(
            (
                name.encode().ljust(100, b"\0"),
                _MODES[kind],
                _IDS,
                b"%011o\0" % size,
                _MTIME,
                _SUM_SPACES,
                kind,
                link.encode().ljust(100, b"\0"),
                _OWNER,
            )
        )
        # the checksum is the sum of the bytes (its own field as spaces): adler32's low half
        # is 1 + that sum mod 65521, and an ASCII block sums to at most 512 * 127 = 65,024
        return b"%s%06o\0 %s" % (block[:148], (zlib.adler32(block) & 0xFFFF) - 1, block[156:])
    import tarfile

    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.type = kind
    info.size = size
    if kind == b"2":
        info.linkname = link
    else:
        info.mode = 0o600
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


class _GzipSink:
    """What gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=GZIP_LEVEL) writes
    (no file name in the header), without its bookkeeping on every write."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        # magic, deflate, no flags, mtime 0, no extra flags (neither level 1 nor 9), OS unknown
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        self.deflate = zlib.compressobj(
            GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0
        )
        self.crc32 = zlib.crc32
        self.crc = 0
        self.size = 0

    def write(self, data: bytes) -> None:
        self.crc = self.crc32(data, self.crc)
        self.size += len(data)
        self.out.write(self.deflate.compress(data))

    def close(self) -> None:
        self.out.write(self.deflate.flush())
        self.out.write(
            self.crc.to_bytes(4, "little") + (self.size & 0xFFFFFFFF).to_bytes(4, "little")
        )
