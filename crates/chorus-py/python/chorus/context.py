"""Token counting (per message, by category) and trimming of chorus conversations; data
parts (seed 004) merged by identity and rendered for a model.

>>> count({"messages": [{"role": "user", "content": "hello"}]}, model="gpt-4o")["total"]
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import _json, _native
from ._native import ContextError

__all__ = ["ContextError", "count", "count_text", "merge_data", "render_data", "trim"]


def count(
    conversation: Any,
    *,
    model: str,
    tokenizer: Optional[str] = None,
    from_: str = "chorus",
) -> Dict[str, Any]:
    """Counts the tokens of ``conversation`` (format ``from_``) for ``model``:
    ``{"total", "messages", "breakdown": {"text", "images", "audio", "tools", "overhead"},
    "tokenizer", "exact", "warnings"}``. ``tokenizer``: a tokenizer.json that counts the text
    exactly (open models)."""
    counted: Dict[str, Any] = _json.loads(
        _native.count(_json.dumps(conversation), model, tokenizer, from_))
    return counted


def count_text(text: str, *, model: str, tokenizer: Optional[str] = None) -> int:
    """The tokens of one text for ``model`` (or by the tokenizer.json at ``tokenizer``)."""
    return _native.count_text(text, model, tokenizer)


def trim(
    conversation: Any,
    *,
    max_tokens: int,
    model: str,
    tokenizer: Optional[str] = None,
    summary: Optional[Dict[str, Any]] = None,
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Trims a chorus conversation to ``max_tokens``: the kept conversation and the report
    (``strategy``, ``budget``, ``tokens_before``, ``tokens_after``, ``dropped``, ``replaced``,
    ``summary_inserted``). ``summary``: a message to insert in place of what is dropped."""
    kept, report = _native.trim(
        _json.dumps(conversation), max_tokens, model, tokenizer,
        None if summary is None else _json.dumps(summary))
    kept_conversation: Dict[str, Any] = _json.loads(kept)
    trim_report: Dict[str, Any] = _json.loads(report)
    return kept_conversation, trim_report


def merge_data(conversation: Any) -> List[Dict[str, Any]]:
    """The data parts of a chorus conversation merged by identity (``kind``, refined by
    ``_instance``): objects merge deeply, later values win, arrays are replaced whole. One
    ``{"kind", "instance", "data", "description", "schema"}`` per identity, in the order first
    seen."""
    merged: List[Dict[str, Any]] = _json.loads(_native.merge_data(_json.dumps(conversation)))
    return merged


def render_data(conversation: Any) -> str:
    """The text a model is shown for the merged data parts of a chorus conversation (what
    ``chorus`` puts in the context in place of the parts themselves)."""
    return _native.render_data(_json.dumps(conversation))
