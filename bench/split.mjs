// Issue 29's profile: where one call's time goes, for an uncontended
// acquire and release, an enqueue behind 10 waiters, and a release that
// hands the key to a waiter (P1's). Run by `node bench/profile.mjs split`
// (after `BATON_WASM_NAMES=1 bash scripts/build.sh`, for Rust's names).
//
// workerd's clocks do not advance while code runs (Date.now() and
// performance.now() move only across I/O), so no call can be timed slice by
// slice from inside. The split is put together from three measurements:
//
// 1. Wall time per call, unprofiled, beside the floors (bench/floors.mjs):
//    the RPC floor is the RPC into an object and back, the durable floor
//    less the RPC floor is one write and its commit, Baton less the durable
//    floor is Baton's own work; for the hand-off, the Workflow binding's
//    get + sendEvent timed from the bench Worker is the event send.
// 2. Baton's isolate under V8's sampling profiler, each busy sample given
//    to the call whose wrapper method is on its stack and to a part by its
//    frames (`partOf`): the JS wrapper, the crossing (glue, decode,
//    encode), the decision, Baton's store, SQLite in `exec`, the rest.
//    A profiler slows what it samples, so these are shares of the
//    isolate's CPU, scaled here to Baton's own wall time.
// 3. The statements each call ran, recorded in workerd
//    (bench/traced-worker.mjs) and replayed on Node's SQLite to time each
//    statement and each trigger (bench/statements.mjs).
import { Miniflare } from "miniflare";
import { Bench, applyJsQueueSchema, benchOptions } from "./miniflare.mjs";
import { applyMigrations } from "../tests/miniflare/harness.mjs";
import { TRIGGER_VARIANTS, callsOf, timeStatements } from "./statements.mjs";
import { floorRun } from "./floor-ratios.mjs";
import { fmt, median } from "./stats.mjs";
import { findTarget, profileWhile } from "./inspector.mjs";

/** Calls per profiled scenario, and hand-offs (each its own Workflow instance). */
export const SPLIT_PAIRS = 1500;
export const SPLIT_ENQUEUES = 1000;
export const SPLIT_HANDOFFS = 40;
/** Rounds of the floors' loops for the wall times. */
const SPLIT_FLOOR_ROUNDS = 5;
/** Commits before a hand-off's reply (its decision's; the acceptance's is after the reply). */
const HANDOFF_COMMITS = 1;

/** The calls split, by scenario and call: what each is called in the table. */
export const CALLS = [
  { scenario: "pair", call: "acquire", label: "uncontended acquire" },
  { scenario: "pair", call: "release", label: "uncontended release" },
  { scenario: "enqueue", call: "enqueue", label: "enqueue behind 10" },
  { scenario: "handoff", call: "release", label: "release handing the key on (P1)" },
];

/** Rust frames that say nothing of whose work it is: the walk looks further out. */
const GENERIC_RUST = /^(core::|alloc::|dlmalloc|__rust|memcpy|memmove|memset|compiler_builtins|std::|hashbrown|<alloc|<core|wasm_bindgen::|js_sys::|<js_sys|<wasm_bindgen)/;

/** A Rust frame's part, by its path. */
function rustPart(name) {
  if (/decision_log/.test(name)) return "decision log line";
  if (/serde_wasm_bindgen::ser|shell::js::to_js|[Ss]erialize/.test(name)) return "crossing: reply encode";
  if (/baton::edge|shell::js::|serde_json::value::de|serde::de|Deserialize|baton::ident/.test(name)) return "crossing: request decode";
  if (/coordinator::sql|coordinator::history::(write|busy|inspect)|baton::sql::|shell::sqlite|rate_limit::(sql|cached)/.test(name)) {
    return "SQL: Baton's store (statements bound, rows read)";
  }
  if (/baton::(coordinator|rate_limit|transition)/.test(name)) return "decision (the core)";
  if (/shell::|futures|wasm_bindgen_futures/.test(name)) return "driver and shell (Rust)";
  return null;
}

const SQLITE_NATIVE = /^(exec|raw|next|toArray|one|columnNames)$/;

