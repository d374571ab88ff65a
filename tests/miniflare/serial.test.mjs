// The serial queue (contract §2, ADR-0004) against real Workflow instances:
// TestWorkflow's `runSerial` mode runs a body through `serialize`, and the
// Recorder logs when each body enters and exits. Some set-ups call the RPC
// methods directly with made-up instance ids (Baton finds those dead, so it
// never wakes them). No assertion is about timing: every wait polls for a
// state, and the only time bounds are upper bounds on those waits.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { settled, startBaton } from "./harness.mjs";

const RAN = { ran: true, value: "deployed" };

/** Calls a serial-queue method and returns its value; fails the test on an error. */
async function ok(h, method, input) {
  const result = await h.serial(method, input);
  assert.ok(!("error" in result), `${method}(${JSON.stringify(input)}) failed: ${result.error}`);
  return result.value;
}

/** A group as serialInspect answers it, without what time alone changes (`settled`). */
const inspect = async (h, group) => settled(await ok(h, "serialInspect", { group }));

/** Polls serialInspect(group) until `predicate` holds; returns that view. */
function untilView(h, group, what, predicate, timeoutMs) {
  return h.until(
    `${group}: ${what}`,
    async () => {
      const view = await inspect(h, group);
      return predicate(view) ? view : null;
    },
    timeoutMs,
  );
}

const untilHolder = (h, group, id, timeoutMs) =>
  untilView(h, group, `${id} holding`, (view) => view.holder?.instanceId === id, timeoutMs);

const waitingIds = (view) => view.waiting.map((w) => w.instanceId);

/** A finished execution's row in `recent`. */
function recentOf(view, id) {
  const row = view.recent.find((r) => r.instanceId === id);
  assert.ok(row, `${id} should be in recent: ${JSON.stringify(view.recent)}`);
  return row;
}

/** The step outputs the local Workflow engine reports for an instance. */
async function stepOutputs(h, id) {
  return (await h.details(id)).__LOCAL_DEV_STEP_OUTPUTS ?? [];
}

/**
 * Polls until `id` has made a claim that answered `waiting`: from then on it
 * is parked in `step.waitForEvent` until a push or its poll interval.
 */
function untilParked(h, id, timeoutMs) {
  return h.until(
    `${id} to wait behind a holder`,
    async () => (await stepOutputs(h, id)).some((o) => o?.status === "waiting" && "holder" in o),
    timeoutMs,
  );
}



/**
 * Makes `id` the group's holder by hand: a live instance that only waits
 * (its status says alive, so a claim that finds it holding leaves it the
 * group, contract §2a), enqueued and claimed directly.
 */
async function holdDirectly(h, group, id, revision = "r0") {
  await h.create(id, { mode: "park" });
  assert.equal((await ok(h, "serialEnqueue", { group, instanceId: id, revision })).status, "waiting");
  assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: id }), { status: "holding" });
}

/** Whether `id`'s wait ended with its own turn event saying `status` (contract §2a). */
async function toldByTurn(h, id, group, status) {
  return (await stepOutputs(h, id)).some((o) => {
    const told = o && typeof o === "object" && "payload" in o ? o.payload : o;
    return told?.group === group && told?.instanceId === id && told?.status === status;
  });
}

const serial = (group, revision, extra = {}) => ({ mode: "serial", group, revision, ...extra });

