// Contract §1a against real Workflow instances: two Workflow classes on one
// key (TestWorkflow through WORKFLOW, OtherWorkflow through OTHER), a key
// with `limit: 3`, instances created after their enqueue, and bad options.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { settled, startBaton } from "./harness.mjs";

const DONE = { superseded: false, value: "done" };

const holderIds = (view) => view.holders.map((h) => h.id);
const waitingIds = (view) => view.waiting.map((w) => w.id);

function untilQueued(h, key, id) {
  return h.untilInspect(
    key,
    `${id} holding or waiting`,
    (view) => view.holders.some((x) => x.id === id) || view.waiting.some((w) => w.id === id),
  );
}

/** The most bodies inside at once, from the Recorder's enter/exit log. */
function mostInside(log) {
  let inside = 0;
  let most = 0;
  for (const line of log) {
    inside += line.startsWith("enter ") ? 1 : -1;
    most = Math.max(most, inside);
  }
  return most;
}

describe("§1a with real Workflows (holder-check alarm effectively off)", () => {
  let h;
  before(async () => {
    // An hour between holder checks: everything here happens through
    // acquire, release and the turn event.
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("two Workflow classes share a key: each is woken through its own binding", async () => {
    const key = "two";
    await h.create("two-a", { key, waitForFinish: true });
    await h.untilInspect(key, "two-a holding", (v) => v.holder?.id === "two-a");
    // OtherWorkflow instances wait an hour between re-checks: only a turn
    // event sent through the OTHER binding wakes them in time.
    await h.create("two-b", { key, workflow: "OTHER", turnTimeout: "1 hour" }, "OTHER");
    await untilQueued(h, key, "two-b");
    await h.create("two-c", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "two-c");
    const view = await h.inspect(key);
    assert.deepEqual(view.holders.map((x) => [x.id, x.workflow]), [["two-a", "WORKFLOW"]]);
    assert.equal(view.limit, 1);
    assert.deepEqual(waitingIds(view), ["two-b", "two-c"]);

    await h.sendEvent("two-a", "finish", {});
    assert.deepEqual(await h.output("two-b", 30_000, "OTHER"), DONE);
    assert.deepEqual(await h.output("two-c", 30_000), DONE);
    assert.deepEqual(await h.logOf(["two-a", "two-b", "two-c"]), [
      "enter two-a",
      "exit two-a",
      "enter two-b",
      "exit two-b",
      "enter two-c",
      "exit two-c",
    ]);
  });

  test("a terminated holder of the other Workflow is found dead through its binding", async () => {
    const key = "two-dead";
    await h.create("td-h", { key, waitForFinish: true, workflow: "OTHER" }, "OTHER");
    await h.untilInspect(key, "td-h holding", (v) => v.holder?.id === "td-h");
    assert.equal((await h.inspect(key)).holders[0].workflow, "OTHER");
    await h.create("td-w", { key, turnTimeout: "2 seconds" });
    await untilQueued(h, key, "td-w");
    await h.terminate("td-h", "OTHER");
    assert.deepEqual(await h.output("td-w", 30_000), DONE);
    assert.deepEqual(await h.logOf(["td-h", "td-w"]), ["enter td-h", "enter td-w", "exit td-w"]);
  });

  test("a superseded waiter of the other Workflow is terminated through its binding", async () => {
    const key = "two-sup";
    await h.create("ts-h", { key, waitForFinish: true });
    await h.untilInspect(key, "ts-h holding", (v) => v.holder?.id === "ts-h");
    await h.create("ts-w", { key, workflow: "OTHER", turnTimeout: "1 hour" }, "OTHER");
    await untilQueued(h, key, "ts-w");
    assert.deepEqual(await h.ok(key, "enqueue", key, true, "ts-new", null, { workflow: "OTHER" }), {
      terminated: ["ts-w"],
    });
    await h.untilStatus("ts-w", "terminated", 30_000, "OTHER");
    assert.equal(await h.status("ts-h"), "running");
    await h.sendEvent("ts-h", "finish", {});
    await h.output("ts-h");
  });

  test("an enqueued instance created late keeps its place and its key", async () => {
    const key = "late";
    await h.create("late-h", { key, waitForFinish: true });
    await h.untilInspect(key, "late-h holding", (v) => v.holder?.id === "late-h");
    // The documented flow: enqueue, then create. The create is delayed
    // until the key has reached the id.
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "late-e"), { terminated: [] });
    await h.create("late-w", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "late-w");
    assert.deepEqual(waitingIds(await h.inspect(key)), ["late-e", "late-w"]);

    await h.sendEvent("late-h", "finish", {});
    await h.output("late-h");
    // The key reached late-e, which the binding cannot find yet: within the
    // grace it keeps the key (no one is woken past it).
    const view = await h.inspect(key);
    assert.deepEqual(holderIds(view), ["late-e"]);
    assert.deepEqual(waitingIds(view), ["late-w"]);

    await h.create("late-e", { key });
    assert.deepEqual(await h.output("late-e", 30_000), DONE);
    assert.deepEqual(await h.output("late-w", 30_000), DONE);
    assert.deepEqual(await h.logOf(["late-h", "late-e", "late-w"]), [
      "enter late-h",
      "exit late-h",
      "enter late-e",
      "exit late-e",
      "enter late-w",
      "exit late-w",
    ]);
  });

  test("limit: 3 lets three hold at once, never more, and hands each slot on", async () => {
    const key = "three";
    const all = ["t-0", "t-1", "t-2", "t-3", "t-4"];
    for (const id of all) {
      await h.create(id, { key, waitForFinish: true, limit: 3, turnTimeout: "1 hour" });
      await untilQueued(h, key, id);
    }
    const view = await h.untilInspect(key, "three holding", (v) =>
      v.holders.length === 3 && v.holders.every((x) => x.id !== "t-3"),
    );
    assert.equal(view.limit, 3);
    assert.deepEqual(holderIds(view), ["t-0", "t-1", "t-2"]);
    assert.deepEqual(waitingIds(view), ["t-3", "t-4"]);
    assert.equal(view.holder.id, "t-0", "holder stays the earliest holder");
    await h.until("three bodies inside", async () => (await h.logOf(all)).length === 3);

    // Any holder's release passes its slot to the earliest waiter.
    await h.sendEvent("t-1", "finish", {});
    await h.untilInspect(key, "t-3 holding", (v) => holderIds(v).includes("t-3"));
    await h.until("t-3 inside", async () => (await h.logOf(["t-3"])).length === 1);
    for (const id of ["t-0", "t-2", "t-3", "t-4"]) await h.sendEvent(id, "finish", {});
    for (const id of all) assert.deepEqual(await h.output(id, 30_000), DONE, id);
    const log = await h.logOf(all);
    assert.equal(mostInside(log), 3, JSON.stringify(log));
    assert.deepEqual(
      log.filter((l) => l.startsWith("enter ")),
      all.map((id) => `enter ${id}`),
    );
  });

  test("bad options are refused naming the field, and change nothing", async () => {
    const key = "bad-options";
    await h.create("bo-h", { key, waitForFinish: true });
    await h.untilInspect(key, "bo-h holding", (v) => v.holder?.id === "bo-h");
    await h.ok(key, "enqueue", key, false, "bo-w");
    const before = settled(await h.inspect(key));
    const cases = [
      ["workflow", { workflow: "NOPE" }],
      ["workflow", { workflow: "not a binding" }],
      ["limit", { limit: 0 }],
      ["limit", { limit: 1001 }],
      ["limit", { limit: 1.5 }],
      ["limit", { limit: "3" }],
      ["fast", { fast: true }],
      ["extra", { limit: 2, extra: 1 }],
      ["options", "limit=2"],
      ["options", 5],
      ["options", [{ limit: 2 }]],
      ["options", true],
    ];
    for (const [field, options] of cases) {
      const calls = [
        ["acquire", key, "bo-new", options],
        ["acquire", key, "bo-w", options],
        ["enqueue", key, false, "bo-new", null, options],
        ["enqueue", key, true, "bo-new", null, options],
      ];
      for (const [method, ...args] of calls) {
        const what = `${method} with options ${JSON.stringify(options)}`;
        const result = await h.rpc(key, method, ...args);
        assert.ok("error" in result, `${what} should fail: ${JSON.stringify(result)}`);
        assert.match(result.error, /^BatonError:/, what);
        assert.ok(result.error.includes(field), `${what}: ${result.error} should name ${field}`);
      }
      for (const [method, body] of [
        ["coordinatorAcquire", { key, instanceId: "bo-new", options }],
        ["coordinatorEnqueue", { key, supersedes: true, instanceId: "bo-new", options }],
      ]) {
        const result = await h.serial(method, body);
        assert.ok("error" in result && result.error.includes(field), `${method}: ${JSON.stringify(result)}`);
      }
    }
    assert.deepEqual(settled(await h.inspect(key)), before);
    assert.equal(await h.status("bo-h"), "running");
    await h.sendEvent("bo-h", "finish", {});
    await h.output("bo-h");
  });
});

