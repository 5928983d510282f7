"""Whether this Python's C compiler is on PATH: where it is, `pip install -e .` builds the
optional compiled modules (setup.py), and their tests check they were built."""

from __future__ import annotations

import shutil
import sysconfig

import pytest


def skip_without_cc() -> None:
    """Skip the calling test where no C compiler is (the Python paths then run alone)."""
    cc = (sysconfig.get_config_var("CC") or "").split()
    if not cc or shutil.which(cc[0]) is None:
        pytest.skip("no C compiler: the Python path runs alone")
