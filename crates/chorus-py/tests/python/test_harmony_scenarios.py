"""The reference's own scenarios (its ``test-data`` files in ``shared/conformance/harmony``),
run on ``chorus.harmony`` and, with the same code, on ``openai_harmony``.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any, Dict, List

import pytest

import chorus.harmony as ours

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "shared",
                       "conformance", "harmony")


def vector(name: str) -> str:
    with open(os.path.join(VECTORS, name), encoding="utf-8") as file:
        return file.read().replace("\r\n", "\n").rstrip()


@pytest.fixture(params=["chorus", "reference"])
def h(request: Any, reference: ModuleType) -> ModuleType:
    """Each scenario runs on both packages."""
    return ours if request.param == "chorus" else reference


def encoding(h: ModuleType) -> Any:
    return h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)


def assert_renders_to(h: ModuleType, name: str, tokens: List[int]) -> None:
    enc = encoding(h)
    text = vector(name)
    assert enc.decode_utf8(tokens) == text
    assert tokens == enc.encode(text, allowed_special="all")


def completion(h: ModuleType, messages: List[Any], drop: bool = False) -> List[int]:
    config = h.RenderConversationConfig(auto_drop_analysis=drop)
    tokens: List[int] = encoding(h).render_conversation_for_completion(
        h.Conversation.from_messages(messages), h.Role.ASSISTANT, config)
    return tokens


def test_simple_convo(h: ModuleType) -> None:
    messages = [h.Message.from_role_and_content(h.Role.SYSTEM, h.SystemContent.new()),
                h.Message.from_role_and_content(h.Role.USER, "What is 2 + 2?")]
    assert_renders_to(h, "test_simple_convo.txt", completion(h, messages))


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
@pytest.mark.parametrize("instruction", [True, False])
def test_effort_and_instructions(h: ModuleType, effort: str, instruction: bool) -> None:
    system = h.SystemContent.new().with_reasoning_effort(h.ReasoningEffort(effort.capitalize()))
    messages = [h.Message.from_role_and_content(h.Role.SYSTEM, system)]
    if instruction:
        developer = h.DeveloperContent.new().with_instructions(
            "Answer the user's questions like a robot.")
        messages.append(h.Message.from_role_and_content(h.Role.DEVELOPER, developer))
    messages.append(h.Message.from_role_and_content(
        h.Role.USER, "What is the capital of the largest country in the world?"))
    suffix = "" if instruction else "_no_instruction"
    assert_renders_to(h, f"test_simple_convo_{effort}_effort{suffix}.txt", completion(h, messages))


@pytest.mark.parametrize("name,effort,dates,question", [
    ("test_reasoning_system_message.txt", "Medium", None, "What is 2 + 2?"),
    ("test_reasoning_system_message_no_instruction.txt", "High", None,
     "What is the best place to eat candy in the world?"),
    ("test_reasoning_system_message_with_dates.txt", "Medium", ("2021-01-01", "2021-01"),
     "What is 42 * pi?"),
])
def test_reasoning_system_message(h: ModuleType, name: str, effort: str, dates: Any,
                                  question: str) -> None:
    system = (h.SystemContent.new().with_reasoning_effort(h.ReasoningEffort(effort))
              .with_required_channels(["analysis", "final"]))
    if dates:
        system = system.with_conversation_start_date(dates[0]).with_knowledge_cutoff(dates[1])
    messages = [h.Message.from_role_and_content(h.Role.SYSTEM, system),
                h.Message.from_role_and_content(h.Role.USER, question)]
    assert_renders_to(h, name, completion(h, messages))


def test_render_functions_with_parameters(h: ModuleType) -> None:
    celsius = {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
    tools = [
        h.ToolDescription.new("get_location", "Gets the location of the user."),
        h.ToolDescription.new(
            "get_current_weather", "Gets the current weather in the provided location.",
            {"type": "object", "properties": {
                "location": {"type": "string",
                             "description": "The city and state, e.g. San Francisco, CA"},
                "format": celsius}, "required": ["location"]}),
        h.ToolDescription.new(
            "get_multiple_weathers", "Gets the current weather in the provided list of locations.",
            {"type": "object", "properties": {
                "locations": {"type": "array", "items": {"type": "string"},
                              "description": "List of city and state, e.g. [\"San Francisco, CA\", \"New York, NY\"]"},
                "format": celsius}, "required": ["locations"]}),
        h.ToolDescription.new("kitchensink", "A function with various complex schemas.", {
            "description": "params object", "type": "object", "properties": {
                "string": {"type": "string", "title": "STRING", "description": "A string",
                           "examples": ["hello", "world"]},
                "string_nullable": {"type": "string", "nullable": True,
                                    "description": "A nullable string", "default": "the default"},
                "string_enum": {"type": "string", "enum": ["a", "b", "c"]},
                "oneof_string_or_number": {"oneOf": [
                    {"type": "string", "default": "default_string_in_oneof"},
                    {"type": "number", "description": "numbers can happen too"}],
                    "description": "a oneof", "default": 20}}}),
    ]
    system = (h.SystemContent.new().with_reasoning_effort(h.ReasoningEffort.HIGH)
              .with_conversation_start_date("2025-06-28"))
    developer = (h.DeveloperContent.new().with_instructions("Always respond in riddles")
                 .with_function_tools(tools))
    messages = [h.Message.from_role_and_content(h.Role.SYSTEM, system),
                h.Message.from_role_and_content(h.Role.DEVELOPER, developer),
                h.Message.from_role_and_content(h.Role.USER, "What is the weather like in SF?")]
    assert_renders_to(h, "test_render_functions_with_parameters.txt", completion(h, messages))


def test_builtin_tools(h: ModuleType) -> None:
    def dated() -> Any:
        return h.SystemContent.new().with_conversation_start_date("2025-06-28")

    enc = encoding(h)
    both = [h.Message.from_role_and_content(h.Role.SYSTEM, dated().with_browser_tool().with_python_tool())]
    assert_renders_to(h, "test_browser_and_python_tool.txt", completion(h, both))
    for system, name in [(dated().with_browser_tool(), "test_browser_tool_only.txt"),
                         (dated(), "test_no_tools.txt")]:
        conversation = h.Conversation.from_messages([h.Message.from_role_and_content(h.Role.SYSTEM, system)])
        assert_renders_to(h, name, enc.render_conversation_for_completion(conversation, h.Role.ASSISTANT))
    weather = h.ToolDescription.new(
        "lookup_weather",
        "Use this tool to lookup the weather in a given location. Call it with the parameter "
        "'location', can be any textual description of a location.",
        {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]})
    conversation = h.Conversation.from_messages([
        h.Message.from_role_and_content(h.Role.SYSTEM, dated().with_browser_tool()),
        h.Message.from_role_and_content(h.Role.DEVELOPER, h.DeveloperContent.new().with_function_tools([weather])),
    ])
    assert_renders_to(h, "test_browser_and_function_tool.txt",
                      enc.render_conversation_for_completion(conversation, h.Role.ASSISTANT))


def two_turns(h: ModuleType, analysis: str) -> Any:
    return h.Conversation.from_messages([
        h.Message.from_role_and_content(h.Role.USER, "What is 2 + 2?"),
        h.Message.from_role_and_content(h.Role.ASSISTANT, analysis).with_channel("analysis"),
        h.Message.from_role_and_content(h.Role.ASSISTANT, "2 + 2 equals 4.").with_channel("final"),
        h.Message.from_role_and_content(h.Role.USER, "What about 9 / 2?"),
    ])


def test_analysis_dropping(h: ModuleType) -> None:
    enc = encoding(h)
    dropped = two_turns(h, "User asks: “What is 2 + 2?” Simple arithmetic. Provide answer.")
    assert_renders_to(h, "test_dropping_cot_by_default.txt",
                      enc.render_conversation_for_completion(dropped, h.Role.ASSISTANT))
    kept = two_turns(h, "User asks a simple question: \"What is 2 + 2?\" The answer: 4.")
    assert_renders_to(h, "test_preserve_cot.txt", completion(h, kept.messages))
    ongoing = h.Conversation.from_messages([
        h.Message.from_role_and_content(h.Role.USER, "What is the weather in SF?"),
        h.Message.from_role_and_content(
            h.Role.ASSISTANT,
            "User asks: “What is the weather in SF?” We need to use lookup_weather tool.",
        ).with_channel("analysis"),
        h.Message.from_role_and_content(h.Role.ASSISTANT, "{\"location\": \"San Francisco\"}")
        .with_channel("commentary").with_recipient("functions.lookup_weather")
        .with_content_type("<|constrain|>json"),
        h.Message.from_author_and_content(
            h.Author.new(h.Role.TOOL, "functions.lookup_weather"),
            "{\"temperature\": 20, \"description\": \"sunny\"}"),
    ])
    assert_renders_to(h, "test_does_not_drop_if_ongoing_analysis.txt",
                      enc.render_conversation_for_completion(ongoing, h.Role.ASSISTANT))
    turns = [("What is 2 + 2?", "thinking 2+2", "4"), ("What is 3 + 5?", "thinking 3+5", "8")]
    messages: List[Any] = []
    for question, thought, answer in turns:
        messages += [h.Message.from_role_and_content(h.Role.USER, question),
                     h.Message.from_role_and_content(h.Role.ASSISTANT, thought).with_channel("analysis"),
                     h.Message.from_role_and_content(h.Role.ASSISTANT, answer).with_channel("final")]
    assert_renders_to(h, "test_keep_analysis_between_finals.txt",
                      enc.render_conversation(h.Conversation.from_messages(messages)))


def ids(name: str) -> List[int]:
    return [int(token) for token in vector(name).split()]


def dicts(messages: List[Any]) -> List[Dict[str, Any]]:
    return [dict(m.to_dict(), role=m.author.role.value) for m in messages]


def test_parse_token_files(h: ModuleType) -> None:
    enc = encoding(h)
    parsed = enc.parse_messages_from_completion_tokens(ids("test_simple_reasoning_response.txt"), h.Role.ASSISTANT)
    expected = [
        h.Message.from_role_and_content(
            h.Role.ASSISTANT, "User asks: \"What is 2 + 2?\" Simple arithmetic. Provide answer."
        ).with_channel("analysis"),
        h.Message.from_role_and_content(h.Role.ASSISTANT, "2 + 2 = 4.").with_channel("final"),
    ]
    assert dicts(parsed) == dicts(expected)
    parsed = enc.parse_messages_from_completion_tokens(ids("test_simple_tool_call.txt"), h.Role.ASSISTANT)
    assert [(m.channel, m.recipient, m.content_type) for m in parsed] == [
        ("analysis", None, None), ("analysis", "lookup_weather", "code")]
    assert parsed[1].content[0].text == "{\"location\": \"Tokyo\"}"


def test_streamable_parser(h: ModuleType) -> None:
    enc = encoding(h)
    parser = h.StreamableParser(enc, h.Role.ASSISTANT)
    for token in enc.encode(vector("test_streamable_parser.txt"), allowed_special="all"):
        parser.process(token)
    messages = parser.messages
    assert len(messages) == 3
    assert (messages[1].recipient, messages[1].content_type) == ("browser.search", "code")
    assert messages[2].author.name == "browser.search"


def test_tool_response_parsing(h: ModuleType) -> None:
    enc = encoding(h)
    text = vector("test_tool_response_parsing.txt")
    expected = (h.Message.from_author_and_content(h.Author.new(h.Role.TOOL, "browser.search"),
                                                  "{\"result\": \"https://openai.com/\"}")
                .with_channel("commentary").with_recipient("assistant"))
    assert enc.decode_utf8(enc.render(expected)[:-1]) == text
    parsed = enc.parse_messages_from_completion_tokens(enc.encode(text, allowed_special="all"), None)
    assert dicts(parsed) == dicts([expected])


def test_every_vector_tokenizes_alike(reference: ModuleType) -> None:
    theirs, mine = encoding(reference), encoding(ours)
    for name in sorted(os.listdir(VECTORS)):
        if name.startswith("test_"):
            text = vector(name)
            assert mine.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all"), name


def test_lenient_parsing_reports_repairs() -> None:
    enc = encoding(ours)
    tokens = enc.encode("<|channel|>final<|message|>hi<|end|>stray text", allowed_special="all")
    with pytest.raises(ours.HarmonyError):
        enc.parse_messages_from_completion_tokens(tokens)
    messages, repairs = enc.parse_messages_with_repairs(tokens)
    assert [m.content[0].text for m in messages] == ["hi", "stray text"]
    assert {r.kind for r in repairs} >= {"missing_start", "stray_text"}
    assert [m.to_dict() for m in enc.parse_messages_from_completion_tokens(tokens, strict=False)] == \
        [m.to_dict() for m in messages]


def test_loads_offline_without_a_vocabulary_file(monkeypatch: Any) -> None:
    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", "/nonexistent")
    enc = ours.load_harmony_encoding("HarmonyGptOss")
    assert enc.decode(enc.encode("héllo wörld")) == "héllo wörld"
    with pytest.raises(ValueError):
        ours.load_harmony_encoding("NoSuchEncoding")




def test_chorus_conversations_map_to_harmony_and_back() -> None:
    from chorus import context

    chat = {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Hi 👋, who are you?"},
                         {"role": "assistant", "content": "A helper."},
                         {"role": "user", "content": "Thanks"}]}
    conversation, losses = ours.from_chorus(chat)
    assert losses == []
    tokens = encoding(ours).render_conversation_for_completion(conversation, ours.Role.ASSISTANT)
    # chorus counts gpt-oss conversations as exactly this rendering.
    assert context.count(chat, model="gpt-oss-120b")["total"] == len(tokens)
    back = ours.to_chorus(conversation)
    def text(content: Any) -> str:
        if isinstance(content, str):
            return content
        return "".join(part["text"] for part in content if part.get("type") == "text")

    texts = [text(m["content"]) for m in back["messages"] if m["role"] in ("user", "assistant")]
    assert texts == ["Hi 👋, who are you?", "A helper.", "Thanks"]
