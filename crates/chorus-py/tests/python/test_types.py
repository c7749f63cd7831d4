"""``mypy --strict`` over the package's types (its ``.pyi`` and annotated modules) and these
tests, as a user's type checker sees the installed package; and over calls of the handoff
builders that the hub would refuse, which it must flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


MISUSES = '''\
from chorus import handoff
handoff.escalation("a", "b", "NETWORK", "URGENT", {"user_id": "u", "name": "n"}, {})
handoff.escalation("a", "b", "NETWORK", "HIGH", {"user_id": "u"}, {})
handoff.status_update("a", "b", "DONE")
handoff.status_update("a", "b", "COMPLETED", in_reponse_to="m-1")
handoff.notification("a", "b", "E", "m", detail={})
handoff.task_transfer("a", "b", "t", priority="urgent")
handoff.status_update("a", "b", "COMPLETED", progress_percent="50")
handoff.status_update("a", "b", "COMPLETED", in_response_to="m-1", summary="done")
'''


def test_mypy_catches_what_the_hub_would_refuse(tmp_path: Path) -> None:
    """The builders' annotations carry the schemas' names, values and required keys: each line
    of MISUSES but the first and the last is an error a type checker reports."""
    if not os.environ.get("CHORUS_TEST_PYTHON"):
        pytest.importorskip("mypy", reason="not run: mypy is not installed")
    installed = os.path.dirname(os.path.dirname(os.path.abspath(chorus.__file__)))
    (tmp_path / "misuses.py").write_text(MISUSES, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "misuses.py"],
        capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, MYPYPATH=installed),
    )
    lines = sorted({int(line.split(":")[1]) for line in result.stdout.splitlines()
                    if line.startswith("misuses.py:") and ": error:" in line})
    assert lines == list(range(2, 9)), result.stdout + result.stderr
