"""Shared fixtures: the reference (``openai_harmony`` 0.0.8) beside ``chorus.harmony``.

The reference downloads its vocabulary unless ``TIKTOKEN_ENCODINGS_BASE`` names a folder holding
``o200k_base.tiktoken``; chorus writes that file (it embeds the vocabulary). Without the
reference installed the differential tests are skipped, unless ``CHORUS_TEST_PYTHON`` is set
(as in CI), where a missing oracle fails them.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import tempfile
from types import ModuleType

import pytest

from chorus import _native


def _vocabulary_folder() -> str:
    """A temporary folder with the vocabulary, removed when the run ends."""
    folder = tempfile.mkdtemp(prefix="chorus-py-vocab-")
    atexit.register(shutil.rmtree, folder, True)
    _native.write_tiktoken_file(os.path.join(folder, "o200k_base.tiktoken"))
    return folder


os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", _vocabulary_folder())


def oracle(name: str) -> ModuleType:
    """Imports an oracle package, skipping (or failing, under CHORUS_TEST_PYTHON) without it."""
    if os.environ.get("CHORUS_TEST_PYTHON"):
        return importlib.import_module(name)
    module: ModuleType = pytest.importorskip(name, reason=f"not run: {name} is not installed")
    return module


@pytest.fixture(scope="session")
def reference() -> ModuleType:
    """The ``openai_harmony`` package."""
    return oracle("openai_harmony")
