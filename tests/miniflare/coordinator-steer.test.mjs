// Contract §11 for keys, against real Workflow instances: an operator
// pauses a key (nobody is granted; holders keep their slots, waiters
// their places), resumes it (every free slot handed on by event, with the
// next fence), and sets a limit that wins over the callers' until it is
// cleared. Bad input for every new field and route is refused by name and
// changes nothing; a paused key stays paused across a restart. No
// assertion is about timing: every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startBaton } from "./harness.mjs";

const TOKEN = "steer-token-5d1e";

/** The Baton steps of a section granted by event after one wait: acquire, the wait, release. */
const contended = (key) => [`baton acquire ${key}`, `baton turn ${key} #1`, `baton release ${key}`];

const untilWaiting = (h, key, id) =>
  h.untilInspect(key, `${id} waiting`, (view) => view.waiting.some((w) => w.id === id));
const untilHolding = (h, key, id) =>
  h.untilInspect(key, `${id} holding`, (view) => view.holders.some((x) => x.id === id));

/** Decision lines printed so far for `key`, parsed. */
function decisionsOf(h, key) {
  return h.runtimeLines
    .map((line) => line.slice(line.indexOf("{")))
    .filter((line) => line.includes('"baton":"decision"'))
    .map((line) => JSON.parse(line))
    .filter((d) => d.key === key);
}

/** What `inspect` shows that a refused call must leave as it was. */
async function snapshot(h, key) {
  const view = await h.inspect(key);
  return {
    holders: view.holders,
    waiting: view.waiting.map((w) => w.id),
    limit: view.limit,
    paused: view.paused,
    limitOverride: view.limitOverride,
    counts: view.counts,
  };
}

