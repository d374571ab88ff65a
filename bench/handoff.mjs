// P1 and P2: hand-off latency between real Workflow instances, from the
// holder's release call to the next holder starting its next step, both
// read with Date.now() inside workerd (see bench/worker.mjs), so one clock.
import { summary } from "./stats.mjs";

/** P1: chains of waiters on a key; each round's waiters all queue, then hand on one by one. */
export const P1_ROUNDS = 4;
export const P1_WAITERS_PER_ROUND = 20;
/**
 * P1 as throughput (issue 38): chains of this many instances on one key
 * (a holder and the rest queued behind it), each holding for one trivial
 * step, per side and round; BENCH_P1_CHAIN_ROUNDS overrides the rounds.
 */
export const P1_CHAIN_INSTANCES = 50;
export const P1_CHAIN_ROUNDS = Number(process.env.BENCH_P1_CHAIN_ROUNDS ?? 3);
/** Engine floor: a bare event wake-up followed by one Coordinator call, sequentially. */
export const FLOOR_SAMPLES = 20;
/** P2 with push: one hand-off per group, sequentially. */
export const P2_PUSH_SAMPLES = 30;
/** P2 baseline (push off): one hand-off per group, all groups at once; each waits up to a poll. */
export const P2_BASELINE_SAMPLES = 8;
/** serialize's default poll interval (js/serialize.mjs), which the baseline waits out. */
export const SERIAL_POLL_MS = 30_000;

/** Lets waiters that reached the Coordinator also reach their `waitForEvent`. */
const SETTLE_MS = 300;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One hand-off from the outputs of the releasing instance and the next holder. */
const handoffRecord = (out, next) => {
  // A waiter handed the key by grant (contract §1b) makes no granting call:
  // its wait's event is the grant, and its next step is the body's.
  const grantCallAt = next.grantCallAt ?? next.enterAt;
  return {
    // serialize's Baton steps (P10): the holder's run was uncontended, the next one's waited once.
    holderSteps: out.batonSteps,
    waiterSteps: next.batonSteps,
    totalMs: next.enterAt - out.releaseAt,
    releaseCallMs: out.releaseDone - out.releaseAt,
    wakeMs: grantCallAt - out.releaseAt,
    grantToStepMs: next.enterAt - grantCallAt,
    // Of which the granting call itself (acquire or claim).
    grantCallMs: (next.grantDone ?? grantCallAt) - grantCallAt,
  };
};

/** Hand-off records from a chain's outputs, paired by the `next` each release returned. */
function handoffs(outputs) {
  return Object.values(outputs)
    .filter((out) => out.next && outputs[out.next])
    .map((out) => handoffRecord(out, outputs[out.next]));
}

/** Summaries of each field of the hand-off records. */
function summarize(records) {
  const pick = (field) => summary(records.map((r) => r[field]));
  return {
    total: pick("totalMs"),
    releaseCall: pick("releaseCallMs"),
    wake: pick("wakeMs"),
    grantToStep: pick("grantToStepMs"),
    grantCall: pick("grantCallMs"),
  };
}

/**
 * One P1 chain on a fresh key: a holder, `count` waiters queued behind
 * it, then handed on one by one. `side` "baton" runs withKey over Baton's
 * Coordinator (grants, §1b); "plain" the hand-written loop over the plain
 * JS Durable Object (bench/worker.mjs, mode "plainKey"). Each instance's
 * body is one trivial step (bench/worker.mjs's "enter").
 */
