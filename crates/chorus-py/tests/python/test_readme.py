"""The quick start of ``python/README.md``, run as written in a fresh virtual environment
where the built wheel is installed with pip (its dependencies from the registry)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "python", "README.md")


def test_quick_start_runs_in_a_fresh_venv() -> None:
    wheel = os.environ.get("CHORUS_PY_WHEEL")
    if not wheel:
        if os.environ.get("CHORUS_TEST_PYTHON"):
            pytest.fail("CHORUS_PY_WHEEL (the built wheel) is not set")
        pytest.skip("not run: CHORUS_PY_WHEEL (the built wheel) is not set")
    with open(README, encoding="utf-8") as file:
        text = file.read()
    # The quick start section only (the hub's example needs a running hub).
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", quick_start, re.S)
    assert blocks, "the README has python blocks"
    # Without this run's PYTHONPATH (where the wheel is unpacked for the other tests).
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    with tempfile.TemporaryDirectory(prefix="chorus-readme-") as folder:
        venv = os.path.join(folder, "venv")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, env=env)
        python = os.path.join(venv, "bin", "python")
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        wheel], check=True, env=env)
        script = os.path.join(folder, "quickstart.py")
        with open(script, "w", encoding="utf-8") as file:
            file.write("\n".join(blocks))
        # Outside the source tree, so that only the installed wheel can be imported.
        result = subprocess.run([python, script], capture_output=True, text=True, cwd=folder,
                                env={"PATH": os.environ.get("PATH", ""), "HOME": folder})
    assert result.returncode == 0, result.stderr
    assert "final 4" in result.stdout
    assert "/content" in result.stdout
