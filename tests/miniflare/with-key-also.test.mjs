// Contract §1e against real Workflows: sections that hold their own key
// and further keys (`also`) at once, taken in one global order. Checked
// from the Recorder's log of when each body entered and exited: no key
// holds more live bodies than its limit, sections naming the same keys in
// opposite orders never deadlock (every instance not terminated
// completes), and a busy key releases what the section took.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";
import { mostAtOnce, rng } from "./seeded.mjs";

const SEED = Number(process.env.BATON_STRESS_SEED ?? 20261205);
/** The opposite-order stress: instances, and terminations after each batch. */
const CROSSED = Number(process.env.BATON_ALSO_INSTANCES ?? 200);
const TERMINATIONS_PER_BATCH = 3;

/** The bodies of `ids` as intervals, from the Recorder's log; a terminated one ends no later than its termination. */
function bodies(log, ids, terminatedAt = new Map()) {
  const out = [];
  for (const id of ids) {
    const enter = log.find((e) => e.id === id && e.kind === "enter");
    const exit = log.find((e) => e.id === id && e.kind === "exit");
    if (!enter) continue;
    out.push({ id, start: enter.at, end: exit?.at ?? Math.max(terminatedAt.get(id) ?? enter.at, enter.at) });
  }
  return out;
}

describe("§1e: a section holds its key and its also keys", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 300 });
  });
  after(() => h?.dispose());

  test("sections on 5 keys sharing a pool of limit 2: at most 2 bodies at once, 1 per key", async () => {
    const instances = Array.from({ length: 15 }, (_, i) => ({ id: `pool-${i}`, key: `pk-${i % 5}` }));
    const also = [{ key: "~pool", limit: 2 }];
    await Promise.all(
      instances.map(({ id, key }) => h.create(id, { key, also, holdMs: 150, turnTimeout: "5 seconds" })),
    );
    const outputs = await Promise.all(instances.map(({ id }) => h.output(id, 120_000)));
    for (const [i, output] of outputs.entries()) {
      const { key } = instances[i];
      assert.equal(output.value, "done");
      assert.deepEqual(Object.keys(output.fences).sort(), [key, "~pool"].sort());
      assert.ok(output.fences[key] >= 1 && output.fences["~pool"] >= 1);
    }
    const log = await h.log();
    const all = bodies(log, instances.map((x) => x.id));
    assert.equal(all.length, 15);
    assert.ok(mostAtOnce(all) <= 2, `${mostAtOnce(all)} bodies at once under a pool of 2`);
    for (let k = 0; k < 5; k++) {
      const mine = bodies(log, instances.filter((x) => x.key === `pk-${k}`).map((x) => x.id));
      assert.ok(mostAtOnce(mine) <= 1, `pk-${k}: ${mostAtOnce(mine)} bodies at once`);
    }
    // Every fence of the pool was granted once: 15 grants, 1 to 15.
    const poolFences = outputs.map((o) => o.fences["~pool"]).sort((a, b) => a - b);
    assert.deepEqual(poolFences, Array.from({ length: 15 }, (_, i) => i + 1));
    for (const key of ["~pool", "pk-0"]) {
      const view = await h.inspect(key);
      assert.deepEqual([view.holders, view.waiting], [[], []], `${key} left held or waited for`);
    }
  });

  test("onBusy skip: a busy key releases the keys the section already took", async () => {
    // "sk-a" sorts before "sk-b": the section takes sk-a, then finds sk-b held.
    await h.create("sk-holder", { key: "sk-b", waitForFinish: true });
    await h.untilInspect("sk-b", "sk-holder holding", (v) => v.holder?.id === "sk-holder");
    await h.create("sk-skip", { key: "sk-a", also: [{ key: "sk-b" }], onBusy: "skip" });
    assert.deepEqual(await h.output("sk-skip"), { busy: true });
    const a = await h.inspect("sk-a");
    assert.deepEqual([a.holders, a.waiting], [[], []]);
    assert.equal(a.counts.grants, 1, "sk-a was taken, then released");
    assert.deepEqual((await h.inspect("sk-b")).holders.map((x) => x.id), ["sk-holder"]);
    assert.deepEqual(await h.logOf(["sk-skip"]), []);
    await h.sendEvent("sk-holder", "finish", {});
    await h.output("sk-holder");
  });

  test("a bad also is refused by name, before any call", async () => {
    const cases = [
      [[], /BatonError: also must be an array of 1 to 4 keys/],
      [[{ key: "x1" }, { key: "x2" }, { key: "x3" }, { key: "x4" }, { key: "x5" }], /BatonError: also must be/],
      [[{ key: "bad-own" }], /BatonError: also\[0\]\.key must differ/],
      [[{ key: "y" }, { key: "y" }], /BatonError: also\[1\]\.key must differ/],
      [[{ key: "" }], /BatonError: also\[0\]\.key must be a non-empty string/],
      [[{ key: "z", weight: 2 }], /BatonError: also\[0\]\.weight is not an option/],
    ];
    for (const [i, [also, message]] of cases.entries()) {
      const id = `bad-also-${i}`;
      await h.create(id, { key: "bad-own", also });
      await h.untilStatus(id, "errored", 30_000);
      const details = await h.details(id);
      assert.match(String(details.error?.message ?? details.error), message);
    }
    const view = await h.inspect("bad-own");
    assert.deepEqual([view.holders, view.waiting, view.counts.grants], [[], [], 0]);
  });

  test(`${CROSSED} sections on two keys in opposite orders, with kills: no deadlock`, async () => {
    const started = Date.now();
    const random = rng(SEED);
    const instances = Array.from({ length: CROSSED }, (_, i) => {
      const [key, other] = random() < 0.5 ? ["cx", "cy"] : ["cy", "cx"];
      return { id: `cr-${i}`, key, also: [{ key: other }], holdMs: Math.floor(random() * 100) };
    });
    const terminatedAt = new Map();
    async function terminateOne() {
      const view = await h.inspect(random() < 0.5 ? "cx" : "cy");
      const candidates = (random() < 0.5 ? view.holders : view.waiting).filter((x) => !terminatedAt.has(x.id));
      if (candidates.length === 0) return;
      const { id } = candidates[Math.floor(random() * candidates.length)];
      const at = Date.now();
      try {
        await h.terminate(id);
        terminatedAt.set(id, at);
      } catch {
        // It finished first: not terminated.
      }
    }
    const BATCH = 20;
    for (let i = 0; i < instances.length; i += BATCH) {
      await Promise.all(
        instances
          .slice(i, i + BATCH)
          .map(({ id, key, also, holdMs }) => h.create(id, { key, also, holdMs, turnTimeout: "5 seconds" })),
      );
      for (let n = 0; n < TERMINATIONS_PER_BATCH; n++) await terminateOne();
    }
    const outcomes = await Promise.all(
      instances.map(async ({ id }) => [id, await h.untilStatus(id, ["complete", "errored", "terminated"], 240_000)]),
    );
    for (const [id, status] of outcomes) {
      if (status === "terminated") assert.ok(terminatedAt.has(id), `${id} was terminated, but not by the test`);
      else assert.equal(status, "complete", `${id} ended ${status}`);
    }
    const log = await h.log();
    const live = instances.filter((x) => !terminatedAt.has(x.id)).map((x) => x.id);
    for (const id of live) assert.ok(log.some((e) => e.id === id && e.kind === "exit"), `${id} did not run its body`);
    // Every section holds both keys while its body runs: one body at a time.
    const all = bodies(log, instances.map((x) => x.id), terminatedAt);
    assert.ok(mostAtOnce(all) <= 1, `${mostAtOnce(all)} bodies at once on two limit-1 keys`);
    for (const key of ["cx", "cy"]) {
      const view = await h.inspect(key);
      assert.deepEqual(view.waiting, [], `${key} still has waiters`);
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`also stress: ${CROSSED} instances, ${terminatedAt.size} terminated, seed ${SEED}, ${seconds} s`);
  });
});
