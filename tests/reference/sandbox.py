"""Run a vLLM-Ascend release's own `cpu_binding.py`, unchanged, against synthetic hosts.

This file runs as its own process (`python -m tests.reference.sandbox`, a JSON job on stdin, the
results as JSON on stdout) and imports nothing of ascendtune, so what it reports is the release's
behaviour alone. The release's module is executed with a guarded import: what it imports from
vllm, vllm_ascend, torch_npu, psutil, regex and the OS-facing standard modules (os, subprocess,
shutil, platform) is a stub that answers from the job's host (files, directory listings, command
outputs) and records what the code would do (taskset, psutil affinity, migratepages, IRQ
writes, log lines). Anything else it tries is refused:

- an import outside the allow-list raises GuardError;
- an attribute of a stubbed OS module that the stub does not provide raises GuardError;
- a command the host has no answer for raises FileNotFoundError, as a missing program would;
- below all that, an audit hook (installed before any release code runs) refuses every real
  subprocess, exec, os.system, affinity change and every open of a path under /proc or /sys
  in this process, so a stub that forgot something cannot reach this machine.

Job: {"modules": {dotted name: source}, "main": dotted name of cpu_binding, "cases": [...]};
a case: {"id", "files": {abs path: text}, "dirs": {abs path: [names]}, "commands": {argv joined
by spaces: stdout}, "tools": [names shutil.which finds], "env": {..}, "arch", "device_type",
"irq_writable", "allowed": [cpus], "online": [cpus], "calls": [{"args": [..], "kwargs": {..},
"catch": "old"|"new"}]}.
"""

from __future__ import annotations

import builtins
import enum
import importlib
import io
import json
import os
import sys
import types
from typing import Any

MAIN_PID = 4242
# the worker's threads as `ps -Te` lists them: (tid, name)
THREADS = ((4242, "python3"), (4250, "acl_thread"), (4251, "release_thread"))
THREADS_950 = (*THREADS, (4252, "uvb_poll_window_thread"))


class GuardError(Exception):
    """The reference code tried something the sandbox does not allow."""


# ------------------------------------------------------------------ the guard (audit hook)

_GUARDED = ("/proc", "/sys")
_REFUSED_EVENTS = {
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.sched_setaffinity",
    "os.chmod",
    "os.remove",
    "os.rename",
    "ctypes.dlopen",
}
_armed = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _armed:
        return
    if event in _REFUSED_EVENTS:
        raise GuardError(f"sandbox: {event} refused")
    if event == "open" and args:
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        if isinstance(path, str):
            real = os.path.abspath(path)
            if any(real == g or real.startswith(g + "/") for g in _GUARDED):
                raise GuardError(f"sandbox: open of {path} refused")


# calls that change this machine without raising an audit event: replaced in this process
_REFUSED_CALLS = (
    "sched_setaffinity",
    "sched_setscheduler",
    "setpriority",
    "nice",
    "kill",
    "killpg",
)


def _refuser(name: str) -> Any:
    def refuse(*_a: object, **_kw: object) -> None:
        raise GuardError(f"sandbox: os.{name} refused")

    return refuse


def arm() -> None:
    """Install the audit hook (once; it cannot be removed), refuse the calls it cannot see,
    and switch it on."""
    global _armed
    if not getattr(sys, "_ascendtune_sandbox_hook", False):
        sys.addaudithook(_audit)
        sys._ascendtune_sandbox_hook = True  # type: ignore[attr-defined]
    for name in _REFUSED_CALLS:
        if hasattr(os, name):
            setattr(os, name, _refuser(name))
    _armed = True


# ------------------------------------------------------------------ the recording host


