"""Drives chorus serve's MCP endpoint with the official MCP Python SDK (`mcp` from PyPI), as an
MCP-capable assistant would: one session per agent token. Prints what it saw as one JSON object
for tests/mcp_server.rs to check.

    python mcp_client.py URL ALICE_TOKEN BOB_TOKEN TASK_ID
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def as_agent(url, token, work):
    """Runs `work(session)` in an initialized MCP session carrying `token`."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def outcome(result):
    return {"is_error": result.is_error, "structured": result.structured_content}


async def main(url, alice, bob, task_id):
    seen = {}

    async def alice_work(session):
        tools = await session.list_tools()
        seen["tools"] = sorted(t.name for t in tools.tools)
        seen["schemas"] = {t.name: t.input_schema for t in tools.tools}
        message = {"role": "user", "id": "mcp-m-1", "name": "alice", "recipient": "bob",
                   "content": "Здравствуйте — 你好 👋", "metadata": {"task_id": task_id}}
        seen["published"] = outcome(await session.call_tool("publish", {"document": message}))
        spoof = dict(message, id="mcp-m-2", name="bob")
        seen["spoofed"] = outcome(await session.call_tool("publish", {"document": spoof}))
        invalid = {"role": "user", "id": "mcp-m-3", "name": "alice", "recipient": "bob",
                   "content": 7}
        seen["invalid"] = outcome(await session.call_tool("publish", {"document": invalid}))
        seen["other_inbox"] = outcome(await session.call_tool("read_inbox", {"inbox": "bob"}))
        seen["task"] = outcome(await session.call_tool("read_task", {"task_id": task_id}))

    async def bob_work(session):
        seen["bob_inbox"] = outcome(await session.call_tool("read_inbox", {"inbox": "bob"}))
        seen["bad_limit"] = outcome(
            await session.call_tool("read_inbox", {"inbox": "bob", "limit": -1}))

    await as_agent(url, alice, alice_work)
    await as_agent(url, bob, bob_work)
    async with httpx2.AsyncClient() as http:
        anonymous = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                    headers={"Accept": "application/json, text/event-stream"})
        seen["anonymous_status"] = anonymous.status_code
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
