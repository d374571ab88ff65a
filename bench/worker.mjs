// The bench Worker: a Workflow that takes a Baton key (withKey) or a serial
// group (serialize) and reports, as its output, when its hand-off steps ran;
// and routes that time Coordinator calls from inside the Worker.
//
// Every timestamp is Date.now() inside workerd. It advances only across I/O,
// so it reads the time the current step or call was started by the runtime:
// the right clock for hand-offs between steps, all in one workerd process.
import { WorkflowEntrypoint } from "cloudflare:workers";
import { sectionKeys, withKey } from "../js/with-key.mjs";
import { registration, resolveOptions } from "../js/coordinated.mjs";
import { serialize } from "../js/serialize.mjs";
export { JsExactRateLimiter, FixedWindowRateLimiter } from "./rate-baselines.mjs";

// The baseline's Durable Object class, bound here as PLAIN.
export { PlainCoordinator } from "./plain-coordinator.mjs";

const NO_RETRY = { retries: { limit: 0, delay: 0 } };
const STEP_RETRIES = { limit: 2, delay: "100 milliseconds" };
const STEP_RETRIES_ONLY = { retries: STEP_RETRIES };

/**
 * A Coordinator namespace whose stubs note, in `times`, when the granting
 * acquire and the release were called and when the release returned.
 */
function timedCoordinator(namespace, times) {
  return {
    idFromName: (name) => namespace.idFromName(name),
    get(objectId) {
      const stub = namespace.get(objectId);
      return {
        async acquire(key, id, options) {
          const at = Date.now();
          const outcome = await stub.acquire(key, id, options);
          // withKey asks with grant (contract §1b): the reply is an object.
          if ((outcome?.status ?? outcome) === "granted") {
            Object.assign(times, { grantCallAt: at, grantDone: Date.now() });
          }
          return outcome;
        },
        async release(key, id) {
          times.releaseAt = Date.now();
          const reply = await stub.release(key, id);
          times.releaseDone = Date.now();
          times.next = reply.next;
          return reply;
        },
      };
    },
  };
}

/** The serial queue's service binding, timed the same way. */
function timedSerial(baton, times) {
  return {
    serialEnqueue: (input) => baton.serialEnqueue(input),
    serialHeartbeat: (input) => baton.serialHeartbeat(input),
    async serialClaim(input) {
      const at = Date.now();
      const claim = await baton.serialClaim(input);
      if (claim.status === "holding") Object.assign(times, { grantCallAt: at, grantDone: Date.now() });
      return claim;
    },
    async serialRelease(input) {
      times.releaseAt = Date.now();
      const reply = await baton.serialRelease(input);
      times.releaseDone = Date.now();
      times.next = reply.next;
      return reply;
    },
  };
}

/**
 * The Workflow's `step`, noting in `times` what `serialize` spends: how many
 * Baton steps (its `baton ...` steps and waits; not the heartbeat sleeps,
 * which are no call), and, when a wait ends with Baton's turn saying
 * "holding" (a hand-off by grant: no claim follows), when it did, as the
 * granting call's time. The local engine runs `run` once, without replays,
 * so counting in memory counts each step once.
 */
function timedStep(step, times) {
  times.batonSteps = 0;
  const baton = (name) => name.startsWith("baton ") && (times.batonSteps += 1);
  return {
    do(name, ...rest) {
      baton(name);
      return step.do(name, ...rest);
    },
    sleep: (name, duration) => step.sleep(name, duration),
    async waitForEvent(name, options) {
      baton(name);
      const event = await step.waitForEvent(name, options);
      if (event?.payload?.status === "holding") {
        const at = Date.now();
        Object.assign(times, { grantCallAt: at, grantDone: at });
      }
      return event;
    },
  };
}

/**
 * payload: { mode: "key", key } or { mode: "serial", group, revision, queue? }, and
 * `waitForFinish` to hold until a "finish" event. Output: the times above
 * plus `enterAt`, the start of the first step after the grant.
 *
 * { mode: "floor", key }: the Workflow engine's own floor for a hand-off, no
 * Baton decision in it: wait for a "ping" event, then a step making one
 * Coordinator call (as the woken acquire does), then the next step.
 */
