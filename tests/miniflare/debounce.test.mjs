// The Debouncer (contract §4) through real Workflows: the object creates
// EchoWorkflow instances (which return their params) through Baton's
// Workflow bindings; tests call it as a Worker would (the DEBOUNCER stub,
// the npm helper, the service binding) and poll for outcomes. No test
// asserts a timing: bursts are kept together by delays far longer than
// the test's own gaps, and ended by silence, maxWaitMs, or flush.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startBaton, ECHO_WORKFLOW } from "./harness.mjs";
import { exists, freshKeys, ok, startedParams } from "./debounce-helpers.mjs";

// The Debouncer creates through ECHO by default; LATER is listed but not
// bound, so creates through it fail until a restart binds it.
const TOKEN = "debounce-test-token";
const VARS = { WORKFLOW_BINDING: "ECHO", WORKFLOW_BINDINGS: "ECHO,WORKFLOW,LATER", BATON_TOKEN: TOKEN };

let h;
before(async () => {
  h = await startBaton({ vars: VARS });
});
after(() => h?.dispose());

const freshKey = freshKeys();

test("a trailing burst creates one instance, with the last params, under the id every call got", async () => {
  const key = freshKey("trailing");
  const replies = [];
  for (let n = 1; n <= 5; n++) {
    // The delay is long enough that the test's own gaps never end the burst.
    replies.push(await ok(h, key, "debounce", key, { delayMs: 3000, params: { n } }));
  }
  const id = replies[0].instanceId;
  assert.match(id, /^debounce-[0-9a-f-]{36}$/);
  for (const reply of replies) {
    assert.equal(reply.outcome, "scheduled");
    assert.equal(reply.instanceId, id);
    assert.equal(typeof reply.fireAt, "number");
  }
  assert.ok(replies[4].fireAt >= replies[0].fireAt, "each call moves the start later");
  const pending = (await ok(h, key, "inspect", key)).pending;
  assert.equal(pending.instanceId, id);
  assert.equal(pending.edge, "trailing");
  assert.equal(pending.calls, 5);
  assert.equal(pending.workflow, "ECHO");
  assert.deepEqual(await startedParams(h, id), { n: 5 });
  const view = await h.until("the start to be listed", async () => {
    const v = await ok(h, key, "inspect", key);
    return v.started.length > 0 ? v : null;
  });
  assert.equal(view.pending, null);
  assert.deepEqual(view.started.map((s) => s.instanceId), [id]);
  assert.deepEqual(view.retrying, []);
  // The next call begins a new burst, with a new id.
  const next = await ok(h, key, "debounce", key, { delayMs: 3000 });
  assert.notEqual(next.instanceId, id);
  await ok(h, key, "cancel", key);
});

