"""Validates A2A v1.0 messages with the official A2A Python SDK (`a2a-sdk`).

Reads JSON lines {"id", "message"} on stdin and writes one JSON line per input: {"id", "ok",
"error"?}. A message is valid when the SDK's protobuf `a2a.types.Message` parses it from
ProtoJSON with unknown fields refused, the SDK's own `validate_proto_required_fields` (what its
request handlers run on every request) finds no missing required field, its role is set, and
every part holds one of `text`, `raw`, `url` or `data`.
"""

import json
import sys

from google.protobuf.json_format import ParseDict

from a2a.types import a2a_pb2
from a2a.utils.proto_utils import validate_proto_required_fields


def check(message):
    parsed = ParseDict(message, a2a_pb2.Message(), ignore_unknown_fields=False)
    validate_proto_required_fields(parsed)
    if parsed.role == a2a_pb2.ROLE_UNSPECIFIED:
        raise ValueError("role is ROLE_UNSPECIFIED")
    for i, part in enumerate(parsed.parts):
        if part.WhichOneof("content") is None:
            raise ValueError(f"part {i} has none of text, raw, url, data")


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        verdict = {"id": request["id"], "ok": True}
        try:
            check(request["message"])
        except Exception as e:  # every failure is a verdict, not a crash
            details = getattr(e, "data", None)
            verdict = {"id": request["id"], "ok": False, "error": f"{type(e).__name__}: {e} {details or ''}"}
        print(json.dumps(verdict), flush=True)


if __name__ == "__main__":
    main()
