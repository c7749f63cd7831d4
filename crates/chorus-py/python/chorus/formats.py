"""Conversion between chat formats through the chorus message, with every loss reported.

>>> result, losses = convert({"messages": [{"role": "user", "name": "ann", "content": "hi"}]},
...                          from_="openai-chat", to="anthropic")
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import _json, _native
from ._native import ConversionError, LossError

__all__ = ["ConversionError", "Loss", "LossError", "convert", "format_ids", "formats"]


class Loss(NamedTuple):
    """An item of the input the output does not carry unchanged."""

    path: str
    """JSON pointer into the chorus conversation."""
    what: str
    """What happened."""
    policy: str
    """What the encoder did (``dropped``, ``prefixed``, ...)."""


def _losses(text: str) -> List[Loss]:
    return [Loss(item["path"], item["what"], item["policy"]) for item in _json.loads(text)]


def convert(
    document: Any,
    *,
    from_: str = "chorus",
    to: str,
    strict: bool = False,
    names: str = "prefix",
    add_generation_prompt: bool = False,
    enable_thinking: Optional[bool] = None,
) -> Tuple[Any, List[Loss]]:
    """Converts ``document`` (Python data, or text for text formats) from format ``from_`` to
    ``to``: the result (Python data; text for text formats) and the losses.

    ``strict=True`` raises :class:`LossError` (its ``losses``) instead of losing anything;
    ``names`` (``prefix`` or ``history``) places speaker names on targets without them.
    """
    try:
        out, losses = _native.convert(
            _json.dumps(document), from_, to, strict, names, add_generation_prompt,
            enable_thinking,
        )
    except LossError as error:
        error.losses = _losses(error.args[1])  # type: ignore[attr-defined]
        raise
    try:
        result: Any = _json.loads(out)
    except json.JSONDecodeError:
        result = out
    return result, _losses(losses)


def formats() -> List[Dict[str, Any]]:
    """The capability table of every format: roles, parts, names, reasoning, downgrades."""
    tables: List[Dict[str, Any]] = _json.loads(_native.formats())
    return tables


def format_ids() -> List[str]:
    """The format ids ``convert`` takes."""
    return [table["format"] for table in formats()]
