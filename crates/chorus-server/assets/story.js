// chorus web UI: what a handoff says and where it stands — its payload drawn by its type's data
// schema, its context and instructions, times, and each recipient's delivery state. Every piece
// of message data goes in as text (views.js `el`), never as markup.
"use strict";

/** The data schemas of the standard handoff types, by type (`/ui/handoff-data.json`). */
let dataSchemas = {};

/** The server's setup the page uses: `trace_url`, a trace viewer's address with `{trace_id}`. */
let settings = {};

/** Loads the data schemas and the settings once; without them, labels come from the keys alone
 * and trace ids are not links. */
async function loadDataSchemas() {
  const load = async (path) => {
    try {
      const r = await fetch(path);
      return r.ok ? await r.json() : {};
    } catch (_) { return {}; }
  };
  [dataSchemas, settings] = await Promise.all([load("/ui/handoff-data.json"), load("/ui/settings.json")]);
}

/** Text longer than this is folded behind its beginning. */
const LONG_TEXT = 240;

/** `issue_category` → "Issue category". */
const label = (key) => {
  const words = String(key).replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
};

/** A schema with its local `$ref`s (`#/$defs/…` of `root`) followed. */
function resolved(schema, root) {
  let s = schema || {};
  for (let i = 0; s.$ref && i < 16; i++) {
    const m = /^#\/\$defs\/(.+)$/.exec(s.$ref);
    s = (m && root && root.$defs && root.$defs[m[1]]) || {};
  }
  return s;
}

