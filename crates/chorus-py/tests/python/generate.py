"""Generated Harmony conversations, built the same way through either package's public API.

A case is plain data (a "spec"); :func:`build` turns it into a ``Conversation`` of the given
module (``openai_harmony`` or ``chorus.harmony``), so both packages get the same calls.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any, Dict, List, Optional

WORDS = [
    "hello", "What is 2 + 2?", "", " ", "\n", "a\nb\n\n", "tabs\tand  spaces", "Привет, мир",
    "中文字符", "日本語のテキスト", "🎉🚀 emoji", "👩‍👩‍👧 zwj", "e\u0301 combining", "عربي",
    "zero\u200bwidth", "quote \" and \\ backslash", "{\"json\": [1, 2.5, null]}", "x" * 300,
    "<|end|>", "text <|channel|> inside", "<|start|>assistant", "<|reserved_200013|>",
    "<|constrain|>json", "functions.lookup", "to=all", "  leading", "trailing  ", "Ω≈ç√∫",
]
NAMES = ["alice", "Ägent-7", "工具", "bot 🤖", "", "a:b", "<|call|>", "x" * 40]
CHANNELS = ["analysis", "commentary", "final", "", "analysis commentary", "终", "<|end|>"]
RECIPIENTS = [
    "functions.lookup_weather", "browser.search", "python", "assistant", "all", "functions.工具",
    "user", " to=x", "<|message|>",
]
CONTENT_TYPES = ["<|constrain|>json", "code", "json", "<|constrain|>", "text/é", "<|end|>"]
DATES = ["2025-01-01", "2021-01", "", "昨日"]
TYPES = ["string", "number", "integer", "boolean", "null"]


def text(rng: random.Random) -> str:
    """A string: one or two pool words, sometimes joined."""
    if rng.random() < 0.3:
        return rng.choice(WORDS) + rng.choice([" ", "", "\n"]) + rng.choice(WORDS)
    return rng.choice(WORDS)


def maybe(rng: random.Random, pool: List[str], p: float = 0.5) -> Optional[str]:
    """A pool item or None."""
    return rng.choice(pool) if rng.random() < p else None


def schema(rng: random.Random, depth: int = 0) -> Dict[str, Any]:
    """A JSON Schema of the kinds tool parameters use."""
    kind = rng.randrange(8 if depth < 2 else 4)
    out: Dict[str, Any]
    if kind == 0:
        out = {"type": rng.choice(TYPES)}
    elif kind == 1:
        out = {"type": "string", "enum": [text(rng) for _ in range(rng.randrange(1, 4))]}
    elif kind == 2:
        out = {"type": rng.choice(["number", "integer"]),
               "default": rng.choice([0, -1, 1.5, 10**20, 2.5e-7, True])}
    elif kind == 3:
        out = {"type": [rng.choice(TYPES), rng.choice(TYPES)]}
    elif kind == 4:
        out = {"type": "array", "items": schema(rng, depth + 1)}
    elif kind == 5:
        out = {"oneOf": [schema(rng, depth + 1) for _ in range(rng.randrange(1, 3))]}
    else:
        out = object_schema(rng, depth + 1)
    if rng.random() < 0.3:
        out["description"] = text(rng)
    if rng.random() < 0.1:
        out["nullable"] = True
    if rng.random() < 0.1:
        out["title"] = text(rng)
    return out


def object_schema(rng: random.Random, depth: int = 0) -> Dict[str, Any]:
    """An object schema with a few properties."""
    names = rng.sample(["location", "unit", "q", "数量", "top_n", "é", "format"], rng.randrange(0, 4))
    out: Dict[str, Any] = {"type": "object",
                           "properties": {n: schema(rng, depth) for n in names}}
    if names and rng.random() < 0.5:
        out["required"] = names[: rng.randrange(1, len(names) + 1)]
    return out


def tools(rng: random.Random) -> List[Dict[str, Any]]:
    """Function tool descriptions (parameters sometimes absent)."""
    out = []
    for i in range(rng.randrange(0, 4)):
        tool: Dict[str, Any] = {"name": rng.choice(["lookup_weather", "get_time", "搜索", "f"]) + str(i),
                                "description": text(rng)}
        if rng.random() < 0.7:
            tool["parameters"] = object_schema(rng)
        out.append(tool)
    return out


def system_spec(rng: random.Random) -> Dict[str, Any]:
    """System content: each field absent (default), None, or a value; built-in tools."""
    fields: Dict[str, Any] = {}
    for key, pool in (("model_identity", WORDS), ("conversation_start_date", DATES),
                      ("knowledge_cutoff", DATES)):
        roll = rng.random()
        if roll < 0.2:
            fields[key] = None
        elif roll < 0.6:
            fields[key] = rng.choice(pool)
    roll = rng.random()
    if roll < 0.2:
        fields["reasoning_effort"] = None
    elif roll < 0.7:
        fields["reasoning_effort"] = rng.choice(["Low", "Medium", "High"])
    roll = rng.random()
    if roll < 0.15:
        fields["channel_config"] = None
    elif roll < 0.5:
        fields["channel_config"] = {
            "valid_channels": rng.sample(CHANNELS, rng.randrange(0, 4)),
            "channel_required": rng.random() < 0.7,
        }
    return {"kind": "system", "fields": fields, "browser": rng.random() < 0.3,
            "python": rng.random() < 0.3}


def developer_spec(rng: random.Random) -> Dict[str, Any]:
    """Developer content: instructions and function tools, either may be absent."""
    return {"kind": "developer", "instructions": maybe(rng, WORDS, 0.7),
            "tools": tools(rng) if rng.random() < 0.6 else None,
            "other_namespace": rng.random() < 0.1}


def message_spec(rng: random.Random, role: str) -> Dict[str, Any]:
    """A message of ``role`` with random header fields."""
    spec: Dict[str, Any] = {"role": role}
    if role == "system":
        spec["content"] = [system_spec(rng)]
    elif role == "developer":
        spec["content"] = [developer_spec(rng)]
    else:
        spec["content"] = [{"kind": "text", "text": text(rng)} for _ in range(rng.choice([1, 1, 1, 2, 0]))]
    if role == "tool":
        spec["name"] = rng.choice(RECIPIENTS) if rng.random() < 0.9 else None
        spec["recipient"] = "assistant" if rng.random() < 0.5 else None
        spec["channel"] = "commentary" if rng.random() < 0.6 else maybe(rng, CHANNELS)
    else:
        spec["name"] = maybe(rng, NAMES, 0.1)
        spec["recipient"] = maybe(rng, RECIPIENTS, 0.2 if role == "assistant" else 0.05)
        spec["channel"] = maybe(rng, CHANNELS, 0.8 if role == "assistant" else 0.1)
    spec["content_type"] = maybe(rng, CONTENT_TYPES, 0.2 if spec.get("recipient") else 0.05)
    return spec


def conversation_spec(rng: random.Random) -> List[Dict[str, Any]]:
    """A conversation: optional system and developer messages, then turns."""
    messages = []
    if rng.random() < 0.8:
        messages.append(message_spec(rng, "system"))
    if rng.random() < 0.5:
        messages.append(message_spec(rng, "developer"))
    for _ in range(rng.randrange(0, 7)):
        role = rng.choice(["user", "assistant", "assistant", "tool", "user", "system", "developer"])
        messages.append(message_spec(rng, role))
    return messages


def _content(h: ModuleType, spec: Dict[str, Any]) -> Any:
    if spec["kind"] == "text":
        return h.TextContent(text=spec["text"])
    if spec["kind"] == "system":
        fields = dict(spec["fields"])
        if fields.get("reasoning_effort") is not None:
            fields["reasoning_effort"] = h.ReasoningEffort(fields["reasoning_effort"])
        if fields.get("channel_config") is not None:
            fields["channel_config"] = h.ChannelConfig(**fields["channel_config"])
        system = h.SystemContent(**fields)
        if spec["browser"]:
            system = system.with_browser_tool()
        if spec["python"]:
            system = system.with_python_tool()
        return system
    developer = h.DeveloperContent.new()
    if spec["instructions"] is not None:
        developer = developer.with_instructions(spec["instructions"])
    if spec["tools"] is not None:
        descriptions = [h.ToolDescription.new(t["name"], t["description"], t.get("parameters"))
                        for t in spec["tools"]]
        developer = developer.with_function_tools(descriptions)
    if spec["other_namespace"]:
        developer = developer.with_tools(h.ToolNamespaceConfig(
            name="extra", description="ns", tools=[h.ToolDescription.new("g", "d")]))
    return developer


def build_message(h: ModuleType, spec: Dict[str, Any]) -> Any:
    """The message ``spec`` describes, built with module ``h``."""
    role = h.Role(spec["role"])
    author = h.Author(role=role) if spec["name"] is None else h.Author.new(role, spec["name"])
    parts = [_content(h, c) for c in spec["content"]]
    if len(parts) == 1 and spec["content"][0]["kind"] == "text" and spec["name"] is None:
        message = h.Message.from_role_and_content(role, spec["content"][0]["text"])
    elif len(parts) == 1:
        message = h.Message.from_author_and_content(author, parts[0])
    else:
        message = h.Message(author=author, content=parts)
    if spec["channel"] is not None:
        message = message.with_channel(spec["channel"])
    if spec["recipient"] is not None:
        message = message.with_recipient(spec["recipient"])
    if spec["content_type"] is not None:
        message = message.with_content_type(spec["content_type"])
    return message


def build(h: ModuleType, spec: List[Dict[str, Any]]) -> Any:
    """The conversation ``spec`` describes, built with module ``h``."""
    return h.Conversation.from_messages([build_message(h, m) for m in spec])
