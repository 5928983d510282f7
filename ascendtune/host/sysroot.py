"""Roots the tool reads a host through: the live `/`, a captured folder, or an archive.

Every read goes through a Root with paths relative to it (SPEC.md section 2), so a live host and
a captured one take the same code path. Commands are run on a live root and read from
`commands/` under a captured one.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
import zlib
from collections import OrderedDict, deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

from ascendtune.core.errors import InvalidInput, MissingError, PermissionDenied

if TYPE_CHECKING:
    from ascendtune.host import runner

# Bounds on what a captured host may make us read (README "Limits"). No real sysfs or proc file,
# nor any tool output we parse, comes near them; a captured host is someone else's input.
MAX_FILE_BYTES = 8 << 20
MAX_ARCHIVE_BYTES = 64 << 20  # inflated, all members together (also the cap on the .tar.gz)
MAX_ARCHIVE_MEMBERS = 200_000
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
        self, folder: str, names: list[str], file: str | None, links: str
    ) -> list[tuple[str | None, list[str] | None]]:
        """For each name of an entry of folder: (read_text of folder/NAME/file, or None when
        file is None; readlinks of folder/NAME/links), in the order of names. What doctor reads
        of every process (proc/PID/comm and the targets of proc/PID/fd) in one pass: through
        folders, so a sysroot opens each entry once and reads from its descriptor."""
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


class _OpenFolder(Folder):
    """A sysroot folder reached by a plain walk, held open: a file in it is one stat and one
    open relative to the descriptor (O_NOFOLLOW), never a walk from the top. A link, a name
    that is not one plain component, or any error but absence is left to the root's own
    read_text / listdir / folder by path, which resolve links inside the root and refuse what
    they refuse: what this answers is always what those would."""

    def __init__(self, root: DirRoot, rel: str, fd: int) -> None:
        # rel as given (already stripped: a reader makes one per CPU and per cache)
        self.root = self.dir_root = root
        self.rel = rel
        self.fd: int | None = fd

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = getattr(self, "fd", None), None
        if fd is not None:
            os.close(fd)

    def read_text(self, name: str) -> str | None:
        fd = self.fd
        if fd is None or "/" in name or name in ("", ".", ".."):
            return self.root.read_text(self.path(name))
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError:
            return self.root.read_text(self.path(name))
        mode = st.st_mode
        if not stat.S_ISREG(mode):
            if not stat.S_ISLNK(mode):
                self.dir_root._refuse_special(self.path(name), mode)  # raises
            return self.root.read_text(self.path(name))
        try:
            opened = os.open(name, _FILE_FLAGS, dir_fd=fd)
        except OSError:
            return self.root.read_text(self.path(name))  # swapped under us (ELOOP), unreadable
        try:
            label = self.dir_root._p(self.path(name))
            data = read_capped(opened, MAX_FILE_BYTES, label, size_hint=st.st_size)
        except OSError:
            return self.root.read_text(self.path(name))
        finally:
            os.close(opened)
        return data.decode("utf-8", errors="replace")

    def read_texts(self, names: tuple[str, ...], under: str = "") -> list[str | None]:
        # read_text's common case inlined (plain folders, plain regular files): the reader asks
        # this for the three topology files of every core, with no Folder made per folder
        fd = self.fd
        if fd is None:
            return super().read_texts(names, under)
        parts = under.split("/") if under else []
        if any(p in ("", ".", "..") for p in parts):
            return super().read_texts(names, under)
        opened_dirs: list[int] = []
        try:
            for part in parts:
                try:
                    fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    return [None] * len(names)  # as read_text finds it: absent
                except OSError:
                    return super().read_texts(names, under)  # a link, not a folder: by path
                opened_dirs.append(fd)
            rel = f"{self.rel}/{under}" if under else self.rel
            return self._plain_texts(fd, rel, names)
        finally:
            for d in opened_dirs:
                os.close(d)

    def _plain_texts(self, fd: int, rel: str, names: tuple[str, ...]) -> list[str | None]:
        """read_texts of names in the folder fd (rel: its path), each regular file read with
        one stat, open and read; anything else answered by the root's read_text of its path."""
        out: list[str | None] = []
        add = out.append
        sstat, sopen, sclose, sread, isreg = os.stat, os.open, os.close, os.read, stat.S_ISREG
        for name in names:
            try:
                st = sstat(name, dir_fd=fd, follow_symlinks=False)
                if isreg(st.st_mode) and "/" not in name:
                    opened = sopen(name, _FILE_FLAGS, dir_fd=fd)
                    try:
                        size = st.st_size
                        if size < MAX_FILE_BYTES:
                            data = sread(opened, size + 1)
                            if len(data) <= size:
                                add(data.decode("utf-8", errors="replace"))
                                continue
                    finally:
                        sclose(opened)
            except OSError:
                pass
            # anything else: the full read decides
            add(self.root.read_text(f"{rel}/{name}" if rel else name))
        return out

    def listdir(self) -> list[str] | None:
        if self.fd is None:
            return self.root.listdir(self.rel)
        try:
            return sorted(os.listdir(self.fd))
        except OSError:
            return None

    def readlinks(self, name: str) -> list[str] | None:
        if self.fd is None or "/" in name or name in ("", ".", ".."):
            return self.root.readlinks(self.path(name))
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError:
            return self.root.readlinks(self.path(name))  # a link (ELOOP), not a folder: by path
        return _link_targets(fd)

    def folder(self, name: str) -> Folder:
        if self.fd is None or "/" in name or name in ("", ".", ".."):
            return Folder(self.root, self.path(name))
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return _ABSENT
        except OSError:
            return Folder(self.root, self.path(name))  # a link (ELOOP), not a folder: by path
        return _OpenFolder(self.dir_root, f"{self.rel}/{name}" if self.rel else name, fd)


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


