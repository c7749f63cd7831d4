"""``chorus.formats``, ``chorus.context`` and ``chorus.validate``, against outside oracles where
there are some: token counts against ``tiktoken`` (o200k_base), validation against
``jsonschema`` with chorus's own schemas."""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from types import ModuleType
from typing import Any, Dict, Iterator, List

import pytest

from chorus import _native, context, formats, validate

from conftest import oracle
from generate import WORDS


@pytest.fixture(scope="module")
def tiktoken() -> Iterator[ModuleType]:
    """tiktoken, its o200k_base file written by chorus into its cache (no download)."""
    with tempfile.TemporaryDirectory(prefix="chorus-tiktoken-") as folder:
        url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        _native.write_tiktoken_file(os.path.join(folder, hashlib.sha1(url.encode()).hexdigest()))
        os.environ["TIKTOKEN_CACHE_DIR"] = folder
        yield oracle("tiktoken")


def texts(seed: int, n: int) -> List[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(WORDS) + rng.choice(["", " ", "\n", "  "])
                    for _ in range(rng.randrange(1, 12))) for _ in range(n)]


def test_count_text_equals_tiktoken_o200k(tiktoken: ModuleType) -> None:
    encoding = tiktoken.get_encoding("o200k_base")
    for text in texts(1, 500):
        assert context.count_text(text, model="gpt-4o") == \
            len(encoding.encode(text, disallowed_special=())), repr(text)


def test_count_with_a_tokenizer_json_equals_python_tokenizers() -> None:
    path = os.environ.get("CHORUS_TEST_QWEN3_TOKENIZER")
    if not path:
        pytest.skip("not run: CHORUS_TEST_QWEN3_TOKENIZER (Qwen3's tokenizer.json) is not set")
    tokenizer = oracle("tokenizers").Tokenizer.from_file(path)
    for text in texts(2, 200) + ["天" * 500, "a " * 300]:
        expected = len(tokenizer.encode(text, add_special_tokens=False).ids)
        assert context.count_text(text, model="qwen3-8b", tokenizer=path) == expected, repr(text)
    counted = context.count({"messages": [{"role": "user", "content": "你好"}]},
                            model="qwen3-8b", tokenizer=path)
    assert counted["exact"] is True and counted["total"] > 0
    with pytest.raises(context.ContextError):
        context.count_text("x", model="qwen3-8b", tokenizer="/nonexistent/tokenizer.json")


def test_count_has_a_breakdown_that_adds_up() -> None:
    conversation = {"messages": [{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "Привет 🎉"}]}
    counted = context.count(conversation, model="gpt-4o")
    assert counted["total"] == sum(counted["breakdown"].values())
    assert len(counted["messages"]) == 2 and counted["exact"] is True
    with pytest.raises(context.ContextError):
        context.count({"messages": [{"role": "nobody"}]}, model="gpt-4o")


def test_trim_keeps_the_budget_and_reports_what_it_dropped() -> None:
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * 40}
                 for i in range(12)]
    kept, report = context.trim({"messages": messages}, max_tokens=300, model="gpt-4o")
    assert report["tokens_after"] <= 300 < report["tokens_before"]
    assert kept["messages"][0] == messages[0]
    assert len(kept["messages"]) == len(messages) - len(report["dropped"])
    assert context.count(kept, model="gpt-4o")["total"] == report["tokens_after"]


def test_convert_round_trips_and_reports_losses() -> None:
    chat = {"messages": [{"role": "system", "content": "Sé breve."},
                         {"role": "user", "content": "Hola 👋"},
                         {"role": "assistant", "content": "¡Hola!"}]}
    chorus_doc, losses = formats.convert(chat, from_="openai-chat", to="chorus")
    assert losses == []
    back, losses = formats.convert(chorus_doc, from_="chorus", to="openai-chat")
    assert back["messages"] == chat["messages"] and losses == []
    named = {"messages": [{"role": "user", "name": "ann", "content": "hi"}]}
    out, losses = formats.convert(named, from_="openai-chat", to="anthropic")
    assert [loss.path for loss in losses] == ["/messages/0/name"]
    with pytest.raises(formats.LossError) as raised:
        formats.convert(named, from_="openai-chat", to="anthropic", strict=True)
    assert raised.value.losses == losses  # type: ignore[attr-defined]
    with pytest.raises(formats.ConversionError):
        formats.convert(named, from_="openai-chat", to="no-such-format")
    text, _ = formats.convert(chat, from_="openai-chat", to="qwen3", add_generation_prompt=True)
    assert isinstance(text, str) and text.endswith("<|im_start|>assistant\n")
    assert set(formats.format_ids()) >= {"chorus", "openai-chat", "anthropic", "gemini", "harmony"}


