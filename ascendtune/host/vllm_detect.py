"""Which vLLM-Ascend a server runs: the vllm_ascend distribution its interpreter imports.

Read through the Root, so a snapshot replays it: the site-packages folders a PID uses (from
`proc/PID/maps`, its `cwd`, and PYTHONPATH / VIRTUAL_ENV in `proc/PID/environ`), looked up under
`proc/PID/root` (its own mount namespace) and then under the root itself, and the
`vllm_ascend-*.dist-info/METADATA` beside the module; also whether vLLM-Omni is installed there.
"""

# real annotations, no `from __future__ import annotations`: typing compiles each string
# annotation of a NamedTuple field at import (7.2 M instructions over 7 modules, docs/startup.md)
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from ascendtune.core import vllm_ascend as va
from ascendtune.core.parsers.dist_metadata import dist_info_version, parse_metadata
from ascendtune.host.roots import Root

if TYPE_CHECKING:
    from ascendtune.core.vllm_ascend.resolve import Resolved

PROJECT = "vllm_ascend"
OMNI = "vllm_omni"
_SITE = re.compile(r"^(/\S*?/(?:site|dist)-packages)(?:/|$)")
_HIT = "-packages"  # in every path _SITE matches
# where a default python keeps its packages (no PID to follow)
_SYSTEM_LIBS = ("usr/local/lib", "usr/lib", "usr/local/python3/lib", "opt/conda/lib")


class Detected(NamedTuple):
    version: str  # vllm_ascend's `Version:`
    site: str  # the site-packages folder, as the process sees it
    metadata: str  # the METADATA path read, relative to the root
    with_vllm_omni: bool
    pid: int | None = None

    @property
    def resolved(self) -> "Resolved | None":
        """The registry entry this version is, or stands nearest to (None: not a version)."""
        return va.package_version(self.version)


class TargetChoice(NamedTuple):
    """The version whose behaviour a command models, and why."""

    entry: va.VllmAscendVersion
    reason: str  # JSON `target_reason`
    detected: Detected | None = None
    inferred: str = ""  # when the entry only stands in for what was found: the inference


def _rel(path: str) -> str:
    return path.lstrip("/")


def site_dirs(root: Root, pid: int) -> list[str]:
    """The site-packages folders PID uses, absolute as the process sees them, first seen first."""
    out = _maps_sites(root.read_text(f"proc/{pid}/maps") or "")
    from ascendtune.core.vllm_config.inputs import parse_environ  # only when a PID is looked at

    env = parse_environ(root.read_text(f"proc/{pid}/environ") or "")
    out += [p for p in env.get("PYTHONPATH", "").split(":") if p.startswith("/")]
    venv = env.get("VIRTUAL_ENV")
    if venv:
        for lib in (
            root.listdir(f"proc/{pid}/root/{_rel(venv)}/lib")
            or root.listdir(f"{_rel(venv)}/lib")
            or []
        ):
            out.append(f"{venv.rstrip('/')}/lib/{lib}/site-packages")
    cwd = root.readlink(f"proc/{pid}/cwd")
    if cwd and cwd.startswith("/"):
        out.append(cwd)  # a source checkout run from its own folder
    return list(dict.fromkeys(out))


def _maps_sites(text: str) -> list[str]:
    """The site-packages folders of the files mapped in a proc/PID/maps text, in its order.

    Only a line holding "-packages" can name one: the lines around each such hit are cut out
    and parsed, not every line (a worker of 500 threads maps about 1,600 areas, most of them
    stacks and anonymous memory)."""
    out: list[str] = []
    at = text.find(_HIT)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        # the same lines as text.splitlines() gives: a piece between two "\n" split again
        for line in text[start:end].splitlines():
            if _HIT not in line:
                continue
            parts = line.split(None, 5)
            if len(parts) == 6:
                m = _SITE.match(parts[5].strip())
                if m:
                    out.append(m.group(1))
        at = text.find(_HIT, end)
    return out


def _look(root: Root, prefix: str, site: str) -> tuple[str, str, bool] | None:
    """(version, METADATA path, vLLM-Omni there) for a vllm_ascend dist-info in `site`."""
    base = f"{prefix}{_rel(site)}".rstrip("/")
    names = root.listdir(base)
    if not names:
        return None
    for name in sorted(names):
        folder_version = dist_info_version(name, PROJECT)
        if folder_version is None:
            continue
        meta_path = f"{base}/{name}/METADATA"
        meta = root.read_text(meta_path)
        version = (parse_metadata(meta).version if meta else None) or folder_version
        omni = OMNI in names or any(dist_info_version(n, OMNI) for n in names)
        return version, meta_path, omni
    return None


def detect_pid(root: Root, pid: int) -> Detected | None:
    """The vllm_ascend distribution PID imports, or None when none is found."""
    for site in site_dirs(root, pid):
        for prefix in (f"proc/{pid}/root/", ""):
            hit = _look(root, prefix, site)
            if hit is not None:
                return Detected(hit[0], site, hit[1], hit[2], pid)
    return None


def detect_default(root: Root) -> Detected | None:
    """The vllm_ascend installed for the default python (system and conda site-packages)."""
    for lib in _SYSTEM_LIBS:
        for py in sorted(root.listdir(lib) or [], reverse=True):
            if not py.startswith("python3"):
                continue
            for kind in ("site-packages", "dist-packages"):
                site = f"/{lib}/{py}/{kind}"
                hit = _look(root, "", site)
                if hit is not None:
                    return Detected(hit[0], site, hit[1], hit[2])
    return None


def detect_paths(root: Root, pid: int) -> list[str]:
    """What `snapshot` must capture so `--sysroot` replays detect_pid for this PID."""
    paths = [f"proc/{pid}/maps"] if root.read_text(f"proc/{pid}/maps") is not None else []
    found = detect_pid(root, pid)
    if found is not None:
        paths.append(found.metadata)
        if found.with_vllm_omni:
            base = found.metadata.rsplit("/", 2)[0]
            paths += [
                f"{base}/{n}/METADATA"
                for n in root.listdir(base) or []
                if dist_info_version(n, OMNI) and root.read_text(f"{base}/{n}/METADATA")
            ]
    return paths


def resolve_target(root: Root, target: str | None, pids: Iterable[int] = ()) -> TargetChoice:
    """`--target VERSION|auto`: the version entry, why it was chosen (JSON `target_reason`), what
    detection found, and the inference when the entry only stands in for the version found.
    auto: the first PID whose vllm_ascend is found, else the default python's, else the newest
    known version."""
    if target and target != "auto":
        return TargetChoice(va.get(target), "given with --target")
    found: Detected | None = None
    for pid in pids:
        found = detect_pid(root, pid)
        if found is not None:
            break
    where = f"PID {found.pid}'s environment" if found and found.pid is not None else ""
    if found is None:
        found = detect_default(root)
        where = "the default python's site-packages" if found else ""
    if found is None:
        return TargetChoice(va.NEWEST, "newest known (no vllm_ascend found on this host)")
    said = f"vllm_ascend {found.version} found in {where}"
    got = found.resolved
    if got is None:
        how = (
            f"{found.version!r} is not a version string ascendtune can order: modelled as the "
            f"newest known, {va.NEWEST.name}"
        )
        return TargetChoice(va.NEWEST, f"{said}; {how}", found, how)
    if got.exact:
        return TargetChoice(
            got.entry, f"{said} ({found.version} {got.how})" if got.how else said, found
        )
    how = f"{found.version} {got.how}"
    return TargetChoice(got.entry, f"{said}; {how}", found, how)
