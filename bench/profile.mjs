// Where an uncontended acquire+release pair's time goes: V8's sampling CPU
// profiler on the isolate that runs Baton's Coordinator (and, for the
// baseline, on the bench Worker's isolate, where the plain JavaScript
// Durable Object lives), while the bench Worker loops pairs.
//
//   BATON_WASM_NAMES=1 bash scripts/build.sh   # release build, names kept
//   node_modules/.bin/node bench/profile.mjs [pairs]
//   node_modules/.bin/node bench/profile.mjs rate [example|open] [calls]
//   node_modules/.bin/node bench/profile.mjs serial [rounds]
//   node_modules/.bin/node bench/profile.mjs split [before|after]
//
// The split form (issue 29) splits one uncontended acquire and release, an
// enqueue behind 10 waiters and a hand-off release into their parts (the
// RPC, the JS wrapper, the crossing, the decision, each statement and
// trigger, the commit, the event send: bench/split.mjs says how), prints
// the table and keeps it under its label in bench/profile-split.json,
// which `npm run bench` writes into docs/benchmarks.md.
//
// The serial form profiles the serial queue's calls (enqueue, claim,
// release: bench/worker.mjs's /bench/serial-calls) in Baton's isolate and
// the same calls to the plain JS queue (bench/js-queue.mjs) in its own.
// The second form profiles the RateLimiter instead, while the bench Worker
// loops acquires on one bucket (bench/rate.mjs's L1 rule sets), against
// the plain JS exact limiter.
//
// Prints self time by kind of code and inclusive time of the parts named in
// issue 8 (WASM<->JS crossings, serde conversions, SQL statements, the
// decision log line, the alarm). Not part of `npm run bench`: a profiler
// slows what it samples, so its figures are shares, not speeds.
import { Miniflare } from "miniflare";
import { applyJsQueueSchema, benchOptions } from "./miniflare.mjs";
import { applyMigrations } from "../tests/miniflare/harness.mjs";
import { findTarget, profileWhile } from "./inspector.mjs";

const RATE = process.argv[2] === "rate";
const SERIAL = process.argv[2] === "serial";
const RATE_CONFIG = RATE ? (process.argv[3] ?? "example") : null;
const PAIRS = Number((RATE ? process.argv[4] : SERIAL ? process.argv[3] : process.argv[2]) ?? 3000);

/** Kinds of code, by the frame a sample's time is spent in (self time). */
function kindOf(frame) {
  const { functionName: name, url } = frame;
  if (name === "(idle)") return "idle (waiting for the caller or I/O)";
  if (name === "(garbage collector)") return "garbage collector";
  if (name === "(program)") return "runtime (workerd, outside JS)";
  if (url.startsWith("wasm://")) return "WASM (Baton's Rust)";
  if (url.endsWith("build/index.js") || url.endsWith("index.js")) return "wasm-bindgen JS glue";
  if (url.endsWith("worker.mjs") && !url.includes("bench")) return "js/worker.mjs wrapper";
  if (url === "") return `native: ${name || "(anonymous)"}`;
  return `JS: ${url.split("/").pop()}`;
}

/** The candidates, matched on any frame of a sample's stack (inclusive time). */
const PARTS = [
  ["SQL statements (storage.sql.exec and its cursor)", (f) => /^(exec|raw|next|toArray)$/.test(f.functionName) && f.url === ""],
  ["Rust SqlExec::run (binding values, reading rows)", (f) => f.functionName.includes("ObjectSql") || f.functionName.includes("sqlite::")],
  ["decision log line (JSON + console.log)", (f) => f.functionName.includes("decision_log")],
  ["console.log itself", (f) => f.functionName === "log" && f.url === ""],
  ["request decode (serde-wasm-bindgen, edge::decode)", (f) => /edge::decode|serde_wasm_bindgen::de/.test(f.functionName)],
  ["reply encode (serde-wasm-bindgen to_js)", (f) => /shell::js::to_js|serde_wasm_bindgen::ser/.test(f.functionName)],
  ["the gate (blockConcurrencyWhile)", (f) => f.functionName.includes("blockConcurrencyWhile") || f.functionName.includes("under_gate")],
  ["the alarm (get/set)", (f) => /getAlarm|setAlarm|ensure_alarm/.test(f.functionName)],
  ["the core's decisions", (f) => /baton::(coordinator|rate_limit)::decide/.test(f.functionName)],
  ["the rate cache (CachedRateStore)", (f) => f.functionName.includes("cached_store")],
  ["schema check (migrate)", (f) => f.functionName.includes("migrate")],
  ["JS->WASM entry (wasm-bindgen exports)", (f) => /^(coordinatorcore_|ratelimitercore_|__wbg_adapter|wasm_bindgen__convert__closures)/.test(f.functionName)],
  ["WASM->JS calls (wasm-bindgen imports)", (f) => f.functionName.startsWith("__wbg_")],
];

