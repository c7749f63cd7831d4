"""``python/README.md``, run as written: the quick start in a fresh virtual environment where
the built wheel is installed with pip (its dependencies from the registry), the hub section
against a real ``chorus serve`` started with the README's config and command. Between them they
run every Python block of the README."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from _hubs import README, README_URL, hub_section, python_blocks, readme, readme_hub, sha256
from chorus.hub import Hub


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
    # The quick start section only (the hub's section needs a running hub: below).
    quick_start = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = python_blocks(quick_start)
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


def test_every_python_block_is_run_by_a_test() -> None:
    text = readme()
    quick_start = python_blocks(text.split("## Quick start", 1)[1].split("\n## ", 1)[0])
    assert python_blocks(text) == quick_start + hub_section().blocks


def test_the_build_line_puts_the_wheel_where_the_install_line_takes_it() -> None:
    # With CARGO_TARGET_DIR set, maturin's default output is $CARGO_TARGET_DIR/wheels: only an
    # explicit --out folder is where the next line looks (tests/python.rs builds that way too).
    text = readme()
    [build] = [line for line in text.splitlines() if line.startswith("maturin build")]
    [install] = [line for line in text.splitlines() if line.startswith("pip install dist/")]
    out = build.split("--out", 1)[1].split()[0]
    assert install == f"pip install {out}/chorus-*.whl", (build, install)
    assert "--manifest-path crates/chorus-py/Cargo.toml" in build


def test_the_hub_configs_tokens_match_their_hashes() -> None:
    section = hub_section()
    assert sorted(section.tokens) == ["admin", "tech", "triage"], section.tokens
    hashes = re.findall(r'^(?:admin_)?token_sha256 = "([0-9a-f]{64})"', section.config, re.M)
    assert hashes == [sha256(section.tokens[name]) for name in ("admin", "triage", "tech")]


@pytest.mark.parametrize("python", ["this", "oldest"])
def test_the_hub_section_runs_against_chorus_serve(python: str, tmp_path: Path) -> None:
    """The pool: the README's blocks, one program, against the README's hub; the escalation is
    handled once, by one of the two replicas, answered and acked, in a bounded time."""
    interpreter = sys.executable if python == "this" else oldest_python()
    section = hub_section()
    script = "\n".join(section.blocks)
    assert README_URL in script
    with readme_hub(tmp_path) as url:
        started = time.monotonic()
        # The package from this run's PYTHONPATH (chorus.hub and chorus.handoff need nothing
        # beyond the standard library).
        result = subprocess.run(
            [interpreter, "-c", script.replace(README_URL, url)], cwd=tmp_path,
            capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - started
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stderr == "", result.stderr  # a replica thread that raised prints here
        print(f"the README's hub section ran on {interpreter} in {elapsed:.1f} s:\n"
              f"{result.stdout}", file=sys.stderr)
        admin = Hub(url, section.tokens["admin"])
        tech = Hub(url, section.tokens["tech"])
        [task] = list(admin.tasks())
        timeline = list(admin.task_messages(task["id"]))
        assert [(m["handoff_type"], m["sender"], m["recipients"]) for m in timeline] == [
            ("ESCALATION", "triage", ["tech_pool"]), ("STATUS_UPDATE", "tech", ["triage"])]
        escalation, update = (m["message"] for m in timeline)
        escalation_id = escalation["metadata"]["message_id"]
        assert update["payload"]["data"]["in_response_to"] == escalation_id
        assert update["payload"]["data"]["status"] == "COMPLETED"
        # Handled exactly once, by one replica, which says so.
        handled = re.findall(r"^(replica-[12]) handled (\S+) \(attempt (\d+)\)$",
                             result.stdout, re.M)
        assert len(handled) == 1, result.stdout
        [(replica, message_id, attempt)] = handled
        assert (message_id, attempt) == (escalation_id, "1")
        assert update["payload"]["data"]["summary"].startswith(f"{replica} ")
        assert f"COMPLETED {replica} updated the firmware of Ann's router." in result.stdout
        # Acked: nothing waits or comes back once the program's streams are closed (an
        # unsettled delivery would be back in its inbox a hand-back wait, 1 s, later).
        time.sleep(2)
        assert tech.peek("tech_pool")["depth"] == 0
        assert Hub(url, section.tokens["triage"]).peek("triage")["depth"] == 0
        # The one refusal the README shows is the one dead letter.
        [dead] = list(admin.dead_letters())
        assert dead["reason"]["kind"] == "invalid", dead
        assert [i["pointer"] for i in dead["reason"]["issues"]] == ["/payload/data/status"]
    assert elapsed < 60, f"the README's program took {elapsed:.0f} s"
