// chorus web UI: how stored messages are drawn. Every piece of message data goes in as text
// (textContent / text nodes), never as markup.
"use strict";

/** An element with attributes and children (strings become text nodes). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/** An SVG element with attributes. */
function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

const isHandoff = (m) => !!(m.handoff_type || (m.message && m.message.payload && m.message.metadata));
const meta = (m) => (m.message && typeof m.message.metadata === "object" && m.message.metadata) || {};

/** When a stored message happened: the hub's publish time when the server gives it (the
 * document's own time in the tooltip), else the document's own `timestamp`. */
function timeOf(m) {
  const own = meta(m).timestamp;
  if (typeof m.published_ms === "number") {
    const iso = new Date(m.published_ms).toISOString();
    const title = own ? `accepted by the hub; the message says ${when(own)}` : "accepted by the hub";
    return el("time", { datetime: iso, class: "published", title }, when(iso));
  }
  return own ? el("time", { datetime: own, title: "the message's own time" }, when(own)) : "";
}
/** "1 message", "5 messages". */
const counted = (messages) => `${messages.length} message${messages.length === 1 ? "" : "s"}`;
const num = (v) => (typeof v === "number" && isFinite(v) ? v : 0);

/** The text of a message's content: a string or the text of its parts. */
function contentText(content) {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((p) => {
      if (p && p.type === "text") return p.text;
      const url = p && p.type === "image_url" && ((p.image_url && p.image_url.url) || "");
      if (url !== false) return url.startsWith("/v1/blobs/") ? "" : `[image: ${url}]`;
      if (p && p.type === "input_audio") return "[audio]";
      return `[${(p && p.type) || "part"}]`;
    })
    .join("\n");
}

/** Images and audio kept by the server (`/v1/blobs/…`), as elements app.js fills with the
 * token-fetched bytes; other media stay named in the text. */
function media(content) {
  if (!Array.isArray(content)) return [];
  const kept = (u) => typeof u === "string" && u.startsWith("/v1/blobs/");
  return content.flatMap((p) => {
    if (p && p.type === "image_url" && kept(p.image_url && p.image_url.url)) {
      return [el("img", { class: "media", alt: "image", "data-blob": p.image_url.url })];
    }
    if (p && p.type === "input_audio" && kept(p.input_audio && p.input_audio.data)) {
      return [el("audio", { class: "media", controls: "", "data-blob": p.input_audio.data })];
    }
    return [];
  });
}

/** Text with `[cit_xx]` anchors drawn as footnote marks; returns the node and the ids used. */
function withAnchors(text, citations) {
  const out = el("div", { class: "text" });
  const used = [];
  const re = /\[(cit_[A-Za-z0-9_-]+)\]/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    out.append(text.slice(last, m.index));
    const id = m[1];
    if (citations && citations[id]) {
      if (!used.includes(id)) used.push(id);
      out.append(el("sup", { class: "anchor", title: id }, `[${used.indexOf(id) + 1}]`));
    } else out.append(m[0]);
    last = m.index + m[0].length;
  }
  out.append(text.slice(last));
  return { node: out, used };
}

/** One footnote: source, page and snippet. */
function footnote(id, c) {
  const loc = c.location || {};
  const source = c.source_name || c.url || c.source_id || id;
  return el(
    "li",
    { class: "footnote", "data-cit": id },
    el("span", { class: "source" }, source),
    c.source_type ? ` (${c.source_type})` : "",
    loc.page_number !== undefined ? el("span", { class: "page" }, `, p. ${loc.page_number}`) : "",
    loc.text_snippet ? el("q", { class: "snippet" }, loc.text_snippet) : "",
    c.access_date ? ` accessed ${c.access_date}` : ""
  );
}

/** Token usage, latency and cost of one message; "usage not reported" for a model's reply
 * without any ("" for other messages without). */
function usageLine(md, role) {
  const u = md.token_usage || {};
  const l = md.latency_ms || {};
  const parts = [];
  if (u.prompt_tokens !== undefined) parts.push(`prompt ${u.prompt_tokens} tokens`);
  if (u.completion_tokens !== undefined) parts.push(`completion ${u.completion_tokens} tokens`);
  if (u.total_cost_usd !== undefined) parts.push(`cost $${u.total_cost_usd}`);
  if (l.ttft !== undefined) parts.push(`ttft ${l.ttft} ms`);
  if (l.total_time !== undefined) parts.push(`latency ${l.total_time} ms`);
  if (md.model_version) parts.push(md.model_version);
  if (!parts.length) return role === "assistant" ? el("div", { class: "usage none" }, "usage not reported") : "";
  return el("div", { class: "usage" }, parts.join(" · "));
}

/** True when a message's metadata carries token usage, cost or latency. */
const reportsUsage = (md) => md.token_usage !== undefined || md.latency_ms !== undefined;

