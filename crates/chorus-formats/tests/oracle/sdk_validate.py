"""Validates provider requests against the official Python SDKs' request types.

Reads JSON lines {"id", "format", "request"} on stdin and writes one JSON line per input:
{"id", "ok", "error"?, "notes"}. Formats and the SDK type each is checked against:

- openai-chat: openai `CompletionCreateParamsNonStreaming` (TypedDict)
- openai-responses: openai `ResponseCreateParamsNonStreaming` (TypedDict)
- anthropic: anthropic `MessageCreateParamsNonStreaming` (TypedDict)
- gemini: google-genai `list[Content]` for `contents` and `GenerateContentConfig` for the rest of
  the REST body (`system_instruction`, `tools`, `tool_config`, `safety_settings`,
  `cached_content`, and the fields of `generation_config`), in either key spelling.

The TypedDicts are validated with pydantic `TypeAdapter` in strict mode with unknown keys
forbidden (every TypedDict reachable from the request type gets that config), and every lazily
validated `Iterable` is consumed, so a wrong shape anywhere fails. The google-genai models forbid
unknown keys themselves and are validated from JSON text in strict mode.

What the caller supplies and a conversation does not hold is filled in and listed in `notes`:
`model` (every request but Gemini's, whose model is in the URL) and Anthropic's `max_tokens`.
`reasoning_content` on Chat Completions assistant messages (the vLLM/DeepSeek/Qwen extension the
openai-chat codec documents) is not an OpenAI field: it is removed before validation and noted.
"""

import json
import sys
import typing

import typing_extensions
from pydantic import ConfigDict, TypeAdapter, ValidationError

from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from google.genai import types as genai
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming


def _is_typeddict(t):
    return isinstance(t, type) and (typing.is_typeddict(t) or typing_extensions.is_typeddict(t))


def _forbid_unknown_keys(root):
    """Gives every TypedDict reachable from `root` a strict config that forbids unknown keys."""
    seen = set()
    stack = [root]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if _is_typeddict(t):
            t.__pydantic_config__ = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
            stack.extend(typing.get_type_hints(t, include_extras=True).values())
            continue
        stack.extend(typing.get_args(t))
        for attr in ("__origin__", "__value__"):
            inner = getattr(t, attr, None)
            if inner is not None:
                stack.append(inner)


def _consume(value):
    """Iterates every lazily validated iterable so that its items are validated too."""
    if isinstance(value, dict):
        for v in value.values():
            _consume(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _consume(v)
    elif type(value).__name__ == "ValidatorIterator":
        for v in value:
            _consume(v)


def _typed(root):
    _forbid_unknown_keys(root)
    adapter = TypeAdapter(root)

    def validate(request):
        _consume(adapter.validate_python(request))

    return validate


_chat = _typed(CompletionCreateParamsNonStreaming)
_responses = _typed(ResponseCreateParamsNonStreaming)
_anthropic = _typed(MessageCreateParamsNonStreaming)
_contents = TypeAdapter(typing.List[genai.Content])

# REST body keys of generateContent that google-genai carries in GenerateContentConfig.
_GEMINI_CONFIG_KEYS = {
    "system_instruction": "system_instruction",
    "systemInstruction": "system_instruction",
    "tools": "tools",
    "tool_config": "tool_config",
    "toolConfig": "tool_config",
    "safety_settings": "safety_settings",
    "safetySettings": "safety_settings",
    "cached_content": "cached_content",
    "cachedContent": "cached_content",
    "labels": "labels",
}


def _with_model(request, notes):
    if "model" not in request:
        request["model"] = "chorus-oracle-model"
        notes.append("model supplied")


def openai_chat(request, notes):
    _with_model(request, notes)
    for m in request.get("messages", []):
        if isinstance(m, dict) and m.get("role") == "assistant" and "reasoning_content" in m:
            del m["reasoning_content"]
            notes.append("reasoning_content extension removed")
    _chat(request)


def openai_responses(request, notes):
    _with_model(request, notes)
    _responses(request)


def anthropic(request, notes):
    _with_model(request, notes)
    if "max_tokens" not in request:
        request["max_tokens"] = 1024
        notes.append("max_tokens supplied")
    _anthropic(request)


def gemini(request, notes):
    body = dict(request)
    if "contents" not in body:
        raise ValueError("a generateContent body needs `contents`")
    _contents.validate_json(json.dumps(body.pop("contents")), strict=True)
    config = {}
    for key in ("generation_config", "generationConfig"):
        generation = body.pop(key, None)
        if generation is not None:
            if not isinstance(generation, dict):
                raise ValueError(f"`{key}` is not an object")
            config.update(generation)
    for key in list(body):
        if key not in _GEMINI_CONFIG_KEYS:
            raise ValueError(f"generateContent has no body field `{key}`")
        config[_GEMINI_CONFIG_KEYS[key]] = body.pop(key)
    genai.GenerateContentConfig.model_validate_json(json.dumps(config), strict=True)


CHECKS = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
}


def _variant(loc):
    """The union members (SDK class names) an error location passes through."""
    return tuple(part for part in loc if isinstance(part, str) and part[:1].isupper())


def _short(error):
    """The errors of the union member that came closest, instead of every member's."""
    if not isinstance(error, ValidationError):
        return f"{type(error).__name__}: {error}"
    groups = {}
    for e in error.errors():
        groups.setdefault(_variant(e["loc"]), []).append(e)

    def mismatched(errors):
        return any(
            e["type"] == "literal_error" and e["loc"] and e["loc"][-1] in ("type", "role")
            for e in errors
        )

    # The member that matched deepest without a wrong `type` or `role`, then the fewest errors.
    best = min(
        groups.values(),
        key=lambda errs: (mismatched(errs), -max(len(e["loc"]) for e in errs), len(errs)),
    )
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']} (found {str(e.get('input'))[:80]!r})"
        for e in best[:4]
    )


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        notes = []
        out = {"id": case["id"], "ok": True, "notes": notes}
        try:
            CHECKS[case["format"]](case["request"], notes)
        except Exception as e:  # every failure is a finding for the Rust side
            out["ok"] = False
            out["error"] = _short(e)
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