/** The part a busy sample's time is given to, from its stack (leaf first). */
export function partOf(stack) {
  const [leaf] = stack;
  const name = leaf.functionName;
  if (name === "(garbage collector)") return "runtime: garbage collector";
  if (name === "(program)") return "runtime: workerd, outside JS";
  if (leaf.url === "" && SQLITE_NATIVE.test(name)) return "SQL: SQLite (in exec)";
  if (/js\/worker\.mjs$|traced-worker\.mjs$/.test(leaf.url)) return "JS wrapper (js/worker.mjs)";
  const wasmBelow = stack.some((f) => f.url.startsWith("wasm://"));
  if (leaf.url.endsWith("index.js") || leaf.url === "") {
    if (!wasmBelow) return "crossing: JS→WASM entry (glue)";
    const sqlOnStack = stack.some((f) => f.url === "" && SQLITE_NATIVE.test(f.functionName));
    return sqlOnStack ? "SQL: SQLite (in exec)" : "crossing: WASM→JS calls (glue, JS values)";
  }
  if (leaf.url.startsWith("wasm://")) {
    for (const frame of stack) {
      if (!frame.url.startsWith("wasm://")) break;
      const part = GENERIC_RUST.test(frame.functionName) ? null : rustPart(frame.functionName);
      if (part) return part;
    }
    return "Rust: other (allocator, std)";
  }
  return `JS: ${leaf.url.split("/").pop() || name}`;
}

/** The wrapper method on a sample's stack (outermost), or null: a continuation after the call returned. */
function callOf(stack) {
  for (let i = stack.length - 1; i >= 0; i--) {
    const f = stack[i];
    if (/js\/worker\.mjs$|traced-worker\.mjs$/.test(f.url) && /^(acquire|release|enqueue)$/.test(f.functionName)) {
      return f.functionName;
    }
  }
  return null;
}

/**
 * µs of the isolate's busy time by call and part: `{ [call]: { [part]: µs } }`,
 * a sample with no wrapper method on its stack given to `asyncCall`.
 */
export function splitProfile(profile, asyncCall) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const split = {};
  const leaves = {};
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    if (byId.get(id).callFrame.functionName === "(idle)") return;
    const stack = [];
    for (let at = id; at !== undefined; at = parent.get(at)) stack.push(byId.get(at).callFrame);
    const call = callOf(stack) ?? asyncCall;
    const part = partOf(stack);
    split[call] ??= {};
    split[call][part] = (split[call][part] ?? 0) + dt;
    // What each part is made of: its leaf functions (names without hashes).
    const leaf = stack[0].functionName.replace(/::h[0-9a-f]{16}$/, "") || "(anonymous)";
    const at = `${call}\u0000${part}`;
    leaves[at] ??= {};
    leaves[at][leaf] = (leaves[at][leaf] ?? 0) + dt;
  });
  /** Per call and part, the leaves over 5% of the part, largest first. */
  const top = {};
  for (const [at, byLeaf] of Object.entries(leaves)) {
    const [call, part] = at.split("\u0000");
    const sum = Object.values(byLeaf).reduce((a, b) => a + b, 0);
    top[call] ??= {};
    top[call][part] = Object.entries(byLeaf)
      .filter(([, t]) => t > 0.05 * sum)
      .sort((a, b) => b[1] - a[1])
      .map(([leaf, t]) => [leaf, Math.round((100 * t) / sum)]);
  }
  return { split, top };
}

/** The profile of Baton's isolate while `run` runs. */
async function profiled(inspectorPort, run, worker = "baton") {
  return profileWhile(await findTarget(inspectorPort, worker), run);
}

/** A Miniflare for the split: Baton (traced or not), the floors, the bench Worker. */
async function start({ inspectorPort, ...options }) {
  const mf = new Miniflare({ ...benchOptions(options), ...(inspectorPort ? { inspectorPort } : {}) });
  await mf.ready;
  await applyMigrations(await mf.getD1Database("DB", "baton"));
  await applyJsQueueSchema(await mf.getD1Database("DB", "js-queue"));
  return new Bench(mf);
}

/**
 * The scenarios, on Bench `b`, each a function of the calls to make:
 * pairs on one key; enqueues behind 10 waiters (a live holder); releases
 * that hand the key down a chain of live Workflow instances, each waiting
 * with `grant`. `prefix` keeps two runs' keys apart.
 */