/** Totals of a timeline's usage, latency and cost. */
function totals(messages) {
  const t = { prompt: 0, completion: 0, cost: 0, latency: 0, reported: 0 };
  for (const m of messages) {
    const md = meta(m);
    if (reportsUsage(md)) t.reported += 1;
    t.prompt += num((md.token_usage || {}).prompt_tokens);
    t.completion += num((md.token_usage || {}).completion_tokens);
    t.cost += num((md.token_usage || {}).total_cost_usd);
    t.latency += num((md.latency_ms || {}).total_time);
  }
  if (!t.reported) {
    return el("p", { class: "totals" }, `${counted(messages)} · usage not reported (no message carries token usage, cost or latency)`);
  }
  const some = t.reported < messages.length ? ` · reported by ${t.reported} of ${messages.length}` : "";
  return el(
    "p",
    { class: "totals" },
    `${counted(messages)} · prompt ${t.prompt} tokens · completion ${t.completion} tokens · ` +
      `cost $${Number(t.cost.toFixed(6))} · latency ${t.latency} ms${some}`
  );
}

/** A handoff packet as a card: when, who to whom, type and priority, what it says (payload,
 * context, instructions), and where each copy stands. */
function handoffCard(m, states) {
  const doc = m.message || {};
  const md = doc.metadata || {};
  return el(
    "article",
    { class: "handoff-card", "data-id": m.id },
    el("header", {}, el("span", { class: "handoff-type" }, m.handoff_type || (doc.payload || {}).handoff_type || "handoff"),
      " ", el("span", { class: `priority ${String(m.priority).toLowerCase()}` }, m.priority),
      timeOf(m)),
    el("p", { class: "route" }, `${m.sender || md.sender_id || "?"} → ${m.recipients.join(", ")}`),
    el("p", { class: "expiry" }, md.expiration_time ? `expires ${md.expiration_time}` : "no expiry"),
    md.task_id ? el("p", { class: "task" }, `task ${md.task_id}`) : "",
    deliveriesView(m, states),
    payloadView(doc),
    contextView(doc),
    instructionsView(doc),
    rawView(m)
  );
}

/** A chorus message: its channel apart, tool calls with their results, footnotes, usage. */
function messageEntry(m, results, states) {
  const doc = m.message || {};
  const md = meta(m);
  const channel = doc.channel || "";
  const cites = md.citation_map || null;
  const { node: text, used } = withAnchors(contentText(doc.content), cites);
  const head = el("header", {}, el("span", { class: "who" }, `${m.sender || doc.role || "?"} → ${m.recipients.join(", ")}`),
    " ", el("span", { class: "role" }, doc.role || ""), channel ? el("span", { class: "channel-name" }, channel) : "",
    timeOf(m));
  let body;
  if (channel === "analysis") {
    body = el("details", { class: "channel analysis" }, el("summary", {}, "analysis (reasoning)"), text, media(doc.content));
  } else {
    body = el("section", { class: `channel ${channel || "plain"}` }, channel ? el("h4", {}, channel) : "", text, media(doc.content));
  }
  const calls = Array.isArray(doc.tool_calls) ? doc.tool_calls : [];
  const callList = calls.length
    ? el("ul", { class: "tool-calls" }, calls.map((c) => {
        const f = c.function || {};
        const r = results.get(c.id);
        return el("li", { class: "tool-call", "data-call": c.id },
          el("div", { class: "call" }, el("code", {}, `${f.name || "?"}(${f.arguments || ""})`), ` ${c.id || ""}`),
          el("div", { class: r ? "tool-result" : "tool-result missing" },
            r ? `→ ${contentText(r.message.content)}` : "no result yet"));
      }))
    : "";
  const notes = used.length ? el("ol", { class: "footnotes" }, used.map((id) => footnote(id, cites[id]))) : "";
  return el("article", { class: "message", "data-id": m.id }, head, body, callList, notes, usageLine(md, doc.role),
    deliveriesView(m, states), rawView(m));
}

/** A timeline: handoff cards and messages in order; tool results sit with their calls; with
 * `states`, each entry says where each copy stands. */
function timeline(messages, states) {
  const results = new Map();
  const calls = new Set();
  for (const m of messages) {
    for (const c of (m.message && Array.isArray(m.message.tool_calls) && m.message.tool_calls) || []) calls.add(c.id);
  }
  for (const m of messages) {
    const id = m.message && m.message.role === "tool" && m.message.tool_call_id;
    if (id && calls.has(id)) results.set(id, m);
  }
  const shown = messages.filter((m) => !(m.message && m.message.role === "tool" && results.get(m.message.tool_call_id) === m));
  return el("ol", { class: "timeline" },
    shown.map((m) => el("li", {}, isHandoff(m) ? handoffCard(m, states) : messageEntry(m, results, states))));
}