describe("serial queue with default settings", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  test("ADR-0004 burst: A holds, B waits, C arrives; B skips naming C, A untouched, C runs after A", async () => {
    const group = "burst";
    // Short polls: this test is about who runs, not about the push (tested below).
    const options = { pollInterval: 1000 };
    await h.create("burst-A", serial(group, "r1", { waitForFinish: true }));
    await untilHolder(h, group, "burst-A");

    await h.create("burst-B", serial(group, "r2", { options }));
    await untilParked(h, "burst-B");
    let view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "burst-A");
    assert.deepEqual(waitingIds(view), ["burst-B"]);

    await h.create("burst-C", serial(group, "r3", { options }));
    const outputB = await h.output("burst-B", 20_000);
    assert.equal(outputB.ran, false);
    assert.equal(outputB.error, "RunSkipped");
    assert.equal(outputB.revision, "r3");
    assert.match(outputB.message, /r3/);

    // A was never touched: still running, still the holder, its body not exited.
    assert.equal(await h.status("burst-A"), "running");
    view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "burst-A");
    assert.deepEqual(waitingIds(view), ["burst-C"]);
    assert.equal(recentOf(view, "burst-B").outcome, "superseded");
    assert.deepEqual(recentOf(view, "burst-B").supersededBy, { instanceId: "burst-C", revision: "r3" });
    assert.deepEqual(await h.logOf(["burst-A", "burst-B", "burst-C"]), ["enter burst-A"]);

    await h.sendEvent("burst-A", "finish", {});
    assert.deepEqual(await h.output("burst-A", 20_000), RAN);
    assert.deepEqual(await h.output("burst-C", 20_000), RAN);
    assert.deepEqual(await h.logOf(["burst-A", "burst-B", "burst-C"]), [
      "enter burst-A",
      "exit burst-A",
      "enter burst-C",
      "exit burst-C",
    ]);
    view = await inspect(h, group);
    assert.equal(view.holder, null);
    assert.deepEqual(view.waiting, []);
    assert.equal(recentOf(view, "burst-A").outcome, "released");
    assert.equal(recentOf(view, "burst-C").outcome, "released");
    assert.equal(recentOf(view, "burst-B").outcome, "superseded");
  });

  test("a stale arrival (revision != current) skips at once and supersedes nothing", async () => {
    const group = "stale";
    await holdDirectly(h, group, "stale-holder");
    // A waiter at a revision that is not the current one: an arrival that
    // was not skipped, with current r9, would supersede it.
    await ok(h, "serialEnqueue", { group, instanceId: "stale-waiter", revision: "r1" });
    const before = await inspect(h, group);
    assert.deepEqual(waitingIds(before), ["stale-waiter"]);

    assert.deepEqual(
      await ok(h, "serialEnqueue", { group, instanceId: "stale-direct", revision: "r0", current: "r9" }),
      { status: "skipped", reason: "not_current", current: "r9" },
    );
    assert.deepEqual(await inspect(h, group), before);
    // Nothing was written for it: it is not even enqueued.
    const claim = await h.serial("serialClaim", { group, instanceId: "stale-direct" });
    assert.match(claim.error ?? "", /^BatonError: instanceId\b/);

    // Through a Workflow: RunSkipped naming the current revision, body never entered.
    await h.create("stale-wf", serial(group, "r0", { current: "r9" }));
    const output = await h.output("stale-wf", 20_000);
    assert.equal(output.ran, false);
    assert.equal(output.error, "RunSkipped");
    assert.equal(output.revision, "r9");
    assert.deepEqual(await h.logOf(["stale-wf"]), []);
    assert.deepEqual(await inspect(h, group), before);
  });

  test("a current arrival supersedes every waiter not at current, whenever it arrived", async () => {
    const group = "current";
    await holdDirectly(h, group, "cur-H");
    // Two waiters at r5 (the head when they arrived): the second keeps the
    // first, which is at the current revision.
    assert.deepEqual(
      await ok(h, "serialEnqueue", { group, instanceId: "cur-X", revision: "r5", current: "r5" }),
      { status: "waiting", superseded: [] },
    );
    assert.deepEqual(
      await ok(h, "serialEnqueue", { group, instanceId: "cur-Y", revision: "r5", current: "r5" }),
      { status: "waiting", superseded: [] },
    );
    assert.deepEqual(waitingIds(await inspect(h, group)), ["cur-X", "cur-Y"]);

    // The head moves to r6: both earlier waiters are superseded, the holder is not.
    const z = await ok(h, "serialEnqueue", { group, instanceId: "cur-Z", revision: "r6", current: "r6" });
    assert.equal(z.status, "waiting");
    assert.deepEqual([...z.superseded].sort(), ["cur-X", "cur-Y"]);
    // A later arrival at the current revision keeps Z, though Z is older.
    assert.deepEqual(
      await ok(h, "serialEnqueue", { group, instanceId: "cur-Z2", revision: "r6", current: "r6" }),
      { status: "waiting", superseded: [] },
    );
    const view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "cur-H");
    assert.deepEqual(waitingIds(view), ["cur-Z", "cur-Z2"]);
    for (const id of ["cur-X", "cur-Y"]) {
      assert.equal(recentOf(view, id).outcome, "superseded");
      assert.deepEqual(recentOf(view, id).supersededBy, { instanceId: "cur-Z", revision: "r6" });
      assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: id }), {
        status: "skipped",
        supersededBy: { instanceId: "cur-Z", revision: "r6" },
      });
    }
  });

  test("with the head unknown in between, the current arrival supersedes the waiter that arrived without it", async () => {
    // The brief's set-up: X at r5 then Y at r1, both without current. Y's
    // arrival (arrival order) already supersedes X; Z (r6, current r6) then
    // supersedes Y. Every non-current waiter ends superseded.
    const group = "current-mixed";
    await holdDirectly(h, group, "mix-H");
    assert.deepEqual(await ok(h, "serialEnqueue", { group, instanceId: "mix-X", revision: "r5" }), {
      status: "waiting",
      superseded: [],
    });
    assert.deepEqual(await ok(h, "serialEnqueue", { group, instanceId: "mix-Y", revision: "r1" }), {
      status: "waiting",
      superseded: ["mix-X"],
    });
    assert.deepEqual(
      await ok(h, "serialEnqueue", { group, instanceId: "mix-Z", revision: "r6", current: "r6" }),
      { status: "waiting", superseded: ["mix-Y"] },
    );
    const view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "mix-H");
    assert.deepEqual(waitingIds(view), ["mix-Z"]);
    assert.deepEqual(recentOf(view, "mix-X").supersededBy, { instanceId: "mix-Y", revision: "r1" });
    assert.deepEqual(recentOf(view, "mix-Y").supersededBy, { instanceId: "mix-Z", revision: "r6" });
  });

  test("current revision through Workflows: non-current waiters skip naming it, the current one runs", async () => {
    const group = "current-wf";
    const options = { pollInterval: 1000 };
    await h.create("curwf-H", serial(group, "r4", { waitForFinish: true }));
    await untilHolder(h, group, "curwf-H");
    await h.create("curwf-X", serial(group, "r5", { current: "r5", options }));
    await untilParked(h, "curwf-X");
    await h.create("curwf-Y", serial(group, "r5", { current: "r5", options }));
    await untilParked(h, "curwf-Y");
    assert.deepEqual(waitingIds(await inspect(h, group)), ["curwf-X", "curwf-Y"]);

    await h.create("curwf-Z", serial(group, "r6", { current: "r6", options }));
    for (const id of ["curwf-X", "curwf-Y"]) {
      const output = await h.output(id, 20_000);
      assert.equal(output.error, "RunSkipped", `${id}: ${JSON.stringify(output)}`);
      assert.equal(output.revision, "r6");
    }
    assert.equal(await h.status("curwf-H"), "running");
    assert.equal((await inspect(h, group)).holder.instanceId, "curwf-H");

    await h.sendEvent("curwf-H", "finish", {});
    assert.deepEqual(await h.output("curwf-Z", 20_000), RAN);
    assert.deepEqual(await h.logOf(["curwf-H", "curwf-X", "curwf-Y", "curwf-Z"]), [
      "enter curwf-H",
      "exit curwf-H",
      "enter curwf-Z",
      "exit curwf-Z",
    ]);
  });

  test("an unknown head falls back to arrival order, whatever the revision strings", async () => {
    const group = "arrival";
    await holdDirectly(h, group, "arr-H");
    assert.deepEqual(await ok(h, "serialEnqueue", { group, instanceId: "arr-X", revision: "r9" }), {
      status: "waiting",
      superseded: [],
    });
    // r1 sorts before r9, and still wins: it arrived later.
    assert.deepEqual(await ok(h, "serialEnqueue", { group, instanceId: "arr-Y", revision: "r1" }), {
      status: "waiting",
      superseded: ["arr-X"],
    });
    // `current: null` is no current at all.
    assert.deepEqual(
      await ok(h, "serialEnqueue", { group, instanceId: "arr-W", revision: "r0", current: null }),
      { status: "waiting", superseded: ["arr-Y"] },
    );
    const view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "arr-H");
    assert.deepEqual(waitingIds(view), ["arr-W"]);
    assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: "arr-X" }), {
      status: "skipped",
      supersededBy: { instanceId: "arr-Y", revision: "r1" },
    });
    assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: "arr-Y" }), {
      status: "skipped",
      supersededBy: { instanceId: "arr-W", revision: "r0" },
    });
    assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: "arr-W" }), {
      status: "waiting",
      holder: "arr-H",
    });
  });

  test("the push moves a parked waiter: it runs long before its 30 s poll could", async () => {
    const group = "push";
    await h.create("push-A", serial(group, "r1", { waitForFinish: true }));
    await untilHolder(h, group, "push-A");
    // Default options: the waiter's poll interval is 30 s.
    await h.create("push-W", serial(group, "r2"));
    await untilParked(h, "push-W");

    await h.sendEvent("push-A", "finish", {});
    // A bound on the wait, not a timing assertion: the waiter parked in a
    // 30 s wait can only finish inside 20 s if the turn event woke it.
    assert.deepEqual(await h.output("push-W", 20_000), RAN);
    const outputsA = await stepOutputs(h, "push-A");
    assert.deepEqual(outputsA.at(-1), { next: "push-W" }, "A's release names the waiter it woke");
    assert.ok(await toldByTurn(h, "push-W", group, "holding"), "the waiter's wait ended with its turn, handing it the group");
    assert.deepEqual(await h.logOf(["push-A", "push-W"]), [
      "enter push-A",
      "exit push-A",
      "enter push-W",
      "exit push-W",
    ]);
  });

  test("the push tells a superseded waiter at once, not at its 30 s poll", async () => {
    const group = "push-supersede";
    await holdDirectly(h, group, "pushs-H");
    await h.create("pushs-B", serial(group, "r2"));
    await untilParked(h, "pushs-B");
    assert.deepEqual(await ok(h, "serialEnqueue", { group, instanceId: "pushs-C", revision: "r3" }), {
      status: "waiting",
      superseded: ["pushs-B"],
    });
    // A wait bound, as above: B is parked in a 30 s wait.
    const output = await h.output("pushs-B", 20_000);
    assert.equal(output.error, "RunSkipped");
    assert.equal(output.revision, "r3");
    assert.ok(await toldByTurn(h, "pushs-B", group, "skipped"), "B's wait ended with its own turn, saying skipped");
    assert.equal((await inspect(h, group)).holder.instanceId, "pushs-H");
  });

  test("serialRelease from the holder names and wakes the next live waiter", async () => {
    const group = "push-direct";
    await holdDirectly(h, group, "pushd-H");
    await h.create("pushd-W", serial(group, "r2"));
    await untilParked(h, "pushd-W");
    assert.deepEqual(await ok(h, "serialRelease", { group, instanceId: "pushd-H" }), { next: "pushd-W" });
    assert.deepEqual(await h.output("pushd-W", 20_000), RAN);
  });

  test("serialRelease hands on past a dead first waiter: abandoned after the reply, the next live one woken", async () => {
    const group = "push-dead";
    await holdDirectly(h, group, "pushx-H");
    // A made-up id: never created, so dead. Both wait at the current revision.
    const dead = { group, instanceId: "pushx-D", revision: "r2", current: "r2" };
    assert.equal((await ok(h, "serialEnqueue", dead)).status, "waiting");
    await h.create("pushx-W", serial(group, "r2", { current: "r2" }));
    await untilParked(h, "pushx-W");
    assert.deepEqual(waitingIds(await inspect(h, group)), ["pushx-D", "pushx-W"]);

    // The reply names the first waiter, sent the turn event; its status is
    // checked after the reply, and the hand-on goes on past it from there.
    assert.deepEqual(await ok(h, "serialRelease", { group, instanceId: "pushx-H" }), { next: "pushx-D" });
    // A wait bound, as above: W is parked in a 30 s wait.
    assert.deepEqual(await h.output("pushx-W", 20_000), RAN);
    assert.ok(await toldByTurn(h, "pushx-W", group, "holding"), "W's wait ended with its turn, handing it the group");
    assert.equal(recentOf(await inspect(h, group), "pushx-D").outcome, "abandoned");
  });
});

