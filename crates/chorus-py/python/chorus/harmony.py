"""Harmony, the chat format of gpt-oss: a drop-in for the ``openai_harmony`` package (0.0.8).

Code written against ``openai_harmony`` runs unchanged after
``import chorus.harmony as openai_harmony``: the same names, pydantic models with the same JSON
shapes, the same tokens and the same errors (:class:`HarmonyError`). The work is done by
chorus's Rust implementation, token-exact with the reference. Beyond the reference:

* the vocabulary is embedded: :func:`load_harmony_encoding` never downloads anything;
* ``strict=False`` parses leniently: real model output never raises, and
  :meth:`HarmonyEncoding.parse_messages_with_repairs` / :attr:`StreamableParser.repairs` say
  what was repaired;
* :func:`from_chorus` and :func:`to_chorus` map chorus conversations (the superset of OpenAI
  Chat that ``chorus.formats`` converts) to Harmony and back.
"""

from __future__ import annotations

import functools
import json
import re
from enum import Enum
from typing import (
    AbstractSet,
    Any,
    Collection,
    Dict,
    Iterator,
    List,
    Literal,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from pydantic import BaseModel, Field

from . import _native
from ._native import HarmonyError

__all__ = [
    "Author",
    "ChannelConfig",
    "Content",
    "Conversation",
    "DeveloperContent",
    "HarmonyEncoding",
    "HarmonyEncodingName",
    "HarmonyError",
    "Message",
    "ReasoningEffort",
    "RenderConversationConfig",
    "RenderOptions",
    "Repair",
    "Role",
    "StreamState",
    "StreamableParser",
    "SystemContent",
    "TextContent",
    "ToolDescription",
    "ToolNamespaceConfig",
    "from_chorus",
    "load_harmony_encoding",
    "to_chorus",
]


class Role(str, Enum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    DEVELOPER = "developer"
    TOOL = "tool"

    @classmethod
    def _missing_(cls, value: object) -> "Role":
        raise ValueError(f"Unknown role: {value!r}")


class Author(BaseModel):
    """A message's author: a role and, for tools, a name (``functions.lookup``)."""

    role: Role
    name: Optional[str] = None

    @classmethod
    def new(cls, role: Role, name: str) -> "Author":
        """An author with a name."""
        return cls(role=role, name=name)


class Content(BaseModel):
    """One part of a message's content."""

    def to_dict(self) -> Dict[str, Any]:
        """The part's JSON object (with its ``type``)."""
        raise NotImplementedError


class TextContent(Content):
    """A text part."""

    text: str

    def to_dict(self) -> Dict[str, Any]:
        """``{"type": "text", "text": ...}``."""
        return {"type": "text", "text": self.text}


class ToolDescription(BaseModel):
    """A tool: its name, what it does, and the JSON Schema of its parameters."""

    name: str
    description: str
    parameters: Optional[dict] = None  # type: ignore[type-arg]

    @classmethod
    def new(
        cls, name: str, description: str, parameters: Optional[Dict[str, Any]] = None
    ) -> "ToolDescription":
        """A tool description."""
        return cls(name=name, description=description, parameters=parameters)


class ReasoningEffort(str, Enum):
    """How much the model should reason."""

    LOW = "Low"
    MEDIUM = "Medium"
    HIGH = "High"


class ChannelConfig(BaseModel):
    """The channels the model may use and whether one is required."""

    valid_channels: List[str]
    channel_required: bool

    @classmethod
    def require_channels(cls, channels: List[str]) -> "ChannelConfig":
        """These channels, one of them required on every assistant message."""
        return cls(valid_channels=channels, channel_required=True)


def _builtin_namespace(name: str) -> "ToolNamespaceConfig":
    return ToolNamespaceConfig(**json.loads(_native.tool_namespace(name)))


class ToolNamespaceConfig(BaseModel):
    """A namespace of tools (``functions``, ``browser``, ``python``)."""

    name: str
    description: Optional[str] = None
    tools: List[ToolDescription]

    @staticmethod
    def browser() -> "ToolNamespaceConfig":
        """The built-in ``browser`` namespace gpt-oss was trained with."""
        return _builtin_namespace("browser")

    @staticmethod
    def python() -> "ToolNamespaceConfig":
        """The built-in ``python`` namespace gpt-oss was trained with."""
        return _builtin_namespace("python")


def _default_channels() -> ChannelConfig:
    return ChannelConfig.require_channels(["analysis", "commentary", "final"])


class SystemContent(Content):
    """The system message: identity, reasoning effort, dates, channels, built-in tools."""

    model_identity: Optional[str] = "You are ChatGPT, a large language model trained by OpenAI."
    reasoning_effort: Optional[ReasoningEffort] = ReasoningEffort.MEDIUM
    conversation_start_date: Optional[str] = None
    knowledge_cutoff: Optional[str] = "2024-06"
    channel_config: Optional[ChannelConfig] = Field(default_factory=_default_channels)
    tools: Optional[Dict[str, ToolNamespaceConfig]] = None

    @classmethod
    def new(cls) -> "SystemContent":
        """The defaults (ChatGPT identity, medium effort, cutoff 2024-06, three channels)."""
        return cls()

    def with_model_identity(self, model_identity: str) -> "SystemContent":
        """Sets the identity line; returns self."""
        self.model_identity = model_identity
        return self

    def with_reasoning_effort(self, reasoning_effort: ReasoningEffort) -> "SystemContent":
        """Sets the reasoning effort; returns self."""
        self.reasoning_effort = reasoning_effort
        return self

    def with_conversation_start_date(self, conversation_start_date: str) -> "SystemContent":
        """Sets ``Current date:``; returns self."""
        self.conversation_start_date = conversation_start_date
        return self

    def with_knowledge_cutoff(self, knowledge_cutoff: str) -> "SystemContent":
        """Sets ``Knowledge cutoff:``; returns self."""
        self.knowledge_cutoff = knowledge_cutoff
        return self

    def with_channel_config(self, channel_config: ChannelConfig) -> "SystemContent":
        """Sets the channels; returns self."""
        self.channel_config = channel_config
        return self

    def with_required_channels(self, channels: List[str]) -> "SystemContent":
        """Requires one of these channels; returns self."""
        self.channel_config = ChannelConfig.require_channels(channels)
        return self

    def with_tools(self, ns_config: ToolNamespaceConfig) -> "SystemContent":
        """Adds (or replaces) a tool namespace; returns self."""
        if self.tools is None:
            self.tools = {}
        self.tools[ns_config.name] = ns_config
        return self

    def with_browser_tool(self) -> "SystemContent":
        """Adds the built-in ``browser`` namespace; returns self."""
        return self.with_tools(ToolNamespaceConfig.browser())

    def with_python_tool(self) -> "SystemContent":
        """Adds the built-in ``python`` namespace; returns self."""
        return self.with_tools(ToolNamespaceConfig.python())

    def to_dict(self) -> Dict[str, Any]:
        """The fields that are set, with ``"type": "system_content"``."""
        out = self.model_dump(exclude_none=True)
        out["type"] = "system_content"
        return out

    @classmethod
    def from_dict(cls, raw: Dict[str, Any]) -> "SystemContent":
        """Reads :meth:`to_dict`'s output (absent fields take the defaults)."""
        return cls(**raw)


class DeveloperContent(Content):
    """The developer message: instructions and function tools."""

    instructions: Optional[str] = None
    tools: Optional[Dict[str, ToolNamespaceConfig]] = None

    @classmethod
    def new(cls) -> "DeveloperContent":
        """An empty developer message."""
        return cls()

    def with_instructions(self, instructions: str) -> "DeveloperContent":
        """Sets the instructions; returns self."""
        self.instructions = instructions
        return self

    def with_tools(self, ns_config: ToolNamespaceConfig) -> "DeveloperContent":
        """Adds (or replaces) a tool namespace; returns self."""
        if self.tools is None:
            self.tools = {}
        self.tools[ns_config.name] = ns_config
        return self

    def with_function_tools(self, tools: Sequence[ToolDescription]) -> "DeveloperContent":
        """Sets the ``functions`` namespace to these tools; returns self."""
        namespace = ToolNamespaceConfig(name="functions", description=None, tools=list(tools))
        return self.with_tools(namespace)

    def to_dict(self) -> Dict[str, Any]:
        """The fields that are set, with ``"type": "developer_content"``."""
        out = self.model_dump(exclude_none=True)
        out["type"] = "developer_content"
        return out

    @classmethod
    def from_dict(cls, raw: Dict[str, Any]) -> "DeveloperContent":
        """Reads :meth:`to_dict`'s output."""
        return cls(**raw)


_CONTENT_TYPES: Dict[str, Any] = {
    "text": TextContent,
    "system_content": SystemContent,
    "developer_content": DeveloperContent,
}


class Message(BaseModel):
    """One Harmony message: author, content parts, channel, recipient, content type."""

    author: Author
    content: List[Content] = Field(default_factory=list)
    channel: Optional[str] = None
    recipient: Optional[str] = None
    content_type: Optional[str] = None

    @classmethod
    def from_author_and_content(cls, author: Author, content: Union[str, Content]) -> "Message":
        """A message with one part (a string is a text part)."""
        part = TextContent(text=content) if isinstance(content, str) else content
        return cls(author=author, content=[part])

    @classmethod
    def from_role_and_content(cls, role: Role, content: Union[str, Content]) -> "Message":
        """A message from ``role`` with one part."""
        return cls.from_author_and_content(Author(role=role), content)

    @classmethod
    def from_role_and_contents(cls, role: Role, contents: Sequence[Content]) -> "Message":
        """A message from ``role`` with these parts."""
        return cls(author=Author(role=role), content=list(contents))

    def adding_content(self, content: Union[str, Content]) -> "Message":
        """Appends a part; returns self."""
        self.content.append(TextContent(text=content) if isinstance(content, str) else content)
        return self

    def with_channel(self, channel: str) -> "Message":
        """Sets the channel; returns self."""
        self.channel = channel
        return self

    def with_recipient(self, recipient: str) -> "Message":
        """Sets the recipient; returns self."""
        self.recipient = recipient
        return self

    def with_content_type(self, content_type: str) -> "Message":
        """Sets the content type; returns self."""
        self.content_type = content_type
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The message's JSON object: role, name, content parts, then the set header fields."""
        out: Dict[str, Any] = {
            "role": self.author.role,
            "name": self.author.name,
            "content": [part.to_dict() for part in self.content],
        }
        for key in ("channel", "recipient", "content_type"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Message":
        """Reads a message's JSON object; ``content`` may be a string or a list of parts."""
        author = Author(role=Role(data["role"]), name=data.get("name"))
        raw = data["content"]
        if isinstance(raw, str):
            raw = [{"type": "text", "text": raw}]
        parts: List[Content] = []
        for part in raw:
            kind = _CONTENT_TYPES.get(part.get("type"))
            if kind is None:
                raise ValueError(f"Unknown content variant: {part}")
            parts.append(kind(**part))
        message = cls(author=author, content=parts)
        message.channel = data.get("channel")
        message.recipient = data.get("recipient")
        message.content_type = data.get("content_type")
        return message


class Conversation(BaseModel):
    """The messages of a conversation, in order."""

    messages: List[Message] = Field(default_factory=list)

    @classmethod
    def from_messages(cls, messages: Sequence[Message]) -> "Conversation":
        """A conversation of these messages."""
        return cls(messages=list(messages))

    def __iter__(self) -> Iterator[Message]:  # type: ignore[override]
        return iter(self.messages)

    def to_dict(self) -> Dict[str, Any]:
        """``{"messages": [...]}``."""
        return {"messages": [message.to_dict() for message in self.messages]}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, payload: str) -> "Conversation":
        """Reads :meth:`to_json`'s output."""
        data = json.loads(payload)
        return cls(messages=[Message.from_dict(m) for m in data["messages"]])


class RenderConversationConfig(BaseModel):
    """How to render a conversation."""

    auto_drop_analysis: bool = True


class RenderOptions(BaseModel):
    """How to render a single message."""

    conversation_has_function_tools: bool = False


class Repair(NamedTuple):
    """What lenient parsing repaired: at which token, what kind of repair, what it holds."""

    position: int
    kind: str
    detail: Optional[str]


def _drop(config: Optional[RenderConversationConfig]) -> bool:
    return True if config is None else config.auto_drop_analysis


def _role_name(role: Union[Role, str, None]) -> Optional[str]:
    if role is None:
        return None
    return role.value if isinstance(role, Role) else Role(role).value


def _messages(parsed: List[Tuple[str, Optional[str], str, Optional[str], Optional[str], Optional[str]]]) -> List[Message]:
    """Messages from the parser's tuples, built as :meth:`Message.from_dict` builds them (the
    same fields set), without validating again what the parser produced."""
    construct_author = Author.model_construct
    construct_text = TextContent.model_construct
    construct_message = Message.model_construct
    return [
        construct_message(
            author=construct_author(role=Role(role), name=name),
            content=[construct_text(text=text)],
            channel=channel, recipient=recipient, content_type=content_type,
        )
        for role, name, text, channel, recipient, content_type in parsed
    ]


def raise_disallowed_special_token(token: str) -> None:
    """Raises the error :meth:`HarmonyEncoding.encode` raises for special-token text."""
    raise HarmonyError(
        f"text {token!r} spells a special token, which encode() does not allow here; "
        f"pass allowed_special={{{token!r}}} to encode it as that token, or "
        "disallowed_special=() to encode it as plain text"
    )


@functools.lru_cache(maxsize=64)
def _special_pattern(tokens: AbstractSet[str]) -> "re.Pattern[str]":
    return re.compile("|".join(re.escape(token) for token in sorted(tokens)))


class HarmonyEncoding:
    """The o200k_harmony encoding: renders conversations, parses completions, tokenizes."""

    def __init__(self, name: str) -> None:
        self._name = _native.load_encoding(name)

    @property
    def name(self) -> str:
        """The encoding's name (``HarmonyGptOss``)."""
        return self._name

    @functools.cached_property
    def special_tokens_set(self) -> "set[str]":
        """The names of every special token."""
        return set(_native.special_tokens())

    def render_conversation_for_completion(
        self,
        conversation: Conversation,
        next_turn_role: Role,
        config: Optional[RenderConversationConfig] = None,
    ) -> List[int]:
        """A prompt: the conversation, then ``<|start|>`` and ``next_turn_role``."""
        return _native.render_conversation(
            conversation.to_json(), "completion", _role_name(next_turn_role), _drop(config)
        )

    def render_conversation(
        self,
        conversation: Conversation,
        config: Optional[RenderConversationConfig] = None,
    ) -> List[int]:
        """The conversation alone."""
        return _native.render_conversation(conversation.to_json(), "plain", None, _drop(config))

    def render_conversation_for_training(
        self,
        conversation: Conversation,
        config: Optional[RenderConversationConfig] = None,
    ) -> List[int]:
        """Training data: a final assistant message ends with ``<|return|>``."""
        return _native.render_conversation(
            conversation.to_json(), "training", None, _drop(config)
        )

    def render(self, message: Message, render_options: Optional[RenderOptions] = None) -> List[int]:
        """One message on its own."""
        tools = render_options is not None and render_options.conversation_has_function_tools
        return _native.render_message(message.to_json(), tools)

    def parse_messages_from_completion_tokens(
        self,
        tokens: Sequence[int],
        role: Optional[Role] = None,
        *,
        strict: bool = True,
    ) -> List[Message]:
        """The messages in completion tokens (``role``: the role the prompt opened).

        ``strict=False`` parses leniently and never raises on model output.
        """
        raw, _ = _native.parse(list(tokens), _role_name(role), strict)
        return _messages(raw)

    def parse_messages_with_repairs(
        self, tokens: Sequence[int], role: Optional[Role] = None
    ) -> Tuple[List[Message], List[Repair]]:
        """Lenient parsing: the messages and what was repaired to read them."""
        raw, repairs = _native.parse(list(tokens), _role_name(role), False)
        return _messages(raw), [Repair(*r) for r in repairs]

    def decode_utf8(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens``; raises when it is not UTF-8."""
        return _native.decode_utf8(list(tokens))

    def encode(
        self,
        text: str,
        *,
        allowed_special: Union[Literal["all"], AbstractSet[str]] = frozenset(),
        disallowed_special: Union[Literal["all"], Collection[str]] = "all",
    ) -> List[int]:
        """Tokenizes text. Text that spells a special token raises unless allowed
        (``allowed_special``, encoded as that token) or not disallowed (encoded as text)."""
        allowed = self.special_tokens_set if allowed_special == "all" else set(allowed_special)
        if disallowed_special == "all":
            disallowed: AbstractSet[str] = self.special_tokens_set - allowed
        else:
            disallowed = frozenset(disallowed_special)
        if disallowed:
            found = _special_pattern(frozenset(disallowed)).search(text)
            if found:
                raise_disallowed_special_token(found.group())
        try:
            return _native.encode(text, list(allowed))
        except UnicodeEncodeError:
            # Lone surrogates: encode what UTF-8 can hold, as tiktoken does.
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return _native.encode(text, list(allowed))

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of ``tokens``, bytes that are not UTF-8 handled by ``errors``."""
        return _native.decode_bytes(list(tokens)).decode("utf-8", errors=errors)

    def is_special_token(self, token: int) -> bool:
        """Whether ``token`` is a special token."""
        return _native.is_special_token(token)

    def stop_tokens(self) -> List[int]:
        """The tokens that end a message (``<|return|>``, ``<|call|>``, ``<|end|>``)."""
        return _native.stop_tokens()

    def stop_tokens_for_assistant_actions(self) -> List[int]:
        """The tokens that end an assistant's turn (``<|return|>``, ``<|call|>``)."""
        return _native.stop_tokens_for_assistant_actions()


class StreamState(Enum):
    """Where a :class:`StreamableParser` is."""

    EXPECT_START = "ExpectStart"
    HEADER = "Header"
    CONTENT = "Content"


class StreamableParser:
    """Parses completion tokens one at a time.

    ``strict=False`` streams with chorus's lenient parser: it never raises and reports its
    repairs (:attr:`repairs`), but unlike :meth:`HarmonyEncoding.parse_messages_from_completion_tokens`
    (which reads strictly first) it may read an unusual valid header its own way: ``developer
    code`` is a content type to it, a recipient to the reference.
    """

    def __init__(
        self, encoding: HarmonyEncoding, role: Optional[Role], *, strict: bool = True
    ) -> None:
        self._encoding = encoding
        self._inner = _native.StreamParser(_role_name(role), strict)

    def process(self, token: int) -> "StreamableParser":
        """Feeds one token; returns self."""
        self._inner.process(token)
        return self

    def process_eos(self) -> "StreamableParser":
        """Ends the input (completes the message being read); returns self."""
        self._inner.process_eos()
        return self

    @property
    def current_content(self) -> str:
        """The content of the message being read so far."""
        return self._inner.current_content

    @property
    def current_role(self) -> Optional[Role]:
        """The role of the message being read."""
        raw = self._inner.current_role
        return None if raw is None else Role(raw)

    @property
    def current_content_type(self) -> Optional[str]:
        """The content type of the message being read."""
        return self._inner.current_content_type

    @property
    def last_content_delta(self) -> Optional[str]:
        """The text the last token added."""
        return self._inner.last_content_delta

    @property
    def messages(self) -> List[Message]:
        """The messages completed so far."""
        return _messages(self._inner.messages)

    @property
    def tokens(self) -> List[int]:
        """The tokens fed so far."""
        return self._inner.tokens

    @property
    def state_data(self) -> Dict[str, Any]:
        """The parser's state as a dict (``{"state": "Content", ...}``)."""
        data: Dict[str, Any] = json.loads(self._inner.state_data)
        return data

    @property
    def state(self) -> StreamState:
        """Where the parser is."""
        return StreamState(self._inner.state)

    @property
    def current_recipient(self) -> Optional[str]:
        """The recipient of the message being read."""
        return self._inner.current_recipient

    @property
    def current_channel(self) -> Optional[str]:
        """The channel of the message being read."""
        return self._inner.current_channel

    @property
    def repairs(self) -> List[Repair]:
        """What lenient parsing (``strict=False``) repaired so far."""
        return [Repair(*r) for r in self._inner.repairs]


class HarmonyEncodingName(str, Enum):
    """The names of the Harmony encodings."""

    HARMONY_GPT_OSS = "HarmonyGptOss"

    def __str__(self) -> str:
        return str(self.value)


def load_harmony_encoding(name: Union[str, HarmonyEncodingName]) -> HarmonyEncoding:
    """The encoding named ``name``; loads offline (the vocabulary is embedded)."""
    return HarmonyEncoding(str(name))


def from_chorus(conversation: Dict[str, Any]) -> Tuple[Conversation, List[Tuple[str, str]]]:
    """A chorus conversation (a dict) as a Harmony :class:`Conversation` under the default
    system message, and what Harmony cannot carry: ``(JSON pointer, what)`` pairs."""
    harmony_json, losses = _native.from_chorus(json.dumps(conversation))
    return Conversation.from_json(harmony_json), list(losses)


def to_chorus(conversation: Conversation) -> Dict[str, Any]:
    """A Harmony :class:`Conversation` as a chorus conversation (a dict)."""
    mapped: Dict[str, Any] = json.loads(_native.to_chorus(conversation.to_json()))
    return mapped