function scenarios(b, prefix) {
  const pairKey = `${prefix}-pair`;
  const enqueueKey = `${prefix}-enqueue`;
  return {
    pairKey,
    enqueueKey,
    async prepare() {
      const { queueOf } = await import("./calls.mjs");
      await queueOf(b, enqueueKey, 10);
    },
    pairs: (count) => b.call("/bench/pairs", { keys: [pairKey], pairs: count }),
    enqueues: async (count, tag) => {
      let elapsedMs = 0;
      for (let done = 0; done < count; done += 25) {
        const r = await b.call("/bench/enqueues", { key: enqueueKey, prefix: `${tag}-${done}-`, count: Math.min(25, count - done) });
        elapsedMs += r.elapsedMs;
      }
      return { elapsedMs, calls: count };
    },
    /** A chain of `count` hand-offs: its holder and waiters made and queued (untimed); `run()` releases down it. */
    async chain(count, tag) {
      const key = `${prefix}-handoff-${tag}`;
      const ids = Array.from({ length: count + 1 }, (_, i) => `${key}-${i}`);
      for (const id of ids) await b.create(id, { mode: "floor", key });
      for (const id of ids) await b.until(`${id} running`, async () => ["running", "waiting"].includes(await b.status(id)));
      if ((await b.rpc(key, "acquire", key, ids[0])) !== "granted") throw new Error("split: the chain's holder was not granted");
      for (const id of ids.slice(1)) {
        const reply = await b.rpc(key, "acquire", key, id, { grant: true });
        if (reply.status !== "pending") throw new Error(`split: ${id} not pending: ${JSON.stringify(reply)}`);
      }
      return {
        key,
        run: () => b.call("/bench/handoffs", { key, ids }),
      };
    },
  };
}

/** Per-call wall times (ms), unprofiled: Baton's scenarios beside the floors, and the Workflow binding's I/O. */
async function wallTimes(b, s) {
  const floors = await floorRun(b);
  for (let round = 0; round < SPLIT_FLOOR_ROUNDS; round++) await floors.round(round);
  const f = floors.result();
  const chain = await s.chain(SPLIT_HANDOFFS, "wall");
  const handoff = await chain.run();
  const io = await b.call("/bench/workflow-calls", { id: `${chain.key}-${SPLIT_HANDOFFS}`, reps: 20 });
  return {
    rpcFloorMs: f.ms.pairs.rpc.p50 / 2,
    durableFloorMs: { acquire: f.ms.pairs.durable.p50 / 2, release: f.ms.pairs.durable.p50 / 2, enqueue: f.ms.enqueue.durable.p50 },
    batonMs: { pair: f.ms.pairs.baton.p50, enqueue: f.ms.enqueue.baton.p50, handoff: handoff.elapsedMs / handoff.calls },
    rpcFloorEnqueueMs: f.ms.enqueue.rpc.p50,
    sendEventMs: io.sendEventMs,
    statusMs: io.statusMs,
  };
}