describe("serial queue with SERIAL_PUSH off", () => {
  let h;
  before(async () => {
    h = await startBaton({ vars: { SERIAL_PUSH: "off" } });
  });
  after(() => h?.dispose());

  test("serialRelease wakes no one ({ next: null }); the waiter's poll finds the group free", async () => {
    const group = "no-push";
    await holdDirectly(h, group, "nopush-H");
    await h.create("nopush-W", serial(group, "r2", { options: { pollInterval: 300 } }));
    await untilParked(h, "nopush-W");
    assert.deepEqual(await ok(h, "serialRelease", { group, instanceId: "nopush-H" }), { next: null });
    assert.deepEqual(await h.output("nopush-W", 20_000), RAN);
    assert.ok(!(await toldByTurn(h, "nopush-W", group, "holding")), "no turn event reached the waiter");
  });
});

describe("serial queue timeouts", () => {
  // No test here waits for a bound to pass on the clock. A waiter timeout
  // of 1 ms times a waiter out at its first claim behind a live holder (or,
  // if the claim came within the same millisecond, at the next poll); an
  // expiry is driven by writing an old heartbeat into the holder's row, as
  // if its heartbeats had stopped long ago.

  /** Makes `id`'s last heartbeat ancient: past any expiry. */
  async function ageHeartbeat(h, group, id) {
    const db = await h.mf.getD1Database("DB", "baton");
    await db
      .prepare("UPDATE serial_queue SET heartbeat_at = 0 WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding'")
      .bind(group, id)
      .run();
  }

  /**
   * Ages `holder`'s heartbeat until `done(view)`: a holder still running may
   * heartbeat again in between, which only costs another round.
   */
  function ageUntil(h, group, holder, what, done) {
    return h.until(`${group}: ${what}`, async () => {
      await ageHeartbeat(h, group, holder);
      const view = await inspect(h, group);
      return done(view) ? view : null;
    });
  }

  test("a waiter behind a heartbeating holder times out; the holder keeps the group", async () => {
    const h = await startBaton({ vars: { SERIAL_WAITER_TIMEOUT_MS: "1" } });
    try {
      const group = "timeout";
      await h.create("to-H", serial(group, "r1", { waitForFinish: true, options: { heartbeatInterval: 200 } }));
      const first = await untilHolder(h, group, "to-H");
      await h.create("to-W", serial(group, "r2", { options: { pollInterval: 300 } }));

      const output = await h.output("to-W", 20_000);
      assert.equal(output.ran, false);
      assert.equal(output.error, "SerialQueueTimedOut", JSON.stringify(output));
      let view = await inspect(h, group);
      assert.equal(view.holder.instanceId, "to-H");
      assert.equal(recentOf(view, "to-W").outcome, "timed_out");
      assert.deepEqual(view.waiting, []);

      // The holder heartbeats on and keeps the group.
      view = await untilView(
        h,
        group,
        "to-H heartbeating",
        (v) => v.holder?.instanceId === "to-H" && v.holder.heartbeatAt > first.holder.heartbeatAt,
        20_000,
      );
      assert.equal(await h.status("to-H"), "running");

      await h.sendEvent("to-H", "finish", {});
      assert.deepEqual(await h.output("to-H", 20_000), RAN);
      assert.deepEqual(await h.logOf(["to-H", "to-W"]), ["enter to-H", "exit to-H"]);
      assert.equal(recentOf(await inspect(h, group), "to-H").outcome, "released");
    } finally {
      await h.dispose();
    }
  });

  test("a holder whose heartbeats stop frees the group; a waiter claims it", async () => {
    const h = await startBaton();
    try {
      const group = "abandon";
      await h.create("ab-H", serial(group, "r1", { waitForFinish: true, options: { heartbeatInterval: 200 } }));
      await untilHolder(h, group, "ab-H");
      await h.create("ab-W", serial(group, "r2", { options: { pollInterval: 200 } }));
      await untilParked(h, "ab-W");
      assert.equal((await inspect(h, group)).holder.instanceId, "ab-H");

      // Terminated while holding: it can neither heartbeat nor release.
      await h.terminate("ab-H");
      await h.untilStatus("ab-H", "terminated", 20_000);
      // Its last heartbeat is now past the expiry; the waiter's next poll takes the group.
      await ageUntil(h, group, "ab-H", "ab-H abandoned", (v) =>
        v.recent.some((r) => r.instanceId === "ab-H" && r.outcome === "abandoned"),
      );

      assert.deepEqual(await h.output("ab-W", 20_000), RAN);
      const view = await inspect(h, group);
      assert.equal(view.holder, null);
      assert.equal(recentOf(view, "ab-H").outcome, "abandoned");
      assert.equal(recentOf(view, "ab-W").outcome, "released");
      assert.deepEqual(await h.logOf(["ab-H", "ab-W"]), ["enter ab-H", "enter ab-W", "exit ab-W"]);
    } finally {
      await h.dispose();
    }
  });

  test("a holder that learns from a heartbeat it lost the group stops with SerialQueueLostHold", async () => {
    const h = await startBaton();
    try {
      const group = "lost";
      await h.create("lost-H", serial(group, "r1", { waitForFinish: true, options: { heartbeatInterval: 300 } }));
      await untilHolder(h, group, "lost-H");
      await h.create("lost-W", serial(group, "r2", { waitForFinish: true, options: { pollInterval: 200 } }));
      await untilParked(h, "lost-W");
      // The holder's heartbeat goes stale while it still runs: the waiter's
      // next poll takes the group, and the holder's next heartbeat learns it.
      await ageUntil(h, group, "lost-H", "lost-W holding", (v) => v.holder?.instanceId === "lost-W");

      const output = await h.output("lost-H", 30_000);
      assert.equal(output.error, "SerialQueueLostHold", JSON.stringify(output));
      // It stopped at the heartbeat: its body never reached "exit", while the
      // new holder runs on undisturbed.
      assert.deepEqual(await h.logOf(["lost-H", "lost-W"]), ["enter lost-H", "enter lost-W"]);
      assert.equal((await inspect(h, group)).holder.instanceId, "lost-W");
      await h.sendEvent("lost-W", "finish", {});
      assert.deepEqual(await h.output("lost-W", 20_000), RAN);
    } finally {
      await h.dispose();
    }
  });
});

