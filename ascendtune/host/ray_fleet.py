"""Run one task on every node of a running Ray cluster: a snapshot (`fleet`, read-only), or
`bind --workers` (`fleet bind`, whose task is ascendtune.app.fleet_bind's).

One task is pinned to each alive node (`NodeAffinitySchedulingStrategy(node_id, soft=False)`,
`num_cpus=0`, no accelerator, no placement group, `max_retries=0`), so it runs beside an engine
that holds every CPU; the capture task only captures its node (`host.snapshot.capture`, no third-party
package) and returns the archive. Ray is imported here only, and only when a gather runs.

Connecting: the address is resolved before Ray is imported (`auto` reads the file `ray start`
writes), and its GCS port is probed with a plain socket under a deadline: `ray.init` against
nothing retries for minutes. `ray.init` is never called without an address (that would start a
new local cluster, not join the engine's). Token auth is Ray's own (`RAY_AUTH_TOKEN`,
`RAY_AUTH_TOKEN_PATH`); its value is never printed, and a snapshot never records RAY_* variables.

`ASCENDTUNE_FLEET_SOURCE` (a sysroot folder, a .tar.gz, or `demo:NAME`), when set in a node's
environment (the raylet's, which its workers inherit), makes that node's task capture that
host instead of the live root. It exists for tests, where every node of a local cluster runs on
one machine and must still replay a different host.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ascendtune.core import vendors
from ascendtune.core.errors import AscendtuneError, MissingError, UsageError

if TYPE_CHECKING:
    from ascendtune.host.roots import Root

SOURCE_ENV = "ASCENDTUNE_FLEET_SOURCE"
CURRENT_CLUSTER = "/tmp/ray/ray_current_cluster"  # written by `ray start` (Ray's own file)
DEFAULT_PORT = 6379
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
TOKEN_ENV = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE")


class ConnectError(MissingError):
    """No Ray cluster answers at the address (exit 3)."""


@dataclass
class NodeAnswer:
    """What one node sent back, or why it did not."""

    node_id: str
    hostname: str  # as Ray names the node (the capture's hostname is in the archive)
    address: str
    archive: bytes | None = None
    doc: dict[str, Any] | None = None  # a task's JSON answer (fleet bind), when not an archive
    status: str = "ok"  # "ok", "failed", "no answer"
    reason: str | None = None
    seconds: float | None = None
    info: dict[str, Any] = field(default_factory=dict)  # ray_version, python, ascendtune, source


@dataclass
class Gathered:
    address: str
    driver_ray: str
    answers: list[NodeAnswer]
    seconds: float
    shipped: bool
    notes: list[str] = field(default_factory=list)


def resolve_address(given: str | None, env: dict[str, str] | None = None) -> str:
    """--ray-address, else RAY_ADDRESS, else auto; auto is the cluster `ray start` left here."""
    env = dict(os.environ) if env is None else env
    addr = (given or env.get("RAY_ADDRESS") or "auto").strip()
    if addr != "auto":
        return addr
    try:
        found = Path(CURRENT_CLUSTER).read_text().strip()
    except OSError:
        found = ""
    if not found:
        raise ConnectError(
            "no Ray cluster found on this machine (--ray-address auto)",
            "give --ray-address HOST:PORT of the head node, or set RAY_ADDRESS",
        )
    return found


def host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[1] if "://" in address else address
    rest = rest.split("/", 1)[0]
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, ""
    host = host.strip("[]")
    if not host:
        raise UsageError(f"--ray-address {address[:80]!r}: give HOST:PORT")
    shown = address if len(address) <= 80 else address[:77] + "..."
    try:
        default = 10001 if address.startswith("ray://") else DEFAULT_PORT
        number = int(port) if port else default
    except ValueError:
        raise UsageError(f"--ray-address {shown!r}: the port must be a number") from None
    if not 0 < number < 65536:
        raise UsageError(f"--ray-address {shown!r}: the port must be 1-65535")
    # a host name the resolver could never take (DNS: 253 characters, labels of 63)
    if (
        len(host) > 253
        or any(len(label) > 63 for label in host.split("."))
        or not host.isprintable()
    ):
        raise UsageError(
            f"--ray-address {shown!r}: not a host name or IP address",
            "give HOST:PORT of the head node's GCS",
        )
    return host, number


def probe(address: str, deadline_s: float = 5.0) -> None:
    """Fail fast (one line) when nothing listens at the address's GCS port."""
    host, port = host_port(address)
    try:
        with socket.create_connection((host, port), timeout=deadline_s):
            return
    except TimeoutError:
        why = f"no answer within {deadline_s:g} s"
    except (OSError, UnicodeError) as e:
        why = (e.strerror if isinstance(e, OSError) else None) or type(e).__name__
    raise ConnectError(
        f"no Ray cluster at {host}:{port}: {why}",
        "give --ray-address HOST:PORT of the head node's GCS (the port of `ray start --head`)",
    )


