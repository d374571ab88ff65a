// What is busy (contract §10) in miniflare: the list shards (the BusyList
// Durable Object), the merged read across them (`coordinatorList`), the
// groups from D1 (`serialList`), and their refusals.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { shardOf, startBaton } from "./harness.mjs";

/** A Coordinator's report of `key`, as its object would send it. */
export function report(key, stamp, { holders = 1, waiting = 1, oldestSince = Date.now() - 1000, limit = 1, deadUntil = null } = {}) {
  return { key, stamp, holders, waiting, oldestSince: waiting > 0 ? oldestSince : null, limit, deadUntil };
}

const TOKEN = "busy-test-token";

/** GET a list route of Baton's HTTP API: its status and JSON body. */
async function httpGet(h, route, token = TOKEN) {
  const response = await h.fetchBaton(route, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.json() };
}

async function listOk(h, method, input) {
  const result = await h.serial(method, input);
  if ("error" in result) throw new Error(`${method}: ${result.error}`);
  return result.value;
}

/** Every page of a list, following the cursors; the pages' sizes too. */
async function listAll(h, method, limit) {
  const field = method === "coordinatorList" ? "keys" : "groups";
  const entries = [];
  const sizes = [];
  let cursor;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await listOk(h, method, { limit, ...(cursor ? { cursor } : {}) });
    entries.push(...page[field]);
    sizes.push(page[field].length);
    cursor = page.cursor;
    if (cursor === null) return { entries, sizes };
  }
  throw new Error("more than 1000 pages");
}

async function reportAll(h, shards, reports) {
  const byShard = new Map();
  for (const r of reports) {
    const shard = shardOf(r.key, shards);
    byShard.set(shard, [...(byShard.get(shard) ?? []), r]);
  }
  for (const [shard, list] of byShard) {
    const result = await h.call("/list-shard", { shard, method: "reportMany", args: [list] });
    if ("error" in result) throw new Error(result.error);
  }
}