describe("§11 pause and resume with real Workflows (holder-check alarm effectively off)", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("a paused key hands nothing on; resume grants the first waiter by event with the next fence", async () => {
    const key = "steer-pause";
    const holder = `${key}-h`;
    const [w1, w2] = [`${key}-w1`, `${key}-w2`];
    await h.create(holder, { key, waitForFinish: true, countSteps: true });
    await untilHolding(h, key, holder);
    await h.create(w1, { key, countSteps: true, turnTimeout: "1 hour", waitForFinish: true });
    await untilWaiting(h, key, w1);
    await h.create(w2, { key, countSteps: true, turnTimeout: "1 hour" });
    await untilWaiting(h, key, w2);
    const fence = (await h.inspect(key)).holders[0].fence;

    const paused = await h.ok(key, "pause", key, { reason: "incident 42" });
    assert.equal(paused.paused.reason, "incident 42");
    assert.equal(typeof paused.paused.since, "number");
    // Pausing again keeps the first `since` and takes the new reason.
    const again = await h.ok(key, "pause", key, { reason: "still looking" });
    assert.deepEqual(again, { paused: { since: paused.paused.since, reason: "still looking" } });
    let view = await h.inspect(key);
    assert.deepEqual(view.paused, again.paused);
    assert.equal(view.limitOverride, null);
    // The busy list (§10) shows the key as paused.
    await h.until("the list shows the key paused", async () => {
      const list = (await h.serial("coordinatorList", {})).value;
      return list.keys.find((e) => e.key === key)?.paused === true;
    });

    // The holder keeps its slot: its repeated acquire is still granted.
    assert.equal(await h.ok(key, "acquire", key, holder), "granted");
    // onBusy "skip" counts the paused key as busy; enqueue skips too.
    assert.equal(await h.ok(key, "acquire", key, "skipper", { onBusy: "skip" }), "busy");
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "skipper", undefined, { onBusy: "skip" }), {
      terminated: [],
      busy: true,
    });

    // The holder's release frees its slot and hands it to nobody.
    await h.sendEvent(holder, "finish", {});
    await h.output(holder);
    view = await h.untilInspect(key, "the holder gone", (v) => v.holders.length === 0);
    assert.deepEqual(
      view.waiting.map((w) => [w.id, w.position]),
      [
        [w1, 1],
        [w2, 2],
      ],
    );
    assert.deepEqual(await h.logOf([w1, w2]), [], "nobody entered while paused");

    // A fresh acquire that would be granted on a free key is pending, with
    // its turn and place; it leaves the queue again.
    const fresh = await h.ok(key, "acquire", key, "fresh", { grant: true });
    assert.equal(fresh.status, "pending");
    assert.equal(fresh.position, 3);
    assert.match(fresh.turn, /^baton-turn-/);
    assert.deepEqual(await h.ok(key, "release", key, "fresh"), { next: null });

    // Resume hands the one free slot to the first waiter, by its event.
    assert.deepEqual(await h.ok(key, "resume", key), { granted: [w1] });
    await untilHolding(h, key, w1);
    view = await h.inspect(key);
    assert.equal(view.paused, null);
    assert.equal(view.holders[0].fence, fence + 1);
    assert.deepEqual(
      view.waiting.map((w) => w.id),
      [w2],
    );
    await h.until("the list shows the key resumed", async () => {
      const list = (await h.serial("coordinatorList", {})).value;
      return list.keys.find((e) => e.key === key)?.paused === false;
    });
    // Resuming a key that is not paused grants nobody.
    assert.deepEqual(await h.ok(key, "resume", key), { granted: [] });
    await h.sendEvent(w1, "finish", {});
    const first = await h.output(w1);
    assert.deepEqual(first.batonSteps, contended(key), "granted by the event: no acquire after the wait");
    assert.equal(first.fence, fence + 1);
    const second = await h.output(w2);
    assert.equal(second.fence, fence + 2);
    assert.deepEqual(await h.logOf([w1, w2]), [`enter ${w1}`, `exit ${w1}`, `enter ${w2}`, `exit ${w2}`]);

    // Each steering decision printed its line at the default level, with no instance.
    const steering = decisionsOf(h, key).filter((d) => ["paused", "resumed"].includes(d.decision));
    assert.deepEqual(
      steering.map((d) => d.decision),
      ["paused", "paused", "resumed", "resumed"],
    );
    assert.ok(steering.every((d) => d.instance === undefined));
    assert.ok(
      steering.every((d) => !JSON.stringify(d).includes("incident")),
      "the reason is not logged",
    );
  });

  test("a paused free key: an acquire that would be granted waits, and resume hands it the key", async () => {
    const key = "steer-free";
    // Through the service binding, as an operator's Worker would call it.
    const paused = await h.serial("coordinatorPause", { key });
    assert.equal(paused.value.paused.reason, null);
    const id = `${key}-a`;
    await h.create(id, { key, countSteps: true, turnTimeout: "1 hour" });
    await untilWaiting(h, key, id);
    assert.deepEqual((await h.serial("coordinatorResume", { key })).value, { granted: [id] });
    const out = await h.output(id);
    assert.deepEqual(out.batonSteps, contended(key));
    assert.equal(out.fence, 1);
  });
});

