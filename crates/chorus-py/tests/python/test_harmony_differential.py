"""``chorus.harmony`` against ``openai_harmony`` 0.0.8 on generated conversations.

Every public call is made on both packages with the same arguments and the results compared:
JSON of the models, rendering in every mode and analysis rule, single-message rendering, strict
parsing of rendered and damaged tokens, the streaming parser's whole state after every token,
encoding and decoding, and the class of every error raised. ``CHORUS_PY_CASES`` sets the number
of conversations (default 2000), ``CHORUS_PY_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import Counter
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Tuple

import chorus.harmony as ours

import generate

Outcome = Tuple[str, Any]


def norm(value: Any) -> Any:
    """Plain JSON data (enums as their values, models as their dicts)."""
    if isinstance(value, list) and value and hasattr(value[0], "to_dict"):
        # Messages: their JSON, their pydantic dump, and which fields count as set.
        value = [[v.to_dict(), v.model_dump(mode="json"), sorted(v.model_fields_set),
                  sorted(v.author.model_fields_set),
                  [sorted(c.model_fields_set) for c in v.content]] for v in value]
    return json.loads(json.dumps(value, default=str))


def attempt(call: Callable[[], Any]) -> Outcome:
    """("ok", the normalised result) or ("error", the exception's class name)."""
    try:
        return ("ok", norm(call()))
    except Exception as error:  # the class is what is compared
        return ("error", type(error).__name__)


class Comparison:
    """Counts agreements per kind of call and keeps the first disagreements."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.agree: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.differ: List[str] = []

    def check(self, kind: str, theirs: Outcome, mine: Outcome, context: Any) -> bool:
        if theirs == mine:
            self.agree[kind] += 1
            if theirs[0] == "error":
                self.refused[kind] += 1
            return True
        if len(self.differ) < 10:
            self.differ.append(f"{kind}: reference {theirs!r:.600}\n chorus {mine!r:.600}\n"
                               f" case {json.dumps(context, ensure_ascii=False):.1500}")
        else:
            self.differ.append(kind)
        return False


def renders(h: ModuleType, enc: Any, conversation: Any) -> Dict[str, Outcome]:
    out: Dict[str, Outcome] = {}
    configs: List[Tuple[str, Optional[Any]]] = [
        ("default", None),
        ("drop", h.RenderConversationConfig(auto_drop_analysis=True)),
        ("keep", h.RenderConversationConfig(auto_drop_analysis=False)),
    ]
    for name, config in configs:
        for role in (h.Role.ASSISTANT, h.Role.USER, h.Role.TOOL):
            out[f"completion/{role.value}/{name}"] = attempt(
                lambda: enc.render_conversation_for_completion(conversation, role, config))
        out[f"training/{name}"] = attempt(
            lambda: enc.render_conversation_for_training(conversation, config))
        out[f"plain/{name}"] = attempt(lambda: enc.render_conversation(conversation, config))
    return out


def stream_trace(h: ModuleType, enc: Any, tokens: List[int], role: Any) -> List[Any]:
    """The parser's whole visible state after every token, and how it ended."""
    parser = h.StreamableParser(enc, role, strict=True)
    trace: List[Any] = []
    count = -1
    for token in tokens:
        try:
            parser.process(token)
        except Exception as error:
            trace.append(("error", type(error).__name__))
            break
        role = parser.current_role
        step = [parser.state.value, parser.state_data, None if role is None else role.value,
                parser.current_channel, parser.current_recipient, parser.current_content_type,
                parser.current_content, parser.last_content_delta]
        messages = parser.messages
        if len(messages) != count:
            count = len(messages)
            step.append(norm(messages))
        trace.append(step)
    else:
        trace.append(attempt(lambda: parser.process_eos() and None))
        trace.append(attempt(lambda: parser.messages))
    trace.append(parser.tokens)
    trace.append(parser.state_data)
    return trace


def damaged(rng: random.Random, tokens: List[int]) -> List[int]:
    """Rendered tokens, sometimes cut, with a token removed or a special token inserted."""
    tokens = list(tokens)
    roll = rng.randrange(5)
    at = rng.randrange(len(tokens) + 1)
    if roll == 1:
        del tokens[at:]
    elif roll == 2 and tokens:
        del tokens[min(at, len(tokens) - 1)]
    elif roll == 3:
        tokens.insert(at, rng.choice([200002, 200003, 200005, 200006, 200007, 200008, 200012]))
    return tokens


def compare_case(rng: random.Random, spec: List[Dict[str, Any]], ref: ModuleType,
                 ref_enc: Any, enc: Any, result: Comparison) -> None:
    theirs_conv = attempt(lambda: generate.build(ref, spec))
    mine_conv = attempt(lambda: generate.build(ours, spec))
    if not result.check("build", theirs_conv, mine_conv, spec) or theirs_conv[0] == "error":
        return
    conv_ref = generate.build(ref, spec)
    conv = generate.build(ours, spec)
    result.check("to_json", ("ok", conv_ref.to_json()), ("ok", conv.to_json()), spec)
    result.check("model_dump", attempt(lambda: conv_ref.model_dump(mode="json")),
                 attempt(lambda: conv.model_dump(mode="json")), spec)
    text = conv_ref.to_json()
    result.check("from_json", attempt(lambda: ref.Conversation.from_json(text).to_json()),
                 attempt(lambda: ours.Conversation.from_json(text).to_json()), spec)
    theirs_renders = renders(ref, ref_enc, conv_ref)
    mine_renders = renders(ours, enc, conv)
    for key, theirs in theirs_renders.items():
        result.check(f"render {key.split('/')[0]}", theirs, mine_renders[key], [key, spec])
    for message_ref, message in zip(conv_ref.messages, conv.messages):
        for tools in (None, False, True):
            options_ref = None if tools is None else ref.RenderOptions(conversation_has_function_tools=tools)
            options = None if tools is None else ours.RenderOptions(conversation_has_function_tools=tools)
            result.check("render message", attempt(lambda: ref_enc.render(message_ref, options_ref)),
                         attempt(lambda: enc.render(message, options)), [tools, spec])
    plain = theirs_renders["plain/keep"]
    if plain[0] != "ok":
        return
    tokens = damaged(rng, plain[1])
    role_ref, role = None, None
    prefix = [200006] + ref_enc.encode("assistant")
    if tokens[: len(prefix)] == prefix and rng.random() < 0.7:
        tokens = tokens[len(prefix):]
        role_ref, role = ref.Role.ASSISTANT, ours.Role.ASSISTANT
    case = {"tokens": tokens, "role": None if role is None else "assistant"}
    theirs_parse = attempt(lambda: ref_enc.parse_messages_from_completion_tokens(tokens, role_ref))
    result.check("parse strict", theirs_parse,
                 attempt(lambda: enc.parse_messages_from_completion_tokens(tokens, role)), case)
    lenient = attempt(lambda: enc.parse_messages_from_completion_tokens(tokens, role, strict=False))
    if theirs_parse[0] == "ok":
        result.check("parse lenient = strict on valid input", theirs_parse, lenient, case)
    else:
        result.check("parse lenient never raises", ("ok", "ok"), (lenient[0], "ok"), case)
    result.check("stream", ("ok", norm(stream_trace(ref, ref_enc, tokens, role_ref))),
                 ("ok", norm(stream_trace(ours, enc, tokens, role))), case)
    cut = tokens[: rng.randrange(len(tokens) + 1)]
    for name in ("decode_utf8", "decode"):
        result.check(name, attempt(lambda: getattr(ref_enc, name)(cut)),
                     attempt(lambda: getattr(enc, name)(cut)), cut)
    sample = generate.text(rng) + ref_enc.decode(cut[-20:])
    for kwargs in ({}, {"allowed_special": "all"}, {"disallowed_special": ()},
                   {"allowed_special": {"<|end|>", "<|start|>"}, "disallowed_special": ()},
                   {"allowed_special": {"<|end|>"}}):
        result.check("encode", attempt(lambda: ref_enc.encode(sample, **kwargs)),
                     attempt(lambda: enc.encode(sample, **kwargs)), [sample, str(kwargs)])


def test_chorus_harmony_agrees_with_openai_harmony(reference: ModuleType) -> None:
    seed = int(os.environ.get("CHORUS_PY_SEED") or random.SystemRandom().randrange(2**32))
    cases = int(os.environ.get("CHORUS_PY_CASES", "2000"))
    rng = random.Random(seed)
    ref_enc = reference.load_harmony_encoding(reference.HarmonyEncodingName.HARMONY_GPT_OSS)
    enc = ours.load_harmony_encoding(ours.HarmonyEncodingName.HARMONY_GPT_OSS)
    result = Comparison(seed)
    for _ in range(cases):
        compare_case(rng, generate.conversation_spec(rng), reference, ref_enc, enc, result)
    total = sum(result.agree.values())
    kinds = ", ".join(f"{k} {n} (refused by both {result.refused[k]})"
                      for k, n in sorted(result.agree.items()))
    print(f"\nchorus.harmony vs openai_harmony 0.0.8, seed {seed}, {cases} generated "
          f"conversations: {total} of {total + len(result.differ)} calls agree; {kinds}",
          file=sys.__stderr__)
    assert not result.differ, (f"seed {seed} (CHORUS_PY_SEED replays it): {len(result.differ)} "
                               "calls differ:\n" + "\n".join(result.differ[:10]))


def test_public_names_match(reference: ModuleType) -> None:
    missing = [name for name in reference.__all__ if not hasattr(ours, name)]
    assert not missing
    assert issubclass(ours.HarmonyError, RuntimeError)
