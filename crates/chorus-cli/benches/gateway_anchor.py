"""The anchor of benches/gateway.rs: openai_harmony's render of a conversation for completion
and its parse of the reply tokens, what a Python server spends on Harmony per request.
argv: the conversation (openai_harmony JSON), the reply token ids (JSON), the iterations.
Prints the CPU seconds of each iteration (render + parse), one JSON list."""

import json
import sys
import time

from openai_harmony import Conversation, HarmonyEncodingName, Role, load_harmony_encoding

encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
conversation = Conversation.from_json(open(sys.argv[1]).read())
reply = json.load(open(sys.argv[2]))
iterations = int(sys.argv[3])
times = []
for _ in range(iterations):
    start = time.process_time()
    tokens = encoding.render_conversation_for_completion(conversation, Role.ASSISTANT)
    messages = encoding.parse_messages_from_completion_tokens(reply, Role.ASSISTANT)
    times.append(time.process_time() - start)
    assert tokens and messages
print(json.dumps(times))