function analyse(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  const inclusive = new Map(PARTS.map(([name]) => [name, 0]));
  const topSelf = new Map();
  const topInclusive = new Map();
  let total = 0;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const node = byId.get(id);
    const kind = kindOf(node.callFrame);
    self.set(kind, (self.get(kind) ?? 0) + dt);
    if (node.callFrame.functionName === "(idle)") return;
    busy += dt;
    const label = `${node.callFrame.functionName || "(anonymous)"} [${kind}]`;
    topSelf.set(label, (topSelf.get(label) ?? 0) + dt);
    const matched = new Set();
    const onStack = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at).callFrame;
      for (const [name, test] of PARTS) if (test(frame)) matched.add(name);
      if (frame.url.startsWith("wasm://")) onStack.add(frame.functionName.replace(/::h[0-9a-f]{16}$/, ""));
    }
    for (const name of matched) inclusive.set(name, inclusive.get(name) + dt);
    for (const name of onStack) topInclusive.set(name, (topInclusive.get(name) ?? 0) + dt);
  });
  return { total, busy, self, inclusive, topSelf, topInclusive };
}

function report(title, { total, busy, self, inclusive, topSelf, topInclusive }, pairs) {
  const us = (t) => `${(t / pairs).toFixed(1)} µs/pair`;
  const pct = (t, of) => `${((100 * t) / of).toFixed(1)}%`;
  console.log(`\n## ${title}: ${pairs} pairs, ${(total / 1000).toFixed(0)} ms sampled, busy ${pct(busy, total)}`);
  console.log("\nself time by kind:");
  for (const [kind, t] of [...self].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${pct(t, total).padStart(6)}  ${us(t).padStart(14)}  ${kind}`);
  }
  console.log("\ninclusive time of the candidates (share of busy time):");
  for (const [name, t] of [...inclusive].sort((a, b) => b[1] - a[1])) {
    console.log(`  ${pct(t, busy).padStart(6)}  ${us(t).padStart(14)}  ${name}`);
  }
  console.log("\ntop self time (busy):");
  for (const [label, t] of [...topSelf].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    console.log(`  ${pct(t, busy).padStart(6)}  ${label}`);
  }
  if (topInclusive.size) console.log("\ntop inclusive time of Rust functions (busy):");
  for (const [label, t] of [...topInclusive].sort((a, b) => b[1] - a[1]).slice(0, 30)) {
    console.log(`  ${pct(t, busy).padStart(6)}  ${us(t).padStart(14)}  ${label}`);
  }
}

/** The profile of `target`'s isolate while `run` runs; kept as a .cpuprofile when PROFILE_DUMP names a path. */
async function profileDumped(target, run) {
  const profiled = await profileWhile(target, run);
  if (process.env.PROFILE_DUMP) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(`${process.env.PROFILE_DUMP}.${target.title ?? "target"}.cpuprofile`.replaceAll(" ", "_"), JSON.stringify(profiled.profile));
  }
  return profiled;
}

/** The split form: measures, prints, and keeps the result under its label. */
async function split(label) {
  const { measureSplit, splitMarkdown } = await import("./split.mjs");
  const { existsSync, readFileSync, writeFileSync } = await import("node:fs");
  const { ROOT } = await import("./miniflare.mjs");
  const file = `${ROOT}/bench/profile-split.json`;
  const kept = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  kept[label] = await measureSplit();
  writeFileSync(file, `${JSON.stringify(kept, null, 1)}\n`);
  console.log(splitMarkdown(kept[label], label));
}

async function main() {
  if (process.argv[2] === "split") return split(process.argv[3] ?? "before");
  const inspectorPort = 9300 + Math.floor(Math.random() * 500);
  const mf = new Miniflare({ ...benchOptions(), inspectorPort });
  await mf.ready;
  try {
    const target = (name) => findTarget(inspectorPort, name);
    const call = async (body) => {
      const response = await mf.dispatchFetch("http://bench/bench/pairs", { method: "POST", body: JSON.stringify(body) });
      return response.json();
    };
    if (SERIAL) {
      // Each round is an enqueue, a claim and a release on a fresh id.
      const rounds = async (binding, count, tag) => {
        const body = { group: `prof-${binding}-${tag}`, count, binding };
        const response = await mf.dispatchFetch("http://bench/bench/serial-calls", { method: "POST", body: JSON.stringify(body) });
        return response.json();
      };
      await applyMigrations(await mf.getD1Database("DB", "baton"));
      await applyJsQueueSchema(await mf.getD1Database("DB", "js-queue"));
      await rounds("BATON", 200, "warm");
      await rounds("JS_QUEUE", 200, "warm");
      const baton = await profileDumped(await target("baton"), () => rounds("BATON", PAIRS, "profiled"));
      report("Baton's isolate (serial queue; per round of 3 calls)", analyse(baton.profile), PAIRS);
      const plain = await profileDumped(await target("js-queue"), () => rounds("JS_QUEUE", PAIRS, "profiled"));
      report("the JS queue's isolate (per round of 3 calls)", analyse(plain.profile), PAIRS);
      const b = await rounds("BATON", PAIRS, "plain");
      const p = await rounds("JS_QUEUE", PAIRS, "plain");
      console.log(`\nunprofiled, ms per call (enqueue, claim, release): Baton ${JSON.stringify(b)}, JS ${JSON.stringify(p)}`);
      return;
    }
    if (RATE) {
      const { CONFIGS } = await import("./rate.mjs");
      const acquires = async (t, calls) => {
        const body = { target: t, bucket: `prof-${RATE_CONFIG}`, rules: CONFIGS[RATE_CONFIG], calls };
        const response = await mf.dispatchFetch("http://bench/bench/rate-acquires", { method: "POST", body: JSON.stringify(body) });
        return response.json();
      };
      await acquires("baton", 300);
      await acquires("js", 300);
      const baton = await profileDumped(await target("baton"), () => acquires("baton", PAIRS));
      report(`Baton's isolate (RateLimiter, ${RATE_CONFIG})`, analyse(baton.profile), PAIRS);
      const plain = await profileDumped(await target("bench"), () => acquires("js", PAIRS));
      report("the bench isolate (the loop and the plain JS exact limiter)", analyse(plain.profile), PAIRS);
      const b = await acquires("baton", PAIRS);
      const p = await acquires("js", PAIRS);
      console.log(`\nunprofiled: Baton ${((PAIRS / b.elapsedMs) * 1000).toFixed(0)} calls/s, plain JS ${((PAIRS / p.elapsedMs) * 1000).toFixed(0)} calls/s`);
      return;
    }
    // Warm-up: objects, tables, JIT.
    await call({ keys: ["prof"], pairs: 300 });
    await call({ keys: ["prof"], binding: "PLAIN", pairs: 300 });

    const baton = await profileDumped(await target("baton"), () => call({ keys: ["prof"], pairs: PAIRS }));
    report("Baton's isolate (Coordinator)", analyse(baton.profile), PAIRS);
    console.log(`  (wall: ${baton.result.elapsedMs} ms for ${PAIRS} pairs under the profiler)`);

    const plain = await profileDumped(await target("bench"), () => call({ keys: ["prof"], binding: "PLAIN", pairs: PAIRS }));
    report("the bench isolate (the loop and the plain JS baseline)", analyse(plain.profile), PAIRS);
    console.log(`  (wall: ${plain.result.elapsedMs} ms for ${PAIRS} pairs under the profiler)`);

    // The loop alone, unprofiled, for the wall-clock split.
    const b = await call({ keys: ["prof"], pairs: PAIRS });
    const p = await call({ keys: ["prof"], binding: "PLAIN", pairs: PAIRS });
    console.log(`\nunprofiled: Baton ${((PAIRS / b.elapsedMs) * 1000).toFixed(0)} pairs/s, plain ${((PAIRS / p.elapsedMs) * 1000).toFixed(0)} pairs/s`);
  } finally {
    await mf.dispose();
  }
}

await main();
