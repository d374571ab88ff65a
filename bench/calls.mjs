// P3, P4 and P5: Coordinator calls timed inside the Worker (bench/worker.mjs
// routes), with storage work read from the object's own counters.
import { summary, median } from "./stats.mjs";

/**
 * What withKey passes to every acquire when no option of its own is set
 * (js/with-key.mjs, `keyOptions`): P3's pairs are asked this way, as users'
 * sections ask them (issue 38); the plain baseline ignores it.
 */
export const WITH_KEY_OPTIONS = { grant: true };

/** P3: timed runs after one warm-up; pairs per run on one key, and per key on 10 keys. */
export const P3_RUNS = Number(process.env.BENCH_P3_RUNS ?? 9);
export const P3_PAIRS_ONE_KEY = 200;
export const P3_KEYS = 10;
export const P3_PAIRS_PER_KEY = 50;
/** P4: queue lengths compared, rounds (sizes interleaved), waiters per timed batch. */
export const P4_SMALL = 10;
export const P4_LARGE = 10_000;
export const P4_ROUNDS = 30;
/** Date.now() in workerd has 1 ms steps: a batch of 25 resolves 0.04 ms per call. */
export const P4_BATCH = 25;
/** Enqueues per request while filling the large queue. */
const FILL_CHUNK = 2_500;

/**
 * P3 at `BATON_LOG=all` (contract §9): Baton's uncontended pairs against
 * the plain baseline printing one line per call too (`PLAIN_LOG=all`), on
 * one key each, run by run alternating. `b` must be started with both set.
 */
export async function loggedRatio(b) {
  const baton = { keys: ["p3-logged"], options: WITH_KEY_OPTIONS };
  const plain = { keys: ["p3-logged-plain"], binding: "PLAIN", options: WITH_KEY_OPTIONS };
  await b.call("/bench/pairs", { ...baton, pairs: 10 });
  await b.call("/bench/pairs", { ...plain, pairs: 10 });
  const ratios = [];
  for (let run = 0; run < P3_RUNS; run++) {
    const order = run % 2 ? ["plain", "baton"] : ["baton", "plain"];
    const result = {};
    for (const which of order) {
      result[which] = await b.call("/bench/pairs", { ...(which === "baton" ? baton : plain), pairs: P3_PAIRS_ONE_KEY });
    }
    ratios.push(result.plain.elapsedMs / result.baton.elapsedMs);
  }
  return { ratio: summary(ratios) };
}

/**
 * P3 and P5 (uncontended): pairs/s on one key and on 10 keys at once;
 * storage work per pair; and the same one-key loop on the plain JavaScript
 * baseline (bench/plain-coordinator.mjs), run by run alternating with
 * Baton's, so both see the same machine.
 */
export async function throughput(b) {
  const oneKey = ["p3-one"];
  const tenKeys = Array.from({ length: P3_KEYS }, (_, i) => `p3-ten-${i}`);
  const options = WITH_KEY_OPTIONS;
  const plain = { keys: ["p3-plain"], binding: "PLAIN", options };
  const remote = { keys: ["p3-plain-remote"], binding: "PLAIN_REMOTE", options };
  // Warm-up: creates the objects and their tables, untimed.
  await b.call("/bench/pairs", { keys: oneKey, pairs: 10, options });
  await b.call("/bench/pairs", { keys: tenKeys, pairs: 10, options });
  await b.call("/bench/pairs", { ...plain, pairs: 10 });
  await b.call("/bench/pairs", { ...remote, pairs: 10 });
  const one = [];
  const ten = [];
  const base = [];
  const ratios = [];
  const remoteBase = [];
  const remoteRatios = [];
  const perPair = { reads: [], writes: [] };
  const basePerPair = { reads: [], writes: [] };
  for (let run = 0; run < P3_RUNS; run++) {
    // Which goes first alternates, so neither always follows the other.
    const order = run % 2 ? ["remote", "plain", "baton"] : ["baton", "plain", "remote"];
    const variants = { baton: { keys: oneKey, options }, plain, remote };
    const result = {};
    for (const which of order) {
      result[which] = await b.call("/bench/pairs", { ...variants[which], pairs: P3_PAIRS_ONE_KEY });
    }
    const { baton: a, plain: p, remote: r } = result;
    remoteBase.push((r.pairs / r.elapsedMs) * 1000);
    remoteRatios.push(r.elapsedMs / a.elapsedMs);
    const c = await b.call("/bench/pairs", { keys: tenKeys, pairs: P3_PAIRS_PER_KEY, options });
    if (a.notGranted || c.notGranted || p.notGranted) throw new Error("an uncontended acquire was not granted");
    one.push((a.pairs / a.elapsedMs) * 1000);
    ten.push((c.pairs / c.elapsedMs) * 1000);
    base.push((p.pairs / p.elapsedMs) * 1000);
    ratios.push(p.elapsedMs / a.elapsedMs);
    perPair.reads.push(a.work[0].reads / a.pairs);
    perPair.writes.push(a.work[0].writes / a.pairs);
    basePerPair.reads.push(p.work[0].reads / p.pairs);
    basePerPair.writes.push(p.work[0].writes / p.pairs);
  }
  return {
    oneKey: summary(one),
    tenKeys: summary(ten),
    baseline: summary(base),
    /** Baton's pairs/s over the baseline's, per pair of adjacent runs. */
    ratio: summary(ratios),
    /** The baseline in a Worker of its own (reached as Baton is), and Baton's ratio to it. */
    remoteBaseline: summary(remoteBase),
    remoteRatio: summary(remoteRatios),
    pairReads: median(perPair.reads),
    pairWrites: median(perPair.writes),
    pairWorkSpread: { reads: summary(perPair.reads), writes: summary(perPair.writes) },
    baselineReads: median(basePerPair.reads),
    baselineWrites: median(basePerPair.writes),
  };
}