def noset_env() -> dict[str, str]:
    """Ray blanks each vendor's visible-devices variable in tasks without devices; do not."""
    return {f"RAY_EXPERIMENTAL_NOSET_{p.visible_devices_env}": "1" for p in vendors.profiles()}


def package_dir() -> str:
    import ascendtune

    return str(Path(ascendtune.__file__).resolve().parent)


def replayed_root(src: str) -> Root:
    """The host a node replays (ASCENDTUNE_FLEET_SOURCE): a sysroot, a .tar.gz or demo:NAME."""
    from ascendtune.host.roots import open_root

    if src.startswith("demo:"):
        from ascendtune.host.demos import open_demo

        return open_demo(src[5:])
    return open_root(src)


def capture_here() -> dict[str, Any]:
    """The task body, run on a node: capture it (or its test source) and return the archive."""
    t0 = time.monotonic()
    from ascendtune.host import snapshot
    from ascendtune.host.roots import open_root

    src = os.environ.get(SOURCE_ENV) or None
    root = replayed_root(src) if src is not None else open_root(None)
    data = snapshot.archive_bytes(snapshot.capture(root))
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "ascendtune": package_dir(),
        "capture_seconds": round(time.monotonic() - t0, 3),
    }
    ray = sys.modules.get("ray")  # a task runs under Ray; elsewhere (tests) do not import it
    if ray is not None:
        info["ray_version"] = getattr(ray, "__version__", None)
    info["ascendtune_shipped"] = "runtime_resources" in info["ascendtune"]
    # what the capture of a live node records in meta.json env (Ray's blanks, without NOSET)
    names = [p.visible_devices_env for p in vendors.profiles()]
    info["devices_env"] = {n: os.environ[n] for n in names if n in os.environ}
    if src is not None:
        info["replayed"] = src
    return {"archive": data, "info": info}


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingError(
            "Ray is not installed for this Python",
            "install the extra: python3 -m pip install 'ascendtune[ray]' "
            "(the same Ray version as the cluster), or gather snapshots another way and run "
            "`ascendtune fleet compare`",
        ) from None
    return ray


def _redact(text: str) -> str:
    """Ray's messages never show the token to the user, even if Ray put it in one."""
    secrets = [os.environ.get("RAY_AUTH_TOKEN")]
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        with contextlib.suppress(OSError):
            secrets.append(Path(path).read_text().strip())
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return _redact(lines[0] if lines else type(e).__name__)


