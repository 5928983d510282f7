"""MemRoot: a captured host held in memory (from a .tar.gz, or built by tests)."""

from __future__ import annotations

import posixpath

from ascendtune.host.roots.base import Root


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
