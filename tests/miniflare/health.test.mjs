// A key's health at a glance (contract §10a) and metrics (§9a), through
// real Workflows: each state reached and shown alike by `inspect` and the
// busy list (whose entry is decided from what the key reports), the
// list's state filter, the wait figures against waits this test measured
// itself, each holder's last check, and a stalled key coming back. The
// failing checks and the dataset are the fault injector's
// (tests/miniflare/fault-injector.mjs): a real binding whose status
// throws, and a recording stand-in for Analytics Engine (miniflare has
// none). No assertion is about timing: every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";

/** A holder-check period short enough that a stall shows soon. */
const CHECK_MS = 500;

async function listOk(h, input) {
  const result = await h.serial("coordinatorList", input);
  if ("error" in result) throw new Error(`coordinatorList: ${result.error}`);
  return result.value;
}

/** Every listed entry whose key starts with `prefix`, by key (one page of 500 is all a test lists). */
async function listed(h, prefix, input = {}) {
  const page = await listOk(h, { limit: 500, ...input });
  return new Map(page.keys.filter((e) => e.key.startsWith(prefix)).map((e) => [e.key, e]));
}

/** Waits until `inspect` and the list both show `key` in `state`; returns the view. */
async function untilState(h, key, state) {
  const view = await h.untilInspect(key, `inspect says ${state}`, (v) => v.state === state);
  await h.until(`the list says ${key} is ${state}`, async () => (await listed(h, key)).get(key)?.state === state);
  return view;
}

/** `holder` holding `key`, then each of `waiters` waiting behind it (real instances). */
async function heldWithWaiters(h, key, holder, waiters, extra = {}) {
  await h.create(holder, { key, waitForFinish: true, ...extra });
  await h.untilInspect(key, `${holder} holding`, (v) => v.holders.some((x) => x.id === holder));
  for (const id of waiters) {
    await h.create(id, { key, waitForFinish: true, ...extra });
    await h.untilInspect(key, `${id} waiting`, (v) => v.waiting.some((w) => w.id === id));
  }
}

/** The nearest-rank percentile `q` of `values` (the contract's figure, by this test's own rule). */
function nearestRank(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  return sorted[Math.max(1, Math.ceil((q * sorted.length) / 100)) - 1];
}

