"""DirRoot: the live `/`, or a captured host in a folder, walked component by component through
directory descriptors (openat, O_NOFOLLOW) so that nothing under it leads outside it."""

from __future__ import annotations

import errno
import os
import stat
from collections import OrderedDict, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ascendtune.core.errors import InvalidInput, PermissionDenied
from ascendtune.core.lazy import optional_module
from ascendtune.host.roots.base import (
    ABSENT,
    MAX_ERROR_CHARS,
    MAX_FILE_BYTES,
    MAX_LINK_HOPS,
    CommandOutput,
    Folder,
    Root,
    read_capped,
)

if TYPE_CHECKING:
    from ascendtune.host import runner


_NATIVE: list[Any] = []  # the compiled reads, once loaded (or None)


def walk_native() -> Any | None:
    """A sysroot folder's common reads compiled (_walkc.c: a folder's plain regular files, and
    one file and one folder of links of each entry of a folder), loaded at first use; None where
    the package was installed without a C compiler: the same answers then come from the os
    calls in Python (tests/host/test_walk_native.py runs both)."""
    return optional_module("ascendtune.host.roots._walkc", _NATIVE)


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
        native = walk_native()
        if native is not None:
            # compiled: a CPU's caches, a PCI device's files (no stat_result, no path string
            # made per file); None where the stat finds none, True: the full read decides
            got = native.texts(fd, "", (name,), MAX_FILE_BYTES, True)[0]
            return self.root.read_text(self.path(name)) if got is True else got
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
        native = walk_native()
        if native is not None:
            # compiled: read_cpus of 4,096 CPUs 94 -> 75 ms of CPU (one openat2 for the two
            # folders on the way, no Python object per system call)
            got = native.texts(fd, under, names, MAX_FILE_BYTES)
            if isinstance(got, int):  # a folder on the way absent (-1); a link, "..", ... (-2)
                return [None] * len(names) if got == -1 else super().read_texts(names, under)
            texts: list[Any] = got  # str, or True: ask by path
            if True in texts:  # anything unusual: the full read decides
                rel = f"{self.rel}/{under}" if under else self.rel
                for i, text in enumerate(texts):
                    if text is True:
                        texts[i] = self.root.read_text(f"{rel}/{names[i]}" if rel else names[i])
            return texts
        parts = under.split("/") if under else []
        if any(p in ("", ".", "..") for p in parts):
            return super().read_texts(names, under)
        rel = f"{self.rel}/{under}" if under else self.rel
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
            return ABSENT
        except OSError:
            return Folder(self.root, self.path(name))  # a link (ELOOP), not a folder: by path
        return _OpenFolder(self.dir_root, f"{self.rel}/{name}" if self.rel else name, fd)


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


