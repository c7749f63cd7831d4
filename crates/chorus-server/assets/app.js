// chorus web UI: the admin token, API calls, pages and live updates.
"use strict";

const TOKEN_KEY = "chorus.admin_token";
const main = () => document.getElementById("main");
const status = (text) => { document.getElementById("status").textContent = text; };

/** A refused or failed API call. */
class ApiFailure extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

/** Calls the API with the admin token; JSON answer (null when empty). */
async function api(method, path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) throw new ApiFailure(401, "no admin token");
  const init = { method, headers: { Authorization: `Bearer ${token}` } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (!r.ok) {
    if (r.status === 401) sessionStorage.removeItem(TOKEN_KEY);
    throw new ApiFailure(r.status, (data && data.message) || `${r.status} ${r.statusText}`);
  }
  return data;
}

/** The form asking for the admin token. */
function tokenForm(message) {
  const input = el("input", { type: "password", id: "token", autocomplete: "off", placeholder: "admin token" });
  const form = el("form", { id: "token-form", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    startLive();
    render();
  } }, el("label", { for: "token" }, "Admin token (printed by chorus serve at start)"), input, el("button", { type: "submit" }, "Open"));
  main().replaceChildren(message ? el("p", { class: "error" }, message) : "", form);
}

/** A time in Unix milliseconds as every part of the page writes times (`when`), or nothing. */
const fmtTime = (ms) => (typeof ms === "number" ? when(ms) : "");

/** Entries of a home page section, and of a timeline, read at once. */
const HOME_PAGE = 20;
const TIMELINE_PAGE = 200;

/** Where each paged list stands: the cursor of the page shown and those of the pages before. */
const pages = new Map();
const pageOf = (key) => pages.get(key) || { after: null, trail: [] };

/** `path` with the cursor of the page `key` shows. */
function paged(key, path) {
  const { after } = pageOf(key);
  return after === null ? path : `${path}&after=${encodeURIComponent(after)}`;
}

/** The position in list `key`, its size and buttons to the next, the previous and the first page. */
function pager(key, page, size, noun) {
  const at = pageOf(key);
  const from = at.trail.length * size;
  const count = page.items.length;
  const total = typeof page.total === "number" ? ` of ${page.total}` : "";
  const go = (next) => () => { pages.set(key, next); render(); };
  const caption = count ? `${noun} ${from + 1}–${from + count}${total}` : (total ? `none here${total}` : "");
  if (!page.next && at.after === null) return el("p", { class: "pager", "data-list": key }, page.total > count ? caption : "");
  return el("p", { class: "pager", "data-list": key }, caption,
    page.next ? el("button", { class: "next-page", onclick: go({ after: page.next, trail: [...at.trail, at.after] }) }, "Next page") : "",
    at.trail.length ? el("button", { class: "previous-page", onclick: go({ after: at.trail[at.trail.length - 1], trail: at.trail.slice(0, -1) }) }, "Previous page") : "",
    at.after !== null ? el("button", { class: "first-page", onclick: go({ after: null, trail: [] }) }, "First page") : "");
}

/** A page of tasks or conversations, most recent first; a conversation whose id is one of
 * `tasks` (a task's handoffs make a conversation of the task's id) is left to the task list. */
function catalog(kind, page, tasks) {
  const isTask = (r) => kind === "conversation" && tasks && tasks.has(r.id);
  const sorted = [...page.items].filter((r) => !isTask(r)).sort((a, b) => (b.last_ms || 0) - (a.last_ms || 0));
  const left = page.items.length - sorted.length;
  return el("section", { id: `${kind}s` }, el("h2", {}, kind === "task" ? "Tasks" : "Conversations", count(page)),
    pager(`${kind}s`, page, HOME_PAGE, `${kind}s`),
    left ? el("p", { class: "also-tasks" }, `${left} conversation${left === 1 ? "" : "s"} of this page ${left === 1 ? "is a task" : "are tasks"} listed above, not repeated here.`) : "",
    sorted.length ? el("table", { class: "catalog" },
      el("thead", {}, el("tr", {}, el("th", {}, "id"), el("th", {}, "messages"), el("th", {}, "first"), el("th", {}, "last"))),
      el("tbody", {}, sorted.map((r) => el("tr", {},
        el("td", {}, el("a", { href: `#/${kind}/${encodeURIComponent(r.id)}` }, r.id)),
        el("td", {}, r.messages), el("td", {}, fmtTime(r.first_ms)), el("td", {}, fmtTime(r.last_ms))))))
      : left ? "" : el("p", { class: "empty" }, `No ${kind}s yet.`));
}