describe("§10a with real Workflows", () => {
  let h;
  before(async () => {
    // A long grace: an enqueued instance not created yet keeps its slot.
    h = await startBaton({ holderCheckMs: CHECK_MS, vars: { ENQUEUE_GRACE_MS: "600000" } });
  });
  after(() => h?.dispose());

  test("a slot handed to an instance not created yet stalls the key, which comes back once it takes it", async () => {
    const key = "health/handed";
    await heldWithWaiters(h, key, "hd-h", []);
    // hd-w1 is enqueued (its instance not created yet); hd-w2 waits behind it.
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "hd-w1"), { terminated: [] });
    await h.create("hd-w2", { key, waitForFinish: true });
    await h.untilInspect(key, "two waiting", (v) => v.waiting.length === 2);
    assert.equal((await h.inspect(key)).state, "backlogged");
    await h.sendEvent("hd-h", "finish", {});
    // The slot goes to hd-w1, which does not exist yet: within its grace it keeps it.
    const stalled = await untilState(h, key, "stalled");
    assert.deepEqual(stalled.holders.map((x) => x.id), ["hd-w1"]);
    assert.deepEqual(stalled.waiting.map((w) => w.id), ["hd-w2"]);
    const only = await listed(h, "health/", { state: "stalled" });
    assert.ok(only.has(key), "the filter keeps it");
    assert.ok([...only.values()].every((e) => e.state === "stalled"), JSON.stringify([...only.values()]));
    // The instance is created and takes its slot: busy, not stuck.
    await h.create("hd-w1", { key, waitForFinish: true });
    await untilState(h, key, "backlogged");
    for (const id of ["hd-w1", "hd-w2"]) {
      await h.untilInspect(key, `${id} holding`, (v) => v.holders.some((x) => x.id === id));
      await h.sendEvent(id, "finish", {});
    }
    await h.untilInspect(key, "free", (v) => v.holders.length === 0 && v.state === "idle");
  });

  test("every other state, by inspect and the list, and the filter returns exactly those keys", async () => {
    const expected = {};
    // backlogged: a holder and a waiter.
    await heldWithWaiters(h, "st/backlogged", "sb-h", ["sb-w"]);
    expected["st/backlogged"] = "backlogged";
    // paused: the same, paused by an operator.
    await heldWithWaiters(h, "st/paused", "sp-h", ["sp-w"]);
    await h.ok("st/paused", "pause", "st/paused", { reason: "health test" });
    expected["st/paused"] = "paused";
    // at_capacity: listed for its dead holder's hour, its slot taken by the waiter.
    await heldWithWaiters(h, "st/at_capacity", "sc-h", ["sc-w"]);
    await h.terminate("sc-h");
    await h.untilInspect("st/at_capacity", "sc-w holding", (v) => v.holders[0]?.id === "sc-w");
    expected["st/at_capacity"] = "at_capacity";
    // active: limit 2, one holder found dead, the waiter took its slot and left.
    await heldWithWaiters(h, "st/active", "sa-h1", [], { limit: 2 });
    await heldWithWaiters(h, "st/active", "sa-h2", ["sa-w"], { limit: 2 });
    await h.terminate("sa-h1");
    await h.untilInspect("st/active", "sa-w holding", (v) => v.holders.some((x) => x.id === "sa-w"));
    await h.sendEvent("sa-w", "finish", {});
    await h.untilInspect("st/active", "one holder of two", (v) => v.holders.length === 1 && v.waiting.length === 0);
    expected["st/active"] = "active";
    // idle: its holder found dead, its waiter took the slot and left.
    await heldWithWaiters(h, "st/idle", "si-h", ["si-w"]);
    await h.terminate("si-h");
    await h.untilInspect("st/idle", "si-w holding", (v) => v.holders[0]?.id === "si-w");
    await h.sendEvent("si-w", "finish", {});
    await h.untilInspect("st/idle", "free", (v) => v.holders.length === 0);
    expected["st/idle"] = "idle";
    // stalled: a slot handed to an instance not created yet, a waiter behind it.
    await heldWithWaiters(h, "st/stalled", "ss-h", []);
    await h.ok("st/stalled", "enqueue", "st/stalled", false, "ss-w1");
    await h.create("ss-w2", { key: "st/stalled", waitForFinish: true });
    await h.untilInspect("st/stalled", "two waiting", (v) => v.waiting.length === 2);
    await h.sendEvent("ss-h", "finish", {});
    expected["st/stalled"] = "stalled";

    for (const [key, state] of Object.entries(expected)) await untilState(h, key, state);
    for (const state of ["paused", "stalled", "backlogged", "at_capacity", "active", "idle"]) {
      const keys = [...(await listed(h, "st/", { state })).keys()].sort();
      const wanted = Object.keys(expected).filter((k) => expected[k] === state).sort();
      assert.deepEqual(keys, wanted, `?state=${state}`);
    }
    // inspect alone: a key the list does not show.
    await heldWithWaiters(h, "st/alone", "sl-h", []);
    assert.equal((await h.inspect("st/alone")).state, "at_capacity");
    assert.equal((await h.inspect("st/never used")).state, "idle");

    // A bad state is refused, naming the field, and changes nothing.
    const refused = await h.serial("coordinatorList", { state: "stuck" });
    assert.match(refused.error, /^BatonError: state must be one of paused, stalled, backlogged, at_capacity, active, idle/);

    await h.ok("st/paused", "resume", "st/paused");
    await h.create("ss-w1", { key: "st/stalled", waitForFinish: true });
    for (const id of ["sb-h", "sb-w", "sp-h", "sp-w", "sc-w", "sa-h2", "sl-h", "ss-w1", "ss-w2"]) {
      await h.untilStatus(id, ["running", "waiting", "complete"]);
    }
    for (const id of ["sb-h", "sp-h", "sc-w", "sa-h2", "sl-h"]) await h.sendEvent(id, "finish", {});
  });

  test("the wait figures lie within the waits this test measured", async () => {
    const key = "health/waits";
    await heldWithWaiters(h, key, "wf-h", []);
    // Each waiter's wait is bounded by what this test saw: at most from
    // before its create to when it was seen holding; at least from when it
    // was seen waiting to when its predecessor was told to finish.
    const ids = ["wf-1", "wf-2", "wf-3"];
    const created = {};
    const seenWaiting = {};
    for (const id of ids) {
      created[id] = Date.now();
      await h.create(id, { key, waitForFinish: true });
      await h.untilInspect(key, `${id} waiting`, (v) => v.waiting.some((w) => w.id === id));
      seenWaiting[id] = Date.now();
    }
    const lo = [0];
    const hi = [0]; // wf-h never waited
    let previous = "wf-h";
    for (const id of ids) {
      const finishedAt = Date.now();
      await h.sendEvent(previous, "finish", {});
      await h.untilInspect(key, `${id} holding`, (v) => v.holders.some((x) => x.id === id));
      const seenHolding = Date.now();
      // wf-3's hold has not ended: its wait is not among the recent holds yet.
      if (id !== "wf-3") {
        lo.push(Math.max(0, finishedAt - seenWaiting[id]));
        hi.push(seenHolding - created[id]);
      }
      previous = id;
    }
    const view = await h.untilInspect(key, "three holds recent", (v) => v.recent.length === 3);
    assert.equal(view.waits.n, 3, JSON.stringify(view.waits));
    for (const [q, figure] of [[50, view.waits.p50Ms], [95, view.waits.p95Ms]]) {
      assert.ok(nearestRank(lo, q) <= figure && figure <= nearestRank(hi, q), `p${q} ${figure} outside [${lo}] .. [${hi}]`);
    }
    // The figures are over the recent holds' waits as inspect shows them.
    assert.equal(view.waits.p95Ms, nearestRank(view.recent.map((r) => r.waited), 95));
    await h.sendEvent("wf-3", "finish", {});
  });
});