def _read_sized(name: str, dir_fd: int, size: int) -> str | None:
    """A regular file `stat` found `size` bytes long, read at `dir_fd` in one read; None when
    it has grown since the stat (the caller's full read decides then)."""
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        data = os.read(fd, size + 1)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace") if len(data) <= size else None


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
        self._top = -1  # the root folder, held open for the compiled batch reads (_top_fd)

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Close the folders kept open (reading again reopens them)."""
        dirs = getattr(self, "_dirs", None)
        while dirs:
            os.close(dirs.popitem()[1])
        top, self._top = getattr(self, "_top", -1), -1
        if top >= 0:
            os.close(top)

    def _top_fd(self) -> int:
        """The root folder's descriptor, opened once (as _walk opens it for every walk)."""
        if self._top < 0:
            self._top = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        return self._top

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
            # path, so rel is one too), or one level below such a folder; a link, or anything
            # unusual, takes the whole walk below
            cut = rel.rfind("/")
            try:
                fd = self._open_dir(rel[:cut]) if cut > 0 else None
            except FileNotFoundError:
                return None
            name = rel[cut + 1 :]
            if fd is not None and name not in ("", ".", ".."):
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISLNK(st.st_mode):
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

    def _open_dir(self, rel: str) -> int | None:
        """The descriptor of the plain folder rel kept in _dirs, opened from the deepest of
        its folders kept there (an openat per component, O_NOFOLLOW | O_DIRECTORY: never a
        link, never anything but a folder; each kept); None when none is, or rel is no plain
        folder there (the caller then takes the whole walk, which decides); FileNotFoundError
        when a folder on the way holds no such entry. The descriptor stays _dirs'."""
        dirs = self._dirs
        fd = dirs.get(rel)
        if fd is not None:
            dirs.move_to_end(rel)
            return fd
        cut = rel.rfind("/")
        if cut <= 0:
            return None
        name = rel[cut + 1 :]
        if name in ("", ".", ".."):
            return None
        up = self._open_dir(rel[:cut])  # a plain path's folders are plain folders too
        if up is None:
            return None
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=up)
        except FileNotFoundError:
            raise
        except OSError:
            return None  # a link, not a folder, unreadable: the walk says which
        dirs.move_to_end(rel[:cut])
        dirs[rel] = fd
        while len(dirs) > self.MAX_OPEN_DIRS:
            os.close(dirs.popitem(last=False)[1])
        return fd

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
                at = self._open_dir(rel[:cut]) if cut > 0 else None
                name = rel[cut + 1 :]
                if at is not None and name not in ("", ".", ".."):
                    st = os.stat(name, dir_fd=at, follow_symlinks=False)
                    mode = st.st_mode
                    if stat.S_ISREG(mode):
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

    def read_files(self, rels: list[str]) -> list[str | None]:
        # read_bytes' common case inlined (a plain regular file under plain folders); anything
        # else, or any error but absence, is answered by read_text, which decides
        if self.live:
            return super().read_files(rels)
        native = walk_native()
        if native is not None:
            return self._read_files_native(native, rels)
        out: list[str | None] = []
        add = out.append
        open_dir, sstat = self._open_dir, os.stat
        isreg = stat.S_ISREG
        for rel in rels:
            cut = rel.rfind("/")
            name = rel[cut + 1 :]
            try:
                at = open_dir(rel[:cut]) if cut > 0 and name not in ("", ".", "..") else None
                if at is not None:
                    st = sstat(name, dir_fd=at, follow_symlinks=False)
                    size = st.st_size
                    if isreg(st.st_mode) and size < MAX_FILE_BYTES:
                        text = _read_sized(name, at, size)
                        if text is not None:
                            add(text)
                            continue
            except FileNotFoundError:
                add(None)  # no such entry in a plain folder (or no such folder on the way)
                continue
            except OSError:
                pass
            add(self.read_text(rel))
        return out

    def _read_files_native(self, native: Any, rels: list[str]) -> list[str | None]:
        """read_files compiled (_walkc.files): one call for all of rels, each folder opened once
        from the root with one openat2 (no link on the way, nothing outside the root) and kept
        for the run of paths in it, no Python per path: a snapshot of a 5,000-thread worker
        reads 10,000 task files in 5,000 folders so. The answers are the Python loop's: a file
        the stat finds absent (or whose folder is absent) is None; anything unusual (a link, a
        name that is not one plain component, a file past the cap, an error) is read_text's."""
        try:
            top = self._top_fd()
        except OSError:
            return [self.read_text(rel) for rel in rels]  # the root itself: the walk decides
        got: list[Any] = native.files(top, rels, MAX_FILE_BYTES)
        if True in got:
            got = [self.read_text(rels[k]) if t is True else t for k, t in enumerate(got)]
        return got

    def read_children(
        self, folder: str, names: list[str], file: str | None, links: str, *, skip_below: int = 0
    ) -> list[tuple[str | None, list[str] | None]]:
        # A sysroot's proc/ may hold thousands of PID folders, and every system call counts
        # (about 10 a process: the scan's whole cost). Each entry is opened once from the
        # folder's descriptor (O_NOFOLLOW: a link is never followed here), its file is one
        # stat, open and read from that descriptor (or the stat alone, when the file is shorter
        # than skip_below), its link folder one open, one listing and a readlink per link; no
        # Folder object, no path. Anything unusual (a link, a name that is not one plain
        # component, an error other than absence) is answered by read_text / readlinks of its
        # path, which resolve links inside the root and refuse what they refuse (a FIFO, a
        # device, a folder as the file; a file past the bound).
        if self.live or not names:
            return super().read_children(folder, names, file, links, skip_below=skip_below)
        try:
            top = self._walk(folder, last="dir")
        except OSError:
            top = None
        if top is None:
            return super().read_children(folder, names, file, links, skip_below=skip_below)
        prefix = folder.strip("/")
        prefix = f"{prefix}/" if prefix else ""
        out: list[tuple[str | None, list[str] | None]] = []
        add = out.append
        sopen, sclose, sstat, listdir, readlink = (
            os.open,
            os.close,
            os.stat,
            os.listdir,
            os.readlink,
        )
        isreg, cap = stat.S_ISREG, MAX_FILE_BYTES
        plain_file = file is None or ("/" not in file and file not in ("", ".", ".."))
        plain_links = "/" not in links and links not in ("", ".", "..")
        native = walk_native() if plain_file and plain_links else None
        if native is not None:
            # compiled: doctor's scan 23 -> 18 us of CPU a process, C's bare reads 16 (no
            # Python object per system call, no opendir); True in a row: ask by its path
            try:
                rows: list[Any] = native.children(top, names, file, links, skip_below, cap)
            finally:
                sclose(top)
            for i, (got_text, got_targets) in enumerate(rows):
                if got_text is True or got_targets is True:
                    rel = prefix + names[i]
                    if got_text is True:
                        got_text = self.read_text(f"{rel}/{file}")
                    if got_targets is True:
                        got_targets = self.readlinks(f"{rel}/{links}")
                    rows[i] = (got_text, got_targets)
            return rows
        try:
            for name in names:
                if not plain_file or "/" in name or name in ("", ".", ".."):
                    add(self._child_by_path(prefix + name, file, links))
                    continue
                try:
                    d = sopen(name, _DIR_FLAGS, dir_fd=top)
                except FileNotFoundError:
                    add((None, None))
                    continue
                except OSError:  # a link (ELOOP), not a folder, unreadable: by its path
                    add(self._child_by_path(prefix + name, file, links))
                    continue
                try:
                    text: str | None = None
                    if file is not None:
                        try:
                            st = sstat(file, dir_fd=d, follow_symlinks=False)
                            size = st.st_size
                            if not isreg(st.st_mode):
                                text = self.read_text(f"{prefix}{name}/{file}")
                            elif size < skip_below:
                                text = ""
                            elif size >= cap:
                                text = self.read_text(f"{prefix}{name}/{file}")
                            else:
                                text = _read_sized(file, d, size)
                                if text is None:  # grew since the stat: the full read decides
                                    text = self.read_text(f"{prefix}{name}/{file}")
                        except FileNotFoundError:
                            pass
                        except OSError:
                            text = self.read_text(f"{prefix}{name}/{file}")
                    targets: list[str] | None = None
                    try:
                        if not plain_links:
                            raise NotADirectoryError  # by its path below
                        fd = sopen(links, _DIR_FLAGS, dir_fd=d)
                    except FileNotFoundError:
                        pass
                    except OSError:  # a link (ELOOP), not a folder: by its path
                        targets = self.readlinks(f"{prefix}{name}/{links}")
                    else:
                        try:
                            targets = []
                            for entry in sorted(listdir(fd)):
                                try:
                                    targets.append(readlink(entry, dir_fd=fd))
                                except OSError:
                                    continue  # closed meanwhile, or not a link
                        except OSError:
                            targets = None
                        finally:
                            sclose(fd)
                    add((text, targets))
                finally:
                    sclose(d)
        finally:
            sclose(top)
        return out

    def _child_by_path(
        self, rel: str, file: str | None, links: str
    ) -> tuple[str | None, list[str] | None]:
        """read_children of the entry rel, by its paths (the closed-world walk decides)."""
        text = self.read_text(f"{rel}/{file}") if file is not None else None
        return text, self.readlinks(f"{rel}/{links}")

    def folder(self, rel: str) -> Folder:
        if self.live:
            return Folder(self, rel)  # live reads take whole paths anyway
        try:
            fd = self._walk(rel, last="dir")
        except OSError:
            return Folder(self, rel)
        return ABSENT if fd is None else _OpenFolder(self, rel.strip("/"), fd)

    def listdir(self, rel: str) -> list[str] | None:
        try:
            if self.live:
                return sorted(os.listdir(self._p(rel)))
            try:
                kept = self._open_dir(rel)
            except FileNotFoundError:
                return None
            if kept is not None:
                return sorted(os.listdir(kept))  # listdir reads a dup from the start, rewinds
            fd = self._walk(rel, last="dir")
            if fd is None:
                return None
            try:
                return sorted(os.listdir(fd))
            finally:
                os.close(fd)
        except OSError:
            return None

    def listdirs(self, rels: list[str]) -> list[list[str] | None]:
        # compiled (_walkc.folders): each folder one openat2 from the root and one listing, no
        # walk through _dirs (a snapshot lists the cache folder of every CPU: 8,192 of them)
        native = None if self.live else walk_native()
        if native is None:
            return super().listdirs(rels)
        try:
            top = self._top_fd()
        except OSError:
            return super().listdirs(rels)
        got: list[Any] = native.folders(top, rels)
        if True in got:  # a link, or no plain path: the walk decides
            got = [self.listdir(rels[k]) if t is True else t for k, t in enumerate(got)]
        return got

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

    def renew_tool_budget(self) -> None:
        self._deadline = None  # the next tool run starts a budget of its own

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