def _connect_error(ray_version: str, address: str, e: BaseException) -> AscendtuneError:
    import re

    text = str(e)
    low = text.lower()
    if "version mismatch" in low:
        # Ray's own check: "The cluster was started with: Ray: X Python: Y This process ..."
        found = re.findall(r"Ray:\s*(\S+)\s+Python:\s*(\S+)", text)
        if len(found) >= 2:
            (c_ray, c_py), (d_ray, d_py) = found[0], found[1]
            return ConnectError(
                f"the cluster at {address} runs Ray {c_ray} on Python {c_py}, this driver "
                f"Ray {d_ray} on Python {d_py}",
                f"run fleet from a Python {c_py} with ray=={c_ray}, as the cluster has them "
                "(on a node of the cluster: the engine's own environment)",
            )
        return ConnectError(
            f"the cluster at {address} runs another Ray or Python than this driver (Ray "
            f"{ray_version})",
            "run fleet with the cluster's Ray and Python versions",
        )
    if "unauthenticated" in low or ("auth" in low and "token" in low):
        return ConnectError(
            f"the Ray cluster at {address} refused this driver: {_first_line(e)}",
            "the cluster uses token auth: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN or "
            "RAY_AUTH_TOKEN_PATH (Ray's own variables) as the cluster has them",
        )
    return ConnectError(f"cannot join the Ray cluster at {address}: {_first_line(e)}")


def _init_within(ray: Any, deadline_s: float, **kwargs: Any) -> None:
    """ray.init under a deadline: a port that answers but is no GCS (the dashboard's 8265, say)
    would keep it retrying for minutes, deaf to SIGTERM."""
    import threading

    failed: list[BaseException] = []

    def connect() -> None:
        try:
            ray.init(**kwargs)
        except BaseException as e:
            failed.append(e)

    t = threading.Thread(target=connect, name="ascendtune-ray-init", daemon=True)
    t.start()
    t.join(deadline_s)
    if t.is_alive():
        raise ConnectError(
            f"{kwargs['address']} answers, but no Ray cluster joined within {deadline_s:g} s",
            "give the GCS address (`ray start --head --port`, 6379 by default), "
            "not the dashboard's (8265) or the client's (10001)",
        )
    if failed:
        raise failed[0]


def _driver_ip(address: str) -> dict[str, str]:
    """A cluster on loopback (one machine, as in tests) is joined from loopback too: Ray would
    otherwise announce this driver on the machine's outside address, which that cluster does
    not listen on, and wait for it for minutes."""
    host, _ = host_port(address)
    if host == "localhost" or host.startswith("127."):
        return {"_node_ip_address": "127.0.0.1"}
    return {}


def alive_nodes(ray: Any) -> list[dict[str, Any]]:
    return [n for n in ray.nodes() if n.get("Alive")]


def select(nodes: list[dict[str, Any]], wanted: list[str] | None) -> list[dict[str, Any]]:
    """Nodes named by hostname, IP or node id (a prefix); all when wanted is empty."""
    if not wanted:
        return nodes
    out = []
    for n in nodes:
        names = {n.get("NodeManagerHostname"), n.get("NodeManagerAddress")}
        nid = str(n.get("NodeID"))
        if any(w in names or (len(w) >= 6 and nid.startswith(w)) for w in wanted):
            out.append(n)
    if not out:
        raise UsageError(
            f"--nodes {','.join(wanted)}: no alive node of the cluster has that name",
            "give hostnames, IPs or node id prefixes (6+ characters) as `ray status` shows them",
        )
    return out


def gather(
    address: str,
    *,
    timeout: float = 60.0,
    nodes: list[str] | None = None,
    ship: bool = True,
    probe_deadline: float = 5.0,
    connect_deadline: float = 30.0,
) -> Gathered:
    """One pinned capture task per alive node; every node comes back as an answer or a reason."""
    return run_tasks(
        address,
        Task(capture_here, (), settle_answer, "ascendtune-fleet-capture", "capture"),
        timeout=timeout,
        nodes=nodes,
        ship=ship,
        probe_deadline=probe_deadline,
        connect_deadline=connect_deadline,
    )


@dataclass(frozen=True)
class Task:
    """What runs on every node: body(*args) in a pinned Ray task; accept(answer, returned)
    settles what it returned (a malformed return makes that node a failed row); `what` names
    the task in a failed node's reason ("capture failed: ...")."""

    body: Callable[..., Any]
    args: tuple[Any, ...]
    accept: Callable[[NodeAnswer, object], None]
    name: str
    what: str


