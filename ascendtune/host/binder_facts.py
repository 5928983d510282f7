"""What the binder chain reads of one process, through a Root (a snapshot replays it): its
environment (secrets already masked in a snapshot), its command line, the wrappers among its
parents, and the binder packages installed beside the vllm_ascend it imports."""

from __future__ import annotations

from typing import NamedTuple

from ascendtune.core.binders import outer
from ascendtune.core.binders.ascendtune import launch_words
from ascendtune.core.vllm_config.inputs import parse_environ
from ascendtune.core.workerfacts import WorkerFacts
from ascendtune.host import vllm_detect
from ascendtune.host.cgroup import resolve_cpuset
from ascendtune.host.roots import Root

# the distributions whose presence changes the chain (normalised names)
PACKAGES = (
    "torch_npu",
    "ucm",
    "uc_manager",
    "unified_cache_management",
    "vllm_afd_plugin",  # afd-plugin's distribution (pyproject.toml: vllm-afd-plugin)
    "afd_plugin",
    "vllm_afd",
    "sglang",
    "vllm_ascend",
)


class ProcessBinderFacts(NamedTuple):
    argv: tuple[str, ...]
    env: dict[str, str]
    env_known: bool
    wrappers: tuple[tuple[str, ...], ...]
    plugins: dict[str, str]
    site: str | None  # the site-packages folder the plugins were read in (as the process sees it)


def _argv(root: Root, pid: int) -> tuple[str, ...]:
    text = root.read_text(f"proc/{pid}/cmdline") or ""
    return tuple(a for a in text.split("\0") if a)


def _ppid(root: Root, pid: int) -> int | None:
    stat = root.read_text(f"proc/{pid}/stat") or ""
    try:
        return int(stat.rpartition(")")[2].split()[1])
    except (IndexError, ValueError):
        return None


def parents(root: Root, pid: int, depth: int = 3) -> list[int]:
    out: list[int] = []
    cur: int | None = pid
    while len(out) < depth:
        cur = _ppid(root, cur) if cur is not None else None
        if cur is None or cur <= 1:
            break
        out.append(cur)
    return out


def plugins_in(root: Root, pid: int | None, site: str | None) -> dict[str, str]:
    """The binder packages in the site-packages folder `site` (as PID sees it), by name."""
    if site is None:
        return {}
    rel = site.lstrip("/")
    names = (root.listdir(f"proc/{pid}/root/{rel}") if pid is not None else None) or root.listdir(
        rel
    )
    out: dict[str, str] = {}
    for name in sorted(names or []):
        if not name.endswith(".dist-info"):
            continue
        stem, _, version = name[: -len(".dist-info")].partition("-")
        key = stem.replace("-", "_").replace(".", "_").lower()
        if key in PACKAGES and version:
            out[key] = version
    return out


def _site(root: Root, pid: int) -> str | None:
    found = vllm_detect.detect_pid(root, pid)
    return found.site if found is not None else None


def read(root: Root, pid: int) -> ProcessBinderFacts:
    """The chain's facts of process PID."""
    env_text = root.read_text(f"proc/{pid}/environ")
    wrappers: list[tuple[str, ...]] = []
    for p in parents(root, pid):
        argv = _argv(root, p)
        words = outer.wrapper_of(argv) or launch_words(argv)
        if words:
            wrappers.append(words)
    site = _site(root, pid)
    return ProcessBinderFacts(
        _argv(root, pid),
        parse_environ(env_text) if env_text is not None else {},
        env_text is not None,
        tuple(wrappers),
        plugins_in(root, pid, site),
        site,
    )


def paths(root: Root, pid: int) -> list[str]:
    """What `snapshot` must capture so `--sysroot` replays `read` for PID: its environment and
    command line, its parents' command lines and stat, and each binder package's METADATA
    beside vllm_ascend (the folder listing replays from them)."""
    out = [f"proc/{pid}/environ", f"proc/{pid}/cmdline", f"proc/{pid}/stat"]
    for p in parents(root, pid):
        out += [f"proc/{p}/cmdline", f"proc/{p}/stat"]
    site = _site(root, pid)
    if site is not None:
        rel = site.lstrip("/")
        base = f"proc/{pid}/root/{rel}" if root.listdir(f"proc/{pid}/root/{rel}") else rel
        for name in root.listdir(base) or []:
            stem = (
                name[: -len(".dist-info")].partition("-")[0] if name.endswith(".dist-info") else ""
            )
            if stem.replace("-", "_").lower() in PACKAGES:
                out.append(f"{base}/{name}/METADATA")
    return [p for p in out if root.read_text(p) is not None]


def process_facts(root: Root, pid: int) -> WorkerFacts:
    """Any process read as doctor reads a worker (no device held): its threads' masks, its
    cpuset and cgroup, its parents; what `explain binders --pid` needs of a non-worker."""
    from ascendtune.host import workers as w  # its readers of one process, shared

    st = w._stat(root, pid)
    cpuset = resolve_cpuset(root, pid)
    return WorkerFacts(
        pid=pid,
        devices=(),
        found_by=("pid",),
        comm=(root.read_text(f"proc/{pid}/comm") or "").strip() or (st[0] if st else None),
        command=_argv(root, pid),
        ancestors=w._ancestors(root, st[1]) if st else (),
        cgroup=w._cgroup_key(root.read_text(f"proc/{pid}/cgroup")),
        cpuset=cpuset.cpus if cpuset is not None else None,
        threads=w._threads(root, pid),
    )