_ABSENT = _AbsentFolder()


def _link_targets(fd: int) -> list[str] | None:
    """The targets of the links in the open folder fd, by sorted name (an entry closed
    meanwhile, or not a link, is left out); None when the folder cannot be listed. Closes fd."""
    try:
        out: list[str] = []
        for name in sorted(os.listdir(fd)):
            try:
                out.append(os.readlink(name, dir_fd=fd))
            except OSError:
                continue
        return out
    except OSError:
        return None
    finally:
        os.close(fd)


_RESTART = object()  # _walk_from: met a link away from the root; walk again from the top
# a sysroot's file: never followed if a link, never blocking if a FIFO slipped in after the stat
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# a folder on a walk: never followed if a link (ELOOP), never anything but a folder (ENOTDIR,
# before any device's open runs)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class DirRoot(Root):
    """The live `/`, or a captured host in a folder: a closed world.

    A captured folder is read component by component through directory descriptors
    (openat-style, O_NOFOLLOW), and every symlink in it is resolved relative to the folder as if
    it were `/` (a link to /etc/shadow means DIR/etc/shadow), so no read leaves it. Only regular
    files are opened (never a FIFO or a device), each read is bounded by MAX_FILE_BYTES.
    """

    # shared by all tool runs through this root: runner.DEFAULT_TIMEOUT_S (a test keeps them
    # equal), written out so that reading a sysroot or demo does not import the runner
    tool_budget_s = 15.0

    # folders already resolved by a plain walk (no link, no ..), kept open: a reader asks for
    # thousands of files in a few hundred folders, and a walk from the top costs two system
    # calls per path component
    MAX_OPEN_DIRS = 64

    def __init__(self, path: str | os.PathLike[str], *, live: bool = False) -> None:
        self.path = Path(path)
        self.live = live
        self.label = "/" if live else str(path)
        self._deadline: runner.Deadline | None = None
        self._prefix = os.fspath(path).rstrip("/") + "/"
        self._dirs: OrderedDict[str, int] = OrderedDict()

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the folders kept open (reading again reopens them)."""
        dirs = getattr(self, "_dirs", None)
        while dirs:
            os.close(dirs.popitem()[1])

    def _p(self, rel: str) -> str:
        return self._prefix + rel.lstrip("/")

    # -- the closed-world walk ------------------------------------------------------------

    def _walk(self, rel: str, *, last: str) -> int | None:
        """A descriptor for rel resolved inside the root; None when absent.

        last: "file" opens the final component for reading (regular files only), "dir" as a
        directory, "parent" returns the folder holding the final component (for readlink) and
        leaves the name unresolved. The caller closes the descriptor.
        """
        if last == "file":
            # the common read: a plain file in a folder already open (a key of _dirs is a plain
            # path, so rel is one too); a link, or anything unusual, takes the whole walk below
            cut = rel.rfind("/")
            fd = self._dirs.get(rel[:cut]) if cut > 0 else None
            name = rel[cut + 1 :]
            if fd is not None and name not in ("", ".", ".."):
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISLNK(st.st_mode):
                        self._dirs.move_to_end(rel[:cut])
                        self._refuse_special(rel, st.st_mode)
                        return os.open(name, _FILE_FLAGS, dir_fd=fd)
                except OSError as e:
                    if isinstance(e, PermissionError):
                        raise
                    return None  # absent, or (ELOOP) swapped for a link under us
        names = [p for p in rel.split("/") if p not in ("", ".")]
        final = ""
        if last == "parent":
            if not names or names[-1] == "..":
                return None
            final = names.pop()
        if ".." not in names:
            # start from the deepest folder of rel a plain walk has already opened
            for k in range(len(names) - (last == "file"), 0, -1):
                key = "/".join(names[:k])
                fd = self._dirs.get(key)
                if fd is not None:
                    self._dirs.move_to_end(key)
                    got = self._walk_from(fd, key, names[k:], last, final)
                    if got is not _RESTART:
                        return got  # type: ignore[return-value]
                    break
        root_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            got = self._walk_from(root_fd, "", names, last, final)
        finally:
            os.close(root_fd)
        return None if got is _RESTART else got  # type: ignore[return-value]

    def _walk_from(
        self, start: int, at: str, names: list[str], last: str, final: str
    ) -> int | object | None:
        """_walk from the folder `start` (the root when `at` is "", else the folder `at` of a
        plain walk). Folders reached by a plain walk are kept open in _dirs; a link met when not
        starting at the root returns _RESTART (a link resolves from the root)."""
        parts: deque[str] = deque(names)
        stack = [start]
        owned: list[bool] = [
            False
        ]  # whether stack[i] is ours to close (not the caller's or _dirs')
        plain = at if ".." not in names else None  # the path walked so far, while it is plain
        hops = 0
        try:
            while parts:
                name = parts.popleft()
                if name == "..":
                    if len(stack) > 1:  # never above the root: /.. is /
                        if owned.pop():
                            os.close(stack.pop())
                        else:
                            stack.pop()
                    continue
                if parts or last != "file":
                    # a folder on the way: opened straight away, no stat first; O_NOFOLLOW
                    # fails a link (ELOOP), and a link or a non-folder takes the stat below
                    try:
                        fd = os.open(name, _DIR_FLAGS, dir_fd=stack[-1])
                    except FileNotFoundError:
                        return None
                    except OSError as e:
                        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                            raise
                    else:
                        self._push(stack, owned, fd, plain := self._grow(plain, name))
                        continue
                try:
                    st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                except (FileNotFoundError, NotADirectoryError):
                    return None
                if stat.S_ISLNK(st.st_mode):
                    if at:
                        return _RESTART
                    plain = None
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise InvalidInput(
                            f"{self._p('/'.join(names))}: too many levels of symbolic links "
                            "(a link loop)",
                            "a sysroot from `ascendtune snapshot` has no link loops",
                        )
                    target = os.readlink(name, dir_fd=stack[-1])
                    if target.startswith("/"):
                        while len(stack) > 1:
                            if owned.pop():
                                os.close(stack.pop())
                            else:
                                stack.pop()
                    parts.extendleft(reversed([p for p in target.split("/") if p not in ("", ".")]))
                    continue
                if parts or last != "file":
                    if not stat.S_ISDIR(st.st_mode):
                        return None
                    fd = os.open(name, _DIR_FLAGS, dir_fd=stack[-1])
                    self._push(stack, owned, fd, plain := self._grow(plain, name))
                    continue
                self._refuse_special("/".join(names), st.st_mode)
                return os.open(name, _FILE_FLAGS, dir_fd=stack[-1])
            if last == "file":
                return None  # rel named the root itself, or ended on a folder
            if last == "parent":
                if not final:
                    return None
                # the final component exists as an entry of this folder (a link or not)
                os.stat(final, dir_fd=stack[-1], follow_symlinks=False)
            # the caller closes what it gets: its own descriptor, never one of _dirs'
            return stack.pop() if owned.pop() else os.dup(stack.pop())
        except OSError as e:
            if isinstance(e, FileNotFoundError | NotADirectoryError):
                return None
            if isinstance(e, PermissionError):
                raise
            # ELOOP from O_NOFOLLOW: the entry was swapped for a link under us
            return None
        finally:
            for fd, mine in zip(stack, owned, strict=True):
                if mine:
                    os.close(fd)
            while len(self._dirs) > self.MAX_OPEN_DIRS:
                os.close(self._dirs.popitem(last=False)[1])

    @staticmethod
    def _grow(plain: str | None, name: str) -> str | None:
        """The plain path walked so far, one folder further (None once it is not plain)."""
        if plain is None:
            return None
        return f"{plain}/{name}" if plain else name

    def _push(self, stack: list[int], owned: list[bool], fd: int, plain: str | None) -> None:
        """Enter the folder fd on the walk; one reached by a plain walk is kept open in _dirs."""
        stack.append(fd)
        if plain is not None:
            stale = self._dirs.pop(plain, None)  # never in this walk's stack
            if stale is not None:
                os.close(stale)
            self._dirs[plain] = fd
            owned.append(False)
        else:
            owned.append(True)

    def _refuse_special(self, rel: str, mode: int) -> None:
        if stat.S_ISREG(mode):
            return
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a folder"
            if stat.S_ISDIR(mode)
            else "not a regular file"
        )
        raise InvalidInput(
            f"{self._p(rel)} is {kind}: a sysroot holds regular files only",
            "give a folder or .tar.gz written by `ascendtune snapshot`",
        )

    def _open_live(self, rel: str) -> int:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        return os.open(self._p(rel), flags)

    def read_bytes(self, rel: str) -> bytes | None:
        """The bytes of a regular file, at most MAX_FILE_BYTES; None when absent."""
        try:
            if not self.live:
                # the common read: a plain file in a folder already open (a key of _dirs is a
                # plain path, so rel is one too); its stat says it is a regular file (never a
                # FIFO or device opened) and gives the size; O_NOFOLLOW refuses a link swapped
                # in since. A link, or anything unusual, takes the whole walk below.
                cut = rel.rfind("/")
                parent = rel[:cut]
                at = self._dirs.get(parent) if cut > 0 else None
                name = rel[cut + 1 :]
                if at is not None and name not in ("", ".", ".."):
                    st = os.stat(name, dir_fd=at, follow_symlinks=False)
                    mode = st.st_mode
                    if stat.S_ISREG(mode):
                        self._dirs.move_to_end(parent)
                        opened = os.open(name, _FILE_FLAGS, dir_fd=at)
                        try:
                            return read_capped(
                                opened, MAX_FILE_BYTES, self._p(rel), size_hint=st.st_size
                            )
                        finally:
                            os.close(opened)
                    if not stat.S_ISLNK(mode):
                        self._refuse_special(rel, mode)
            fd = self._open_live(rel) if self.live else self._walk(rel, last="file")
            if fd is None:
                return None
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    if self.live:
                        return None  # live /sys and /proc attributes are regular files
                    self._refuse_special(rel, st.st_mode)
                if self.live:  # a sysroot's regular file reads alike either way: no two fcntl calls
                    os.set_blocking(fd, True)
                hint = -1 if self.live else st.st_size
                return read_capped(fd, MAX_FILE_BYTES, self._p(rel), size_hint=hint)
            finally:
                os.close(fd)
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

    def read_text(self, rel: str) -> str | None:
        data = self.read_bytes(rel)
        return None if data is None else data.decode("utf-8", errors="replace")

    def folder(self, rel: str) -> Folder:
        if self.live:
            return Folder(self, rel)  # live reads take whole paths anyway
        try:
            fd = self._walk(rel, last="dir")
        except OSError:
            return Folder(self, rel)
        return _ABSENT if fd is None else _OpenFolder(self, rel.strip("/"), fd)

    def listdir(self, rel: str) -> list[str] | None:
        try:
            if self.live:
                return sorted(os.listdir(self._p(rel)))
            fd = self._walk(rel, last="dir")
            if fd is None:
                return None
            try:
                return sorted(os.listdir(fd))
            finally:
                os.close(fd)
        except OSError:
            return None

    def readlink(self, rel: str) -> str | None:
        try:
            if self.live:
                return os.readlink(self._p(rel))
            fd = self._walk(rel, last="parent")
            if fd is None:
                return None
            try:
                return os.readlink(rel.rstrip("/").rsplit("/", 1)[-1], dir_fd=fd)
            finally:
                os.close(fd)
        except OSError:
            return None

    def readlinks(self, rel: str) -> list[str] | None:
        # one folder descriptor for every link (live: no path walk per link; a sysroot folder:
        # one walk instead of one per link)
        try:
            if self.live:
                fd = os.open(self._p(rel), os.O_RDONLY | os.O_DIRECTORY)
            else:
                got = self._walk(rel, last="dir")
                if got is None:
                    return None
                fd = got
        except OSError:
            return None
        return _link_targets(fd)

    def command(self, argv: list[str], fallbacks: tuple[str, ...] = ()) -> CommandOutput | None:
        if not self.live:
            return super().command(argv)
        from ascendtune.host import runner

        exe = runner.which(argv[0], fallbacks)
        if exe is None:
            return None
        if self._deadline is None:
            # one budget for every tool this command runs: two hanging tools cost one timeout
            self._deadline = runner.Deadline(self.tool_budget_s)
        try:
            done = runner.run([exe, *argv[1:]], deadline=self._deadline)
        except FileNotFoundError:
            return None
        except runner.CommandTimeout as e:
            return CommandOutput("", False, str(e), timed_out=True)
        except OSError as e:
            return CommandOutput("", False, str(e))
        if done.returncode != 0:
            err = (done.stderr.strip() or done.stdout.strip()).splitlines()
            msg = err[0][:MAX_ERROR_CHARS] if err else f"exit status {done.returncode}"
            return CommandOutput(done.stdout, False, f"{' '.join(argv)}: {msg}")
        return CommandOutput(done.stdout, True)


class MemRoot(Root):
    """A captured host held in memory (from a .tar.gz, or built by tests)."""

    def __init__(
        self, files: dict[str, str], links: dict[str, str] | None = None, label: str = "<memory>"
    ) -> None:
        key = self._key
        self.files = {key(k): v for k, v in files.items()}
        self.links = {key(k): v for k, v in (links or {}).items()}
        self.label = label
        self.dirs = self._index(self.files, self.links)

    @classmethod
    def of_keys(cls, files: dict[str, str], links: dict[str, str], label: str) -> MemRoot:
        """A MemRoot of dicts whose keys are already as _key makes them (open_archive checks
        each name as it reads it): taken as they are, not copied."""
        self = cls.__new__(cls)
        self.files = files
        self.links = links
        self.label = label
        self.dirs = cls._index(files, links)
        return self

    @staticmethod
    def _index(files: dict[str, str], links: dict[str, str]) -> dict[str, set[str]]:
        """Each folder's entries, from the paths of files and links."""
        dirs: dict[str, set[str]] = {}
        # a sysroot's paths come sorted, so the folder of the last path is usually this one's
        last, entries = None, set()
        for p in (*files, *links):
            parent, _, name = p.rpartition("/")
            if parent == last:
                entries.add(name)
                continue
            last = parent
            got = dirs.get(parent or ".")
            if got is not None:
                entries = got
                entries.add(name)
                continue
            entries = dirs[parent or "."] = {name}
            # a new folder: enter it in its parents, from the deepest up, stopping at the
            # first one already known (its parents are then known too)
            while parent:
                up, _, name = parent.rpartition("/")
                above = dirs.get(up or ".")
                if above is not None:
                    above.add(name)
                    break
                dirs[up or "."] = {name}
                parent = up
        return dirs

    @staticmethod
    def _key(rel: str) -> str:
        rel = rel.lstrip("/")
        # most paths come already normal: skip normpath for them
        if "//" in rel or "/." in rel or rel.startswith(".") or rel.endswith("/"):
            return posixpath.normpath(rel)
        return rel

    def read_text(self, rel: str) -> str | None:
        # a key is its own _key: a hit on rel as given is the answer
        got = self.files.get(rel)
        return got if got is not None else self.files.get(self._key(rel))

    def listdir(self, rel: str) -> list[str] | None:
        key = self._key(rel) if rel.strip("/") else "."
        entries = self.dirs.get(key)
        return sorted(entries) if entries is not None else None

    def readlink(self, rel: str) -> str | None:
        return self.links.get(self._key(rel))


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
            raise InvalidInput(f"{label} is larger than the {_mib(cap)} limit on one file")


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