export class BenchWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const { mode, waitForFinish = false } = event.payload;
    const times = {};
    const body = async () => {
      times.enterAt = await step.do("enter", NO_RETRY, async () => Date.now());
      if (waitForFinish) await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
    };
    const options = { stepRetries: STEP_RETRIES };
    if (mode === "key") {
      const coordinator = timedCoordinator(this.env.COORDINATOR, times);
      // P10: the Baton steps of this section, by name (a replay adds none).
      const names = new Set();
      const note = (name) => name.startsWith("baton ") && names.add(name);
      const counted = {
        do: (name, ...rest) => (note(name), step.do(name, ...rest)),
        waitForEvent: (name, o) => (note(name), step.waitForEvent(name, o)),
        sleep: (name, d) => (note(name), step.sleep(name, d)),
      };
      await withKey(counted, coordinator, event.payload.key, event.instanceId, body, options);
      times.batonSteps = names.size;
    } else if (mode === "plainKey") {
      // P1's baseline: what a user writes without Baton's helpers, over the
      // plain JS Durable Object: acquire in a step; while pending, wait for
      // the turn event and acquire again (the seed design: the woken waiter
      // asks once more); the body; release.
      const stub = timedCoordinator(this.env.PLAIN, times).get(this.env.PLAIN.idFromName(event.payload.key));
      const key = event.payload.key;
      // P10: its coordination steps, counted as withKey's are.
      let steps = 1;
      let outcome = await step.do("acquire", STEP_RETRIES_ONLY, () => stub.acquire(key, event.instanceId));
      for (let turn = 1; outcome !== "granted"; turn++) {
        await step.waitForEvent(`turn ${turn}`, { type: "baton-turn", timeout: "1 minute" }).catch(() => null);
        outcome = await step.do(`acquire ${turn}`, STEP_RETRIES_ONLY, () => stub.acquire(key, event.instanceId));
        steps += 2;
      }
      await body();
      await step.do("release", STEP_RETRIES_ONLY, () => stub.release(key, event.instanceId));
      times.batonSteps = steps + 1;
    } else if (mode === "serial") {
      // `queue: "js"`: P2's baseline, the same queue in a plain JS Worker.
      const { group, revision, queue } = event.payload;
      const service = queue === "js" ? this.env.JS_QUEUE : this.env.BATON;
      const timed = timedStep(step, times);
      await serialize(timed, timedSerial(service, times), { group, revision }, event.instanceId, body, options);
    } else if (mode === "debounced") {
      // Created by the Debouncer: when its first step starts.
      return { startedAt: await step.do("started", NO_RETRY, async () => Date.now()) };
    } else if (mode === "floor") {
      const stub = this.env.COORDINATOR.get(this.env.COORDINATOR.idFromName(event.payload.key));
      await step.waitForEvent("ping", { type: "ping", timeout: "1 hour" });
      times.grantCallAt = await step.do("call", NO_RETRY, async () => {
        const at = Date.now();
        await stub.inspect(event.payload.key);
        return at;
      });
      times.enterAt = await step.do("enter", NO_RETRY, async () => Date.now());
    } else {
      throw new Error(`unknown mode ${mode}`);
    }
    return times;
  }
}

const json = (value, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });

const coordinator = (env, key, binding = "COORDINATOR") => env[binding].get(env[binding].idFromName(key));

/** Difference of two storageWork() readings. */
const workDelta = (before, after) => ({ reads: after.reads - before.reads, writes: after.writes - before.writes });

/**
 * `pairs` uncontended acquire+release pairs on each key, all keys
 * concurrently, on Baton's Coordinator or (`binding` "PLAIN") the plain
 * JavaScript baseline. With `options` (withKey's `{ grant: true }`) each
 * acquire passes them as its third argument, as withKey calls it; the
 * reply is then the grant object.
 */
async function pairs(env, { keys, pairs: count, binding, options }) {
  const stubs = keys.map((key) => coordinator(env, key, binding));
  const before = await Promise.all(stubs.map((stub) => stub.storageWork()));
  const start = Date.now();
  const outcomes = await Promise.all(
    keys.map(async (key, k) => {
      let notGranted = 0;
      for (let i = 0; i < count; i++) {
        const reply = await (options ? stubs[k].acquire(key, "bench-pair", options) : stubs[k].acquire(key, "bench-pair"));
        if ((reply?.status ?? reply) !== "granted") notGranted++;
        await stubs[k].release(key, "bench-pair");
      }
      return notGranted;
    }),
  );
  const elapsedMs = Date.now() - start;
  const after = await Promise.all(stubs.map((stub) => stub.storageWork()));
  return {
    elapsedMs,
    pairs: count * keys.length,
    notGranted: outcomes.reduce((a, b) => a + b, 0),
    work: before.map((b, k) => workDelta(b, after[k])),
  };
}