/** A page of pending confirmations with approve and reject. */
function confirmations(page) {
  const list = page.items;
  return el("section", { id: "confirmations" }, el("h2", {}, "Pending confirmations", count(page)),
    pager("confirmations", page, HOME_PAGE, "confirmations"),
    list.length ? list.map((c) => {
      const note = el("input", { class: "note", placeholder: "note (optional)" });
      const decide = (verdict) => async () => {
        try {
          await api("POST", `/v1/confirmations/${encodeURIComponent(c.id)}/${verdict}`, note.value ? { note: note.value } : {});
          status(`${verdict === "approve" ? "approved" : "rejected"} ${c.tool}`);
          render();
        } catch (e) { status(`could not ${verdict}: ${e.message}`); }
      };
      return el("article", { class: "confirmation", "data-id": c.id },
        el("p", {}, el("strong", { class: "tool" }, c.tool), ` asked by ${c.agent}`, c.task_id ? ` in task ${c.task_id}` : ""),
        el("p", { class: "call-id" }, `call ${c.call_id}`),
        el("pre", { class: "arguments" }, typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments, null, 2)),
        note, el("button", { class: "approve", onclick: decide("approve") }, "Approve"),
        el("button", { class: "reject", onclick: decide("reject") }, "Reject"));
    }) : el("p", { class: "empty" }, "Nothing waits for a person."));
}

/** When a dead letter became one, as a `time` element (nothing when the store did not say). */
function deadAt(ms) {
  if (typeof ms !== "number") return "";
  const iso = new Date(ms).toISOString();
  return el("time", { class: "dead-at", datetime: iso, title: "when it became a dead letter" }, `dead-lettered ${when(iso)}`);
}

/** One dead letter: the message, its time, when it died, sender → recipient, why, and Replay and Delete. */
function deadLetter(d) {
  const doc = d.message && typeof d.message === "object" ? d.message : {};
  const md = (doc.metadata && typeof doc.metadata === "object" && doc.metadata) || {};
  const claimed = md.sender_id || doc.name;
  // A document refused on publish is filed under who published it (the token's agent); what
  // it says of its sender is only a claim.
  const publisher = d.reason && d.reason.publisher;
  const sender = publisher || claimed;
  const recipient = md.recipient_id || doc.recipient;
  const type = (doc.payload && doc.payload.handoff_type) || (doc.role ? `${doc.role} message` : "");
  const act = (verb, method, path, done) => async () => {
    try { await api(method, path); status(`${done} ${d.message_id || d.id}`); }
    catch (e) { status(`${verb} refused: ${e.message}`); }
    render();
  };
  const id = encodeURIComponent(d.id);
  return el("article", { class: "dead-letter", "data-id": d.id },
    el("header", {}, el("strong", {}, d.message_id || "(no message id)"), type ? el("span", { class: "handoff-type" }, type) : "",
      md.timestamp ? el("time", { datetime: md.timestamp, title: "the message's own time" }, when(md.timestamp)) : "",
      deadAt(d.dead_at_ms)),
    el("p", {}, sender || recipient ? `${sender || "?"} → ${recipient || "?"}` : "",
      publisher && claimed && claimed !== publisher ? el("span", { class: "claimed-sender" }, ` (published by ${publisher}; the document claims ${claimed})`) : "",
      d.queue ? ` · taken from inbox ${d.queue}` : " · refused on publish",
      md.task_id ? el("a", { class: "task-link", href: `#/task/${encodeURIComponent(md.task_id)}` }, ` · task ${md.task_id}`) : ""),
    el("p", { class: "reason" }, reasonText(d.reason)),
    // An invalid document is refused again whatever is replayed: no Replay for it.
    d.reason && d.reason.kind === "invalid"
      ? el("span", { class: "no-replay" }, "not replayable: the document itself is invalid (publish a corrected one)")
      : el("button", { class: "replay", onclick: act("replay", "POST", `/v1/dead-letters/${id}/replay`, "replayed") }, "Replay"),
    el("button", { class: "delete", onclick: act("delete", "DELETE", `/v1/dead-letters/${id}`, "deleted") }, "Delete"));
}

