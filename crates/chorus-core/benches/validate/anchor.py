"""Anchor for the validation benchmark: the Python `jsonschema` package (Draft202012Validator)
validating the same corpus against the same schemas. Prints one JSON object with docs/s (median).

usage: python3 anchor.py CORPUS.jsonl SCHEMA_DIR ROUNDS
"""
import json
import statistics
import sys
import time

import jsonschema
from jsonschema import Draft202012Validator


def kind_of(doc):
    if "metadata" in doc and "payload" in doc:
        return "handoff"
    if "protocol" in doc:
        return "harmony-handoff"
    return "message"


def main():
    corpus_path, schema_dir, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lines = open(corpus_path, "rb").read().splitlines()
    validators = {}
    for kind in ("message", "handoff", "harmony-handoff"):
        schema = json.load(open(f"{schema_dir}/{kind}.schema.json"))
        validators[kind] = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    timings = []
    invalid = 0
    for _ in range(rounds):
        start = time.perf_counter()
        invalid = 0
        for line in lines:
            doc = json.loads(line)
            if not validators[kind_of(doc)].is_valid(doc):
                invalid += 1
        timings.append(time.perf_counter() - start)
    median = statistics.median(timings)
    print(json.dumps({"docs": len(lines), "invalid": invalid, "median_s": median,
                      "docs_per_s": len(lines) / median, "jsonschema": jsonschema.__version__ if hasattr(jsonschema, "__version__") else "?"}))


main()