/**
 * `count` uncontended sections on `key`, each making the Coordinator calls
 * a class declared with `coordinated()` (contract §3a) makes around its
 * `run`, as js/coordinated.mjs makes them: the declaration (`declared`, plus
 * the namespace `binding` and the key) resolved for the run's event, the
 * instance's own registration when `supersede` asks for one (an enqueue),
 * the acquire with the section's options, then the release. As in
 * `pairs`, one stub for the loop (the wrapper's steps, as withKey's, take a
 * fresh one each), and no Workflow steps: both cost what they cost withKey.
 * Timed as a whole, with each call's share.
 */
async function sections(env, { key, sections: count, binding, declared }) {
  let stub;
  const options = { ...declared, coordinator: (e) => e[binding], key: (event) => event.payload.key };
  const id = "bench-section";
  const event = { instanceId: id, payload: { key } };
  let notGranted = 0;
  // Each call's share, summed (Date.now() advances across each call's I/O).
  const callMs = { register: 0, acquire: 0, release: 0 };
  const timed = async (call, f) => {
    const at = Date.now();
    const reply = await f();
    callMs[call] += Date.now() - at;
    return reply;
  };
  const start = Date.now();
  for (let i = 0; i < count; i++) {
    const settings = resolveOptions(options, event, env);
    const namespace = settings.coordinator;
    stub ??= namespace.get(namespace.idFromName(key));
    const register = registration(settings);
    if (register) await timed("register", () => stub.enqueue(key, true, id, undefined, register));
    const reply = await timed("acquire", () => stub.acquire(key, id, sectionKeys(key, settings)[0].options));
    if ((reply?.status ?? reply) !== "granted") notGranted++;
    await timed("release", () => stub.release(key, id));
  }
  return { elapsedMs: Date.now() - start, pairs: count, notGranted, callMs };
}

/**
 * A batch of `batch` new waiters behind the queue of `key`: their enqueues,
 * then their acquires (pending: the holder is alive), then their releases
 * (leaving the queue), each phase timed as a whole.
 */
async function flatBatch(env, { key, prefix, batch, options }) {
  const stub = coordinator(env, key);
  const ids = Array.from({ length: batch }, (_, i) => `${prefix}${i}`);
  const t0 = Date.now();
  for (const id of ids) await stub.enqueue(key, false, id, undefined, options);
  const t1 = Date.now();
  const outcomes = [];
  for (const id of ids) outcomes.push(await stub.acquire(key, id, options));
  const t2 = Date.now();
  for (const id of ids) await stub.release(key, id);
  const t3 = Date.now();
  return {
    enqueueMs: (t1 - t0) / batch,
    acquireMs: (t2 - t1) / batch,
    releaseMs: (t3 - t2) / batch,
    notPending: outcomes.filter((o) => o !== "pending").length,
  };
}

/**
 * `count` enqueues of new ids behind the queue of `key`, on Baton's
 * Coordinator or (`binding`) a floor (bench/floors.mjs), one after another,
 * timed as a whole. Then, untimed, those waiters leave (Baton's each
 * release; a floor clears all but its first `keep`), so that every batch
 * starts behind the same queue.
 */
async function enqueues(env, { key, binding, prefix, count, keep }) {
  const stub = coordinator(env, key, binding);
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  const start = Date.now();
  for (const id of ids) await stub.enqueue(key, false, id);
  const elapsedMs = Date.now() - start;
  if (binding === undefined || binding === "COORDINATOR") {
    for (const id of ids) await stub.release(key, id);
  } else {
    await stub.clear(key, keep);
  }
  return { elapsedMs, calls: count };
}

/**
 * Releases down a chain on `key`: `ids[0]` holds, the others wait in order
 * (registered with `grant`); each release hands the key to the next, which
 * the object tells by its grant event. Timed as a whole.
 */
async function handoffs(env, { key, ids }) {
  const stub = coordinator(env, key);
  const start = Date.now();
  for (let i = 0; i + 1 < ids.length; i++) {
    const reply = await stub.release(key, ids[i]);
    if (reply.next !== ids[i + 1]) throw new Error(`release of ${ids[i]} handed to ${reply.next}, not ${ids[i + 1]}`);
  }
  return { elapsedMs: Date.now() - start, calls: ids.length - 1 };
}