/** Runs the three measurements; returns the split as data (bench-out/split.json). */
export async function measureSplit() {
  const inspectorPort = 9300 + Math.floor(Math.random() * 500);
  const plain = await start({ inspectorPort });
  let profiles, wall;
  try {
    const s = scenarios(plain, "split");
    await s.prepare();
    await s.pairs(200);
    await s.enqueues(100, "warm");
    const warmChain = await s.chain(5, "warm");
    await warmChain.run();
    const chain = await s.chain(SPLIT_HANDOFFS, "profiled");
    const pair = await profiled(inspectorPort, () => s.pairs(SPLIT_PAIRS));
    const enqueue = await profiled(inspectorPort, () => s.enqueues(SPLIT_ENQUEUES, "profiled"));
    const handoff = await profiled(inspectorPort, () => chain.run());
    // The durable floor's isolate doing its pairs, for comparison: its
    // whole CPU per call, and SQLite's part of it.
    await plain.call("/bench/pairs", { keys: ["split-floor"], pairs: 200, binding: "DURABLE_FLOOR" });
    const floor = await profiled(
      inspectorPort,
      () => plain.call("/bench/pairs", { keys: ["split-floor"], pairs: SPLIT_PAIRS, binding: "DURABLE_FLOOR" }),
      "floors",
    );
    const of = (p, asyncCall) => splitProfile(p.profile, asyncCall);
    profiles = {
      pair: { calls: SPLIT_PAIRS, ...of(pair, "after the call") },
      // An enqueue decides under the gate, after its wrapper returned; the
      // waiters' releases (untimed clean-up) are their own call.
      enqueue: { calls: SPLIT_ENQUEUES, ...of(enqueue, "enqueue") },
      handoff: { calls: SPLIT_HANDOFFS, ...of(handoff, "release") },
      // Two calls per pair: per call, the pair's CPU over twice the pairs.
      floor: { calls: 2 * SPLIT_PAIRS, ...of(floor, "floor") },
    };
    wall = await wallTimes(plain, s);
  } finally {
    await plain.dispose();
  }
  const traced = await start({ traced: true });
  let statements, replayed;
  try {
    const s = scenarios(traced, "traced");
    await s.prepare();
    await s.pairs(20);
    await s.enqueues(25, "warm");
    const chain = await s.chain(10, "traced");
    const warm = await traced.rpc(s.pairKey, "statementLog");
    await s.pairs(200);
    await s.enqueues(200, "traced");
    await chain.run();
    const main = await traced.rpc(s.pairKey, "statementLog");
    const skip = warm.filter((e) => e.call).length;
    replayed = await replayInWorkerd(traced, [...warm, ...main], skip, { [s.pairKey]: "pair", [s.enqueueKey]: "enqueue" });
    let index = 0;
    statements = await timeStatements([...warm, ...main], (call) => {
      if (index++ < skip) return null;
      if (call.key === s.pairKey) return `pair ${call.call}`;
      if (call.key === s.enqueueKey) return call.call === "enqueue" ? "enqueue" : "waiter leaves";
      if (call.key === chain.key) return call.call === "release" ? "handoff release" : null;
      return null;
    });
  } finally {
    await traced.dispose();
  }
  // Commits a hand-off's release waits for before its reply: 2 until the
  // turn event's acceptance was recorded after the reply (issue 29), 1 since.
  return { date: new Date().toISOString(), profiles, wall, statements, replayed, handoffCommits: HANDOFF_COMMITS };
}

/**
 * The triggers a schema has after `statements` ran in order: created ones,
 * less those dropped by name or with their table (schema v12 rebuilds the
 * holders' table).
 */
function triggersAfter(statements) {
  const on = new Map();
  for (const sql of statements) {
    const created = sql.match(/^\s*CREATE TRIGGER\s+(\w+)[\s\S]*?\bON\s+(\w+)/i);
    const dropped = sql.match(/^\s*DROP TRIGGER\s+(?:IF EXISTS\s+)?(\w+)/i);
    const table = sql.match(/^\s*DROP TABLE\s+(?:IF EXISTS\s+)?(\w+)/i);
    if (created) on.set(created[1], created[2]);
    if (dropped) on.delete(dropped[1]);
    if (table) for (const [name, t] of on) if (t === table[1]) on.delete(name);
  }
  return new Set(on.keys());
}

/** Rounds of the replay in workerd (bench/floors.mjs's ReplayFloor), variants alternating. */
const REPLAY_ROUNDS = 5;

/**
 * Baton's statements without Baton, in workerd: each scenario object's
 * measured calls run again from JS by a ReplayFloor object, one RPC per
 * call, as deployed and under each trigger variant, rounds alternating
 * with the durable floor's own loops. ms per call by scenario, call and
 * variant (and "durable floor").
 */
