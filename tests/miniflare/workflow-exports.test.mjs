// A Workflow declared in wrangler's `exports`, with no `[[workflows]]`
// binding (wrangler >= 4.142): an embedding Worker names its class in
// WORKFLOW_BINDING, and Baton reaches it through the Worker's own exports
// (`ctx.exports`) to hand the key on with a turn event and to check a
// holder's status. Real Workflow instances, created through `ctx.exports`
// as well (tests/miniflare/exports-worker.mjs).
//
// Not behind the strict binding (RELIABILITY.md): Baton reaches this
// Workflow through the Worker's own `ctx.exports`, which the fault injector
// (a wrapper of `env`'s bindings) cannot stand in front of.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Miniflare } from "miniflare";
import { Harness, bind, collectLogs, embeddingWorker } from "./harness.mjs";

let mf;
let harness;
const runtimeLines = [];

before(async () => {
  mf = new Miniflare({
    handleStructuredLogs: collectLogs(runtimeLines, 200),
    workers: [
      embeddingWorker({
        name: "embedded",
        entry: "tests/miniflare/exports-worker.mjs",
        jsModules: ["with-key.mjs", "steps.mjs", "options.mjs"],
        // The class name, as `ctx.exports` offers the Workflow.
        env: bind.vars({ WORKFLOW_BINDING: "ExportedWorkflow", HOLDER_CHECK_MS: "200" }),
        workflows: { ExportedWorkflow: { type: "workflow", name: "exported" } },
      }),
    ],
  });
  await mf.ready;
  harness = new Harness(mf);
});

after(async () => {
  await mf?.dispose();
});

/** The view of `key` once `predicate` holds for it (the runtime's last lines if it never does). */
async function untilView(key, what, predicate) {
  try {
    return await harness.until(`${key}: ${what}`, async () => {
      const view = await harness.call(`/inspect?key=${encodeURIComponent(key)}`);
      return predicate(view) ? view : null;
    });
  } catch (error) {
    throw new Error(`${error.message}\n${runtimeLines.join("\n")}`);
  }
}

async function output(id) {
  const details = await harness.until(`${id} to end`, async () => {
    const s = await harness.call(`/status?id=${id}`);
    return ["complete", "errored", "terminated"].includes(s.status) ? s : null;
  });
  assert.equal(details.status, "complete", `${id}: ${JSON.stringify(details)}`);
  return details.output;
}

const holders = (view) => view.holders.map((h) => h.id);
const waiting = (view) => view.waiting.map((w) => w.id);

test("the Worker has no Workflow binding: its Workflow is only in ctx.exports", async () => {
  const { env, exports } = await harness.call("/bindings");
  assert.ok(!env.includes("ExportedWorkflow") && !env.includes("WORKFLOW"), `env: ${env}`);
  assert.ok(exports.includes("ExportedWorkflow"), `ctx.exports: ${exports}`);
});

test("a release hands the key on with a turn event sent through the exported Workflow", async () => {
  const key = "exports:hand-off";
  await harness.call("/create", { id: "handoff-1", key });
  await untilView(key, "handoff-1 holds", (v) => holders(v).includes("handoff-1"));
  await harness.call("/create", { id: "handoff-2", key });
  await untilView(key, "handoff-2 waits", (v) => waiting(v).includes("handoff-2"));
  await harness.call("/event", { id: "handoff-1", type: "finish" });
  await untilView(key, "handoff-2 holds", (v) => holders(v).includes("handoff-2"));
  await harness.call("/event", { id: "handoff-2", type: "finish" });
  // The release made handoff-2 the holder in Baton's records; the instance
  // itself waits for its turn event for an hour, so it ends in this test's
  // time only if Baton sent that event through ctx.exports.
  const [first, second] = [await output("handoff-1"), await output("handoff-2")];
  assert.ok(second.fence > first.fence, `fences: ${first.fence}, ${second.fence}`);
});

test("a holder that ended is found dead by its status through the exported Workflow", async () => {
  const key = "exports:dead-holder";
  await harness.call("/create", { id: "dead-1", key });
  await untilView(key, "dead-1 holds", (v) => holders(v).includes("dead-1"));
  await harness.call("/terminate", { id: "dead-1" });
  await harness.call("/create", { id: "dead-2", key });
  // dead-1 never releases: dead-2 gets the key only once Baton has asked
  // dead-1's status through ctx.exports and found it terminated.
  await untilView(key, "dead-2 holds", (v) => holders(v).includes("dead-2"));
  await harness.call("/event", { id: "dead-2", type: "finish" });
  assert.ok(Number.isSafeInteger((await output("dead-2")).fence));
});
