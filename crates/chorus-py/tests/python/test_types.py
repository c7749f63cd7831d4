"""``mypy --strict`` over the package's types (its ``.pyi`` and annotated modules) and these
tests, as a user's type checker sees the installed package."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import chorus


def test_mypy_strict_passes_on_the_tests() -> None:
    if not os.environ.get("CHORUS_TEST_PYTHON"):
        pytest.importorskip("mypy", reason="not run: mypy is not installed")
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.dirname(os.path.dirname(os.path.abspath(chorus.__file__)))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         os.path.join(installed, "chorus"), here],
        capture_output=True, text=True, cwd=here,
        env=dict(os.environ, MYPYPATH=installed),
    )
    assert result.returncode == 0, result.stdout + result.stderr
