// The Coordinator against real Workflow instances: TestWorkflow takes a key
// through `withKey`, and the Recorder logs when each body enters and exits.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { settled, startBaton } from "./harness.mjs";

const DONE = { superseded: false, value: "done" };

/** Polls until `id` holds `key` or waits for it. */
function untilQueued(h, key, id) {
  return h.untilInspect(
    key,
    `${id} holding or waiting`,
    (view) => view.holder?.id === id || view.waiting.some((w) => w.id === id),
  );
}

function untilHolder(h, key, id) {
  return h.untilInspect(key, `${id} holding`, (view) => view.holder?.id === id);
}



const ids = (view) => view.waiting.map((w) => w.id);

async function assertIdle(h, key) {
  const view = await h.inspect(key);
  assert.equal(view.holder, null, `${key} should have no holder`);
  assert.deepEqual(view.waiting, [], `${key} should have no waiters`);
  return view;
}

describe("Coordinator with real Workflows (holder-check alarm effectively off)", () => {
  let h;
  before(async () => {
    // An hour between holder checks: anything that happens here happens
    // through acquire, release and the turn event, never the alarm.
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("instances on one key never overlap and enter in arrival order", async () => {
    const key = "seq";
    const order = Array.from({ length: 12 }, (_, i) => `seq-${i}`);
    for (const id of order) {
      await h.create(id, { key, holdMs: 300 });
      await untilQueued(h, key, id);
    }
    const outputs = await Promise.all(order.map((id) => h.output(id)));
    for (const [i, output] of outputs.entries()) assert.deepEqual(output, DONE, order[i]);

    const log = await h.logOf(order);
    // Strict alternation: every enter is followed by the same id's exit.
    for (let i = 0; i < log.length; i += 2) {
      const [kind, id] = log[i].split(" ");
      assert.equal(kind, "enter", `entry ${i} of ${JSON.stringify(log)}`);
      assert.equal(log[i + 1], `exit ${id}`, `overlap after ${log[i]} in ${JSON.stringify(log)}`);
    }
    // Entry order is arrival order, and everyone entered exactly once.
    assert.deepEqual(
      log.filter((line) => line.startsWith("enter ")),
      order.map((id) => `enter ${id}`),
    );
    await assertIdle(h, key);
  });

  test("a terminated holder loses the key through the waiter's re-check", async () => {
    const key = "recheck";
    await h.create("recheck-h", { key, waitForFinish: true });
    await untilHolder(h, key, "recheck-h");
    await h.create("recheck-w", { key, turnTimeout: "2 seconds" });
    await untilQueued(h, key, "recheck-w");
    assert.deepEqual(ids(await h.inspect(key)), ["recheck-w"]);

    await h.terminate("recheck-h");
    assert.deepEqual(await h.output("recheck-w"), DONE);
    assert.equal(await h.status("recheck-h"), "terminated");
    assert.deepEqual(await h.logOf(["recheck-h", "recheck-w"]), [
      "enter recheck-h",
      "enter recheck-w",
      "exit recheck-w",
    ]);
    await assertIdle(h, key);
  });

  test("supersede terminates waiters that have not started, never the holder", async () => {
    const key = "sup";
    await h.create("sup-h", { key, waitForFinish: true });
    await untilHolder(h, key, "sup-h");
    await h.create("sup-w1", { key });
    await untilQueued(h, key, "sup-w1");
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "sup-w2"), { terminated: [] });

    assert.deepEqual(await h.ok(key, "enqueue", key, true, "sup-w3"), {
      terminated: ["sup-w1", "sup-w2"],
    });
    await h.untilStatus("sup-w1", "terminated");
    assert.equal(await h.status("sup-h"), "running");
    const view = await h.inspect(key);
    assert.equal(view.holder?.id, "sup-h");
    assert.deepEqual(ids(view), ["sup-w3"]);
    assert.ok(view.superseded >= 2, `superseded count ${view.superseded}`);

    await h.create("sup-w3", { key });
    await untilQueued(h, key, "sup-w3");
    await h.sendEvent("sup-h", "finish", {});
    assert.deepEqual(await h.output("sup-h"), DONE);
    assert.deepEqual(await h.output("sup-w3"), DONE);
    assert.deepEqual(await h.logOf(["sup-h", "sup-w1", "sup-w2", "sup-w3"]), [
      "enter sup-h",
      "exit sup-h",
      "enter sup-w3",
      "exit sup-w3",
    ]);
    await assertIdle(h, key);
  });

  test("a superseding enqueue with a live waiter's inputHash coalesces into it", async () => {
    const key = "coal";
    await h.create("coal-h", { key, waitForFinish: true });
    await untilHolder(h, key, "coal-h");
    assert.deepEqual(await h.ok(key, "enqueue", key, true, "coal-a", "h1"), { terminated: [] });
    await h.create("coal-a", { key });
    await h.untilStatus("coal-a", "running");

    assert.deepEqual(await h.ok(key, "enqueue", key, true, "coal-b", "h1"), {
      terminated: [],
      coalescedInto: "coal-a",
    });
    assert.deepEqual(ids(await h.inspect(key)), ["coal-a"]);

    // Once A is dead, the same hash no longer coalesces: A is dropped, C is registered.
    await h.terminate("coal-a");
    await h.untilStatus("coal-a", "terminated");
    const reply = await h.ok(key, "enqueue", key, true, "coal-c", "h1");
    assert.equal(reply.coalescedInto, undefined, JSON.stringify(reply));
    assert.ok(reply.terminated.includes("coal-a"), JSON.stringify(reply));
    const view = await h.inspect(key);
    assert.equal(view.holder?.id, "coal-h");
    assert.deepEqual(view.waiting, [
      // §1c's fields: its place, no estimate yet, the defaults.
      { id: "coal-c", since: view.waiting[0].since, inputHash: "h1", position: 1, etaMs: null, priority: 0, tenant: null },
    ]);

    await h.create("coal-c", { key });
    await h.sendEvent("coal-h", "finish", {});
    assert.deepEqual(await h.output("coal-c"), DONE);
    assert.deepEqual(await h.logOf(["coal-h", "coal-a", "coal-b", "coal-c"]), [
      "enter coal-h",
      "exit coal-h",
      "enter coal-c",
      "exit coal-c",
    ]);
    await assertIdle(h, key);
  });

  test("an id superseded before its instance existed ends without running", async () => {
    const key = "early";
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "early-x"), { terminated: [] });
    assert.deepEqual(await h.ok(key, "enqueue", key, true, "early-y"), {
      terminated: ["early-x"],
    });
    await h.create("early-x", { key });
    assert.deepEqual(await h.output("early-x"), { superseded: true });
    assert.ok((await h.inspect(key)).superseded >= 1);

    // The superseding id still gets its turn.
    await h.create("early-y", { key });
    assert.deepEqual(await h.output("early-y"), DONE);
    assert.deepEqual(await h.logOf(["early-x", "early-y"]), ["enter early-y", "exit early-y"]);
    await assertIdle(h, key);
  });

  test("bad input is refused with a BatonError naming the field, and changes nothing", async () => {
    const key = "bad";
    await h.create("bad-h", { key, waitForFinish: true });
    await untilHolder(h, key, "bad-h");
    await h.ok(key, "enqueue", key, false, "bad-w", "hash-w");
    const before = settled(await h.inspect(key));
    assert.equal(before.holder.id, "bad-h");
    assert.deepEqual(ids(before), ["bad-w"]);

    const badKeys = ["", "k".repeat(513), "€".repeat(171), 42, { key }, null];
    const badIds = ["", "a".repeat(101), "has space", "-lead", "é", 7, null];
    const cases = [];
    for (const bad of badKeys) {
      cases.push(
        ["key", "enqueue", bad, true, "ok-id"],
        ["key", "acquire", bad, "ok-id"],
        ["key", "release", bad, "bad-h"],
        ["key", "inspect", bad],
      );
    }
    for (const bad of badIds) {
      cases.push(
        ["instanceId", "enqueue", key, true, bad],
        ["instanceId", "acquire", key, bad],
        ["instanceId", "release", key, bad],
      );
    }
    for (const bad of ["yes", 1, null]) cases.push(["supersedes", "enqueue", key, bad, "ok-id"]);
    for (const bad of ["", "x".repeat(129), "é".repeat(129), 5]) {
      cases.push(["inputHash", "enqueue", key, true, "ok-id", bad]);
    }
    cases.push(
      ["key", "enqueue"],
      ["supersedes", "enqueue", key],
      ["instanceId", "enqueue", key, true],
      ["key", "acquire"],
      ["instanceId", "acquire", key],
      ["key", "release"],
      ["instanceId", "release", key],
      ["key", "inspect"],
    );

    for (const [field, method, ...args] of cases) {
      const call = `${method}(${args.map((a) => JSON.stringify(a)?.slice(0, 20)).join(", ")})`;
      const result = await h.rpc(key, method, ...args);
      assert.ok("error" in result, `${call} should fail, got ${JSON.stringify(result)}`);
      assert.match(result.error, /^BatonError:/, call);
      assert.ok(result.error.includes(field), `${call}: ${result.error} should name ${field}`);
    }
    assert.deepEqual(settled(await h.inspect(key)), before);
    assert.equal(await h.status("bad-h"), "running");
  });

  test("release from a waiter leaves the queue; from a stranger it is a no-op", async () => {
    const key = "rel";
    await h.create("rel-h", { key, waitForFinish: true });
    await untilHolder(h, key, "rel-h");
    await h.ok(key, "enqueue", key, false, "rel-w1");
    await h.ok(key, "enqueue", key, false, "rel-w2");
    const before = settled(await h.inspect(key));
    assert.deepEqual(ids(before), ["rel-w1", "rel-w2"]);

    assert.deepEqual(await h.ok(key, "release", key, "rel-stranger"), { next: null });
    assert.deepEqual(settled(await h.inspect(key)), before);

    assert.deepEqual(await h.ok(key, "release", key, "rel-w1"), { next: null });
    // Everyone behind it moves up a place (§1c's `position`).
    const movedUp = before.waiting.slice(1).map((w) => ({ ...w, position: w.position - 1 }));
    assert.deepEqual(settled(await h.inspect(key)), { ...before, waiting: movedUp });
    assert.equal(await h.status("rel-h"), "running");
  });
});