async function chain(b, side, round, count = P1_WAITERS_PER_ROUND, prefix = "p1") {
  const key = `${prefix}-${side}-${round}`;
  const mode = side === "baton" ? "key" : "plainKey";
  const inspect = () => (side === "baton" ? b.rpc(key, "inspect", key) : b.plainRpc(key, "inspect", key));
  const work = () => (side === "baton" ? b.rpc(key, "storageWork") : b.plainRpc(key, "storageWork"));
  const holder = `${key}-h`;
  await b.create(holder, { mode, key, waitForFinish: true });
  await b.until(`${holder} to hold`, async () => (await inspect()).holder?.id === holder);
  const w0 = await work();
  const waiters = Array.from({ length: count }, (_, i) => `${key}-w${i}`);
  for (const id of waiters) await b.create(id, { mode, key });
  await b.until(`${key}: all waiters queued`, async () => (await inspect()).waiting.length === waiters.length);
  await sleep(SETTLE_MS);
  const w1 = await work();
  await b.sendEvent(holder, "finish");
  const outputs = {};
  for (const id of [holder, ...waiters]) outputs[id] = await b.output(id);
  const w2 = await work();
  // The chain as throughput: from the holder's release call to the last
  // waiter's body step, every hand-off of the chain one after another.
  const lastEnter = Math.max(...waiters.map((id) => outputs[id].enterAt));
  return {
    chainMs: lastEnter - outputs[holder].releaseAt,
    records: handoffs(outputs),
    // P10: Baton steps per withKey section, the holder's (the key was
    // free) and each waiter's (it waited once, handed on by grant).
    steps: { free: [outputs[holder].batonSteps], contended: waiters.map((id) => outputs[id].batonSteps) },
    work: {
      joins: waiters.length,
      joinReads: w1.reads - w0.reads,
      joinWrites: w1.writes - w0.writes,
      handoffReads: w2.reads - w1.reads,
      handoffWrites: w2.writes - w1.writes,
    },
  };
}

/**
 * P1: `P1_ROUNDS` chains of `P1_WAITERS_PER_ROUND` hand-offs on each side,
 * Baton's and the plain baseline's, alternating which goes first; also
 * Baton's storage work per join and per hand-off, and its steps per section.
 */
export async function coordinatorHandoff(b) {
  const records = [];
  const plainRecords = [];
  const perRoundP50 = [];
  const work = { joins: 0, joinReads: 0, joinWrites: 0, handoffs: 0, handoffReads: 0, handoffWrites: 0 };
  const steps = { free: [], contended: [] };
  const plainSteps = { free: [], contended: [] };
  for (let round = 0; round < P1_ROUNDS; round++) {
    const order = round % 2 ? ["plain", "baton"] : ["baton", "plain"];
    for (const side of order) {
      const ran = await chain(b, side, round);
      if (side === "plain") {
        plainRecords.push(...ran.records);
        plainSteps.free.push(...ran.steps.free);
        plainSteps.contended.push(...ran.steps.contended);
        continue;
      }
      records.push(...ran.records);
      perRoundP50.push(summary(ran.records.map((r) => r.totalMs)).p50);
      steps.free.push(...ran.steps.free);
      steps.contended.push(...ran.steps.contended);
      for (const field of ["joins", "joinReads", "joinWrites", "handoffReads", "handoffWrites"]) work[field] += ran.work[field];
      work.handoffs += ran.records.length;
    }
  }
  return {
    ...summarize(records),
    perRoundP50,
    work,
    samples: records.map((r) => r.totalMs),
    steps: { free: summary(steps.free), contended: summary(steps.contended) },
    plain: {
      ...summarize(plainRecords),
      steps: { free: summary(plainSteps.free), contended: summary(plainSteps.contended) },
    },
  };
}

/**
 * P1 as throughput (issue 38): `P1_CHAIN_ROUNDS` chains of
 * `P1_CHAIN_INSTANCES` instances on one key per side, Baton's (withKey,
 * by grant) and the plain JS Durable Object's, alternating which goes
 * first; each chain's hand-offs per second, from the holder's release call
 * to the last instance's body step, and Baton's over the plain one's per
 * round.
 */
export async function chainThroughput(b) {
  const perSecond = { baton: [], plain: [] };
  const ratios = [];
  // Baton's storage work over its chains' hand-offs (as P5 counts it).
  const work = { handoffs: 0, reads: 0, writes: 0 };
  const handoffsPerChain = P1_CHAIN_INSTANCES - 1;
  for (let round = 0; round < P1_CHAIN_ROUNDS; round++) {
    const order = round % 2 ? ["plain", "baton"] : ["baton", "plain"];
    const rate = {};
    for (const side of order) {
      const ran = await chain(b, side, round, handoffsPerChain, "p1chain");
      if (ran.records.length !== handoffsPerChain) {
        throw new Error(`P1 chain ${side} ${round}: ${ran.records.length} of ${handoffsPerChain} hand-offs paired`);
      }
      rate[side] = (handoffsPerChain / Math.max(1, ran.chainMs)) * 1000;
      perSecond[side].push(rate[side]);
      if (side === "baton") {
        work.handoffs += ran.records.length;
        work.reads += ran.work.handoffReads;
        work.writes += ran.work.handoffWrites;
      }
    }
    ratios.push(rate.baton / rate.plain);
  }
  return {
    baton: summary(perSecond.baton),
    plain: summary(perSecond.plain),
    ratio: summary(ratios),
    handoffsPerChain,
    perHandoff: { reads: work.reads / work.handoffs, writes: work.writes / work.handoffs },
  };
}