/** A page of dead letters. */
function deadLetters(page) {
  const list = page.items;
  return el("section", { id: "dead-letters" }, el("h2", {}, "Dead letters", count(page)),
    pager("dead-letters", page, HOME_PAGE, "dead letters"),
    list.length ? list.map(deadLetter) : el("p", { class: "empty" }, "No dead letters."));
}

/** A list's size beside its heading, when the store counts it. */
const count = (page) => (typeof page.total === "number" ? el("span", { class: "count" }, ` ${page.total}`) : "");

/** A part of the home page that may fail on its own (e.g. an endpoint this server lacks); the
 * section `id` either way, so that a live change can draw it again alone. */
async function part(id, build, load) {
  try { return build(await load()); }
  catch (e) { if (e.status === 401) throw e; return el("section", { id }, el("p", { class: "error" }, e.message)); }
}

/** The home page's sections, each read a page at a time (never the whole list). */
const HOME_PARTS = {
  confirmations: () => part("confirmations", confirmations, () => api("GET", paged("confirmations", `/v1/confirmations?state=pending&limit=${HOME_PAGE}`))),
  "dead-letters": () => part("dead-letters", deadLetters, () => api("GET", paged("dead-letters", `/v1/dead-letters?limit=${HOME_PAGE}`))),
  tasks: () => part("tasks", (r) => catalog("task", r), () => api("GET", paged("tasks", `/v1/tasks?limit=${HOME_PAGE}`))),
  conversations: () => part("conversations", ([r, tasks]) => catalog("conversation", r, new Set(tasks.items.map((t) => t.id))),
    () => Promise.all([api("GET", paged("conversations", `/v1/conversations?limit=${HOME_PAGE}`)), api("GET", paged("tasks", `/v1/tasks?limit=${HOME_PAGE}`))])),
};

/** The home sections a change of `kind` (an event of GET /v1/events) may alter. */
const CHANGES = {
  published: ["tasks", "conversations"],
  acked: [],
  nacked: [],
  replayed: ["dead-letters", "tasks", "conversations"],
  confirmation: ["confirmations"],
  dead_lettered: ["dead-letters"],
};

/** The search form: one id, looked up as a task, conversation, correlation, inbox, dead letter. */
function searchForm(value) {
  const input = el("input", { id: "search", type: "search", placeholder: "task, message, correlation or agent id", "aria-label": "Search by id", autocomplete: "off", value: value || "" });
  return el("form", { id: "search-form", onsubmit: (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (q) location.hash = `#/search/${encodeURIComponent(q)}`;
  } }, input, el("button", { type: "submit" }, "Search"));
}

/** The home page: the search form and one page of each list (with its size). */
async function home() {
  const parts = await Promise.all(Object.values(HOME_PARTS).map((build) => build()));
  return el("div", { id: "home" }, searchForm(), parts);
}

/** A message found by its id: what it is, who sent it to whom, when the hub accepted it, and
 * the task it belongs to. */
function foundMessage(m, link) {
  const md = meta(m);
  const what = m.handoff_type || (m.message && m.message.role) || "message";
  return el("li", { class: "hit message", "data-id": m.id },
    `message ${m.id}: ${what}, ${m.sender || "?"} → ${m.recipients.join(", ")}, accepted `, timeOf(m),
    md.task_id ? [" in ", link("task", md.task_id, `task ${md.task_id}`)] : "");
}

/** What one id names (GET /v1/search), with links to the pages that show it. */
async function searchView(q) {
  const found = await api("GET", `/v1/search?q=${encodeURIComponent(q)}`);
  const n = (k) => (typeof k === "number" ? ` (${k} message${k === 1 ? "" : "s"})` : "");
  const link = (kind, id, text) => el("a", { href: `#/${kind}/${encodeURIComponent(id)}` }, text);
  const hits = [
    found.task && el("li", { class: "hit task" }, link("task", found.task.id, `task ${found.task.id}`), n(found.task.messages)),
    found.conversation && el("li", { class: "hit conversation" }, link("conversation", found.conversation.id, `conversation ${found.conversation.id}`)),
    found.correlation && el("li", { class: "hit correlation" }, `correlation ${found.correlation.id}${n(found.correlation.messages)}`,
      found.correlation.tasks.length ? [" in ", ...found.correlation.tasks.flatMap((t, i) => [i ? ", " : "", link("task", t, `task ${t}`)])] : ""),
    found.inbox && el("li", { class: "hit inbox" }, link("inbox", found.inbox.id, `inbox ${found.inbox.id}`),
      ` (${found.inbox.depth} unacknowledged)`),
    found.message && foundMessage(found.message, link),
  ].filter(Boolean);
  return el("div", { id: "search-results" },
    el("p", {}, el("a", { href: "#/" }, "← home")),
    searchForm(q),
    el("h2", {}, `Search ${q}`),
    hits.length ? el("ul", { class: "hits" }, hits) : "",
    found.dead_letters.length ? el("section", { id: "found-dead-letters" }, el("h3", {}, "Dead letters"), found.dead_letters.map(deadLetter)) : "",
    hits.length || found.dead_letters.length ? "" : el("p", { class: "empty" }, `Nothing is named ${q}: no task, conversation, correlation, inbox, message or dead letter.`));
}

