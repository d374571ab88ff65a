// Contract §1c against real Workflow instances taking a key through
// withKey: the priority order of a mixed queue, tenants taking turns (a
// tenant with many waiters delays each other tenant by at most one
// grant), onBusy "skip" on a held key and on a key with waiters (nothing
// registered), and etaMs (null before the key's first finished hold, then
// of the order of the real wait). No assertion is about timing beyond a
// loose factor on etaMs; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { settled, startBaton } from "./harness.mjs";

function untilWaiting(h, key, id) {
  return h.untilInspect(key, `${id} waiting`, (view) => view.waiting.some((w) => w.id === id));
}

function untilHolding(h, key, id) {
  return h.untilInspect(key, `${id} holding`, (view) => view.holders.some((x) => x.id === id));
}

/** Starts a holder that keeps `key` until its "finish" event. */
async function holder(h, key) {
  const id = `${key}-holder`;
  await h.create(id, { key, waitForFinish: true });
  await untilHolding(h, key, id);
  return id;
}

/** Starts instances in turn, each queued before the next starts. */
async function queue(h, key, waiters) {
  for (const [id, params] of waiters) {
    await h.create(id, { key, turnTimeout: "1 hour", ...params });
    await untilWaiting(h, key, id);
  }
}

/** The order in which `ids` entered their bodies. */
async function entered(h, ids) {
  for (const id of ids) await h.output(id);
  return (await h.logOf(ids)).filter((line) => line.startsWith("enter ")).map((line) => line.slice(6));
}