# inflated bytes taken from the gzip stream at a time: a member's header and data are sliced
# out of one chunk (no read call per member), and memory holds about one chunk
_CHUNK = 1 << 18
_GZIP_MAGIC = b"\x1f\x8b"


def _pieces(data: bytes | IO[bytes]) -> Iterator[bytes]:
    if isinstance(data, bytes):
        yield data
        return
    while piece := data.read(1 << 16):
        yield piece


def _inflate(data: bytes | IO[bytes], label: str) -> Iterator[bytes]:
    """The tar stream in data (gzip, concatenated gzip members, or plain tar) in chunks of at
    most _CHUNK bytes, taken only as the reader asks for them; InvalidInput once more than
    MAX_ARCHIVE_BYTES have come out (a bomb is never inflated whole)."""
    pieces = _pieces(data)
    pending = b""
    while len(pending) < 2:
        more = next(pieces, b"")
        if not more:
            break
        pending += more
    total = 0
    if pending[:2] != _GZIP_MAGIC:
        while pending:
            for at in range(0, len(pending), _CHUNK):
                out = pending[at : at + _CHUNK]
                total += len(out)
                if total > MAX_ARCHIVE_BYTES:
                    raise _too_big(label)
                yield out
            pending = next(pieces, b"")
        return
    while True:
        d = zlib.decompressobj(31)  # 31: gzip framing; zlib checks the CRC and length trailer
        while not d.eof:
            out = d.decompress(pending, _CHUNK)
            pending = d.unconsumed_tail
            if out:
                total += len(out)
                if total > MAX_ARCHIVE_BYTES:
                    raise _too_big(label)
                yield out
            elif not pending:
                pending = next(pieces, b"")
                if not pending:
                    raise EOFError(
                        "Compressed file ended before the end-of-stream marker was reached"
                    )
        # as gzip reads: another member may follow, after zero padding; nothing else may
        pending = d.unused_data.lstrip(b"\0")
        while len(pending) < 2:
            more = next(pieces, b"")
            if not more:
                break
            pending = (pending + more).lstrip(b"\0")
        if not pending:
            return
        if pending[:2] != _GZIP_MAGIC:
            raise OSError(f"Not a gzipped file ({pending[:2]!r})")


