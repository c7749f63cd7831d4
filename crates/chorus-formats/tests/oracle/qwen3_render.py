"""Renders chat-template cases with Python jinja2 set up as Hugging Face transformers sets it up.

Usage: python qwen3_render.py TEMPLATE_FILE < cases.json > rendered.json

stdin: a JSON array of cases {"messages": [...], "tools"?: [...], "add_generation_prompt": bool,
"enable_thinking"?: bool}. stdout: a JSON array, one {"text": str} or {"error": str} per case.

The environment follows transformers' `_compile_jinja_template` (transformers 4.4x-4.5x):
an ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension,
a `tojson` filter that is `json.dumps` (raw non-ASCII, keys in order, Python's separators), and
the `raise_exception` and `strftime_now` globals. `apply_chat_template` renders with `messages`,
`tools` (None when absent), `documents` (None), `add_generation_prompt` and the extra keyword
arguments it was given (here `enable_thinking`, only when the case sets it).
"""

import json
import sys
from datetime import datetime

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
    )


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(template, case):
    kwargs = {}
    if "enable_thinking" in case:
        kwargs["enable_thinking"] = case["enable_thinking"]
    return template.render(
        messages=case["messages"],
        tools=case.get("tools"),
        documents=None,
        add_generation_prompt=case.get("add_generation_prompt", False),
        **kwargs,
    )


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        source = f.read()
    template = environment().from_string(source)
    cases = json.load(sys.stdin)
    out = []
    for case in cases:
        try:
            out.append({"text": render(template, case)})
        except Exception as e:  # the template refuses this input: reported, not compared
            out.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
