"""The README's install without internet access, run as written (issue 26 item 6): the
wheelhouse built from a copy of this checkout with the README's first line, then the second
line in a fresh virtual environment with no index at all (PIP_NO_INDEX, no pip configuration:
its find-links could otherwise stand in for the wheelhouse), then the installed command runs.

Building the wheelhouse reaches the package index pip is configured with, once, as the README's
connected machine does."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
# what a wheel of ascendtune is built from (the rest of a checkout only slows the copy)
SOURCES = ("pyproject.toml", "setup.py", "README.md", "ascendtune")


def offline_lines() -> list[str]:
    text = (TOP / "README.md").read_text()
    section = text.split("## Install without internet access", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.+?)\n```", section, flags=re.S)
    assert len(block) == 1
    return [shlex.join(shlex.split(ln, comments=True)) for ln in block[0].splitlines()]


def run(line: str, python: str, cwd: Path, env: dict[str, str]) -> str:
    argv = shlex.split(line)
    assert argv[0] == "python3", line
    done = subprocess.run(
        [python, *argv[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


def test_the_readme_offline_install_works_with_no_index(tmp_path: Path) -> None:
    build, target = offline_lines()
    assert "pip wheel" in build and "--no-index" in target
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in SOURCES:
        src = TOP / name
        if src.is_dir():
            shutil.copytree(
                src, checkout / name, ignore=shutil.ignore_patterns("__pycache__", "*.so")
            )
        else:
            shutil.copy2(src, checkout / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # the connected machine: a wheelhouse of ascendtune and its dependencies
    run(build, sys.executable, checkout, env)
    wheels = sorted(p.name for p in (checkout / "wheelhouse").glob("*.whl"))
    assert any(w.startswith("ascendtune-") for w in wheels), wheels
    # the air-gapped host: a fresh environment, no index, no pip configuration
    target_env = tmp_path / "target"
    venv.create(target_env, with_pip=True)
    offline = {
        **env,
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_FIND_LINKS": "",
        "PIP_CONSTRAINT": "",
    }
    run(target, str(target_env / "bin" / "python"), checkout, offline)
    done = subprocess.run(
        [str(target_env / "bin" / "ascendtune"), "topo", "--demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in env.items() if k != "ASCENDTUNE_SYSROOT"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("demo atlas-800i-a2")