/**
 * Bench/split.mjs's replay: sets up the REPLAY_FLOOR object `name` (once,
 * with `setup` statements and `variantSql`), then runs `calls` (each a
 * list of statements) one RPC each, timed as a whole.
 */
async function replay(env, { name, setup, variantSql, calls }) {
  const stub = env.REPLAY_FLOOR.get(env.REPLAY_FLOOR.idFromName(name));
  if (setup) await stub.setup(setup, variantSql);
  const start = Date.now();
  for (const statements of calls) await stub.run(statements);
  return { elapsedMs: Date.now() - start, calls: calls.length };
}

/** Times the Workflow binding calls a hand-off makes: get+status, and get+sendEvent. */
async function workflowCalls(env, { id, reps }) {
  const t0 = Date.now();
  for (let i = 0; i < reps; i++) await (await env.BENCH_WF.get(id)).status();
  const t1 = Date.now();
  for (let i = 0; i < reps; i++) {
    await (await env.BENCH_WF.get(id)).sendEvent({ type: "bench-noop", payload: {} });
  }
  const t2 = Date.now();
  return { statusMs: (t1 - t0) / reps, sendEventMs: (t2 - t1) / reps };
}

/** Per-statement round trip of D1 (the serial queue's store), a trivial query. */
async function d1RoundTrip(env, { reps }) {
  const t0 = Date.now();
  for (let i = 0; i < reps; i++) await env.DB.prepare("SELECT 1").first();
  return { statementMs: (Date.now() - t0) / reps };
}

/** Sends a "ping" event to `id`, noting when (the floor's "release"). */
async function ping(env, { id }) {
  const instance = await env.BENCH_WF.get(id);
  const sendAt = Date.now();
  await instance.sendEvent({ type: "ping", payload: {} });
  return { sendAt, sendDone: Date.now() };
}

/** Enqueues `count` made-up waiters, from inside the Worker. */
async function bulkEnqueue(env, { key, count, prefix, tenants, priorities, from = 0 }) {
  const stub = coordinator(env, key);
  for (let i = 0; i < count; i++) {
    // With `tenants` and `priorities` (contract §1c), waiters go round
    // them: waiter n is of tenant n % tenants and priority n % priorities - 1.
    const n = from + i;
    const options = tenants
      ? { tenant: `tenant-${n % tenants}`, priority: (n % priorities) - 1 }
      : undefined;
    await stub.enqueue(key, false, `${prefix}${i}`, undefined, options);
  }
  return { enqueued: count };
}

/** The rate limiters the bench compares, by name: Baton's and the two baselines. */
const RATE_TARGETS = {
  baton: "RATE_LIMITER",
  js: "JS_RATE_LIMITER",
  fixed: "FIXED_RATE_LIMITER",
  // Issue 29's floors (bench/floors.mjs), which answer the RateLimiter's shape,
  // and issue 38's WASM floor (bench/wasm-floor).
  durableFloor: "DURABLE_FLOOR",
  rpcFloor: "RPC_FLOOR",
  wasmFloor: "WASM_FLOOR",
};

/**
 * `calls` acquires of `permits` on `bucket` under `rules`, one after another
 * through the stub of `target`'s object, timed as a whole.
 */
async function rateAcquires(env, { target, bucket, rules, calls, permits = 1 }) {
  const namespace = env[RATE_TARGETS[target]];
  const stub = namespace.get(namespace.idFromName(bucket));
  let granted = 0;
  const started = Date.now();
  for (let i = 0; i < calls; i++) granted += (await stub.acquire(bucket, { rules, permits })).granted;
  const elapsedMs = Date.now() - started;
  const work = target === "baton" ? await stub.storageWork() : null;
  return { elapsedMs, calls, granted, work };
}

/** `calls` calls of `method(...args)` on `target`'s object for `bucket`, timed as a whole. */
async function rateCalls(env, { target, bucket, method, args, calls }) {
  const namespace = env[RATE_TARGETS[target] ?? target];
  const stub = namespace.get(namespace.idFromName(bucket));
  const started = Date.now();
  for (let i = 0; i < calls; i++) await stub[method](...args);
  return { elapsedMs: Date.now() - started, calls };
}

const runsStub = (env, key) => env.RUNS.get(env.RUNS.idFromName(key));

/**
 * R1: `awaiters` awaits parked on a fresh run, then its claimant's
 * `complete`; each awaiter notes when its answer arrived.
 */
