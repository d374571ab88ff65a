// The nemesis: many real Workflow instances of two Workflows on 10 keys
// (limits 1 to 3) and serial-queue deploys on 3 groups, while the fault
// injector (tests/miniflare/fault-injector.mjs) makes Baton's Workflow
// calls throw or hang, resets its objects before a commit, between a
// commit and its effect and after it, and fails D1 batches; and the test
// terminates instances at random. Every fault and every choice comes from
// one seed (BATON_NEMESIS_SEED), printed with the counts; RELIABILITY.md
// says how to rerun one. `npm test` runs one seed at the defaults below
// (1,000 keyed instances and 90 deploys, a few minutes on 2 cores);
// `bash scripts/nemesis.sh` runs more seeds, or larger runs.
//
// Checked from the Recorder's log (when each body entered and exited, with
// its fence) and each instance's end:
// - every instance runs its body once and completes, or ends superseded,
//   busy or skipped (or terminated: by the test, or by Baton superseding a
//   waiter, which never held);
// - on no key do more bodies overlap than its limit; in no group two;
// - no fence given twice on a key; on a key of limit 1 a body that began
//   after another ended has the larger fence; per group, fences strictly
//   increase in the order the deploys ran;
// - per group, the newest revision's body runs last;
// - nothing is stuck: every instance ends within the deadline (no turn
//   timeout hides a lost wake-up: keyed instances wait up to an hour);
//   a stuck instance's status, its key's or group's view and every runtime
//   line naming it are printed (BATON_NEMESIS_LINES=file keeps them all).
// No assertion is about timing; the run time is printed.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { startBaton } from "./harness.mjs";
import { mostAtOnce, rng } from "./seeded.mjs";

const SEED = Number(process.env.BATON_NEMESIS_SEED ?? 2);
const INSTANCES = Number(process.env.BATON_NEMESIS_INSTANCES ?? 1000);
const DEPLOYS = Number(process.env.BATON_NEMESIS_DEPLOYS ?? 90);
/** How long every instance has to end once the last one is created. */
const DEADLINE_MS = Number(process.env.BATON_NEMESIS_DEADLINE_MS ?? 300_000);
/** The whole run's bound: creating every instance, then the deadline. */
const RUN_MS_MAX = DEADLINE_MS + 480_000;
/** What the suite's run covers at least (issue 30): keyed instances, keys, the limits' range, Workflows. */
const SUITE_INSTANCES_MIN = 1000;
const KEY_COUNT = 10;
const LIMIT_MAX = 3;
const GROUP_COUNT = 3;
const BATCH = 50;
/** Terminations the test attempts after each batch of arrivals. */
const TERMINATIONS_PER_BATCH = 3;

/** The fault plan: production-like rates, every draw from the seed. */
const PLAN = {
  seed: SEED,
  rates: { status: 0.1, sendEvent: 0.1, create: 0.1, terminate: 0.1 },
  hangRate: 0.05,
  hangMsMax: 1500,
  resetRates: { before: 0.01, between: 0.03, after: 0.03 },
  d1BatchRate: 0.03,
};

/** Steps retried more than the tests' default: a reset or a failed batch may hit every try of a short budget. */
const STEP_RETRIES = { limit: 6, delay: "200 milliseconds" };