def _too_big(label: str) -> InvalidInput:
    return InvalidInput(
        f"{label} inflates past the {_mib(MAX_ARCHIVE_BYTES)} limit on an archive",
        "a sysroot from `ascendtune snapshot` is a few MiB",
    )


class _Tar:
    """The inflated tar stream as a buffer and a position in it, refilled chunk by chunk."""

    __slots__ = ("buf", "chunks", "pos")

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.buf = b""
        self.pos = 0

    def take(self, n: int) -> bytes:
        """The next n bytes (fewer: the stream ended inside them)."""
        pos = self.pos
        end = pos + n
        if end <= len(self.buf):
            self.pos = end
            return self.buf[pos:end]
        parts = [self.buf[pos:]]
        have = len(parts[0])
        while have < n:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            parts.append(chunk)
            have += len(chunk)
        # keep what is left over past the n bytes for the next take
        self.buf = b"".join(parts)
        self.pos = min(n, len(self.buf))
        return self.buf[: self.pos]

    def skip(self, n: int) -> None:
        # a member we do not keep may be large: drop it chunk by chunk, never joined
        while n > 0:
            left = len(self.buf) - self.pos
            if n <= left:
                self.pos += n
                return
            n -= left
            chunk = next(self.chunks, None)
            if chunk is None:
                raise _ArchiveEnd("unexpected end of data")
            self.buf, self.pos = chunk, 0


