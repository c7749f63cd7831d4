"""Validation of chorus documents (messages, conversations, handoffs, data parts) with a JSON
pointer, a message and a hint for every problem; and their JSON Schemas.

>>> validate({"role": "user", "content": 3})
[Problem(pointer='/content', ...)]
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

from . import _json, _native

__all__ = ["Problem", "ValidationError", "check", "kinds", "schema", "validate"]


class Problem(NamedTuple):
    """One problem of a document."""

    pointer: str
    """JSON pointer of the offending value (``""``: the whole document)."""
    message: str
    """What was expected and what was found."""
    hint: Optional[str]
    """How to fix a known mistake."""
    severity: str
    """``error`` or ``warning``."""


class ValidationError(ValueError):
    """A document with errors; ``problems`` lists them (pointer, message, hint)."""

    def __init__(self, problems: List[Problem], kind: Optional[str]) -> None:
        self.problems = problems
        self.kind = kind
        first = problems[0] if problems else None
        where = "" if first is None else f" (first: {first.pointer or '/'}: {first.message})"
        super().__init__(f"{len(problems)} problem(s) in the {kind or 'document'}{where}")


def _document(document: Any) -> bytes:
    if isinstance(document, bytes):
        return document
    return _json.dumps(document).encode("utf-8")


def validate(document: Any, kind: str = "auto") -> List[Problem]:
    """The problems of ``document`` (Python data, JSON text or bytes) read as ``kind``
    (``auto`` finds it); empty when it is valid. Warnings are included."""
    _, problems = _native.validate(_document(document), kind)
    return [Problem(*problem) for problem in problems]


def check(document: Any, kind: str = "auto") -> None:
    """Raises :class:`ValidationError` when ``document`` has errors."""
    found_kind, problems = _native.validate(_document(document), kind)
    errors = [Problem(*p) for p in problems if p[3] == "error"]
    if errors:
        raise ValidationError(errors, found_kind)


def schema(kind: str) -> Dict[str, Any]:
    """The JSON Schema of ``kind``."""
    value: Dict[str, Any] = _json.loads(_native.schema(kind))
    return value


def kinds() -> List[str]:
    """The kinds there are (``message``, ``conversation``, ``handoff``, ...)."""
    return _native.kinds()