class Host:
    """One case's host: what the stubs answer, and what the code did to it."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.files: dict[str, str] = case.get("files", {})
        self.dirs: dict[str, list[str]] = case.get("dirs", {})
        self.commands: dict[str, str] = case.get("commands", {})
        self.tools: set[str] = set(case.get("tools", []))
        self.env: dict[str, str] = dict(case.get("env", {}))
        self.arch: str = case.get("arch", "aarch64")
        self.irq_writable: bool = bool(case.get("irq_writable", True))
        self.allowed: set[int] = set(case.get("allowed", []))
        self.online: set[int] = set(case.get("online", []))
        self.device_type: str = case.get("device_type", "A2")
        self.threads = THREADS_950 if self.device_type == "A5" else THREADS
        self.reset()

    def reset(self) -> None:
        self.masks: dict[int, list[int]] = {}  # tid -> mask after the code's binds
        self.migrate: list[list[str]] = []
        self.irq: dict[str, str] = {}
        self.log: list[str] = []
        self.commands_run: list[str] = []

    # what the kernel does with a requested mask: keep the allowed, online CPUs; none is EINVAL
    def effective(self, cpus: list[int]) -> list[int]:
        return sorted(c for c in set(cpus) if c in self.allowed and c in self.online)

    def ps_te(self) -> str:
        rows = ["    PID    SPID TTY          TIME CMD"]
        rows += [f"{MAIN_PID:7d} {tid:7d} ?        00:00:01 {name}" for tid, name in self.threads]
        return "\n".join(rows) + "\n"

    def run(self, argv: list[str]) -> tuple[str, int]:
        key = " ".join(argv)
        self.commands_run.append(key)
        prog = argv[0]
        if prog == "taskset":
            return self._taskset(argv)
        if prog == "migratepages" and "migratepages" in self.tools:
            self.migrate.append(argv[1:])
            return "", 0
        if prog == "ps" and argv[1:] == ["-Te"]:
            return self.ps_te(), 0
        if prog == "systemctl" and "systemctl" in self.tools:
            return "", 1  # no irqbalance unit
        if key in self.commands:
            return self.commands[key], 0
        if prog in self.tools:
            # the program exists but has nothing to say for these arguments (npu-smi on a
            # card that is not there prints an error and exits non-zero)
            return "", 1
        raise FileNotFoundError(2, "No such file or directory", prog)

    def _taskset(self, argv: list[str]) -> tuple[str, int]:
        if "taskset" not in self.tools:
            raise FileNotFoundError(2, "No such file or directory", "taskset")
        flags, cpulist, pid = argv[1], argv[2], int(argv[3])
        cpus = _expand(cpulist)
        eff = self.effective(cpus)
        if not eff:
            return "taskset: failed to set pid's affinity: Invalid argument\n", 1
        tids = [t for t, _ in self.threads] if "a" in flags and pid == MAIN_PID else [pid]
        for tid in tids:
            self.masks[tid] = eff
        return "", 0


def _expand(cpulist: str) -> list[int]:
    out: list[int] = []
    for part in cpulist.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


# ------------------------------------------------------------------ the stub modules


def _strict_module(name: str, **attrs: Any) -> types.ModuleType:
    """A module with exactly attrs; any other attribute is refused."""
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)

    def __getattr__(attr: str) -> Any:
        raise GuardError(f"sandbox: {name}.{attr} is not stubbed")

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]
    return mod


class _Logger:
    def __init__(self, host_ref: list[Host]) -> None:
        self._host = host_ref

    def _emit(self, level: str, msg: object, *args: object, **_kw: object) -> None:
        text = str(msg) % args if args else str(msg)
        self._host[0].log.append(f"{level}: {text}")

    def debug(self, msg: object, *args: object, **kw: object) -> None:
        self._emit("DEBUG", msg, *args, **kw)

    def info(self, msg: object, *args: object, **kw: object) -> None:
        self._emit("INFO", msg, *args, **kw)

    def warning(self, msg: object, *args: object, **kw: object) -> None:
        self._emit("WARNING", msg, *args, **kw)

    def error(self, msg: object, *args: object, **kw: object) -> None:
        self._emit("ERROR", msg, *args, **kw)

    info_once = info
    warning_once = warning
    debug_once = debug


class AscendDeviceType(enum.Enum):
    """The enum every release from 0.15.0rc1 to 0.26.0rc1 defines in vllm_ascend.utils."""

    A2 = 0
    A3 = 1
    _310P = 2
    A5 = 3


def build_stubs(host_ref: list[Host]) -> dict[str, types.ModuleType]:
    def h() -> Host:
        return host_ref[0]

    # subprocess
    class Popen:
        def __init__(self, cmd: Any, shell: bool = False, **_kw: Any) -> None:
            if shell or not isinstance(cmd, (list, tuple)):
                raise GuardError("sandbox: only argv lists, never a shell")
            self.out, self.returncode = h().run([str(c) for c in cmd])

        def __enter__(self) -> Popen:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def communicate(self, timeout: float | None = None) -> tuple[bytes, bytes]:
            return self.out.encode(), b""

        def kill(self) -> None:
            return None

    class TimeoutExpired(Exception):
        pass

    subprocess = _strict_module(
        "subprocess", Popen=Popen, PIPE=-1, DEVNULL=-3, TimeoutExpired=TimeoutExpired
    )

    # os
    def listdir(path: str) -> list[str]:
        key = path.rstrip("/")
        if key not in h().dirs:
            raise FileNotFoundError(2, "No such file or directory", path)
        return list(h().dirs[key])

    def exists(path: str) -> bool:
        key = path.rstrip("/")
        return key in h().files or key in h().dirs

    def access(path: str, mode: int) -> bool:
        if path.rstrip("/") == "/proc/irq":
            return h().irq_writable
        return exists(path)

    class _Environ(dict):  # type: ignore[type-arg]
        pass

    def getenv(key: str, default: str | None = None) -> str | None:
        return h().env.get(key, default)

    ospath = _strict_module("os.path", exists=exists, join=os.path.join)
    fake_os = _strict_module(
        "os",
        path=ospath,
        listdir=listdir,
        access=access,
        getenv=getenv,
        environ=_Environ(),
        W_OK=os.W_OK,
        R_OK=os.R_OK,
        X_OK=os.X_OK,
        F_OK=os.F_OK,
        sep="/",
    )

    def which(name: str, *_a: object, **_kw: object) -> str | None:
        return f"/usr/bin/{name}" if name in h().tools else None

    shutil = _strict_module("shutil", which=which)
    platform = _strict_module("platform", machine=lambda: h().arch)

    # psutil
    class Process:
        def __init__(self, pid: int | None = None) -> None:
            self.pid = MAIN_PID if pid is None else pid

        def cpu_affinity(self, cpus: list[int] | None = None) -> list[int] | None:
            if cpus is None:
                got = h().masks.get(self.pid)
                return list(got) if got is not None else sorted(h().allowed)
            if not cpus:
                # psutil: an empty list means every eligible CPU, which it takes from the first
                # a-b range of Cpus_allowed_list, else 0..(CPUs in /proc/stat - 1)
                status = h().files.get("/proc/self/status", "")
                found = re.findall(r"Cpus_allowed_list:\t(\d+)-(\d+)", status)
                if found:
                    cpus = list(range(int(found[0][0]), int(found[0][1]) + 1))
                else:
                    cpus = list(range(len(h().online)))
            eff = h().effective(list(cpus))
            if not eff:
                raise OSError(22, "Invalid argument")
            for tid, _ in h().threads:  # sched_setaffinity of a process: its threads follow
                h().masks[tid] = eff
            return None

    import re

    psutil = _strict_module("psutil", Process=Process)

    logger = _Logger(host_ref)
    vllm = _strict_module("vllm")
    vllm_logger = _strict_module("vllm.logger", logger=logger, init_logger=lambda _n: logger)
    vllm.logger = vllm_logger  # type: ignore[attr-defined]

    torch_npu = _strict_module("torch_npu")

    def get_ascend_device_type() -> AscendDeviceType:
        return AscendDeviceType[h().device_type]

    va_utils = _strict_module(
        "vllm_ascend.utils",
        AscendDeviceType=AscendDeviceType,
        get_ascend_device_type=get_ascend_device_type,
    )
    build_info = types.ModuleType("vllm_ascend._build_info")
    return {
        "subprocess": subprocess,
        "os": fake_os,
        "os.path": ospath,
        "shutil": shutil,
        "platform": platform,
        "psutil": psutil,
        "vllm": vllm,
        "vllm.logger": vllm_logger,
        "torch_npu": torch_npu,
        "regex": re,  # the releases use regex's re-compatible subset (fullmatch, split)
        "vllm_ascend.utils": va_utils,
        "vllm_ascend._build_info": build_info,
    }


# the standard modules the releases' binding code may import as they are (pure ones)
_PURE = {
    "__future__",
    "abc",
    "collections",
    "collections.abc",
    "dataclasses",
    "enum",
    "functools",
    "itertools",
    "typing",
    "types",
    "re",
}


def _fake_open(host_ref: list[Host]) -> Any:
    def fake_open(path: Any, mode: str = "r", *_a: Any, **_kw: Any) -> Any:
        path = str(path)
        host = host_ref[0]
        if "w" in mode or "a" in mode:
            if path.startswith("/proc/irq/") and path.endswith("/smp_affinity"):
                if not host.irq_writable:
                    raise PermissionError(13, "Permission denied", path)
                buf = _Recorder(lambda text: host.irq.__setitem__(path.split("/")[3], text))
                return buf
            raise GuardError(f"sandbox: write to {path} refused")
        if path in host.files:
            return io.StringIO(host.files[path])
        raise FileNotFoundError(2, "No such file or directory", path)

    return fake_open


class _Recorder(io.StringIO):
    def __init__(self, done: Any) -> None:
        super().__init__()
        self._done = done

    def close(self) -> None:
        self._done(self.getvalue())
        super().close()


class Loader:
    """Executes the release's modules (from source text) with the guarded import."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.code = {name: compile(src, f"<{name}>", "exec") for name, src in sources.items()}
        self.host_ref: list[Host] = []

    def load(self, host: Host, main: str) -> types.ModuleType:
        self.host_ref[:] = [host]
        stubs = build_stubs(self.host_ref)
        loaded: dict[str, types.ModuleType] = {}

        def package(name: str) -> types.ModuleType:
            if name not in loaded:
                pkg = types.ModuleType(name)
                pkg.__path__ = []  # type: ignore[attr-defined]
                loaded[name] = pkg
            return loaded[name]

        def resolve(name: str) -> types.ModuleType:
            if name in loaded:
                return loaded[name]
            if name in stubs:
                loaded[name] = stubs[name]
            elif name in self.code:
                loaded[name] = run_module(name)
            elif name.split(".")[0] in ("vllm_ascend", "vllm") and not any(
                k.startswith(name + ".") for k in [*self.code, *stubs]
            ):
                raise GuardError(f"sandbox: import of {name} is not stubbed")
            elif name.split(".")[0] in ("vllm_ascend", "vllm"):
                return package(name)
            elif name in _PURE:
                return importlib.import_module(name)
            else:
                raise GuardError(f"sandbox: import of {name} refused")
            return loaded[name]

        def guarded_import(
            name: str,
            globals_: Any = None,
            locals_: Any = None,
            fromlist: Any = (),
            level: int = 0,
        ) -> types.ModuleType:
            if level:
                raise GuardError("sandbox: relative imports are not expected")
            mod = resolve(name)
            if fromlist:
                for item in fromlist:
                    sub = f"{name}.{item}"
                    if sub in stubs or sub in self.code:
                        setattr(mod, item, resolve(sub))
                return mod
            top = name.split(".")[0]
            if "." in name:
                parent = resolve(top) if top in stubs or top in self.code else package(top)
                return parent
            return mod

        safe_builtins = dict(vars(builtins))
        safe_builtins["__import__"] = guarded_import
        safe_builtins["open"] = _fake_open(self.host_ref)

        def run_module(name: str) -> types.ModuleType:
            mod = types.ModuleType(name)
            mod.__dict__["__builtins__"] = safe_builtins
            loaded[name] = mod
            # dataclasses look a class's module up in sys.modules; these names are the
            # release's own (vllm_ascend.*) and collide with nothing in this process
            sys.modules[name] = mod
            stubs["vllm_ascend._build_info"].__device_type__ = host.device_type  # type: ignore[attr-defined]
            exec(self.code[name], mod.__dict__)
            return mod

        return resolve(main)


def run_case(loader: Loader, main: str, case: dict[str, Any]) -> list[dict[str, Any]]:
    host = Host(case)
    out: list[dict[str, Any]] = []
    try:
        mod = loader.load(host, main)
    except GuardError:
        raise
    except Exception as e:
        return [{"outcome": "import_error", "error": f"{type(e).__name__}: {e}"}] * len(
            case["calls"]
        )
    for call in case["calls"]:
        host.reset()
        error: str | None = None
        try:
            mod.bind_cpus(*call.get("args", []), **call.get("kwargs", {}))
        except GuardError:
            raise
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        roles = {name: host.masks.get(tid) for tid, name in host.threads}
        out.append(
            {
                "error": error,
                "main": host.masks.get(MAIN_PID),
                "acl": roles.get("acl_thread"),
                "release": roles.get("release_thread"),
                "uvb": roles.get("uvb_poll_window_thread"),
                "migrate": host.migrate,
                "irq": host.irq,
                "log": host.log,
            }
        )
    return out


def main() -> None:
    job = json.load(sys.stdin)
    loader = Loader(job["modules"])
    arm()
    results = {case["id"]: run_case(loader, job["main"], case) for case in job["cases"]}
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
