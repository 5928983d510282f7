"""A campaign of hostile inputs against every command, and the table of what went wrong.

    python -m scripts.campaign --minutes 60            # a person, for an hour
    python -m scripts.campaign --cases 40 --seed 7     # a fixed slice (tests/e2e/test_campaign.py)

Each input family is one entry of FAMILIES: a function (rng, work folder) -> Case, the command
line, streams, signal and what the run may answer. Every case runs `ascendtune`'s console entry
(cli.app.main) in a forked child of this warm process (no interpreter start per case, real file
descriptors, real signals), is killed past its time limit, and is judged on:

  tracebacks, hangs, internal errors (exit 70), wrong exit codes (SPEC.md section 4), false
  successes (exit 0 where the input must be refused), leaked secrets (a planted secret in
  stdout, stderr or a written file), partial outputs (a --json stdout that a strict parser
  refuses, a watch that kept no sample), files left behind (a failed or stopped snapshot).

A new family is one function and one entry: kubelet (its files), kubelet_socket (its
PodResources socket, served by the campaign), release (installed vLLM-Ascend / vllm / torch_npu
versions and --target strings) and scrape (an agent's /metrics on loopback) joined the first eight.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.util
import io
import json
import os
import random
import re
import shutil
import signal
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parents[1]
DEMOS = TOP / "ascendtune" / "demos"
CLOSED = "closed"
# what the tool reads from its environment: unset in every case unless the case sets it
UNSET = ("ASCENDTUNE_SYSROOT", "ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "RAY_ADDRESS")
READ_CODES = frozenset({0, 1, 3, 4, 5})
COUNTS = (
    "inputs",
    "tracebacks",
    "hangs",
    "internal errors",
    "wrong exit codes",
    "false successes",
    "leaked secrets",
    "partial outputs",
    "files left behind",
)


@dataclass
class Case:
    family: str
    argv: list[str]
    expect: frozenset[int]  # the exit codes SPEC section 4 allows for this input
    stdin: bytes | str | None = None  # None: /dev/null; CLOSED: fd 0 closed
    stdout: str = "file"  # file | full (/dev/full) | closed (fd 1 closed) | broken (no reader)
    env: dict[str, str] = field(default_factory=dict)
    ascii: bool = False  # stdout encoded as ASCII (PYTHONIOENCODING=ascii, LANG=C on old Pythons)
    signal: tuple[int, float] | None = None  # (signum, seconds after the start)
    signal_after_output: bool = False  # and only once stdout holds something (or at half time)
    json: bool = False  # stdout must be strict JSON when the command ends 0 or 1
    json_lines: bool = False  # stdout is one strict JSON document a line
    min_samples: int = 0  # a watch stopped by a signal keeps at least this many samples
    secrets: tuple[str, ...] = ()  # planted: none may appear in any output
    scratch: Path | None = None  # a snapshot's parent folder: only dest in it, and only on 0
    dest: Path | None = None
    timeout_s: float = 30.0
    # fleet agent-status without a Ray cluster: the child's ray_fleet answers these
    # (hostname, address) nodes; everything after the node list (the scrape, the parse, the
    # rows, the printers) is the command's own
    ray_nodes: tuple[tuple[str, str], ...] | None = None
    # a server the case talks to: started before the run, stopped (by its own PID or thread)
    # after it, whatever happened
    server: Server | None = None
    note: str = ""  # which hostile variant this is (shown with a finding)


class Server:
    """What a case serves while it runs (a socket or an HTTP endpoint)."""

    def start(self) -> None:  # ready to answer when this returns
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


@dataclass
class Outcome:
    code: int | None
    out: bytes
    err: bytes
    hung: bool
    elapsed_s: float


# ---------------------------------------------------------------- running one case


def run(case: Case, work: Path) -> Outcome:
    """case's command line through cli.app.main in a forked child; killed past its time limit."""
    out_path, err_path, in_path = work / "stdout", work / "stderr", work / "stdin"
    if isinstance(case.stdin, bytes):
        in_path.write_bytes(case.stdin)
    if case.server is not None:
        case.server.start()
        port = str(getattr(case.server, "port", ""))
        case.argv = [a.replace("{PORT}", port) for a in case.argv]
    try:
        return _run(case, out_path, err_path, in_path)
    finally:
        if case.server is not None:
            case.server.stop()


def _run(case: Case, out_path: Path, err_path: Path, in_path: Path) -> Outcome:
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(case, out_path, err_path, in_path)
    status = 0
    hung = sent = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        elapsed = time.monotonic() - start
        if case.signal is not None and not sent and elapsed >= case.signal[1]:
            waiting = case.signal_after_output and elapsed < case.timeout_s / 2
            if not waiting or (out_path.exists() and out_path.stat().st_size > 0):
                os.kill(pid, case.signal[0])
                sent = True
        if elapsed > case.timeout_s:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            hung = True
            break
        time.sleep(0.005)
    code = None if hung else os.waitstatus_to_exitcode(status)
    out = out_path.read_bytes() if out_path.exists() else b""
    err = err_path.read_bytes() if err_path.exists() else b""
    for p in (out_path, err_path, in_path):
        p.unlink(missing_ok=True)
    return Outcome(code, out, err, hung, time.monotonic() - start)


def _child(case: Case, out_path: Path, err_path: Path, in_path: Path) -> None:
    code = 1
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(err, 2)
        if case.stdin == CLOSED:
            os.close(0)
        else:
            src = in_path if isinstance(case.stdin, bytes) else Path(os.devnull)
            os.dup2(os.open(src, os.O_RDONLY), 0)
        if case.stdout == "closed":
            os.close(1)
        elif case.stdout == "full":
            os.dup2(os.open("/dev/full", os.O_WRONLY), 1)
        elif case.stdout == "broken":
            r, w = os.pipe()
            os.close(r)
            os.dup2(w, 1)
        else:
            os.dup2(os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
        # the standard streams as a fresh interpreter would make them for these descriptors
        encoding = "ascii" if case.ascii else "utf-8"
        sys.stdin = None if case.stdin == CLOSED else open(0, encoding="utf-8", closefd=False)  # type: ignore[assignment]  # noqa: SIM115
        sys.stdout = (
            None  # type: ignore[assignment]
            if case.stdout == "closed"
            else open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
        )
        sys.stderr = open(  # noqa: SIM115
            2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1
        )
        for k in UNSET:
            os.environ.pop(k, None)
        os.environ.update({"NO_COLOR": "1", "COLUMNS": "200", **case.env})
        sys.argv = ["ascendtune", *case.argv]
        # a hang says where it was (on stderr, shown with the finding) just before its kill
        import faulthandler

        faulthandler.dump_traceback_later(max(0.5, case.timeout_s - 1.0), file=sys.__stderr__ or 2)
        if case.ray_nodes is not None:
            _fake_ray(case.ray_nodes)
        from ascendtune.cli.app import main

        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # what a real interpreter would print: counted as a traceback
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):  # what the interpreter's exit would have flushed
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(code)


def _fake_ray(nodes: tuple[tuple[str, str], ...]) -> None:
    """In the child: Ray's address and node list answered without a cluster."""
    from ascendtune.host import ray_fleet

    def list_nodes(address: str, **_kw: object) -> tuple[str, list[ray_fleet.NodeAnswer]]:
        return "2.0.0", [
            ray_fleet.NodeAnswer(f"{i:056x}", name, addr) for i, (name, addr) in enumerate(nodes)
        ]

    ray_fleet.resolve_address = lambda given, env=None: "127.0.0.1:6379"  # type: ignore[assignment]
    ray_fleet.list_nodes = list_nodes  # type: ignore[assignment]


# ---------------------------------------------------------------- judging one case


def _strict(text: str) -> bool:
    def reject(token: str) -> object:
        raise ValueError(token)

    try:
        json.loads(text, parse_constant=reject)
    except ValueError:
        return False
    return True