/** Message ids asked about in one request (the server's limit). */
const IDS_PER_REQUEST = 100;

/** The dead letters of the messages `ids`, through the store's index by message id (a request
 * per 100 ids, however many dead letters there are). */
async function deadLettersOf(ids) {
  const letters = [];
  for (let i = 0; i < ids.length; i += IDS_PER_REQUEST) {
    const some = ids.slice(i, i + IDS_PER_REQUEST).join(",");
    letters.push(...(await api("GET", `/v1/dead-letters?message_id=${encodeURIComponent(some)}`)).items);
  }
  return letters;
}

/** Where each copy of a timeline's messages stands: a map of message id → recipient inbox →
 * `{kind: "waiting", waiting}` (from the inbox's listing, which claims nothing) or `{kind:
 * "dead", letter}` (the dead letters of the page's ids); a copy in neither was acknowledged
 * (`states.unknownQueues`: inboxes too deep, or unreadable, to tell). */
async function deliveryStates(messages) {
  const states = new Map();
  states.unknownQueues = new Set();
  const ids = new Set(messages.map((m) => m.id));
  const put = (id, queue, d) => {
    if (!states.has(id)) states.set(id, new Map());
    states.get(id).set(queue, d);
  };
  const queues = [...new Set(messages.flatMap((m) => m.recipients || []))];
  await Promise.all(queues.map(async (q) => {
    try {
      const { depth, messages: waiting } = await api("GET", `/v1/agents/${encodeURIComponent(q)}/inbox/messages?limit=${INBOX_LIMIT}`);
      for (const w of waiting) if (ids.has(w.id)) put(w.id, q, { kind: "waiting", waiting: w });
      if (depth > waiting.length) states.unknownQueues.add(q);
    } catch (e) {
      if (e.status === 401) throw e;
      states.unknownQueues.add(q);
    }
  }));
  const [letters, histories] = await Promise.all([deadLettersOf([...ids]), historiesOf([...ids])]);
  for (const d of letters) {
    if (d.queue && d.message_id && ids.has(d.message_id)) put(d.message_id, d.queue, { kind: "dead", letter: d });
  }
  states.history = histories;
  return states;
}

/** The delivery histories of message ids (a map of id → events, oldest first), a request per
 * hundred ids; an empty map when the server keeps none or cannot tell. */
async function historiesOf(ids) {
  const out = new Map();
  try {
    for (let i = 0; i < ids.length; i += IDS_PER_REQUEST) {
      const some = ids.slice(i, i + IDS_PER_REQUEST).map(encodeURIComponent).join(",");
      for (const h of (await api("GET", `/v1/deliveries?message_id=${some}`)).items) out.set(h.message_id, h.events);
    }
  } catch (e) {
    if (e.status === 401) throw e;
  }
  return out;
}

/** Dead letters read a request at a time when looking for a timeline's refused documents. */
const REFUSED_PAGE = 1000;

/** A button that looks through every dead letter, a page at a time and only when asked, for
 * documents refused on publish that belong to the timeline (`belongs(document)`); they never
 * entered it, so no index leads to them. Draws them, or says none were found. */
