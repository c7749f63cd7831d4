"""An A2A agent on the official A2A Python SDK (`a2a-sdk`, v1.0), for a chorus flow to hand off to.

    python examples/a2a/sdk_agent.py 7790      # or 0: a free port, said in the first line
    python examples/a2a/sdk_agent.py 7790 --no-streaming   # a card without streaming

Serves its card at http://127.0.0.1:PORT/.well-known/agent-card.json and JSON-RPC at
http://127.0.0.1:PORT/. It reads what it is sent: a chorus handoff (a data part, with the
chorus handoff extension) is answered with what it found in the packet (type, priority,
expiration time, message id); a plain text message is answered with its text upper-cased.
Every task ends completed, except an escalation whose `technical_details.logs_attached` is
false: that task asks for the logs (input required), and the next message of the task
completes it. It prints `listening on URL` once it serves.
"""

import asyncio
import socket
import sys

import uvicorn
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2

HANDOFF_EXTENSION = "https://example.invalid/chorus/a2a/extensions/handoff/v1"


def answer_for(message):
    """The reply text: what the handoff said about itself, or the text upper-cased."""
    if HANDOFF_EXTENSION in message.extensions:
        for part in message.parts:
            if part.WhichOneof("content") == "data":
                packet = MessageToDict(part.data)
                meta = packet.get("metadata", {})
                kind = packet.get("payload", {}).get("handoff_type")
                return (f"Handled {kind} {meta.get('message_id')} from {meta.get('sender_id')}: "
                        f"priority {meta.get('priority')}, expires {meta.get('expiration_time')}.")
    text = " ".join(p.text for p in message.parts if p.WhichOneof("content") == "text")
    return text.upper()


def wants_logs(message):
    """True for a chorus escalation that says its logs are not attached."""
    if HANDOFF_EXTENSION not in message.extensions:
        return False
    for part in message.parts:
        if part.WhichOneof("content") == "data":
            packet = MessageToDict(part.data)
            details = packet.get("payload", {}).get("data", {}).get("technical_details", {})
            return details.get("logs_attached") is False
    return False


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is not None:
            # The client answered the question this task asked.
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            reply = new_text_message("Thanks, with that: " + answer_for(context.message),
                                     context_id=context.context_id, task_id=context.task_id,
                                     role=a2a_pb2.ROLE_AGENT)
            await updater.complete(reply)
            return
        await event_queue.enqueue_event(new_task(
            context.task_id, context.context_id, a2a_pb2.TASK_STATE_SUBMITTED,
            history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if wants_logs(context.message):
            ask = new_text_message("Please send the modem logs.", context_id=context.context_id,
                                   task_id=context.task_id, role=a2a_pb2.ROLE_AGENT)
            await updater.requires_input(ask)
            return
        reply = new_text_message(answer_for(context.message), context_id=context.context_id,
                                 task_id=context.task_id, role=a2a_pb2.ROLE_AGENT)
        await updater.complete(reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(url, streaming):
    return a2a_pb2.AgentCard(
        name="sdk-echo",
        description="Answers chorus handoffs with what it found in them",
        version="1.0.0",
        supported_interfaces=[a2a_pb2.AgentInterface(
            url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=a2a_pb2.AgentCapabilities(streaming=streaming, extensions=[
            a2a_pb2.AgentExtension(uri=HANDOFF_EXTENSION, description="chorus handoffs")]),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[a2a_pb2.AgentSkill(id="echo", name="echo", description="echo", tags=["test"])],
    )


async def main(port, streaming):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    agent_card = card(url, streaming)
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(),
                                    agent_card=agent_card)
    app = Starlette(routes=create_agent_card_routes(agent_card)
                    + create_jsonrpc_routes(handler, rpc_url="/"))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.05)
    print(f"listening on {url}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), "--no-streaming" not in sys.argv[2:]))
