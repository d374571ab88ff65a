// Idempotent runs (contract §6) against real Workflow instances: TestWorkflow
// in "run" mode reports its events and outcome through `reportRun`, and
// callers start it with `startOnce` and wait with `await` / `awaitRun`.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";

/** Polls until `storageWork().openWaits` of `key`'s object reaches `n`. */
function untilOpenWaits(h, key, n) {
  return h.until(`${n} open waits on ${key}`, async () => {
    const work = await h.runsOk(key, "storageWork");
    return work.openWaits >= n;
  });
}

describe("Runs with real Workflows", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  test("many concurrent startOnce calls start one instance, and all learn its id", async () => {
    const key = "report:2026-12";
    const params = { mode: "run", key, result: { rows: 42 } };
    const replies = await h.call("/start-once", { key, params, count: 10 });
    assert.equal(replies.length, 10);
    const started = replies.filter((r) => r.started);
    assert.equal(started.length, 1, JSON.stringify(replies));
    const id = started[0].instanceId;
    for (const reply of replies) assert.equal(reply.instanceId, id);

    assert.deepEqual(await h.output(id), { rows: 42 });
    const view = await h.call("/await-run", { key, options: { timeoutMs: 30_000 } });
    assert.deepEqual(view, { state: "complete", instanceId: id, result: { rows: 42 } });
    // The body ran once, in the one instance created.
    const ran = (await h.log()).filter((e) => e.kind === "run" && replies.some((r) => r.instanceId === e.id));
    assert.deepEqual(ran.map((e) => e.id), [id]);
    // A later claim by anyone else gets the outcome, without starting anything.
    const late = await h.call("/start-once", { key, params, count: 1 });
    assert.deepEqual(late, [{ instanceId: id, started: false }]);
  });

  test("awaiters that started before the outcome get it as soon as it is recorded", async () => {
    const key = "await-early";
    const [{ instanceId: id, started }] = await h.call("/start-once", {
      key,
      params: { mode: "run", key, waitForFinish: true, result: "made" },
    });
    assert.ok(started);
    await h.untilStatus(id, "running");
    const awaiting = Array.from({ length: 5 }, () => h.runsOk(key, "await", { timeoutMs: 30_000 }));
    await untilOpenWaits(h, key, 5);
    await h.sendEvent(id, "finish", {});
    const views = await Promise.all(awaiting);
    for (const view of views) {
      assert.deepEqual(view, { state: "complete", instanceId: id, result: "made" });
    }
    assert.equal((await h.runsOk(key, "storageWork")).openWaits, 0);
  });

  test("a failed run answers its error; a retried complete records nothing", async () => {
    const key = "fails";
    const [{ instanceId: id }] = await h.call("/start-once", {
      key,
      params: { mode: "run", key, error: "upstream said no" },
    });
    assert.deepEqual(await h.output(id), { failed: "upstream said no" });
    const view = await h.runsOk(key, "await", { timeoutMs: 0 });
    assert.deepEqual(view, { state: "failed", instanceId: id, error: "upstream said no" });
    assert.deepEqual(await h.runsOk(key, "complete", { instanceId: id, result: 1 }), { recorded: false });
    assert.deepEqual(await h.runsOk(key, "await", { timeoutMs: 0 }), view);
  });

  test("events read in order, with after, and firstSeq once older ones are dropped", async () => {
    const key = "events-real";
    const events = [
      { type: "fetched", data: { pages: 3 } },
      { type: "parsed" },
      { type: "stored", data: [1, 2] },
    ];
    const [{ instanceId: id }] = await h.call("/start-once", {
      key,
      params: { mode: "run", key, events, result: "ok" },
    });
    assert.equal(await h.output(id), "ok");
    const all = await h.runsOk(key, "events", {});
    assert.equal(all.latestSeq, 3);
    assert.equal(all.firstSeq, 1);
    assert.deepEqual(
      all.events.map((e) => [e.seq, e.type, e.data]),
      [
        [1, "fetched", { pages: 3 }],
        [2, "parsed", null],
        [3, "stored", [1, 2]],
      ],
    );
    assert.ok(all.events.every((e) => typeof e.at === "number"));
    const rest = await h.runsOk(key, "events", { after: 1, limit: 1 });
    assert.deepEqual(rest.events.map((e) => e.seq), [2]);

    // 505 events by a claimant (no instance needed to append): the log
    // keeps the newest 500, and a reader learns what it missed.
    const many = "events-many";
    assert.deepEqual(await h.runsOk(many, "claim", { instanceId: "writer" }), { claimed: true });
    const seqs = await h.call("/runs-many", {
      key: many,
      method: "append",
      options: Array.from({ length: 505 }, (_, i) => ({ instanceId: "writer", type: "tick", data: i })),
    });
    assert.deepEqual(seqs.at(-1), { seq: 505 });
    const first = await h.runsOk(many, "events", { after: 0, limit: 3 });
    assert.equal(first.firstSeq, 6);
    assert.equal(first.latestSeq, 505);
    assert.deepEqual(first.events.map((e) => [e.seq, e.data]), [[6, 5], [7, 6], [8, 7]]);
    const tail = await h.runsOk(many, "events", { after: 500, limit: 500 });
    assert.deepEqual(tail.events.map((e) => e.seq), [501, 502, 503, 504, 505]);

    // A reader waiting at the end gets the next event when it is appended.
    const waiting = h.runsOk(many, "events", { after: 505, timeoutMs: 30_000 });
    await untilOpenWaits(h, many, 1);
    assert.deepEqual(await h.runsOk(many, "append", { instanceId: "writer", type: "last" }), { seq: 506 });
    const woken = await waiting;
    assert.deepEqual(woken.events.map((e) => [e.seq, e.type]), [[506, "last"]]);
    assert.equal(woken.firstSeq, 7);
  });

  test("a terminated claimant frees the key; the next claimant continues the log", async () => {
    const key = "terminated";
    const params = { mode: "run", key, events: [{ type: "a" }, { type: "b" }], waitForFinish: true, result: 2 };
    const [{ instanceId: first }] = await h.call("/start-once", { key, params });
    await h.until("two events", async () => (await h.runsOk(key, "events", {})).latestSeq === 2);
    // While it lives, the key is its own.
    assert.deepEqual(await h.call("/start-once", { key, params }), [{ instanceId: first, started: false }]);
    await h.terminate(first);
    await h.untilStatus(first, "terminated");
    const [second] = await h.call("/start-once", { key, params });
    assert.equal(second.started, true);
    assert.notEqual(second.instanceId, first);
    await h.until("four events", async () => (await h.runsOk(key, "events", {})).latestSeq === 4);
    await h.sendEvent(second.instanceId, "finish", {});
    assert.equal(await h.output(second.instanceId), 2);
    const log = await h.runsOk(key, "events", {});
    assert.deepEqual(log.events.map((e) => [e.seq, e.type]), [[1, "a"], [2, "b"], [3, "a"], [4, "b"]]);
    // The old claimant can record nothing.
    assert.deepEqual(await h.runsOk(key, "complete", { instanceId: first }), { recorded: false });
    const refused = await h.runs(key, "append", { instanceId: first, type: "late" });
    assert.match(refused.error, /^BatonError: instanceId /);
  });

  test("retried report steps record each event and the outcome once", async () => {
    // Every append and complete loses its first reply after the commit,
    // so every reporting step runs twice.
    const key = "retried-steps";
    const events = [{ type: "one", data: 1 }, { type: "two", data: 2 }, { type: "three", data: 3 }];
    const [{ instanceId: id }] = await h.call("/start-once", {
      key,
      params: { mode: "run", key, events, result: "once", flaky: true },
    });
    assert.equal(await h.output(id), "once");
    const log = await h.runsOk(key, "events", {});
    assert.deepEqual(
      log.events.map((e) => [e.seq, e.type, e.data]),
      [
        [1, "one", 1],
        [2, "two", 2],
        [3, "three", 3],
      ],
    );
    assert.deepEqual(await h.runsOk(key, "await", { timeoutMs: 0 }), {
      state: "complete",
      instanceId: id,
      result: "once",
    });
  });

  test("a claimant not created yet keeps the key within its grace", async () => {
    const key = "in-grace";
    // Claimed for an instance nobody has created (yet): within the grace
    // (60 s by default) it is starting, not dead.
    assert.deepEqual(await h.runsOk(key, "claim", { instanceId: "not-yet" }), { claimed: true });
    assert.deepEqual(await h.runsOk(key, "claim", { instanceId: "other" }), {
      claimed: false,
      instanceId: "not-yet",
      state: "running",
    });
  });

  test("bad input is refused, naming the field, and changes nothing", async () => {
    const key = "bad-input";
    assert.deepEqual(await h.runsOk(key, "claim", { instanceId: "owner" }), { claimed: true });
    await h.runsOk(key, "append", { instanceId: "owner", type: "one", data: 1 });
    const before = [await h.runsOk(key, "await", { timeoutMs: 0 }), await h.runsOk(key, "events", {})];
    const big = "x".repeat(1024 * 1024 + 1);
    const cases = [
      ["await", { timeoutMs: 30_001 }, "timeoutMs"],
      ["await", { timeoutMs: -1 }, "timeoutMs"],
      ["await", {}, "timeoutMs"],
      ["events", { timeoutMs: 30_001 }, "timeoutMs"],
      ["events", { limit: 0 }, "limit"],
      ["events", { limit: 501 }, "limit"],
      ["events", { after: -1 }, "after"],
      ["complete", { instanceId: "owner", result: big }, "result"],
      ["complete", { instanceId: "owner", error: big }, "error"],
      ["complete", { instanceId: "owner", result: 1, error: "e" }, "error"],
      ["append", { instanceId: "owner", type: "" }, "type"],
      ["append", { instanceId: "owner", type: "t".repeat(65) }, "type"],
      ["append", { instanceId: "owner", type: "t", data: "d".repeat(64 * 1024) }, "data"],
      ["append", { instanceId: "intruder", type: "t" }, "instanceId"],
      ["claim", { instanceId: "bad id" }, "instanceId"],
      ["claim", { instanceId: "other", extra: 1 }, "extra"],
      ["events", { after: 0, since: 3 }, "since"],
    ];
    for (const [method, options, field] of cases) {
      const result = await h.runs(key, method, options);
      assert.ok("error" in result, `${method} ${JSON.stringify(options).slice(0, 80)} was accepted`);
      assert.match(result.error, /^BatonError: /, result.error);
      assert.ok(result.error.includes(field), `${result.error} should name ${field}`);
    }
    const badKey = await h.call("/runs", { key: "k", method: "await", args: ["", { timeoutMs: 0 }] });
    assert.match(badKey.error, /^BatonError: key /);
    // A complete from another instance is not an error: it says it recorded nothing.
    assert.deepEqual(await h.runsOk(key, "complete", { instanceId: "intruder", result: 1 }), { recorded: false });
    const afterwards = [await h.runsOk(key, "await", { timeoutMs: 0 }), await h.runsOk(key, "events", {})];
    assert.deepEqual(afterwards, before);
  });
});

