// "When the platform fails" (docs/operations.md): one test per row, through real
// Workflows, with Baton's bindings behind the fault injector
// (tests/miniflare/fault-injector.mjs): production-strict, and each test's
// plan making one call throw, hang, or reset the object that makes it.
// No assertion is about timing: every wait polls for a state, and a fault
// is known to have happened by the injector's own count of it.
import { describe, test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";

function untilHolding(h, key, id) {
  return h.untilInspect(key, `${id} holding`, (view) => view.holders.some((x) => x.id === id));
}

function untilWaiting(h, key, id) {
  return h.untilInspect(key, `${id} waiting`, (view) => view.waiting.some((w) => w.id === id));
}

/** Waits until the injector has injected at least `n` faults of `kind`. */
function untilInjected(h, kind, n = 1) {
  return h.until(`${n} × ${kind}`, async () => ((await h.faultReport()).injected[kind] ?? 0) >= n);
}

/** A holder that waits for "finish", and a counted waiter behind it. */
async function holderAndWaiter(h, key, waiterParams = {}) {
  const holder = `${key}-h`;
  const waiter = `${key}-w`;
  await h.create(holder, { key, waitForFinish: true, countSteps: true });
  await untilHolding(h, key, holder);
  await h.create(waiter, { key, countSteps: true, turnTimeout: "1 hour", ...waiterParams });
  await untilWaiting(h, key, waiter);
  const view = await h.inspect(key);
  return { holder, waiter, fence: view.holders.find((x) => x.id === holder).fence };
}

/** The waiter ran its body once, after the holder, with the next fence. */
async function handedOnOnce(h, { holder, waiter, fence }) {
  assert.equal((await h.output(holder)).fence, fence);
  const second = await h.output(waiter);
  assert.equal(second.fence, fence + 1);
  assert.deepEqual(await h.logOf([holder, waiter]), [`enter ${holder}`, `exit ${holder}`, `enter ${waiter}`, `exit ${waiter}`]);
  return second;
}

describe("the Coordinator when the platform fails (holder check every second)", () => {
  let h;
  before(async () => {
    h = await startBaton({ strict: true, holderCheckMs: 1000 });
  });
  after(() => h?.dispose());
  beforeEach(() => h.faults({}));

  test("a grant event that throws is re-sent by the alarm, the same grant", async () => {
    const key = "fault-grant-throws";
    const pair = await holderAndWaiter(h, key);
    await h.faults({ fails: [{ call: "sendEvent", id: pair.waiter, times: 2 }] });
    await h.sendEvent(pair.holder, "finish", {});
    await handedOnOnce(h, pair);
    assert.equal((await h.faultReport()).injected["throw sendEvent"], 2);
  });

  test("a grant event that hangs arrives late, once", async () => {
    const key = "fault-grant-hangs";
    const pair = await holderAndWaiter(h, key);
    await h.faults({ seed: 7, hangRate: 1, hangMsMax: 3000 });
    await h.sendEvent(pair.holder, "finish", {});
    await handedOnOnce(h, pair);
    assert.ok((await h.faultReport()).injected["hang sendEvent"] >= 1);
  });

  // A status check that fails never counts the holder dead; one that never
  // answers (the injector's `hangs`) Baton abandons after
  // WORKFLOW_CALL_TIMEOUT_MS (src/limits.rs), as a transient failure.
  for (const fault of [
    {
      name: "a status check that throws never counts the holder dead",
      key: "fault-status-throws",
      plan: (holder) => ({ fails: [{ call: "status", id: holder, times: 1000 }] }),
      // The alarm has checked the holder three times and been refused an answer each time.
      injected: ["throw status", 3],
    },
    {
      name: "a status check that never answers is abandoned: unknown, never dead, asked again",
      key: "fault-status-hangs",
      plan: (holder) => ({ hangs: [{ call: "status", id: holder, times: 1000 }] }),
      // A second check of the holder: the first was given up, not awaited for ever.
      injected: ["hang forever status", 2],
    },
  ]) {
    test(fault.name, async () => {
      const pair = await holderAndWaiter(h, fault.key);
      await h.faults(fault.plan(pair.holder));
      await untilInjected(h, ...fault.injected);
      const view = await h.inspect(fault.key);
      assert.deepEqual(view.holders.map((x) => x.id), [pair.holder]);
      assert.deepEqual(view.waiting.map((w) => w.id), [pair.waiter]);
      await h.faults({});
      await h.sendEvent(pair.holder, "finish", {});
      await handedOnOnce(h, pair);
    });
  }

  // A superseded waiter's termination is owed until done: the holder-check
  // alarm terminates it when the enqueue's own attempt failed or never ran
  // (its turn timeout is an hour: only the termination ends it).
  for (const fault of [
    { what: "throws", kind: "throw terminate", plan: (old) => ({ fails: [{ call: "terminate", id: old }] }) },
    { what: "never answers", kind: "hang forever terminate", plan: (old) => ({ hangs: [{ call: "terminate", id: old }] }) },
    {
      what: "is cut off by a reset after the supersede's commit",
      kind: "reset Coordinator between terminate",
      plan: (old) => ({ resets: [{ object: "Coordinator", at: "between", call: "terminate", id: old }] }),
    },
  ]) {
    test(`a superseded waiter's terminate that ${fault.what}: the alarm terminates it`, async () => {
      const key = `fault-${fault.kind.replaceAll(" ", "-").toLowerCase()}`;
      const holder = `${key}-h`;
      const old = `${key}-old`;
      const next = `${key}-new`;
      await h.create(holder, { key, waitForFinish: true });
      await untilHolding(h, key, holder);
      await h.create(old, { key, turnTimeout: "1 hour" });
      await untilWaiting(h, key, old);
      await h.faults(fault.plan(old));
      // A reset refuses the enqueue after its commit; the supersede stands.
      const reply = await h.rpc(key, "enqueue", key, true, next);
      if (!("error" in reply)) assert.deepEqual(reply.value.terminated, [old]);
      await untilInjected(h, fault.kind);
      await h.untilStatus(old, "terminated");
      assert.deepEqual(await h.logOf([old]), []);
      const view = await h.inspect(key);
      assert.deepEqual(view.waiting.map((w) => w.id), [next]);
      await h.ok(key, "release", key, next);
      await h.sendEvent(holder, "finish", {});
      await h.output(holder);
    });
  }

  test("a reset between the hand-off's commit and its grant event: the alarm sends the grant", async () => {
    const key = "fault-reset-before-grant";
    const pair = await holderAndWaiter(h, key);
    await h.faults({ resets: [{ object: "Coordinator", at: "between", call: "sendEvent", id: pair.waiter }] });
    await h.sendEvent(pair.holder, "finish", {});
    await handedOnOnce(h, pair);
    assert.equal((await h.faultReport()).injected["reset Coordinator between sendEvent"], 1);
  });

  test("a reset after the grant event was sent: the waiter runs once, no second grant", async () => {
    const key = "fault-reset-after-grant";
    const pair = await holderAndWaiter(h, key);
    const third = `${key}-3`;
    await h.create(third, { key, countSteps: true, turnTimeout: "1 hour" });
    await untilWaiting(h, key, third);
    await h.faults({ resets: [{ object: "Coordinator", at: "after", call: "sendEvent", id: pair.waiter }] });
    await h.sendEvent(pair.holder, "finish", {});
    await handedOnOnce(h, pair);
    const last = await h.output(third);
    assert.equal(last.fence, pair.fence + 2);
    assert.deepEqual((await h.logOf([pair.waiter, third])).slice(2), [`enter ${third}`, `exit ${third}`]);
    assert.equal((await h.faultReport()).injected["reset Coordinator after sendEvent"], 1);
  });

  test("a reset before an acquire commits: the step is retried and the key granted once", async () => {
    const key = "fault-reset-before-acquire";
    await h.faults({ resets: [{ object: "Coordinator", at: "before", call: "acquire", key }] });
    const id = `${key}-1`;
    await h.create(id, { key, countSteps: true });
    const out = await h.output(id);
    assert.equal(out.fence, 1);
    assert.deepEqual(await h.logOf([id]), [`enter ${id}`, `exit ${id}`]);
    assert.equal((await h.faultReport()).injected["reset Coordinator before acquire"], 1);
  });


  test("a grant event that never answers is abandoned: the alarm re-sends the same grant", async () => {
    const key = "fault-grant-never";
    const pair = await holderAndWaiter(h, key);
    await h.faults({ hangs: [{ call: "sendEvent", id: pair.waiter, times: 1 }] });
    await h.sendEvent(pair.holder, "finish", {});
    await handedOnOnce(h, pair);
    assert.equal((await h.faultReport()).injected["hang forever sendEvent"], 1);
  });

  /** The list of busy keys' entry for `key` (contract §10), once it satisfies `wanted`. */
  function untilListed(key, what, wanted) {
    return h.until(`${key} ${what}`, async () => {
      const { value } = await h.serial("coordinatorList", { limit: 500 });
      return wanted(value.keys.find((k) => k.key === key));
    });
  }

  for (const at of ["between", "after"]) {
    test(`a reset ${at === "between" ? "between a decision's commit and its list report" : "after the list report, before its confirmation is recorded"}: the alarm reports the key`, async () => {
      const key = `fault-reset-${at}-report`;
      const holder = `${key}-h`;
      const waiter = `${key}-w`;
      await h.create(holder, { key, waitForFinish: true });
      await untilHolding(h, key, holder);
      // The waiter makes the key busy: the report that says so is the one reset.
      await h.faults({ resets: [{ object: "Coordinator", at, call: "report", key }] });
      await h.create(waiter, { key, turnTimeout: "1 hour" });
      await untilInjected(h, `reset Coordinator ${at} report`);
      await untilListed(key, "listed with its waiter", (entry) => entry?.waiting === 1 && entry.holders === 1);
      await h.sendEvent(holder, "finish", {});
      await h.output(waiter);
      await untilListed(key, "gone from the list", (entry) => entry === undefined);
    });
  }

  test("strict: a grant to a waiter that ended goes to the next live one (sendEvent throws)", async () => {
    const key = "fault-strict-ended";
    const pair = await holderAndWaiter(h, key);
    const next = `${key}-next`;
    await h.create(next, { key, countSteps: true, turnTimeout: "1 hour" });
    await untilWaiting(h, key, next);
    await h.terminate(pair.waiter);
    await h.untilStatus(pair.waiter, "terminated");
    await h.sendEvent(pair.holder, "finish", {});
    const out = await h.output(next);
    assert.ok(out.fence > pair.fence);
    assert.deepEqual(await h.logOf([pair.waiter, next]), [`enter ${next}`, `exit ${next}`]);
  });
});

describe("the Debouncer when create fails", () => {
  let h;
  const VARS = { WORKFLOW_BINDING: "ECHO", WORKFLOW_BINDINGS: "ECHO,WORKFLOW" };
  before(async () => {
    h = await startBaton({ strict: true, vars: VARS });
  });
  after(() => h?.dispose());
  beforeEach(() => h.faults({}));

  async function debounceOk(key, options) {
    const result = await h.debouncer(key, "debounce", key, options);
    if ("error" in result) throw new Error(result.error);
    return result.value;
  }

  /** Waits until `key`'s start is confirmed, and returns the ids of its echo instances that exist. */
  async function startedOnce(key, id) {
    await h.until(`${key} started`, async () => {
      const view = (await h.debouncer(key, "inspect", key)).value;
      return view.started.some((s) => s.instanceId === id) && view.retrying.length === 0;
    });
    await h.untilStatus(id, "complete", undefined, "echo");
    const echoes = (await h.log()).filter((e) => e.kind === "echo" && e.id === id);
    assert.equal(echoes.length, 1);
  }

  test("a create that throws is retried until it starts, once", async () => {
    const key = "fault-create-throws";
    await h.faults({ fails: [{ call: "create", times: 2 }] });
    const { instanceId } = await debounceOk(key, { delayMs: 100, params: { n: 1 } });
    await startedOnce(key, instanceId);
    assert.equal((await h.faultReport()).injected["throw create"], 2);
  });

  test("a create that succeeded but whose object reset before recording it: the retry meets the id and counts it done", async () => {
    const key = "fault-create-reset-after";
    await h.faults({ resets: [{ object: "Debouncer", at: "after", call: "create" }] });
    const { instanceId } = await debounceOk(key, { delayMs: 100, params: { n: 2 } });
    await startedOnce(key, instanceId);
    assert.equal((await h.faultReport()).injected["reset Debouncer after create"], 1);
  });

  test("a reset between the commit and the create: the alarm creates it", async () => {
    const key = "fault-create-reset-between";
    await h.faults({ resets: [{ object: "Debouncer", at: "between", call: "create" }] });
    const { instanceId } = await debounceOk(key, { delayMs: 100, params: { n: 3 } });
    await startedOnce(key, instanceId);
    assert.equal((await h.faultReport()).injected["reset Debouncer between create"], 1);
  });
});

describe("Runs and the serial queue when the platform fails", () => {
  let h;
  before(async () => {
    h = await startBaton({ strict: true });
  });
  after(() => h?.dispose());
  beforeEach(() => h.faults({}));

  test("Runs: a claimant check that throws never counts the claimant dead", async () => {
    const key = "fault-runs-status";
    const params = { mode: "run", key, waitForFinish: true, result: "once" };
    const [first] = await h.call("/start-once", { key, params });
    assert.ok(first.started);
    await h.untilStatus(first.instanceId, "running");
    await h.faults({ fails: [{ call: "status", id: first.instanceId, times: 1000 }] });
    const again = await h.call("/start-once", { key, params, count: 3 });
    assert.deepEqual(again.map((r) => [r.instanceId, r.started]), Array(3).fill([first.instanceId, false]));
    await h.faults({});
    await h.sendEvent(first.instanceId, "finish", {});
    assert.equal(await h.output(first.instanceId), "once");
    const ran = (await h.log()).filter((e) => e.kind === "run" && e.id.startsWith("run-") && e.id === first.instanceId);
    assert.equal(ran.length, 1);
  });

  test("serial: a claim whose D1 batch fails is retried by the helper; the group runs in order", async () => {
    const group = "fault-serial-d1";
    await h.faults({ d1Fails: 2 });
    await h.create("fd1-a", { mode: "serial", group, revision: "r1" });
    assert.deepEqual(await h.output("fd1-a", 60_000), { ran: true, value: "deployed" });
    assert.equal((await h.faultReport()).injected["throw d1 batch"], 2);
  });

  test("serial: a turn event that throws; the waiter learns its turn by its poll", async () => {
    const group = "fault-serial-turn";
    await h.create("fst-a", { mode: "serial", group, revision: "r1", waitForFinish: true });
    await h.until("fst-a holding", async () => (await h.serial("serialInspect", { group })).value.holder?.instanceId === "fst-a");
    await h.create("fst-b", { mode: "serial", group, revision: "r2", options: { pollInterval: 1000 } });
    await h.until("fst-b waiting", async () => (await h.serial("serialInspect", { group })).value.waiting.length === 1);
    await h.faults({ fails: [{ call: "sendEvent", id: "fst-b", times: 1000 }] });
    await h.sendEvent("fst-a", "finish", {});
    assert.deepEqual(await h.output("fst-b", 60_000), { ran: true, value: "deployed" });
    assert.deepEqual(await h.logOf(["fst-a", "fst-b"]), ["enter fst-a", "exit fst-a", "enter fst-b", "exit fst-b"]);
  });

  test("rate limiter: a reset as an acquire arrives; the helper's retry spends once", async () => {
    const bucket = "fault-rate";
    const rules = [{ id: "minute", limit: 5, windowMs: 60_000 }];
    await h.faults({ resets: [{ object: "RateLimiter", at: "before", call: "acquire", key: bucket }] });
    await h.create("frate-1", { mode: "rate", bucket, rules, calls: 2 });
    assert.deepEqual(await h.output("frate-1"), { spent: 2 });
    assert.equal((await h.faultReport()).injected["reset RateLimiter before acquire"], 1);
    // Two permits spent in the window: the reset call granted none.
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 2);
    assert.deepEqual((await h.log()).filter((e) => e.id === "frate-1").map((e) => e.kind), ["spend", "spend"]);
  });
});