class _ArchiveEnd(Exception):
    """The stream ended inside a member, or its first header is no tar header."""


_FILE_TYPES = (b"0", b"\0", b"7")  # regular, old regular, contiguous: what tarfile calls a file
_BLOCK = 512
_ZERO_BLOCK = bytes(_BLOCK)  # the end-of-archive marker
_SUM_OK = (0, 65521, -65521)  # see _sum_ok


def _octal(field: bytes) -> int:
    """A tar number field: octal text, or base-256 when the high bit of its first byte is set."""
    if field[:1] and field[0] & 0x80:
        n = field[0] & 0x3F if not field[0] & 0x40 else -(~field[0] & 0x3F) - 1
        for b in field[1:]:
            n = (n << 8) | b
        return n
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise _ArchiveEnd("invalid header") from None


def _text(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _field(block: bytes, start: int, end: int) -> str:
    """_text(block[start:end]) without the slice and the split."""
    cut = block.find(0, start, end)
    return block[start : end if cut < 0 else cut].decode("utf-8", "surrogateescape")


def _pax(data: bytes) -> dict[str, str]:
    """A PAX extended header's records (`LEN key=value\\n`), as text."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            break
        if length <= 0:
            break
        record = data[space + 1 : pos + length - 1]  # without the trailing newline
        key, eq, value = record.partition(b"=")
        if eq:
            out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def _members(tar: _Tar) -> Iterator[tuple[str, bytes, str, int]]:
    """(name, type, link name, size) of each member of a tar stream, in order, as tarfile sees
    them (ustar, GNU long names, PAX headers); the caller takes or skips each member's data
    from `tar` before asking for the next. A bad first header is an error; a bad later one
    ends the archive, as it does for tarfile."""
    first = True
    pax_global: dict[str, str] = {}
    pax: dict[str, str] = {}
    long_name: str | None = None
    long_link: str | None = None
    adler32 = zlib.adler32
    while True:
        # the header straight from the buffer when it is all there (nearly always)
        pos = tar.pos
        buf = tar.buf
        if pos + _BLOCK <= len(buf):
            block = buf[pos : pos + _BLOCK]
            tar.pos = pos + _BLOCK
        else:
            block = tar.take(_BLOCK)
        if len(block) < _BLOCK or block == _ZERO_BLOCK:
            if first:
                raise _ArchiveEnd("truncated header" if block else "empty file")
            return
        # the usual octal checksum and size fields parse with one int() each; anything else
        # (base-256, blanks, old signed sums) takes the full rules
        try:
            want = int(block[148:156].split(b"\0", 1)[0], 8)
            ok = (adler32(block) & 0xFFFF) - 1 - sum(block[148:156]) + 256 - want in _SUM_OK
        except ValueError:
            ok = False
        if not ok and not _sum_ok(block):
            if first:
                raise _ArchiveEnd("bad checksum")
            return
        first = False
        kind = block[156:157]
        try:
            size = int(block[124:136].split(b"\0", 1)[0], 8)
        except ValueError:
            size = _octal(block[124:136])
        if kind in (b"x", b"g", b"L", b"K"):
            data = tar.take(size)
            if len(data) < size:
                raise _ArchiveEnd("unexpected end of data")
            tar.skip(-size % _BLOCK)
            if kind == b"x":
                pax.update(_pax(data))
            elif kind == b"g":
                pax_global.update(_pax(data))
            elif kind == b"L":
                long_name = _text(data)
            else:
                long_link = _text(data)
            continue
        name = _field(block, 0, 100)
        if block[257:263] == b"ustar\0" and block[345]:  # POSIX ustar: a long name is split
            name = _field(block, 345, 500) + "/" + name  # in prefix/name
        link = _field(block, 157, 257) if block[157] else ""
        if long_name is not None:
            name = long_name
            long_name = None
        if long_link is not None:
            link = long_link
            long_link = None
        if pax or pax_global:
            fields = {**pax_global, **pax}
            name = fields.get("path", name)
            link = fields.get("linkpath", link)
            if "size" in fields:
                try:
                    size = int(fields["size"])
                except ValueError:
                    raise _ArchiveEnd("invalid PAX size") from None
            pax = {}
        if kind == b"\0" and name.endswith("/"):
            kind = b"5"  # old tars: a folder is a file whose name ends in /
        if kind == b"5":
            name = name.rstrip("/")
        yield name, kind, link, size


def _sum_ok(block: bytes) -> bool:
    """The header checksum (its own field counted as spaces), unsigned or as old tars signed."""
    try:
        want = _octal(block[148:156])
    except _ArchiveEnd:
        return False
    field = sum(block[148:156])
    # adler32's low half is 1 + the byte sum mod 65521: the sum in C, without a Python loop
    # (a header's sum is at most 130,560, so two sums mod 65521 tell damage as well)
    if (zlib.adler32(block) & 0xFFFF) - 1 - field + 256 - want in _SUM_OK:
        return True
    unsigned = sum(block) - field + 256
    if want == unsigned:
        return True
    signed = unsigned - 256 * sum(1 for b in block[:148] + block[156:] if b > 127)
    return want == signed


def open_archive(data: bytes | IO[bytes], label: str) -> MemRoot:
    """Read a sysroot archive member by member, bounded in inflated bytes and member count.

    data is the archive's bytes or a binary stream of them; either way the inflated tar is
    never held whole: it is inflated a chunk at a time as the members are read, decoded and
    kept.
    """
    tar = _Tar(_inflate(data, label))
    take = tar.take
    files: dict[str, str] = {}
    links: dict[str, str] = {}
    names: list[str] = []
    plain = True  # every kept name is already as MemRoot keys it (no // or /. or trailing /)
    try:
        for raw_name, kind, linkname, size in _members(tar):
            if len(names) >= MAX_ARCHIVE_MEMBERS:
                raise InvalidInput(
                    f"{label} holds more than {MAX_ARCHIVE_MEMBERS} members (the limit)",
                    "a sysroot from `ascendtune snapshot` holds a few thousand",
                )
            name = raw_name.lstrip("./")
            names.append(name)
            keep = (
                bool(name)
                and not name.startswith("/")
                and (".." not in name or ".." not in name.split("/"))
            )
            if kind == b"2":
                if keep:
                    links[name] = linkname
                    if plain and ("//" in name or "/." in name or name.endswith("/")):
                        plain = False
                continue
            if kind in _FILE_TYPES and keep:
                if size > MAX_FILE_BYTES:
                    raise InvalidInput(
                        f"{label}: member {name} is larger than the "
                        f"{_mib(MAX_FILE_BYTES)} limit on one file"
                    )
                # the data and its padding in one take; short: the archive ends inside them
                whole = size + (-size % _BLOCK)
                got = take(whole)
                if len(got) < whole:
                    raise _ArchiveEnd("unexpected end of data")
                files[name] = (got if whole == size else got[:size]).decode(
                    "utf-8", errors="replace"
                )
                if plain and ("//" in name or "/." in name or name.endswith("/")):
                    plain = False
            elif kind not in (b"1", b"3", b"4", b"5", b"6"):
                # links, devices, folders and FIFOs carry no data; anything else: skip its own
                tar.skip(size + (-size % _BLOCK))
        # inflate what follows the end marker (a record's padding): a .tar.gz cut short or
        # damaged after its last member is still refused, its CRC still checked
        for _ in tar.chunks:
            pass
    except InvalidInput:
        raise
    except (_ArchiveEnd, EOFError, OSError, zlib.error, ValueError) as e:
        first = (str(e).splitlines() or [type(e).__name__])[0]
        if not names:
            raise InvalidInput(
                f"{label} is neither a folder nor a readable .tar/.tar.gz archive ({first})",
                "give a sysroot written by `ascendtune snapshot`",
            ) from None
        raise InvalidInput(f"{label} is a damaged archive: {first}") from None
    prefix = _strip_top(names)
    if prefix:
        files = {k[len(prefix) :]: v for k, v in files.items() if k.startswith(prefix)}
        links = {k[len(prefix) :]: v for k, v in links.items() if k.startswith(prefix)}
        files.pop("", None)
        links.pop("", None)
        plain = False
    if plain:
        return MemRoot.of_keys(files, links, label)
    return MemRoot(files, links, label=label)


def read_archive_file(p: Path) -> bytes:
    """The bytes of an archive given as --sysroot: a regular file, at most MAX_ARCHIVE_BYTES."""
    from ascendtune.host.files import read_user_file

    return read_user_file(str(p), what="sysroot archive", cap=MAX_ARCHIVE_BYTES, binary=True)


_TOP_LEVEL = ("sys", "proc", "commands", "meta.json", "etc")


def _not_empty(root: Root, sysroot: str) -> Root:
    """An empty folder (or archive) is no captured host: every command would guess from nothing."""
    top = set(root.listdir(".") or [])
    if not top.intersection(_TOP_LEVEL):
        raise MissingError(
            f"sysroot {sysroot} holds no captured host (none of sys/, proc/, commands/, meta.json)",
            "give a folder or .tar.gz written by `ascendtune snapshot`",
        )
    return root


def open_root(sysroot: str | None) -> Root:
    """The live host (None or "/"), a sysroot folder, or a sysroot archive (.tar, .tar.gz, .tgz)."""
    if sysroot is None or os.path.abspath(sysroot) == "/":
        return DirRoot("/", live=True)
    p = Path(sysroot)
    if p.is_dir():
        return _not_empty(DirRoot(p), sysroot)
    if p.exists():
        return _not_empty(open_archive(read_archive_file(p), str(p)), sysroot)
    raise MissingError(
        f"sysroot {sysroot} does not exist",
        "give a folder or .tar.gz written by `ascendtune snapshot`",
    )