describe("§10a and §9a behind the fault injector", () => {
  let h;
  before(async () => {
    h = await startBaton({ strict: true, holderCheckMs: CHECK_MS, vars: { FAULT_INJECTOR_METRICS: "1" } });
  });
  after(() => h?.dispose());

  test("a holder whose status checks throw stalls its key; checked shows each answer; it comes back", async () => {
    const key = "health/failing";
    await heldWithWaiters(h, key, "fc-h", ["fc-w"]);
    // The alarm checks the holder while someone waits: checked shows what the binding said.
    const answered = await h.untilInspect(key, "fc-h checked", (v) => v.holders[0]?.checked !== null);
    const first = answered.holders[0].checked;
    assert.equal(first.status, await h.status("fc-h"), "the binding's own status");
    assert.equal(answered.state, "backlogged");
    await h.faults({ fails: [{ call: "status", id: "fc-h", times: 1_000_000 }] });
    const failed = await h.untilInspect(key, "a failed check", (v) => v.holders[0]?.checked?.status === "failed");
    assert.ok(failed.holders[0].checked.at >= first.at);
    await untilState(h, key, "stalled");
    await h.faults({});
    const back = await untilState(h, key, "backlogged");
    assert.notEqual(back.holders[0].checked.status, "failed");
    assert.equal(back.holders[0].checked.status, await h.status("fc-h"));
    await h.sendEvent("fc-h", "finish", {});
    await h.untilInspect(key, "fc-w holding", (v) => v.holders[0]?.id === "fc-w");
    await h.sendEvent("fc-w", "finish", {});
  });

  /** The decision lines printed so far for keys starting with `prefix`, parsed. */
  function lines(prefix) {
    return h.runtimeLines
      .map((line) => line.slice(line.indexOf("{")))
      .filter((line) => line.includes('"baton":"decision"'))
      .map((line) => JSON.parse(line))
      .filter((d) => d.key?.startsWith(prefix));
  }

  async function points() {
    return (await h.fetchBaton("/__fault-injector/metrics")).json();
  }

  test("one data point per contended decision, none for an uncontended pair, and a throwing dataset fails no call", async () => {
    await h.faults({});
    await points(); // what earlier tests wrote
    await h.create("mx-free", { key: "metrics/free" });
    assert.deepEqual(await h.output("mx-free"), { superseded: false, value: "done" });
    await heldWithWaiters(h, "metrics/busy", "mx-h", ["mx-w"]);
    await h.sendEvent("mx-h", "finish", {});
    await h.untilInspect("metrics/busy", "mx-w holding", (v) => v.holders[0]?.id === "mx-w");
    await h.sendEvent("mx-w", "finish", {});
    await h.output("mx-w");
    const printed = lines("metrics/");
    const written = (await points()).filter((p) => p.indexes[0].startsWith("metrics/"));
    assert.equal(printed.filter((d) => d.key === "metrics/free").length, 0, "an uncontended pair prints nothing");
    assert.equal(written.filter((p) => p.indexes[0] === "metrics/free").length, 0, "and writes nothing");
    assert.ok(printed.length > 0);
    // One point per line, field by field (§9a).
    const said = printed.map((d) => [d.key, d.decision, d.instance ?? ""]).sort();
    const got = written.map((p) => [p.indexes[0], p.blobs[1], p.blobs[2]]).sort();
    assert.deepEqual(got, said);
    for (const p of written) {
      assert.equal(p.blobs[0], "coordinator");
      assert.equal(p.doubles.length, 5);
      // The shell's own line when it sends a turn event ("woken") carries
      // no figures of the key: 0, as for a figure that does not apply.
      assert.equal(p.doubles[4], p.blobs[1] === "woken" ? 0 : 1, `the key's limit: ${JSON.stringify(p)}`);
    }
    const released = written.find((p) => p.blobs[1] === "released" && p.blobs[2] === "mx-h");
    assert.ok(released.doubles[1] > 0, "a release that handed on: how long the hold lasted");
    assert.equal(released.doubles[2], 1, "holders after: mx-w");

    // A dataset that throws: every call still answers, and the line counts the drop.
    await h.faults({ metricsThrow: true });
    await heldWithWaiters(h, "metrics/throwing", "mt-h", ["mt-w"]);
    await h.sendEvent("mt-h", "finish", {});
    await h.untilInspect("metrics/throwing", "mt-w holding", (v) => v.holders[0]?.id === "mt-w");
    await h.sendEvent("mt-w", "finish", {});
    assert.deepEqual(await h.output("mt-w"), { superseded: false, value: "done" });
    const dropped = lines("metrics/throwing").filter((d) => d.metricsDropped > 0);
    assert.ok(dropped.length > 0, JSON.stringify(lines("metrics/throwing")));
    assert.ok((await h.faultReport()).injected.metricsThrown > 0);
    await h.faults({});
  });
});

