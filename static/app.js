// Baton's status page: opens on what is busy (every contended key and busy
// group, from the list API), and polls the authenticated JSON API for one
// key, group or rate-limit bucket and draws what it answers, a key's or a
// group's recent holds and waits on a time line; a group's detail pauses and
// resumes it (contract §11). No framework and no build step, so the Worker
// can serve this file as it is.
//
// Every piece of data reaches the page through `textContent` (never
// innerHTML): keys, groups, revisions and ids are caller-chosen strings.
"use strict";

const POLL_MS = 1000;
// Inspecting a key can list up to 20,000 waiters; redrawing that many rows
// every second would make the page the bottleneck. The rest is counted.
const MAX_ROWS = 500;
// sessionStorage, not localStorage: the token lives as long as this tab, and
// is never written to the URL (so not to history, logs or a Referer).
const TOKEN_STORE = "baton.token";
const WATCH_STORE = "baton.watch";

const $ = (id) => document.getElementById(id);
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

let watch = null; // { kind: "overview" } | { kind: "key" | "group" | "debounce" | "run" | "bucket", name }
let data = null; // the last good answer for `watch`
let updatedAt = null; // when `data` arrived (browser clock)
let error = null; // the last poll's error message, or null
// Bumped on every new watch, so an answer to an older one is dropped
// instead of being drawn under the new name.
let generation = 0;
let timer = null;

// --- formatting ----------------------------------------------------------

/** "45 s", "3 min 2 s", "5 h 10 min", "2 d 3 h". */
function duration(ms) {
  // The times are stamped by the Worker's clock; a browser clock running a
  // little behind must not show a negative wait.
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** A <time> showing "x ago" and the absolute time, both visible. */
function timeElement(ms, { ago = true } = {}) {
  const el = document.createElement("time");
  if (typeof ms !== "number") {
    el.textContent = "—";
    return el;
  }
  const date = new Date(ms);
  el.dateTime = date.toISOString();
  el.textContent = ago
    ? `${duration(Date.now() - ms)} ago (${absolute.format(date)})`
    : absolute.format(date);
  return el;
}

// The overview reads at most this many pages of each list (of 500): the
// longest waits among 2,000 keys and 2,000 groups, and a count of the rest.
const OVERVIEW_PAGES_MAX = 4;
const OVERVIEW_PAGE = 500;
// The time line draws at most this many instances (the latest), and at
// most this far back.
const TIMELINE_ROWS_MAX = 24;
const TIMELINE_SPAN_MS_MAX = 24 * 3600 * 1000;
const TIMELINE_SPAN_MS_MIN = 10 * 1000;

const OUTCOMES = {
  released: "released",
  dead: "holder found dead",
  superseded: "superseded (skipped)",
  timed_out: "timed out",
  abandoned: "abandoned",
  cancelled: "holder cancelled (terminated)",
};

// --- the two API shapes, made one ------------------------------------------

/**
 * Key (Coordinator inspect) and group (serialInspect) answers differ in
 * names; the drawing code sees one shape. A group's holder has no "since",
 * only its last heartbeat, so that is what its row is labelled.
 */
function normalize(kind, body) {
  if (kind === "bucket") {
    return {
      holder: null,
      waiting: [],
      superseded: null,
      recent: [],
      cooldownUntil: body.cooldownUntil ?? null,
      rules: body.rules ?? [],
    };
  }
  if (kind === "run" || kind === "debounce" || kind === "overview") return body;
  if (kind === "key") {
    const holders = body.holders ?? (body.holder ? [body.holder] : []);
    return {
      holder: body.holder && { id: body.holder.id, at: body.holder.since, atLabel: "Holding since" },
      holders: holders.map((h) => ({ id: h.id, since: h.since, cancelling: h.cancelling === true })),
      limit: body.limit ?? 1,
      limitOverride: body.limitOverride ?? null,
      paused: body.paused ?? null,
      waiting: (body.waiting ?? []).map((w) => ({ id: w.id, since: w.since, detail: w.inputHash ?? "" })),
      superseded: body.superseded ?? 0,
      recent: [],
      keyRecent: body.recent ?? [],
      counts: body.counts ?? null,
      state: body.state ?? null,
      waits: body.waits ?? null,
      checks: holders.map((h) => ({ id: h.id, since: h.since, checked: h.checked ?? null })),
    };
  }
  return {
    holder: body.holder && {
      id: body.holder.instanceId,
      revision: body.holder.revision,
      at: body.holder.heartbeatAt,
      atLabel: "Last heartbeat",
    },
    holders: body.holder ? [{ id: body.holder.instanceId, since: body.holder.heartbeatAt }] : [],
    waiting: (body.waiting ?? []).map((w) => ({ id: w.instanceId, since: w.enqueuedAt, detail: w.revision })),
    superseded: null,
    recent: body.recent ?? [],
    keyRecent: [],
    counts: null,
    paused: body.paused ?? null,
    state: body.state ?? null,
    waits: body.waits ?? null,
  };
}

// --- fetching --------------------------------------------------------------

/** What a failed call means to the person at the page. */
function describe(status, message) {
  const detail = message ? `: ${message}` : "";
  switch (status) {
    case 401:
      return "Token rejected (401): check the API token.";
    case 503:
      return "API not configured (503): the Worker has no BATON_TOKEN secret set.";
    case 400:
      return `Bad request (400)${detail}`;
    case 404:
      return `Not found (404)${detail}. Is this Worker's HTTP API deployed?`;
    default:
      return `The API answered ${status}${detail}`;
  }
}

/** One API call: GET without a body, or POST (or `method`) with `body` as JSON. */
async function api(path, token, body, method = body === undefined ? "GET" : "POST") {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      // A hung request must not freeze the page: the next poll starts after
      // this one ends.
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    throw new Error(`Cannot reach the API (${e.message}).`);
  }
  let reply = null;
  try {
    reply = await response.json();
  } catch {
    // Not JSON: described by status alone below.
  }
  if (response.ok && reply && typeof reply === "object") return reply;
  throw new Error(describe(response.status, typeof reply?.error === "string" ? reply.error : ""));
}