describe("Coordinator with 10,000 waiters on one key", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("release hands on past a dead first waiter: skipped after the reply, the next live one woken", async () => {
    const key = "past-dead";
    await h.create("pd-h", { key, waitForFinish: true });
    await untilHolder(h, key, "pd-h");
    // Both waiters' own re-checks are an hour away, as is the alarm: only
    // the release's hand-on can wake pd-w.
    await h.create("pd-d", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "pd-d");
    await h.create("pd-w", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "pd-w");
    await h.terminate("pd-d");

    // The reply names the first waiter, sent the turn event; its status is
    // checked after the reply, and the key goes on past it from there.
    assert.deepEqual(await h.ok(key, "release", key, "pd-h"), { next: "pd-d" });
    assert.deepEqual(await h.output("pd-w", 30_000), DONE);
    assert.deepEqual(await h.logOf(["pd-d", "pd-w"]), ["enter pd-w", "exit pd-w"]);
    await assertIdle(h, key);
    await h.terminate("pd-h");
  });

  test("a key takes 10,000 waiters and still hands on in order", async () => {
    const key = "big";
    await h.create("big-h", { key, waitForFinish: true });
    await untilHolder(h, key, "big-h");
    await h.call("/bulk-enqueue", { key, count: 10_000, prefix: "big-w" });
    const view = await h.inspect(key);
    assert.equal(view.waiting.length, 10_000);
    assert.equal(view.waiting[0].id, "big-w0");
    assert.equal(view.waiting[9_999].id, "big-w9999");
    // A real instance joins behind all of them.
    await h.create("big-last", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "big-last");
    assert.equal((await h.inspect(key)).waiting.at(-1).id, "big-last");
    // A waiter leaving from the middle, and a stranger's release, change only that.
    assert.deepEqual(await h.ok(key, "release", key, "big-w5000"), { next: null });
    const after = await h.inspect(key);
    assert.equal(after.waiting.length, 10_000);
    assert.ok(!after.waiting.some((w) => w.id === "big-w5000"));
    // The holder's release hands the key to the first waiter (never created,
    // so found dead and skipped, as are the next ones, up to the per-call bound).
    const { next } = await h.ok(key, "release", key, "big-h");
    assert.notEqual(next, "big-h");
    await h.terminate("big-h");
  });
});

describe("Coordinator with real Workflows (holder-check alarm every 300 ms)", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 300 });
  });
  after(() => h?.dispose());

  test("a terminated holder loses the key through the holder-check alarm", async () => {
    const key = "alarm";
    await h.create("alarm-h", { key, waitForFinish: true });
    await untilHolder(h, key, "alarm-h");
    // The waiter's own re-check is an hour away: only the alarm can hand it the key.
    await h.create("alarm-w", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "alarm-w");

    await h.terminate("alarm-h");
    assert.deepEqual(await h.output("alarm-w", 30_000), DONE);
    assert.deepEqual(await h.logOf(["alarm-h", "alarm-w"]), [
      "enter alarm-h",
      "enter alarm-w",
      "exit alarm-w",
    ]);
    await assertIdle(h, key);
  });
});