describe("§1c with real Workflows", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("a mixed queue is handed on highest priority first, in arrival order within one", async () => {
    const key = "prio-mixed";
    const first = await holder(h, key);
    await queue(h, key, [
      ["pm-low", { priority: -5 }],
      ["pm-mid-1", {}],
      ["pm-high", { priority: 50 }],
      ["pm-mid-2", { priority: 0 }],
      ["pm-top", { priority: 100 }],
    ]);
    const expected = ["pm-top", "pm-high", "pm-mid-1", "pm-mid-2", "pm-low"];
    const view = await h.inspect(key);
    assert.deepEqual(view.waiting.map((w) => w.id), expected, "inspect lists the hand-off order");
    assert.deepEqual(view.waiting.map((w) => w.position), [1, 2, 3, 4, 5]);
    assert.deepEqual(view.waiting.map((w) => w.priority), [100, 50, 0, 0, -5]);
    await h.sendEvent(first, "finish", {});
    assert.deepEqual(await entered(h, expected), expected);
  });

  test("a tenant with many waiters delays each other tenant by one grant at most", async () => {
    const key = "prio-tenants";
    const first = await holder(h, key);
    const big = ["pt-big-1", "pt-big-2", "pt-big-3", "pt-big-4", "pt-big-5"];
    await queue(h, key, [
      ...big.map((id) => [id, { tenant: "big" }]),
      ["pt-acme", { tenant: "acme" }],
      ["pt-globex", { tenant: "globex" }],
    ]);
    const view = await h.inspect(key);
    assert.deepEqual(
      view.waiting.map((w) => [w.id, w.tenant]),
      [
        ["pt-big-1", "big"],
        ["pt-acme", "acme"],
        ["pt-globex", "globex"],
        ["pt-big-2", "big"],
        ["pt-big-3", "big"],
        ["pt-big-4", "big"],
        ["pt-big-5", "big"],
      ],
    );
    await h.sendEvent(first, "finish", {});
    const order = await entered(h, [...big, "pt-acme", "pt-globex"]);
    for (const other of ["pt-acme", "pt-globex"]) {
      const before = order.slice(0, order.indexOf(other)).filter((id) => id.startsWith("pt-big"));
      assert.ok(before.length <= 1, `${other} waited behind ${before.length} of big's grants: ${order}`);
    }
    assert.deepEqual(order, ["pt-big-1", "pt-acme", "pt-globex", "pt-big-2", "pt-big-3", "pt-big-4", "pt-big-5"]);
  });

  test("onBusy skip: busy on a held key and on a key with waiters, nothing registered", async () => {
    const key = "prio-skip";
    // A free key: the section runs.
    await h.create("ps-free", { key, onBusy: "skip" });
    assert.deepEqual(await h.output("ps-free"), { superseded: false, value: "done" });

    const first = await holder(h, key);
    const held = settled(await h.inspect(key));
    // Held, nobody waiting: withKey returns { busy: true } without its body.
    await h.create("ps-held", { key, onBusy: "skip" });
    assert.deepEqual(await h.output("ps-held"), { busy: true });
    // An enqueue that skips registers nothing either.
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "ps-enq", undefined, { onBusy: "skip" }), {
      busy: true,
      terminated: [],
    });
    assert.deepEqual(settled(await h.inspect(key)), held, "nothing registered or changed");

    // With a waiter.
    await queue(h, key, [["ps-waiter", {}]]);
    const waited = settled(await h.inspect(key));
    await h.create("ps-queued", { key, onBusy: "skip" });
    assert.deepEqual(await h.output("ps-queued"), { busy: true });
    assert.equal(await h.ok(key, "acquire", key, "ps-rpc", { onBusy: "skip" }), "busy");
    assert.deepEqual(await h.ok(key, "acquire", key, "ps-rpc", { onBusy: "skip", grant: true }), { status: "busy" });
    assert.deepEqual(settled(await h.inspect(key)), waited, "nothing registered or changed");

    assert.deepEqual(await h.logOf(["ps-held", "ps-queued"]), [], "no skipped body ran");
    await h.sendEvent(first, "finish", {});
    assert.deepEqual(await h.output("ps-waiter"), { superseded: false, value: "done" });
  });

  test("bad priority, tenant and onBusy are refused by name and change nothing", async () => {
    const key = "prio-bad";
    const first = await holder(h, key);
    const view = settled(await h.inspect(key));
    const cases = [
      [{ priority: 101 }, /^BatonError: priority must be an integer from -100 to 100/],
      [{ priority: 1.5 }, /^BatonError: priority must be an integer from -100 to 100/],
      [{ tenant: "" }, /^BatonError: tenant must not be empty/],
      [{ tenant: "x".repeat(513) }, /^BatonError: tenant must be at most 512 UTF-8 bytes/],
      [{ onBusy: "later" }, /^BatonError: onBusy must be one of "wait", "skip"/],
    ];
    for (const [options, message] of cases) {
      const acquired = await h.rpc(key, "acquire", key, "pb-a", options);
      assert.match(acquired.error ?? "", message, JSON.stringify(acquired));
      const enqueued = await h.rpc(key, "enqueue", key, false, "pb-e", undefined, options);
      assert.match(enqueued.error ?? "", message, JSON.stringify(enqueued));
    }
    assert.deepEqual(settled(await h.inspect(key)), view);
    await h.sendEvent(first, "finish", {});
    await h.output(first);
  });

  test("etaMs is null before a finished hold, then of the order of the real wait", async () => {
    const key = "prio-eta";
    const hold = 1_500;
    const first = await holder(h, key);
    const probe = await h.ok(key, "acquire", key, "pe-probe", { grant: true });
    assert.equal(probe.status, "pending");
    assert.equal(probe.etaMs, null, "no hold of the key has finished");
    assert.equal((await h.inspect(key)).waiting[0].etaMs, null);
    await h.ok(key, "release", key, "pe-probe");
    // A few holds of steady length, one after another.
    const steady = ["pe-1", "pe-2", "pe-3"];
    await queue(h, key, steady.map((id) => [id, { holdMs: hold }]));
    await h.sendEvent(first, "finish", {});
    for (const id of steady) await h.output(id);
    // One more of the same length, and a waiter behind it.
    await h.create("pe-4", { key, holdMs: hold });
    await untilHolding(h, key, "pe-4");
    await queue(h, key, [["pe-5", { waitForFinish: true }]]);
    const waiting = (await h.inspect(key)).waiting.find((w) => w.id === "pe-5");
    assert.ok(waiting.etaMs !== null, JSON.stringify(waiting));
    const granted = await untilHolding(h, key, "pe-5");
    const wait = granted.holders.find((x) => x.id === "pe-5").since - waiting.since;
    // The estimate is a whole hold; the real wait the rest of pe-4's.
    assert.ok(
      waiting.etaMs >= wait / 4 && waiting.etaMs <= wait * 4 + hold,
      `etaMs ${waiting.etaMs} against a real wait of ${wait} ms`,
    );
    await h.sendEvent("pe-5", "finish", {});
    await h.output("pe-5");
  });
});