def judge(case: Case, res: Outcome) -> dict[str, int]:
    """One count per kind of fault this case shows (0 or 1 each), and 1 input."""
    out = res.out.decode("utf-8", errors="replace")
    err = res.err.decode("utf-8", errors="replace")
    got = dict.fromkeys(COUNTS, 0)
    got["inputs"] = 1
    got["hangs"] = int(res.hung)
    got["tracebacks"] = int("Traceback (most recent call last)" in err + out)
    internal = res.code == 70 or "internal error" in err
    got["internal errors"] = int(internal)
    if not res.hung and not internal and res.code not in case.expect:
        if res.code == 0:
            got["false successes"] = 1
        else:
            got["wrong exit codes"] = 1
    written = ""
    if case.dest is not None and case.dest.exists():
        written = _text_under(case.dest)
    got["leaked secrets"] = int(any(s in out or s in err or s in written for s in case.secrets))
    partial = False
    if case.json and res.code in (0, 1) and case.stdout == "file":
        partial = not _strict(out)
    if case.json_lines and case.stdout == "file":
        partial = partial or not all(_strict(line) for line in out.splitlines() if line.strip())
    if case.min_samples and not res.hung:
        partial = (
            partial or out.count("ascendtune watch ·") + out.count('"samples"') < case.min_samples
        )
    got["partial outputs"] = int(partial)
    if case.scratch is not None:
        left = {p.name for p in case.scratch.iterdir()}
        # a snapshot's rename is atomic: a dest that exists is whole, and is wanted when the
        # run ended 0 or was stopped by its signal only after the rename
        done = res.code == 0 or (case.signal is not None and res.code == 128 + case.signal[0])
        wanted = {case.dest.name} if case.dest is not None and done else set()
        got["files left behind"] = int(bool(left - wanted))
    return got


def _text_under(p: Path) -> str:
    if p.is_file():
        data = p.read_bytes()
        if p.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                return "".join(
                    (f.read() or b"").decode("utf-8", "replace")
                    for m in tar.getmembers()
                    if m.isfile() and (f := tar.extractfile(m)) is not None
                )
        return data.decode("utf-8", "replace")
    return "".join(
        f.read_text(errors="replace") for f in p.rglob("*") if f.is_file() and not f.is_symlink()
    )


# ---------------------------------------------------------------- hosts and hostile text


def templates(work: Path) -> dict[str, Path]:
    """The demo hosts as sysroot folders, extracted once per campaign."""
    out: dict[str, Path] = {}
    for name in ("atlas-800i-a2", "dgx-h100"):
        dest = work / "templates" / name
        if not dest.exists():
            dest.mkdir(parents=True)
            with tarfile.open(DEMOS / f"{name}.tar.gz") as tar:
                tar.extractall(dest, filter="data")
        out[name] = dest
    return out


def copy_host(template: Path, dest: Path) -> Path:
    """A private copy of a template (hard links: a mutation unlinks before it writes)."""
    shutil.copytree(template, dest, copy_function=os.link, symlinks=True)
    return dest


HUGE = "9" * 5000


def hostile_text(rng: random.Random, text: str) -> str | bytes:
    """text made hostile one way: random bytes, cut, garbage, huge or odd numbers, escapes."""
    lines = text.splitlines(keepends=True) or [""]
    how = rng.choice(
        ["bytes", "cut", "garbage", "huge", "nan", "negative", "empty", "escape", "repeat"]
    )
    if how == "bytes":
        return rng.randbytes(rng.randint(1, 400))
    if how == "cut":
        return text[: rng.randint(0, max(0, len(text) - 1))]
    if how == "garbage":
        at = rng.randint(0, len(lines))
        return "".join(
            [*lines[:at], rng.choice(["x-y\n", "| | |\n", "NPU ID\n", "\0\0\n"]), *lines[at:]]
        )
    if how in ("huge", "nan", "negative"):
        word = {"huge": HUGE, "nan": rng.choice(["nan", "inf", "1e400"]), "negative": "-1"}[how]
        return re.sub(r"\d+", lambda m: word if rng.random() < 0.3 else m.group(0), text) or word
    if how == "empty":
        return ""
    if how == "escape":
        return text.replace("\n", "\x1b[2J\u202e\u200b\n", 2)
    return text * rng.randint(50, 400)


def pick_file(rng: random.Random, root: Path) -> Path:
    wanted = (
        "commands/",
        "/online",
        "/cpulist",
        "/meminfo",
        "/topology/",
        "self/status",
        "/numa_node",
        "/local_cpulist",
        "/vendor",
        "meta.json",
        "/cmdline",
        "/status",
    )
    files = sorted(p for p in root.rglob("*") if p.is_file() and any(w in str(p) for w in wanted))
    return rng.choice(files)


# ---------------------------------------------------------------- the families

Family = Callable[[random.Random, Path], Case]


def fam_sysroot(rng: random.Random, work: Path) -> Case:
    """A demo host with one hostile file, read by a random read command or snapshot."""
    t = templates(work.parent)
    name = rng.choice(sorted(t))
    root = copy_host(t[name], work / "host")
    template_file = pick_file(rng, t[name])
    rel = template_file.relative_to(t[name])
    (root / rel).unlink()
    if rng.random() < 0.1:
        (root / rel).mkdir()
    else:
        data = hostile_text(rng, template_file.read_text(errors="replace"))
        (root / rel).write_bytes(
            data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        )
    command = rng.choice(["topo", "plan", "doctor", "snapshot", "explain"])
    if command == "snapshot":
        scratch = work / "out"
        scratch.mkdir()
        dest = scratch / rng.choice(["snap", "snap.tar.gz"])
        argv = ["snapshot", "--sysroot", str(root), str(dest)]
        return Case("sysroot", argv, READ_CODES - {1}, scratch=scratch, dest=dest)
    if command == "explain":
        return Case("sysroot", ["explain", "binding", "--sysroot", str(root)], READ_CODES)
    js = rng.random() < 0.5
    argv = [command, "--sysroot", str(root), *(["--json"] if js else [])]
    return Case("sysroot", argv, READ_CODES, json=js)


def fam_structure(rng: random.Random, work: Path) -> Case:
    """A sysroot whose shape is wrong: sys/ a file, an empty folder, a missing one, an archive
    cut short or of random bytes."""
    t = templates(work.parent)
    root = copy_host(t["atlas-800i-a2"], work / "host")
    how = rng.choice(["sys-file", "empty", "missing", "cut-archive", "random-archive"])
    target: Path = root
    if how == "sys-file":
        shutil.rmtree(root / "sys")
        (root / "sys").write_text("x\n")
    elif how == "empty":
        target = work / "empty"
        target.mkdir()
    elif how == "missing":
        target = work / "nowhere"
    else:
        target = work / "host.tar.gz"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(root, arcname=".")
        data = buf.getvalue()
        target.write_bytes(
            data[: rng.randint(10, len(data) - 1)] if how == "cut-archive" else rng.randbytes(2000)
        )
    command = rng.choice(["topo", "plan", "doctor"])
    expect = frozenset({3, 5}) if how != "missing" else frozenset({3})
    if how == "empty":
        expect = frozenset({3})
    return Case("structure", [command, "--sysroot", str(target)], expect)


LOG_LINES = (
    "(APIServer pid=5200) INFO 09-23 10:11:00 [api_server.py:1903] vLLM API server version 0.23.0\n",
    "(APIServer pid=5200) INFO 09-23 10:11:00 [utils.py:341] non-default args: {'model': '/m', "
    "'tensor_parallel_size': 4, 'additional_config': {CONFIG}}\n",
    "(Worker_TP0 pid=5301) INFO 09-23 10:11:03 [parallel_state.py:1400] rank 0 in world size 4 "
    "is assigned as DP rank 0, PP rank 0, TP rank 0\n",
)
LOGGED_CONFIGS = (
    "{'enable_cpu_binding': True, 'x': -1e309}",
    "{(1, 2): 3, 'enable_cpu_binding': True}",
    "{1: 'a', None: 2}",
    "{'a': float('nan')}",
    "{'a': " + HUGE + "}",
    "'{\"enable_cpu_binding\": NaN}'",
    "{'a': {'b': {'c': [" * 60 + "]}}}" * 60,
)