describe("the list of busy keys, by its shards", () => {
  let h;
  const SHARDS = 4;
  before(async () => {
    h = await startBaton({ vars: { BATON_LIST_SHARDS: String(SHARDS), BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());

  test("keys over every shard read back in key order over pages smaller than the list", async () => {
    const keys = Array.from({ length: 230 }, (_, i) => `page/${String(i).padStart(3, "0")}`);
    await reportAll(h, SHARDS, keys.map((key, i) => report(key, 1, { waiting: 1 + (i % 3) })));
    assert.ok(new Set(keys.map((k) => shardOf(k, SHARDS))).size === SHARDS, "every shard holds some");
    const { entries, sizes } = await listAll(h, "coordinatorList", 50);
    assert.deepEqual(entries.map((e) => e.key), keys);
    assert.ok(sizes.length >= 5 && sizes.every((n) => n >= 1 && n <= 50), JSON.stringify(sizes));
    const first = entries[0];
    assert.deepEqual({ ...first, oldestWaitMs: undefined }, { key: keys[0], holders: 1, waiting: 1, limit: 1, oldestWaitMs: undefined, paused: false, state: "backlogged" });
    assert.ok(first.oldestWaitMs >= 1000, JSON.stringify(first));
    // The default page is 100.
    assert.equal((await listOk(h, "coordinatorList", {})).keys.length, 100);

    // Keys leave: the last waiter gone; a late copy of an older report changes nothing.
    await reportAll(h, SHARDS, keys.slice(0, 200).map((key) => report(key, 2, { waiting: 0 })));
    await reportAll(h, SHARDS, keys.slice(0, 10).map((key) => report(key, 1, { waiting: 5 })));
    const left = await listAll(h, "coordinatorList", 500);
    assert.deepEqual(left.entries.map((e) => e.key), keys.slice(200));
    assert.deepEqual(left.sizes, [30]);
  });

  test("GET /v1/keys pages the same list, with cursor and limit in the query", async () => {
    const viaRpc = (await listAll(h, "coordinatorList", 500)).entries.map((e) => e.key);
    const seen = [];
    let cursor = null;
    for (let n = 0; n < 100; n++) {
      const query = new URLSearchParams({ limit: "7", ...(cursor ? { cursor } : {}) });
      const { status, body } = await httpGet(h, `/v1/keys?${query}`);
      assert.equal(status, 200, JSON.stringify(body));
      assert.ok(body.keys.length <= 7);
      seen.push(...body.keys.map((k) => k.key));
      cursor = body.cursor;
      if (cursor === null) break;
    }
    assert.deepEqual(seen, viaRpc);
    for (const [query, field] of [["limit=0", "limit"], ["limit=many", "limit"], ["cursor=%21", "cursor"], ["pages=2", "pages"]]) {
      const { status, body } = await httpGet(h, `/v1/keys?${query}`);
      assert.equal(status, 400, query);
      assert.match(body.error, new RegExp(`^BatonError: .*${field}`), query);
    }
    assert.equal((await httpGet(h, "/v1/keys", "wrong")).status, 401);
    const groups = await httpGet(h, "/v1/groups?limit=500");
    assert.equal(groups.status, 200);
    assert.deepEqual(groups.body, { groups: [], cursor: null });
  });

  test("a key kept only by a dead holder is listed for its hour, then not", async () => {
    const now = Date.now();
    await reportAll(h, SHARDS, [
      report("dead/gone", 1, { holders: 0, waiting: 0, deadUntil: now - 1 }),
      report("dead/recent", 1, { holders: 0, waiting: 0, deadUntil: now + 3_600_000 }),
    ]);
    const keys = (await listAll(h, "coordinatorList", 500)).entries.map((e) => e.key);
    assert.ok(keys.includes("dead/recent"));
    assert.ok(!keys.includes("dead/gone"));
  });

  test("a limit outside 1 to 500 and a malformed or foreign cursor are refused, naming the field", async () => {
    for (const limit of [0, 501, 1.5, "10"]) {
      const result = await h.serial("coordinatorList", { limit });
      assert.match(result.error ?? "", /^BatonError: limit /, JSON.stringify(result));
    }
    const groups = await h.serial("serialList", { limit: 0 });
    assert.match(groups.error ?? "", /^BatonError: limit /);
    for (const cursor of ["not a cursor!", "AQ", 7]) {
      const result = await h.serial("coordinatorList", { cursor });
      assert.match(result.error ?? "", /^BatonError: cursor /, JSON.stringify(result));
    }
    // A page of keys' cursor is not a cursor of groups, and back.
    const { cursor } = await listOk(h, "coordinatorList", { limit: 1 });
    assert.ok(cursor);
    const foreign = await h.serial("serialList", { cursor });
    assert.match(foreign.error ?? "", /^BatonError: cursor is not a cursor of serialList/);
    const unknown = await h.serial("coordinatorList", { page: 2 });
    assert.match(unknown.error ?? "", /^BatonError: .*page/);
  });
});

describe("the list of busy groups (D1)", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  test("groups with a holder or a waiter, in name order, over pages", async () => {
    for (let i = 0; i < 7; i++) {
      const group = `g/${i}`;
      const held = await listOk(h, "serialEnqueue", { group, instanceId: `h${i}`, revision: "r1", claim: true });
      assert.equal(held.status, "holding");
      if (i % 2 === 0) await listOk(h, "serialEnqueue", { group, instanceId: `w${i}`, revision: "r2" });
    }
    // g/6's holder leaves its waiter behind; g/7's holder leaves nobody: idle, not listed.
    await listOk(h, "serialRelease", { group: "g/6", instanceId: "h6" });
    await listOk(h, "serialEnqueue", { group: "g/7", instanceId: "h7", revision: "r1", claim: true });
    await listOk(h, "serialRelease", { group: "g/7", instanceId: "h7" });
    const { entries, sizes } = await listAll(h, "serialList", 2);
    assert.deepEqual(entries.map((g) => g.group), ["g/0", "g/1", "g/2", "g/3", "g/4", "g/5", "g/6"]);
    assert.deepEqual({ ...entries[6], oldestWaitMs: 0 }, { group: "g/6", holder: null, waiting: 1, oldestWaitMs: 0, paused: false, state: "backlogged" });
    const g0 = entries.find((g) => g.group === "g/0");
    assert.equal(g0.holder, "h0");
    assert.equal(g0.waiting, 1);
    assert.ok(g0.oldestWaitMs >= 0);
    const g1 = entries.find((g) => g.group === "g/1");
    assert.deepEqual(g1, { group: "g/1", holder: "h1", waiting: 0, oldestWaitMs: 0, paused: false, state: "at_capacity" });
    assert.ok(sizes.every((n) => n <= 2));
    // §10a: the state filter keeps exactly the groups in that state, over pages.
    const byState = (state) => entries.filter((g) => g.state === state).map((g) => g.group);
    assert.deepEqual(byState("at_capacity"), ["g/1", "g/3", "g/5"]);
    for (const state of ["at_capacity", "backlogged", "paused"]) {
      const filtered = [];
      let cursor;
      do {
        const page = await listOk(h, "serialList", { limit: 2, state, ...(cursor ? { cursor } : {}) });
        filtered.push(...page.groups.map((g) => g.group));
        cursor = page.cursor;
      } while (cursor);
      assert.deepEqual(filtered, byState(state), state);
    }
    const refused = await h.serial("serialList", { state: "stuck" });
    assert.match(refused.error, /^BatonError: state must be one of paused, stalled, backlogged, at_capacity, active, idle/);
  });
});

describe("BATON_LIST_SHARDS", () => {
  for (const value of ["0", "257", "lots"]) {
    test(`${JSON.stringify(value)} is refused when read, naming the variable`, async () => {
      const h = await startBaton({ vars: { BATON_LIST_SHARDS: value } });
      try {
        const result = await h.serial("coordinatorList", {});
        assert.match(result.error ?? "", /BATON_LIST_SHARDS must be an integer from 1 to 256/);
      } finally {
        await h.dispose();
      }
    });
  }
});

/** Polls coordinatorList (every page) until `predicate` holds for the keys it lists. */
async function untilListed(h, what, predicate) {
  return h.until(what, async () => {
    const result = await listAll(h, "coordinatorList", 500).catch(() => null);
    if (!result) return null;
    const byKey = new Map(result.entries.map((e) => [e.key, e]));
    return predicate(byKey) ? byKey : null;
  });
}

describe("the list and the history, with real Workflows", () => {
  let h;
  before(async () => {
    // A holder check every second: dead holders are found by the alarm.
    h = await startBaton({ holderCheckMs: 1000 });
  });
  after(() => h?.dispose());

  /** `holder` holding `key`, then `waiter` waiting behind it. */
  async function holderAndWaiter(key, holder, waiter) {
    await h.create(holder, { key, waitForFinish: true });
    await h.untilInspect(key, `${holder} holding`, (v) => v.holder?.id === holder);
    await h.create(waiter, { key, waitForFinish: true });
    await h.untilInspect(key, `${waiter} waiting`, (v) => v.waiting.some((w) => w.id === waiter));
  }

  test("a key enters the list with its first waiter and leaves it with its last", async () => {
    const key = "busy/enters";
    await h.create("el-solo", { key, waitForFinish: true });
    await h.untilInspect(key, "el-solo holding", (v) => v.holder?.id === "el-solo");
    assert.ok(!(await listAll(h, "coordinatorList", 500)).entries.some((e) => e.key === key), "a holder alone is not busy");
    await h.sendEvent("el-solo", "finish", {});
    await h.untilInspect(key, "the key free", (v) => v.holder === null);

    await holderAndWaiter(key, "el-h", "el-w");
    const listed = await untilListed(h, "the key listed", (keys) => keys.get(key)?.waiting === 1);
    assert.deepEqual({ ...listed.get(key), oldestWaitMs: 0 }, { key, holders: 1, waiting: 1, oldestWaitMs: 0, limit: 1, paused: false, state: "backlogged" });
    await h.sendEvent("el-h", "finish", {});
    await h.untilInspect(key, "el-w holding", (v) => v.holder?.id === "el-w");
    await untilListed(h, "the key gone from the list", (keys) => !keys.has(key));

    // The hand-off is in the history; the solo holds are only counted.
    const view = await h.inspect(key);
    assert.equal(view.recent.length, 1, JSON.stringify(view.recent));
    const [hold] = view.recent;
    assert.equal(hold.id, "el-h");
    assert.equal(hold.outcome, "released");
    assert.equal(hold.fence, 2);
    assert.ok(hold.from <= hold.to);
    assert.deepEqual(view.counts, { grants: 3, handOffs: 1, deadHolders: 0, superseded: 0, coalesced: 0, cancelled: 0 });
    await h.sendEvent("el-w", "finish", {});
    await h.untilInspect(key, "the key free", (v) => v.holder === null);
    assert.equal((await h.inspect(key)).recent.length, 1, "a hold with nobody behind it is not kept");
  });

  test("pages over more busy keys than one page", async () => {
    const keys = Array.from({ length: 5 }, (_, i) => `busy/many-${i}`);
    for (const [i, key] of keys.entries()) await holderAndWaiter(key, `many-h${i}`, `many-w${i}`);
    await untilListed(h, "every key listed", (listed) => keys.every((k) => listed.has(k)));
    const { entries, sizes } = await listAll(h, "coordinatorList", 2);
    assert.deepEqual(entries.map((e) => e.key).filter((k) => keys.includes(k)), keys);
    assert.ok(sizes.length >= 3 && sizes.every((n) => n <= 2), JSON.stringify(sizes));
    for (const [i] of keys.entries()) await h.sendEvent(`many-h${i}`, "finish", {});
    await untilListed(h, "every key gone", (listed) => keys.every((k) => !listed.has(k)));
    for (const [i] of keys.entries()) await h.sendEvent(`many-w${i}`, "finish", {});
  });

  test("a holder found dead is in recent, counted, and keeps its key listed for the hour", async () => {
    const key = "busy/dead";
    await holderAndWaiter(key, "dead-h", "dead-w");
    await h.terminate("dead-h");
    // The holder-check alarm finds it dead and hands the key on.
    const view = await h.untilInspect(key, "dead-w holding", (v) => v.holder?.id === "dead-w");
    assert.equal(view.recent[0].id, "dead-h");
    assert.equal(view.recent[0].outcome, "dead");
    assert.equal(view.recent[0].fence, 1);
    assert.equal(view.counts.deadHolders, 1);
    assert.equal(view.counts.handOffs, 1);
    await h.sendEvent("dead-w", "finish", {});
    await h.untilInspect(key, "the key free", (v) => v.holder === null);
    // Listed for the hour, with its holders as they change.
    const listed = await untilListed(h, "the key listed, free, for its dead holder", (keys) => keys.get(key)?.holders === 0);
    assert.deepEqual(listed.get(key), { key, holders: 0, waiting: 0, oldestWaitMs: 0, limit: 1, paused: false, state: "idle" });
  });
});

test("a report lost with its object is sent by the alarm after a restart", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "baton-busy-"));
  const key = "busy/lost";
  try {
    // Reports cannot reach a shard here (BATON_LIST_SHARDS refused): the
    // first waiter's report is lost, and the object then goes with its runtime.
    const first = await startBaton({ holderCheckMs: 1000, persistRoot: dir, vars: { BATON_LIST_SHARDS: "0" } });
    try {
      await first.create("lost-h", { key, waitForFinish: true });
      await first.untilInspect(key, "lost-h holding", (v) => v.holder?.id === "lost-h");
      await first.create("lost-w", { key, waitForFinish: true });
      await first.untilInspect(key, "lost-w waiting", (v) => v.waiting.some((w) => w.id === "lost-w"));
    } finally {
      await first.dispose();
    }
    const second = await startBaton({ holderCheckMs: 1000, persistRoot: dir });
    try {
      const listed = await untilListed(second, "the key listed after the restart", (keys) => keys.has(key));
      assert.equal(listed.get(key).waiting, 1);
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a listed key whose Coordinator has no waiter leaves the list when a read doubts it", async () => {
  // Every entry is doubted at once: a ghost (an entry whose unlisting report
  // was lost with its object) is asked about and dropped.
  const h = await startBaton({ vars: { BATON_LIST_SHARDS: "2", BATON_LIST_VERIFY_AFTER_MS: "1" } });
  try {
    const ghost = "busy/ghost";
    const result = await h.call("/list-shard", { shard: shardOf(ghost, 2), method: "report", args: [report(ghost, 1, { waiting: 3 })] });
    assert.equal(result.value?.applied, true, JSON.stringify(result));
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual((await listOk(h, "coordinatorList", {})).keys, [], "dropped from the page that doubted it");
    // Its Coordinator's report unlisted it in its shard too.
    const page = await h.call("/list-shard", { shard: shardOf(ghost, 2), method: "page", args: [{ limit: 10 }] });
    assert.deepEqual(page.value.keys, []);
    // A real waiter's key is confirmed by its Coordinator and stays.
    await h.create("ghost-h", { key: "busy/real", waitForFinish: true });
    await h.untilInspect("busy/real", "ghost-h holding", (v) => v.holder?.id === "ghost-h");
    await h.create("ghost-w", { key: "busy/real", waitForFinish: true });
    await untilListed(h, "the real key listed", (keys) => keys.get("busy/real")?.waiting === 1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal((await listOk(h, "coordinatorList", {})).keys[0]?.key, "busy/real");
  } finally {
    await h.dispose();
  }
});

test("BATON_LIST_VERIFY_AFTER_MS outside 1 to a day is refused when read, naming it", async () => {
  const h = await startBaton({ vars: { BATON_LIST_VERIFY_AFTER_MS: "0" } });
  try {
    const result = await h.serial("coordinatorList", {});
    assert.match(result.error ?? "", /BATON_LIST_VERIFY_AFTER_MS must be an integer from 1 to 86400000/);
  } finally {
    await h.dispose();
  }
});