async function replayInWorkerd(b, log, skipCalls, scenarios) {
  const { calls, setup } = callsOf(log);
  const objects = new Map();
  calls.forEach((call, i) => {
    const scenario = scenarios[call.key];
    if (!scenario) return;
    if (!objects.has(call.object)) objects.set(call.object, { scenario, setup: [...(setup.get(call.object) ?? [])], groups: [] });
    const o = objects.get(call.object);
    if (i < skipCalls) {
      o.setup.push(...call.statements);
      return;
    }
    // Timed in batches of calls of one kind (workerd's clock moves in whole
    // ms); a pair's acquire and release alternate, so its calls are one
    // batch, each call given the batch's mean.
    const kind = scenario === "pair" ? "pair" : call.call;
    const last = o.groups.at(-1);
    if (last?.call === kind) last.calls.push(call.statements);
    else o.groups.push({ call: kind, calls: [call.statements] });
  });
  const triggers = triggersAfter(log.map((e) => e.sql ?? ""));
  const variants = [{ short: "deployed", sql: [] }, ...TRIGGER_VARIANTS.filter((v) => v.needs.every((t) => triggers.has(t)))];
  const ms = {};
  const note = (scenario, call, variant, elapsedMs, count) => {
    const at = ((ms[scenario] ??= {})[call] ??= {});
    (at[variant] ??= []).push(elapsedMs / count);
  };
  for (let round = 0; round < REPLAY_ROUNDS; round++) {
    for (const variant of variants.map((_, i) => variants[(i + round) % variants.length])) {
      for (const [object, o] of objects) {
        const name = `${object}-${variant.short}`;
        let first = round === 0;
        for (const group of o.groups) {
          const r = await b.call("/bench/replay", {
            name,
            ...(first ? { setup: o.setup, variantSql: variant.sql } : {}),
            calls: group.calls,
          });
          first = false;
          note(o.scenario, group.call, variant.short, r.elapsedMs, r.calls);
        }
      }
    }
    const pairs = await b.call("/bench/pairs", { keys: ["replay-floor"], pairs: 200, binding: "DURABLE_FLOOR" });
    note("pair", "pair", "durable floor", pairs.elapsedMs / 2, pairs.pairs);
    const enq = await b.call("/bench/enqueues", { key: "replay-floor", binding: "DURABLE_FLOOR", prefix: `rf-${round}-`, count: 25, keep: 0 });
    note("enqueue", "enqueue", "durable floor", enq.elapsedMs, enq.calls);
  }
  const out = {};
  for (const [scenario, byCall] of Object.entries(ms)) {
    for (const [call, byVariant] of Object.entries(byCall)) {
      out[`${scenario} ${call}`] = Object.fromEntries(Object.entries(byVariant).map(([v, list]) => [v, median(list)]));
    }
  }
  return out;
}

/** The replay's rows: Baton's statements from JS in workerd, per call, and what each trigger variant saves. */
function replayRows(replayed, columns, row, µs) {
  if (!replayed) return [];
  const of = { "uncontended acquire": "pair pair", "uncontended release": "pair pair", "enqueue behind 10": "enqueue enqueue" };
  const at = (c) => replayed[of[c]];
  const variants = Object.keys(at("uncontended acquire") ?? {}).filter((v) => v !== "deployed" && v !== "durable floor");
  return [
    row("Baton's statements alone, from JS in workerd, one RPC per call (wall; a pair's mean per call)", columns.map((c) => (at(c) ? µs(at(c).deployed) : "—"))),
    row("· the durable floor in those rounds (wall)", columns.map((c) => (at(c)?.["durable floor"] !== undefined ? µs(at(c)["durable floor"]) : "—"))),
    ...variants.map((v) =>
      row(`· saved without the ${v} (wall)`, columns.map((c) => (at(c)?.[v] !== undefined ? µs(at(c).deployed - at(c)[v]) : "—"))),
    ),
  ];
}

/** Sums a part map. */
const total = (parts) => Object.values(parts ?? {}).reduce((a, b) => a + b, 0);