def fam_log(rng: random.Random, work: Path) -> Case:
    """A server log: our own lines with a hostile logged config, random bytes, a gzip cut or
    with a corrupt body."""
    text = "".join(LOG_LINES).replace("{CONFIG}", rng.choice(LOGGED_CONFIGS))
    how = rng.choice(["config", "config", "bytes", "gzip-corrupt", "gzip-random", "hostile"])
    path = work / ("server.log.gz" if how.startswith("gzip") else "server.log")
    if how == "config":
        path.write_text(text)
    elif how == "bytes":
        path.write_bytes(rng.randbytes(rng.randint(1, 4000)))
    elif how == "gzip-corrupt":
        data = gzip.compress(text.encode() * 50)
        cut = rng.randint(12, len(data) - 9)
        path.write_bytes(data[:cut] + rng.randbytes(8) + data[cut + 8 :])
    elif how == "gzip-random":
        path.write_bytes(gzip.compress(rng.randbytes(3000)))
    else:
        data = hostile_text(rng, text)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    js = rng.random() < 0.6
    return Case(
        "log", ["log", str(path), *(["--json"] if js else [])], frozenset({0, 1, 3, 5}), json=js
    )


CONFIG_TEXTS = (
    '{"enable_cpu_binding": true, "x": 1e400}',
    '{"short_request_first_config": {"long_max_wait_ms": NaN}}',
    '{"recompute_scheduler_enable": -Infinity}',
    '{"weight_nz_mode": ' + HUGE + "}",
    "[1, 2, 3]",
    '"just a string"',
    "{" * 5000,
    '{"a": "\\ud800"}',
    '{"enable_cpu_binding": "\u00e9\u2192\u202e"}',
    "",
)


def fam_config(rng: random.Random, work: Path) -> Case:
    """check-config given hostile JSON inline, on stdin, or in a file."""
    text = rng.choice(CONFIG_TEXTS)
    js = rng.random() < 0.6
    flags = ["--json"] if js else []
    how = rng.choice(["inline", "stdin", "file"])
    if how == "inline" and text:
        return Case("config", ["check-config", text, *flags], frozenset({0, 1, 5}), json=js)
    if how == "stdin":
        return Case(
            "config",
            ["check-config", "-", *flags],
            frozenset({0, 1, 5}),
            stdin=text.encode(),
            json=js,
        )
    path = work / "config.json"
    path.write_text(text, errors="surrogatepass")
    return Case(
        "config", ["check-config", "--file", str(path), *flags], frozenset({0, 1, 5}), json=js
    )


BAD_VALUES: dict[str, tuple[str, ...]] = {
    "cpus": ("a", "0-", "3-1", "0,,1", "-1", HUGE, "0-99999999999"),
    "seconds": ("nan", "inf", "-inf", "1e308", "-1", "x", "0"),
    "duration": ("nan", "inf", "1e308d", "-5m", "x", "0"),
    "count": ("0", "-1", "x", "nan"),
    "ids": ("a,b", "1,x", "-1", "x"),
}
OPTION_CASES: tuple[tuple[list[str], str, str], ...] = (
    (["bind", "--pid", "1", "--dry-run", "--cpus"], "cpus", ""),
    (["watch", "--pid", "1", "--once", "--cpus"], "cpus", ""),
    (["plan", "--demo", "atlas-800i-a2", "--reserve"], "cpus", ""),
    (["watch", "--pid", "1", "--cpus", "0", "--once", "--interval"], "seconds", ""),
    (["bind", "--workers", "--watch", "--interval"], "seconds", ""),
    (["bind", "--workers", "--watch", "--for"], "duration", ""),
    (["watch", "--pid", "1", "--cpus", "0", "-n"], "count", ""),
    (["plan", "--demo", "atlas-800i-a2", "--ranks"], "count", ""),
    (["plan", "--demo", "atlas-800i-a2", "--visible-devices"], "ids", ""),
    (["doctor", "--demo", "atlas-800i-a2", "--visible-devices"], "ids", ""),
    (["bind", "--cpus", "0", "--dry-run", "--pid"], "count", ""),
    (["fleet", "topo", "--ray-address"], "address", ""),
)


def fam_options(rng: random.Random, work: Path) -> Case:
    """A malformed option value: a usage error, 2, in every command."""
    head, kind, _ = rng.choice(OPTION_CASES)
    if kind == "address":
        value = rng.choice(["a" * rng.randint(254, 20000), "1.2.3.4:" + HUGE, "h:-1", "h:0"])
    else:
        value = rng.choice(BAD_VALUES[kind])
        if kind == "seconds" and value in ("-1", "0"):
            value = "0.001"  # under the 0.05 minimum
    return Case("options", [*head, value], frozenset({2}))


def fam_streams(rng: random.Random, work: Path) -> Case:
    """Standard streams that fight back: a full disk, a closed stdout, a reader that has gone,
    a closed stdin, an ASCII-only encoding."""
    reads = [
        ["topo", "--demo", "atlas-800i-a2"],
        ["plan", "--demo", "dgx-h100", "--json"],
        ["doctor", "--demo", "container-a2-half"],
        ["explain", "binding", "--demo", "atlas-800i-a3"],
        ["--help"],
        ["--version"],
        ["plan", "--help"],
        ["check-config", '{"enable_cpu_binding": "\u00e9\u2192"}'],
    ]
    how = rng.choice(["full", "closed", "broken", "stdin", "ascii"])
    if how == "stdin":
        argv = rng.choice([["log", "-"], ["check-config", "-"], ["check-config", "--file", "-"]])
        return Case("streams", argv, frozenset({3, 5}), stdin=CLOSED)
    argv = rng.choice(reads)
    if how == "ascii":
        return Case("streams", argv, frozenset({0, 1}), ascii=True)
    return Case("streams", argv, frozenset({0} if how == "broken" else {74}), stdout=how)