/** Who sent to whom in a timeline, as counted edges. */
function edges(messages) {
  const byKey = new Map();
  for (const m of messages) {
    const from = m.sender || "?";
    for (const to of m.recipients || []) {
      const key = JSON.stringify([from, to]);
      const e = byKey.get(key) || { from, to, count: 0, types: new Set() };
      e.count += 1;
      if (m.handoff_type) e.types.add(m.handoff_type);
      byKey.set(key, e);
    }
  }
  return [...byKey.values()];
}

/** Who took work from which inbox, from the delivery histories (`history`: message id →
 * events): a pool read by its replicas becomes the place they take work from, and the replica
 * that answered is no longer an unconnected source. */
function takes(messages, history) {
  const byKey = new Map();
  for (const m of messages) {
    const seen = new Set();
    for (const e of (history && history.get(m.id)) || []) {
      if (e.step !== "sent" || !e.reader || e.reader === e.queue) continue;
      const key = JSON.stringify([e.queue, e.reader]);
      if (seen.has(key)) continue;
      seen.add(key);
      const t = byKey.get(key) || { from: e.queue, to: e.reader, count: 0, types: new Set(), take: true };
      t.count += 1;
      byKey.set(key, t);
    }
  }
  return [...byKey.values()];
}

/** The handoff graph: agents on a circle, an arrow per sender → recipient, a dashed arrow per
 * inbox → reader that took messages from it (with `states.history`), and the edge list. */
function graph(messages, states) {
  const es = [...edges(messages), ...takes(messages, states && states.history)];
  const pools = new Set(es.filter((e) => e.take).map((e) => e.from));
  const names = [...new Set(es.flatMap((e) => [e.from, e.to]))];
  // Wider than high: room for the names beside the agents on the left and right.
  const w = 640, h = 360, r = 130, cx = w / 2, cy = h / 2;
  const pos = new Map(names.map((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(names.length, 1) - Math.PI / 2;
    return [n, [cx + r * Math.cos(a), cy + r * Math.sin(a)]];
  }));
  const pic = svg("svg", { class: "graph", viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" },
      svg("path", { d: "M0,0 L10,5 L0,10 z" }))));
  const pairs = new Set(es.map((e) => JSON.stringify([e.from, e.to])));
  for (const e of es) {
    const [x1, y1] = pos.get(e.from), [x2, y2] = pos.get(e.to);
    const d = Math.hypot(x2 - x1, y2 - y1) || 1, k = 22 / d;
    // Both directions drawn: each arrow moves aside, to its own right.
    const side = pairs.has(JSON.stringify([e.to, e.from])) ? 6 : 0;
    const ox = (-(y2 - y1) / d) * side, oy = ((x2 - x1) / d) * side;
    pic.append(svg("g", { class: e.take ? "edge take" : "edge", "data-from": e.from, "data-to": e.to },
      svg("title", {}, e.take ? `${e.to} took ${e.count} from ${e.from}` : `${e.from} → ${e.to}`),
      svg("line", { x1: x1 + (x2 - x1) * k + ox, y1: y1 + (y2 - y1) * k + oy, x2: x2 - (x2 - x1) * k + ox,
        y2: y2 - (y2 - y1) * k + oy, "marker-end": "url(#arrow)" })));
  }
  for (const n of names) {
    const [x, y] = pos.get(n);
    // The name sits outside the circle, away from the middle where the arrows run.
    const out = Math.hypot(x - cx, y - cy) || 1, lx = x + ((x - cx) / out) * 34, ly = y + ((y - cy) / out) * 34 + 4;
    pic.append(svg("g", { class: pools.has(n) ? "node pool" : "node", "data-name": n }, svg("circle", { cx: x, cy: y, r: 20 }),
      svg("text", { x: names.length > 1 ? lx : x, y: names.length > 1 ? ly : y + 36, "text-anchor": "middle" }, n)));
  }
  const list = el("ul", { class: "edges" }, es.map((e) => e.take
    ? el("li", { class: "edge-item take" }, `${e.to} took ×${e.count} from ${e.from}`)
    : el("li", { class: "edge-item" }, `${e.from} → ${e.to} ×${e.count}${e.types.size ? ` (${[...e.types].join(", ")})` : ""}`)));
  return el("section", { class: "handoff-graph" }, el("h3", {}, "Handoff graph"), pic, list);
}

/** Why a message is a dead letter, for people. */
function reasonText(reason) {
  const r = reason || {};
  switch (r.kind) {
    case "invalid":
      return `invalid: ${(r.issues || []).map((i) => `${i.pointer || "/"} ${i.message}`).join("; ")}`;
    case "expired":
      return `expired at ${when(r.expired_at_ms)}`;
    case "max_deliver":
      return `max_deliver: delivered ${r.attempts} times without an ack`;
    case "no_route":
      return "no_route: no recipient or binding matched";
    case "failed":
      return `failed: the handler gave up after ${r.attempts} attempts: ${r.error}`;
    default:
      return JSON.stringify(r);
  }
}
