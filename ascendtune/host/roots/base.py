"""The Root interface: a host seen through paths relative to it (SPEC.md section 2), a folder of
it read by name, a tool's output, and the bounds on what one read may return."""

from __future__ import annotations

import os
from typing import NamedTuple

from ascendtune.core.errors import InvalidInput

# Bounds on what a captured host may make us read (README "Limits"). No real sysfs or proc file,
# nor any tool output we parse, comes near them; a captured host is someone else's input.
MAX_FILE_BYTES = 8 << 20
MAX_LINK_HOPS = 40  # what the kernel allows before ELOOP
MAX_ERROR_CHARS = 300  # of a tool's error line kept (a tool may print megabytes to stderr)


class CommandOutput(NamedTuple):
    """The text a tool printed (stdout), whether it succeeded, and why not."""

    text: str
    ok: bool
    error: str | None = None
    timed_out: bool = False


def error_file(argv: list[str]) -> str:
    """Where a snapshot records that a tool failed: commands/<name>.err holds its error line."""
    return command_file(argv)[: -len(".txt")] + ".err"


def command_file(argv: list[str]) -> str:
    """The file under commands/ that stands for argv: `npu-smi info -t topo` -> npu-smi_info_-t_topo.txt."""
    return "commands/" + "_".join(argv) + ".txt"


class Root:
    """Base: a host seen through relative paths."""

    label: str = "/"
    live: bool = False

    def read_text(self, rel: str) -> str | None:
        raise NotImplementedError

    def listdir(self, rel: str) -> list[str] | None:
        raise NotImplementedError

    def read_files(self, rels: list[str]) -> list[str | None]:
        """read_text of each path, in order: what a capture reads of thousands of files at once
        (a sysroot answers them from its open folders, without a call chain per file)."""
        return [self.read_text(rel) for rel in rels]

    def listdirs(self, rels: list[str]) -> list[list[str] | None]:
        """listdir of each folder, in order (a sysroot lists them all in one call)."""
        return [self.listdir(rel) for rel in rels]

    def readlink(self, rel: str) -> str | None:
        raise NotImplementedError

    def readlinks(self, rel: str) -> list[str] | None:
        """The targets of the symlinks in folder rel, in name order (other entries left out);
        None when the folder cannot be listed. doctor reads every proc/PID/fd this way."""
        names = self.listdir(rel)
        if names is None:
            return None
        base = rel.rstrip("/") + "/"
        out: list[str] = []
        for name in names:
            target = self.readlink(base + name)
            if target is not None:
                out.append(target)
        return out

    def read_children(
        self, folder: str, names: list[str], file: str | None, links: str, *, skip_below: int = 0
    ) -> list[tuple[str | None, list[str] | None]]:
        """For each name of an entry of folder: (read_text of folder/NAME/file, or None when
        file is None; readlinks of folder/NAME/links), in the order of names. What doctor reads
        of every process (proc/PID/comm and the targets of proc/PID/fd) in one pass: through
        folders, so a sysroot opens each entry once and reads from its descriptor.

        skip_below: a regular file shorter than this many bytes may answer "" unread, where
        the root knows its size without reading it (a sysroot's stat; not live proc files,
        whose sizes say nothing): the caller has no use for such a text (doctor wants only
        the comm that is "irqbalance", 10 bytes or more). Absent files still answer None."""
        out: list[tuple[str | None, list[str] | None]] = []
        with self.folder(folder) as top:
            for name in names:
                with top.folder(name) as entry:
                    text = entry.read_text(file) if file is not None else None
                    out.append((text, entry.readlinks(links)))
        return out

    def exists(self, rel: str) -> bool:
        return self.read_text(rel) is not None or self.listdir(rel) is not None

    def folder(self, rel: str) -> Folder:
        """A folder to read many files of: each read answers as read_text of rel/NAME would
        (a sysroot folder is opened once instead of walked again for each file)."""
        return Folder(self, rel)

    def renew_tool_budget(self) -> None:
        """Start a new time budget for the tools run from now on: one per call of a command
        (a watch that runs for hours renews it every pass). Nothing to do where tools are
        replayed."""

    def command(self, argv: list[str], fallbacks: tuple[str, ...] = ()) -> CommandOutput | None:
        """Output of a tool; None when the tool is absent on this host.

        A captured host replays `commands/<name>.txt`, or the failure recorded in `<name>.err`.
        """
        text = self.read_text(command_file(argv))
        if text is not None:
            return CommandOutput(text, True)
        err = self.read_text(error_file(argv))
        if err is None:
            return None
        lines = err.strip().splitlines()
        return CommandOutput("", False, lines[0][:MAX_ERROR_CHARS] if lines else "failed")

    def describe(self) -> str:
        return self.label


class Folder:
    """A folder of a Root, read by name: read_text(name) is the Root's read_text of rel/name,
    listdir() its listdir of rel, folder(name) the folder rel/name. This base answers through
    those paths; a sysroot folder's _OpenFolder holds a descriptor instead."""

    def __init__(self, root: Root, rel: str) -> None:
        self.root = root
        self.rel = rel.strip("/")

    def path(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name

    def read_text(self, name: str) -> str | None:
        return self.root.read_text(self.path(name))

    def read_texts(self, names: tuple[str, ...], under: str = "") -> list[str | None]:
        """read_text of each name (of the folder under, a path below this one), in order."""
        if under:
            return self.folder(under).read_texts(names)
        return [self.read_text(name) for name in names]

    def listdir(self) -> list[str] | None:
        return self.root.listdir(self.rel)

    def readlinks(self, name: str) -> list[str] | None:
        """The root's readlinks of rel/name: the targets of the links in that folder."""
        return self.root.readlinks(self.path(name))

    def folder(self, name: str) -> Folder:
        return Folder(self.root, self.path(name))

    def close(self) -> None:
        """Let go of what the folder holds (the base holds nothing)."""

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _AbsentFolder(Folder):
    """A folder that does not exist: every file in it is absent."""

    def __init__(self) -> None:
        super().__init__(Root(), "")

    def read_text(self, name: str) -> str | None:
        return None

    def listdir(self) -> list[str] | None:
        return None

    def readlinks(self, name: str) -> list[str] | None:
        return None

    def folder(self, name: str) -> Folder:
        return self


ABSENT = _AbsentFolder()


def read_capped(fd: int, cap: int, label: str, *, size_hint: int = -1) -> bytes:
    """Read fd to its end, refusing (InvalidInput) past cap bytes; never more than cap+1 in memory.

    size_hint: the size fstat gave for a regular file of a sysroot (not a live sysfs or proc
    file, whose sizes say nothing); a read shorter than asked of such a file is its end, which
    saves the second read that would return nothing."""
    chunks: list[bytes] = []
    got = 0
    if 0 <= size_hint < cap:
        want = size_hint + 1
        chunk = os.read(fd, want)
        if len(chunk) < want:
            return chunk
        chunks.append(chunk)
        got = len(chunk)
    while True:
        chunk = os.read(fd, min(1 << 20, cap + 1 - got))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
        if got > cap:
            raise InvalidInput(f"{label} is larger than the {mib(cap)} limit on one file")


def mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"