/** The split as markdown: one table of parts by call, then the statements. */
export function splitMarkdown(split, label) {
  const { profiles, wall, statements } = split;
  const cpu = {
    "uncontended acquire": [profiles.pair.split.acquire, profiles.pair.calls],
    "uncontended release": [profiles.pair.split.release, profiles.pair.calls],
    "enqueue behind 10": [profiles.enqueue.split.enqueue, profiles.enqueue.calls],
    "release handing the key on (P1)": [profiles.handoff.split.release, profiles.handoff.calls],
  };
  const baton = {
    "uncontended acquire": wall.batonMs.pair / 2,
    "uncontended release": wall.batonMs.pair / 2,
    "enqueue behind 10": wall.batonMs.enqueue,
    "release handing the key on (P1)": wall.batonMs.handoff,
  };
  const commitMs = wall.durableFloorMs.acquire - wall.rpcFloorMs;
  const sql = {
    "uncontended acquire": statements.scenarios["pair acquire"],
    "uncontended release": statements.scenarios["pair release"],
    "enqueue behind 10": statements.scenarios.enqueue,
    "release handing the key on (P1)": statements.scenarios["handoff release"],
  };
  const columns = Object.keys(baton);
  const parts = [...new Set(Object.values(cpu).flatMap(([p]) => Object.keys(p ?? {})))].sort();
  const µs = (ms) => `${fmt(ms * 1000)}`;
  const row = (name, cells) => `| ${name} | ${cells.join(" | ")} |`;
  const lines = [
    `**${label}** (${split.date.slice(0, 10)}; \`node bench/profile.mjs split\`). µs per call. Wall times unprofiled, ` +
      `beside the floors in the same Miniflare; the isolate's parts are shares of the CPU Baton's isolate spent on ` +
      `that call under V8's sampling profiler, with µs per call under the profiler in brackets (the profiler slows ` +
      `what it samples: compare brackets with brackets); SQL statements replayed on Node's SQLite (µs median, ` +
      `triggers included).`,
    "",
    row("part", columns),
    `|---|${columns.map(() => "---").join("|")}|`,
    row("**the call, wall (Baton)**", columns.map((c) => `**${µs(baton[c])}**`)),
    row("RPC into the object and back (the RPC floor)", columns.map(() => µs(wall.rpcFloorMs))),
    row(
      "commit: one write's (durable floor − RPC floor), × commits before the reply",
      columns.map((c) => (c.startsWith("release handing") ? `${µs(commitMs)} × ${split.handoffCommits ?? 2}` : µs(commitMs))),
    ),
    row("event send (Workflow get + sendEvent, from the bench Worker)", columns.map((c) => (c.startsWith("release handing") ? µs(wall.sendEventMs) : "—"))),
    row("Baton's own (the call − the durable floor's)", columns.map((c) => µs(baton[c] - (c === "enqueue behind 10" ? wall.durableFloorMs.enqueue : wall.durableFloorMs.acquire)))),
    row("CPU in Baton's isolate under the profiler (all parts below)", columns.map((c) => `[${fmt(total(cpu[c][0]) / cpu[c][1])}]`)),
    ...parts.map((part) =>
      row(
        `· ${part}`,
        columns.map((c) => {
          const [p, n] = cpu[c];
          const t = p?.[part] ?? 0;
          return t ? `${fmt((100 * t) / total(p))}% [${fmt(t / n)}]` : "—";
        }),
      ),
    ),
    row(
      "the durable floor's isolate, its CPU per call under the profiler (of which SQLite in exec)",
      columns.map(() => {
        const f = Object.values(profiles.floor.split).reduce((a, p) => a + total(p), 0) / profiles.floor.calls;
        const exec = Object.values(profiles.floor.split).reduce((a, p) => a + (p["SQL: SQLite (in exec)"] ?? 0), 0) / profiles.floor.calls;
        return `[${fmt(f)}] ([${fmt(exec)}])`;
      }),
    ),
    ...replayRows(split.replayed, columns, row, µs),
    row("SQL statements per call (replayed)", columns.map((c) => (sql[c] ? fmt(sql[c].statementsPerCall) : "—"))),
    row("SQLite's work, all statements and triggers (replayed)", columns.map((c) => (sql[c] ? µs(sql[c].totalUs.deployed / 1000) : "—"))),
    ...statements.variants.map((v) =>
      row(
        `· of which ${v.short} (${v.name})`,
        columns.map((c) => (sql[c] ? µs((sql[c].totalUs.deployed - sql[c].totalUs[v.short]) / 1000) : "—")),
      ),
    ),
    "",
  ];
  lines.push(
    "What the largest parts are made of (their leaf functions, % of the part):",
    "",
    ...Object.entries(cpu).flatMap(([c, [, n]]) => {
      const call = { "uncontended acquire": ["pair", "acquire"], "uncontended release": ["pair", "release"], "enqueue behind 10": ["enqueue", "enqueue"], "release handing the key on (P1)": ["handoff", "release"] }[c];
      const top = profiles[call[0]].top?.[call[1]] ?? {};
      const parts = Object.entries(cpu[c][0] ?? {}).sort((a, b) => b[1] - a[1]).slice(0, 4);
      return [`- ${c}: ` + parts.map(([part]) => `${part}: ${(top[part] ?? []).map(([leaf, pct]) => `${leaf} ${pct}%`).join(", ")}`).join("; ")];
    }),
    "",
    "Each call's statements:",
    "",
  );
  for (const [name, s] of Object.entries(statements.scenarios)) {
    lines.push(`- ${name} (${s.calls} calls): ` + s.statements.map((st) => `\`${st.sql}\` ${fmt(st.us.deployed)} µs${st.perCall !== 1 ? ` (×${fmt(st.perCall)})` : ""}`).join("; "));
  }
  return lines.join("\n");
}

export { median };
