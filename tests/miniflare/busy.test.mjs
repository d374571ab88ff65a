// What is busy (contract §10) in miniflare: the list shards (the BusyList
// Durable Object), the merged read across them (`coordinatorList`), the
// groups from D1 (`serialList`), and their refusals.
// No assertion is about timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
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
    assert.deepEqual({ ...first, oldestWaitMs: undefined }, { key: keys[0], holders: 1, waiting: 1, limit: 1, oldestWaitMs: undefined });
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
    assert.deepEqual({ ...entries[6], oldestWaitMs: 0 }, { group: "g/6", holder: null, waiting: 1, oldestWaitMs: 0 });
    const g0 = entries.find((g) => g.group === "g/0");
    assert.equal(g0.holder, "h0");
    assert.equal(g0.waiting, 1);
    assert.ok(g0.oldestWaitMs >= 0);
    const g1 = entries.find((g) => g.group === "g/1");
    assert.deepEqual(g1, { group: "g/1", holder: "h1", waiting: 0, oldestWaitMs: 0 });
    assert.ok(sizes.every((n) => n <= 2));
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
