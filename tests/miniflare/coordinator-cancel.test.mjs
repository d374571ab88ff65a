// Contract §1d, cancel in progress, against real Workflow instances: a
// superseding enqueue with `cancelHolders: true` terminates the holder
// through its own Workflow binding; the holder keeps its slot until the
// binding reports it dead (a termination that fails is retried by the
// holder-check alarm); the slot then goes on with the next fence, which a
// store keyed by fence uses to refuse the cancelled run's late write.
// Baton reaches its Workflows through the fault injector (named as one:
// tests/miniflare/fault-injector.mjs), whose plan makes the termination
// fail on demand. No assertion is about timing; every wait polls a state.
import { describe, test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";

const DONE = { superseded: false, value: "done" };
const TOKEN = "cancel-token-5d1e";

/** Decision lines printed so far, parsed. */
function decisions(h) {
  return h.runtimeLines
    .map((line) => line.slice(line.indexOf("{")))
    .filter((line) => line.includes('"baton":"decision"'))
    .map((line) => JSON.parse(line));
}

/** Calls `fenced` store `method` of `key` in the test Worker. */
const fenced = (h, key, method, ...args) => h.call("/fenced", { key, method, args });

/** What `inspect` shows that a refused call must leave as it was. */
const state = (view) => ({ holders: view.holders, waiting: view.waiting, counts: view.counts, limit: view.limit });

describe("cancelHolders with real Workflows (holder check every half second)", () => {
  let h;
  before(async () => {
    h = await startBaton({ strict: true, holderCheckMs: 500, vars: { BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());
  beforeEach(() => h.faults({}));

  test("a holder in a long body is terminated; the new instance enters only after it is reported terminated, with a higher fence, and the old fence's write is refused", async () => {
    const key = "cancel-long";
    const [old, next] = ["cx-old", "cx-new"];
    await h.create(old, { key, waitForFinish: true, fencedWrite: true });
    await h.untilInspect(key, `${old} in its body`, (v) => v.holder?.id === old);
    await h.until(`${old}'s write`, async () => (await fenced(h, key, "writes")).length === 1);
    const oldFence = (await h.inspect(key)).holder.fence;

    // Its termination fails until the plan is lifted: it keeps its slot.
    await h.faults({ fails: [{ call: "terminate", id: old, times: 1_000_000 }] });
    assert.deepEqual(await h.ok(key, "enqueue", key, true, next, null, { cancelHolders: true }), {
      terminated: [],
      cancelled: [old],
    });
    await h.create(next, { key, fencedWrite: true });
    // The alarm has retried the termination (and failed) while the new
    // instance waits behind the cancelled holder, which still runs.
    await h.until("the alarm's retries", async () => ((await h.faultReport()).injected["throw terminate"] ?? 0) >= 3);
    const cancelling = await h.inspect(key);
    assert.deepEqual(
      cancelling.holders.map((x) => [x.id, x.cancelling]),
      [[old, true]],
    );
    assert.deepEqual(cancelling.waiting.map((w) => w.id), [next]);
    assert.equal(cancelling.counts.cancelled, 1);
    assert.equal(await h.status(old), "running");
    assert.deepEqual(await h.logOf([old, next]), [`enter ${old}`]);

    // The termination goes through on the alarm's next try; only then does
    // the slot go on.
    await h.faults({});
    assert.deepEqual(await h.output(next), DONE);
    assert.equal(await h.status(old), "terminated");
    const log = (await h.log()).filter((e) => e.id === old || e.id === next);
    assert.deepEqual(
      log.map((e) => `${e.kind} ${e.id}`),
      [`enter ${old}`, `enter ${next}`, `exit ${next}`],
    );
    const newFence = log[1].fence;
    assert.ok(newFence > oldFence, `fence ${newFence} after ${oldFence}`);

    // The store kept both writes in fence order; the cancelled run's last
    // step, writing late with its fence, is refused.
    assert.deepEqual(await fenced(h, key, "writes"), [
      { fence: oldFence, by: old },
      { fence: newFence, by: next },
    ]);
    assert.deepEqual(await fenced(h, key, "write", oldFence, old), { accepted: false, highest: newFence });

    // Its late release changes nothing; the time line keeps the cancelled hold.
    assert.deepEqual(await h.ok(key, "release", key, old), { next: null });
    const view = await h.inspect(key);
    assert.deepEqual(view.holders, []);
    const hold = view.recent.find((r) => r.id === old);
    assert.equal(hold.cancelled, true, JSON.stringify(view.recent));
    assert.equal(hold.outcome, "dead");
    assert.equal(hold.fence, oldFence);
    assert.equal(view.counts.cancelled, 1);

    // The decision log says who cancelled whom, and that the slot went on.
    await h.until("the cancellation's lines", () => decisions(h).some((d) => d.instance === old && d.decision === "terminated"));
    const line = decisions(h).find((d) => d.instance === next && d.decision === "cancelled");
    assert.ok(line?.reason.includes(old), JSON.stringify(line));
  });

  test("coalescing wins over cancelling: a call that coalesces cancels nothing", async () => {
    const key = "cancel-coalesce";
    await h.create("cc-h", { key, waitForFinish: true });
    await h.untilInspect(key, "cc-h holding", (v) => v.holder?.id === "cc-h");
    assert.deepEqual(await h.ok(key, "enqueue", key, true, "cc-a", "same"), { terminated: [] });
    await h.create("cc-a", { key });
    await h.untilStatus("cc-a", "running");

    assert.deepEqual(await h.ok(key, "enqueue", key, true, "cc-b", "same", { cancelHolders: true }), {
      terminated: [],
      coalescedInto: "cc-a",
      cancelled: [],
    });
    const view = await h.inspect(key);
    assert.deepEqual(view.holders.map((x) => [x.id, x.cancelling]), [["cc-h", false]]);
    assert.equal(view.counts.cancelled, 0);
    assert.equal(await h.status("cc-h"), "running");

    await h.sendEvent("cc-h", "finish", {});
    assert.deepEqual(await h.output("cc-h"), DONE);
    assert.deepEqual(await h.output("cc-a"), DONE);
  });

  test("cancelHolders with supersedes: false, on acquire, or not a boolean is refused by name and changes nothing", async () => {
    const key = "cancel-refused";
    await h.create("cr-h", { key, waitForFinish: true });
    await h.untilInspect(key, "cr-h holding", (v) => v.holder?.id === "cr-h");
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "cr-w"), { terminated: [] });
    const before = state(await h.inspect(key));

    const refusals = [
      [["enqueue", key, false, "cr-x", null, { cancelHolders: true }], "BatonError: cancelHolders needs supersedes: true (only a superseding enqueue cancels holders)"],
      [["acquire", key, "cr-y", { cancelHolders: true }], "BatonError: cancelHolders is an option of a superseding enqueue, not of acquire"],
      [["enqueue", key, true, "cr-z", null, { cancelHolders: "yes" }], "BatonError: cancelHolders must be a boolean"],
    ];
    for (const [[method, ...args], message] of refusals) {
      assert.deepEqual(await h.rpc(key, method, ...args), { error: message }, method);
    }
    assert.deepEqual(state(await h.inspect(key)), before);
    assert.equal(await h.status("cr-h"), "running");

    // Over HTTP: the same refusal, a 400.
    const response = await h.fetchBaton(`/v1/keys/${key}/enqueue`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ instanceId: "cr-http", options: { cancelHolders: true } }),
    });
    const text = await response.text();
    assert.equal(response.status, 400, text);
    assert.ok(text.includes("BatonError: cancelHolders needs supersedes: true"), text);
    assert.deepEqual(state(await h.inspect(key)), before);

    await h.sendEvent("cr-h", "finish", {});
    assert.deepEqual(await h.output("cr-h"), DONE);
  });
});
