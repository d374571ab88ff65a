// Contract §3a against real Workflows: flow control declared on the class
// with `coordinated()` (tests/miniflare/declared-worker.mjs), in a Worker
// whose Workflows are declared in `exports` only and whose Workflow code
// makes no Baton call and names no binding. Two instances on one key run
// in turn with rising fences; `supersede: "waiting"` and `"cancel"` behave
// as §1 and §1d; `onBusy: "skip"` and `also` work; bad options fail the
// instance at its first step, naming the option; an instance of the second
// Workflow is found through its binding (§1a).
// No assertion is about timing; every wait polls for a state.
//
// Not behind the strict binding (RELIABILITY.md): Baton reaches these
// Workflows through the Worker's own `ctx.exports`, which the fault
// injector (a wrapper of `env`'s bindings) cannot stand in front of.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { Harness, bind, collectLogs, embeddingWorker } from "./harness.mjs";

let mf;
let h;
const runtimeLines = [];

before(async () => {
  mf = new Miniflare({
    handleStructuredLogs: collectLogs(runtimeLines, 2000),
    workers: [
      embeddingWorker({
        name: "declared",
        entry: "tests/miniflare/declared-worker.mjs",
        jsModules: ["coordinated.mjs", "with-key.mjs", "rate-limit.mjs", "steps.mjs", "options.mjs"],
        env: {
          RECORDER: bind.durableObject("declared", "Recorder"),
          ...bind.vars({ WORKFLOW_BINDING: "Deploy", WORKFLOW_BINDINGS: "Deploy,Report", HOLDER_CHECK_MS: "300" }),
        },
        classes: ["Recorder"],
        workflows: {
          Deploy: { type: "workflow", name: "deploy" },
          Report: { type: "workflow", name: "report" },
        },
      }),
    ],
  });
  await mf.ready;
  h = new Harness(mf);
});

after(async () => {
  await mf?.dispose();
});

const create = (id, params, workflow) => h.call("/create", { id, params, workflow });
const finish = (id, workflow) => h.call("/event", { id, type: "finish", workflow });
const inspect = (key) => h.call(`/inspect?key=${encodeURIComponent(key)}`);
const status = (id, workflow = "Deploy") =>
  h.call(`/status?id=${encodeURIComponent(id)}&workflow=${workflow}`);

async function untilView(key, what, predicate) {
  try {
    return await h.until(`${key}: ${what}`, async () => {
      const view = await inspect(key);
      return predicate(view) ? view : null;
    });
  } catch (error) {
    throw new Error(`${error.message}\n${runtimeLines.slice(-40).join("\n")}`);
  }
}

/** The instance's final status details, once it ended. */
function ended(id, workflow) {
  return h.until(`${id} to end`, async () => {
    const s = await status(id, workflow);
    return ["complete", "errored", "terminated"].includes(s.status) ? s : null;
  });
}

async function output(id, workflow) {
  const details = await ended(id, workflow);
  assert.equal(details.status, "complete", `${id}: ${JSON.stringify(details)}`);
  return details.output;
}

const holders = (view) => view.holders.map((x) => x.id);
const waiting = (view) => view.waiting.map((x) => x.id);
const logOf = async (ids) => (await h.call("/log")).filter((line) => ids.some((id) => line.endsWith(` ${id}`)));

