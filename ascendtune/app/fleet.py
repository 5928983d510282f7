"""`fleet`: the same answers for every node of a Ray cluster, or for a folder of snapshots.

Snapshot-first: every node's snapshot (gathered by Ray tasks, or any other way for `fleet
compare`) is judged here by the code behind `topo`, `doctor` and `plan --json`, on the driver,
so every node is judged alike and every run can be saved and replayed. The comparison itself is
pure (`ascendtune.core.fleet`); Ray lives in `ascendtune.host.ray_fleet`. Read-only.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ascendtune.app.options import PlanOptions
from ascendtune.core import fleet as core
from ascendtune.core.errors import AscendtuneError, MissingError, PermissionDenied, UsageError
from ascendtune.core.jsondoc import versioned

if TYPE_CHECKING:
    from ascendtune.host.ray_fleet import Gathered
    from ascendtune.host.roots import Root

__all__ = ["FleetCompareOptions", "FleetOptions", "FleetReport", "compare", "document", "run"]


class FleetOptions(NamedTuple):
    """`fleet snapshot|topo|doctor|plan`: every node of a Ray cluster."""

    view: str = "doctor"
    ray_address: str | None = None  # None: RAY_ADDRESS, else auto
    timeout: float = 60.0
    nodes: tuple[str, ...] = ()  # hostnames, IPs or node id prefixes; empty: every alive node
    save: str | None = None  # a folder: one NODE.tar.gz per answering node
    ship: bool = True  # ship ascendtune to the nodes as runtime_env py_modules
    plan: PlanOptions = PlanOptions()


class FleetCompareOptions(NamedTuple):
    """`fleet compare PATH...`: snapshots gathered any other way (no Ray)."""

    paths: tuple[str, ...]
    view: str = "doctor"
    plan: PlanOptions = PlanOptions()


@dataclass(frozen=True)
class FleetReport:
    """Every node judged, grouped by topology class, and what differs from the majority."""

    result: core.FleetResult
    body: dict[str, Any]  # the document without schema_version
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    @property
    def error(self) -> AscendtuneError | None:
        return None  # failed nodes are rows of the report


def run(opts: FleetOptions | FleetCompareOptions) -> FleetReport:
    """`fleet snapshot|topo|doctor|plan` over a Ray cluster, or `fleet compare` over snapshots."""
    from ascendtune.app.plan import check_policy

    check_policy(opts.plan.policy)
    if isinstance(opts, FleetCompareOptions):
        if opts.view == "snapshot":
            raise UsageError("--view snapshot: give doctor, topo or plan")
        return compare(list(opts.paths), opts.view, opts.plan)
    return gather(opts)


def document(report: FleetReport) -> dict[str, Any]:
    """`fleet ... --json` without schema_version (the printer adds it)."""
    return report.body


def check_view(view: str) -> None:
    if view not in core.VIEWS:
        raise UsageError(f"unknown view {view!r}", f"choose one of {', '.join(core.VIEWS)}")


def judge(root: Root, view: str, plan: PlanOptions | None = None) -> dict[str, dict[str, Any]]:
    """The documents `topo --json` (always) and `doctor` or `plan --json` give for a root."""
    from ascendtune.app import doctor as app_doctor
    from ascendtune.app import k8s as app_k8s
    from ascendtune.app import plan as app_plan
    from ascendtune.app import topo as app_topo
    from ascendtune.app.hosts import Loaded, identity, read_host
    from ascendtune.host.reader import read_meta

    opts = plan or PlanOptions()
    if opts.env is None:
        # a node is judged on its own environment (the variables its snapshot recorded, e.g.
        # ASCEND_RT_VISIBLE_DEVICES), never the driver's
        env = read_meta(root).get("env")
        opts = opts._replace(
            env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
        )
    got = Loaded(root, read_host(root), identity(root))
    # as `topo --json` has it, with the kubelet's view on a Kubernetes node (compared per node)
    topo = app_topo.TopoReport(got.host, got.identity, app_k8s.report(root, got.host))
    docs = {"topo": versioned(app_topo.document(topo))}
    if view == "doctor":
        report = app_doctor.doctor(root, app_doctor.DoctorOptions(plan=opts))
        docs["doctor"] = versioned(app_doctor.document(report))
    elif view == "plan":
        planned = app_plan.of_loaded(got, app_plan.PlanCommandOptions(plan=opts))
        docs["plan"] = versioned(app_plan.document(planned))
    return docs


def _node_input(
    name: str,
    root: Root | None,
    view: str,
    plan: PlanOptions | None,
    node_id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> core.NodeInput:
    extra = dict(extra or {})
    if root is None:
        return core.NodeInput(name, node_id, None, "no snapshot", core.FAILED, extra)
    try:
        docs = judge(root, view, plan)
    except AscendtuneError as e:
        return core.NodeInput(
            name, node_id, None, f"cannot judge its snapshot: {e}", core.FAILED, extra
        )
    except Exception as e:  # a defect met on one node's snapshot: that node's row, not the run
        return core.NodeInput(
            name,
            node_id,
            None,
            f"cannot judge its snapshot: internal error {type(e).__name__}: {e} (a defect of "
            "ascendtune: please report it with that snapshot)",
            core.FAILED,
            extra,
        )
    hostname = docs["topo"].get("hostname") or name
    return core.NodeInput(str(hostname), node_id, docs, None, None, extra)


def snapshot_paths(args: list[str]) -> list[tuple[str, str | None]]:
    """Every snapshot named: a snapshot folder or archive, or a folder holding several (each
    with the folder it was found in, so a link out of that folder can be refused)."""
    from ascendtune.host.snapshot import is_archive

    out: list[tuple[str, str | None]] = []
    for a in args:
        p = Path(a)
        try:
            if p.is_file():
                out.append((a, None))
            elif p.is_dir():
                if any((p / m).exists() for m in ("meta.json", "sys", "proc")):
                    out.append((a, None))
                    continue
                kids = sorted(
                    str(k)
                    for k in p.iterdir()
                    if (k.is_file() and is_archive(k.name)) or k.is_dir()
                )
                if not kids:
                    raise MissingError(
                        f"{a} holds no snapshot", "give snapshot folders or .tar.gz files"
                    )
                out += [(k, a) for k in kids]
            else:
                raise MissingError(f"{a} does not exist", "give snapshot folders or .tar.gz files")
        except OSError:  # unreadable: opening it makes that snapshot's row say why
            out.append((a, None))
    if not out:
        raise UsageError("give at least one snapshot (DIR or FILE)")
    return out


def _refused(path: str, folder: str | None) -> str | None:
    """Why a snapshot path is not read: a link out of the folder it was found in, or the live
    root itself (fleet compare judges captures, never this host)."""
    try:
        real = Path(path).resolve()
    except (OSError, RuntimeError) as e:
        return f"cannot resolve {path}: {e}"
    if real == Path("/"):
        return f"{path} is this host's root, not a snapshot: refused"
    if folder is not None:
        top = Path(folder).resolve()
        if real != top and top not in real.parents:
            return f"{path} is a symbolic link out of {folder} (to {real}): refused"
    return None


def compare(paths: list[str], view: str = "doctor", plan: PlanOptions | None = None) -> FleetReport:
    """`fleet compare`: the fleet view over snapshots gathered any other way (no Ray)."""
    check_view(view)
    from ascendtune.host.roots import open_root

    inputs = []
    for path, folder in snapshot_paths(paths):
        stem = re.sub(r"\.(tar\.gz|tgz|tar)$", "", Path(path).name) or path
        extra = {"source": path}
        refused = _refused(path, folder)
        if refused is not None:
            inputs.append(core.NodeInput(stem, None, None, refused, core.FAILED, extra))
            continue
        try:
            root: Root | None = open_root(path)
        except AscendtuneError as e:
            inputs.append(core.NodeInput(stem, None, None, f"unreadable: {e}", core.FAILED, extra))
            continue
        except OSError as e:
            why = e.strerror or type(e).__name__
            inputs.append(
                core.NodeInput(stem, None, None, f"unreadable: {why}", core.FAILED, extra)
            )
            continue
        inputs.append(_node_input(stem, root, view, plan, extra=extra))
    result = core.compare(view, inputs)
    return FleetReport(result, {"mode": "compare", **core.result_json(result)})


def gather(opts: FleetOptions) -> FleetReport:
    """`fleet snapshot|topo|doctor|plan`: one capture per alive node of the Ray cluster."""
    check_view(opts.view)
    if opts.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    from ascendtune.host import ray_fleet

    if opts.save is not None:
        os.close(save_dir(opts.save))  # a bad --save fails before the cluster is asked
    address = ray_fleet.resolve_address(opts.ray_address)
    got = ray_fleet.gather(
        address,
        timeout=opts.timeout,
        nodes=list(opts.nodes) or None,
        ship=opts.ship,
        # joining is bounded too: an open port that is no GCS would keep Ray retrying
        connect_deadline=min(30.0, max(opts.timeout, 5.0)),
    )
    return from_gathered(got, opts)


def from_gathered(got: Gathered, opts: FleetOptions) -> FleetReport:
    """Judge what a gather brought back (each archive replayed as a sysroot)."""

    save = save_dir(opts.save) if opts.save else None
    try:
        return _judged(got, opts, save)
    finally:
        if save is not None:
            os.close(save)


def _judged(got: Gathered, opts: FleetOptions, save: int | None) -> FleetReport:
    from ascendtune.host.roots import open_archive

    inputs: list[core.NodeInput] = []
    for ans in sorted(got.answers, key=lambda a: (a.hostname, a.node_id)):
        extra: dict[str, Any] = {"address": ans.address, "seconds": ans.seconds, **ans.info}
        if ans.archive is None:
            inputs.append(
                core.NodeInput(ans.hostname, ans.node_id, None, ans.reason, ans.status, extra)
            )
            continue
        extra["bytes"] = len(ans.archive)
        try:
            root: Root | None = open_archive(ans.archive, f"node {ans.hostname} {ans.node_id[:8]}")
        except Exception as e:  # AscendtuneError, or whatever a hostile archive raises
            why = str(e) if isinstance(e, AscendtuneError) else f"{type(e).__name__}: {e}"
            inputs.append(
                core.NodeInput(
                    ans.hostname, ans.node_id, None, f"capture failed: {why}", core.FAILED, extra
                )
            )
            continue
        node = _node_input(ans.hostname, root, opts.view, opts.plan, ans.node_id, extra)
        if save is not None and opts.save is not None:
            name = f"{_safe(node.node)}-{_safe(ans.node_id[:8])}.tar.gz"
            save_file(save, name, ans.archive)
            node.extra["saved"] = str(Path(opts.save) / name)
        inputs.append(node)
    result = core.compare(opts.view, inputs)
    ray_info = {
        "address": got.address,
        "driver_ray": got.driver_ray,
        "shipped": got.shipped,
        "seconds": round(got.seconds, 3),
    }
    from ascendtune.core.redact import redact_doc

    # what nodes answered (reasons, Ray's notes) may quote a command line or an address
    body = redact_doc(
        {"mode": "ray", "ray": ray_info, **core.result_json(result), "notes": got.notes}
    )
    if opts.save is not None:
        body["saved"] = opts.save
    return FleetReport(result, body, tuple(got.notes))


def save_dir(path: str) -> int:
    """--save DIR opened for writing as `snapshot` writes: made 0700 if absent, never through
    a symbolic link (a planted DIR link is refused); the descriptor each file is written under."""
    from ascendtune.host.snapshot import is_archive

    if is_archive(path):
        raise UsageError(f"--save {path}: give a folder (one NODE.tar.gz per node)")
    p = Path(path)
    if p.is_symlink():
        raise UsageError(f"--save {path} is a symbolic link: give a real folder")
    try:
        if p.parent != p:
            p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, 0o700)
        return os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except NotADirectoryError:
        raise UsageError(f"--save {path}: give a folder (one NODE.tar.gz per node)") from None
    except PermissionError:
        raise PermissionDenied(f"--save {path}: permission denied") from None
    except OSError as e:
        raise UsageError(f"--save {path}: {e.strerror or e}") from None


def save_file(dir_fd: int, name: str, data: bytes) -> None:
    """One archive, 0600, written to a new file then renamed over the name: a link planted
    there is replaced, never followed."""
    tmp = f".{name}.{os.getpid()}.tmp"
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=dir_fd,
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) or "node"
