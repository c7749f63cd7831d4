"""The official openai SDK against `chorus gateway`: Chat Completions whole and streamed, a tool
loop, and errors. Every response and chunk is validated against the SDK's own types (pydantic
validation of the JSON as the gateway sent it, not the SDK's lenient construction). Prints one
JSON object with what it saw; the Rust test asserts on it."""

import json
import sys

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

EVENT = TypeAdapter(ResponseStreamEvent)

base_url = sys.argv[1]
client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
MODEL = "gpt-oss-20b"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}]
seen = {}


def whole(**kwargs):
    raw = client.chat.completions.with_raw_response.create(model=MODEL, **kwargs)
    body = json.loads(raw.http_response.text)
    ChatCompletion.model_validate(body)
    return raw.parse(), body


def streamed(**kwargs):
    chunks = []
    with client.chat.completions.with_streaming_response.create(model=MODEL, stream=True, **kwargs) as response:
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            ChatCompletionChunk.model_validate(chunk)
            chunks.append(chunk)
    # And through the SDK's own stream reader.
    sdk_chunks = list(client.chat.completions.create(model=MODEL, stream=True, **kwargs))
    assert len(sdk_chunks) == len(chunks), (len(sdk_chunks), len(chunks))
    return chunks


def assemble(chunks):
    content, reasoning, calls, finish, usage = "", "", {}, None, None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            reasoning += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or []:
                entry = calls.setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
                entry["id"] = call.get("id") or entry["id"]
                function = call.get("function") or {}
                entry["name"] += function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {"content": content, "reasoning": reasoning, "calls": list(calls.values()), "finish": finish, "usage": usage}


# A greeting, whole and streamed.
hello = [{"role": "user", "content": "Hello!"}]
completion, body = whole(messages=hello)
message = completion.choices[0].message
seen["hello"] = {
    "content": message.content,
    "reasoning": (message.model_extra or {}).get("reasoning_content"),
    "finish": completion.choices[0].finish_reason,
    "reasoning_tokens": completion.usage.completion_tokens_details.reasoning_tokens,
}
seen["hello_stream"] = assemble(streamed(messages=hello, stream_options={"include_usage": True}))

# A tool loop of two requests: the call, then the answer from its result.
messages = [{"role": "user", "content": "What is the weather in Paris?"}]
completion, _ = whole(messages=messages, tools=TOOLS)
call = completion.choices[0].message.tool_calls[0]
seen["call"] = {"id": call.id, "name": call.function.name, "arguments": json.loads(call.function.arguments),
                "finish": completion.choices[0].finish_reason}
seen["call_stream"] = assemble(streamed(messages=messages, tools=TOOLS))
messages.append(completion.choices[0].message.model_dump(exclude_none=True))
messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps({"sky": "sunny", "celsius": 21})})
completion, _ = whole(messages=messages, tools=TOOLS)
seen["answer"] = completion.choices[0].message.content

# Several choices (`n`), whole and streamed: each its own generation, chunks interleaved.
completion, _ = whole(messages=hello, n=2, seed=5)
seen["choices"] = [[c.index, c.message.content, c.finish_reason] for c in completion.choices]
per_choice = {}
for chunk in streamed(messages=hello, n=2):
    for choice in chunk["choices"]:
        entry = per_choice.setdefault(str(choice["index"]), {"content": "", "finish": None})
        entry["content"] += choice["delta"].get("content") or ""
        entry["finish"] = choice.get("finish_reason") or entry["finish"]
seen["choices_stream"] = per_choice

# Errors arrive as the SDK's exception types, with OpenAI's error body.
try:
    client.chat.completions.create(model=MODEL, messages=hello, n=9)
except openai.BadRequestError as e:
    seen["bad_request"] = {"status": e.status_code, "param": e.body.get("param"), "code": e.code}
try:
    client.chat.completions.create(model="gpt-4o", messages=hello)
except openai.NotFoundError as e:
    seen["not_found"] = {"status": e.status_code, "code": e.code}
seen["models"] = [m.id for m in client.models.list()]

# The Responses API: a response, a second one continuing it, and a tool loop.
RESPONSE_TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather of a city",
                   "parameters": TOOLS[0]["function"]["parameters"], "strict": False}]


def response(**kwargs):
    raw = client.responses.with_raw_response.create(model=MODEL, **kwargs)
    body = json.loads(raw.http_response.text)
    Response.model_validate(body)
    return raw.parse()


def response_stream(**kwargs):
    events = []
    with client.responses.with_streaming_response.create(model=MODEL, stream=True, **kwargs) as streamed:
        for line in streamed.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[len("data: "):])
                EVENT.validate_python(event)
                events.append(event)
    sdk_events = list(client.responses.create(model=MODEL, stream=True, **kwargs))
    assert [e.type for e in sdk_events] == [e["type"] for e in events]
    return events


first = response(input="Hello!", instructions="Be brief.")
second = response(input="And again?", previous_response_id=first.id)
seen["responses"] = {
    "first_text": first.output_text,
    "first_types": [item.type for item in first.output],
    "second_text": second.output_text,
    "second_previous": second.previous_response_id == first.id,
    "retrieved": client.responses.retrieve(first.id).id == first.id,
}
client.responses.delete(first.id)
try:
    client.responses.retrieve(first.id)
except openai.NotFoundError:
    seen["responses"]["deleted"] = True
events = response_stream(input="Hello!")
seen["responses"]["stream_types"] = [e["type"] for e in events]
seen["responses"]["stream_text"] = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")

called = response(input="What is the weather in Paris?", tools=RESPONSE_TOOLS)
call = next(item for item in called.output if item.type == "function_call")
answered = response(previous_response_id=called.id, tools=RESPONSE_TOOLS,
                    input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21"}])
seen["responses"]["call"] = {"name": call.name, "arguments": json.loads(call.arguments)}
seen["responses"]["answer"] = answered.output_text
print(json.dumps(seen))