describe("Runs with tiny bounds: retention and the claim grace", () => {
  let h;
  before(async () => {
    // A finished record lives 50 ms, and a claimant not found is dead 50 ms
    // after its claim: both happen while the tests poll.
    h = await startBaton({ vars: { RUN_RETENTION_MS: "50", ENQUEUE_GRACE_MS: "50" } });
  });
  after(() => h?.dispose());

  test("a finished run's record is deleted RUN_RETENTION_MS after its outcome", async () => {
    const key = "short-lived";
    const [{ instanceId: id }] = await h.call("/start-once", {
      key,
      params: { mode: "run", key, events: [{ type: "only" }], result: "gone soon" },
    });
    assert.equal(await h.output(id), "gone soon");
    await h.until("the record deleted", async () => {
      const view = await h.runsOk(key, "await", { timeoutMs: 0 });
      return view.state === "none";
    });
    assert.deepEqual(await h.runsOk(key, "events", {}), { events: [], latestSeq: 0, firstSeq: 1 });
    // The key is new again: the next caller starts a run.
    const [again] = await h.call("/start-once", { key, params: { mode: "run", key, result: "again" } });
    assert.equal(again.started, true);
    assert.notEqual(again.instanceId, id);
    assert.equal(await h.output(again.instanceId), "again");
  });

  test("a claimant never created frees the key once its grace is over", async () => {
    const key = "never-created";
    assert.deepEqual(await h.runsOk(key, "claim", { instanceId: "ghost" }), { claimed: true });
    // The next startOnce takes the key as soon as the grace has passed.
    const started = await h.until("the ghost's grace to pass", async () => {
      const [reply] = await h.call("/start-once", { key, params: { mode: "run", key, result: "real" } });
      return reply.started ? reply : null;
    });
    assert.notEqual(started.instanceId, "ghost");
    assert.equal(await h.output(started.instanceId), "real");
    assert.deepEqual(await h.runsOk(key, "complete", { instanceId: "ghost", result: "late" }), { recorded: false });
  });
});