function refusedSearch(belongs) {
  const section = el("section", { class: "refused-search" });
  const run = async () => {
    const found = [];
    let after = null, read = 0;
    try {
      do {
        const page = await api("GET", `/v1/dead-letters?limit=${REFUSED_PAGE}${after === null ? "" : `&after=${encodeURIComponent(after)}`}`);
        for (const d of page.items) {
          const doc = d.message && typeof d.message === "object" ? d.message : null;
          if (!d.queue && doc && belongs(doc)) found.push(d);
        }
        read += page.items.length;
        section.replaceChildren(el("p", { class: "progress" }, `read ${read}${typeof page.total === "number" ? ` of ${page.total}` : ""} dead letters…`));
        after = page.next;
      } while (after);
    } catch (e) {
      section.replaceChildren(el("p", { class: "error" }, `could not read the dead letters: ${e.message}`));
      return;
    }
    section.replaceChildren(found.length
      ? el("ol", { class: "timeline refused" }, found.map((letter) => el("li", {}, refusedEntry(letter))))
      : el("p", { class: "empty" }, `No document of this timeline was refused on publish (${read} dead letters read).`));
  };
  section.append(el("button", { class: "find-refused", onclick: run }, "Look for documents refused on publish"));
  return section;
}

/** The timeline being shown, so that its page is kept while the same one is drawn again. */
let shownDetail = null;

/** One page of a task's or a conversation's timeline, with its totals and graph. */
async function detail(kind, id) {
  if (shownDetail !== `${kind}/${id}`) {
    shownDetail = `${kind}/${id}`;
    pages.delete("timeline");
  }
  const base = kind === "task" ? "tasks" : "conversations";
  const page = await api("GET", paged("timeline", `/v1/${base}/${encodeURIComponent(id)}/messages?limit=${TIMELINE_PAGE}`));
  const messages = page.items;
  await schemasLoaded;
  const key = kind === "task" ? "task_id" : "session_id";
  const states = await deliveryStates(messages);
  return el("div", { id: "detail", class: kind },
    el("p", {}, el("a", { href: "#/" }, "← home")),
    el("h2", {}, `${kind === "task" ? "Task" : "Conversation"} ${id}`),
    pager("timeline", page, TIMELINE_PAGE, "messages"),
    totals(messages), graph(messages, states), swimlanes(messages), el("h3", {}, "Timeline"),
    timeline(messages, states),
    page.next ? "" : refusedSearch((doc) => (doc.metadata || {})[key] === id));
}

/** Most messages of an inbox drawn at once (the server's limit). */
const INBOX_LIMIT = 1000;

/** A message's delivery state in words, with the time it is due when the store knows it. */
const stateText = (m) => m.state.replaceAll("_", " ") + (m.until_ms ? ` until ${fmtTime(m.until_ms)}` : "");

/** An inbox's unacknowledged messages in delivery order with their state, read without
 * claiming them (never from the inbox stream, which would count attempts). */
async function inboxView(agent) {
  const { depth, messages } = await api("GET", `/v1/agents/${encodeURIComponent(agent)}/inbox/messages?limit=${INBOX_LIMIT}`);
  const shown = depth > messages.length ? `; the first ${messages.length} shown` : "";
  return el("div", { id: "inbox" },
    el("p", {}, el("a", { href: "#/" }, "← home")),
    el("h2", {}, `Inbox ${agent}`),
    el("p", { class: "depth" }, `${depth} unacknowledged message${depth === 1 ? "" : "s"}${shown}`),
    messages.length ? el("table", { class: "catalog" },
      el("thead", {}, el("tr", {}, ["id", "priority", "state", "attempts", "from", "type"].map((h) => el("th", {}, h)))),
      el("tbody", {}, messages.map((m) => el("tr", { "data-id": m.id },
        el("td", {}, m.id),
        el("td", {}, el("span", { class: `priority ${String(m.priority).toLowerCase()}` }, m.priority)),
        el("td", { class: "state" }, stateText(m)),
        el("td", {}, m.attempts ?? "unknown"),
        el("td", {}, m.sender || ""),
        el("td", {}, m.handoff_type || "")))))
      : el("p", { class: "empty" }, "Nothing waits in this inbox."));
}

/** Fills the page's `[data-blob]` images and audio with bytes fetched with the token (a plain
 * `src` would carry none). */
let objectUrls = [];