describe("serial queue input checks", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  const G = "checked";
  const METHODS = ["serialEnqueue", "serialClaim", "serialHeartbeat", "serialRelease", "serialInspect"];
  // Valid inputs each bad case starts from. Heartbeat and release name the
  // holder and claim the waiter, so a call that slipped through would write.
  const BASE = {
    serialEnqueue: { group: G, instanceId: "chk-new", revision: "r2" },
    serialClaim: { group: G, instanceId: "chk-W" },
    serialHeartbeat: { group: G, instanceId: "chk-H" },
    serialRelease: { group: G, instanceId: "chk-H" },
    serialInspect: { group: G },
  };
  const long = (n) => "a".repeat(n);
  const WHOLE_INPUT = [
    ["missing input", []],
    ["null input", [null]],
    ["string input", [G]],
    ["array input", [[G, "chk-H"]]],
    ["number input", [42]],
    ["boolean input", [true]],
  ];
  const without = (object, field) => Object.fromEntries(Object.entries(object).filter(([k]) => k !== field));
  const identCases = (field) => [
    [`missing ${field}`, (base) => without(base, field)],
    [`null ${field}`, (base) => ({ ...base, [field]: null })],
    [`empty ${field}`, (base) => ({ ...base, [field]: "" })],
    [`513-byte ${field}`, (base) => ({ ...base, [field]: long(513) })],
    [`513-byte multibyte ${field}`, (base) => ({ ...base, [field]: "é".repeat(256) + "a" })],
    [`number ${field}`, (base) => ({ ...base, [field]: 7 })],
    [`object ${field}`, (base) => ({ ...base, [field]: { value: "x" } })],
  ];
  const INSTANCE_ID = [
    ["missing instanceId", (base) => without(base, "instanceId")],
    ["empty instanceId", (base) => ({ ...base, instanceId: "" })],
    ["instanceId with a space", (base) => ({ ...base, instanceId: "has space" })],
    ["101-character instanceId", (base) => ({ ...base, instanceId: long(101) })],
    ["instanceId with a slash", (base) => ({ ...base, instanceId: "a/b" })],
    ["number instanceId", (base) => ({ ...base, instanceId: 42 })],
  ];
  const CURRENT = [
    ["empty current", (base) => ({ ...base, current: "" })],
    ["number current", (base) => ({ ...base, current: 7 })],
    ["boolean current", (base) => ({ ...base, current: true })],
    ["513-byte current", (base) => ({ ...base, current: long(513) })],
  ];

  /** Every [method, case name, args, field] the checks cover. */
  function badCalls() {
    const calls = [];
    for (const method of METHODS) {
      for (const [name, args] of WHOLE_INPUT) calls.push([method, name, args, "input"]);
      for (const [name, make] of identCases("group")) calls.push([method, name, [make(BASE[method])], "group"]);
      if (method !== "serialInspect") {
        for (const [name, make] of INSTANCE_ID) calls.push([method, name, [make(BASE[method])], "instanceId"]);
      }
    }
    for (const [name, make] of identCases("revision")) {
      calls.push(["serialEnqueue", name, [make(BASE.serialEnqueue)], "revision"]);
    }
    for (const [name, make] of CURRENT) {
      calls.push(["serialEnqueue", name, [make(BASE.serialEnqueue)], "current"]);
      // Also when revision equals it (a string-compare before the check would pass).
      calls.push(["serialEnqueue", `${name}, revision equal`, [make({ ...BASE.serialEnqueue, revision: "7" })], "current"]);
    }
    // Contract §2a's fields: booleans, and a binding Baton has.
    const NEW_FIELDS = [
      ["string claim", { claim: "yes" }, "claim"],
      ["number claim", { claim: 1 }, "claim"],
      ["object claim", { claim: {} }, "claim"],
      ["string grant", { grant: "true" }, "grant"],
      ["number grant", { grant: 0 }, "grant"],
      ["array grant", { grant: [true] }, "grant"],
      ["workflow not in WORKFLOW_BINDINGS", { workflow: "NOPE", claim: true }, "workflow"],
      ["number workflow", { workflow: 5 }, "workflow"],
      ["empty workflow", { workflow: "", grant: true }, "workflow"],
    ];
    for (const [name, fields, field] of NEW_FIELDS) {
      calls.push(["serialEnqueue", name, [{ ...BASE.serialEnqueue, claim: true, grant: true, ...fields }], field]);
    }
    calls.push(["serialClaim", "instanceId never enqueued", [{ group: G, instanceId: "chk-never" }], "instanceId"]);
    calls.push(["serialClaim", "instanceId enqueued only in another group", [{ group: G, instanceId: "chk-elsewhere" }], "instanceId"]);
    return calls;
  }

  async function snapshot(db) {
    return {
      view: await inspect(h, G),
      count: (await db.prepare("SELECT COUNT(*) AS n FROM serial_queue").first()).n,
      rows: (await db.prepare("SELECT * FROM serial_queue ORDER BY seq").all()).results,
    };
  }

  test("every method rejects malformed input with BatonError naming the field, and writes nothing", async () => {
    const db = await h.mf.getD1Database("DB", "baton");
    // A group with a holder, a waiter and a finished (superseded) execution.
    await holdDirectly(h, G, "chk-H", "r1");
    await ok(h, "serialEnqueue", { group: G, instanceId: "chk-old", revision: "r1" });
    await ok(h, "serialEnqueue", { group: G, instanceId: "chk-W", revision: "r1" });
    await ok(h, "serialEnqueue", { group: "elsewhere", instanceId: "chk-elsewhere", revision: "r1" });
    const before = await snapshot(db);
    assert.equal(before.view.holder.instanceId, "chk-H");
    assert.deepEqual(waitingIds(before.view), ["chk-W"]);
    assert.equal(recentOf(before.view, "chk-old").outcome, "superseded");
    assert.equal(before.count, 4);

    const calls = badCalls();
    for (const [method, name, args, field] of calls) {
      const result = await h.serial(method, ...args);
      const label = `${method}, ${name}: ${JSON.stringify(result)}`;
      assert.ok("error" in result, `${label} should be rejected`);
      assert.ok(result.error.startsWith("BatonError:"), label);
      // The message names the offending field as its subject.
      assert.equal(result.error.split(" ")[1], field, label);
    }
    assert.ok(calls.length > 100, `${calls.length} bad calls`);

    assert.deepEqual(await snapshot(db), before);
  });

  test("the bounds themselves are accepted (512 bytes, 100 characters)", async () => {
    const db = await h.mf.getD1Database("DB", "baton");
    const before = await snapshot(db);
    // Read-only calls at the bounds: an inspect of a 512-byte group, a
    // heartbeat from a 100-character id that holds nothing.
    assert.deepEqual(await ok(h, "serialInspect", { group: "é".repeat(256) }), {
      holder: null,
      waiting: [],
      recent: [],
      paused: null,
      state: "idle",
      waits: { p50Ms: 0, p95Ms: 0, n: 0 },
    });
    assert.deepEqual(await ok(h, "serialHeartbeat", { group: G, instanceId: long(100) }), { holding: false });
    assert.deepEqual(await ok(h, "serialRelease", { group: G, instanceId: long(100) }), { next: null });
    assert.deepEqual(await snapshot(db), before);
  });
});

