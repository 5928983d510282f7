"""Shell completion as installed: the committed scripts are what the Typer app generates, and
bash, zsh and fish really complete option values through them (policies, demos, targets,
SoCs, sections), not file names."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ascendtune.app.emit import EMITS
from ascendtune.app.plan import policy_choices
from ascendtune.app.planchoices import SOC_NAMES
from ascendtune.core import vllm_ascend as versions
from scripts.gen_completions import OUT, SHELLS, script
from tests.support.cli import Cli

TOP = Path(__file__).resolve().parents[2]
POLICIES = set(policy_choices(compare=True))
DEMOS = {
    "atlas-800i-a2",
    "atlas-800i-a3",
    "atlas-300i-duo",
    "ascend-950",
    "container-a2-half",
    "dgx-h100",
}


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_script_is_current(shell: str) -> None:
    committed = (OUT / f"ascendtune.{shell}").read_text()
    assert script(shell) == committed, f"run `python -m scripts.regen` ({shell} differs)"


def test_zsh_file_begins_with_compdef() -> None:
    # compinit reads only the first line: anything before #compdef and the file is ignored
    assert (OUT / "ascendtune.zsh").read_text().splitlines()[0] == "#compdef ascendtune"


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PATH with an `ascendtune` that runs this tree, as the installed console script would."""
    bin_dir = tmp_path_factory.mktemp("bin")
    exe = bin_dir / "ascendtune"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ascendtune "$@"\n')
    exe.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_ASCENDTUNE", "COMP_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(TOP))
    return env


def run(argv: list[str], env: dict[str, str], **extra: str) -> list[str]:
    done = subprocess.run(
        argv, env={**env, **extra}, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def test_bash_protocol_offers_policy_names(shim: dict[str, str]) -> None:
    # the issue's own check, in click's spelling of the request
    got = run(
        ["ascendtune"],
        shim,
        _ASCENDTUNE_COMPLETE="bash_complete",
        COMP_WORDS="ascendtune plan --policy ",
        COMP_CWORD="3",
    )
    assert set(got) == POLICIES


CASES = [
    ("ascendtune plan --policy ", POLICIES),
    ("ascendtune doctor --policy numa-", {"numa-local", "numa-slice"}),
    ("ascendtune topo --demo ", DEMOS | {"list"}),
    ("ascendtune plan --demo dgx", {"dgx-h100"}),
    ("ascendtune plan --target ", {"auto", *versions.names()}),
    ("ascendtune doctor --target v0.2", {n for n in versions.names() if n.startswith("v0.2")}),
    ("ascendtune plan --soc ", set(SOC_NAMES)),
    ("ascendtune doctor --section ", {"host", "workers", "binders", "k8s"}),
    ("ascendtune plan --emit ", set(EMITS)),
    ("ascendtune check-config --target ", {"auto", *versions.names()}),
]


def _words(line: str) -> tuple[list[str], int]:
    words = line.split(" ")
    return words, len(words) - 1


@pytest.mark.parametrize(("line", "want"), CASES)
def test_bash_completes_values_through_the_script(
    shim: dict[str, str], line: str, want: set[str]
) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    words, cword = _words(line)
    array = " ".join(f"'{w}'" for w in words)
    # --norc: no bash-completion package, the sourced file alone must do it
    prog = (
        f"source '{OUT / 'ascendtune.bash'}'; COMP_WORDS=({array}); COMP_CWORD={cword}; "
        '_ascendtune_completion ascendtune; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    assert set(run([bash, "--norc", "--noprofile", "-c", prog], shim)) == want


@pytest.mark.parametrize(("line", "want"), CASES)
def test_zsh_completes_values_through_the_autoloaded_file(
    shim: dict[str, str], tmp_path: Path, line: str, want: set[str]
) -> None:
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed (CI installs it: apt-get install zsh)")
    fpath = tmp_path / "fpath"
    fpath.mkdir()
    shutil.copy(OUT / "ascendtune.zsh", fpath / "_ascendtune")
    words, cword = _words(line)
    array = " ".join(f"'{w}'" for w in words)
    # installed as $fpath/_ascendtune and autoloaded: the first call must complete already.
    # _arguments is compsys's; here it prints the value spec Typer hands it
    prog = (
        f"fpath=('{fpath}' $fpath); autoload -Uz _ascendtune; "
        '_arguments() { print -rl -- "$@" }; compdef() { : }; '
        f"words=({array}); CURRENT={cword + 1}; _ascendtune"
    )
    out = "\n".join(run([zsh, "-f", "-c", prog], shim))
    assert "((" in out, out
    inner = out.split("((", 1)[1].rsplit("))", 1)[0]
    offered = {tok.split(":", 1)[0] for tok in shlex.split(inner)}
    assert offered == want, out


@pytest.mark.parametrize(("line", "want"), CASES)
def test_fish_completes_values_through_the_script(
    shim: dict[str, str], line: str, want: set[str]
) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed (CI installs it: apt-get install fish)")
    prog = f"source '{OUT / 'ascendtune.fish'}'; complete -C '{line}'"
    got = {w.split("\t")[0] for w in run([fish, "--no-config", "-c", prog], shim)}
    assert got == want


def test_fish_offers_whole_words_with_one_line_of_help_each(shim: dict[str, str]) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed (CI installs it: apt-get install fish)")
    for line, want in (
        ("ascendtune ", {"topo", "plan", "bind", "doctor", "check-config", "explain"}),
        ("ascendtune plan --", {"--policy", "--emit", "--soc", "--cmdline"}),
    ):
        prog = f"source '{OUT / 'ascendtune.fish'}'; complete -C '{line}'"
        got = [w.split("\t")[0] for w in run([fish, "--no-config", "-c", prog], shim)]
        # every candidate a command or an option: no fragment of a wrapped help
        word = r"[a-z][a-z-]*" if line.endswith(" ") else r"--[a-z][a-z-]*"
        assert all(re.fullmatch(word, w) for w in got), got
        assert want <= set(got)


def test_soc_help_lists_what_completion_offers(cli: Cli) -> None:
    res = cli("plan", "--help")
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    for name in SOC_NAMES:
        assert re.search(rf"\b{name}\b", text.split("--soc", 1)[1][:300]), name
