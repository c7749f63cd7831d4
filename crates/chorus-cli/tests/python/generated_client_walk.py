"""Walks the hub with a client generated from its own /openapi.json by openapi-python-client.

Usage: python generated_client_walk.py BASE_URL SENDER_TOKEN READER_TOKEN
The generated package must be importable (PYTHONPATH). Publishes through the generated
`publish` (again: a duplicate; other content under the same id: a 409 conflict), reads what
waits in the inbox through the generated `inbox_messages` (ready, then held by the stream, then
gone), takes the delivery from the inbox stream with httpx (generated clients do not stream
SSE), and settles through the generated `in_progress`, `nack` and `ack`, then acks the
redelivery. Prints one JSON line with what happened; exits 1 at the first answer that is not the
documented one.
"""

import json
import sys
import uuid

import httpx

from client import AuthenticatedClient
from client.api.inbox import ack, in_progress, inbox_messages, nack
from client.api.messages import publish
from client.models import ErrorBody, InboxMessages, NackBody, PublishBody, PublishReceipt


def fail(what, response):
    print(f"FAILED: {what}: {response.status_code} {response.content!r}", file=sys.stderr)
    sys.exit(1)


def next_event(lines):
    """The next `message` event's data from an iterator over SSE lines."""
    event, data = None, []
    for line in lines:
        if line == "":
            if event == "message" and data:
                return json.loads("\n".join(data))
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    raise SystemExit("FAILED: the inbox stream ended")


def waiting(reader, message_id):
    """The inbox's depth and the state and attempts of `message_id` in it, as the generated
    client reads them (None when it does not wait there)."""
    r = inbox_messages.sync_detailed("bob", client=reader)
    if r.status_code != 200 or not isinstance(r.parsed, InboxMessages):
        fail("inbox_messages", r)
    for m in r.parsed.messages:
        if m.id == message_id:
            state = getattr(m.state, "value", m.state)
            return r.parsed.depth, (state, m.attempts)
    return r.parsed.depth, None


def main():
    base, sender_token, reader_token = sys.argv[1:4]
    sender = AuthenticatedClient(base_url=base, token=sender_token)
    reader = AuthenticatedClient(base_url=base, token=reader_token)
    message_id = f"py-{uuid.uuid4()}"
    body = PublishBody.from_dict(
        {"role": "user", "id": message_id, "name": "alice", "recipient": "bob",
         "content": "héllo from a generated client ✓"}
    )
    r = publish.sync_detailed(client=sender, body=body)
    if r.status_code != 201 or not isinstance(r.parsed, PublishReceipt):
        fail("publish", r)
    again = publish.sync_detailed(client=sender, body=body)
    if again.status_code != 200 or again.parsed.duplicate is not True:
        fail("publish again", again)
    other = PublishBody.from_dict({**body.to_dict(), "content": "other content, same id"})
    conflict = publish.sync_detailed(client=sender, body=other)
    if (conflict.status_code != 409 or not isinstance(conflict.parsed, ErrorBody)
            or conflict.parsed.error != "conflict"):
        fail("publish other content under the same id", conflict)

    looks = [waiting(reader, message_id)]
    if looks[0] != (1, ("ready", 0)):
        raise SystemExit(f"FAILED: before any delivery the inbox holds {looks[0]}")
    attempts = []
    with httpx.Client(timeout=30) as http:
        headers = {"authorization": f"Bearer {reader_token}"}
        with http.stream("GET", f"{base}/v1/agents/bob/inbox?max_in_flight=1", headers=headers) as s:
            lines = s.iter_lines()
            event = next_event(lines)
            attempts.append(event["attempt"])
            if event["message_id"] != message_id or event["message"]["content"] != body["content"]:
                raise SystemExit(f"FAILED: unexpected event {event}")
            looks.append(waiting(reader, message_id))
            if looks[-1][0] != 1 or looks[-1][1] is None or looks[-1][1][0] not in (
                    "held", "held_or_delayed") or looks[-1][1][1] != 1:
                raise SystemExit(f"FAILED: once delivered the inbox holds {looks[-1]}")
            r = in_progress.sync_detailed("bob", message_id, client=reader)
            if r.status_code != 204:
                fail("in-progress", r)
            r = nack.sync_detailed("bob", message_id, client=reader, body=NackBody(delay_ms=0))
            if r.status_code != 204:
                fail("nack", r)
            event = next_event(lines)
            attempts.append(event["attempt"])
            r = ack.sync_detailed("bob", message_id, client=reader, attempt=event["attempt"] - 1)
            if r.status_code != 409:
                fail("ack of the older attempt", r)
            r = ack.sync_detailed("bob", message_id, client=reader, attempt=event["attempt"])
            if r.status_code != 204:
                fail("ack", r)
    r = ack.sync_detailed("bob", message_id, client=reader)
    if r.status_code != 404:
        fail("ack after ack", r)
    looks.append(waiting(reader, message_id))
    if looks[-1] != (0, None):
        raise SystemExit(f"FAILED: once acked the inbox holds {looks[-1]}")
    print(json.dumps({"published": message_id, "conflict": conflict.status_code, "attempts": attempts,
                      "inbox": looks, "settled": ["in-progress", "nack", "ack"]}))


if __name__ == "__main__":
    main()