/** The engine's floor: ping a parked instance, time to its call step and to the step after. */
export async function engineFloor(b) {
  const records = [];
  for (let i = 0; i < FLOOR_SAMPLES; i++) {
    const id = `floor-${i}`;
    await b.create(id, { mode: "floor", key: "floor" });
    await b.until(`${id} running`, async () => (await b.details(id)).status === "running");
    await sleep(SETTLE_MS);
    const { sendAt, sendDone } = await b.call("/bench/ping", { id });
    const out = await b.output(id);
    records.push(handoffRecord({ releaseAt: sendAt, releaseDone: sendDone }, out));
  }
  return summarize(records);
}

const stepOutputs = async (b, id) => (await b.details(id)).__LOCAL_DEV_STEP_OUTPUTS ?? [];

/**
 * One serial-queue hand-off in its own group: H holds, W claims and parks
 * in its wait, then (after `delayMs`) H finishes and releases. Returns the
 * hand-off record.
 */
export async function serialHandoff(b, name, delayMs = 0, queue = "baton") {
  const group = `p2-${name}`;
  const holder = `${group}-h`;
  const waiter = `${group}-w`;
  const binding = queue === "js" ? "JS_QUEUE" : "BATON";
  await b.create(holder, { mode: "serial", group, revision: "r1", waitForFinish: true, queue });
  await b.until(
    `${holder} to hold`,
    async () => (await b.serial("serialInspect", { group }, binding)).holder?.instanceId === holder,
  );
  await b.create(waiter, { mode: "serial", group, revision: "r2", queue });
  await b.until(`${waiter} to park`, async () =>
    (await stepOutputs(b, waiter)).some((o) => o?.status === "waiting"),
  );
  await sleep(Math.max(SETTLE_MS, delayMs));
  await b.sendEvent(holder, "finish");
  // Paired by construction: without push, the release names no one.
  return handoffRecord(await b.output(holder), await b.output(waiter, 2 * SERIAL_POLL_MS));
}

/**
 * P2 with push on: `P2_PUSH_SAMPLES` hand-offs one after another through
 * Baton, alternating with as many through the plain JS Worker baseline
 * (bench/js-queue.mjs), so both see the same machine at the same time.
 * Which goes first alternates too: whatever one leaves running after its
 * sample (Baton's status check, HAND_ON_CHECK_DELAY_MS after the
 * release, in waitUntil) falls as often after the other's sample as before it.
 */
export async function serialPush(b) {
  const baton = [];
  const js = [];
  for (let i = 0; i < P2_PUSH_SAMPLES; i++) {
    const runBaton = async () => baton.push(await serialHandoff(b, `push-${i}`));
    const runJs = async () => js.push(await serialHandoff(b, `js-${i}`, 0, "js"));
    for (const run of i % 2 ? [runJs, runBaton] : [runBaton, runJs]) await run();
  }
  const steps = (records) => ({
    uncontended: summary(records.map((r) => r.holderSteps)),
    contended: summary(records.map((r) => r.waiterSteps)),
  });
  return { ...summarize(baton), steps: steps(baton), js: { ...summarize(js), steps: steps(js) } };
}

/**
 * P2 baseline (Baton started with SERIAL_PUSH = "off"): the waiter only
 * learns at its next poll. Releases are spread evenly over the poll
 * interval (release k at (k + 0.5)/n of it after the waiter parks), which
 * samples a uniformly random release time; all groups run at once.
 */
export async function serialBaseline(b) {
  const records = await Promise.all(
    Array.from({ length: P2_BASELINE_SAMPLES }, (_, k) =>
      serialHandoff(b, `poll-${k}`, ((k + 0.5) / P2_BASELINE_SAMPLES) * SERIAL_POLL_MS),
    ),
  );
  return summarize(records);
}