describe("Runs through Baton's Worker: §7 methods and the HTTP API", () => {
  const TOKEN = "runs-token-5e1d";
  let h;
  before(async () => {
    h = await startBaton({ vars: { BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());

  /** A `run*` method of the default entrypoint, through the service binding. */
  const service = (method, input) => h.serial(method, input);
  const serviceOk = async (method, input) => {
    const result = await service(method, input);
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  };

  async function http(method, route, body) {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const response = await h.fetchBaton(route, {
      method,
      // The length is declared, as clients do: a body over the bound is
      // refused before it is read (Miniflare forwards none unless set).
      headers: {
        authorization: `Bearer ${TOKEN}`,
        "content-type": "application/json",
        ...(text === undefined ? {} : { "content-length": String(Buffer.byteLength(text)) }),
      },
      body: text,
    });
    return { status: response.status, body: await response.json() };
  }

  test("run* methods answer exactly what the object answers", async () => {
    const key = "svc-run";
    assert.deepEqual(await serviceOk("runClaim", { key, instanceId: "svc-a" }), { claimed: true });
    assert.deepEqual(await serviceOk("runClaim", { key, instanceId: "svc-b" }), {
      claimed: false,
      instanceId: "svc-a",
      state: "running",
    });
    assert.deepEqual(await serviceOk("runAppend", { key, instanceId: "svc-a", type: "step", data: { n: 1 } }), {
      seq: 1,
    });
    const viaService = await serviceOk("runEvents", { key, after: 0, limit: 10 });
    assert.deepEqual(viaService, await h.runsOk(key, "events", { after: 0, limit: 10 }));
    const awaiting = serviceOk("runAwait", { key, timeoutMs: 30_000 });
    await untilOpenWaits(h, key, 1);
    assert.deepEqual(await serviceOk("runComplete", { key, instanceId: "svc-a", result: [1, "two"] }), {
      recorded: true,
    });
    const done = { state: "complete", instanceId: "svc-a", result: [1, "two"] };
    assert.deepEqual(await awaiting, done);
    assert.deepEqual(await h.runsOk(key, "await", { timeoutMs: 0 }), done);
    for (const [method, input, field] of [
      ["runAwait", { key, timeoutMs: 30_001 }, "timeoutMs"],
      ["runClaim", { instanceId: "x" }, "key"],
      ["runClaim", { key, instanceId: "x", extra: 1 }, "extra"],
      ["runEvents", { key, limit: 0 }, "limit"],
      ["runAppend", { key, instanceId: "svc-b", type: "t" }, "instanceId"],
      ["runClaim", { key, instanceId: "x", workflow: "NOT_A_BINDING" }, "workflow"],
    ]) {
      const result = await service(method, input);
      assert.match(result.error ?? "", /^BatonError: /, `${method} ${JSON.stringify(input)}`);
      assert.ok(result.error.includes(field), `${result.error} should name ${field}`);
    }
    assert.deepEqual(await h.runsOk(key, "await", { timeoutMs: 0 }), done, "refusals changed nothing");
  });

  test("over HTTP: claim, append, follow the events, complete, await", async () => {
    const key = "http run/1";
    const route = (op) => `/v1/runs/${encodeURIComponent(key)}/${op}`;
    assert.deepEqual(await http("POST", route("claim"), { instanceId: "web-a" }), {
      status: 200,
      body: { claimed: true },
    });
    const following = http("POST", route("events"), { after: 0, timeoutMs: 30_000 });
    await untilOpenWaits(h, key, 1);
    assert.deepEqual((await http("POST", route("append"), { instanceId: "web-a", type: "began" })).body, { seq: 1 });
    const followed = await following;
    assert.equal(followed.status, 200);
    assert.deepEqual(followed.body.events.map((e) => [e.seq, e.type, e.data]), [[1, "began", null]]);
    // A result above the API's usual 64 KiB body bound: complete takes up to 1 MiB.
    const big = "r".repeat(100 * 1024);
    assert.deepEqual((await http("POST", route("complete"), { instanceId: "web-a", result: big })).body, {
      recorded: true,
    });
    const view = await http("POST", route("await"), { timeoutMs: 1_000 });
    assert.deepEqual(view, { status: 200, body: { state: "complete", instanceId: "web-a", result: big } });
    // Refusals: 400 naming the field, 413 past the operation's bound; nothing changes.
    const bad = await http("POST", route("await"), { timeoutMs: 30_001 });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /^BatonError: timeoutMs /);
    const intruder = await http("POST", route("append"), { instanceId: "web-b", type: "t" });
    assert.equal(intruder.status, 400);
    assert.match(intruder.body.error, /^BatonError: instanceId /);
    const tooBig = await http("POST", route("append"), { instanceId: "web-a", type: "t", data: "d".repeat(200 * 1024) });
    assert.equal(tooBig.status, 413);
    assert.deepEqual((await http("POST", route("events"), {})).body.latestSeq, 1);
  });
});
