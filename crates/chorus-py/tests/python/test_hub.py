"""``chorus.hub`` and ``chorus.handoff`` against a real ``chorus serve`` started here.

The server binary comes from ``CHORUS_BIN`` (the Rust test passes the workspace's
``target/debug/chorus``); without it the test is skipped, unless ``CHORUS_TEST_PYTHON`` is set.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import subprocess
import threading
import uuid
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from chorus import handoff, validate
from chorus.hub import AsyncHub, Hub, HubError

AGENTS = ("alice", "bob")


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[str, Dict[str, str]]]:
    """A running ``chorus serve`` (SQLite store in a temporary folder): its URL and tokens."""
    binary = os.environ.get("CHORUS_BIN")
    if not binary or not os.path.exists(binary):
        message = f"CHORUS_BIN is not set to the chorus binary (found {binary!r}; cargo build -p chorus-cli)"
        if os.environ.get("CHORUS_TEST_PYTHON"):
            pytest.fail(message)
        pytest.skip(f"not run: {message}")
    folder = tmp_path_factory.mktemp("hub")
    tokens = {name: secrets.token_hex(24) for name in ("admin",) + AGENTS}
    config = [f'admin_token_sha256 = "{sha256(tokens["admin"])}"']
    for name in AGENTS:
        config += [f"[agents.{name}]", f'token_sha256 = "{sha256(tokens[name])}"']
    (folder / "chorus.toml").write_text("\n".join(config) + "\n")
    process = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--config", "chorus.toml",
         "--store", "sqlite:chorus.db"],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()
    threading.Thread(target=lambda: [None for _ in process.stdout or []], daemon=True).start()
    try:
        address = first.split("http://")[1].split()[0]
        yield f"http://{address}", tokens
    finally:
        process.terminate()
        process.wait(timeout=10)


def message(sender: str, recipient: str, text: str) -> Dict[str, Any]:
    return {"role": "user", "id": f"m-{uuid.uuid4()}", "name": sender, "recipient": recipient,
            "content": text}


def test_publish_read_and_settle(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served
    alice, bob = Hub(url, tokens["alice"]), Hub(url, tokens["bob"])
    assert alice.health()
    first, second = message("alice", "bob", "Привет, bob 🎉"), message("alice", "bob", "second")
    published = alice.publish(first)
    assert published["id"] == first["id"] and published["duplicate"] is False
    assert alice.publish(first)["duplicate"] is True
    alice.publish(second)
    assert bob.peek("bob")["depth"] == 2
    seen: List[str] = []
    for delivery in bob.inbox("bob", idle_timeout=2):
        seen.append(delivery.message["content"])
        if delivery.message_id == second["id"] and delivery.attempt == 1:
            delivery.nack()  # comes again at once
        else:
            delivery.ack()
        if len(seen) == 3:
            break
    assert sorted(seen) == sorted([first["content"], second["content"], second["content"]])
    assert bob.peek("bob")["depth"] == 0


def test_refusals_carry_the_servers_pointers(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served
    alice = Hub(url, tokens["alice"])
    bad = message("alice", "bob", "x")
    bad["content"] = 5
    with pytest.raises(HubError) as raised:
        alice.publish(bad)
    assert raised.value.status == 422
    assert any(issue.pointer == "/content" for issue in raised.value.issues), raised.value.issues
    with pytest.raises(HubError) as raised:
        alice.publish(message("bob", "alice", "not mine to send"))
    assert raised.value.status == 403
    with pytest.raises(HubError) as raised:
        Hub(url, "wrong-token").peek("bob")
    assert raised.value.status == 401
    assert not Hub("http://127.0.0.1:9", "t", timeout=2).health()


def test_every_handoff_type_validates_and_builds_a_task_timeline(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served
    alice, bob, admin = Hub(url, tokens["alice"]), Hub(url, tokens["bob"]), Hub(url, tokens["admin"])
    task = f"task-{uuid.uuid4()}"
    documents = [
        handoff.task_transfer("alice", "bob", "Résumé the report", task_id=task),
        handoff.request_information("alice", "bob", ["order_id"], task_id=task),
        handoff.provide_information("alice", "bob", {"order_id": "42"}, task_id=task),
        handoff.escalation("alice", "bob", "NETWORK", "HIGH", {"user_id": "u-1", "name": "Ann"},
                           {"isp": "GlobalNet"}, task_id=task, priority="HIGH"),
        handoff.notification("alice", "bob", "DEPLOYED", "v2 is live", task_id=task),
        handoff.status_update("alice", "bob", "IN_PROGRESS", task_id=task,
                              extra={"progress_percent": 50}),
        handoff.approval_request("alice", "bob", "refund", "customer overcharged", task_id=task),
    ]
    for document in documents:
        assert [p for p in validate.validate(document, "handoff") if p.severity == "error"] == [], document
    results = alice.publish_batch(documents[:3])
    assert [r["status"] for r in results] == [201] * 3, results
    for document in documents[3:]:
        assert alice.publish(document)["duplicate"] is False
    timeline = list(admin.task_messages(task))
    # A batch is stored concurrently (any order among its documents), the rest in publish order.
    kinds = [m["handoff_type"] for m in timeline]
    expected = [d["payload"]["handoff_type"] for d in documents]
    assert sorted(kinds[:3]) == sorted(expected[:3]) and kinds[3:] == expected[3:], kinds
    assert all(m["message"]["metadata"]["task_id"] == task for m in timeline)
    acked = 0
    for delivery in bob.inbox("bob", idle_timeout=2):
        delivery.in_progress()
        delivery.ack()
        acked += 1
        if acked == 7:
            break
    assert acked == 7


def test_confirmations(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served
    alice, admin = Hub(url, tokens["alice"]), Hub(url, tokens["admin"])
    arguments = '{"host": "db-1", "force": true}'
    pending = alice.request_confirmation("alice", "reboot", f"call-{uuid.uuid4()}", arguments)
    assert pending["state"] == "pending"
    assert any(c["id"] == pending["id"] for c in admin.confirmations(state="pending"))
    with pytest.raises(HubError) as raised:
        alice.consume(pending["id"], arguments)
    assert raised.value.status == 409
    admin.approve(pending["id"], note="checked")
    with pytest.raises(HubError) as raised:
        alice.consume(pending["id"], arguments + " ")
    assert raised.value.status == 422
    alice.consume(pending["id"], arguments)
    assert admin.confirmation(pending["id"])["state"] == "consumed"


def test_async_client(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served

    async def run() -> List[str]:
        alice, bob = AsyncHub(url, tokens["alice"]), AsyncHub(url, tokens["bob"])
        sent = [message("alice", "bob", f"async {i}") for i in range(3)]
        await asyncio.gather(*(alice.publish(m) for m in sent))
        got: List[str] = []
        async for delivery in bob.inbox("bob", idle_timeout=2):
            got.append(delivery.message["content"])
            await delivery.ack()
            if len(got) == 3:
                break
        return got

    assert sorted(asyncio.run(run())) == ["async 0", "async 1", "async 2"]