describe("§11 setLimit with real Workflows", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("raising hands the new slots at once, a caller's limit does not change the override, lowering takes no slot, clearing returns to the callers' limit", async () => {
    const key = "steer-limit";
    const [holder, w1, w2, c5] = ["h", "w1", "w2", "c5"].map((s) => `${key}-${s}`);
    await h.create(holder, { key, waitForFinish: true });
    await untilHolding(h, key, holder);
    for (const id of [w1, w2]) {
      await h.create(id, { key, waitForFinish: true, turnTimeout: "1 hour" });
      await untilWaiting(h, key, id);
    }

    // Raising: both waiters get a slot at once, by event.
    assert.deepEqual(await h.ok(key, "setLimit", key, 3), { limit: 3, override: 3 });
    await untilHolding(h, key, w1);
    let view = await untilHolding(h, key, w2);
    assert.deepEqual(
      view.holders.map((x) => x.id),
      [holder, w1, w2],
    );

    // A caller naming limit 5 waits: the override (3) is the limit.
    await h.create(c5, { key, waitForFinish: true, limit: 5, turnTimeout: "1 hour" });
    view = await untilWaiting(h, key, c5);
    assert.equal(view.limit, 3);
    assert.equal(view.limitOverride, 3);

    // Lowering takes no slot away.
    assert.deepEqual(await h.ok(key, "setLimit", key, 1), { limit: 1, override: 1 });
    view = await h.inspect(key);
    assert.equal(view.holders.length, 3);
    assert.deepEqual(
      view.waiting.map((w) => w.id),
      [c5],
    );

    // Clearing: the callers' latest limit (5) again, and the new slot goes at once.
    assert.deepEqual(await h.ok(key, "setLimit", key, null), { limit: 5, override: null });
    view = await untilHolding(h, key, c5);
    assert.equal(view.limit, 5);
    assert.equal(view.limitOverride, null);
    for (const id of [holder, w1, w2, c5]) await h.sendEvent(id, "finish", {});
    for (const id of [holder, w1, w2, c5]) await h.output(id);
    const fences = (await h.log()).filter((e) => e.kind === "enter" && e.id.startsWith(key)).map((e) => e.fence);
    assert.deepEqual(fences, [1, 2, 3, 4], "each grant its own fence, in order");

    const lines = decisionsOf(h, key).filter((d) => d.decision === "limit set");
    assert.equal(lines.length, 3);
  });

  test("while paused, raising the limit hands nothing on; resume does", async () => {
    const key = "steer-limit-paused";
    const [holder, w1] = [`${key}-h`, `${key}-w1`];
    await h.create(holder, { key, waitForFinish: true });
    await untilHolding(h, key, holder);
    await h.create(w1, { key, turnTimeout: "1 hour" });
    await untilWaiting(h, key, w1);
    await h.ok(key, "pause", key);
    assert.deepEqual(await h.ok(key, "setLimit", key, 2), { limit: 2, override: 2 });
    const view = await h.inspect(key);
    assert.deepEqual(
      view.waiting.map((w) => w.id),
      [w1],
    );
    assert.deepEqual(await h.ok(key, "resume", key), { granted: [w1] });
    await h.output(w1);
    await h.sendEvent(holder, "finish", {});
    await h.output(holder);
  });
});