def fam_signals(rng: random.Random, work: Path) -> Case:
    """SIGTERM, SIGHUP or SIGINT to a watch writing to a file (every sample kept, exit 0), or to
    a snapshot (nothing left behind)."""
    signum = rng.choice([signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
    if rng.random() < 0.5:
        js = rng.random() < 0.5
        argv = ["watch", "--pid", str(os.getpid()), "--cpus", "0", "--interval", "0.1"]
        return Case(
            "signals",
            [*argv, *(["--json"] if js else [])],
            frozenset({0}),
            signal=(signum, rng.uniform(0.2, 1.5)),
            signal_after_output=True,
            json_lines=js,
            min_samples=1,
        )
    t = templates(work.parent)
    scratch = work / "out"
    scratch.mkdir()
    dest = scratch / rng.choice(["snap", "snap.tar.gz"])
    argv = ["snapshot", "--sysroot", str(t["atlas-800i-a2"]), str(dest)]
    return Case(
        "signals",
        argv,
        # -signum: the signal came before the tool set its handlers (it had written nothing)
        frozenset({0, 128 + signum, -signum}),
        signal=(signum, rng.uniform(0.0, 0.6)),
        scratch=scratch,
        dest=dest,
    )


# the forms of issue 27 item 3; the values are what must never be printed or written
SECRET_FORMS: tuple[tuple[str, str], ...] = (
    ("argv", "--api-key\0{S}"),
    ("argv", "--api-key={S}"),
    ("argv", "--hf-token\0{S}"),
    ("env", "HF_TOKEN={S}"),
    ("env", "OPENAI_API_KEY={S}"),
    ("env", "AWS_SECRET_ACCESS_KEY={S}"),
)
# more forms of issue 27 item 3 (core/redact.py's catalogue covers them all)
SECRET_FORMS_CATALOGUE: tuple[tuple[str, str], ...] = (
    ("argv", "--api-key {S}"),
    ("argv", "Authorization: Bearer {S}"),
    ("argv", "http://user:{S}@host/"),
    ("argv", "--auth\0{S}"),
    ("argv", "--passphrase\0{S}"),
    ("argv", "https://host/x?token={S}"),
    ("env", "PGPASSWORD={S}"),
    ("env", "MYSQL_PWD={S}"),
    ("env", "X_APIKEY={S}"),
    ("env", "SENTRY_DSN=https://{S}@sentry.example/1"),
)


def fam_secrets(
    rng: random.Random,
    work: Path,
    forms: tuple[tuple[str, str], ...] = SECRET_FORMS + SECRET_FORMS_CATALOGUE,
) -> Case:
    """A worker whose command line or environment holds a secret, captured by snapshot, audited
    by doctor, or read by check-config --pid: the secret never reaches an output."""
    t = templates(work.parent)
    root = copy_host(t["atlas-800i-a2"], work / "host")
    secret = "sk-" + "".join(rng.choice("abcdefghijkmnopqrstuvwxyz0123456789") for _ in range(32))
    where, form = rng.choice(forms)
    planted = form.replace("{S}", secret)
    procs = sorted(
        p for p in (root / "proc").iterdir() if p.name.isdigit() and (p / "cmdline").exists()
    )
    proc = procs[0]
    if where == "argv":
        cmd = (proc / "cmdline").read_text().rstrip("\0").split("\0")
        text = (
            "\0".join(
                [*cmd, "--additional-config", '{"enable_cpu_binding": true}', *planted.split("\0")]
            )
            + "\0"
        )
        (proc / "cmdline").unlink()
        (proc / "cmdline").write_text(text)
    else:
        env = proc / "environ"
        old = env.read_text() if env.exists() else ""
        env.unlink(missing_ok=True)
        env.write_text(old + planted + "\0")
    command = rng.choice(["snapshot", "doctor", "check-config"])
    if command == "snapshot":
        scratch = work / "out"
        scratch.mkdir()
        dest = scratch / "snap"
        argv = ["snapshot", "--sysroot", str(root), str(dest)]
        return Case("secrets", argv, frozenset({0}), secrets=(secret,), scratch=scratch, dest=dest)
    if command == "doctor":
        return Case(
            "secrets",
            ["doctor", "--sysroot", str(root), "--json"],
            frozenset({0, 1}),
            json=True,
            secrets=(secret,),
        )
    argv = ["check-config", "--sysroot", str(root), "--pid", proc.name, "--json"]
    return Case("secrets", argv, frozenset({0, 1, 3, 5}), json=True, secrets=(secret,))


# ---------------------------------------------------------------- the kubelet's files


def _k8s() -> Any:
    """The real kubelet layouts, as the k8s tests write them (tests/support/k8s.py)."""
    if str(TOP) not in sys.path:
        sys.path.insert(0, str(TOP))
    from tests.support import k8s

    return k8s


def _deep_json(rng: random.Random) -> str:
    depth = rng.choice([200, 5000, 100_000])
    return '{"policyName": "static", "entries": ' + "[" * depth + "]" * depth + "}"


def _hostile_json(rng: random.Random, valid: str) -> str | bytes:
    """A kubelet checkpoint made hostile: as any file, or in the ways a JSON reader meets."""
    how = rng.choice(["text", "deep", "huge-number", "types", "cpus", "nonutf8", "dup", "float"])
    if how == "text":
        return hostile_text(rng, valid)
    if how == "deep":
        return _deep_json(rng)
    if how == "huge-number":
        return valid.replace('"checksum": ', '"checksum": ' + HUGE + ', "x": ', 1).replace(
            "}", ', "Checksum": -' + HUGE + "}", 1
        )
    if how == "types":
        doc = json.loads(valid)
        key = rng.choice(sorted(doc))
        doc[key] = rng.choice([None, 5, -1.5, True, [], {}, "x", [[[]]], {"a": {"b": 1}}])
        return json.dumps(doc)
    if how == "cpus":
        bad = rng.choice(
            ["0-99999999999", HUGE, "3-1", "a", "-1", "0,,1", "1e400", "\u0661-\u0662"]
        )
        return re.sub(r'"\d+(-\d+)?(,\d+(-\d+)?)*"', lambda m: json.dumps(bad), valid, count=2)
    if how == "nonutf8":
        return (
            valid.encode()[: len(valid) // 2] + b"\xff\xfe\xc3" + valid.encode()[len(valid) // 2 :]
        )
    if how == "dup":
        return valid.replace("{", '{"policyName": "none", "policyName": 7, ', 1)
    return re.sub(r"(\d+)", lambda m: m.group(1) + ".5e400", valid, count=3)


KUBELET_CONFIGS: tuple[str | bytes, ...] = (
    "cpuManagerPolicy: static\n\treservedSystemCPUs: 0-1\n",  # a tab
    "cpuManagerPolicy: &p static\ntopologyManagerPolicy: *p\n",  # anchors
    "---\ncpuManagerPolicy: static\n---\ncpuManagerPolicy: none\n",  # two documents
    "cpuManagerPolicy: |\n  static\n  none\n",  # a block scalar
    "cpuManagerPolicy: !!binary c3RhdGlj\n",
    "cpuManagerPolicyOptions: {full-pcpus-only: true, a: [1, {b: c}]}\n",
    'reservedSystemCPUs: "0-99999999999"\ncpuManagerPolicy: static\n',
    "reservedSystemCPUs: " + HUGE + "\n",
    "cpuManagerPolicy: 'stat''ic'\nmemoryManagerPolicy: \"\\u202eStatic\\x1b[2J\"\n",
    "cpuManagerPolicy: static\ncpuManagerPolicy: none\n",  # a key twice
    "? cpuManagerPolicy\n: static\n",  # a complex key
    "cpuManagerPolicyOptions:\n  - a\n  - b\n",
    "topologyManagerPolicy: {" * 3000 + "}" * 3000 + "\n",
    "topologyManagerPolicy: [" * 3000 + "]" * 3000 + "\n",
    '{"kubeletconfig": {"cpuManagerPolicy": ' + "[" * 5000 + "]" * 5000 + "}}",
    '{"kubeletconfig": {"reservedSystemCPUs": ' + HUGE + "}}",
    '{"cpuManagerPolicy": NaN, "reservedSystemCPUs": 1e400}',
    "\ufeffcpuManagerPolicy: static\n",
    b"cpuManagerPolicy: st\xffatic\nreservedSystemCPUs: \xc3\n",
    b"\xff\xfe" + "cpuManagerPolicy: static\n".encode("utf-16-le"),
    "",
    "\0\0\0",
    ":\n: :\n- - -\n",
)


def _kubelet_config(rng: random.Random) -> str | bytes:
    k = _k8s()
    how = rng.random()
    if how < 0.15:
        # deep block mappings (each level two spaces further in)
        depth = rng.choice([100, 1500])
        return "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + "  " * depth + "v: 1\n"
    if how < 0.25:  # huge: a long valid file
        return str(k.KUBELET_CONFIG) + "".join(
            f"featureGates{i}:\n  A{i}: true\n" for i in range(rng.choice([10_000, 200_000]))
        )
    if how < 0.4:
        return hostile_text(rng, k.KUBELET_CONFIG)
    return rng.choice(KUBELET_CONFIGS)


def _cpu_state(rng: random.Random) -> str:
    k = _k8s()
    layout = rng.choice(["v1", "v2", "v2-old", "v3", "v4"])
    if layout == "v1":
        return str(k.cpu_manager_v1({uid: c for uid, c in k.CPUS.items()}))
    if layout == "v2":
        return str(k.cpu_manager_v2())
    if layout == "v2-old":
        return str(k.cpu_manager_v2(key="defaultCPUSet", checksum=False))
    if layout == "v3":
        return str(k.cpu_manager_v3(dict(k.CPUS)))
    return str(k.cpu_manager_v4())


def _memory_state(rng: random.Random) -> str:
    k = _k8s()
    blocks = {
        uid: {k.CONTAINER: [{"numaAffinity": [6], "type": "memory", "size": 1 << 30}]}
        for uid in k.CPUS
    }
    if rng.random() < 0.5:
        return json.dumps(
            {"policyName": "Static", "machineState": {}, "entries": blocks, "checksum": 7}
        )
    from ascendtune.core.k8s import checksum as ck

    data = json.dumps({"policyName": "Static", "entries": blocks})
    return json.dumps(
        {
            "policyName": "Static",
            "entries": {},
            "data": data,
            "dataChecksum": ck.data_checksum(data),
        }
    )


def _secret(rng: random.Random) -> str:
    return "sk-" + "".join(rng.choice("abcdefghijkmnopqrstuvwxyz0123456789") for _ in range(32))


# what a pod's downward-API `annotations` file may hold (key="Go-quoted value")
ANNOTATION_SECRETS = (
    'example.com/api-token="{S}"',
    'example.com/password="{S}"',
    'example.com/url="https://user:{S}@example.com/x"',
    'example.com/config="{{\\"api_key\\": \\"{S}\\"}}"',
    'example.com/auth="Bearer {S}"',
    'example.com/cmd="vllm serve /m --api-key {S}"',
    "example.com/webhook=https://hooks.example.com/x?token={S}",
    'kubectl.kubernetes.io/last-applied-configuration="{{\\"env\\": [{{\\"name\\": '
    '\\"HF_TOKEN\\", \\"value\\": \\"{S}\\"}}]}}"',
)


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))


def kubelet_node(
    rng: random.Random, work: Path, hostile: bool = True
) -> tuple[Path, list[str], str]:
    """A demo Atlas A2 as a Kubernetes node (pods A and B, the layouts the kubelet writes),
    each kubelet file made hostile at random (none when not `hostile`); the planted secrets."""
    k = _k8s()
    t = templates(work.parent)
    root = copy_host(t["atlas-800i-a2"], work / "host")
    lib = root / "var/lib/kubelet"

    notes: list[str] = []

    def maybe(valid: str, what: str) -> str | bytes:
        if hostile and rng.random() < 0.5:
            notes.append(what)
            return _hostile_json(rng, valid)
        return valid

    _write(lib / "cpu_manager_state", maybe(_cpu_state(rng), "cpu state"))
    if rng.random() < 0.7:
        _write(lib / "memory_manager_state", maybe(_memory_state(rng), "memory state"))
    form = rng.choice(["map", "list"])
    _write(
        lib / "device-plugins/kubelet_internal_checkpoint",
        maybe(k.device_checkpoint(form), "checkpoint"),
    )
    config: str | bytes = k.KUBELET_CONFIG
    if hostile and rng.random() < 0.6:
        config = _kubelet_config(rng)
        notes.append("config " + repr(config[:30]))
    config_rel = "var/lib/kubelet/config.yaml"
    secrets: list[str] = []
    if rng.random() < 0.3:  # a kubelet process naming its --config (and a token beside it)
        config_rel = rng.choice(["etc/kubernetes/kubelet.yaml", "var/lib/kubelet/config.yaml"])
        s = _secret(rng)
        secrets.append(s)
        argv = ["/usr/bin/kubelet", f"--config=/{config_rel}", "--token", s, f"--bearer={s}"]
        _write(root / "proc/3210/cmdline", "\0".join(argv) + "\0")
        _write(root / "proc/3210/comm", "kubelet\n")
    _write(root / config_rel, config)
    for uid, (ns, name) in ((k.UID_A, k.POD_A), (k.UID_B, k.POD_B)):
        (root / f"var/log/pods/{ns}_{name}_{uid}/{k.CONTAINER}").mkdir(parents=True)
    for uid in (k.UID_A, k.UID_B):
        if rng.random() < 0.6:
            s = _secret(rng)
            lines = [
                'huawei.com/AscendReal="Ascend910-1"',
                *(f.format(S=s) for f in rng.sample(ANNOTATION_SECRETS, rng.randint(1, 3))),
            ]
            plain = "\n".join(lines) + "\n"
            text: str | bytes = plain
            if hostile and rng.random() < 0.3:
                text = rng.choice(
                    [
                        plain + "x/y=" + '"' + "\\" * 10000 + '"\n',
                        plain * 5000,
                        plain.replace("\n", "\x1b[2J\u202e\n"),
                        plain.encode() + b"\xff\xfe\n",
                        plain + "".join(f"k{i}/a=b\n" for i in range(6000)),
                    ]
                )
                notes.append("annotations")
            secrets.append(s)
            vol = f"var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~downward-api/podinfo"
            _write(root / vol / "annotations", text)
    return root, secrets, ", ".join(notes)


def _kubelet_case(
    family: str, rng: random.Random, work: Path, root: Path, secrets: list[str]
) -> Case:
    command = rng.choice(["doctor", "topo", "plan", "snapshot"])
    js = rng.random() < 0.6
    flags = ["--json"] if js else []
    if command == "snapshot":
        scratch = work / "out"
        scratch.mkdir()
        dest = scratch / rng.choice(["snap", "snap.tar.gz"])
        argv = ["snapshot", "--sysroot", str(root), str(dest)]
        return Case(
            family, argv, READ_CODES - {1}, secrets=tuple(secrets), scratch=scratch, dest=dest
        )
    if command == "doctor":
        argv = ["doctor", "--sysroot", str(root), "--section", "k8s", *flags]
        if rng.random() < 0.3:
            argv = ["doctor", "--sysroot", str(root), *flags]
        return Case(family, argv, READ_CODES, json=js, secrets=tuple(secrets))
    if command == "topo":
        return Case(
            family, ["topo", "--sysroot", str(root), *flags], READ_CODES, json=js,
            secrets=tuple(secrets),
        )  # fmt: skip
    k = _k8s()
    pod = rng.choice(["qwen-a", "inference/qwen-b", k.UID_A, "nope", "a" * 5000, "\x1b[2J", ""])
    argv = ["plan", "--sysroot", str(root), "--pod", pod, *flags]
    return Case(family, argv, READ_CODES | {2}, json=js, secrets=tuple(secrets))


def fam_kubelet(rng: random.Random, work: Path) -> Case:
    """A Kubernetes node whose kubelet files are hostile (CPU manager state in each layout,
    memory manager state, device-plugin checkpoint, config.yaml, pod annotations holding
    secrets), read by doctor --section k8s, topo, plan --pod and snapshot."""
    root, secrets, note = kubelet_node(rng, work)
    case = _kubelet_case("kubelet", rng, work, root, secrets)
    case.note = note
    return case


# ---------------------------------------------------------------- the kubelet's socket


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64: ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def _pb_devices(resource: str, ids: list[str], nodes: list[int]) -> bytes:
    topo = b"".join(_field(1, _field(1, n)) for n in nodes)
    return (
        _field(1, resource.encode("utf-8", "surrogatepass"))
        + b"".join(_field(2, i.encode("utf-8", "surrogatepass")) for i in ids)
        + (_field(3, topo) if nodes else b"")
    )


def _pb_container(name: str, cpus: list[int], dev: bytes, mem_nodes: list[int]) -> bytes:
    packed = b"".join(_varint(c) for c in cpus)
    mem = _field(1, b"memory") + _field(2, 1 << 30) + _field(3, b"".join(
        _field(1, _field(1, n)) for n in mem_nodes))  # fmt: skip
    return (
        _field(1, name.encode("utf-8", "surrogatepass"))
        + _field(2, dev)
        + (_field(3, packed) if cpus else b"")
        + _field(4, mem)
    )


def _pb_pod(name: str, ns: str, containers: list[bytes]) -> bytes:
    return (
        _field(1, name.encode("utf-8", "surrogatepass"))
        + _field(2, ns.encode("utf-8", "surrogatepass"))
        + b"".join(_field(3, c) for c in containers)
    )


def absurd_pod_resources(rng: random.Random) -> tuple[bytes, bytes | None, str]:
    """A List answer (and an allocatable one) that is valid protobuf but absurd."""
    how = rng.choice(
        ["cpus-huge", "cpus-many", "pods-many", "names", "nodes", "nested", "wiretype", "empty"]
    )
    dev = _pb_devices("huawei.com/Ascend910", ["Ascend910-0"], [6])
    cpus = list(range(144, 168))
    pods = [("qwen-a", "inference", [_pb_container("vllm", cpus, dev, [6])])]
    if how == "cpus-huge":
        big = [(1 << 63) - 1, -1, -(1 << 63), 1 << 40, 192, 10**18]
        pods = [("qwen-a", "inference", [_pb_container("vllm", big, dev, [6])])]
    elif how == "cpus-many":
        pods = [("qwen-a", "inference", [_pb_container("vllm", list(range(300_000)), dev, [6])])]
    elif how == "pods-many":
        pods = [
            (f"p{i}", "ns", [_pb_container("c", [i % 192], dev, [i % 8])])
            for i in range(rng.choice([5000, 40_000]))
        ]
    elif how == "names":
        weird = rng.choice(
            ["\x1b[2J\u202eqwen-a", "a" * 200_000, "\ud800", "qwen-a\nqwen-b", "", "../../etc"]
        )
        odd_dev = _pb_devices(weird, [weird, "Ascend910-" + HUGE], [6])
        pods = [(weird, weird, [_pb_container(weird, cpus, odd_dev, [6])])]
    elif how == "nodes":
        odd_dev = _pb_devices("huawei.com/Ascend910", ["Ascend910-0"], [-1, 1 << 62, 999999])
        pods = [("qwen-a", "inference", [_pb_container("vllm", cpus, odd_dev, [-5, 1 << 62])])]
    elif how == "nested":  # an unknown field holding messages 5,000 deep
        blob = b""
        for _ in range(5000):
            blob = _field(1, blob)
        return _field(1, _pb_pod("qwen-a", "inference", [])) + _field(9, blob), None, how
    elif how == "wiretype":  # field 1 as a varint where a message is expected
        return _field(1, 12345) + _field(1, b"\xff" * 10), _field(2, b"\x80" * 11), how
    elif how == "empty":
        return b"", b"", how
    body = b"".join(_field(1, _pb_pod(n, ns, cs)) for n, ns, cs in pods)
    many = rng.random() < 0.2  # past the decoder's bound on ids, or the node's 192 CPUs
    alloc = _field(1, dev) + _field(
        2, b"".join(_varint(c) for c in (range(0, 1 << 20, 7) if many else range(192)))
    )
    return body, alloc, how


# run in its own interpreter (grpcio must not be started in the forking campaign process)
_GRPC_SERVER = """
import sys, time
from concurrent import futures
import grpc
path, list_file, alloc_file = sys.argv[1:4]
answer = open(list_file, "rb").read()
alloc = open(alloc_file, "rb").read() if alloc_file != "-" else None
def list_(req, ctx):
    return answer
def allocatable(req, ctx):
    if alloc is None:
        ctx.abort(grpc.StatusCode.UNIMPLEMENTED, "off")
    return alloc
ident = lambda b: b
handlers = {
    "List": grpc.unary_unary_rpc_method_handler(list_, ident, ident),
    "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(allocatable, ident, ident),
}
server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                     options=[("grpc.max_send_message_length", 64 << 20)])
server.add_generic_rpc_handlers(
    (grpc.method_handlers_generic_handler("v1.PodResourcesLister", handlers),))
server.add_insecure_port("unix:" + path)
server.start()
print("ready", flush=True)
time.sleep(3600)
"""


class GrpcServer(Server):
    """A PodResources server in a child interpreter, answering fixed bytes; stopped by PID."""

    def __init__(self, path: Path, answer: bytes, alloc: bytes | None) -> None:
        self.path, self.answer, self.alloc = path, answer, alloc
        self.proc: Any = None

    def start(self) -> None:
        import subprocess

        self.path.parent.mkdir(parents=True, exist_ok=True)
        lf, af = self.path.parent / "answer.bin", self.path.parent / "alloc.bin"
        lf.write_bytes(self.answer)
        if self.alloc is not None:
            af.write_bytes(self.alloc)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _GRPC_SERVER, str(self.path), str(lf),
             str(af) if self.alloc is not None else "-"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"},
        )  # fmt: skip
        line = self.proc.stdout.readline()  # blocks until ready (or the child ended)
        if not line:
            raise RuntimeError("the PodResources test server did not start")
        lf.unlink()
        af.unlink(missing_ok=True)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc.stdout.close()


