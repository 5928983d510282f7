"""The README's quick start is what CI runs."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from tests.support.cli import Cli

TOP = Path(__file__).resolve().parents[2]


def quick_start_commands() -> list[str]:
    text = (TOP / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_two_quick_start_commands() -> None:
    cmds = quick_start_commands()
    assert len(cmds) == 2
    assert "topo --demo" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (TOP / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in ci


def test_library_example_runs(capsys: object) -> None:
    text = (TOP / "README.md").read_text()
    blocks = re.findall(r"```python\n(.+?)\n```", text, flags=re.S)
    assert blocks, "the README shows the API"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out.splitlines()[0].startswith("0 4 ")


# --------------------------------------------------------------- every command in the README

SH_BLOCK = re.compile(r"```sh\n(.+?)\n```", flags=re.S)
HOST_READERS = {"topo", "plan", "doctor", "bind", "log"}
# install commands: CI runs the test command; the others need a network or a wheelhouse
# the gather one-liners run other tools (they show how; a test never reaches other hosts)
TRANSPORTS = ("ansible", "clush", "srun", "kubectl", "for ", "ssh", "scp", "rsync")

NOT_RUN_HERE = {
    "python3 -m pip install .": "installs this checkout (the test suite runs from it)",
    "python3 -m pip install -e '.[test]'": ".ci/run runs it",
    "python3 -m pytest": "this very test run",
    # tests/e2e/test_offline_install.py runs the two, in a scratch folder
    "python3 -m pip wheel --wheel-dir wheelhouse .": "test_offline_install.py runs it",
    "python3 -m pip install --no-index --find-links wheelhouse ascendtune": "the same",
}


def readme_commands() -> list[tuple[str, bool]]:
    """Every shell command of the README's sh blocks (comments off, `&&` chains split), and
    whether its block is meant for a live host (introduced by "live host" or "real Atlas")."""
    out: list[tuple[str, bool]] = []
    text = (TOP / "README.md").read_text()
    for m in SH_BLOCK.finditer(text):
        before = text[max(0, m.start() - 400) : m.start()]
        live = "live host" in before or "real Atlas host" in before
        for line in m.group(1).splitlines():
            words = shlex.split(line, comments=True)
            if not words:
                continue
            part: list[str] = []
            for w in [*words, "&&"]:
                if w == "&&":
                    out.append((shlex.join(part), live))
                    part = []
                else:
                    part.append(w)
    return out


def _as_run_here(argv: list[str], child: int) -> tuple[list[str], bool]:
    """argv made runnable on this machine: a live read gets a demo host, a PID becomes a child
    of this test; and whether the command ran in its own form (not adapted)."""
    args = [str(child) if a == "12345" else a for a in argv]
    own = args == argv
    cut = args.index("--") if "--" in args else len(args)
    head, tail = args[:cut], args[cut:]
    reads_host = bool(head) and head[0] in HOST_READERS
    # log reads a file, bind --plan a plan: only their comparison or plan needs a host
    if reads_host and head[0] in ("log", "bind"):
        reads_host = head[0] == "bind" and "--plan" not in head
    views = ("snapshot", "topo", "doctor", "plan", "bind", "agent-status")
    if head[:2] in (["fleet", x] for x in views):
        # never reach for a real cluster from a test: a closed loopback port stands for it
        if "--ray-address" in head:
            i = head.index("--ray-address")
            del head[i : i + 2]
        return [*head, "--ray-address", "127.0.0.1:9", "--timeout", "2", *tail], False
    if head[:2] == ["fleet", "compare"]:
        # compares what a gather above saved (here it had no cluster to gather from)
        return head + tail, False
    if head[:1] == ["bind"] and "--watch" in head:
        # keeps binding this host: runs live, briefly (on a machine without workers it has
        # nothing to bind and says so)
        return [*head, "--for", "0.2", *tail], False
    if reads_host and not {"--demo", "--sysroot"} & set(head):
        head += ["--demo", "container-a2-half" if head[0] == "doctor" else "atlas-800i-a2"]
        if head[0] == "bind" and "--dry-run" not in head:
            head.append("--dry-run")  # a captured host's plan changes no process (issue 12)
        own = False
    if head and head[0] == "watch" and "--once" not in head:
        head += ["--count", "1", "--interval", "0.1"]
        own = False
    return head + tail, own


def test_every_readme_command_runs(tmp_path: Path) -> None:
    import sys

    env = dict(os.environ, PYTHONPATH=str(TOP), COLUMNS="80")
    shutil.copy(
        TOP / "tests" / "fixtures" / "vllm_log" / "a2_tp4_bound.log", tmp_path / "server.log"
    )
    child = subprocess.Popen(["sleep", "60"])
    try:
        for cmd, live in readme_commands():
            if cmd in NOT_RUN_HERE or cmd.startswith(TRANSPORTS):
                continue
            argv = shlex.split(cmd)
            redirect = None
            if ">" in argv:
                i = argv.index(">")
                argv, redirect = argv[:i], tmp_path / argv[i + 1]
            if argv[:3] == ["python3", "-m", "ascendtune"]:
                argv = argv[3:]
            else:
                assert argv[0] == "ascendtune", f"a README command this test cannot run: {cmd}"
                argv = argv[1:]
            args, own = _as_run_here(argv, child.pid)
            if live and args[:1] == ["bind"] and "--plan" in args and "--show" not in args:
                # plan.json was made on a demo here, not on this host: bind refuses it unless
                # told, and a demo's plan changes nothing on this machine
                args = [*args, "--force", "--dry-run"]
                own = False
            done = subprocess.run(
                [sys.executable, "-m", "ascendtune", *args],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
                cwd=tmp_path,
                check=False,
            )
            if redirect is not None:
                redirect.write_text(done.stdout)
            assert "Traceback" not in done.stderr, (cmd, done.stderr)
            # as written they work (doctor and log say 1 for problems found); adapted to this
            # machine they parse and fail, if at all, on what this host lacks, never on usage
            ok = {0, 1} if own and not live else {0, 1, 3, 4, 5}
            assert done.returncode in ok, (cmd, args, done.returncode, done.stderr)
    finally:
        child.kill()
        child.wait()


def test_readme_sample_output_is_what_the_demo_prints(cli: Cli) -> None:

    text = (TOP / "README.md").read_text()
    pairs = re.findall(r"```sh\n(ascendtune [^\n]+)\n```\n\n```text\n(.+?)```", text, flags=re.S)
    assert len(pairs) == 2, "the sample output of plan --policy compare and doctor"
    for cmd, shown in pairs:
        res = cli(*shlex.split(cmd)[1:], width=80)
        got = "".join(line.rstrip() + "\n" for line in res.stdout.splitlines())
        assert got == shown, f"README sample of `{cmd}` is stale"


def test_readme_links_stay_inside_the_repository() -> None:
    text = (TOP / "README.md").read_text()
    assert "SPEC" not in text
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if re.match(r"https?://", target):
            continue
        path = (TOP / target.split("#")[0]).resolve()
        assert path.is_relative_to(TOP) and path.exists(), target
