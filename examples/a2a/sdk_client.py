"""Drives a chorus agent with the official A2A Python SDK (`a2a-sdk`, v1.0 protocol).

    python examples/a2a/sdk_client.py http://127.0.0.1:7700/a2a/desk front-token

Resolves the agent's card, streams a message until its task completes, reads the task back,
then sends a second message without waiting (the agent does not answer it), subscribes to
that task and cancels it (all over JSON-RPC); then streams a third message to completion over
the HTTP+JSON binding; last, resolves the hub's card at the well-known path of the server and
sends a fourth message through the hub's endpoint, naming the agent in `metadata.recipient`,
waiting (blocking) for the answer. Prints one JSON object with what it saw, and exits 1 when a step
does not end as A2A says it must.

Every answer of the server is parsed strictly (unknown fields refused, the SDK's required-field
check run): the SDK's own lenient parsing is replaced for this run.
"""

import asyncio
import json
import sys

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.transports import jsonrpc as jsonrpc_transport
from a2a.client.transports import rest as rest_transport
from a2a.helpers.proto_helpers import new_text_message
from a2a.types import a2a_pb2
from a2a.utils.errors import InvalidParamsError
from a2a.utils.proto_utils import validate_proto_required_fields


def strict(data, message):
    """ParseDict refusing unknown fields, then the SDK's required-field check (the SDK passes
    the JSON-RPC result as a dict, an HTTP+JSON stream event as its text)."""
    if isinstance(data, (str, bytes)):
        data = json.loads(data)
    parsed = ParseDict(data, message, ignore_unknown_fields=False)
    try:
        validate_proto_required_fields(parsed)
    except InvalidParamsError as e:
        # The last page of ListTasks has an empty `next_page_token`, as the spec says it must;
        # proto3 cannot tell an empty REQUIRED string from a missing one, so the check flags it.
        fields = {error["field"] for error in e.data["errors"]}
        last_page = isinstance(parsed, a2a_pb2.ListTasksResponse) and not parsed.next_page_token
        if not (last_page and fields == {"next_page_token"}):
            raise
    return parsed


jsonrpc_transport.parse_lenient = strict
rest_transport.parse_lenient = strict


def state_name(state):
    return a2a_pb2.TaskState.Name(state)


async def main(url, token):
    seen = {}
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        raw = (await http.get(url + "/.well-known/agent-card.json")).json()
        strict(raw, a2a_pb2.AgentCard())
        card = await A2ACardResolver(http, url).get_agent_card()
        seen["card"] = {"name": card.name, "url": card.supported_interfaces[0].url,
                        "extensions": [e.uri for e in card.capabilities.extensions]}

        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        ask = a2a_pb2.SendMessageRequest(
            message=new_text_message("Where is my invoice?", role=a2a_pb2.ROLE_USER))
        states, task_id, answer = [], None, None
        async for event in streaming.send_message(ask):
            if event.HasField("task"):
                task_id = event.task.id
                states.append(state_name(event.task.status.state))
            elif event.HasField("status_update"):
                status = event.status_update.status
                states.append(state_name(status.state))
                if status.HasField("message"):
                    answer = " ".join(p.text for p in status.message.parts if p.text)
        seen["streamed"] = {"task": task_id, "states": states, "answer": answer}

        task = await streaming.get_task(a2a_pb2.GetTaskRequest(id=task_id))
        seen["task"] = {"state": state_name(task.status.state),
                        "history": [MessageToDict(m) for m in task.history]}

        polling = ClientFactory(
            ClientConfig(httpx_client=http, streaming=False, polling=True)).create(card)
        aside = a2a_pb2.SendMessageRequest(
            message=new_text_message("Just saying hello.", role=a2a_pb2.ROLE_USER))
        other = None
        async for event in polling.send_message(aside):
            other = event.task
        subscribed = []

        async def follow():
            async for event in streaming.subscribe(a2a_pb2.SubscribeToTaskRequest(id=other.id)):
                if event.HasField("task"):
                    subscribed.append(state_name(event.task.status.state))
                elif event.HasField("status_update"):
                    subscribed.append(state_name(event.status_update.status.state))

        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.5)
        canceled = await polling.cancel_task(a2a_pb2.CancelTaskRequest(id=other.id))
        await asyncio.wait_for(follower, 10)
        seen["canceled"] = {"before": state_name(other.status.state),
                            "after": state_name(canceled.status.state),
                            "subscribed": subscribed}
        rest = ClientFactory(ClientConfig(
            httpx_client=http, streaming=True,
            supported_protocol_bindings=["HTTP+JSON"])).create(card)
        again = a2a_pb2.SendMessageRequest(
            message=new_text_message("And my last invoice?", role=a2a_pb2.ROLE_USER))
        rest_states, rest_task = [], None
        async for event in rest.send_message(again):
            if event.HasField("task"):
                rest_task = event.task.id
                rest_states.append(state_name(event.task.status.state))
            elif event.HasField("status_update"):
                rest_states.append(state_name(event.status_update.status.state))
        fetched = await rest.get_task(a2a_pb2.GetTaskRequest(id=rest_task))
        seen["rest"] = {"states": rest_states, "task": state_name(fetched.status.state),
                        "messages": len(fetched.history)}
        hub_url = url.split("/a2a/")[0]
        agent = url.rstrip("/").rsplit("/", 1)[1]
        raw_hub = (await http.get(hub_url + "/.well-known/agent-card.json")).json()
        strict(raw_hub, a2a_pb2.AgentCard())
        hub_card = await A2ACardResolver(http, hub_url).get_agent_card()
        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(hub_card)
        via_hub = new_text_message("An invoice question via the hub", role=a2a_pb2.ROLE_USER)
        via_hub.metadata.update({"recipient": agent})
        hub_task = None
        async for event in blocking.send_message(a2a_pb2.SendMessageRequest(message=via_hub)):
            hub_task = event.task
        seen["hub"] = {"skills": [s.id for s in hub_card.skills],
                       "state": state_name(hub_task.status.state), "id": hub_task.id}
        # ListTasks, a page over JSON-RPC and the next over HTTP+JSON: this agent's tasks.
        listed = await streaming.list_tasks(a2a_pb2.ListTasksRequest(page_size=2))
        following = await rest.list_tasks(
            a2a_pb2.ListTasksRequest(page_size=2, page_token=listed.next_page_token))
        seen["listed"] = {"first": [t.id for t in listed.tasks],
                          "next": [t.id for t in following.tasks],
                          "total": listed.total_size, "last_token": following.next_page_token,
                          "sent": [task_id, other.id, rest_task, hub_task.id]}
        await streaming.close()
        await polling.close()
        await rest.close()
        await blocking.close()
    print(json.dumps(seen))
    ok = (states and states[-1] == "TASK_STATE_COMPLETED"
          and seen["task"]["state"] == "TASK_STATE_COMPLETED"
          and seen["canceled"]["after"] == "TASK_STATE_CANCELED"
          and seen["rest"]["task"] == "TASK_STATE_COMPLETED"
          and seen["hub"]["state"] == "TASK_STATE_COMPLETED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
