"""Generate trim_messages test vectors from langchain-core's own behaviour.

Run with langchain-core 1.8 installed:
    python generate_langchain_trim.py > langchain_trim.json

The inputs and parameters follow the trim_messages cases of langchain-core's unit tests
(libs/core/tests/unit_tests/messages/test_utils.py), plus cases with tool calls and the
approximate counter. The expected outputs are whatever langchain-core returns.
"""

import json
import sys

import langchain_core
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

# ---- token counters, named so the Rust test can pick the same one ----


def dummy(messages):
    # 3 tokens before and after every message, 4 per string content or per content block.
    total = 0
    for m in messages:
        if isinstance(m.content, str):
            total += 3 + 4 + 3
        if isinstance(m.content, list):
            total += 3 + len(m.content) * 4 + 3
    return total


def chars(messages):
    return sum(len(m.content) for m in messages)


def words(messages):
    total = 0
    for m in messages:
        if isinstance(m.content, str):
            total += len(m.content.split(" "))
        else:
            total += len(" ".join(b["text"] for b in m.content).split(" "))
    return total


def text_len(messages):
    total = 0
    for m in messages:
        if isinstance(m.content, list):
            for b in m.content:
                if isinstance(b, dict) and b.get("type") == "text":
                    total += len(b["text"])
        elif isinstance(m.content, str):
            total += len(m.content)
    return total


COUNTERS = {
    "dummy": dummy,
    "len": len,
    "chars": chars,
    "words": words,
    "text_len": text_len,
    "approximate": count_tokens_approximately,
}


def split_space(text):
    parts = text.split(" ")
    return [p + " " for p in parts[:-1]] + parts[-1:]


SPLITTERS = {"default": None, "chars": list, "space": split_space}

# ---- messages as chorus / OpenAI Chat dicts ----

ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def to_dict(m):
    out = {"role": ROLES[m.type], "content": m.content}
    if m.id is not None:
        out["id"] = m.id
    if m.name is not None:
        out["name"] = m.name
    if isinstance(m, AIMessage) and m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
            }
            for c in m.tool_calls
        ]
    if isinstance(m, ToolMessage):
        out["tool_call_id"] = m.tool_call_id
    return out


def blocks(*texts):
    return [{"type": "text", "text": t} for t in texts]


TEN = "This is a 4 token text."
BASE = [
    SystemMessage(TEN),
    HumanMessage(TEN, id="first"),
    AIMessage(
        blocks("This is the FIRST 4 token block.", "This is the SECOND 4 token block."),
        id="second",
    ),
    HumanMessage(TEN, id="third"),
    AIMessage(TEN, id="fourth"),
]
FUNKY = [HumanMessage("This is a funky text.", id="third")]
EXACT = [SystemMessage("10 tokens exactly."), HumanMessage("Another 10 tokens.")]
START_ON = [
    HumanMessage("First human message"),
    AIMessage("AI response"),
    HumanMessage("Second human message"),
]
MIXED = [AIMessage(blocks("First part of text.", "Second part that should be trimmed."))]
LONG = [HumanMessage("This is a long message that needs trimming")]
SHORTCUT = [
    SystemMessage("System instructions"),
    HumanMessage("First human message", id="first"),
    AIMessage("First AI response", id="ai1"),
    HumanMessage("Second human message", id="second"),
    AIMessage("Second AI response", id="ai2"),
]
TOOLS = [
    SystemMessage("You are a weather assistant.", id="s"),
    HumanMessage("What's the weather in Paris and in Rome?", id="h1"),
    AIMessage(
        "",
        id="a1",
        tool_calls=[
            {"name": "weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"},
            {"name": "weather", "args": {"city": "Rome"}, "id": "call_2", "type": "tool_call"},
        ],
    ),
    ToolMessage('{"temp": 18, "sky": "cloudy"}', tool_call_id="call_1", id="t1"),
    ToolMessage('{"temp": 24, "sky": "clear"}', tool_call_id="call_2", id="t2"),
    AIMessage("Paris is 18 and cloudy; Rome is 24 and clear.", id="a2"),
    HumanMessage("Thanks!\nAnd tomorrow?\nPlease be brief.", id="h2", name="ann"),
]