def mutations(rng: random.Random, document: Dict[str, Any]) -> Dict[str, Any]:
    """A message with one field changed, removed or added."""
    out = dict(document)
    key = rng.choice(["role", "content", "name", "tool_call_id", "extra", "channel"])
    out[key] = rng.choice([3, None, "", "user", "assistant", [], {"x": 1}, [{"type": "text", "text": "t"}],
                           [{"type": "text"}], "Привет"])
    if rng.random() < 0.2:
        out.pop("role", None)
    return out


def test_validate_agrees_with_jsonschema_on_messages() -> None:
    jsonschema = oracle("jsonschema")
    schema = validate.schema("message")
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(7)
    base = {"role": "user", "content": "hi"}
    outcomes: Dict[str, int] = {"both accept": 0, "both reject": 0, "chorus alone rejects": 0}
    for _ in range(400):
        document = mutations(rng, base)
        schema_ok = not list(validator.iter_errors(document))
        errors = [p for p in validate.validate(document, "message") if p.severity == "error"]
        # chorus checks more than a schema can say, never less: what the schema rejects,
        # chorus rejects.
        assert errors or schema_ok, document
        key = "both accept" if schema_ok and not errors else (
            "both reject" if not schema_ok else "chorus alone rejects")
        outcomes[key] += 1
        for problem in errors:
            assert problem.pointer == "" or problem.pointer.startswith("/"), problem
    assert outcomes["both accept"] > 20 and outcomes["both reject"] > 20, outcomes


def test_check_raises_with_pointers() -> None:
    with pytest.raises(validate.ValidationError) as raised:
        validate.check({"role": "user", "content": 3}, "message")
    assert raised.value.problems[0].pointer == "/content"
    validate.check({"role": "user", "content": "fine"})
    assert "message" in validate.kinds()
    with pytest.raises(ValueError):
        validate.validate({}, "no-such-kind")


def _deep_merge(base: Any, later: Any) -> Any:
    """Seed 004's merge, written from its text: objects key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(later, dict):
        out = dict(base)
        for key, value in later.items():
            out[key] = _deep_merge(out[key], value) if key in out else value
        return out
    return later


def _random_value(rng: random.Random, depth: int) -> Any:
    pick = rng.randrange(6 if depth < 3 else 4)
    if pick == 0:
        return rng.choice(WORDS)
    if pick == 1:
        return rng.choice([0, -7, 2.5, 2**40, True, None])
    if pick == 2:
        return [rng.choice(WORDS) for _ in range(rng.randrange(3))]
    if pick == 3:
        return rng.randrange(100)
    return {rng.choice(["a", "b", "ключ", "名前"]): _random_value(rng, depth + 1)
            for _ in range(rng.randrange(1, 4))}


def test_data_parts_merge_by_identity_and_render_for_the_model() -> None:
    rng = random.Random(20261125)
    for case in range(200):
        parts: List[Dict[str, Any]] = []
        expected: Dict[Any, Dict[str, Any]] = {}
        order: List[Any] = []
        for _ in range(rng.randrange(1, 7)):
            part: Dict[str, Any] = {"type": "data", "kind": rng.choice(["state", "user"]),
                                    "data": _random_value(rng, 0)}
            if rng.random() < 0.4:
                part["_instance"] = rng.choice(["a", "b"])
            if rng.random() < 0.3:
                part["description"] = rng.choice(WORDS)
            parts.append(part)
            key = (part["kind"], part.get("_instance"))
            if key not in expected:
                order.append(key)
                expected[key] = {"kind": part["kind"], "instance": part.get("_instance"),
                                 "data": part["data"], "description": part.get("description"),
                                 "schema": None}
            else:
                seen = expected[key]
                seen["data"] = _deep_merge(seen["data"], part["data"])
                if "description" in part:
                    seen["description"] = part["description"]
        conversation = {"messages": [{"role": "user", "content": [p]} for p in parts]}
        merged = context.merge_data(conversation)
        assert merged == [expected[k] for k in order], f"case {case}: {parts}"
        text = context.render_data(conversation)
        # One block per identity, in order, each with the merged data as indented JSON.
        headings = [line for line in text.splitlines() if line.startswith("## Data: ")]
        assert [h.split("¶")[1].split(" ")[0] for h in headings] == [k[0] for k in order]
        for m in merged:
            assert json.dumps(m["data"], indent=2, ensure_ascii=False) in text