async function loadMedia(root) {
  for (const node of root.querySelectorAll("[data-blob]")) {
    try {
      const r = await fetch(node.dataset.blob, { headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` } });
      if (!r.ok) throw new Error(`${r.status}`);
      const url = URL.createObjectURL(await r.blob());
      objectUrls.push(url);
      node.src = url;
    } catch (e) {
      node.replaceWith(el("span", { class: "error" }, `[media ${node.dataset.blob} not loaded: ${e.message}]`));
    }
  }
}

let rendering = Promise.resolve();
let queued = false;

/** The id of the message, dead letter or confirmation a node belongs to. */
const idOf = (node) => node.closest("[data-id]")?.dataset.id;

/** What a person was doing on the page: open disclosures, notes being typed. */
function keep() {
  return {
    open: [...document.querySelectorAll("details[open]")].map(idOf),
    notes: new Map([...document.querySelectorAll("input.note")].filter((i) => i.value).map((i) => [idOf(i), i.value])),
  };
}

/** Puts back what `keep` saw on the page drawn again. */
function restore(kept) {
  for (const d of main().querySelectorAll("details")) if (kept.open.includes(idOf(d))) d.open = true;
  for (const i of main().querySelectorAll("input.note")) if (kept.notes.has(idOf(i))) i.value = kept.notes.get(idOf(i));
}

/** Draws the page the address names: one drawing at a time, and changes that come during a
 * drawing make one more. */
function render() {
  if (queued) return rendering;
  queued = true;
  rendering = rendering.then(async () => {
    queued = false;
    if (!sessionStorage.getItem(TOKEN_KEY)) return tokenForm();
    const [, kind, id] = location.hash.match(/^#\/(task|conversation|inbox|search)\/(.+)$/) || [];
    try {
      const view = kind === "inbox" ? await inboxView(decodeURIComponent(id))
        : kind === "search" ? await searchView(decodeURIComponent(id))
        : kind ? await detail(kind, decodeURIComponent(id)) : await home();
      const kept = keep();
      main().replaceChildren(view);
      for (const url of objectUrls.splice(0)) URL.revokeObjectURL(url);
      restore(kept);
      loadMedia(view);
    } catch (e) {
      if (e.status === 401) tokenForm("That token was refused; enter the admin token.");
      else main().replaceChildren(el("p", { class: "error" }, e.message));
    }
  });
  return rendering;
}

/** The handoff data schemas, asked for once at start. */
const schemasLoaded = loadDataSchemas();

/** True while the home page is shown. */
const onHome = () => !/^#\/(task|conversation|inbox|search)\//.test(location.hash);

/** Draws again what a change of `kind` alters: on the home page only the sections it touches
 * (each read again alone), elsewhere the page. */
function changed(kind) {
  if (!onHome() || !(kind in CHANGES)) return render();
  const names = CHANGES[kind];
  if (!names.length) return rendering;
  rendering = rendering.then(async () => {
    if (!document.getElementById("home")) return;
    try {
      const fresh = await Promise.all(names.map((name) => HOME_PARTS[name]()));
      const kept = keep();
      fresh.forEach((node, i) => {
        const old = document.getElementById(names[i]);
        if (old) old.replaceWith(node);
      });
      restore(kept);
    } catch (e) {
      if (e.status === 401) tokenForm("That token was refused; enter the admin token.");
    }
  });
  return rendering;
}

let live = null;

/** Follows GET /v1/events (fetch, so the token goes in a header) and re-draws on each change. */
function startLive() {
  if (live) live.abort();
  live = new AbortController();
  const signal = live.signal;
  (async () => {
    while (!signal.aborted && sessionStorage.getItem(TOKEN_KEY)) {
      try {
        const r = await fetch("/v1/events", { headers: { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` }, signal });
        if (!r.ok) throw new Error(`events: ${r.status}`);
        document.getElementById("live").textContent = "live";
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const name = (/^event: ?(.*)$/m.exec(block) || [])[1];
            const data = (/^data: ?(.*)$/m.exec(block) || [])[1];
            let kind = null;
            try { kind = JSON.parse(data).kind; } catch (_) { /* draw everything again */ }
            if (name === "resync") render();
            else if (name === "change") changed(kind);
          }
        }
      } catch (e) { if (signal.aborted) return; }
      document.getElementById("live").textContent = "reconnecting";
      await new Promise((ok) => setTimeout(ok, 1000));
    }
  })();
}

window.addEventListener("hashchange", render);
document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    if (live) live.abort();
    render();
  });
  document.getElementById("inbox-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const agent = document.getElementById("inbox-agent").value.trim();
    if (agent) location.hash = `#/inbox/${encodeURIComponent(agent)}`;
  });
  if (sessionStorage.getItem(TOKEN_KEY)) startLive();
  render();
});
