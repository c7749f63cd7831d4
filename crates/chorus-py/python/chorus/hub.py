"""A client for the chorus hub (``chorus serve``), in sync (:class:`Hub`) and asyncio
(:class:`AsyncHub`) forms, with nothing beyond the standard library.

Publish messages and handoffs (see :mod:`chorus.handoff` for the seven types), read an inbox
as a stream of :class:`Delivery` objects and settle each (ack, nack, in-progress), request and
consume confirmations, and read task timelines. Refusals raise :class:`HubError` with the
server's status, error code and the JSON pointer, message and hint of every issue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import (Any, AsyncIterator, Dict, Generator, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple)

__all__ = ["AsyncDelivery", "AsyncHub", "Delivery", "Hub", "HubError", "Issue"]


class Issue(NamedTuple):
    """One problem the server found in a request."""

    pointer: str
    message: str
    hint: Optional[str]


class HubError(Exception):
    """The hub refused a request (or could not be reached: ``status`` 0)."""

    def __init__(self, status: int, body: Dict[str, Any], retry_after: Optional[str] = None) -> None:
        self.status = status
        self.error: str = str(body.get("error", "unreachable" if status == 0 else "http_error"))
        self.message: str = str(body.get("message", ""))
        self.issues = [Issue(i.get("pointer", ""), i.get("message", ""), i.get("hint"))
                       for i in body.get("issues") or []]
        self.dead_letter_id: Optional[str] = body.get("dead_letter_id")
        self.retry_after = retry_after
        details = "; ".join(f"{i.pointer or '/'}: {i.message}" + (f" (hint: {i.hint})" if i.hint else "")
                            for i in self.issues)
        super().__init__(f"{status} {self.error}: {self.message}" + (f" [{details}]" if details else ""))


def _refusal(error: OSError) -> HubError:
    """The :class:`HubError` of a failed request: the hub's answer when it sent one (an HTTP
    error with its JSON body, or its text), else status 0 with what went wrong."""
    if isinstance(error, urllib.error.HTTPError):
        raw = error.read()
        try:
            parsed = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            parsed = {"message": raw.decode("utf-8", "replace")}
        return HubError(error.code, parsed if isinstance(parsed, dict) else {},
                        error.headers.get("Retry-After"))
    return HubError(0, {"message": str(error)})


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _read_timeout(response: Any, seconds: float) -> None:
    """Sets how long the next read of an open ``urlopen`` response may wait (its socket sits
    under the buffered reader; without one found, the timeout given at opening stays)."""
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        sock.settimeout(seconds)


class Delivery:
    """One delivery of an inbox: the message and how to settle it.

    Attributes:
        message_id: the message's id (a handoff's ``metadata.message_id``).
        attempt: 1 on the first delivery, one more on each redelivery (after a nack, or a
            lease that ran out); the settle calls send it, so a settle meant for an older
            attempt is refused (409) instead of settling the newer one.
        message: the document exactly as it was published (a dict).
        traceparent: the W3C trace context the message travels in, when the hub knows one.
        agent: the inbox it came from (an agent's id or a pool's name); settles go there.
        hub: the :class:`Hub` that read it.

    The hub leased the delivery to this stream for the inbox's ack wait (``ack_wait_secs``, 30
    seconds unless configured) when it sent it; nothing renews the lease by itself. Settle it
    with :meth:`ack`, :meth:`nack` or :meth:`dead_letter` before the lease runs out, or extend
    it with :meth:`in_progress` (or :meth:`renewing`, which does that in the background). A
    delivery whose lease ran out is delivered again, perhaps to another reader, and settling
    the old one raises :class:`HubError` 409.
    """

    def __init__(self, hub: "Hub", agent: str, event: Dict[str, Any]) -> None:
        self.hub = hub
        self.agent = agent
        self.message_id: str = event["message_id"]
        self.attempt: int = event.get("attempt", 1)
        self.message: Dict[str, Any] = event["message"]
        self.traceparent: Optional[str] = event.get("traceparent")

    def __repr__(self) -> str:
        return f"Delivery({self.agent!r}, {self.message_id!r}, attempt={self.attempt})"

    def ack(self) -> None:
        """Done: the message will not come again."""
        self.hub.ack(self.agent, self.message_id, attempt=self.attempt)

    def nack(self, delay_ms: Optional[int] = None) -> None:
        """Not done: deliver it again (after ``delay_ms``), as the next attempt; after the
        inbox's last attempt (``max_deliver``, 5 unless configured) it becomes a dead letter."""
        self.hub.nack(self.agent, self.message_id, attempt=self.attempt, delay_ms=delay_ms)

    def in_progress(self) -> None:
        """Still working: the lease starts again (another full ack wait from now)."""
        self.hub.in_progress(self.agent, self.message_id, attempt=self.attempt)

    def dead_letter(self, error: str = "") -> None:
        """Given up: the message becomes a dead letter now (reason ``failed``, with ``error``),
        without further attempts."""
        self.hub.dead_letter(self.agent, self.message_id, attempt=self.attempt, error=error)

    @contextlib.contextmanager
    def renewing(self, every: float = 10.0) -> Iterator["Delivery"]:
        """Renews the lease (:meth:`in_progress`) every ``every`` seconds from a background
        thread while the ``with`` block runs; keep ``every`` well under the inbox's ack wait.
        Renewal stops at the end of the block (settle the delivery in it or after it), and for
        good when the hub refuses a renewal (the delivery was settled, or its lease had already
        run out)."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(every):
                try:
                    self.in_progress()
                except HubError:
                    return

        thread = threading.Thread(target=renew, name=f"renew {self.message_id}", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()


class Hub:
    """A synchronous client of one hub, with one token (an agent's or the admin's)."""

    def __init__(self, url: str, token: str, *, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None,
                 params: Optional[Dict[str, Any]] = None) -> Tuple[int, Any]:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        url = self.url + path + (("?" + urllib.parse.urlencode(query)) if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except (urllib.error.URLError, OSError) as error:
            raise _refusal(error) from None

    def _pages(self, path: str, params: Optional[Dict[str, Any]] = None) -> Iterator[Dict[str, Any]]:
        after: Optional[str] = None
        while True:
            _, page = self._request("GET", path, params={**(params or {}), "after": after})
            yield from page["items"]
            after = page.get("next")
            if after is None:
                return

    # -- publishing ----------------------------------------------------------------

    def publish(self, document: Dict[str, Any]) -> Dict[str, Any]:
        """Publishes a chorus message or a handoff: ``{id, duplicate, queues}``."""
        _, answer = self._request("POST", "/v1/messages", document)
        result: Dict[str, Any] = answer
        return result

    def publish_batch(self, documents: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Publishes up to 100 documents at once: one ``{status, id, queues?, problem?}`` each."""
        _, answer = self._request("POST", "/v1/messages/batch", list(documents))
        results: List[Dict[str, Any]] = answer["results"]
        return results

    # -- inboxes -------------------------------------------------------------------

    def inbox(self, agent: str, *, max_in_flight: Optional[int] = None,
              idle_timeout: Optional[float] = None) -> Generator[Delivery, None, None]:
        """The deliveries of ``agent``'s inbox (an agent's id, or a pool the token may read) as
        they come, over one Server-Sent Events stream; settle each.

        The stream holds at most ``max_in_flight`` unsettled deliveries (default: the inbox's
        ``max_in_flight`` in the hub's config, else 16) and gets the next one when one is acked,
        nacked or dead-lettered. Each is leased from the moment the hub gives it to the stream,
        so a delivery's lease runs while the loop still handles an earlier one; this iterator
        never renews a lease (see :class:`Delivery`). Every open stream of an inbox competes for
        its messages: each delivery goes to one of them.

        The iterator ends when nothing came for ``idle_timeout`` seconds (never, by default) or
        when the hub closes the stream; leaving the loop closes it. A closed stream's unsettled
        deliveries go at once to the inbox's other open streams; with none open they go back to
        the inbox, as a new attempt, after ``hand_back_ms`` (a second unless configured)."""
        path = f"/v1/agents/{_quote(agent)}/inbox"
        query = "" if max_in_flight is None else f"?max_in_flight={max_in_flight}"
        request = urllib.request.Request(self.url + path + query)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "text/event-stream")
        try:
            response = urllib.request.urlopen(request, timeout=idle_timeout)
        except (urllib.error.URLError, OSError) as error:
            raise _refusal(error) from None
        # A silent stream gets a keep-alive comment every 15 s, which would start the socket's
        # timeout again: the time since the last delivery is kept here, and each read may wait
        # only for what is left of it.
        deadline = None if idle_timeout is None else time.monotonic() + idle_timeout
        with response:
            event, data = "message", []
            while True:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    _read_timeout(response, left)
                try:
                    line = response.readline()
                except (socket.timeout, TimeoutError):
                    return
                if not line:
                    return
                text = line.decode("utf-8").rstrip("\r\n")
                if text.startswith(":"):
                    continue
                if text:
                    field, _, value = text.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "event":
                        event = value
                    elif field == "data":
                        data.append(value)
                    continue
                if data and event == "message":
                    yield Delivery(self, agent, json.loads("\n".join(data)))
                    if idle_timeout is not None:
                        deadline = time.monotonic() + idle_timeout
                event, data = "message", []

    def peek(self, agent: str, limit: int = 100) -> Dict[str, Any]:
        """What waits in ``agent``'s inbox, claiming nothing: ``{depth, messages}``."""
        _, answer = self._request("GET", f"/v1/agents/{_quote(agent)}/inbox/messages",
                                  params={"limit": limit})
        result: Dict[str, Any] = answer
        return result

    def _settle(self, agent: str, message_id: str, action: str, attempt: Optional[int],
                body: Any = None) -> None:
        path = f"/v1/agents/{_quote(agent)}/inbox/{_quote(message_id)}/{action}"
        self._request("POST", path, body, params={"attempt": attempt})

    def ack(self, agent: str, message_id: str, *, attempt: Optional[int] = None) -> None:
        """Settles a delivery as done."""
        self._settle(agent, message_id, "ack", attempt)

    def ack_many(self, agent: str, deliveries: Sequence[Tuple[str, Optional[int]]]) -> List[Dict[str, Any]]:
        """Acks several ``(message_id, attempt)`` at once: one ``{message_id, status}`` each."""
        body = [{"message_id": m, **({} if a is None else {"attempt": a})} for m, a in deliveries]
        _, answer = self._request("POST", f"/v1/agents/{_quote(agent)}/inbox/ack", body)
        results: List[Dict[str, Any]] = answer["results"]
        return results

    def nack(self, agent: str, message_id: str, *, attempt: Optional[int] = None,
             delay_ms: Optional[int] = None) -> None:
        """Settles a delivery as not done: it comes again (after ``delay_ms``)."""
        body = None if delay_ms is None else {"delay_ms": delay_ms}
        self._settle(agent, message_id, "nack", attempt, body)

    def in_progress(self, agent: str, message_id: str, *, attempt: Optional[int] = None) -> None:
        """Keeps a delivery: its ack deadline starts again."""
        self._settle(agent, message_id, "in-progress", attempt)

    def dead_letter(self, agent: str, message_id: str, *, attempt: Optional[int] = None,
                    error: str = "") -> None:
        """Gives up on a delivery: a dead letter now (reason ``failed``, with ``error``)."""
        self._settle(agent, message_id, "dead-letter", attempt, {"error": error})

    # -- confirmations -------------------------------------------------------------

    def request_confirmation(self, agent: str, tool: str, call_id: str, arguments: str,
                             task_id: Optional[str] = None) -> Dict[str, Any]:
        """Asks a person to approve one exact tool call; the pending confirmation."""
        body: Dict[str, Any] = {"agent": agent, "tool": tool, "call_id": call_id,
                                "arguments": arguments}
        if task_id is not None:
            body["task_id"] = task_id
        _, answer = self._request("POST", "/v1/confirmations", body)
        result: Dict[str, Any] = answer
        return result

    def confirmation(self, confirmation_id: str) -> Dict[str, Any]:
        """One confirmation."""
        _, answer = self._request("GET", f"/v1/confirmations/{_quote(confirmation_id)}")
        result: Dict[str, Any] = answer
        return result

    def confirmations(self, state: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Every confirmation (``state``: pending, approved, rejected, consumed), oldest first."""
        return self._pages("/v1/confirmations", {"state": state})

    def _decide(self, confirmation_id: str, decision: str, note: Optional[str]) -> Dict[str, Any]:
        body = None if note is None else {"note": note}
        _, answer = self._request("POST", f"/v1/confirmations/{_quote(confirmation_id)}/{decision}", body)
        result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        return result

    def approve(self, confirmation_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        """Approves a pending confirmation (admin)."""
        return self._decide(confirmation_id, "approve", note)

    def reject(self, confirmation_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        """Rejects a pending confirmation (admin)."""
        return self._decide(confirmation_id, "reject", note)

    def consume(self, confirmation_id: str, arguments: str) -> Dict[str, Any]:
        """Uses an approval right before running the call (the owning agent); once only."""
        _, answer = self._request("POST", f"/v1/confirmations/{_quote(confirmation_id)}/consume",
                                  {"arguments": arguments})
        result: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        return result

    # -- timelines (admin) ---------------------------------------------------------

    def task_messages(self, task_id: str) -> Iterator[Dict[str, Any]]:
        """A task's messages in publish order (its timeline)."""
        return self._pages(f"/v1/tasks/{_quote(task_id)}/messages")

    def tasks(self) -> Iterator[Dict[str, Any]]:
        """Tasks, most recently active first: ``{id, messages, first_ms, last_ms}``."""
        return self._pages("/v1/tasks")

    def conversation_messages(self, conversation_id: str) -> Iterator[Dict[str, Any]]:
        """A conversation's log, each entry with its sequence number."""
        return self._pages(f"/v1/conversations/{_quote(conversation_id)}/messages")

    def dead_letters(self) -> Iterator[Dict[str, Any]]:
        """Dead letters with their reason, oldest first."""
        return self._pages("/v1/dead-letters")

    def health(self) -> bool:
        """Whether the hub answers and its store takes a write."""
        try:
            status, _ = self._request("GET", "/healthz")
        except HubError:
            return False
        return status == 200


class AsyncDelivery:
    """A delivery read by :class:`AsyncHub`, settled with ``await``: the attributes and the
    lease of :class:`Delivery`."""

    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery
        self.agent = delivery.agent
        self.message_id = delivery.message_id
        self.attempt = delivery.attempt
        self.message = delivery.message
        self.traceparent = delivery.traceparent

    def __repr__(self) -> str:
        return f"AsyncDelivery({self.agent!r}, {self.message_id!r}, attempt={self.attempt})"

    async def ack(self) -> None:
        """Done."""
        await asyncio.to_thread(self._delivery.ack)

    async def nack(self, delay_ms: Optional[int] = None) -> None:
        """Not done: again (after ``delay_ms``)."""
        await asyncio.to_thread(self._delivery.nack, delay_ms)

    async def in_progress(self) -> None:
        """Still working."""
        await asyncio.to_thread(self._delivery.in_progress)

    async def dead_letter(self, error: str = "") -> None:
        """Given up: a dead letter now."""
        await asyncio.to_thread(self._delivery.dead_letter, error)

    @contextlib.asynccontextmanager
    async def renewing(self, every: float = 10.0) -> AsyncIterator["AsyncDelivery"]:
        """See :meth:`Delivery.renewing`: ``async with``, renewed from a task."""

        async def renew() -> None:
            while True:
                await asyncio.sleep(every)
                try:
                    await self.in_progress()
                except HubError:
                    return

        task = asyncio.ensure_future(renew())
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class AsyncHub:
    """The asyncio form of :class:`Hub`: the same calls, awaited (run in worker threads, so the
    event loop never blocks on the network)."""

    def __init__(self, url: str, token: str, *, timeout: float = 30.0) -> None:
        self.sync = Hub(url, token, timeout=timeout)

    async def publish(self, document: Dict[str, Any]) -> Dict[str, Any]:
        """See :meth:`Hub.publish`."""
        return await asyncio.to_thread(self.sync.publish, document)

    async def publish_batch(self, documents: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """See :meth:`Hub.publish_batch`."""
        return await asyncio.to_thread(self.sync.publish_batch, documents)

    async def inbox(self, agent: str, *, max_in_flight: Optional[int] = None,
                    idle_timeout: Optional[float] = None) -> AsyncIterator[AsyncDelivery]:
        """See :meth:`Hub.inbox`."""
        stream = self.sync.inbox(agent, max_in_flight=max_in_flight, idle_timeout=idle_timeout)
        while True:
            delivery = await asyncio.to_thread(next, stream, None)
            if delivery is None:
                return
            yield AsyncDelivery(delivery)

    async def peek(self, agent: str, limit: int = 100) -> Dict[str, Any]:
        """See :meth:`Hub.peek`."""
        return await asyncio.to_thread(self.sync.peek, agent, limit)

    async def request_confirmation(self, agent: str, tool: str, call_id: str, arguments: str,
                                   task_id: Optional[str] = None) -> Dict[str, Any]:
        """See :meth:`Hub.request_confirmation`."""
        return await asyncio.to_thread(self.sync.request_confirmation, agent, tool, call_id,
                                       arguments, task_id)

    async def confirmation(self, confirmation_id: str) -> Dict[str, Any]:
        """See :meth:`Hub.confirmation`."""
        return await asyncio.to_thread(self.sync.confirmation, confirmation_id)

    async def approve(self, confirmation_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        """See :meth:`Hub.approve`."""
        return await asyncio.to_thread(self.sync.approve, confirmation_id, note)

    async def reject(self, confirmation_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        """See :meth:`Hub.reject`."""
        return await asyncio.to_thread(self.sync.reject, confirmation_id, note)

    async def consume(self, confirmation_id: str, arguments: str) -> Dict[str, Any]:
        """See :meth:`Hub.consume`."""
        return await asyncio.to_thread(self.sync.consume, confirmation_id, arguments)

    async def task_messages(self, task_id: str) -> List[Dict[str, Any]]:
        """See :meth:`Hub.task_messages` (the whole timeline)."""
        return await asyncio.to_thread(lambda: list(self.sync.task_messages(task_id)))