CASES = [
    # langchain-core's unit-test cases
    ("first_30", BASE, dict(max_tokens=30, strategy="first"), "dummy", "default"),
    ("first_30_allow_partial", BASE, dict(max_tokens=30, strategy="first", allow_partial=True), "dummy", "default"),
    ("first_30_allow_partial_end_on_human", BASE, dict(max_tokens=30, strategy="first", allow_partial=True, end_on="human"), "dummy", "default"),
    ("last_30_include_system", BASE, dict(max_tokens=30, strategy="last", include_system=True), "dummy", "default"),
    ("last_40_include_system_allow_partial", BASE, dict(max_tokens=40, strategy="last", allow_partial=True, include_system=True), "dummy", "default"),
    ("last_30_include_system_allow_partial_end_on_human", BASE, dict(max_tokens=30, strategy="last", allow_partial=True, include_system=True, end_on="human"), "dummy", "default"),
    ("last_30_include_system_allow_partial_start_on_human", BASE, dict(max_tokens=30, strategy="last", allow_partial=True, include_system=True, start_on="human"), "dummy", "default"),
    ("allow_partial_one_message", FUNKY, dict(max_tokens=2, strategy="first", allow_partial=True), "chars", "chars"),
    ("last_allow_partial_one_message", FUNKY, dict(max_tokens=2, strategy="last", allow_partial=True), "chars", "chars"),
    ("allow_partial_text_splitter", BASE, dict(max_tokens=10, strategy="last", allow_partial=True), "words", "space"),
    ("include_system_last_empty", [], dict(max_tokens=10, strategy="last", include_system=True), "dummy", "default"),
    ("default_strategy_is_last", BASE, dict(max_tokens=10), "dummy", "default"),
    ("partial_text_splitting", LONG, dict(max_tokens=10, strategy="first", allow_partial=True), "chars", "chars"),
    ("mixed_content_with_partial", MIXED, dict(max_tokens=20, strategy="first", allow_partial=True), "text_len", "default"),
    ("exact_token_boundary_10", EXACT, dict(max_tokens=10, strategy="first"), "dummy", "default"),
    ("exact_token_boundary_20", EXACT, dict(max_tokens=20, strategy="first"), "dummy", "default"),
    ("start_on_with_allow_partial", START_ON, dict(max_tokens=20, strategy="last", allow_partial=True, start_on="human"), "dummy", "default"),
    ("approximate_last_50", SHORTCUT[:3], dict(max_tokens=50, strategy="last"), "approximate", "default"),
    ("approximate_with_options", SHORTCUT, dict(max_tokens=100, strategy="last", include_system=True, start_on="human"), "approximate", "default"),
    ("message_count_last_4", SHORTCUT, dict(max_tokens=4, strategy="last", include_system=True, start_on="human"), "len", "default"),
    ("start_on_invalid_with_first", BASE, dict(max_tokens=30, strategy="first", start_on="human"), "dummy", "default"),
    ("include_system_invalid_with_first", BASE, dict(max_tokens=30, strategy="first", include_system=True), "dummy", "default"),
]
# Tool calls under the approximate counter at every budget: LangChain keeps or drops messages
# one by one, so some budgets leave tool results without their call.
for budget in range(0, 120, 7):
    CASES.append((f"tools_last_{budget}", TOOLS, dict(max_tokens=budget, strategy="last", include_system=True), "approximate", "default"))
    CASES.append((f"tools_last_partial_{budget}", TOOLS, dict(max_tokens=budget, strategy="last", allow_partial=True), "approximate", "default"))
    CASES.append((f"tools_first_end_on_ai_{budget}", TOOLS, dict(max_tokens=budget, strategy="first", end_on=["ai", "tool"]), "approximate", "default"))
    CASES.append((f"tools_first_partial_{budget}", TOOLS, dict(max_tokens=budget, strategy="first", allow_partial=True), "approximate", "default"))


def run(name, messages, params, counter, splitter):
    case = {
        "name": name,
        "messages": [to_dict(m) for m in messages],
        "params": params,
        "counter": counter,
        "splitter": splitter,
    }
    try:
        kept = trim_messages(
            messages,
            token_counter=COUNTERS[counter],
            text_splitter=SPLITTERS[splitter],
            **params,
        )
        case["expected"] = [to_dict(m) for m in kept]
    except ValueError as e:
        case["error"] = str(e)
    return case


json.dump(
    {
        "generator": "generate_langchain_trim.py",
        "langchain_core": langchain_core.__version__,
        "cases": [run(*c) for c in CASES],
    },
    sys.stdout,
    indent=1,
    ensure_ascii=False,
)
sys.stdout.write("\n")