describe(`nemesis (seed ${SEED})`, () => {
  let h;
  before(async () => {
    h = await startBaton({ strict: true, holderCheckMs: 500 });
  });
  after(() => h?.dispose());

  test(`${INSTANCES} keyed instances and ${DEPLOYS} deploys under faults keep every rule`, { timeout: RUN_MS_MAX }, async () => {
    const started = Date.now();
    const random = rng(SEED);
    const pick = (items) => items[Math.floor(random() * items.length)];
    const keys = Array.from({ length: KEY_COUNT }, (_, i) => ({ key: `nemesis-${i}`, limit: 1 + Math.floor(random() * LIMIT_MAX) }));
    const groups = Array.from({ length: GROUP_COUNT }, (_, i) => `nemesis-g${i}`);

    const keyed = Array.from({ length: INSTANCES }, (_, i) => {
      const { key, limit } = pick(keys);
      const r = random();
      return {
        id: `nk-${SEED}-${i}`,
        kind: "key",
        key,
        limit,
        workflow: random() < 0.5 ? "OTHER" : undefined,
        holdMs: Math.floor(random() * 50),
        // How it arrives: registered by enqueue first (5% of them superseding
        // the key's waiters), asking to be skipped when busy, or plainly.
        arrival: r < 0.02 ? "supersede" : r < 0.15 ? "enqueue" : r < 0.2 ? "skip" : "plain",
      };
    });
    const deploys = Array.from({ length: DEPLOYS }, (_, i) => ({
      id: `nd-${SEED}-${i}`,
      kind: "deploy",
      group: pick(groups),
      holdMs: Math.floor(random() * 50),
    }));
    // Deploys arrive spread among the keyed instances; each group's
    // revisions rise in the order its deploys arrive.
    const arrivals = [...keyed];
    for (const d of deploys) arrivals.splice(Math.floor(random() * (arrivals.length + 1)), 0, d);
    const revisions = new Map(groups.map((g) => [g, 0]));
    const newest = new Map();
    for (const x of arrivals.filter((a) => a.kind === "deploy")) {
      revisions.set(x.group, revisions.get(x.group) + 1);
      x.revision = revisions.get(x.group);
      newest.set(x.group, x.id);
    }
    const byId = new Map(arrivals.map((x) => [x.id, x]));
    // The run covers what the issue asks of it (a smaller one, by the variables, only says so).
    const covered = {
      keyed: keyed.length,
      keys: new Set(keyed.map((x) => x.key)).size,
      limits: [...new Set(keys.map((k) => k.limit))].sort(),
      workflows: new Set(keyed.map((x) => x.workflow ?? "WORKFLOW")).size,
    };
    console.log(`nemesis: seed ${SEED} covers ${JSON.stringify(covered)}`);
    if (process.env.BATON_NEMESIS_INSTANCES === undefined) {
      assert.ok(covered.keyed >= SUITE_INSTANCES_MIN && covered.keys === KEY_COUNT && covered.workflows === 2, JSON.stringify(covered));
      assert.ok(covered.limits.every((l) => l >= 1 && l <= LIMIT_MAX) && covered.limits.length > 1, JSON.stringify(covered));
    }

    const previous = await h.faults(PLAN);
    assert.deepEqual(previous.injected, {}, "no fault before the plan");

    const terminatedAt = new Map();
    const supersedeAt = new Map();
    async function terminate(id) {
      const at = Date.now();
      try {
        await h.terminate(id, byId.get(id).workflow);
        terminatedAt.set(id, at);
      } catch {
        // Not created yet, or already ended: not terminated by the test.
      }
    }
    /** Terminates a random holder or waiter of a random key or group, if there is one. */
    async function terminateOne() {
      try {
        if (random() < 0.8) {
          const view = await h.inspect(pick(keys).key);
          const live = (random() < 0.5 ? view.holders : view.waiting).filter((x) => !terminatedAt.has(x.id) && byId.has(x.id));
          if (live.length > 0) await terminate(pick(live).id);
        } else {
          const view = (await h.serial("serialInspect", { group: pick(groups) })).value;
          const ids = [view?.holder, ...(view?.waiting ?? [])].filter(Boolean).map((x) => x.instanceId);
          // The newest deploy of a group is never terminated: it must run last.
          const live = ids.filter((id) => byId.has(id) && !terminatedAt.has(id) && newest.get(byId.get(id).group) !== id);
          if (live.length > 0) await terminate(pick(live));
        }
      } catch {
        // A read the nemesis itself reset: no termination this time.
      }
    }

    // A group's deploys arrive one after another: the next is created once
    // the previous has enqueued (the queue knows it), so "newest" is the
    // order of arrival, not of the engine's scheduling.
    const groupTurns = new Map();
    const known = (view, id) =>
      view && (view.holder?.instanceId === id || [...view.waiting, ...view.recent].some((w) => w.instanceId === id));
    function deploy(x) {
      const params = { mode: "serial", group: x.group, revision: `r${x.revision}`, holdMs: x.holdMs };
      params.options = { pollInterval: 2000, stepRetries: STEP_RETRIES };
      const mine = (groupTurns.get(x.group) ?? Promise.resolve()).then(async () => {
        await h.create(x.id, params);
        await h.until(`${x.id} enqueued`, async () => known((await h.serial("serialInspect", { group: x.group })).value, x.id), 120_000);
      });
      groupTurns.set(x.group, mine.catch(() => {}));
      return mine;
    }

    async function arrive(x) {
      if (x.kind === "deploy") return deploy(x);
      const options = x.workflow ? { workflow: x.workflow, limit: x.limit } : { limit: x.limit };
      if (x.arrival === "enqueue" || x.arrival === "supersede") {
        if (x.arrival === "supersede") supersedeAt.set(x.id, Date.now());
        // A reset may refuse the enqueue: the instance then registers itself.
        await h.rpc(x.key, "enqueue", x.key, x.arrival === "supersede", x.id, null, options);
      }
      const params = {
        key: x.key,
        limit: x.limit,
        workflow: x.workflow,
        holdMs: x.holdMs,
        turnTimeout: "1 hour",
        stepRetries: STEP_RETRIES,
        ...(x.arrival === "skip" ? { onBusy: "skip" } : {}),
      };
      return h.create(x.id, params, x.workflow);
    }

    for (let i = 0; i < arrivals.length; i += BATCH) {
      await Promise.all(arrivals.slice(i, i + BATCH).map(arrive));
      for (let n = 0; n < TERMINATIONS_PER_BATCH; n++) await terminateOne();
    }
    const created = Date.now();

    // Every instance ends, within the deadline.
    const ends = new Map();
    const deadline = created + DEADLINE_MS;
    for (;;) {
      const open = arrivals.filter((x) => !ends.has(x.id));
      for (let i = 0; i < open.length; i += 25) {
        await Promise.all(
          open.slice(i, i + 25).map(async (x) => {
            const details = await h.details(x.id, x.workflow);
            if (["complete", "errored", "terminated"].includes(details.status)) ends.set(x.id, details);
          }),
        );
      }
      if (ends.size === arrivals.length || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const report = await h.faults({});
    const stuck = arrivals.filter((x) => !ends.has(x.id)).map((x) => x.id);

    const log = await h.log();
    const entries = new Map();
    for (const e of log) {
      if (!byId.has(e.id)) continue;
      const mine = entries.get(e.id) ?? { enters: [], exits: [] };
      if (e.kind === "enter") mine.enters.push(e);
      if (e.kind === "exit") mine.exits.push(e);
      entries.set(e.id, mine);
    }

    const outcomes = {};
    const wrong = [];
    for (const x of arrivals) {
      const end = ends.get(x.id);
      if (!end) continue;
      const { enters = [] } = entries.get(x.id) ?? {};
      const outcome = outcomeOf(x, end, terminatedAt.has(x.id));
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      const ran = outcome === "ran";
      if (outcome === "errored" || outcome === "unexpected") wrong.push(`${x.id}: ${JSON.stringify(end)}`);
      if (ran && enters.length !== 1) wrong.push(`${x.id} ran its body ${enters.length} times`);
      if (!ran && !outcome.startsWith("terminated") && enters.length !== 0) wrong.push(`${x.id} (${outcome}) entered its body`);
      if (outcome === "terminated by Baton" && enters.length !== 0) wrong.push(`${x.id} was terminated by Baton after holding`);
      if (enters.length > 1) wrong.push(`${x.id} entered its body ${enters.length} times`);
    }

    const intervals = (ids) =>
      ids.flatMap((id) => {
        const e = entries.get(id);
        if (!e || e.enters.length === 0) return [];
        const start = e.enters[0].at;
        // A body may begin between the test's terminate call and its effect:
        // it then ended no earlier than it began.
        const terminated = terminatedAt.has(id) ? Math.max(terminatedAt.get(id), start) : undefined;
        const end = e.exits[0]?.at ?? terminated ?? Number.POSITIVE_INFINITY;
        return [{ id, start, end, fence: e.enters[0].fence }];
      });
    for (const { key, limit } of keys) {
      const bodies = intervals(keyed.filter((x) => x.key === key).map((x) => x.id));
      const most = mostAtOnce(bodies);
      if (most > limit) wrong.push(`${key}: ${most} bodies at once, limit ${limit}`);
      // With one slot, a body that began after another ended was granted
      // after it: its fence is larger. (With more slots a holder granted
      // earlier may begin its body after a later one ended: fences order
      // grants, not bodies.)
      for (const a of limit === 1 ? bodies : []) {
        for (const b of bodies) {
          if (a !== b && a.end < b.start && !(a.fence < b.fence)) wrong.push(`${key}: ${b.id} (fence ${b.fence}) ran after ${a.id} (fence ${a.fence})`);
        }
      }
      if (new Set(bodies.map((b) => b.fence)).size !== bodies.length) wrong.push(`${key}: a fence given twice`);
    }
    for (const group of groups) {
      const bodies = intervals(deploys.filter((d) => d.group === group).map((d) => d.id));
      const most = mostAtOnce(bodies);
      if (most > 1) wrong.push(`${group}: ${most} deploys at once`);
      const last = bodies.sort((a, b) => a.start - b.start).at(-1);
      for (let i = 1; i < bodies.length; i++) {
        if (!(bodies[i - 1].fence < bodies[i].fence)) wrong.push(`${group}: ${bodies[i].id} (fence ${bodies[i].fence}) ran after fence ${bodies[i - 1].fence}`);
      }
      if (last?.id !== newest.get(group)) wrong.push(`${group}: ${last?.id} ran last, not the newest ${newest.get(group)}`);
    }

    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `nemesis: seed ${SEED}, ${INSTANCES} keyed + ${DEPLOYS} deploys, ${seconds} s; ` +
        `outcomes ${JSON.stringify(outcomes)}; faults ${JSON.stringify(report.injected)}; stuck ${stuck.length}`,
    );
    for (const id of stuck.slice(0, 5)) console.log(await diagnosis(h, byId.get(id)));
    if (stuck.length > 0 && process.env.BATON_NEMESIS_LINES) {
      // Everything the runtime printed (decision lines among it), to read a stuck instance's story.
      writeFileSync(process.env.BATON_NEMESIS_LINES, h.runtimeLines.join("\n"));
    }
    assert.deepEqual(stuck.slice(0, 10), [], `${stuck.length} instances stuck (seed ${SEED})`);
    assert.deepEqual(wrong.slice(0, 40), [], `${wrong.length} broken rules (seed ${SEED})`);
    assert.ok((report.injected["throw sendEvent"] ?? 0) > 0 && (report.injected["throw status"] ?? 0) > 0, "faults were injected");
  });
});

/** How an instance ended, by its status and output. */
function outcomeOf(x, end, terminatedByTest) {
  if (end.status === "terminated") return terminatedByTest ? "terminated by the test" : "terminated by Baton";
  if (end.status === "errored") return "errored";
  const out = end.output;
  if (x.kind === "deploy") {
    if (out?.ran === true) return "ran";
    if (out?.error === "RunSkipped") return "skipped";
    return "unexpected";
  }
  if (out?.superseded === false && out.value === "done") return "ran";
  if (out?.superseded === true) return "superseded";
  if (out?.busy === true) return "busy";
  return "unexpected";
}

/** What is known of a stuck instance: its status, its key's or group's view, and every runtime line naming it. */
async function diagnosis(h, x) {
  const details = await h.details(x.id, x.workflow).catch((e) => String(e));
  const view =
    x.kind === "key"
      ? await h.inspect(x.key).catch((e) => String(e))
      : (await h.serial("serialInspect", { group: x.group }).catch((e) => ({ value: String(e) }))).value;
  const lines = h.runtimeLines.filter((line) => line.includes(x.id));
  return `stuck ${x.id} (${JSON.stringify(x)}): ${JSON.stringify(details)}\n  view ${JSON.stringify(view)}\n  ${lines.join("\n  ")}`;
}