async function runsAwait(env, { key, awaiters }) {
  const stub = runsStub(env, key);
  await stub.claim(key, { instanceId: "bench-claimant" });
  const answers = Array.from({ length: awaiters }, () =>
    stub.await(key, { timeoutMs: 30_000 }).then((view) => ({ view, at: Date.now() })),
  );
  // Every await parked before the outcome (bounded: 30 s of awaits).
  for (let i = 0; (await stub.storageWork()).openWaits < awaiters; i++) {
    if (i > 10_000) throw new Error("the awaits never parked");
  }
  const completeAt = Date.now();
  await stub.complete(key, { instanceId: "bench-claimant", result: { key } });
  const completeMs = Date.now() - completeAt;
  const done = await Promise.all(answers);
  return {
    latenciesMs: done.map((d) => d.at - completeAt),
    completeMs,
    notComplete: done.filter((d) => d.view.state !== "complete").length,
  };
}

/**
 * R2: a claimed run key whose log has had `count` events appended, on the
 * object named `object` (default: the key's own).
 */
async function runsFill(env, { key, count, object = key }) {
  const stub = runsStub(env, object);
  await stub.claim(key, { instanceId: "bench-writer" });
  for (let i = 0; i < count; i++) await stub.append(key, { instanceId: "bench-writer", type: "fill", data: { i } });
  return { filled: count };
}

/**
 * R2: `batch` appends, then `batch` pairs of reads (the newest 10 events,
 * and the read after the end a follower makes), each phase timed as a
 * whole, with the object's storage work.
 */
async function runsLog(env, { key, batch, object = key }) {
  const stub = runsStub(env, object);
  const w0 = await stub.storageWork();
  const t0 = Date.now();
  let latest = 0;
  for (let i = 0; i < batch; i++) {
    latest = (await stub.append(key, { instanceId: "bench-writer", type: "tick", data: { i } })).seq;
  }
  const t1 = Date.now();
  const w1 = await stub.storageWork();
  let kept = 0;
  for (let i = 0; i < batch; i++) {
    const newest = await stub.events(key, { after: latest - 10, limit: 10 });
    await stub.events(key, { after: latest, limit: 100 });
    kept = newest.latestSeq - newest.firstSeq + 1;
  }
  const t2 = Date.now();
  const w2 = await stub.storageWork();
  return {
    appendMs: (t1 - t0) / batch,
    eventsMs: (t2 - t1) / batch,
    sumMs: (t2 - t0) / batch,
    appendWrites: (w1.writes - w0.writes) / batch,
    appendReads: (w1.reads - w0.reads) / batch,
    eventsReads: (w2.reads - w1.reads) / batch,
    kept,
  };
}

/**
 * `calls` acquires by the key's holder (no write on either side): per-call
 * work without a commit; with `options` (withKey's `{ grant: true }`) each
 * asks as withKey does.
 */
async function reacquire(env, { key, calls, binding, options }) {
  const stub = coordinator(env, key, binding);
  await stub.acquire(key, "bench-holder");
  const before = await stub.storageWork();
  const start = Date.now();
  for (let i = 0; i < calls; i++) await (options ? stub.acquire(key, "bench-holder", options) : stub.acquire(key, "bench-holder"));
  const elapsedMs = Date.now() - start;
  const work = workDelta(before, await stub.storageWork());
  await stub.release(key, "bench-holder");
  return { elapsedMs, calls, work };
}

/**
 * The RPC floor under P3: `calls` storageWork() calls (a method that reads
 * two counters, no storage) one after another on one object, timed as a whole.
 */
async function rpcFloor(env, { key, calls, binding }) {
  const stub = coordinator(env, key, binding);
  await stub.storageWork();
  const start = Date.now();
  for (let i = 0; i < calls; i++) await stub.storageWork();
  return { elapsedMs: Date.now() - start, calls };
}

/**
 * The serial queue's calls alone, no Workflow: `count` rounds of enqueue,
 * claim (uncontended: "holding") and release on a fresh id in `group`,
 * through `binding` (BATON or JS_QUEUE), each kind timed in total.
 */