class RawSocket(Server):
    """A unix socket served by a thread of this process: hangs, closes, or answers `data`
    (optionally a byte at a time); stopped through its own event and joined."""

    def __init__(self, path: Path, how: str, data: bytes = b"") -> None:
        import threading

        self.path, self.how, self.data = path, how, data
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.sock: Any = None

    def start(self) -> None:
        import socket

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.thread.start()

    def _serve(self) -> None:
        conns = []
        while not self.halt.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conns.append(conn)
            try:
                if self.how == "close":
                    conn.close()
                elif self.how == "drip":
                    conn.settimeout(0.5)
                    for b in self.data:
                        if self.halt.wait(0.05):
                            break
                        conn.send(bytes([b]))
                elif self.how == "answer":
                    conn.settimeout(2)
                    conn.sendall(self.data)
            except OSError:
                pass
        for c in conns:
            c.close()

    def stop(self) -> None:
        self.halt.set()
        self.thread.join(10)
        self.sock.close()


def _h2_frame(
    kind: int, flags: int, stream: int, payload: bytes, length: int | None = None
) -> bytes:
    n = len(payload) if length is None else length
    return n.to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def fam_kubelet_socket(rng: random.Random, work: Path) -> Case:
    """The PodResources socket under the sysroot: a server that hangs, closes, answers garbage
    bytes, huge frames, or valid PodResources that are absurd; read by the same commands."""
    root, secrets, note = kubelet_node(rng, work, hostile=rng.random() < 0.2)
    path = root / "var/lib/kubelet/pod-resources/kubelet.sock"
    how = rng.choice(
        ["hang", "close", "garbage", "huge-frame", "http1", "drip", "absurd", "absurd"]
    )
    server: Server
    if how == "absurd" and importlib.util.find_spec("grpc") is None:
        how = "garbage"  # without the k8s extra no gRPC server can be started
    if how == "absurd":
        answer, alloc, kind = absurd_pod_resources(rng)
        how = f"absurd {kind}"
        server = GrpcServer(path, answer, alloc)
    elif how in ("hang", "close"):
        server = RawSocket(path, how)
    elif how == "garbage":
        server = RawSocket(path, "answer", rng.randbytes(rng.randint(1, 100_000)))
    elif how == "huge-frame":
        # HTTP/2's settings, then a DATA frame that claims 16 MiB and a frame of real megabytes
        settings = _h2_frame(4, 0, 0, b"")
        big = _h2_frame(0, 0, 1, b"\0" * 5 + rng.randbytes(1000), length=(1 << 24) - 1)
        real = _h2_frame(0, 0, 1, b"\0\x7f\xff\xff\xff" + b"\x0a" * (3 << 20))
        server = RawSocket(path, "answer", settings + rng.choice([big, real]))
    elif how == "http1":
        server = RawSocket(path, "answer", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    else:
        server = RawSocket(path, "drip", b"\0\0\x12\x04\0\0\0\0\0" + rng.randbytes(200))
    case = _kubelet_case("kubelet_socket", rng, work, root, secrets)
    case.server = server
    case.note = f"{how} {note}".strip()
    return case


# ---------------------------------------------------------------- release sources

SITE = "/usr/local/lib/python3.11/site-packages"
HOSTILE_VERSIONS: tuple[str | bytes, ...] = (
    "0.31.0rc1+local",
    "0." + HUGE,
    HUGE,
    "0.9.1.post" + HUGE,
    "\u0660.\u0661\u0661.\u0660",  # Arabic-Indic digits
    "\uff10.\uff11\uff11.\uff10",  # full-width digits
    "",
    " ",
    b"\xff\xfe\x00\x01",
    "0.11.0\x1b[2J\u202e",
    "v0.9.1",
    "0.25.1rc1" * 1000,
    "1!0.25.1",
    "0.25.1-dev",
    "999999999999999999999.0",
    "-1",
    "0.25.1rc" + "9" * 50,
    "main",
    "None",
)


def fam_release(rng: random.Random, work: Path) -> Case:
    """What the tool reads of an installed vLLM-Ascend (with vllm and torch_npu beside it): a
    worker's site-packages found through its maps and environment, the default python's
    site-packages, dist-info folder names and METADATA with hostile versions; and hostile
    --target strings. Through check-config --pid, doctor and plan."""
    t = templates(work.parent)
    root = copy_host(t["atlas-800i-a2"], work / "host")
    pid = 4242

    versions: list[str | bytes] = []

    def version() -> str | bytes:
        v = rng.choice(HOSTILE_VERSIONS) if rng.random() < 0.8 else "0.25.1rc1"
        versions.append(v if len(v) < 40 else v[:20])
        return v

    def text(v: str | bytes) -> str:
        return v.decode("latin-1") if isinstance(v, bytes) else v

    def install(base: Path) -> None:
        for project in ("vllm_ascend", "vllm", "torch_npu", "vllm_omni"):
            if project != "vllm_ascend" and rng.random() < 0.4:
                continue
            v = version()
            folder_v = text(v) if rng.random() < 0.5 else "0.25.1rc1"
            folder_v = folder_v.replace("/", "_").replace("\0", "_")
            while len(folder_v.encode("utf-8", "surrogatepass")) > 200:  # a file name's bound
                folder_v = folder_v[: len(folder_v) // 2]
            name = f"{project}-{folder_v}.dist-info"
            if rng.random() < 0.1:
                name = f"{project}-.dist-info"
            meta = base / name / "METADATA"
            how = rng.random()
            if how < 0.1:
                meta.mkdir(parents=True)
                continue
            if how < 0.2:
                (base / name).mkdir(parents=True)
                continue
            head = b"Metadata-Version: 2.1\nName: " + project.encode() + b"\nVersion: "
            body = v if isinstance(v, bytes) else v.encode("utf-8", "surrogatepass")
            if how < 0.3:
                data = rng.randbytes(rng.randint(0, 3000))
            elif how < 0.4:
                data = head + body + b"\n" + b"Description: x\n" * 200_000
            else:
                data = head + body + b"\n\nlong description\n"
            _write(meta, data)
            if project in ("vllm_ascend", "torch_npu"):
                _write(base / project / "_version.py", f"__version__ = {text(v)!r}\n")

    where = rng.choice(["pid", "default", "both"])
    if where in ("pid", "both"):
        argv = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m",
                "--additional-config", '{"enable_cpu_binding": true}']  # fmt: skip
        _write(root / f"proc/{pid}/cmdline", "\0".join(argv) + "\0")
        _write(root / f"proc/{pid}/comm", "python3\n")
        _write(root / f"proc/{pid}/stat", f"{pid} (python3) S 1 {pid} {pid} 0 -1 0\n")
        site = rng.choice([SITE, "/opt/venv/lib/python3.11/site-packages", "/" + "x/" * 3000])
        maps = f"ffff0000-ffff1000 r-xp 00000000 fd:01 42 {site}/vllm_ascend/vllm_ascend_C.so\n"
        if rng.random() < 0.2:
            maps = maps * 50_000
        _write(root / f"proc/{pid}/maps", maps)
        env = [f"VIRTUAL_ENV={rng.choice(['/opt/venv', '/' + 'v' * 5000, '', '/../../..'])}",
               f"PYTHONPATH={':'.join(['/p'] * rng.choice([1, 20_000]))}"]  # fmt: skip
        _write(root / f"proc/{pid}/environ", "\0".join(env) + "\0")
        if len(site) < 1000:  # the long one is only named (no file system holds it)
            install(root / f"proc/{pid}/root" / site.lstrip("/"))
    if where in ("default", "both"):
        install(root / SITE.lstrip("/"))
    target = "auto"
    if rng.random() < 0.4:
        target = text(rng.choice([*HOSTILE_VERSIONS[:-1], "auto", "0.25.1rc1", "latest"]))
    js = rng.random() < 0.6
    flags = ["--json"] if js else []
    command = rng.choice(["check-config", "doctor", "plan"])
    tgt = [] if target == "auto" and rng.random() < 0.5 else ["--target", target]
    note = f"{where}: {versions!r}"[:300]
    if command == "check-config":
        argv = ["check-config", "--sysroot", str(root), "--pid", str(pid), *tgt, *flags]
        return Case("release", argv, frozenset({0, 1, 2, 3, 5}), json=js, note=note)
    argv = [command, "--sysroot", str(root), *tgt, *flags]
    return Case("release", argv, READ_CODES | {2}, json=js, note=note)


# ---------------------------------------------------------------- Prometheus scrapes

AGENT_TEXT = """\
# HELP ascendtune_agent_info The agent.
# TYPE ascendtune_agent_info gauge
ascendtune_agent_info{version="0.9.0",mode="keep"} 1
# TYPE ascendtune_agent_plan_ok gauge
ascendtune_agent_plan_ok 1
# TYPE ascendtune_agent_last_sample_timestamp_seconds gauge
ascendtune_agent_last_sample_timestamp_seconds {NOW}
# TYPE ascendtune_worker_threads gauge
ascendtune_worker_threads{pid="5301",rank="0"} 40
# TYPE ascendtune_worker_threads_bound gauge
ascendtune_worker_threads_bound{pid="5301",rank="0"} 38
# TYPE ascendtune_worker_cpu_seconds_total counter
ascendtune_worker_cpu_seconds_total{pid="5301",placement="on_plan"} 120.5
ascendtune_worker_cpu_seconds_total{pid="5301",placement="off_plan"} 3.5
# TYPE ascendtune_worker_restarts_total counter
ascendtune_worker_restarts_total{rank="0"} 0
# TYPE ascendtune_doctor_check gauge
ascendtune_doctor_check{check="npu_irq",status="fail"} 1
"""


class HttpEndpoint(Server):
    """An HTTP server on 127.0.0.1 (an ephemeral port) in a thread of this process; it answers
    every GET with `respond(handler)`; stopped by shutdown and joined."""

    def __init__(self, respond: Callable[[Any, Any], None]) -> None:
        import threading

        self.respond = respond
        self.halt = threading.Event()
        self.server: Any = None
        self.thread: Any = None
        self.port = 0

    def start(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with contextlib.suppress(OSError):
                    outer.respond(self, outer.halt)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.halt.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def _send(status: int, body: bytes, ctype: str = "text/plain; version=0.0.4",
          headers: tuple[tuple[str, str], ...] = ()) -> Callable[[Any, Any], None]:  # fmt: skip
    def respond(h: Any, _halt: Any) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    return respond


def _drip(body: bytes) -> Callable[[Any, Any], None]:
    def respond(h: Any, halt: Any) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        for b in body:
            if halt.wait(0.02):
                return
            h.wfile.write(bytes([b]))
            h.wfile.flush()

    return respond


def fam_scrape(rng: random.Random, work: Path) -> Case:
    """`fleet agent-status` reading one node's /metrics from a loopback endpoint that answers
    hostile Prometheus text (Ray's node list is faked in the child: see Case.ray_nodes)."""
    now = str(time.time())
    good = AGENT_TEXT.replace("{NOW}", now)
    how = rng.choice(
        ["good", "drip", "huge", "not-prometheus", "content-type", "redirect", "5xx", "nan",
         "injection", "secrets", "binary", "empty", "dup"]
    )  # fmt: skip
    secrets: tuple[str, ...] = ()
    expect = frozenset({1})  # the node's row is down, with why
    if how == "good":
        respond, expect = _send(200, good.encode()), frozenset({0})
    elif how == "drip":
        respond = _drip(good.encode() * 20)
    elif how == "huge":
        size = rng.choice([17 << 20, 40 << 20])
        unit = (good + "# " + "x" * 100 + "\n").encode()
        respond = _send(200, unit * (size // len(unit) + 1))  # past the 16 MiB bound
    elif how == "not-prometheus":
        body = rng.choice([b"<html><body>Grafana</body></html>", b'{"a": 1}', b"hello\n",
                           b"ascendtune_agent_info{version=\"1\" 1\n", b"a b c d e\n"])  # fmt: skip
        respond = _send(200, body, "text/html")
    elif how == "content-type":
        respond, expect = (
            _send(200, good.encode(), rng.choice(["application/json", "", "x/y"])),
            (frozenset({0, 1})),
        )
    elif how == "redirect":
        respond = _send(302, b"", headers=(("Location", "http://127.0.0.1:1/metrics"),))
    elif how == "5xx":
        respond = _send(rng.choice([500, 502, 503]), good.encode())
    elif how == "nan":
        word = rng.choice(["NaN", "+Inf", "-Inf", "1e400", "-1e309"])
        text = re.sub(  # ascendtune_agent_info stays 1: the rest is what is judged
            r"(?m)^(?!ascendtune_agent_info)(\S+) ([0-9.]+)$",
            lambda m: f"{m.group(1)} {word}" if rng.random() < 0.6 else m.group(0),
            good,
        )
        respond, expect = _send(200, text.encode()), frozenset({0, 1})
    elif how == "injection":
        evil = rng.choice(['a",mode="observe', "x\\\"} 1\\nascendtune_agent_plan_ok 0",
                           "\x1b[2J\u202e", "a\nb", "\\" * 1000])  # fmt: skip
        text = good.replace('version="0.9.0"', f"version={json.dumps(evil)}").replace(
            'check="npu_irq"', f"check={json.dumps(evil)}"
        )
        respond, expect = _send(200, text.encode()), frozenset({0, 1})
    elif how == "secrets":
        s = _secret(rng)
        secrets = (s,)
        form = rng.choice(["--api-key {S}", "https://user:{S}@host/x", "Bearer {S}", "{S}",
                           "token={S}"])  # fmt: skip
        value = json.dumps(form.replace("{S}", s))
        text = (
            good.replace('version="0.9.0"', f"version={value}").replace(
                'check="npu_irq"', f"check={value}"
            )
            + f'ascendtune_worker_threads{{pid="1",api_key={json.dumps(s)}}} 1\n'
        )
        respond, expect = _send(200, text.encode()), frozenset({0, 1})
    elif how == "binary":
        respond = _send(200, rng.randbytes(rng.randint(1, 5000)))
    elif how == "empty":
        respond = _send(200, b"")
    else:  # the same series twice, and a sample far out of range
        text = good + 'ascendtune_worker_threads{pid="5301",rank="0"} 1e300\n'
        respond, expect = _send(200, text.encode()), frozenset({0, 1})
    server = HttpEndpoint(respond)
    if importlib.util.find_spec("prometheus_client") is None:
        expect = frozenset({3})  # without the agent extra: "missing", before any node is read
    js = rng.random() < 0.6
    case = Case(
        "scrape",
        [
            "fleet",
            "agent-status",
            "--port",
            "{PORT}",
            "--timeout",
            "2",
            *(["--json"] if js else []),
        ],
        expect,
        json=js,
        secrets=secrets,
        ray_nodes=(("node-1", "127.0.0.1"),),
        server=server,
        note=how,
    )
    return case


FAMILIES: dict[str, Family] = {
    "sysroot": fam_sysroot,
    "structure": fam_structure,
    "log": fam_log,
    "config": fam_config,
    "options": fam_options,
    "streams": fam_streams,
    "signals": fam_signals,
    "secrets": fam_secrets,
    "kubelet": fam_kubelet,
    "kubelet_socket": fam_kubelet_socket,
    "release": fam_release,
    "scrape": fam_scrape,
}


# ---------------------------------------------------------------- the campaign


@dataclass
class Finding:
    family: str
    argv: list[str]
    faults: list[str]
    code: int | None
    err: str
    note: str = ""


def campaign(
    *,
    seed: int,
    cases: int | None = None,
    minutes: float | None = None,
    families: dict[str, Family] | None = None,
    work: Path | None = None,
) -> tuple[dict[str, dict[str, int]], list[Finding]]:
    """Run cases (round robin over the families) until `cases` or `minutes` is reached: the
    counts per family and every case with a fault."""
    fams = families or FAMILIES
    rng = random.Random(seed)
    base = Path(work or tempfile.mkdtemp(prefix="ascendtune-campaign-"))
    import ascendtune.cli.app  # noqa: F401  (warm: every fork starts with the CLI imported)

    table = {name: dict.fromkeys(COUNTS, 0) for name in fams}
    found: list[Finding] = []
    end = time.monotonic() + 60 * minutes if minutes is not None else None
    n = 0
    try:
        while (cases is None or n < cases) and (end is None or time.monotonic() < end):
            name = list(fams)[n % len(fams)]
            work_n = base / f"case{n}"
            work_n.mkdir()
            case = fams[name](random.Random(rng.getrandbits(64)), work_n)
            res = run(case, work_n)
            got = judge(case, res)
            for k, v in got.items():
                table[name][k] += v
            faults = [k for k, v in got.items() if v and k != "inputs"]
            if faults:
                err = res.err.decode("utf-8", "replace").strip()
                found.append(Finding(name, case.argv, faults, res.code, err[-300:], case.note))
            shutil.rmtree(work_n, ignore_errors=True)
            n += 1
    finally:
        if work is None:
            shutil.rmtree(base, ignore_errors=True)
    return table, found


def totals(table: dict[str, dict[str, int]]) -> dict[str, int]:
    return {k: sum(row[k] for row in table.values()) for k in COUNTS}


def render(table: dict[str, dict[str, int]]) -> str:
    heads = ["family", *COUNTS]
    rows = [[name, *(str(row[k]) for k in COUNTS)] for name, row in table.items()]
    rows.append(["total", *(str(v) for v in totals(table).values())])
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(len(heads))]
    lines = [
        "  ".join(
            c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [heads, *rows]
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m scripts.campaign", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--minutes", type=float, default=None, help="run for this long")
    ap.add_argument("--cases", type=int, default=None, help="run this many cases")
    ap.add_argument("--seed", type=int, default=None, help="the random seed (default: random)")
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = ap.parse_args(argv)
    if args.minutes is None and args.cases is None:
        args.cases = 10 * len(FAMILIES)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    fams = {k: v for k, v in FAMILIES.items() if not args.family or k in args.family}
    table, found = campaign(seed=seed, cases=args.cases, minutes=args.minutes, families=fams)
    if args.json:
        print(json.dumps({"seed": seed, "families": table, "total": totals(table)}, indent=2))
    else:
        print(f"seed {seed}")
        print(render(table))
        for f in found[:500]:
            print(
                f"- {f.family} [{f.note}]: {' '.join(f.argv)[:200]} -> {f.code} {f.faults}: "
                f"{f.err[:200]}"
            )
    bad = sum(v for k, v in totals(table).items() if k != "inputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
