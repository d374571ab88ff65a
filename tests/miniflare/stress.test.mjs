// Stress: 240 real Workflow instances of two Workflows on 5 keys with
// limits 1 to 4, some registered by `enqueue` before they are created, and
// some terminated at random while they wait or hold. Checked from the
// Recorder's log of when each body entered and exited: on no key do more
// live holders overlap than its limit, and every instance not terminated
// runs its body once and completes. No assertion is about timing; the run
// time is printed.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";
import { mostAtOnce, rng } from "./seeded.mjs";

const KEYS = [
  { key: "stress-0", limit: 1 },
  { key: "stress-1", limit: 2 },
  { key: "stress-2", limit: 3 },
  { key: "stress-3", limit: 1 },
  { key: "stress-4", limit: 4 },
];
const INSTANCES = 240;
/** Termination attempts after each batch of arrivals. */
const TERMINATIONS_PER_BATCH = 4;
const SEED = Number(process.env.BATON_STRESS_SEED ?? 20261203);

describe("stress: many instances, five keys, random terminations", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 300 });
  });
  after(() => h?.dispose());

  test(`${INSTANCES} instances on ${KEYS.length} keys never exceed a key's limit`, async () => {
    const started = Date.now();
    const random = rng(SEED);
    const pick = (items) => items[Math.floor(random() * items.length)];
    const instances = Array.from({ length: INSTANCES }, (_, i) => {
      const { key, limit } = pick(KEYS);
      const workflow = random() < 0.5 ? "OTHER" : undefined;
      const holdMs = Math.floor(random() * 200);
      return { id: `st-${i}`, key, limit, workflow, holdMs, enqueued: random() < 0.25 };
    });
    const byId = new Map(instances.map((x) => [x.id, x]));

    const terminatedAt = new Map();
    /** Terminates a random holder or waiter of a random key, if there is one. */
    async function terminateOne() {
      const { key } = pick(KEYS);
      const view = await h.inspect(key);
      const candidates = random() < 0.5 ? view.holders : view.waiting;
      const live = candidates.filter((x) => !terminatedAt.has(x.id));
      if (live.length === 0) return;
      const { id } = pick(live);
      // Before the call: the instance's body cannot last past the moment
      // Baton sees it terminated, which is after this.
      const at = Date.now();
      try {
        await h.terminate(id, byId.get(id).workflow);
        terminatedAt.set(id, at);
      } catch {
        // Not created yet, or it finished first: not terminated.
      }
    }

    // Arrive in batches: enqueue some first (the documented flow), then
    // create; between batches, terminate some that hold or wait, and sample
    // every key's holders (never above its limit).
    const BATCH = 20;
    for (let i = 0; i < instances.length; i += BATCH) {
      const batch = instances.slice(i, i + BATCH);
      await Promise.all(
        batch.map(async ({ id, key, limit, workflow, holdMs, enqueued }) => {
          if (enqueued) {
            const options = workflow ? { workflow, limit } : { limit };
            await h.ok(key, "enqueue", key, false, id, null, options);
          }
          await h.create(id, { key, limit, workflow, holdMs, turnTimeout: "5 seconds" }, workflow);
        }),
      );
      for (let n = 0; n < TERMINATIONS_PER_BATCH; n++) await terminateOne();
      for (const { key, limit } of KEYS) {
        const view = await h.inspect(key);
        assert.ok(view.holders.length <= limit, `${key}: ${view.holders.length} holders, limit ${limit}`);
      }
    }

    // Everyone not terminated completes, having run its body.
    const outcomes = await Promise.all(
      instances.map(async ({ id, workflow }) => {
        const status = await h.untilStatus(id, ["complete", "errored", "terminated"], 120_000, workflow);
        return [id, status];
      }),
    );
    for (const [id, status] of outcomes) {
      if (status === "terminated") {
        assert.ok(terminatedAt.has(id), `${id} was terminated, but not by the test`);
      } else {
        assert.equal(status, "complete", `${id} ended ${status}`);
        assert.deepEqual((await h.details(id, byId.get(id).workflow)).output, {
          superseded: false,
          value: "done",
        });
      }
    }

    // The overlap check, per key, from the bodies' enter and exit times.
    const log = await h.log();
    for (const { key, limit } of KEYS) {
      const mine = instances.filter((x) => x.key === key).map((x) => x.id);
      const bodies = [];
      for (const id of mine) {
        const enter = log.find((e) => e.id === id && e.kind === "enter");
        const exit = log.find((e) => e.id === id && e.kind === "exit");
        const terminated = terminatedAt.has(id);
        if (!terminated) {
          assert.ok(enter && exit, `${id} on ${key} did not run its body`);
        }
        if (!enter) continue;
        // A body may begin between the test's terminate call and its
        // effect: it then ended no earlier than it began.
        const end = exit?.at ?? Math.max(terminatedAt.get(id), enter.at);
        bodies.push({ start: enter.at, end });
      }
      const most = mostAtOnce(bodies);
      assert.ok(most <= limit, `${key}: ${most} bodies at once, limit ${limit}`);
      const view = await h.inspect(key);
      assert.deepEqual(view.waiting, [], `${key} still has waiters`);
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `stress: ${INSTANCES} instances, ${terminatedAt.size} terminated, seed ${SEED}, ${seconds} s`,
    );
  });
});
