"""Roots the tool reads a host through: the live `/`, a captured folder, or an archive.

Every read goes through a Root with paths relative to it (SPEC.md section 2), so a live host and
a captured one take the same code path. Commands are run on a live root and read from
`commands/` under a captured one.
"""

from __future__ import annotations

import io
import os
import posixpath
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied
from ascendtune.host import runner


@dataclass(frozen=True)
class CommandOutput:
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

    def readlink(self, rel: str) -> str | None:
        raise NotImplementedError

    def exists(self, rel: str) -> bool:
        return self.read_text(rel) is not None or self.listdir(rel) is not None

    def command(self, argv: list[str], fallbacks: tuple[str, ...] = ()) -> CommandOutput | None:
        """Output of a tool; None when the tool is absent on this host.

        A captured host replays `commands/<name>.txt`, or the failure recorded in `<name>.err`.
        """
        text = self.read_text(command_file(argv))
        if text is not None:
            return CommandOutput(text, True)
        err = self.read_text(error_file(argv))
        return None if err is None else CommandOutput("", False, err.strip() or "failed")

    def describe(self) -> str:
        return self.label


class DirRoot(Root):
    def __init__(self, path: str | os.PathLike[str], *, live: bool = False) -> None:
        self.path = Path(path)
        self.live = live
        self.label = "/" if live else str(path)

    def _p(self, rel: str) -> Path:
        return self.path / rel.lstrip("/")

    def read_text(self, rel: str) -> str | None:
        try:
            return self._p(rel).read_text(errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except PermissionError:
            if self.live:
                return None  # another user's /proc/PID files: as good as absent
            raise PermissionDenied(
                f"cannot read {self._p(rel)}: permission denied",
                "read the sysroot as its owner, or fix its permissions",
            ) from None
        except OSError:
            # sysfs files that refuse a read (EINVAL, EIO) are as good as absent
            return None

    def listdir(self, rel: str) -> list[str] | None:
        try:
            return sorted(os.listdir(self._p(rel)))
        except OSError:
            return None

    def readlink(self, rel: str) -> str | None:
        try:
            return os.readlink(self._p(rel))
        except OSError:
            return None

    def command(self, argv: list[str], fallbacks: tuple[str, ...] = ()) -> CommandOutput | None:
        if not self.live:
            return super().command(argv)
        exe = runner.which(argv[0], fallbacks)
        if exe is None:
            return None
        try:
            done = runner.run([exe, *argv[1:]])
        except FileNotFoundError:
            return None
        except runner.CommandTimeout as e:
            return CommandOutput("", False, str(e), timed_out=True)
        except OSError as e:
            return CommandOutput("", False, str(e))
        if done.returncode != 0:
            err = (done.stderr.strip() or done.stdout.strip()).splitlines()
            msg = err[0] if err else f"exit status {done.returncode}"
            return CommandOutput(done.stdout, False, f"{' '.join(argv)}: {msg}")
        return CommandOutput(done.stdout, True)


class MemRoot(Root):
    """A captured host held in memory (from a .tar.gz, or built by tests)."""

    def __init__(
        self, files: dict[str, str], links: dict[str, str] | None = None, label: str = "<memory>"
    ) -> None:
        self.files = {posixpath.normpath(k.lstrip("/")): v for k, v in files.items()}
        self.links = {posixpath.normpath(k.lstrip("/")): v for k, v in (links or {}).items()}
        self.label = label
        dirs: dict[str, set[str]] = {}
        for p in list(self.files) + list(self.links):
            parts = p.split("/")
            for i in range(len(parts)):
                parent = "/".join(parts[:i]) or "."
                dirs.setdefault(parent, set()).add(parts[i])
        self.dirs = dirs

    def read_text(self, rel: str) -> str | None:
        return self.files.get(posixpath.normpath(rel.lstrip("/")))

    def listdir(self, rel: str) -> list[str] | None:
        key = posixpath.normpath(rel.lstrip("/")) if rel.strip("/") else "."
        entries = self.dirs.get(key)
        return sorted(entries) if entries is not None else None

    def readlink(self, rel: str) -> str | None:
        return self.links.get(posixpath.normpath(rel.lstrip("/")))


def _strip_top(names: list[str]) -> str:
    """The single top folder every member of an archive shares ("" when there is none)."""
    tops = {n.split("/", 1)[0] for n in names if n}
    if len(tops) == 1:
        top = tops.pop()
        # a sysroot archive holds sys/ or proc/ at its top; only strip a wrapper folder
        wrapped = all(n == top or n.startswith(top + "/") for n in names)
        if wrapped and top not in ("sys", "proc", "commands", "meta.json", "dev"):
            return top + "/"
    return ""


def open_archive(data: bytes, label: str) -> MemRoot:
    if data[:2] == b"\x1f\x8b":
        # inflate once up front: tarfile seeking through a gzip stream costs a third more
        import gzip
        import zlib

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise InvalidInput(f"{label} is not a readable gzip archive: {e}") from None
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, EOFError, OSError):
        raise InvalidInput(
            f"{label} is neither a folder nor a readable .tar/.tar.gz archive",
            "give a sysroot written by `ascendtune snapshot`",
        ) from None
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    with tar:
        try:
            members = tar.getmembers()
        except (tarfile.TarError, EOFError, OSError) as e:
            raise InvalidInput(f"{label} is a damaged archive: {str(e).splitlines()[0]}") from None
        prefix = _strip_top([m.name.lstrip("./") for m in members])
        for m in members:
            name = m.name.lstrip("./")
            if prefix:
                name = name[len(prefix) :]
            if not name or name.startswith("/") or ".." in name.split("/"):
                continue
            if m.issym():
                links[name] = m.linkname
            elif m.isfile():
                f = tar.extractfile(m)
                if f is not None:
                    files[name] = f.read().decode("utf-8", errors="replace")
    return MemRoot(files, links, label=label)


def open_root(sysroot: str | None) -> Root:
    """The live host (None or "/"), a sysroot folder, or a sysroot archive (.tar, .tar.gz, .tgz)."""
    if sysroot is None or os.path.abspath(sysroot) == "/":
        return DirRoot("/", live=True)
    p = Path(sysroot)
    if p.is_dir():
        return DirRoot(p)
    if p.is_file():
        return open_archive(p.read_bytes(), str(p))
    raise MissingError(
        f"sysroot {sysroot} does not exist",
        "give a folder or .tar.gz written by `ascendtune snapshot`",
    )
