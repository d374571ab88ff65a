// Batching a burst into one run (contract §4a) through real Workflows: the
// Debouncer creates EchoWorkflow instances (which return their params), and
// each test reads back the params a run was created with. No test asserts a
// timing: bursts are held together by delays far longer than the test, and
// ended by maxItems, maxBytes or flush.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startBaton } from "./harness.mjs";
import { exists, freshKeys, ok, startedParams } from "./debounce-helpers.mjs";

const TOKEN = "debounce-batch-token";
const VARS = { WORKFLOW_BINDING: "ECHO", WORKFLOW_BINDINGS: "ECHO,WORKFLOW", BATON_TOKEN: TOKEN };
/** Longer than any test: only maxItems, maxBytes or flush end these bursts. */
const LONG = 600_000;

let h;
before(async () => {
  h = await startBaton({ vars: VARS });
});
after(() => h?.dispose());

const freshKey = freshKeys();

test("a burst starts one instance whose params hold every call's params, in order", async () => {
  const key = freshKey("batch");
  const helper = async (fn, ...args) => {
    const result = await h.call("/debounce-helper", { fn, args: [key, ...args] });
    if ("error" in result) throw new Error(`${fn}: ${result.error}`);
    return result.value;
  };
  const replies = [];
  for (let n = 1; n <= 6; n++) {
    // The third call sends no params: it adds nothing, and extends the burst.
    const params = n === 3 ? undefined : { n, note: `call ${n}` };
    // Half through the npm helper, half through the stub: one object.
    const options = { delayMs: LONG, batch: {}, ...(params ? { params } : {}) };
    replies.push(n % 2 ? await helper("debounce", options) : await ok(h, key, "debounce", key, options));
  }
  const id = replies[0].instanceId;
  for (const reply of replies) {
    assert.equal(reply.outcome, "scheduled");
    assert.equal(reply.instanceId, id);
  }
  const pending = (await ok(h, key, "inspect", key)).pending;
  assert.equal(pending.instanceId, id);
  assert.equal(pending.calls, 6);
  assert.equal(pending.items, 5);
  assert.deepEqual(await ok(h, key, "flush", key), { started: id });
  assert.deepEqual(await startedParams(h, id), {
    batch: [1, 2, 4, 5, 6].map((n) => ({ n, note: `call ${n}` })),
  });
  // A burst without batch has no `items` and takes the latest params, as before.
  const plain = await ok(h, key, "debounce", key, { delayMs: LONG, params: { n: 7 } });
  const view = await ok(h, key, "inspect", key);
  assert.equal(view.pending.instanceId, plain.instanceId);
  assert.equal("items" in view.pending, false);
  await ok(h, key, "cancel", key);
});

test("the call that brings the batch to maxItems starts it at once", async () => {
  const key = freshKey("max-items");
  const options = (n) => ({ delayMs: LONG, params: { n }, batch: { maxItems: 3 } });
  const first = await ok(h, key, "debounce", key, options(1));
  const second = await ok(h, key, "debounce", key, options(2));
  assert.equal(second.outcome, "scheduled");
  assert.equal(second.instanceId, first.instanceId);
  const third = await ok(h, key, "debounce", key, options(3));
  assert.deepEqual(third, { outcome: "started", instanceId: first.instanceId });
  // "started": the instance exists when the call returns.
  assert.ok(await exists(h, first.instanceId));
  assert.deepEqual(await startedParams(h, first.instanceId), { batch: [{ n: 1 }, { n: 2 }, { n: 3 }] });
  // The burst ended with it: the next call begins another, under a new id.
  const fourth = await ok(h, key, "debounce", key, options(4));
  assert.equal(fourth.outcome, "scheduled");
  assert.notEqual(fourth.instanceId, first.instanceId);
  assert.equal((await ok(h, key, "inspect", key)).pending.items, 1);
  // The decision log says why it started (counts only, no params).
  const line = await h.until("the batch's decision line", async () =>
    h.runtimeLines.find((l) => l.includes(`"instance":"${first.instanceId}"`) && l.includes("maxItems")),
  );
  const logged = JSON.parse(line.slice(line.indexOf("{")));
  assert.equal(logged.decision, "started");
  assert.equal(logged.key, key);
  assert.equal(logged.reason, "batch of 3 params reached maxItems 3");
  await ok(h, key, "cancel", key);
});