async function serialCalls(env, { group, count, binding }) {
  const queue = env[binding];
  const ms = { enqueue: 0, claim: 0, release: 0 };
  for (let i = 0; i < count; i++) {
    const who = { group, instanceId: `${group}-${i}` };
    let at = Date.now();
    await queue.serialEnqueue({ ...who, revision: "r" });
    ms.enqueue += Date.now() - at;
    at = Date.now();
    const claim = await queue.serialClaim(who);
    ms.claim += Date.now() - at;
    if (claim.status !== "holding") throw new Error(`claim: ${JSON.stringify(claim)}`);
    at = Date.now();
    await queue.serialRelease(who);
    ms.release += Date.now() - at;
  }
  return Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v / count]));
}

/**
 * `coordinatorList` through the service binding, page after page from
 * `cursor` (the start without), at most `pages` pages of `limit`: each
 * page's time and size, and where the walk stopped.
 */
async function listPages(env, { limit, pages, cursor = null, repeat = 1 }) {
  const times = [];
  const sizes = [];
  for (let n = 0; n < pages; n++) {
    // `repeat` reads of the same page, timed together: the Worker's clock
    // moves in whole milliseconds.
    const at = Date.now();
    let page;
    for (let r = 0; r < repeat; r++) {
      page = await env.BATON.coordinatorList({ limit, ...(cursor ? { cursor } : {}) });
    }
    times.push((Date.now() - at) / repeat);
    sizes.push(page.keys.length);
    cursor = page.cursor;
    if (cursor === null) break;
  }
  return { times, sizes, cursor };
}

/** Reports to list shard `shard` (bench/busy.mjs builds them), `reportMany` at a time. */
async function listReport(env, { shard, reports }) {
  const stub = env.BUSY_LIST.get(env.BUSY_LIST.idFromName(`baton-list-${shard}`));
  const started = Date.now();
  for (let at = 0; at < reports.length; at += 500) {
    await stub.reportMany(reports.slice(at, at + 500));
  }
  return { elapsedMs: Date.now() - started };
}

const ROUTES = {
  "/bench/list-pages": listPages,
  "/bench/list-report": listReport,
  "/bench/serial-calls": serialCalls,
  "/bench/rpc-floor": rpcFloor,
  "/bench/reacquire": reacquire,
  "/bench/rate-acquires": rateAcquires,
  "/bench/rate-calls": rateCalls,
  "/bench/runs-await": runsAwait,
  "/bench/runs-fill": runsFill,
  "/bench/runs-log": runsLog,
  "/bench/pairs": pairs,
  "/bench/sections": sections,
  "/bench/enqueues": enqueues,
  "/bench/handoffs": handoffs,
  "/bench/replay": replay,
  "/bench/flat": flatBatch,
  "/bench/workflow-calls": workflowCalls,
  "/bench/ping": ping,
  "/bench/d1": d1RoundTrip,
  "/bench/bulk-enqueue": bulkEnqueue,
  "/bench/debounce-burst": debounceBurst,
};

/** `count` trailing `debounce` calls on `key`, one after another, timed as a whole. */
async function debounceBurst(env, { key, count, delayMs }) {
  const stub = env.DEBOUNCER.get(env.DEBOUNCER.idFromName(key));
  const started = Date.now();
  for (let n = 0; n < count; n++) {
    await stub.debounce(key, { delayMs, params: { mode: "debounced", n } });
  }
  return { elapsedMs: Date.now() - started };
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.json() : undefined;
    try {
      if (ROUTES[url.pathname]) return json(await ROUTES[url.pathname](env, body));
      switch (url.pathname) {
        case "/rpc":
          return json({ value: await coordinator(env, body.key, body.binding)[body.method](...body.args) });
        case "/serial":
          return json({ value: await env[body.binding ?? "BATON"][body.method](...body.args) });
        case "/debouncer": {
          const stub = env.DEBOUNCER.get(env.DEBOUNCER.idFromName(body.key));
          return json({ value: await stub[body.method](...body.args) });
        }
        case "/create":
          await env.BENCH_WF.create({ id: body.id, params: body.params });
          return json({ created: body.id });
        case "/status":
          try {
            return json(await (await env.BENCH_WF.get(url.searchParams.get("id"))).status());
          } catch (error) {
            return json({ status: "not_found", error: String(error?.message ?? error) });
          }
        case "/event":
          await (await env.BENCH_WF.get(body.id)).sendEvent({ type: body.type, payload: body.payload });
          return json({ sent: body.id });
        case "/terminate":
          await (await env.BENCH_WF.get(body.id)).terminate();
          return json({ terminated: body.id });
        default:
          return json({ error: "no such route" }, 404);
      }
    } catch (error) {
      return json({ error: String(error?.message ?? error) }, 500);
    }
  },
};