describe("§1a: the enqueue grace runs out (grace 1 s, holder check every 300 ms)", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 300, vars: { ENQUEUE_GRACE_MS: "1000" } });
  });
  after(() => h?.dispose());

  test("an enqueued instance never created holds the key for the grace, then loses it", async () => {
    const key = "gone";
    await h.create("gone-h", { key, waitForFinish: true });
    await h.untilInspect(key, "gone-h holding", (v) => v.holder?.id === "gone-h");
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "gone-e"), { terminated: [] });
    // Its own re-check is an hour away: only the alarm can hand it the key.
    await h.create("gone-w", { key, turnTimeout: "1 hour" });
    await untilQueued(h, key, "gone-w");
    await h.sendEvent("gone-h", "finish", {});
    // The creator of gone-e crashed: past the grace, the alarm finds it
    // dead and hands the key on.
    assert.deepEqual(await h.output("gone-w", 30_000), DONE);
    const view = await h.inspect(key);
    assert.deepEqual(view.holders, []);
    assert.deepEqual(view.waiting, []);
    // Created at last, it joins the back of the queue and still runs.
    await h.create("gone-e", { key });
    assert.deepEqual(await h.output("gone-e", 30_000), DONE);
    assert.deepEqual(await h.logOf(["gone-h", "gone-e", "gone-w"]), [
      "enter gone-h",
      "exit gone-h",
      "enter gone-w",
      "exit gone-w",
      "enter gone-e",
      "exit gone-e",
    ]);
  });
});