test("maxBytes splits the burst into two runs, nothing lost or doubled", async () => {
  const key = freshKey("max-bytes");
  const params = (n) => ({ n, pad: "x".repeat(40) });
  // Exactly three calls' params fit: the batch's JSON as the instance gets it.
  const maxBytes = JSON.stringify({ batch: [params(1), params(2), params(3)] }).length;
  const call = (n) => ok(h, key, "debounce", key, { delayMs: LONG, params: params(n), batch: { maxBytes } });
  const firsts = [await call(1), await call(2), await call(3)];
  for (const reply of firsts) {
    assert.equal(reply.outcome, "scheduled");
    assert.equal(reply.instanceId, firsts[0].instanceId);
  }
  assert.ok(!(await exists(h, firsts[0].instanceId)), "a batch that fits exactly waits for its burst");
  // The fourth would take it past maxBytes: the batch starts without it,
  // and it begins the next burst under a new id.
  const fourth = await call(4);
  assert.equal(fourth.outcome, "scheduled");
  assert.notEqual(fourth.instanceId, firsts[0].instanceId);
  assert.equal(typeof fourth.fireAt, "number");
  assert.ok(await exists(h, firsts[0].instanceId), "started at once");
  const fifth = await call(5);
  assert.equal(fifth.instanceId, fourth.instanceId);
  assert.deepEqual(await ok(h, key, "flush", key), { started: fourth.instanceId });
  const a = await startedParams(h, firsts[0].instanceId);
  const b = await startedParams(h, fourth.instanceId);
  assert.deepEqual(a, { batch: [params(1), params(2), params(3)] });
  assert.equal(JSON.stringify(a).length, maxBytes);
  assert.deepEqual(b, { batch: [params(4), params(5)] });
  assert.deepEqual([...a.batch, ...b.batch].map((p) => p.n), [1, 2, 3, 4, 5]);
  const view = await h.until("both starts to be confirmed", async () => {
    const v = await ok(h, key, "inspect", key);
    return v.started.length === 2 ? v : null;
  });
  assert.deepEqual(view.started.map((s) => s.instanceId).sort(), [firsts[0].instanceId, fourth.instanceId].sort());
});

test("a restart in the middle of a batch loses nothing", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "baton-debounce-batch-"));
  try {
    const key = freshKey("restart");
    const options = (n) => ({ delayMs: LONG, params: { n }, batch: { maxItems: 10 } });
    const first = await startBaton({ vars: VARS, persistRoot: dir });
    let id;
    try {
      id = (await ok(first, key, "debounce", key, options(1))).instanceId;
      await ok(first, key, "debounce", key, options(2));
    } finally {
      await first.dispose();
    }
    const second = await startBaton({ vars: VARS, persistRoot: dir });
    try {
      const pending = (await ok(second, key, "inspect", key)).pending;
      assert.equal(pending.instanceId, id);
      assert.equal(pending.items, 2);
      for (const n of [3, 4]) {
        assert.equal((await ok(second, key, "debounce", key, options(n))).instanceId, id);
      }
      assert.deepEqual(await ok(second, key, "flush", key), { started: id });
      assert.deepEqual(await startedParams(second, id), { batch: [1, 2, 3, 4].map((n) => ({ n })) });
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("bad batch input is refused naming the field, and changes nothing", async () => {
  const key = freshKey("bad");
  await ok(h, key, "debounce", key, { delayMs: LONG, params: { keep: 1 }, batch: { maxItems: 5, maxBytes: 500 } });
  await ok(h, key, "debounce", key, { delayMs: LONG, params: { keep: 2 }, batch: { maxItems: 5, maxBytes: 500 } });
  const before = await ok(h, key, "inspect", key);
  assert.equal(before.pending.items, 2);
  const cases = [
    [{ delayMs: 10, edge: "leading", batch: {} }, 'batch is for edge "trailing" only'],
    [{ delayMs: 10, edge: "both", batch: { maxItems: 2 } }, 'batch is for edge "trailing" only'],
    [{ delayMs: 10, batch: 5 }, "batch must be an object"],
    [{ delayMs: 10, batch: [] }, "batch must be an object"],
    [{ delayMs: 10, batch: { max: 1 } }, 'batch has an unknown field "max";'],
    [{ delayMs: 10, batch: { maxItems: 0 } }, "maxItems must be a whole number from 1 to 1000 (got 0)"],
    [{ delayMs: 10, batch: { maxItems: 1001 } }, "maxItems must be a whole number from 1 to 1000 (got 1001)"],
    [{ delayMs: 10, batch: { maxItems: 2.5 } }, "maxItems "],
    [{ delayMs: 10, batch: { maxItems: "3" } }, "maxItems must be a number"],
    [{ delayMs: 10, batch: { maxBytes: 0 } }, "maxBytes must be a whole number from 1 to 1048576 (got 0)"],
    [{ delayMs: 10, batch: { maxBytes: 1_048_577 } }, "maxBytes "],
    [{ delayMs: 10, batch: { maxBytes: -1 } }, "maxBytes "],
    [{ delayMs: 10, params: { pad: "x".repeat(100) }, batch: { maxBytes: 50 } }, "params is "],
  ];
  for (const [options, message] of cases) {
    const result = await h.debouncer(key, "debounce", key, options);
    const label = JSON.stringify(options).slice(0, 80);
    assert.ok(result.error?.startsWith(`BatonError: ${message}`), `${label}: ${result.error}`);
  }
  // Through the service binding and the HTTP API, the same refusals.
  const service = await h.serial("debounce", { key, delayMs: 10, batch: { maxItems: 0 } });
  assert.match(service.error, /^BatonError: maxItems /);
  const response = await h.fetchBaton(`/v1/debounce/${encodeURIComponent(key)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ delayMs: 10, edge: "both", batch: {} }),
  });
  assert.equal(response.status, 400);
  assert.match((await response.json()).error, /^BatonError: batch /);
  assert.deepEqual(await ok(h, key, "inspect", key), before);
  assert.deepEqual(await ok(h, key, "cancel", key), { cancelled: before.pending.instanceId });
});