describe("§11 bad input: refused by name, nothing changes", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000, vars: { BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());

  async function http(method, route, body) {
    const response = await h.fetchBaton(route, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  }

  test("every new field and route", async () => {
    const key = "steer-bad";
    await h.ok(key, "acquire", key, "holder");
    await h.ok(key, "enqueue", key, false, "waiter");
    await h.ok(key, "pause", key, { reason: "kept" });
    await h.ok(key, "setLimit", key, 2);
    const before = await snapshot(h, key);
    const long = "é".repeat(257);

    const rpcRefusals = [
      [["pause", key, { reason: long }], "BatonError: reason must be at most 512 UTF-8 bytes (got 514)"],
      [["pause", key, { reason: 7 }], "BatonError: reason must be a string"],
      [["pause", key, { why: "x" }], /^BatonError: input has an unknown field "why"; accepted fields: key, reason/],
      [["pause", "", {}], /^BatonError: key /],
      [["resume", ""], /^BatonError: key /],
      [["setLimit", key, 0], "BatonError: limit must be an integer from 1 to 1000 (got 0)"],
      [["setLimit", key, 1001], "BatonError: limit must be an integer from 1 to 1000 (got 1001)"],
      [["setLimit", key, 2.5], "BatonError: limit must be an integer from 1 to 1000 (got 2.5)"],
      [["setLimit", key, "3"], "BatonError: limit must be a number"],
      [["setLimit", "", 3], /^BatonError: key /],
    ];
    for (const [[method, ...args], message] of rpcRefusals) {
      const result = await h.rpc(key, method, ...args);
      assert.ok("error" in result, `${method} ${JSON.stringify(args)} should be refused`);
      if (message instanceof RegExp) assert.match(result.error, message);
      else assert.equal(result.error, message);
    }

    const serviceRefusals = [
      ["coordinatorPause", { key, reason: long }, "BatonError: reason must be at most 512 UTF-8 bytes (got 514)"],
      ["coordinatorPause", { key, extra: 1 }, /^BatonError: input has an unknown field "extra"/],
      ["coordinatorResume", { key, reason: "x" }, /^BatonError: input has an unknown field "reason"/],
      ["coordinatorSetLimit", { key, limit: 0 }, "BatonError: limit must be an integer from 1 to 1000 (got 0)"],
      ["coordinatorSetLimit", { key, limit: true }, "BatonError: limit must be a number"],
    ];
    for (const [method, input, message] of serviceRefusals) {
      const result = await h.serial(method, input);
      assert.ok("error" in result, `${method} ${JSON.stringify(input)} should be refused`);
      if (message instanceof RegExp) assert.match(result.error, message);
      else assert.equal(result.error, message);
    }

    const k = `/v1/keys/${key}`;
    const httpRefusals = [
      ["POST", `${k}/pause`, { reason: long }, 400, "BatonError: reason must be at most 512 UTF-8 bytes (got 514)"],
      ["POST", `${k}/pause`, { key: "other" }, 400, /key/],
      ["POST", `${k}/resume`, { limit: 3 }, 400, /unknown field "limit"/],
      ["PUT", `${k}/limit`, { limit: 0 }, 400, "BatonError: limit must be an integer from 1 to 1000 (got 0)"],
      ["PUT", `${k}/limit`, { limit: "many" }, 400, "BatonError: limit must be a number"],
      ["POST", `${k}/limit`, { limit: 3 }, 405, /PUT/],
      ["PUT", `${k}/pause`, {}, 405, /POST/],
    ];
    for (const [method, route, body, status, message] of httpRefusals) {
      const reply = await http(method, route, body);
      assert.equal(reply.status, status, `${method} ${route}: ${JSON.stringify(reply.body)}`);
      if (message instanceof RegExp) assert.match(reply.body.error, message);
      else assert.equal(reply.body.error, message);
    }

    assert.deepEqual(await snapshot(h, key), before, "refused calls changed the key");

    // The same routes, well formed, do what they say.
    assert.deepEqual((await http("PUT", `${k}/limit`, { limit: null })).body, { limit: 1, override: null });
    assert.equal((await http("POST", `${k}/pause`, { reason: "again" })).body.paused.reason, "again");
    assert.deepEqual((await http("POST", `${k}/resume`, {})).body, { granted: [] }, "the holder keeps the one slot");
    const view = await h.inspect(key);
    assert.equal(view.paused, null);
  });
});

test("a paused key and its override survive a restart of the runtime with its storage", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "baton-steer-"));
  const key = "steer-restart";
  try {
    const first = await startBaton({ holderCheckMs: 3_600_000, persistRoot: dir });
    let paused;
    try {
      paused = (await first.ok(key, "pause", key, { reason: "over the restart" })).paused;
      await first.ok(key, "setLimit", key, 2);
    } finally {
      await first.dispose();
    }
    const second = await startBaton({ holderCheckMs: 3_600_000, persistRoot: dir });
    try {
      const view = await second.inspect(key);
      assert.deepEqual(view.paused, paused);
      assert.equal(view.limitOverride, 2);
      assert.equal(view.limit, 2);
      const id = `${key}-a`;
      await second.create(id, { key, turnTimeout: "1 hour" });
      await untilWaiting(second, key, id);
      assert.deepEqual(await second.ok(key, "resume", key), { granted: [id] });
      await second.output(id);
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
