"""``chorus.hub`` and ``chorus.handoff`` against a real ``chorus serve`` started here.

The server binary comes from ``CHORUS_BIN`` (see ``_hubs.py``).
"""

from __future__ import annotations

import asyncio
import datetime
import http.server
import secrets
import threading
import time
import uuid
import warnings
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from _hubs import serve, sha256
from chorus import handoff, validate
from chorus.hub import AsyncHub, Hub, HubError

AGENTS = ("alice", "bob", "carol")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[str, Dict[str, str]]]:
    """A running ``chorus serve`` (SQLite store in a temporary folder): its URL and tokens.
    ``carol``'s inbox has an ack wait of one second (the lease tests)."""
    folder = tmp_path_factory.mktemp("hub")
    tokens = {name: secrets.token_hex(24) for name in ("admin",) + AGENTS}
    config = [f'admin_token_sha256 = "{sha256(tokens["admin"])}"']
    for name in AGENTS:
        config += [f"[agents.{name}]", f'token_sha256 = "{sha256(tokens[name])}"']
    config += ["ack_wait_secs = 1", "max_deliver = 100"]  # carol's, the last entry
    (folder / "chorus.toml").write_text("\n".join(config) + "\n")
    with serve(folder, ["serve", "--config", "chorus.toml", "--store", "sqlite:chorus.db"]) as url:
        yield url, tokens


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
        handoff.status_update("alice", "bob", "IN_PROGRESS", task_id=task, progress_percent=50),
        handoff.approval_request("alice", "bob", "refund", "customer overcharged", task_id=task,
                                 risk_level="LOW"),
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


def test_builders_take_the_schemas_field_names(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served
    alice, bob = Hub(url, tokens["alice"]), Hub(url, tokens["bob"])
    asked = handoff.request_information("alice", "bob", requested_info_keys=("modem_logs",),
                                        query_parameters={"period": "48h"})
    answer = handoff.provide_information(
        "bob", "alice", {"modem_logs": "log-1"}, in_response_to=asked["metadata"]["message_id"],
        missing_keys=["outage_times"], task_id=asked["metadata"]["task_id"])
    update = handoff.status_update(
        "bob", "alice", "BLOCKED", progress_percent=40, summary="Logs read; one key missing.",
        blocked_on="outage_times", in_response_to=asked["metadata"]["message_id"],
        history_summary="Asked for logs and outage times.", task_id=asked["metadata"]["task_id"])
    # STATUS_UPDATE's own summary is a data field; the context's summary is history_summary.
    assert update["payload"]["data"] == {
        "status": "BLOCKED", "progress_percent": 40, "summary": "Logs read; one key missing.",
        "blocked_on": "outage_times", "in_response_to": asked["metadata"]["message_id"]}
    assert update["context"]["historical_data_summary"] == "Asked for logs and outage times."
    assert answer["payload"]["data"] == {"provided_info": {"modem_logs": "log-1"},
                                         "in_response_to": asked["metadata"]["message_id"],
                                         "missing_keys": ["outage_times"]}
    transfer = handoff.task_transfer(
        "alice", "bob", "Ship a router", completed_steps=("checked stock",),
        deadline=datetime.datetime(2099, 1, 2, 3, 4, 5, 678_000, tzinfo=datetime.timezone.utc),
        extra={"x_ticket": "T-1"}, expiration_time="2099-01-01T00:00:00.000Z")
    assert transfer["payload"]["data"] == {"task_description": "Ship a router",
                                           "completed_steps": ["checked stock"],
                                           "deadline": "2099-01-02T03:04:05.678Z",
                                           "x_ticket": "T-1"}
    assert transfer["metadata"]["expiration_time"] == "2099-01-01T00:00:00.000Z"
    for document in (asked, answer, update):
        assert [p for p in validate.validate(document, "handoff") if p.severity == "error"] == []
    assert alice.publish(asked)["queues"] == ["bob"]
    assert bob.publish(answer)["queues"] == ["alice"]
    assert bob.publish(update)["queues"] == ["alice"]
    with pytest.raises(TypeError, match="repeats the data field 'status'"):
        handoff.status_update("bob", "alice", "FAILED", extra={"status": "COMPLETED"})
    # The old spelling of the context's summary still works, with a warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = handoff.notification("alice", "bob", "E", "m", summary="so far")
    assert old["context"]["historical_data_summary"] == "so far"
    assert [w.category for w in caught] == [DeprecationWarning]
    assert caught[0].filename == __file__  # it names the caller's line
    for inbox, hub in (("alice", alice), ("bob", bob)):
        for delivery in hub.inbox(inbox, idle_timeout=2):
            delivery.ack()
            if hub.peek(inbox)["depth"] == 0:
                break


def test_leases_run_out_unless_renewed(served: Tuple[str, Dict[str, str]]) -> None:
    """carol's inbox leases a delivery for one second (and delivers it up to 100 times);
    inbox() does not renew a lease, ``renewing`` does."""
    url, tokens = served
    alice, carol = Hub(url, tokens["alice"]), Hub(url, tokens["carol"])
    kept, lapsed = message("alice", "carol", "kept"), message("alice", "carol", "lapsed")
    alice.publish(kept)
    stream = carol.inbox("carol", max_in_flight=1, idle_timeout=10)
    first = next(stream)
    assert first.message_id == kept["id"]
    with first.renewing(every=0.25):
        time.sleep(3)  # three ack waits
    first.ack()  # still held: no 409
    alice.publish(lapsed)
    second = next(stream)
    assert (second.message_id, second.attempt) == (lapsed["id"], 1)
    time.sleep(3)  # its lease runs out, and it is delivered again
    with pytest.raises(HubError) as raised:
        second.ack()
    assert raised.value.status == 409, raised.value
    # The later attempts came meanwhile, each leased for a second: settle the first still held.
    for again in stream:
        assert again.message_id == lapsed["id"] and again.attempt >= 2
        try:
            again.ack()
            break
        except HubError as superseded:
            assert superseded.status == 409, superseded
    else:
        pytest.fail("the lapsed delivery did not come again")
    stream.close()
    assert carol.peek("carol")["depth"] == 0


def test_dead_letter_gives_up_at_once(served: Tuple[str, Dict[str, str]]) -> None:
    url, tokens = served
    alice, bob, admin = Hub(url, tokens["alice"]), Hub(url, tokens["bob"]), Hub(url, tokens["admin"])
    poison = message("alice", "bob", "cannot be handled")
    alice.publish(poison)
    for delivery in bob.inbox("bob", idle_timeout=2):
        assert delivery.message_id == poison["id"] and delivery.agent == "bob"
        delivery.dead_letter("ValueError('no such order')")
        break
    [dead] = [d for d in admin.dead_letters() if d["message_id"] == poison["id"]]
    assert "no such order" in str(dead["reason"]), dead
    assert bob.peek("bob")["depth"] == 0


def test_idle_timeout_counts_keep_alive_comments_as_silence() -> None:
    """A stream that sends only keep-alive comments (the hub sends one every 15 s) ends after
    ``idle_timeout``, although each comment would start a socket timeout again."""

    class Comments(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b":\n\n")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Comments)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        got = list(Hub(f"http://127.0.0.1:{server.server_address[1]}", "t").inbox(
            "bob", idle_timeout=1))
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert got == []
    assert 0.9 < elapsed < 3, elapsed
