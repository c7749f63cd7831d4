"""JSON text to and from the native extension (one place for the package's conventions)."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    """Compact JSON text of a document given as Python data (a str is taken as JSON already)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> Any:
    """Python data of JSON text."""
    return json.loads(text)
