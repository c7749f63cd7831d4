"""Answers chorus's differential test with the openai-harmony Python package (the reference).

Reads one JSON request per line on standard input and writes one JSON answer per line:
  {"op": "render", "conversation": "<JSON text>"}
      -> {"<mode>/<drop>": [token, ...] or {"error": "..."}} for the modes completion,
         training and plain, with auto_drop_analysis true and false
  {"op": "parse", "tokens": [...], "role": null or "assistant"}
      -> {"messages": [...]} or {"error": "..."}
  {"op": "stream", "tokens": [...], "role": null or "assistant"}
      -> {"steps": [{"role", "channel", "recipient", "content_type", "delta", "content",
          "messages": count}, ...], "error": null or "...", "messages": [...]}
         (one step per accepted token; the messages completed when it stopped)
The vocabulary comes from $TIKTOKEN_ENCODINGS_BASE, which the test writes.
"""

import json
import sys

from openai_harmony import (
    Conversation,
    HarmonyEncodingName,
    RenderConversationConfig,
    Role,
    StreamableParser,
    load_harmony_encoding,
)

ENCODING = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)


def message_json(message):
    out = message.to_dict()
    if out.get("name") is None:
        out.pop("name", None)
    return out


def attempt(call):
    try:
        return call()
    except Exception as error:  # the reference's refusal, whatever its class
        return {"error": f"{type(error).__name__}: {error}"}


def render(request):
    try:
        conversation = Conversation.from_json(request["conversation"])
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"}
    out = {}
    for drop in (True, False):
        config = RenderConversationConfig(auto_drop_analysis=drop)
        key = "drop" if drop else "keep"
        out[f"completion/{key}"] = attempt(
            lambda: ENCODING.render_conversation_for_completion(
                conversation, Role.ASSISTANT, config
            )
        )
        out[f"training/{key}"] = attempt(
            lambda: ENCODING.render_conversation_for_training(conversation, config)
        )
        out[f"plain/{key}"] = attempt(
            lambda: ENCODING.render_conversation(conversation, config)
        )
    return out


def role_of(request):
    return None if request.get("role") is None else Role(request["role"])


def parse(request):
    def run():
        messages = ENCODING.parse_messages_from_completion_tokens(
            request["tokens"], role_of(request), strict=True
        )
        return {"messages": [message_json(m) for m in messages]}

    return attempt(run)


def stream(request):
    parser = StreamableParser(ENCODING, role_of(request), strict=True)
    steps = []
    for token in request["tokens"]:
        try:
            parser.process(token)
        except Exception as error:
            return {
                "steps": steps,
                "error": f"{type(error).__name__}: {error}",
                "messages": [message_json(m) for m in parser.messages],
            }
        role = parser.current_role
        steps.append(
            {
                "role": None if role is None else role.value,
                "channel": parser.current_channel,
                "recipient": parser.current_recipient,
                "content_type": parser.current_content_type,
                "delta": parser.last_content_delta,
                "content": parser.current_content,
                "messages": len(parser.messages),
            }
        )
    return {"steps": steps, "error": None, "messages": [message_json(m) for m in parser.messages]}


OPS = {"render": render, "parse": parse, "stream": stream}

for line in sys.stdin:
    request = json.loads(line)
    answer = OPS[request["op"]](request)
    sys.stdout.write(json.dumps(answer) + "\n")
sys.stdout.flush()
