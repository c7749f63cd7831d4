// Two agents talk through a running `chorus serve` (Node's fetch and the `eventsource` package).
//
// customer_service_agent_001 escalates seed 003's network problem to technical_support_agent_pool;
// technical_support_agent_001, who reads that pool, receives it from its inbox stream (Server-Sent
// Events), acknowledges it and answers with a STATUS_UPDATE, which customer service receives and
// acknowledges in turn. Start the hub first:
//
//     chorus serve --config examples/clients/chorus.toml
//     cd examples/clients/typescript && npm install && npm run build && npm start
//
// CHORUS_URL (default http://127.0.0.1:7700), CS_TOKEN and TS_TOKEN override the quick-start
// values. Exit code 0 when both deliveries arrived, 1 otherwise.

import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { EventSource } from "eventsource";

const BASE = (process.env.CHORUS_URL ?? "http://127.0.0.1:7700").replace(/\/$/, "");
const CS_TOKEN = process.env.CS_TOKEN ?? "customer-service-quickstart-token";
const TS_TOKEN = process.env.TS_TOKEN ?? "technical-support-quickstart-token";
// dist/exchange.js → examples/seeds/
const SEED = new URL("../../../seeds/003-escalation.json", import.meta.url);

/** A seed-003 handoff message, as far as this client reads it. */
interface Handoff {
  metadata: {
    message_id: string;
    sender_id: string;
    recipient_id: string;
    task_id?: string;
    correlation_id?: string;
    [key: string]: unknown;
  };
  context: { workflow_state: string; previous_actions?: object[]; [key: string]: unknown };
  payload: { handoff_type: string; data: Record<string, any> };
  instructions: Record<string, unknown>;
}

/** One event of an inbox stream: a delivery to settle. */
interface Delivery {
  message_id: string;
  attempt: number;
  message: Handoff;
  traceparent?: string;
}

/** An RFC 3339 time in UTC with milliseconds, `minutes` from now. */
const utc = (minutes = 0) => new Date(Date.now() + minutes * 60_000).toISOString();

const auth = (token: string) => ({ Authorization: `Bearer ${token}` });

/** POST /v1/messages as the agent owning `token`; the hub's answer. */
async function publish(token: string, document: Handoff): Promise<{ queues: string[] }> {
  const answer = await fetch(`${BASE}/v1/messages`, {
    method: "POST",
    headers: { ...auth(token), "Content-Type": "application/json" },
    body: JSON.stringify(document),
  });
  if (answer.status !== 200 && answer.status !== 201) {
    throw new Error(`publish answered ${answer.status}: ${await answer.text()}`);
  }
  return answer.json();
}

/** Settles one delivery (with its attempt, so an old delivery never settles a newer one). */
async function ack(token: string, inbox: string, delivery: Delivery): Promise<void> {
  const path = `/v1/agents/${inbox}/inbox/${delivery.message_id}/ack?attempt=${delivery.attempt}`;
  const answer = await fetch(BASE + path, { method: "POST", headers: auth(token) });
  if (answer.status !== 204) {
    throw new Error(`ack answered ${answer.status}: ${await answer.text()}`);
  }
}

/** Reads the inbox stream until `messageId` arrives, acknowledging each delivery once handled
 * (here: printed); that delivery. Fails after 20 s, or when the stream is refused. */
function receive(token: string, inbox: string, messageId: string): Promise<Delivery> {
  return new Promise((resolve, reject) => {
    const source = new EventSource(`${BASE}/v1/agents/${inbox}/inbox`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...auth(token) } }),
    });
    const fail = (error: Error) => {
      clearTimeout(timer);
      source.close();
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`nothing for ${messageId} in ${inbox} within 20 s`)), 20_000);
    source.addEventListener("message", (event) => {
      const delivery: Delivery = JSON.parse(event.data);
      ack(token, inbox, delivery).then(() => {
        if (delivery.message_id === messageId) {
          clearTimeout(timer);
          source.close();
          resolve(delivery);
        } else {
          console.log(`${inbox}: acknowledged an earlier message ${delivery.message_id}`);
        }
      }, fail);
    });
    source.addEventListener("error", (event) => {
      // A refused stream (401, 403) is not retried by EventSource: give up at once.
      if (source.readyState === EventSource.CLOSED) {
        fail(new Error(`the inbox stream of ${inbox} was refused: ${event.message ?? "closed"}`));
      }
    });
  });
}

/** Seed 003's escalation with a fresh id, the current time and an expiry two hours ahead. */
async function escalation(taskId: string): Promise<Handoff> {
  const document: Handoff = JSON.parse(await readFile(SEED, "utf8"));
  Object.assign(document.metadata, {
    message_id: randomUUID(),
    timestamp: utc(),
    expiration_time: utc(120),
    task_id: taskId,
    correlation_id: taskId,
  });
  return document;
}

/** technical_support_agent_001's answer to the escalation it received. */
function statusUpdate(received: Handoff): Handoff {
  const { metadata } = received;
  return {
    metadata: {
      message_id: randomUUID(),
      timestamp: utc(),
      protocol_version: "1.0.0",
      sender_id: "technical_support_agent_001",
      recipient_id: metadata.sender_id,
      correlation_id: metadata.correlation_id,
      task_id: metadata.task_id,
      priority: "HIGH",
    },
    context: {
      ...received.context,
      workflow_state: "DIAGNOSIS_IN_PROGRESS",
      previous_actions: [
        ...(received.context.previous_actions ?? []),
        { action_type: "LOG_REVIEW", details: "Read log_file_id_123.", timestamp: utc() },
      ],
    },
    payload: {
      handoff_type: "STATUS_UPDATE",
      data: {
        status: "IN_PROGRESS",
        progress_percent: 40,
        summary: "Logs show the modem dropping its DHCP lease; remote session booked.",
        in_response_to: metadata.message_id,
      },
    },
    instructions: {},
  };
}

async function main(): Promise<void> {
  const taskId = `task-${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const sent = await escalation(taskId);
  const answer = await publish(CS_TOKEN, sent);
  console.log(`customer service escalated ${sent.metadata.message_id} to ${JSON.stringify(answer.queues)}`);

  const got = await receive(TS_TOKEN, sent.metadata.recipient_id, sent.metadata.message_id);
  const data = got.message.payload.data;
  console.log(
    `technical support received ${data.issue_category} (${data.severity}) for ${data.customer_info.name}, attempt ${got.attempt}`,
  );

  const update = statusUpdate(got.message);
  await publish(TS_TOKEN, update);
  console.log(`technical support sent STATUS_UPDATE ${update.metadata.message_id}`);

  const back = await receive(CS_TOKEN, "customer_service_agent_001", update.metadata.message_id);
  const status = back.message.payload.data;
  console.log(`customer service received STATUS_UPDATE ${status.status}: ${status.summary}`);
  console.log(`the task in the web UI: ${BASE}/#/task/${taskId}`);
}

main().catch((error: unknown) => {
  console.error(`exchange: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
