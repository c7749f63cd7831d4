"""Helpers of the tests that need a real ``chorus serve``: the binary, starting and stopping
it, and the hub section of ``python/README.md`` (its config, serve command and Python blocks).

The binary comes from ``CHORUS_BIN`` (the Rust test passes the workspace's
``target/debug/chorus``); without it such tests are skipped, unless ``CHORUS_TEST_PYTHON`` is
set (as in CI), where they fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import subprocess
import threading
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Sequence

import pytest

README = Path(__file__).resolve().parent.parent.parent / "python" / "README.md"

README_URL = "http://127.0.0.1:7700"
"""The address the README's code and the ``chorus.handoff`` examples use (``chorus serve``'s
default); the tests' hubs listen on a free port instead, put in its place."""


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def chorus_binary() -> str:
    binary = os.environ.get("CHORUS_BIN")
    if not binary or not os.path.exists(binary):
        message = (f"CHORUS_BIN is not set to the chorus binary (found {binary!r}; "
                   "cargo build -p chorus-cli)")
        if os.environ.get("CHORUS_TEST_PYTHON"):
            pytest.fail(message)
        pytest.skip(f"not run: {message}")
    return binary


@contextlib.contextmanager
def serve(folder: Path, args: Sequence[str]) -> Iterator[str]:
    """Runs ``chorus ARGS --listen 127.0.0.1:0`` in ``folder``; yields its URL, stops it after."""
    process = subprocess.Popen(
        [chorus_binary(), *args, "--listen", "127.0.0.1:0"],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "http://" in first, f"chorus serve did not start: {first!r}"
        stdout = process.stdout
        threading.Thread(target=lambda: [None for _ in stdout], daemon=True).start()
        yield "http://" + first.split("http://")[1].split()[0]
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class HubSection(NamedTuple):
    """The README's hub section."""

    config: str
    """The ``pool.toml`` it shows."""
    serve_args: List[str]
    """The arguments of its ``chorus serve`` line (after ``chorus``)."""
    tokens: Dict[str, str]
    """The token of each agent of the config, and of ``admin``, from its comments."""
    blocks: List[str]
    """Its Python blocks, in order."""


def python_blocks(markdown: str) -> List[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, re.S | re.M)


def readme() -> str:
    return README.read_text(encoding="utf-8")


def hub_section() -> HubSection:
    section = readme().split("\n## The hub", 1)[1].split("\n## ", 1)[0]
    [config] = re.findall(r"^```toml\n(.*?)^```", section, re.S | re.M)
    [line] = [line for block in re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
              for line in block.splitlines() if line.startswith("chorus serve")]
    tokens: Dict[str, str] = {}
    owner = "admin"
    for config_line in config.splitlines():
        table = re.match(r"\[agents\.(\w+)\]", config_line)
        if table:
            owner = table.group(1)
        token = re.match(r"# (?:admin )?token: (\S+)$", config_line)
        if token:
            tokens[owner] = token.group(1)
    return HubSection(config, shlex.split(line)[1:], tokens, python_blocks(section))


@contextlib.contextmanager
def readme_hub(folder: Path) -> Iterator[str]:
    """A hub started as the README says: its config saved under the name its ``chorus serve``
    line gives ``--config``, and that line run in ``folder`` (on a free port)."""
    section = hub_section()
    args = section.serve_args
    config = args[args.index("--config") + 1]
    (folder / config).write_text(section.config, encoding="utf-8")
    with serve(folder, section.serve_args) as url:
        yield url