describe("coordinated(): flow control declared on the Workflow class", () => {
  test("two instances on one key run in turn, with rising fences", async () => {
    const key = "decl-turn";
    await create("turn-1", { key, waitForFinish: true });
    await untilView(key, "turn-1 holds", (v) => holders(v).includes("turn-1"));
    await create("turn-2", { key });
    await untilView(key, "turn-2 waits", (v) => waiting(v).includes("turn-2"));
    await finish("turn-1");
    const [first, second] = [await output("turn-1"), await output("turn-2")];
    assert.deepEqual([first.ran, second.ran], ["turn-1", "turn-2"]);
    assert.ok(second.fence > first.fence, `fences ${first.fence}, ${second.fence}`);
    assert.deepEqual(second.fences, { [key]: second.fence });
    assert.deepEqual(await logOf(["turn-1", "turn-2"]), ["enter turn-1", "exit turn-1", "enter turn-2", "exit turn-2"]);
  });

  test('supersede: "waiting" drops the waiters, never the holder', async () => {
    const key = "decl-sup";
    await create("sup-h", { key, waitForFinish: true });
    await untilView(key, "sup-h holds", (v) => holders(v).includes("sup-h"));
    await create("sup-1", { key, supersede: "waiting" });
    await untilView(key, "sup-1 waits", (v) => waiting(v).includes("sup-1"));
    await create("sup-2", { key, supersede: "waiting" });
    await untilView(key, "sup-2 alone waits", (v) => waiting(v).join() === "sup-2");
    // Terminated by Baton, or (had it been too late) completed as superseded.
    const dropped = await ended("sup-1");
    if (dropped.status === "complete") assert.deepEqual(dropped.output, { superseded: true });
    else assert.equal(dropped.status, "terminated");
    assert.equal((await status("sup-h")).status, "running");
    await finish("sup-h");
    assert.equal((await output("sup-2")).ran, "sup-2");
    assert.deepEqual(await logOf(["sup-h", "sup-1", "sup-2"]), ["enter sup-h", "exit sup-h", "enter sup-2", "exit sup-2"]);
  });

  test('supersede: "cancel" cancels the holder; the newer one runs with the next fence', async () => {
    const key = "decl-cancel";
    await create("can-h", { key, waitForFinish: true, supersede: "cancel" });
    const held = await untilView(key, "can-h holds", (v) => holders(v).includes("can-h"));
    await create("can-n", { key, supersede: "cancel" });
    assert.equal((await ended("can-h")).status, "terminated");
    const newer = await output("can-n");
    assert.ok(newer.fence > held.holders[0].fence);
    assert.deepEqual(await logOf(["can-h", "can-n"]), ["enter can-h", "enter can-n", "exit can-n"]);
  });

  test('onBusy: "skip" completes as busy without running; also holds every key', async () => {
    const key = "decl-skip";
    await create("skip-h", { key, waitForFinish: true });
    await untilView(key, "skip-h holds", (v) => holders(v).includes("skip-h"));
    await create("skip-s", { key, onBusy: "skip" });
    assert.deepEqual(await output("skip-s"), { busy: true });
    await finish("skip-h");
    await output("skip-h");
    await create("also-1", { key: "decl-also", also: [{ key: "~decl-pool", limit: 2 }] });
    const { fences } = await output("also-1");
    assert.deepEqual(Object.keys(fences).sort(), ["decl-also", "~decl-pool"]);
    assert.deepEqual(await logOf(["skip-s"]), []);
    for (const k of ["decl-also", "~decl-pool"]) {
      const view = await inspect(k);
      assert.deepEqual([view.holders, view.waiting], [[], []]);
    }
  });

  test("maxWaiting: a run past the key's cap completes as busy without running", async () => {
    const key = "decl-cap";
    await create("cap-h", { key, waitForFinish: true });
    await untilView(key, "cap-h holds", (v) => holders(v).includes("cap-h"));
    await create("cap-1", { key, maxWaiting: 1 });
    await untilView(key, "cap-1 waits", (v) => waiting(v).includes("cap-1"));
    await create("cap-2", { key, maxWaiting: 1 });
    assert.deepEqual(await output("cap-2"), { busy: true });
    const view = await inspect(key);
    assert.deepEqual([waiting(view), view.maxWaiting], [["cap-1"], 1]);
    await finish("cap-h");
    assert.equal((await output("cap-1")).ran, "cap-1");
    assert.deepEqual(await logOf(["cap-2"]), []);
  });

  test("bad options fail the instance at its first step, naming the option", async () => {
    const cases = [
      ["bad-limit", { key: "decl-bad", limit: 0 }, /BatonError: limit must be an integer from 1 to 1000/],
      ["bad-supersede", { key: "decl-bad", supersede: "sometimes" }, /BatonError: supersede must be false/],
      ["bad-key", { key: "" }, /BatonError: key must be a non-empty string/],
      ["bad-also", { key: "decl-bad", also: [{ key: "decl-bad" }] }, /BatonError: also\[0\]\.key must differ/],
      ["bad-busy", { key: "decl-bad", onBusy: "never" }, /BatonError: onBusy must be/],
      ["bad-cap", { key: "decl-bad", maxWaiting: 0 }, /BatonError: maxWaiting must be an integer from 1 to 20000/],
    ];
    for (const [id, params, message] of cases) {
      await create(id, params);
      const details = await ended(id);
      assert.equal(details.status, "errored", `${id}: ${JSON.stringify(details)}`);
      assert.match(String(details.error?.message ?? details.error), message);
    }
    const view = await inspect("decl-bad");
    assert.deepEqual([view.holders, view.waiting, view.counts.grants], [[], [], 0]);
  });

  test("an instance of the second Workflow is found through its binding, and warned about once", async () => {
    const key = "decl-report";
    await create("rep-h", { key, waitForFinish: true }, "Report");
    await untilView(key, "rep-h holds", (v) => holders(v).includes("rep-h"));
    await create("rep-w", { key });
    await untilView(key, "rep-h remembered as Report's", (v) => v.holders[0]?.workflow === "Report");
    // The alarm's holder checks of rep-h, each a decision line: three more.
    const checks = () => runtimeLines.filter((l) => l.includes('"decision":"checked"') && l.includes('"instance":"rep-h"')).length;
    const before = checks();
    await h.until("three more holder checks", async () => (checks() >= before + 3 ? true : null));
    assert.deepEqual(holders(await inspect(key)), ["rep-h"]);
    await finish("rep-h", "Report");
    assert.equal((await output("rep-w")).ran, "rep-w");
    const warned = runtimeLines.filter((l) => l.includes('"decision":"found elsewhere"') && l.includes('"instance":"rep-h"'));
    assert.equal(warned.length, 1, warned.join("\n"));
  });
});
