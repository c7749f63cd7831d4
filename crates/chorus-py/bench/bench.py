"""Python-visible time per call, chorus vs the reference packages, side by side in one run.

    python bench.py [--quick]

Needs the chorus wheel (built with ``maturin build --release``) and openai-harmony, tiktoken
and jsonschema (see .ci/python-oracles.txt) in the same python. Prints one line per operation:
chorus's time, the other's, and how many times faster chorus is. Not a test: the figures
depend on the machine (see docs/performance.md for recorded ones).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

from chorus import _native

# Both oracles read the vocabulary chorus embeds, from files it writes (no download).
VOCABULARY = tempfile.mkdtemp(prefix="chorus-bench-")
atexit.register(shutil.rmtree, VOCABULARY, True)
_native.write_tiktoken_file(os.path.join(VOCABULARY, "o200k_base.tiktoken"))
URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_native.write_tiktoken_file(os.path.join(VOCABULARY, hashlib.sha1(URL.encode()).hexdigest()))
os.environ["TIKTOKEN_ENCODINGS_BASE"] = VOCABULARY
os.environ["TIKTOKEN_CACHE_DIR"] = VOCABULARY

import jsonschema  # noqa: E402
import openai_harmony  # noqa: E402
import tiktoken  # noqa: E402

import chorus.harmony  # noqa: E402
from chorus import context, validate  # noqa: E402

QUICK = "--quick" in sys.argv


def per_call(call: Callable[[], Any], seconds: float = 0.5 if QUICK else 2.0) -> float:
    """Seconds per call: the best of 5 rounds, each sized to about ``seconds`` / 5."""
    call()
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds / 10:
        call()
        n += 1
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(max(n, 1)):
            call()
        best = min(best, (time.perf_counter() - start) / max(n, 1))
    return best


PARAGRAPH = ("The deployment of the billing service failed at 14:02 UTC because the database "
             "migration timed out; the previous release is still serving traffic. Réessayer "
             "après la fenêtre de maintenance — 重试 — and tell the on-call engineer. ")


def agent_conversation(h: Any) -> Any:
    """A realistic agent conversation: system with a built-in tool, developer with function
    tools, 8 turns of analysis, tool calls and results, and answers (about 4,000 tokens)."""
    weather = {"type": "object", "properties": {
        "location": {"type": "string", "description": "City and country"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}},
        "required": ["location"]}
    tools = [h.ToolDescription.new(f"tool_{i}", f"Does thing {i}. " + PARAGRAPH[:80], weather)
             for i in range(6)]
    messages = [
        h.Message.from_role_and_content(
            h.Role.SYSTEM, h.SystemContent.new().with_conversation_start_date("2025-06-28").with_browser_tool()),
        h.Message.from_role_and_content(
            h.Role.DEVELOPER, h.DeveloperContent.new().with_instructions("Be careful. " * 20).with_function_tools(tools)),
    ]
    for turn in range(8):
        messages += [
            h.Message.from_role_and_content(h.Role.USER, f"Turn {turn}: " + PARAGRAPH * 2),
            h.Message.from_role_and_content(h.Role.ASSISTANT, "Thinking. " + PARAGRAPH).with_channel("analysis"),
            h.Message.from_role_and_content(h.Role.ASSISTANT, '{"location": "Paris, France"}')
            .with_channel("commentary").with_recipient(f"functions.tool_{turn % 6}")
            .with_content_type("<|constrain|>json"),
            h.Message.from_author_and_content(h.Author.new(h.Role.TOOL, f"functions.tool_{turn % 6}"),
                                              json.dumps({"result": PARAGRAPH}))
            .with_recipient("assistant").with_channel("commentary"),
            h.Message.from_role_and_content(h.Role.ASSISTANT, "Answer: " + PARAGRAPH).with_channel("final"),
        ]
    return h.Conversation.from_messages(messages)


def load_time(module: str) -> float:
    """Seconds for load_harmony_encoding in a fresh process (best of 3)."""
    code = ("import os, time, {m} as h\n"
            "t = time.perf_counter(); h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)\n"
            "e = time.perf_counter() - t\n"
            "print(e)").format(m=module)
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True, env=os.environ).stdout) for _ in range(3)]
    return min(runs)


def main() -> None:
    rows: List[Tuple[str, float, float, str]] = []
    ours, theirs = chorus.harmony, openai_harmony
    enc_ours = ours.load_harmony_encoding(ours.HarmonyEncodingName.HARMONY_GPT_OSS)
    enc_theirs = theirs.load_harmony_encoding(theirs.HarmonyEncodingName.HARMONY_GPT_OSS)
    conv_ours, conv_theirs = agent_conversation(ours), agent_conversation(theirs)
    prompt = enc_ours.render_conversation_for_completion(conv_ours, ours.Role.ASSISTANT)
    assert prompt == enc_theirs.render_conversation_for_completion(conv_theirs, theirs.Role.ASSISTANT)
    rows.append(("harmony render_conversation_for_completion",
                 per_call(lambda: enc_ours.render_conversation_for_completion(conv_ours, ours.Role.ASSISTANT)),
                 per_call(lambda: enc_theirs.render_conversation_for_completion(conv_theirs, theirs.Role.ASSISTANT)),
                 f"{len(prompt)} tokens, {len(conv_ours.messages)} messages"))
    plain = enc_ours.render_conversation(conv_ours)
    rows.append(("harmony parse_messages_from_completion_tokens",
                 per_call(lambda: enc_ours.parse_messages_from_completion_tokens(plain)),
                 per_call(lambda: enc_theirs.parse_messages_from_completion_tokens(plain)),
                 f"{len(plain)} tokens"))
    reply = enc_ours.encode("<|channel|>analysis<|message|>" + PARAGRAPH * 4 + "<|end|><|start|>assistant"
                            "<|channel|>final<|message|>" + PARAGRAPH * 4 + "<|return|>", allowed_special="all")

    def stream(h: Any, enc: Any) -> Callable[[], None]:
        def run() -> None:
            parser = h.StreamableParser(enc, h.Role.ASSISTANT)
            for token in reply:
                parser.process(token)
                parser.last_content_delta
        return run

    rows.append(("harmony StreamableParser.process (per token)",
                 per_call(stream(ours, enc_ours)) / len(reply),
                 per_call(stream(theirs, enc_theirs)) / len(reply),
                 f"{len(reply)} tokens, reading last_content_delta after each"))
    rows.append(("harmony load_harmony_encoding (fresh process)",
                 load_time("chorus.harmony"), load_time("openai_harmony"),
                 "chorus: embedded vocabulary; reference: the .tiktoken file"))
    text = (PARAGRAPH * 400)
    o200k = tiktoken.get_encoding("o200k_base")
    assert context.count_text(text, model="gpt-4o") == len(o200k.encode(text, disallowed_special=()))
    rows.append(("count tokens (o200k) vs tiktoken",
                 per_call(lambda: context.count_text(text, model="gpt-4o")),
                 per_call(lambda: len(o200k.encode(text, disallowed_special=()))),
                 f"{len(text)} characters"))
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "seeds",
                           "003-escalation.json"), encoding="utf-8") as file:
        document = json.load(file)
    schema = validate.schema("handoff")
    validator = jsonschema.Draft202012Validator(schema)
    assert validate.validate(document, "handoff") == [] and validator.is_valid(document)
    rows.append(("validate a handoff vs jsonschema",
                 per_call(lambda: validate.validate(document, "handoff")),
                 per_call(lambda: list(validator.iter_errors(document))),
                 "seed-003 escalation example; jsonschema's validator built once"))
    width = max(len(r[0]) for r in rows)
    print(f"{'operation':<{width}}  {'chorus':>12}  {'other':>12}  {'speed-up':>8}  notes")
    for name, mine, other, notes in rows:
        print(f"{name:<{width}}  {mine * 1e6:>10.1f}us  {other * 1e6:>10.1f}us  {other / mine:>7.1f}x  {notes}")


if __name__ == "__main__":
    main()