describe("serial queue: hand-off by grant, claim on enqueue, dead holders by status (contract §2a)", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  /** The step outputs of `id` that are Baton's own: enqueue, claim, turn waits, heartbeats, release. */
  async function batonSteps(id, group) {
    const outputs = await stepOutputs(h, id);
    return outputs.filter((o) => {
      const told = o && typeof o === "object" && "payload" in o ? o.payload : o;
      return (
        o &&
        typeof o === "object" &&
        (("status" in o && !("lease" in o)) || "next" in o || "holding" in o || told?.group === group)
      );
    });
  }

  const leaseOf = async (id) => (await stepOutputs(h, id)).find((o) => o && "lease" in o)?.lease;

  test("a release hands the group to a waiter registered with grant: its turn says holding, with the next fence, and it claims no more", async () => {
    const group = "grant-handoff";
    await h.create("gh-H", serial(group, "r1", { waitForFinish: true }));
    await untilHolder(h, group, "gh-H");
    await h.create("gh-W", serial(group, "r2"));
    await untilParked(h, "gh-W");
    const parked = (await stepOutputs(h, "gh-W")).find((o) => o?.status === "waiting");
    assert.deepEqual(parked.superseded, []);
    assert.equal(parked.holder, "gh-H");
    assert.match(parked.turn, /^[A-Za-z0-9_][A-Za-z0-9_-]*$/);
    assert.ok(parked.turn.length <= 100 && parked.turn !== "baton-turn", parked.turn);

    await h.sendEvent("gh-H", "finish", {});
    assert.deepEqual(await h.output("gh-W", 20_000), RAN);
    assert.deepEqual((await stepOutputs(h, "gh-H")).at(-1), { next: "gh-W" });
    const fenceH = (await leaseOf("gh-H")).fence;
    assert.equal(fenceH, 1, "the group's first grant");
    assert.deepEqual(await leaseOf("gh-W"), { fence: 2 });
    assert.ok(await toldByTurn(h, "gh-W", group, "holding"));
    const told = (await stepOutputs(h, "gh-W")).map((o) => (o && "payload" in o ? o.payload : o)).find((o) => o?.status === "holding" && o?.group === group);
    assert.deepEqual(told, { group, instanceId: "gh-W", status: "holding", fence: 2 });
    // Enqueue, the wait, release: no claim after the wait.
    const steps = await batonSteps("gh-W", group);
    assert.equal(steps.length, 3, JSON.stringify(steps));
    assert.deepEqual(await h.logOf(["gh-H", "gh-W"]), ["enter gh-H", "exit gh-H", "enter gh-W", "exit gh-W"]);
  });

  test("a newer arrival right after a hand-off waits behind the handed holder: it is never superseded", async () => {
    const group = "grant-newer";
    await h.create("gn-H", serial(group, "r1", { waitForFinish: true }));
    await untilHolder(h, group, "gn-H");
    await h.create("gn-W", serial(group, "r2", { waitForFinish: true }));
    await untilParked(h, "gn-W");
    await h.sendEvent("gn-H", "finish", {});
    await untilHolder(h, group, "gn-W");
    // Right after the hand-off, before gn-W has run a step of its body.
    await h.create("gn-N", serial(group, "r3"));
    await untilParked(h, "gn-N");
    const enqueued = (await stepOutputs(h, "gn-N")).find((o) => o?.status === "waiting");
    assert.deepEqual(enqueued.superseded, []);
    assert.equal(enqueued.holder, "gn-W");
    let view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "gn-W");
    assert.deepEqual(waitingIds(view), ["gn-N"]);
    assert.ok(!view.recent.some((r) => r.instanceId === "gn-W"));
    // The handed holder's heartbeat and claim answer holding.
    assert.deepEqual(await ok(h, "serialHeartbeat", { group, instanceId: "gn-W" }), { holding: true });
    assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: "gn-W" }), { status: "holding", fence: 2 });

    await h.sendEvent("gn-W", "finish", {});
    assert.deepEqual(await h.output("gn-W", 20_000), RAN);
    assert.deepEqual(await h.output("gn-N", 20_000), RAN);
    assert.deepEqual(await leaseOf("gn-N"), { fence: 3 });
    assert.deepEqual(await h.logOf(["gn-H", "gn-W", "gn-N"]), [
      "enter gn-H",
      "exit gn-H",
      "enter gn-W",
      "exit gn-W",
      "enter gn-N",
      "exit gn-N",
    ]);
    view = await inspect(h, group);
    assert.equal(recentOf(view, "gn-W").outcome, "released");
  });

  test("a holder terminated while holding loses the group at the waiter's next claim: found dead by status, not by its heartbeat", async () => {
    const group = "dead-holder";
    await h.create("dh-H", serial(group, "r1", { waitForFinish: true }));
    await untilHolder(h, group, "dh-H");
    // A short poll: the waiter's next claim comes soon after the holder dies.
    await h.create("dh-W", serial(group, "r2", { options: { pollInterval: 500 } }));
    await untilParked(h, "dh-W");
    await h.terminate("dh-H");
    await h.untilStatus("dh-H", "terminated", 20_000);
    // SERIAL_HEARTBEAT_EXPIRY_MS is the default 10 minutes and no heartbeat
    // is aged: only the status can free the group inside this wait bound.
    assert.deepEqual(await h.output("dh-W", 20_000), RAN);
    const view = await inspect(h, group);
    assert.equal(recentOf(view, "dh-H").outcome, "abandoned");
    assert.equal(recentOf(view, "dh-W").outcome, "released");
    assert.deepEqual(await leaseOf("dh-W"), { fence: 2 });
    assert.deepEqual(await h.logOf(["dh-H", "dh-W"]), ["enter dh-H", "enter dh-W", "exit dh-W"]);
  });

  test("claim on enqueue: holding with the fence on a free group, waiting with holder and turn behind a live one, and past a dead one", async () => {
    const group = "claim-enqueue";
    await h.create("ce-H", { mode: "park" });
    assert.deepEqual(await ok(h, "serialEnqueue", { group, instanceId: "ce-H", revision: "r1", claim: true }), {
      status: "holding",
      superseded: [],
      fence: 1,
    });
    const w = await ok(h, "serialEnqueue", { group, instanceId: "ce-W", revision: "r2", claim: true, grant: true });
    assert.equal(w.status, "waiting");
    assert.deepEqual(w.superseded, []);
    assert.equal(w.holder, "ce-H");
    assert.match(w.turn, /^[A-Za-z0-9_][A-Za-z0-9_-]*$/);
    // Without claim, the same reply as §2 (with the turn, for grant).
    const x = await ok(h, "serialEnqueue", { group, instanceId: "ce-X", revision: "r3", grant: true });
    assert.deepEqual(Object.keys(x).sort(), ["status", "superseded", "turn"]);
    assert.deepEqual(x.superseded, ["ce-W"]);
    assert.notEqual(x.turn, w.turn);
    // The holder is never touched; a made-up id is dead by status.
    await h.sendEvent("ce-H", "finish", {});
    await h.untilStatus("ce-H", "complete", 20_000);
    const y = await ok(h, "serialEnqueue", { group, instanceId: "ce-Y", revision: "r4", claim: true });
    assert.deepEqual(y, { status: "holding", superseded: ["ce-X"], fence: 2 });
    const view = await inspect(h, group);
    assert.equal(view.holder.instanceId, "ce-Y");
    assert.equal(recentOf(view, "ce-H").outcome, "abandoned");
    // A plain claim answers as §2 did: no fence without grant.
    assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: "ce-Y" }), { status: "holding" });
  });

  test("serialize costs two Baton steps uncontended (enqueue, release) and three contended (enqueue, the wait, release)", async () => {
    const group = "steps";
    await h.create("st-A", serial(group, "r1"));
    assert.deepEqual(await h.output("st-A", 20_000), RAN);
    const alone = await batonSteps("st-A", group);
    assert.equal(alone.length, 2, JSON.stringify(alone));
    assert.equal(alone[0].status, "holding");
    assert.deepEqual(alone[1], { next: null });

    await h.create("st-H", serial(group, "r2", { waitForFinish: true }));
    await untilHolder(h, group, "st-H");
    await h.create("st-W", serial(group, "r3"));
    await untilParked(h, "st-W");
    await h.sendEvent("st-H", "finish", {});
    assert.deepEqual(await h.output("st-W", 20_000), RAN);
    const contended = await batonSteps("st-W", group);
    assert.equal(contended.length, 3, JSON.stringify(contended));
    assert.equal(contended[0].status, "waiting");
    assert.deepEqual(contended[2], { next: null });
  });

  test("serialize's step names carry the group, as withKey's carry the key", async () => {
    const group = "named:steps";
    await h.create("sn-H", serial(group, "r1", { waitForFinish: true }));
    await untilHolder(h, group, "sn-H");
    await h.create("sn-W", serial(group, "r2", { countSteps: true }));
    await untilParked(h, "sn-W");
    await h.sendEvent("sn-H", "finish", {});
    const { ran, batonSteps: names } = await h.output("sn-W", 20_000);
    assert.equal(ran, true);
    assert.equal(names[0], `baton serial enqueue ${group}`);
    assert.ok(names.includes(`baton serial turn ${group} #1`), JSON.stringify(names));
    assert.equal(names.at(-1), `baton serial release ${group}`);
    for (const name of names) assert.match(name, /^baton serial [a-z ]+ named:steps( #\d+)?$/);
  });
});