// A run's events as the page has read them: the newest RUN_EVENTS_KEPT,
// read on from `latestSeq` at each poll, so a poll reads only what is new.
const RUN_EVENTS_KEPT = 500;

/** The first pages of a list (`v1/keys` or `v1/groups`): its entries, and whether more follow. */
async function fetchList(path, field, token) {
  const entries = [];
  let cursor = null;
  for (let page = 0; page < OVERVIEW_PAGES_MAX; page++) {
    const query = new URLSearchParams({ limit: String(OVERVIEW_PAGE) });
    if (cursor) query.set("cursor", cursor);
    const reply = await api(`${path}?${query}`, token);
    entries.push(...reply[field]);
    cursor = reply.cursor;
    if (cursor === null) break;
  }
  return { entries, more: cursor !== null };
}

/** Busy keys and groups as one list, the longest wait first. */
async function fetchOverview(token) {
  const [keys, groups] = await Promise.all([fetchList("v1/keys", "keys", token), fetchList("v1/groups", "groups", token)]);
  const rows = [
    ...keys.entries.map((k) => ({
      kind: "key",
      name: k.key,
      state: k.state,
      held: `${k.holders} of ${k.limit}`,
      paused: k.paused === true,
      holders: k.holders,
      waiting: k.waiting,
      wait: k.oldestWaitMs,
    })),
    ...groups.entries.map((g) => ({
      kind: "group",
      name: g.group,
      state: g.state,
      held: g.holder ?? "nobody",
      holders: g.holder ? 1 : 0,
      paused: g.paused === true,
      waiting: g.waiting,
      wait: g.oldestWaitMs,
    })),
  ];
  rows.sort((a, b) => b.wait - a.wait || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { rows, keys: keys.entries.length, groups: groups.entries.length, moreKeys: keys.more, moreGroups: groups.more };
}

async function fetchView({ kind, name }, token) {
  if (kind === "overview") return fetchOverview(token);
  // Relative to the page, so a Worker mounted under a path still works. The
  // name is one path segment: encodeURIComponent also escapes "/" and "?".
  const segment = encodeURIComponent(name);
  const prefix = { key: "v1/keys/", group: "v1/groups/", bucket: "v1/buckets/", debounce: "v1/debounce/" }[kind];
  if (kind !== "run") return api(`${prefix}${segment}`, token);
  const state = await api(`v1/runs/${segment}/await`, token, { timeoutMs: 0 });
  const previous = data?.run ? data : null;
  let after = previous?.cursor ?? 0;
  let events = previous?.events ?? [];
  let read = await api(`v1/runs/${segment}/events`, token, { after, limit: RUN_EVENTS_KEPT });
  if (read.latestSeq < after) {
    // The record was deleted (retention) and a new log began: read it from the start.
    events = [];
    after = 0;
    read = await api(`v1/runs/${segment}/events`, token, { after, limit: RUN_EVENTS_KEPT });
  }
  events = [...events, ...read.events].slice(-RUN_EVENTS_KEPT);
  const cursor = read.events.at(-1)?.seq ?? after;
  return { run: true, state, events, cursor, firstSeq: read.firstSeq };
}

async function poll() {
  clearTimeout(timer);
  timer = null;
  if (!watch) return;
  // Poll only while someone can see the page; visibilitychange resumes it.
  if (document.visibilityState !== "visible") return;
  const mine = generation;
  const token = $("token").value;
  let next = null;
  let failure = null;
  if (!token) {
    failure = "Type the API token to start.";
  } else {
    try {
      next = normalize(watch.kind, await fetchView(watch, token));
    } catch (e) {
      failure = e.message;
    }
  }
  if (mine !== generation) return; // a newer watch took over meanwhile
  if (next) {
    data = next;
    updatedAt = Date.now();
  }
  error = failure;
  render();
  timer = setTimeout(poll, POLL_MS);
}

// --- drawing ---------------------------------------------------------------

/** Appends a cell; `classes` is a space-separated class list ("mono" for ids). */
function cell(row, content, { header = false, classes = "" } = {}) {
  const td = document.createElement(header ? "th" : "td");
  if (header) td.scope = "row";
  if (classes) td.className = classes;
  if (content instanceof Node) td.append(content);
  else td.textContent = content;
  row.append(td);
  return td;
}

/** Fills a tbody with at most MAX_ROWS rows, then one "and n more" row. */
function fillRows(tbody, items, columns, draw) {
  const rows = items.slice(0, MAX_ROWS).map((item, i) => {
    const tr = document.createElement("tr");
    draw(tr, item, i);
    return tr;
  });
  if (items.length > MAX_ROWS) {
    const tr = document.createElement("tr");
    const td = cell(tr, `… and ${items.length - MAX_ROWS} more`);
    td.colSpan = columns;
    rows.push(tr);
  }
  tbody.replaceChildren(...rows);
}

function renderStatus() {
  // Rewrite the alert only when its text changes, so a screen reader
  // announces an error once, not every second.
  const box = $("error");
  const text = error ?? "";
  if (box.textContent !== text) box.textContent = text;
  box.hidden = !error;

  const updated = $("updated");
  updated.classList.toggle("stale", Boolean(error));
  if (!watch) {
    updated.textContent = "Type the API token to see what is busy, or a key, group or bucket, then Watch.";
  } else if (updatedAt === null) {
    updated.textContent = error ? "No data yet." : "Loading…";
  } else {
    const ago = duration(Date.now() - updatedAt);
    const when = absolute.format(new Date(updatedAt));
    updated.textContent = `${error ? "Last good update" : "Updated"} ${when} (${ago} ago).`;
  }
}

const EDGES = {
  trailing: "trailing (one start when the burst ends)",
  leading: "leading (started at the first call; this start is a trailing one)",
  both: "both (leading, plus this trailing start)",
  at: "at (a deferred start)",
};

/** "in 3 s (time)" for a time ahead, "due now" once it has passed. */
function fireElement(ms) {
  const el = timeElement(ms, { ago: false });
  const ahead = ms - Date.now();
  el.textContent = `${ahead > 0 ? `in ${duration(ahead)}` : "due now"} (${el.textContent})`;
  return el;
}

function renderDebounce() {
  const { pending, started, retrying } = data;
  $("debounce-title").textContent = `Debounce key “${watch.name}”`;
  $("pending").hidden = !pending;
  $("pending-none").hidden = Boolean(pending);
  if (pending) {
    $("pending-id").textContent = pending.instanceId;
    $("pending-edge").textContent = EDGES[pending.edge] ?? pending.edge;
    $("pending-workflow").textContent = pending.workflow;
    $("pending-calls").textContent = String(pending.calls);
    $("pending-first").replaceChildren(timeElement(pending.firstAt));
    $("pending-last").replaceChildren(timeElement(pending.lastAt));
    $("pending-fire").replaceChildren(fireElement(pending.fireAt));
  }
  fillRows($("retrying").tBodies[0], retrying ?? [], 5, (tr, r) => {
    cell(tr, r.instanceId, { header: true, classes: "mono" });
    cell(tr, r.workflow, { classes: "mono" });
    cell(tr, String(r.failures));
    cell(tr, fireElement(r.nextTryAt));
    cell(tr, r.lastError ?? "", { classes: "mono" });
  });
  $("retrying").hidden = !retrying?.length;
  fillRows($("started").tBodies[0], started, 2, (tr, s) => {
    cell(tr, s.instanceId, { header: true, classes: "mono" });
    cell(tr, timeElement(s.at));
  });
  $("started").hidden = started.length === 0;
  $("started-none").hidden = started.length > 0;
}

const RUN_STATES = {
  none: "none (nobody has claimed it)",
  running: "running",
  complete: "complete",
  failed: "failed",
};

function renderRun() {
  const { state, events, firstSeq } = data;
  $("run-title").textContent = `Run “${watch.name}”`;
  $("run-state").textContent = RUN_STATES[state.state] ?? state.state;
  $("run-state").className = `outcome ${state.state}`;
  $("run-claimant").textContent = state.instanceId ?? "—";
  const finished = state.state === "complete" || state.state === "failed";
  $("run-outcome-label").hidden = $("run-outcome").hidden = !finished;
  $("run-outcome-label").textContent = state.state === "failed" ? "Error" : "Result";
  const outcome = state.state === "failed" ? state.error : state.result;
  $("run-outcome").firstElementChild.textContent =
    outcome === undefined ? "(none)" : typeof outcome === "string" ? outcome : JSON.stringify(outcome, null, 2);
  fillRows($("run-events").tBodies[0], events, 4, (tr, e) => {
    cell(tr, String(e.seq), { header: true });
    cell(tr, timeElement(e.at, { ago: false }));
    cell(tr, e.type, { classes: "mono" });
    cell(tr, e.data === null ? "" : JSON.stringify(e.data), { classes: "mono" });
  });
  $("run-events").hidden = events.length === 0;
  $("run-events-none").hidden = events.length > 0;
  const missed = events.length > 0 && events[0].seq > 1 ? events[0].seq - 1 : 0;
  $("run-events-missed").hidden = missed === 0;
  $("run-events-missed").textContent = `${missed} older event${missed === 1 ? "" : "s"} not shown (the run keeps events from ${firstSeq} on).`;
}

/** A link to the detail of a key or group, which watches it when followed. */
function detailLink(kind, name) {
  const a = document.createElement("a");
  a.href = "#";
  a.textContent = name;
  a.className = "mono";
  a.addEventListener("click", (event) => {
    event.preventDefault(); // the name never goes into the URL
    $("kind").value = kind;
    $("name").value = name;
    labelName();
    start({ kind, name });
  });
  return a;
}

/** A wait as text and as a bar whose length is its share of the longest. */
function waitCell(ms, longest) {
  const wrap = document.createElement("span");
  wrap.className = "wait";
  const bar = document.createElement("span");
  bar.className = "wait-bar";
  bar.style.width = `${longest > 0 ? Math.max(2, Math.round((ms / longest) * 100)) : 0}%`;
  const text = document.createElement("span");
  text.textContent = ms > 0 ? duration(ms) : "—";
  wrap.append(bar, text);
  return wrap;
}

/** §10a: a state as the page words it (its colour comes from the class `state <name>`). */
const STATE_LABELS = {
  paused: "paused",
  stalled: "stalled",
  backlogged: "backlogged",
  at_capacity: "at capacity",
  active: "active",
  idle: "idle",
};

/** A state badge: its words, coloured by its class. */
function stateBadge(state) {
  const badge = document.createElement("span");
  badge.className = `state ${state ?? "unknown"}`;
  badge.textContent = STATE_LABELS[state] ?? state ?? "—";
  return badge;
}

/** "running, checked 3 s ago", or that Baton has not asked yet. */
function checkedText(checked) {
  if (!checked) return "not checked yet";
  const status = checked.status === "failed" ? "check failed (threw or timed out)" : checked.status.replaceAll("_", " ");
  return `${status}, checked ${duration(Date.now() - checked.at)} ago`;
}

function renderOverview() {
  const { keys, groups, moreKeys, moreGroups } = data;
  const only = $("state-filter").value;
  const rows = only ? data.rows.filter((r) => r.state === only) : data.rows;
  const plural = (n, one) => `${n} ${one}${n === 1 ? "" : "s"}`;
  $("overview-summary").textContent =
    `${plural(keys, "key")}${moreKeys ? "+" : ""} and ${plural(groups, "group")}${moreGroups ? "+" : ""} busy` +
    (rows.length ? `; the longest wait is ${duration(rows[0].wait)}.` : ".");
  const longest = rows.reduce((m, r) => Math.max(m, r.wait), 0);
  fillRows($("busy").tBodies[0], rows, 6, (tr, r) => {
    const kind = cell(tr, r.kind === "key" ? "key" : "group");
    if (r.paused) {
      const badge = document.createElement("span");
      badge.className = "paused-badge";
      badge.textContent = " (paused)";
      kind.append(badge);
    }
    cell(tr, detailLink(r.kind, r.name), { header: true });
    cell(tr, r.held, { classes: r.kind === "group" && r.holders ? "mono" : "" });
    cell(tr, String(r.waiting), { classes: r.waiting ? "waiting-count" : "" });
    cell(tr, waitCell(r.wait, longest));
    cell(tr, stateBadge(r.state));
    tr.classList.add(`state-${r.state}`);
    if (r.kind === "key" && r.waiting === 0) tr.classList.add("dead-only");
    if (r.paused) tr.classList.add("paused");
  });
  $("busy").hidden = rows.length === 0;
  $("busy-none").hidden = rows.length > 0;
  const more = [moreKeys && "keys", moreGroups && "groups"].filter(Boolean);
  $("busy-more").hidden = more.length === 0;
  $("busy-more").textContent = `Only the first ${OVERVIEW_PAGES_MAX * OVERVIEW_PAGE} ${more.join(" and ")} (by name) are read here; the API pages through the rest (GET /v1/keys, /v1/groups with cursor).`;
}

// --- the time line -----------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(name, attributes = {}, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * The instances of a key or group as rows of segments on one time axis:
 * each current holder from its grant (a group's, from its last heartbeat)
 * to now, each waiter from its arrival to now, each recent hold of a key
 * from its grant to its end with the wait before it, and each finished run
 * of a group as a mark when it ended.
 */
function timelineRows(now) {
  const rows = new Map();
  const row = (id) => {
    if (!rows.has(id)) rows.set(id, { id, segments: [], marks: [], first: Infinity, last: -Infinity });
    return rows.get(id);
  };
  const add = (id, from, to, kind) => {
    const r = row(id);
    r.segments.push({ from, to, kind });
    r.first = Math.min(r.first, from);
    r.last = Math.max(r.last, to);
  };
  for (const r of data.keyRecent ?? []) {
    if (r.waited > 0) add(r.id, r.from - r.waited, r.from, "waited");
    // A cancelled hold (contract §1d) ends with a mark where its slot went on.
    add(r.id, r.from, r.to, r.cancelled ? "cancelled" : r.outcome === "dead" ? "dead" : "released");
    if (r.cancelled) row(r.id).marks.push({ at: r.to, kind: "cancelled", label: OUTCOMES.cancelled });
  }
  for (const r of data.recent ?? []) {
    const m = row(r.instanceId);
    m.marks.push({ at: r.finishedAt, kind: r.outcome === "released" ? "released" : "ended", label: OUTCOMES[r.outcome] ?? r.outcome });
    m.first = Math.min(m.first, r.finishedAt);
    m.last = Math.max(m.last, r.finishedAt);
  }
  for (const h of data.holders ?? []) add(h.id, h.since, now, h.cancelling ? "cancelling" : "holding");
  for (const w of data.waiting ?? []) add(w.id, w.since, now, "waiting");
  return [...rows.values()].sort((a, b) => a.first - b.first).slice(-TIMELINE_ROWS_MAX);
}

function renderTimeline() {
  const el = $("timeline");
  const now = Date.now();
  const rows = timelineRows(now);
  $("timeline-figure").hidden = rows.length === 0;
  if (rows.length === 0) {
    el.replaceChildren();
    return;
  }
  const earliest = Math.min(...rows.map((r) => r.first));
  const span = Math.min(TIMELINE_SPAN_MS_MAX, Math.max(TIMELINE_SPAN_MS_MIN, (now - earliest) * 1.05));
  const start = now - span;
  const width = 1000;
  const label = 230;
  const rowHeight = 24;
  const top = 8;
  const axis = 30;
  const height = top + rows.length * rowHeight + axis;
  const x = (t) => label + ((Math.max(t, start) - start) / span) * (width - label - 10);
  el.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const parts = [];
  // The axis: five ticks, labelled by how long ago.
  for (let i = 0; i <= 4; i++) {
    const t = start + (span * i) / 4;
    const at = x(t);
    parts.push(svg("line", { x1: at, x2: at, y1: top, y2: height - axis + 4, class: "tick" }));
    parts.push(svg("text", { x: at, y: height - axis + 18, "text-anchor": i === 4 ? "end" : "middle", class: "axis" }, i === 4 ? "now" : `${duration(now - t)} ago`));
  }
  rows.forEach((r, i) => {
    const y = top + i * rowHeight;
    const name = r.id.length > 28 ? `${r.id.slice(0, 27)}…` : r.id;
    const text = svg("text", { x: label - 8, y: y + rowHeight / 2 + 4, "text-anchor": "end", class: "who" }, name);
    text.append(svg("title", {}, r.id));
    parts.push(text);
    for (const seg of r.segments) {
      const x1 = x(seg.from);
      const x2 = Math.max(x(seg.to), x1 + 2);
      const rect = svg("rect", { x: x1, y: y + 4, width: x2 - x1, height: rowHeight - 8, rx: 3, class: `seg ${seg.kind}` });
      rect.append(svg("title", {}, `${r.id}: ${SEGMENT_LABELS[seg.kind]} ${duration(seg.to - seg.from)} (${absolute.format(new Date(seg.from))} to ${seg.to >= now ? "now" : absolute.format(new Date(seg.to))})`));
      parts.push(rect);
    }
    for (const m of r.marks) {
      const at = x(m.at);
      const cy = y + rowHeight / 2;
      const mark = svg("path", { d: `M ${at} ${cy - 7} L ${at + 7} ${cy} L ${at} ${cy + 7} L ${at - 7} ${cy} Z`, class: `mark ${m.kind}` });
      mark.append(svg("title", {}, `${r.id}: ${m.label} at ${absolute.format(new Date(m.at))}`));
      parts.push(mark);
    }
  });
  // §11: a paused key's pause, as a band across every row from its start.
  if (data.paused) {
    const x1 = x(data.paused.since);
    const band = svg("rect", { x: x1, y: top, width: Math.max(x(now) - x1, 2), height: height - axis - top, class: "band paused" });
    band.append(svg("title", {}, `paused by an operator since ${absolute.format(new Date(data.paused.since))}`));
    parts.unshift(band);
    parts.push(svg("text", { x: x(now) - 4, y: top + 12, "text-anchor": "end", class: "band-label" }, "paused"));
  }
  parts.push(svg("line", { x1: x(now), x2: x(now), y1: top, y2: height - axis + 4, class: "now" }));
  el.replaceChildren(...parts);
}

const SEGMENT_LABELS = {
  holding: "holding for",
  waiting: "waiting for",
  waited: "waited",
  released: "held (released) for",
  dead: "held (found dead) for",
  cancelling: "holding, being cancelled, for",
  cancelled: "held (cancelled, then terminated) for",
};

/** §11: whether the key is paused, and the limit in force, beside the operator's controls. */
function renderSteer() {
  const paused = data.paused;
  $("paused-banner").hidden = !paused;
  if (paused) {
    $("paused-banner").replaceChildren(
      "Paused by an operator ",
      timeElement(paused.since),
      paused.reason ? `: ${paused.reason}` : "",
      ". Nobody is handed the key until it is resumed.",
    );
  }
  $("limit-now").textContent =
    data.limitOverride === null ? `limit ${data.limit} (the callers')` : `limit ${data.limit} (operator's override)`;
}

/** Runs one steering call on the watched key, then polls at once to show what it did. */
async function steer(path, body, method) {
  const token = $("token").value;
  if (watch?.kind !== "key" || !token) return;
  const result = $("steer-result");
  try {
    const reply = await api(`v1/keys/${encodeURIComponent(watch.name)}/${path}`, token, body, method);
    result.textContent =
      path === "resume"
        ? `Resumed; handed on to: ${reply.granted.length ? reply.granted.join(", ") : "nobody"}.`
        : path === "limit"
          ? reply.override === null
            ? "Override cleared: the callers' limit applies."
            : `Override set to ${reply.override}.`
          : "Paused.";
  } catch (e) {
    result.textContent = e.message;
  }
  poll();
}

/**
 * §10a on a key's or a group's detail: its state, its wait figures, and
 * (a key's) each holder's last check. A group's waits are its waiters' so
 * far: its finished runs do not keep how long they waited.
 */
function renderHealth(group) {
  $("health-state").replaceWith(Object.assign(stateBadge(data.state), { id: "health-state" }));
  const waits = data.waits;
  const over = group ? `over ${waits?.n} waiting now` : `over ${waits?.n}: recent holds and those waiting now`;
  $("health-waits").textContent =
    waits && waits.n > 0
      ? `Waits: p50 ${duration(waits.p50Ms)}, p95 ${duration(waits.p95Ms)} (${over}).`
      : "Waits: none recorded yet.";
  fillRows($("holders").tBodies[0], data.checks ?? [], 3, (tr, h) => {
    cell(tr, h.id, { header: true, classes: "mono" });
    cell(tr, timeElement(h.since));
    cell(tr, checkedText(h.checked), { classes: h.checked?.status === "failed" ? "check-failed" : "" });
  });
  $("holders").hidden = !data.checks?.length;
}

function renderKeyHistory() {
  const recent = data.keyRecent ?? [];
  fillRows($("key-recent").tBodies[0], recent, 6, (tr, r) => {
    cell(tr, r.id, { header: true });
    cell(tr, String(r.fence));
    cell(tr, duration(r.waited));
    cell(tr, duration(r.to - r.from));
    cell(tr, timeElement(r.to));
    const outcome = r.cancelled ? "cancelled" : r.outcome;
    cell(tr, OUTCOMES[outcome] ?? outcome, { classes: `outcome ${outcome}` });
  });
  $("key-recent").hidden = recent.length === 0;
  const counts = data.counts;
  $("counts").hidden = !counts;
  if (counts) {
    $("counts").textContent =
      `Since the key's object was created: ${counts.grants} grants, ${counts.handOffs} hand-offs, ` +
      `${counts.deadHolders} dead holders, ${counts.superseded} superseded, ${counts.coalesced} coalesced, ` +
      `${counts.cancelled ?? 0} cancelled.`;
  }
}

function render() {
  renderStatus();
  const view = $("view");
  const runView = $("run-view");
  const debounceView = $("debounce-view");
  const overview = $("overview");
  if (!watch || !data) {
    view.hidden = true;
    runView.hidden = true;
    debounceView.hidden = true;
    overview.hidden = true;
    return;
  }
  overview.hidden = watch.kind !== "overview";
  runView.hidden = watch.kind !== "run";
  debounceView.hidden = watch.kind !== "debounce";
  view.hidden = ["run", "debounce", "overview"].includes(watch.kind);
  if (watch.kind === "overview") {
    renderOverview();
    return;
  }
  if (watch.kind === "debounce") {
    renderDebounce();
    return;
  }
  if (watch.kind === "run") {
    renderRun();
    return;
  }
  view.hidden = false;
  const group = watch.kind === "group";
  // CSS shows the key-only or group-only parts from this.
  view.dataset.kind = watch.kind;
  $("view-title").textContent = `${KIND_LABELS[watch.kind]} “${watch.name}”`;
  if (watch.kind === "bucket") {
    renderBucket();
    return;
  }

  const { holder } = data;
  $("holder").hidden = !holder;
  $("holder-none").hidden = Boolean(holder);
  if (holder) {
    $("holder-id").textContent = holder.id;
    $("holder-revision-label").hidden = $("holder-revision").hidden = !group;
    $("holder-revision").textContent = holder.revision ?? "";
    $("holder-since-label").textContent = holder.atLabel;
    $("holder-since").replaceChildren(timeElement(holder.at));
  }

  const now = Date.now();
  fillRows($("waiting").tBodies[0], data.waiting, 5, (tr, w, i) => {
    cell(tr, String(i + 1), { header: true });
    cell(tr, w.id, { classes: "mono" });
    cell(tr, w.detail, { classes: `mono ${group ? "group-only" : "key-only"}` });
    cell(tr, timeElement(w.since, { ago: false }));
    cell(tr, duration(now - w.since));
  });
  $("waiting").hidden = data.waiting.length === 0;
  $("waiting-none").hidden = data.waiting.length > 0;

  if (group) renderGroupSteer();
  $("superseded-count").textContent = String(data.superseded ?? 0);
  if (!group) renderSteer();
  renderHealth(group);
  renderKeyHistory();
  renderTimeline();

  fillRows($("recent").tBodies[0], data.recent, 5, (tr, r) => {
    cell(tr, r.instanceId, { header: true });
    cell(tr, r.revision, { classes: "mono" });
    cell(tr, OUTCOMES[r.outcome] ?? r.outcome, { classes: `outcome ${r.outcome}` });
    const by = r.supersededBy;
    cell(tr, by ? `${by.instanceId} (revision ${by.revision})` : "", { classes: "mono" });
    cell(tr, timeElement(r.finishedAt));
  });
  $("recent").hidden = data.recent.length === 0;
  $("recent-none").hidden = !group || data.recent.length > 0;
}

/** A group's pause (contract §11), and whether Resume has anything to do. */
function renderGroupSteer() {
  const state = $("group-paused-state");
  const { paused } = data;
  state.classList.toggle("paused", Boolean(paused));
  if (paused) {
    const reason = paused.reason ? ` Reason: “${paused.reason}”.` : "";
    state.replaceChildren("Paused since ", timeElement(paused.since), `: no claim succeeds and nobody is handed the group.${reason}`);
  } else {
    state.textContent = "Not paused: claims and hand-offs run as usual.";
  }
  $("group-resume").disabled = !paused;
}

/** Pauses (with the reason typed, if any) or resumes the watched group, then polls. */
async function steerGroup(action) {
  const result = $("group-steer-result");
  if (watch?.kind !== "group") return;
  const name = watch.name;
  const path = `v1/groups/${encodeURIComponent(name)}/${action}`;
  const reason = $("group-pause-reason").value;
  const body = action === "pause" && reason ? { reason } : {};
  try {
    const reply = await api(path, $("token").value, body);
    result.textContent =
      action === "pause"
        ? `Paused “${name}”.`
        : reply.granted
          ? `Resumed “${name}”: the group went on to ${reply.granted}.`
          : `Resumed “${name}”: nobody was handed the group.`;
  } catch (e) {
    result.textContent = `Could not ${action} “${name}”: ${e.message}`;
  }
  result.hidden = false;
  poll();
}

/** A bucket: the cooldown while it lasts, and each rule's use of its window. */
function renderBucket() {
  const now = Date.now();
  const cooldown = $("cooldown");
  if (typeof data.cooldownUntil === "number" && data.cooldownUntil > now) {
    cooldown.replaceChildren(
      `Penalized: no grants for ${duration(data.cooldownUntil - now)}, until `,
      timeElement(data.cooldownUntil, { ago: false }),
      ".",
    );
  } else {
    cooldown.textContent = "No penalty in force.";
  }
  fillRows($("rules").tBodies[0], data.rules, 5, (tr, r) => {
    const full = r.used >= r.limit;
    cell(tr, r.id, { header: true, classes: "mono" });
    cell(tr, String(r.limit));
    cell(tr, duration(r.windowMs) === "0 s" ? `${r.windowMs} ms` : duration(r.windowMs));
    cell(tr, `${r.used} of ${r.limit}`, { classes: full ? "full" : "" });
    cell(tr, r.nextFreeAt <= now ? "now" : `in ${duration(r.nextFreeAt - now)}`, { classes: full ? "full" : "" });
  });
  $("rules").hidden = data.rules.length === 0;
  $("rules-none").hidden = data.rules.length > 0;
}

// --- wiring ----------------------------------------------------------------

const KIND_LABELS = { key: "Key", group: "Group", debounce: "Debounce key", run: "Run key", bucket: "Bucket" };
/** What a saved watch may be: one of the kinds, or the overview. */
const WATCHABLE = new Set([...Object.keys(KIND_LABELS), "overview"]);

function labelName() {
  $("name-label").textContent = KIND_LABELS[$("kind").value] ?? "Key";
}

function start(next) {
  watch = next;
  data = null;
  updatedAt = null;
  error = null;
  generation += 1;
  $("group-steer-result").hidden = true;
  sessionStorage.setItem(WATCH_STORE, JSON.stringify(watch));
  render();
  poll();
}

document.addEventListener("DOMContentLoaded", () => {
  const token = $("token");
  token.value = sessionStorage.getItem(TOKEN_STORE) ?? "";
  token.addEventListener("input", () => {
    if (token.value) sessionStorage.setItem(TOKEN_STORE, token.value);
    else sessionStorage.removeItem(TOKEN_STORE);
  });

  $("kind").addEventListener("change", labelName);
  $("pause").addEventListener("click", () => {
    const reason = $("pause-reason").value;
    steer("pause", reason ? { reason } : {});
  });
  $("resume").addEventListener("click", () => steer("resume", {}));
  $("set-limit").addEventListener("click", () => steer("limit", { limit: Number($("limit").value) }, "PUT"));
  $("clear-limit").addEventListener("click", () => steer("limit", { limit: null }, "PUT"));
  $("group-steer-form").addEventListener("submit", (event) => {
    event.preventDefault(); // the reason never goes into a URL
    steerGroup("pause");
  });
  $("group-resume").addEventListener("click", () => steerGroup("resume"));
  $("state-filter").addEventListener("change", () => {
    if (watch?.kind === "overview" && data) renderOverview();
  });
  $("show-overview").addEventListener("click", (event) => {
    event.preventDefault();
    start({ kind: "overview" });
  });
  $("watch-form").addEventListener("submit", (event) => {
    event.preventDefault(); // never a navigation: nothing typed goes into a URL
    const name = $("name").value;
    if (name) start({ kind: $("kind").value, name });
  });

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") poll();
  });

  // A reload in the same tab keeps watching what it watched.
  let saved = null;
  try {
    saved = JSON.parse(sessionStorage.getItem(WATCH_STORE));
  } catch {
    // Unreadable: start empty.
  }
  if (saved?.kind === "overview") {
    start({ kind: "overview" });
  } else if (saved && WATCHABLE.has(saved.kind ?? "") && typeof saved.name === "string") {
    $("kind").value = saved.kind;
    $("name").value = saved.name;
    labelName();
    start(saved);
  } else {
    // The page opens on what is busy.
    start({ kind: "overview" });
  }
});