describe("§10a checked: every status query about a holder is recorded", () => {
  let h;
  before(async () => {
    // The alarm's period far beyond the test: no check seen here is the alarm's.
    h = await startBaton({ strict: true, holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("an acquire's check of the holder, and a woken holder's check, show in checked", async () => {
    const key = "health/every-check";
    await h.create("ec-h", { key, waitForFinish: true });
    const held = await h.untilInspect(key, "ec-h holding", (v) => v.holders[0]?.id === "ec-h");
    assert.equal(held.holders[0].checked, null, "granted at once: nobody asked about it yet");
    // A caller about to wait checks the holder first; the fault injector makes that one query throw.
    await h.faults({ fails: [{ call: "status", id: "ec-h", times: 1 }] });
    assert.equal(await h.ok(key, "acquire", key, "ec-w1"), "pending");
    const failed = (await h.inspect(key)).holders[0].checked;
    assert.equal(failed?.status, "failed", "the acquire's failed query is the holder's last answer");
    const report = await h.faults({});
    assert.equal(report.injected["throw status"], 1, "exactly the one query was failed");
    // The next caller's check answers: checked is what the binding said.
    assert.equal(await h.ok(key, "acquire", key, "ec-w2"), "pending");
    const answered = (await h.inspect(key)).holders[0].checked;
    assert.equal(answered.status, await h.status("ec-h"), "the binding's own status");
    assert.ok(answered.at >= failed.at);
    // The two callers leave; a real instance waits, and is handed the key.
    await h.ok(key, "release", key, "ec-w1");
    await h.ok(key, "release", key, "ec-w2");
    await h.create("ec-w", { key, waitForFinish: true });
    await h.untilInspect(key, "ec-w waiting", (v) => v.waiting.some((w) => w.id === "ec-w"));
    await h.sendEvent("ec-h", "finish", {});
    // The woken holder's status, asked after its turn event, is its checked.
    const woken = await h.untilInspect(key, "ec-w's wake checked", (v) => v.holders[0]?.id === "ec-w" && v.holders[0].checked !== null);
    assert.equal(woken.holders[0].checked.status, await h.status("ec-w"));
    await h.sendEvent("ec-w", "finish", {});
  });
});
