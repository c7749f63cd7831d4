"""The quick start of ``python/README.md``, run as written in a fresh virtual environment
where the built wheel is installed with pip (its dependencies from the registry)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "python", "README.md")


def oldest_python() -> str:
    """CPython 3.9 (the oldest the abi3 wheel supports) when the machine has it, else this one."""
    pyenv = os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")
    for found in [shutil.which("python3.9")] + sorted(glob.glob(pyenv)):
        if found and subprocess.run([found, "-c", "import venv"], capture_output=True).returncode == 0:
            return found
    print("CPython 3.9 not found: the quick start runs on this python only", file=sys.stderr)
    return sys.executable


@pytest.mark.parametrize("python", ["this", "oldest"])
def test_quick_start_runs_in_a_fresh_venv(python: str) -> None:
    interpreter = sys.executable if python == "this" else oldest_python()
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
        subprocess.run([interpreter, "-m", "venv", venv], check=True, env=env)
        python = os.path.join(venv, "bin", "python")
        subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        wheel], check=True, env=env)
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True, check=True).stdout
        script = os.path.join(folder, "quickstart.py")
        with open(script, "w", encoding="utf-8") as file:
            file.write("\n".join(blocks))
        # Outside the source tree, so that only the installed wheel can be imported.
        result = subprocess.run([python, script], capture_output=True, text=True, cwd=folder,
                                env={"PATH": os.environ.get("PATH", ""), "HOME": folder})
    assert result.returncode == 0, result.stderr
    print(f"quick start ran on {interpreter} ({version.strip()})", file=sys.stderr)
    assert "final 4" in result.stdout
    assert "/content" in result.stdout
