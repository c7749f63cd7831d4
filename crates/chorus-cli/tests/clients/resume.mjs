// An inbox stream read with the `eventsource` package from npm (the EventSource most Node
// programs use), whose connection is cut after its first event: the package reconnects on its
// own, sending the last event id it saw as `Last-Event-ID`. The handler of that first message
// is slow (longer than the package's default reconnection delay of 3 s), so it acknowledges
// after the reconnection. Prints what happened as one JSON line; exits 1 on a timeout.
//
// Run from a directory whose node_modules holds `eventsource` (the TypeScript example client's,
// after `npm ci`), with CHORUS_URL set.
import { EventSource } from "eventsource";

const BASE = process.env.CHORUS_URL ?? "http://127.0.0.1:8080";
const SENDER = ["customer_service_agent_001", "customer-service-quickstart-token"];
const READER = "technical-support-quickstart-token";
const INBOX = "technical_support_agent_pool";
const MESSAGES = 3;
const SLOW_MS = 3500;

const auth = (token) => ({ authorization: `Bearer ${token}` });
const run = `resume-${Date.now()}`;
const ids = Array.from({ length: MESSAGES }, (_, i) => `${run}-${i}`);

for (const id of ids) {
  const answer = await fetch(`${BASE}/v1/messages`, {
    method: "POST",
    headers: { ...auth(SENDER[1]), "content-type": "application/json" },
    body: JSON.stringify({
      role: "user",
      id,
      name: SENDER[0],
      recipient: INBOX,
      content: `message ${id}`,
    }),
  });
  if (answer.status !== 201) {
    throw new Error(`publish answered ${answer.status}: ${await answer.text()}`);
  }
}

// `order`: "deliver <id>" when an event is read, "ack <id>" just before its ack is sent.
const report = { connections: [], deliveries: [], acks: [], events: [], order: [] };
let cut = false;

// The first connection's body ends with an error right after the chunk that holds its first
// event, as a dropped connection would (and the request is aborted, so the server sees it go).
function cutting(response, abort) {
  const reader = response.body.getReader();
  const body = new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      controller.enqueue(value);
      if (new TextDecoder().decode(value).includes("event: message")) {
        cut = true;
        setTimeout(() => {
          // The error first: the package does not reconnect after an AbortError.
          controller.error(new Error("connection cut by the test"));
          abort.abort();
        }, 50);
      }
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}

const source = new EventSource(`${BASE}/v1/agents/${INBOX}/inbox?max_in_flight=1`, {
  fetch: async (input, init) => {
    const headers = { ...init?.headers, ...auth(READER) };
    report.connections.push({ last_event_id: headers["Last-Event-ID"] ?? headers["last-event-id"] ?? null });
    const abort = new AbortController();
    const response = await fetch(input, { ...init, headers, signal: abort.signal });
    return cut ? response : cutting(response, abort);
  },
});

const timer = setTimeout(() => finish(1), 20_000);
function finish(code) {
  clearTimeout(timer);
  source.close();
  console.log(JSON.stringify(report));
  process.exit(code);
}

source.addEventListener("message", async (event) => {
  const delivery = JSON.parse(event.data);
  report.events.push(event.lastEventId);
  report.deliveries.push({ message_id: delivery.message_id, attempt: delivery.attempt });
  report.order.push(`deliver ${delivery.message_id}`);
  if (report.deliveries.length === 1) {
    await new Promise((done) => setTimeout(done, SLOW_MS));
  }
  const path = `/v1/agents/${INBOX}/inbox/${delivery.message_id}/ack?attempt=${delivery.attempt}`;
  report.order.push(`ack ${delivery.message_id}`);
  const answer = await fetch(BASE + path, { method: "POST", headers: auth(READER) });
  report.acks.push({ message_id: delivery.message_id, status: answer.status });
  if (new Set(report.acks.filter((a) => a.status === 204).map((a) => a.message_id)).size === MESSAGES) {
    finish(0);
  }
});
source.addEventListener("error", (event) => {
  if (source.readyState === EventSource.CLOSED) {
    report.error = event.message ?? "closed";
    finish(1);
  }
});