/** An RFC 3339 time (or Unix milliseconds) as people read it, in UTC to the second. */
function when(t) {
  const d = typeof t === "number" ? new Date(t) : new Date(String(t));
  if (isNaN(d.getTime())) return String(t);
  return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

/** A value for people: objects as definition lists (labels and order from the schema), arrays
 * as lists, long text folded, the rest as text. */
function shownValue(v, schema, root) {
  const s = resolved(schema, root);
  if (Array.isArray(v)) {
    return v.length ? el("ul", { class: "list" }, v.map((x) => el("li", {}, shownValue(x, s.items, root))))
      : el("span", { class: "empty" }, "none");
  }
  if (v && typeof v === "object") return fields(v, s, root);
  if (typeof v === "string" && v.length > LONG_TEXT) {
    return el("details", { class: "long" }, el("summary", {}, `${v.slice(0, 120)}…`), el("div", { class: "text" }, v));
  }
  if (typeof v === "string" && s.format === "date-time") return el("time", { datetime: v }, when(v));
  return el("span", { class: "value" }, typeof v === "string" ? v : JSON.stringify(v));
}

/** An object as a definition list: the schema's properties first, in its order, then the rest;
 * each label carries the schema's description as its tooltip. */
function fields(obj, schema, root) {
  const props = (schema && schema.properties) || {};
  const keys = [...Object.keys(props).filter((k) => k in obj), ...Object.keys(obj).filter((k) => !(k in props))];
  return el("dl", { class: "fields" }, keys.flatMap((k) => {
    const description = (props[k] && props[k].description) || resolved(props[k], root).description;
    return [el("dt", { title: description, "data-key": k }, label(k)), el("dd", { "data-key": k }, shownValue(obj[k], props[k], root))];
  }));
}

/** A handoff's payload data, drawn by its type's schema. */
function payloadView(doc) {
  const payload = doc.payload || {};
  const data = payload.data;
  if (data === undefined || data === null) return "";
  const schema = dataSchemas[payload.handoff_type];
  return el("section", { class: "payload" }, el("h4", {}, "Payload"), shownValue(data, schema, schema));
}

/** Entries sorted by their `timestamp` (those without one keep their place at the end). */
const byTime = (list) => [...list].sort((a, b) => {
  const ta = Date.parse(a && a.timestamp), tb = Date.parse(b && b.timestamp);
  return (isNaN(ta) ? Infinity : ta) - (isNaN(tb) ? Infinity : tb);
});

/** A handoff's context: workflow state, previous actions as a small timeline, the summary and
 * the user's interactions. */
function contextView(doc) {
  const c = doc.context;
  if (!c || typeof c !== "object") return "";
  const actions = Array.isArray(c.previous_actions) ? byTime(c.previous_actions) : [];
  const talk = Array.isArray(c.user_interaction_history) ? byTime(c.user_interaction_history) : [];
  const known = new Set(["workflow_state", "previous_actions", "historical_data_summary", "user_interaction_history"]);
  const rest = Object.fromEntries(Object.entries(c).filter(([k]) => !known.has(k)));
  return el("section", { class: "context" }, el("h4", {}, "Context"),
    c.workflow_state ? el("p", { class: "workflow-state" }, "state ", el("strong", {}, c.workflow_state)) : "",
    actions.length ? el("ol", { class: "actions" }, actions.map((a) => el("li", {},
      a.timestamp ? el("time", { datetime: a.timestamp }, when(a.timestamp)) : "",
      el("strong", { class: "action-type" }, a.action_type || "action"),
      a.details ? el("span", { class: "details" }, a.details) : ""))) : "",
    c.historical_data_summary ? el("p", { class: "summary" }, shownValue(c.historical_data_summary)) : "",
    talk.length ? el("ol", { class: "interactions" }, talk.map((t) => el("li", {},
      t.timestamp ? el("time", { datetime: t.timestamp }, when(t.timestamp)) : "",
      el("strong", {}, `${t.sender || "?"}:`), " ", t.content !== undefined ? shownValue(t.content) : ""))) : "",
    Object.keys(rest).length ? fields(rest, {}, {}) : "");
}

/** A handoff's instructions: the next step, the required actions, then the rest with labels. */
function instructionsView(doc) {
  const ins = (doc.instructions && typeof doc.instructions === "object" && doc.instructions) || {};
  const actions = Array.isArray(ins.required_actions) ? ins.required_actions : [];
  const rest = Object.fromEntries(Object.entries(ins).filter(([k]) => k !== "next_steps_suggestion" && k !== "required_actions"));
  const empty = !ins.next_steps_suggestion && !actions.length && !Object.keys(rest).length;
  return el("section", { class: "instructions" }, el("h4", {}, "Instructions"),
    empty ? el("p", { class: "empty" }, "none") : "",
    ins.next_steps_suggestion ? el("p", {}, ins.next_steps_suggestion) : "",
    actions.length ? el("ul", {}, actions.map((a) => el("li", {}, a))) : "",
    Object.keys(rest).length ? fields(rest, {}, {}) : "");
}

/** Where one copy of a message stands, in words: `d` is the inbox's view of it (waiting), its
 * dead letter, or neither (acknowledged). */
function deliveryText(d) {
  if (!d || d.kind === "acked") return "acknowledged";
  if (d.kind === "unknown") return "not known (the inbox holds more than the UI reads)";
  if (d.kind === "dead") return `dead-lettered: ${reasonText(d.letter.reason)}`;
  const w = d.waiting;
  const tries = typeof w.attempts === "number" ? `${w.attempts} attempt${w.attempts === 1 ? "" : "s"}` : "attempts unknown";
  const until = w.until_ms ? ` until ${when(w.until_ms)}` : "";
  switch (w.state) {
    case "ready": return w.attempts ? `waiting for redelivery · ${tries}` : "waiting, not delivered yet";
    case "held": return `delivered, not acknowledged yet${until} · ${tries}`;
    case "delayed": return `nacked, due again${until} · ${tries}`;
    default: return `delivered, not acknowledged (${String(w.state).replaceAll("_", " ")}${until}) · ${tries}`;
  }
}

/** One event of a delivery history in words (`events`: the whole history of its copy, to tell
 * which reader a stream was). */
function historyText(e, events) {
  const readerOf = (stream) => (events.find((x) => x.step === "sent" && x.stream === stream) || {}).reader;
  const on = (stream) => `stream ${stream}${readerOf(stream) ? ` of ${readerOf(stream)}` : ""}`;
  switch (e.step) {
    case "sent":
      return e.from_stream !== undefined
        ? `handed over from ${on(e.from_stream)} to ${e.reader || "?"} (stream ${e.stream})`
        : `sent to ${e.reader || "?"} (stream ${e.stream})`;
    case "handed_back": return `handed back to the store: ${on(e.stream)} closed and no other stream took it`;
    case "nacked": return `nacked by ${e.reader || "?"}${e.delay_ms ? `, due again in ${e.delay_ms} ms` : ""}`;
    case "acked": return `acknowledged by ${e.reader || "?"}`;
    case "dead_lettered": return `dead-lettered by ${e.reader || "?"}`;
    default: return e.step;
  }
}

/** The history of one copy of a message (its events in `queue`, oldest first), attempt by
 * attempt: each send with its reader, hand-overs, hand-backs, nacks, the ack, and an attempt
 * whose lease passed without a word from its reader (it came again as the next one). */
function historyView(events, letter) {
  if (!events.length && !letter) return "";
  const rows = [];
  events.forEach((e, i) => {
    const next = events[i + 1];
    rows.push(el("li", { class: `event ${e.step}`, "data-attempt": e.attempt, "data-step": e.step },
      el("span", { class: "attempt" }, `attempt ${e.attempt}`), " · ", historyText(e, events), " · ",
      el("time", { datetime: new Date(e.at_ms).toISOString() }, when(e.at_ms))));
    const settledHere = events.some((x) => x.attempt === e.attempt && x.step !== "sent");
    if (e.step === "sent" && next && next.attempt > e.attempt && !settledHere) {
      rows.push(el("li", { class: "event lease-passed", "data-attempt": e.attempt, "data-step": "lease_passed" },
        el("span", { class: "attempt" }, `attempt ${e.attempt}`), " · ", `its lease passed with no ack from ${e.reader || "?"}: delivered again`));
    }
  });
  if (letter) {
    const at = typeof letter.dead_at_ms === "number" ? when(letter.dead_at_ms) : "";
    rows.push(el("li", { class: "event dead", "data-step": "dead_letter" }, `dead letter: ${reasonText(letter.reason)}${at ? ` · ${at}` : ""}`));
  }
  const readers = new Set(events.filter((e) => e.step === "sent").map((e) => e.reader));
  const attempts = new Set(events.map((e) => e.attempt));
  return el("details", { class: "history", open: readers.size > 1 || attempts.size > 1 ? "" : null },
    el("summary", {}, `history: ${attempts.size} attempt${attempts.size === 1 ? "" : "s"}, ${readers.size} reader${readers.size === 1 ? "" : "s"}`),
    el("ol", { class: "events" }, rows));
}

/** The delivery state of each recipient of message `m`, with its history (`states`: see app.js
 * `deliveryStates`). */
function deliveriesView(m, states) {
  if (!states || !(m.recipients || []).length) return "";
  const mine = states.get(m.id) || new Map();
  const history = (states.history && states.history.get(m.id)) || [];
  return el("ul", { class: "deliveries" }, m.recipients.map((q) => {
    const d = mine.get(q) || { kind: states.unknownQueues && states.unknownQueues.has(q) ? "unknown" : "acked" };
    const events = history.filter((e) => e.queue === q);
    return el("li", { class: `delivery ${d.kind}`, "data-queue": q }, el("span", { class: "queue" }, q), ": ", deliveryText(d),
      historyView(events, d.kind === "dead" ? d.letter : null));
  }));
}

/** The document as stored, folded, and the trace it travels in. */
function rawView(m) {
  const trace = m.traceparent && m.traceparent.split("-")[1];
  return el("p", { class: "links" },
    el("details", { class: "raw" }, el("summary", {}, "raw JSON"), el("pre", { class: "arguments" }, JSON.stringify(m.message, null, 2))),
    trace && settings.trace_url
      ? el("a", { class: "trace", title: m.traceparent, href: settings.trace_url.replace("{trace_id}", trace), target: "_blank", rel: "noopener noreferrer" }, `trace ${trace}`)
      : trace ? el("span", { class: "trace", title: m.traceparent }, `trace ${trace}`) : "");
}

/** A dead letter of the task that never reached the timeline (refused on publish). */
function refusedEntry(letter) {
  const doc = (letter.message && typeof letter.message === "object" && letter.message) || {};
  const md = doc.metadata || {};
  const type = (doc.payload && doc.payload.handoff_type) || (doc.role ? "message" : "document");
  return el("article", { class: "refused-entry", "data-id": letter.message_id || letter.id },
    el("header", {}, el("span", { class: "handoff-type" }, type), " ", el("span", { class: "refused" }, "refused on publish"),
      md.timestamp ? el("time", { datetime: md.timestamp }, when(md.timestamp)) : ""),
    el("p", { class: "route" }, `${md.sender_id || doc.name || "?"} → ${md.recipient_id || doc.recipient || "?"}`),
    el("p", { class: "reason" }, `dead-lettered: ${reasonText(letter.reason)}`),
    el("details", { class: "raw" }, el("summary", {}, "raw JSON"), el("pre", { class: "arguments" }, JSON.stringify(letter.message, null, 2))));
}

/** Swimlanes: a lane per agent (in order of first appearance), each entry of the page a mark in
 * its sender's lane, in publish order, with an arrow to each recipient's lane; hovering a mark
 * shows its time, type and route. */
function swimlanes(messages) {
  const lanes = [];
  for (const m of messages) for (const n of [m.sender || "?", ...(m.recipients || [])]) if (!lanes.includes(n)) lanes.push(n);
  if (!messages.length) return "";
  const left = 230, step = 46, laneH = 34, top = 20;
  const w = Math.max(640, left + step * (messages.length + 1)), h = top + laneH * lanes.length + 10;
  const y = (n) => top + laneH * lanes.indexOf(n) + laneH / 2;
  const pic = svg("svg", { class: "swimlanes", viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img" },
    svg("defs", {}, svg("marker", { id: "lane-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
      svg("path", { d: "M0,0 L10,5 L0,10 z" }))));
  for (const n of lanes) {
    pic.append(svg("line", { class: "lane-line", x1: left - 10, y1: y(n), x2: w - 10, y2: y(n) }),
      svg("text", { class: "lane", x: left - 16, y: y(n) + 4, "text-anchor": "end" }, n));
  }
  messages.forEach((m, i) => {
    const x = left + step * (i + 0.5);
    const from = m.sender || "?";
    const md = meta(m);
    const what = m.handoff_type || (m.message && m.message.role) || "message";
    const route = `${from} → ${(m.recipients || []).join(", ")}`;
    const mark = svg("g", { class: "mark", "data-id": m.id },
      svg("title", {}, `${m.published_ms || md.timestamp ? `${when(m.published_ms || md.timestamp)} · ` : ""}${what} · ${route}`));
    for (const to of m.recipients || []) {
      if (to === from) continue;
      const down = y(to) > y(from) ? 1 : -1;
      mark.append(svg("line", { class: "hop", x1: x, y1: y(from) + 6 * down, x2: x, y2: y(to) - 6 * down, "marker-end": "url(#lane-arrow)" }));
    }
    mark.append(svg("circle", { cx: x, cy: y(from), r: 6, class: m.handoff_type ? "handoff" : "plain" }));
    pic.append(mark);
  });
  return el("section", { class: "lanes" }, el("h3", {}, "Swimlanes"), el("div", { class: "scroll" }, pic));
}
