// Contract §1a, "found through any binding", against real Workflows: an
// instance of the second Workflow (OtherWorkflow, bound to Baton as OTHER)
// registers without naming `workflow`, so Baton remembers it under the
// default binding (WORKFLOW), which cannot find it. Through holder checks,
// alarms and claims it must never be taken for dead while it runs: no
// second instance is let in beside it until it ends, and one `warn`
// decision line names it and both bindings.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";

const DONE = { superseded: false, value: "done" };

/** The decision lines of §1a's warning for `id`, from the runtime's output. */
function foundElsewhere(h, id) {
  return h.runtimeLines.filter(
    (line) => line.includes('"decision":"found elsewhere"') && line.includes(`"instance":"${id}"`),
  );
}

/** The decision lines naming `id` with `decision`. */
function decisions(h, id, decision) {
  return h.runtimeLines.filter(
    (line) => line.includes(`"decision":"${decision}"`) && line.includes(`"instance":"${id}"`),
  );
}

describe("§1a: an instance registered without its workflow is found through the other binding", () => {
  let h;
  before(async () => {
    // Holder checks every 300 ms, and no grace: a "not found" holder would
    // lose its slot at the first check.
    h = await startBaton({ holderCheckMs: 300, vars: { ENQUEUE_GRACE_MS: "0" } });
  });
  after(() => h?.dispose());

  test("a Coordinator holder keeps its limit-1 key through holder checks and alarms", async () => {
    const key = "fe-key";
    // OtherWorkflow's instance, through OTHER, calls withKey without `workflow`.
    await h.create("fe-h", { key, waitForFinish: true }, "OTHER");
    await h.untilInspect(key, "fe-h holding", (v) => v.holder?.id === "fe-h");
    // A waiter that re-acquires every 2 s (each acquire checks the holder),
    // while the alarm checks the holder every 300 ms.
    await h.create("fe-w", { key, turnTimeout: "2 seconds" });
    await h.untilInspect(key, "fe-w waiting", (v) => v.waiting.some((w) => w.id === "fe-w"));
    // Found through OTHER, it is that Workflow's instance from then on.
    await h.untilInspect(key, "fe-h remembered under OTHER", (v) => v.holders[0]?.workflow === "OTHER");
    // Let several checks pass (the alarm's check time moves on), then look.
    // The alarm's holder checks of fe-h, each a decision line: three more.
    const before = decisions(h, "fe-h", "checked").length;
    await h.until("three more holder checks", async () =>
      decisions(h, "fe-h", "checked").length >= before + 3 ? true : null,
    );
    await h.until("an acquire by fe-w after the rebinding", async () =>
      decisions(h, "fe-w", "pending").length >= 2 ? true : null,
    );
    const view = await h.inspect(key);
    assert.deepEqual(view.holders.map((x) => [x.id, x.workflow]), [["fe-h", "OTHER"]]);
    assert.deepEqual(view.waiting.map((w) => w.id), ["fe-w"]);
    assert.deepEqual(await h.logOf(["fe-h", "fe-w"]), ["enter fe-h"]);

    await h.sendEvent("fe-h", "finish", {}, "OTHER");
    assert.deepEqual(await h.output("fe-w", 30_000), DONE);
    assert.deepEqual(await h.logOf(["fe-h", "fe-w"]), ["enter fe-h", "exit fe-h", "enter fe-w", "exit fe-w"]);
    const warned = foundElsewhere(h, "fe-h");
    assert.equal(warned.length, 1, warned.join("\n"));
    assert.match(warned[0], /WORKFLOW/);
    assert.match(warned[0], /OTHER/);
  });

  test("a serial holder keeps its group through the waiters' claims", async () => {
    const group = "fe-group";
    const options = { pollInterval: 1000 };
    await h.create("fs-h", { mode: "serial", group, revision: "r1", waitForFinish: true, options }, "OTHER");
    await h.until("fs-h holding", async () => {
      const view = await h.serial("serialInspect", { group });
      return view.value?.holder?.instanceId === "fs-h" ? true : null;
    });
    await h.create("fs-w", { mode: "serial", group, revision: "r1", options });
    // Its claims check the holder: found through OTHER, never abandoned.
    await h.until("fs-h found through OTHER", async () => (foundElsewhere(h, "fs-h").length ? true : null));
    await h.until("more claims by fs-w after it", async () =>
      decisions(h, "fs-w", "waiting").length >= 3 ? true : null,
    );
    const view = (await h.serial("serialInspect", { group })).value;
    assert.equal(view.holder.instanceId, "fs-h");
    assert.deepEqual(await h.logOf(["fs-h", "fs-w"]), ["enter fs-h"]);
    assert.equal(decisions(h, "fs-h", "abandoned").length, 0);

    await h.sendEvent("fs-h", "finish", {}, "OTHER");
    assert.equal((await h.output("fs-w", 60_000)).ran, true);
    assert.deepEqual(await h.logOf(["fs-h", "fs-w"]), ["enter fs-h", "exit fs-h", "enter fs-w", "exit fs-w"]);
    assert.equal(foundElsewhere(h, "fs-h").length, 1);
  });

  test("a startOnce claimant of the other Workflow is not replaced past its grace", async () => {
    const key = "fe-run";
    const params = { mode: "run", key, waitForFinish: true, result: "first" };
    const [first] = await h.call("/start-once", { key, params, workflow: "OTHER" });
    assert.equal(first.started, true);
    await h.untilStatus(first.instanceId, "running", 30_000, "OTHER");
    // No grace (ENQUEUE_GRACE_MS 0): every later claim checks the claimant.
    for (let i = 0; i < 3; i++) {
      const [again] = await h.call("/start-once", { key, params: { ...params, result: "second" } });
      assert.deepEqual(again, { instanceId: first.instanceId, started: false });
    }
    assert.equal(foundElsewhere(h, first.instanceId).length, 1);
    await h.sendEvent(first.instanceId, "finish", {}, "OTHER");
    assert.equal(await h.output(first.instanceId, 30_000, "OTHER"), "first");
  });
});
