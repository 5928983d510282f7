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

A new family (kubelet files, release sources, Prometheus scrapes) is one function and one entry.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import random
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
        import re

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


FAMILIES: dict[str, Family] = {
    "sysroot": fam_sysroot,
    "structure": fam_structure,
    "log": fam_log,
    "config": fam_config,
    "options": fam_options,
    "streams": fam_streams,
    "signals": fam_signals,
    "secrets": fam_secrets,
}


# ---------------------------------------------------------------- the campaign


@dataclass
class Finding:
    family: str
    argv: list[str]
    faults: list[str]
    code: int | None
    err: str


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
                found.append(Finding(name, case.argv, faults, res.code, err[-300:]))
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
        for f in found[:50]:
            print(f"- {f.family}: {' '.join(f.argv)[:200]} -> {f.code} {f.faults}: {f.err[:200]}")
    bad = sum(v for k, v in totals(table).items() if k != "inputs")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