test("maxWaitMs starts a burst that never goes quiet", async () => {
  const key = freshKey("maxwait");
  // A call every few ms: 2 s of silence never comes, maxWaitMs ends the burst.
  const options = { delayMs: 2000, maxWaitMs: 2000 };
  const first = await ok(h, key, "debounce", key, { ...options, params: { n: 0 } });
  let lastOfFirst = 0;
  let next = null;
  for (let n = 1; n <= 2000 && !next; n++) {
    const reply = await ok(h, key, "debounce", key, { ...options, params: { n } });
    if (reply.instanceId === first.instanceId) lastOfFirst = n;
    else next = reply;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(next, "the stream's calls moved on to a new burst");
  assert.equal(next.outcome, "scheduled");
  // The first burst's start was made with the last params it took.
  assert.deepEqual(await startedParams(h, first.instanceId), { n: lastOfFirst });
  await ok(h, key, "cancel", key);
});

test("leading starts at once and suppresses the rest of its burst; flush ends the burst", async () => {
  const key = freshKey("leading");
  const options = { delayMs: 60_000, edge: "leading" };
  const first = await ok(h, key, "debounce", key, { ...options, params: { n: 1 } });
  assert.equal(first.outcome, "started");
  assert.equal(first.fireAt, undefined);
  // "started": the instance exists when the call returns.
  assert.ok(await exists(h, first.instanceId));
  for (let n = 2; n <= 4; n++) {
    const reply = await ok(h, key, "debounce", key, { ...options, params: { n } });
    assert.deepEqual(reply, { outcome: "suppressed", instanceId: first.instanceId });
  }
  assert.deepEqual(await startedParams(h, first.instanceId), { n: 1 });
  assert.equal((await ok(h, key, "inspect", key)).pending, null);
  assert.deepEqual(await ok(h, key, "flush", key), { started: null });
  const again = await ok(h, key, "debounce", key, { ...options, params: { n: 5 } });
  assert.equal(again.outcome, "started");
  assert.notEqual(again.instanceId, first.instanceId);
  assert.deepEqual(await startedParams(h, again.instanceId), { n: 5 });
});

test("both: a leading start, then one trailing start with the latest params", async () => {
  const key = freshKey("both");
  const options = { delayMs: 1500, maxWaitMs: 1500, edge: "both" };
  const lead = await ok(h, key, "debounce", key, { ...options, params: { n: 1 } });
  assert.equal(lead.outcome, "started");
  const second = await ok(h, key, "debounce", key, { ...options, params: { n: 2 } });
  const third = await ok(h, key, "debounce", key, { ...options, params: { n: 3 } });
  assert.equal(second.outcome, "scheduled");
  assert.notEqual(second.instanceId, lead.instanceId);
  assert.equal(third.instanceId, second.instanceId);
  assert.equal(third.fireAt, second.fireAt, "maxWaitMs from the leading call bounds it");
  assert.deepEqual(await startedParams(h, lead.instanceId), { n: 1 });
  assert.deepEqual(await startedParams(h, second.instanceId), { n: 3 });
});

test("startAt fires at its time, is replaced keeping its id, and can be cancelled", async () => {
  const key = freshKey("at");
  const at = Date.now() + 60_000;
  const first = await ok(h, key, "startAt", key, { at, params: { v: 1 } });
  assert.match(first.instanceId, /^start-/);
  assert.equal(first.at, at);
  const pending = (await ok(h, key, "inspect", key)).pending;
  assert.equal(pending.edge, "at");
  assert.equal(pending.fireAt, at);
  // Replaced: sooner, other params, same id.
  const soon = Date.now() + 300;
  const replaced = await ok(h, key, "startAt", key, { at: soon, params: { v: 2 } });
  assert.deepEqual(replaced, { instanceId: first.instanceId, at: soon });
  assert.deepEqual(await startedParams(h, first.instanceId), { v: 2 });

  // Cancelled: its id is returned and never starts. A second key's start
  // at the same time shows when that time has come and gone.
  const probe = freshKey("at-probe");
  const when = Date.now() + 400;
  const doomed = await ok(h, key, "startAt", key, { at: when, params: { v: 3 } });
  const witness = await ok(h, probe, "startAt", probe, { at: when });
  assert.deepEqual(await ok(h, key, "cancel", key), { cancelled: doomed.instanceId });
  await startedParams(h, witness.instanceId);
  const view = await ok(h, key, "inspect", key);
  assert.equal(view.pending, null);
  assert.ok(!(await exists(h, doomed.instanceId)), "a cancelled start never starts");
  // A past `at` starts at once, under a given id.
  const given = `given-${Date.now()}`;
  const past = await ok(h, key, "startAt", key, { at: 5, instanceId: given, params: { v: 4 } });
  assert.deepEqual(past, { instanceId: given, at: 5 });
  assert.deepEqual(await startedParams(h, given), { v: 4 });
});

test("flush starts the pending start now", async () => {
  const key = freshKey("flush");
  const scheduled = await ok(h, key, "debounce", key, { delayMs: 600_000, params: { n: 1 } });
  await ok(h, key, "debounce", key, { delayMs: 600_000, params: { n: 2 } });
  assert.deepEqual(await ok(h, key, "flush", key), { started: scheduled.instanceId });
  assert.ok(await exists(h, scheduled.instanceId), "created before flush answered");
  assert.deepEqual(await startedParams(h, scheduled.instanceId), { n: 2 });
  assert.deepEqual(await ok(h, key, "flush", key), { started: null });
});

test("the npm helper and the service binding reach the same object", async () => {
  const key = freshKey("helper");
  const helper = async (fn, ...args) => {
    const result = await h.call("/debounce-helper", { fn, args: [key, ...args] });
    if ("error" in result) throw new Error(`${fn}: ${result.error}`);
    return result.value;
  };
  const service = async (method, fields) => {
    const result = await h.serial(method, { key, ...fields });
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  };
  const a = await helper("debounce", { delayMs: 600_000, params: { n: 1 } });
  const b = await service("debounce", { delayMs: 600_000, params: { n: 2 } });
  assert.equal(b.instanceId, a.instanceId);
  const viaService = await service("debounceInspect");
  assert.deepEqual(viaService, await helper("debounceInspect"));
  assert.equal(viaService.pending.calls, 2);
  assert.deepEqual(await service("debounceFlush"), { started: a.instanceId });
  assert.deepEqual(await startedParams(h, a.instanceId), { n: 2 });
  const at = await service("startAt", { at: Date.now() + 600_000 });
  assert.deepEqual(await helper("debounceCancel"), { cancelled: at.instanceId });
  const later = await helper("startAt", { at: Date.now() + 600_000 });
  assert.equal(later.instanceId.startsWith("start-"), true);
  assert.deepEqual(await service("debounceCancel"), { cancelled: later.instanceId });
  assert.deepEqual(await helper("debounceFlush"), { started: null });
});

test("the HTTP API covers every method with the same shapes", async () => {
  const key = freshKey("http/with:slash");
  const path = `/v1/debounce/${encodeURIComponent(key)}`;
  const send = async (route, body) => {
    const response = await h.fetchBaton(route, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };
  const first = await send(path, { delayMs: 600_000, params: { via: "http" } });
  assert.equal(first.status, 200);
  assert.equal(first.body.outcome, "scheduled");
  const inspected = await send(path);
  assert.equal(inspected.body.key, key);
  assert.equal(inspected.body.pending.instanceId, first.body.instanceId);
  assert.deepEqual(inspected.body, await ok(h, key, "inspect", key));
  assert.deepEqual((await send(`${path}/flush`, {})).body, { started: first.body.instanceId });
  assert.deepEqual(await startedParams(h, first.body.instanceId), { via: "http" });
  const at = Date.now() + 600_000;
  const scheduled = await send(`${path}/start-at`, { at });
  assert.equal(scheduled.body.at, at);
  assert.deepEqual((await send(`${path}/cancel`, {})).body, { cancelled: scheduled.body.instanceId });
  // A webhook's payload past the API's usual 64 KiB: these routes take params up to 1 MiB.
  const big = { blob: "x".repeat(200 * 1024) };
  const large = await send(path, { delayMs: 600_000, params: big });
  assert.equal(large.status, 200, JSON.stringify(large.body).slice(0, 200));
  assert.deepEqual((await send(`${path}/flush`, {})).body, { started: large.body.instanceId });
  assert.deepEqual(await startedParams(h, large.body.instanceId), big);
  const refused = await send(path, { delayMs: 0 });
  assert.equal(refused.status, 400);
  assert.match(refused.body.error, /^BatonError: delayMs /);
  const inPath = await send(path, { key: "other", delayMs: 5 });
  assert.equal(inPath.status, 400);
  assert.match(inPath.body.error, /the key comes from the path/);
});

test("bad input is refused naming the field, and changes nothing", async () => {
  const key = freshKey("bad");
  await ok(h, key, "debounce", key, { delayMs: 600_000, params: { keep: true } });
  const before = await ok(h, key, "inspect", key);
  const week = 604_800_000;
  const cases = [
    [{ delayMs: 0 }, "delayMs"],
    [{ delayMs: week + 1 }, "delayMs"],
    [{ delayMs: 10, maxWaitMs: week + 1 }, "maxWaitMs"],
    [{ delayMs: 10, maxWaitMs: 5 }, "maxWaitMs"],
    [{ delayMs: 10, edge: "middle" }, "edge"],
    [{ delayMs: 10, params: "x".repeat(1_048_577) }, "params"],
    [{ delayMs: 10, idPrefix: "-bad" }, "idPrefix"],
    [{ delayMs: 10, idPrefix: "has space" }, "idPrefix"],
    [{ delayMs: 10, idPrefix: "p".repeat(65) }, "idPrefix"],
    [{ delayMs: 10, workflow: "NOT_LISTED" }, "workflow"],
    [{ delayMs: 10, delay: 5 }, 'input has an unknown field "delay";'],
    [{ delayMs: 10, key: "other" }, "options"],
  ];
  for (const [options, field] of cases) {
    const result = await h.debouncer(key, "debounce", key, options);
    const label = JSON.stringify(options).slice(0, 80);
    assert.ok(result.error?.startsWith(`BatonError: ${field} `), `${label}: ${result.error}`);
  }
  const notJson = await h.call("/debouncer", {
    key,
    method: "debounce",
    args: [key, { delayMs: 10 }],
    functionParams: true,
  });
  assert.match(notJson.error, /^BatonError: params must be JSON data/);
  const startAtCases = [
    [{ at: Date.now() + 366 * 86_400_000 }, "at"],
    [{ at: "tomorrow" }, "at"],
    [{}, "at"],
    [{ at: 1, instanceId: "bad id" }, "instanceId"],
    [{ at: 1, workflow: "NOT_LISTED" }, "workflow"],
    [{ at: 1, when: 2 }, 'input has an unknown field "when";'],
  ];
  for (const [options, field] of startAtCases) {
    const result = await h.debouncer(key, "startAt", key, options);
    assert.ok(result.error?.startsWith(`BatonError: ${field} `), `${JSON.stringify(options)}: ${result.error}`);
  }
  const badKey = await h.debouncer(key, "inspect", "");
  assert.match(badKey.error, /^BatonError: key /);
  // Through the service binding too.
  const service = await h.serial("debounce", { key, delayMs: -1 });
  assert.match(service.error, /^BatonError: delayMs /);
  const serviceNotJson = await h.serial("startAt", { key, at: Number.NaN });
  assert.match(serviceNotJson.error, /^BatonError: at /);
  assert.deepEqual(await ok(h, key, "inspect", key), before);
  await ok(h, key, "cancel", key);
});

test("a pending start survives a restart of the runtime with its storage", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "baton-debounce-"));
  try {
    let first = await startBaton({ vars: VARS, persistRoot: dir });
    const key = freshKey("restart");
    let reply;
    try {
      reply = await ok(first, key, "debounce", key, { delayMs: 1500, params: { survived: true } });
    } finally {
      await first.dispose();
    }
    const second = await startBaton({ vars: VARS, persistRoot: dir });
    try {
      assert.deepEqual(await startedParams(second, reply.instanceId), { survived: true });
      const view = await second.until("the start to be confirmed", async () => {
        const v = await ok(second, key, "inspect", key);
        return v.started.length ? v : null;
      });
      assert.deepEqual(view.started.map((s) => s.instanceId), [reply.instanceId]);
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a create that fails is retried by the alarm until it succeeds", async () => {
  // LATER is listed in WORKFLOW_BINDINGS but bound to nothing: every create
  // through it fails, as a deploy that has not yet added the binding would.
  const dir = mkdtempSync(path.join(tmpdir(), "baton-debounce-"));
  try {
    const first = await startBaton({ vars: VARS, persistRoot: dir });
    const key = freshKey("retry");
    let reply;
    try {
      reply = await ok(first, key, "debounce", key, {
        delayMs: 1,
        edge: "leading",
        workflow: "LATER",
        params: { late: true },
      });
      assert.equal(reply.outcome, "started");
      const view = await first.until("two failed creates", async () => {
        const v = await ok(first, key, "inspect", key);
        return v.retrying[0]?.failures >= 2 ? v : null;
      });
      assert.equal(view.retrying[0].instanceId, reply.instanceId);
      assert.equal(view.retrying[0].workflow, "LATER");
      assert.match(view.retrying[0].lastError, /LATER/);
      assert.deepEqual(view.started, []);
    } finally {
      await first.dispose();
    }
    // The next deploy binds LATER: the alarm's next retry creates it.
    const second = await startBaton({
      vars: VARS,
      persistRoot: dir,
      workflows: { LATER: ECHO_WORKFLOW },
    });
    try {
      assert.deepEqual(await startedParams(second, reply.instanceId), { late: true });
      const view = await second.until("the retried start to be confirmed", async () => {
        const v = await ok(second, key, "inspect", key);
        return v.started.length ? v : null;
      });
      assert.deepEqual(view.retrying, []);
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