/** P4's tenants row (contract §1c): the large queue's waiters go round this many tenants and priorities. */
export const P4_TENANTS = 100;
export const P4_PRIORITIES = 3;

/**
 * A key held by a live instance (so acquires find the holder alive) with
 * `count` made-up waiters; `spread`: of P4_TENANTS tenants and
 * P4_PRIORITIES priorities, round robin.
 */
export async function queueOf(b, key, count, spread = false) {
  const holder = `${key}-h`;
  await b.create(holder, { mode: "key", key, waitForFinish: true });
  await b.until(`${holder} to hold`, async () => (await b.rpc(key, "inspect", key)).holder?.id === holder);
  const started = performance.now();
  const shares = spread ? { tenants: P4_TENANTS, priorities: P4_PRIORITIES } : {};
  for (let done = 0; done < count; done += FILL_CHUNK) {
    const chunk = Math.min(FILL_CHUNK, count - done);
    await b.call("/bench/bulk-enqueue", { key, count: chunk, prefix: `${key}-q${done}-`, from: done, ...shares });
  }
  return { holder, fillMs: performance.now() - started };
}

/**
 * P4: per-op time of enqueue, acquire (pending: holder checked alive) and
 * release (a waiter leaving) behind P4_LARGE waiters over the same behind
 * P4_SMALL, sizes interleaved round by round; medians of per-batch means.
 * During a batch the queue grows by up to P4_BATCH and shrinks back.
 */
export async function flatCost(b, { tenants = false } = {}) {
  const sizes = [P4_SMALL, P4_LARGE];
  // The tenants row: the large queue of 100 tenants and 3 priorities, the
  // batches' own waiters of one of those tenants at priority 0, against
  // the same batches behind 10 waiters of no tenant.
  const name = tenants ? "p4t" : "p4";
  const options = tenants ? { tenant: "tenant-7" } : undefined;
  const keys = Object.fromEntries(sizes.map((n) => [n, `${name}-${n}`]));
  const fills = {};
  for (const n of sizes) fills[n] = await queueOf(b, keys[n], n, tenants && n === P4_LARGE);
  const batches = Object.fromEntries(sizes.map((n) => [n, []]));
  for (let round = -1; round < P4_ROUNDS; round++) {
    // Which key goes first alternates, so neither always follows the other.
    for (const n of round % 2 ? sizes : [...sizes].reverse()) {
      const result = await b.call("/bench/flat", { key: keys[n], prefix: `${name}-${n}-r${round + 1}-`, batch: P4_BATCH, options });
      if (result.notPending) throw new Error(`p4: ${result.notPending} acquires behind a live holder were not pending`);
      if (round >= 0) batches[n].push(result); // round -1 is a warm-up
    }
  }
  const view = await b.rpc(keys[P4_LARGE], "inspect", keys[P4_LARGE]);
  const ops = ["enqueueMs", "acquireMs", "releaseMs"];
  const per = {};
  for (const n of sizes) {
    per[n] = Object.fromEntries(ops.map((op) => [op, summary(batches[n].map((r) => r[op]))]));
    per[n].sumMs = summary(batches[n].map((r) => r.enqueueMs + r.acquireMs + r.releaseMs));
  }
  const ratio = (op) => per[P4_LARGE][op].p50 / per[P4_SMALL][op].p50;
  return {
    per,
    ratio: ratio("sumMs"),
    opRatios: Object.fromEntries(ops.map((op) => [op, ratio(op)])),
    largeQueueLength: view.waiting.length,
    fillMs: fills[P4_LARGE].fillMs,
    holders: sizes.map((n) => fills[n].holder),
  };
}

/** Calls per timing of the I/O a hand-off makes. */
export const IO_REPS = 20;

/** Per-call cost of the I/O a hand-off makes: Workflow status, sendEvent, a D1 statement. */
export async function ioCost(b, liveInstanceId) {
  const workflow = await b.call("/bench/workflow-calls", { id: liveInstanceId, reps: IO_REPS });
  const d1 = await b.call("/bench/d1", { reps: IO_REPS });
  return { ...workflow, ...d1 };
}
