#!/usr/bin/env python3
"""Two agents talk through a running `chorus serve` (plain HTTP with httpx).

customer_service_agent_001 escalates seed 003's network problem to technical_support_agent_pool;
technical_support_agent_001, who reads that pool, receives it from its inbox stream (Server-Sent
Events), acknowledges it and answers with a STATUS_UPDATE, which customer service receives and
acknowledges in turn. Start the hub first:

    chorus serve --config examples/clients/chorus.toml
    python3 examples/clients/python/exchange.py      # needs `pip install httpx`

CHORUS_URL (default http://127.0.0.1:7700), CS_TOKEN and TS_TOKEN override the quick-start
values. Exit code 0 when both deliveries arrived, 1 otherwise.
"""

import copy
import datetime
import json
import os
import pathlib
import sys
import uuid

import httpx

BASE = os.environ.get("CHORUS_URL", "http://127.0.0.1:7700").rstrip("/")
CS_TOKEN = os.environ.get("CS_TOKEN", "customer-service-quickstart-token")
TS_TOKEN = os.environ.get("TS_TOKEN", "technical-support-quickstart-token")
SEED = pathlib.Path(__file__).resolve().parents[2] / "seeds" / "003-escalation.json"


class Refused(Exception):
    """The hub answered with an error status."""


def utc(offset_minutes=0):
    """An RFC 3339 time in UTC with milliseconds, as seed 003 writes them."""
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=offset_minutes)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def publish(client, token, document):
    """POST /v1/messages as the agent owning `token`; the hub's answer."""
    answer = client.post("/v1/messages", json=document, headers=auth(token))
    if answer.status_code not in (200, 201):
        raise Refused(f"publish answered {answer.status_code}: {answer.text}")
    return answer.json()


def receive(client, token, inbox, message_id):
    """Reads the inbox stream until the message `message_id` arrives, acknowledging each
    delivery once it is handled (here: printed); the delivery event of `message_id`."""
    with client.stream("GET", f"/v1/agents/{inbox}/inbox", headers=auth(token)) as stream:
        if stream.status_code != 200:
            raise Refused(f"inbox {inbox} answered {stream.status_code}: {stream.read()!r}")
        event, data = None, []
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                if event == "message":
                    delivery = json.loads("\n".join(data))
                    ack(client, token, inbox, delivery)
                    if delivery["message_id"] == message_id:
                        return delivery
                    print(f"{inbox}: acknowledged an earlier message {delivery['message_id']}")
                event, data = None, []
    raise Refused(f"the inbox stream of {inbox} ended before {message_id} arrived")


def ack(client, token, inbox, delivery):
    """Settles one delivery (with its attempt, so an old delivery never settles a newer one)."""
    path = f"/v1/agents/{inbox}/inbox/{delivery['message_id']}/ack"
    answer = client.post(path, params={"attempt": delivery["attempt"]}, headers=auth(token))
    if answer.status_code != 204:
        raise Refused(f"ack answered {answer.status_code}: {answer.text}")


def auth(token):
    return {"Authorization": f"Bearer {token}"}


def escalation(task_id):
    """Seed 003's escalation with a fresh id, the current time and an expiry two hours ahead."""
    document = json.loads(SEED.read_text(encoding="utf-8"))
    metadata = document["metadata"]
    metadata["message_id"] = str(uuid.uuid4())
    metadata["timestamp"] = utc()
    metadata["expiration_time"] = utc(120)
    metadata["task_id"] = task_id
    metadata["correlation_id"] = task_id
    return document


def status_update(received):
    """technical_support_agent_001's answer to the escalation it received."""
    metadata = received["metadata"]
    context = copy.deepcopy(received["context"])
    context["workflow_state"] = "DIAGNOSIS_IN_PROGRESS"
    context["previous_actions"].append(
        {"action_type": "LOG_REVIEW", "details": "Read log_file_id_123.", "timestamp": utc()}
    )
    return {
        "metadata": {
            "message_id": str(uuid.uuid4()),
            "timestamp": utc(),
            "protocol_version": "1.0.0",
            "sender_id": "technical_support_agent_001",
            "recipient_id": metadata["sender_id"],
            "correlation_id": metadata["correlation_id"],
            "task_id": metadata["task_id"],
            "priority": "HIGH",
        },
        "context": context,
        "payload": {
            "handoff_type": "STATUS_UPDATE",
            "data": {
                "status": "IN_PROGRESS",
                "progress_percent": 40,
                "summary": "Logs show the modem dropping its DHCP lease; remote session booked.",
                "in_response_to": metadata["message_id"],
            },
        },
        "instructions": {},
    }


def main():
    task_id = f"task-{uuid.uuid4().hex[:12]}"
    with httpx.Client(base_url=BASE, timeout=httpx.Timeout(10.0)) as client:
        sent = escalation(task_id)
        answer = publish(client, CS_TOKEN, sent)
        print(f"customer service escalated {sent['metadata']['message_id']} to {answer['queues']}")

        inbox = sent["metadata"]["recipient_id"]
        got = receive(client, TS_TOKEN, inbox, sent["metadata"]["message_id"])
        data = got["message"]["payload"]["data"]
        print(f"technical support received {data['issue_category']} ({data['severity']}) "
              f"for {data['customer_info']['name']}, attempt {got['attempt']}")

        update = status_update(got["message"])
        publish(client, TS_TOKEN, update)
        print(f"technical support sent STATUS_UPDATE {update['metadata']['message_id']}")

        back = receive(client, CS_TOKEN, "customer_service_agent_001",
                       update["metadata"]["message_id"])
        status = back["message"]["payload"]["data"]
        print(f"customer service received STATUS_UPDATE {status['status']}: {status['summary']}")
    print(f"the task in the web UI: {BASE}/#/task/{task_id}")


if __name__ == "__main__":
    try:
        main()
    except (Refused, httpx.HTTPError, OSError) as error:
        print(f"exchange.py: {error}", file=sys.stderr)
        sys.exit(1)