def run_tasks(
    address: str,
    task: Task,
    *,
    timeout: float = 60.0,
    nodes: list[str] | None = None,
    ship: bool = True,
    probe_deadline: float = 5.0,
    connect_deadline: float = 30.0,
) -> Gathered:
    """One task pinned to each alive node (or each node named), all under one deadline: a node
    that fails, hangs past it or dies is its own answer, never the others'."""
    t0 = time.monotonic()
    probe(address, probe_deadline)
    with stdout_to_stderr(), joined(address, ship, connect_deadline) as (ray, owned):
        got = _run(ray, address, task, timeout, nodes, owned and ship, t0)
        if ship and not owned:
            # Ray ships a local folder only at job level, and this job is the caller's
            got.notes.append(
                "ascendtune was not shipped: this process had joined Ray already (pass "
                "runtime_env={'py_modules': [ascendtune's folder]} to its ray.init)"
            )
        return got


def list_nodes(
    address: str,
    *,
    nodes: list[str] | None = None,
    probe_deadline: float = 5.0,
    connect_deadline: float = 30.0,
) -> tuple[str, list[NodeAnswer]]:
    """The alive nodes of the cluster (or those named) as Ray reports them, no task run: the
    driver's Ray version and one empty answer per node (id, hostname, address)."""
    probe(address, probe_deadline)
    with stdout_to_stderr(), joined(address, False, connect_deadline) as (ray, _owned):
        chosen = select(alive_nodes(ray), nodes)
        return ray.__version__, [
            NodeAnswer(
                str(n["NodeID"]),
                str(n.get("NodeManagerHostname")),
                str(n.get("NodeManagerAddress")),
            )
            for n in chosen
        ]


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While Ray runs, whatever it prints to stdout goes to stderr: its `(raylet)` lines when a
    worker dies (Ray prints the cluster's error messages to sys.stdout, log_to_driver or not),
    its C++ core's messages on file descriptor 1. stdout carries only the document."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to keep clean
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def joined(address: str, ship: bool, connect_deadline: float) -> Iterator[tuple[Any, bool]]:
    """Ray joined to the cluster at address (ray, whether this call joined it: then it leaves
    it at the end); ship: the package goes to the nodes as the job's py_modules."""
    if _driver_ip(address) and "ray" not in sys.modules:
        # Ray rewrites a loopback address to this machine's outside one unless it is told the
        # cluster is a single-machine one (Ray's own switch, read when ray is imported)
        os.environ.setdefault(LOOPBACK_ENV, "0")
    ray = _import_ray()
    runtime_env: dict[str, Any] = {}
    if ship:
        # the package alone (pure Python): nodes without ascendtune run the driver's copy
        runtime_env["py_modules"] = [package_dir()]
    owned = not ray.is_initialized()
    if owned:
        saved = os.environ.get("RAY_ADDRESS")
        # RAY_ADDRESS overrides ray.init(address=...): make it say the address we probed
        os.environ["RAY_ADDRESS"] = address
        try:
            _init_within(
                ray,
                connect_deadline,
                address=address,
                runtime_env=runtime_env or None,
                **_driver_ip(address),
                namespace="ascendtune-fleet",
                logging_level="ERROR",
                log_to_driver=False,
            )
        except AscendtuneError:
            raise
        except Exception as e:
            raise _connect_error(ray.__version__, address, e) from None
        finally:
            if saved is None:
                os.environ.pop("RAY_ADDRESS", None)
            else:
                os.environ["RAY_ADDRESS"] = saved
    try:
        yield ray, owned
    finally:
        if owned:
            ray.shutdown()


def _run(
    ray: Any,
    address: str,
    job: Task,
    timeout: float,
    wanted: list[str] | None,
    ship: bool,
    t0: float,
) -> Gathered:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as affinity

    task = ray.remote(job.body)
    chosen = select(alive_nodes(ray), wanted)
    started = time.monotonic()
    refs: dict[Any, NodeAnswer] = {}
    for n in chosen:
        ans = NodeAnswer(
            str(n["NodeID"]), str(n.get("NodeManagerHostname")), str(n.get("NodeManagerAddress"))
        )
        ref = task.options(
            scheduling_strategy=affinity(node_id=ans.node_id, soft=False),
            num_cpus=0,
            max_retries=0,
            runtime_env={"env_vars": noset_env()},
            name=job.name,
        ).remote(*job.args)
        refs[ref] = ans
    pending = list(refs)
    deadline = started + timeout
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        done, pending = ray.wait(pending, num_returns=1, timeout=left)
        for ref in done:
            _settle(ray, ref, refs[ref], started, job)
    if pending:
        alive = {str(n["NodeID"]) for n in alive_nodes(ray)}
        for ref in pending:
            ans = refs[ref]
            ans.status = "no answer"
            ans.reason = f"no answer in {timeout:g} s" if ans.node_id in alive else "node died"
            # stop the stuck task (a capture only reads; a bind holds its locks, which die
            # with its process, and its workers may be left partly bound: the reason says so)
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
    answers = list(refs.values())
    notes = []
    versions = {a.info.get("ray_version") for a in answers if a.info.get("ray_version")}
    other = sorted(str(v) for v in versions - {ray.__version__})
    if other:
        notes.append(f"the driver runs Ray {ray.__version__}, nodes run Ray {', '.join(other)}")
    return Gathered(address, ray.__version__, answers, time.monotonic() - t0, ship, notes)


def _settle(ray: Any, ref: Any, ans: NodeAnswer, started: float, job: Task) -> None:
    ans.seconds = round(time.monotonic() - started, 3)
    try:
        got = ray.get(ref)
    except Exception as e:
        try:
            _classify(ray, ans, e, job.what)
        except Exception as again:  # Ray itself failing to say why: still this node's row
            ans.status = "failed"
            ans.reason = f"Ray error: {type(e).__name__} ({type(again).__name__} classifying it)"
        return
    try:
        job.accept(ans, got)
    except Exception as e:  # an answer its checker chokes on: that node's row, not the run
        ans.status = "failed"
        ans.reason = f"malformed answer: {type(e).__name__}"


def settle_answer(ans: NodeAnswer, got: object) -> None:
    """A node's answer as capture_here returns it ({"archive": bytes, "info": dict}); anything
    else (a string, None, a malformed document) makes that node a failed row, never the run."""
    archive = got.get("archive") if isinstance(got, dict) else None
    if not isinstance(archive, (bytes, bytearray)) or not archive:
        ans.status = "failed"
        what = type(got).__name__ if not isinstance(got, dict) else "a document without archive"
        ans.reason = f"malformed answer: {what}, not a snapshot archive"
        return
    assert isinstance(got, dict)
    info = got.get("info")
    ans.archive = bytes(archive)
    ans.info = (
        {str(k): v for k, v in info.items() if isinstance(v, (str, int, float, bool, dict))}
        if isinstance(info, dict)
        else {}
    )


def _classify(ray: Any, ans: NodeAnswer, e: BaseException, what: str = "capture") -> None:
    exc = ray.exceptions
    dead = {str(n["NodeID"]) for n in ray.nodes() if not n.get("Alive")}
    if isinstance(e, exc.RayTaskError):
        cause = e.cause if getattr(e, "cause", None) is not None else e
        ans.status = "failed"
        ans.reason = f"{what} failed: {type(cause).__name__}: {_first_line(cause)}"
        return
    died = (exc.NodeDiedError, exc.LocalRayletDiedError, exc.WorkerCrashedError)
    if isinstance(e, died) or ans.node_id in dead:
        ans.status = "no answer"
        ans.reason = (
            "node died"
            if ans.node_id in dead or isinstance(e, exc.NodeDiedError)
            else (f"worker died: {type(e).__name__}")
        )
        return
    if isinstance(e, exc.RuntimeEnvSetupError):
        ans.status = "failed"
        ans.reason = f"Ray error: runtime_env setup failed: {_first_line(e)}"
        return
    ans.status = "failed"
    ans.reason = f"Ray error: {type(e).__name__}: {_first_line(e)}"
