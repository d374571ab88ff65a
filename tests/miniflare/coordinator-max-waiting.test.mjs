// Contract §1f against the real Coordinator: `maxWaiting` caps a key's
// waiters. A call that would register a new waiter past the cap registers
// nothing and answers busy (the decision line says `full`); superseding
// frees room first; the key keeps the latest cap, which inspect shows; bad
// values are refused by name and change nothing.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { settled, startBaton } from "./harness.mjs";

const waiting = (view) => view.waiting.map((w) => w.id);

/**
 * `id` holds `key`: enqueued, then granted. No instance is created: an
 * enqueued id is not taken for dead within ENQUEUE_GRACE_MS (§1a), which
 * outlasts these tests, so the key stays held and its queue stands still.
 */
async function hold(h, key, id) {
  await h.ok(key, "enqueue", key, false, id);
  assert.equal(await h.ok(key, "acquire", key, id), "granted");
}

describe("§1f maxWaiting", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  test("the waiter past the cap is refused as busy and nothing is registered", async () => {
    const key = "mw-cap";
    await hold(h, key, "mw-h");
    assert.equal((await h.inspect(key)).maxWaiting, null);
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "mw-1", null, { maxWaiting: 2 }), { terminated: [] });
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "mw-2"), { terminated: [] });
    // The key keeps the cap of the latest call that named one: 2.
    const full = await h.inspect(key);
    assert.equal(full.maxWaiting, 2);
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "mw-3"), { terminated: [], busy: true });
    assert.equal(await h.ok(key, "acquire", key, "mw-4"), "busy");
    assert.deepEqual(await h.ok(key, "acquire", key, "mw-5", { grant: true }), { status: "busy" });
    const after = await h.inspect(key);
    assert.deepEqual(waiting(after), ["mw-1", "mw-2"]);
    // `waits` moves with the clock (§10a); everything else must not.
    assert.deepEqual(settled(after), settled(full), "a full call changes nothing");
    const lines = h.runtimeLines.filter((l) => l.includes('"decision":"full"'));
    for (const id of ["mw-3", "mw-4", "mw-5"]) {
      assert.ok(lines.some((l) => l.includes(`"instance":"${id}"`)), `a full line for ${id}:\n${lines.join("\n")}`);
    }
    // A waiter or the holder is no newcomer: its calls go through.
    assert.equal(await h.ok(key, "acquire", key, "mw-1"), "pending");
    // A call naming a larger cap is judged by it, and the key keeps it.
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "mw-6", null, { maxWaiting: 3 }), { terminated: [] });
    assert.equal((await h.inspect(key)).maxWaiting, 3);
  });

  test("superseding frees room first", async () => {
    const key = "mw-sup";
    await hold(h, key, "ms-h");
    await h.ok(key, "enqueue", key, false, "ms-1", null, { maxWaiting: 1 });
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "ms-2"), { terminated: [], busy: true });
    assert.deepEqual(await h.ok(key, "enqueue", key, true, "ms-3"), { terminated: ["ms-1"] });
    assert.deepEqual(waiting(await h.inspect(key)), ["ms-3"]);
  });

  test("bad values are refused by name and change nothing", async () => {
    const key = "mw-bad";
    await hold(h, key, "mb-h");
    const before = await h.inspect(key);
    for (const maxWaiting of [0, 20_001, 1.5, "3", -1]) {
      for (const call of [
        ["enqueue", key, false, "mb-w", null, { maxWaiting }],
        ["acquire", key, "mb-w", { maxWaiting }],
      ]) {
        const result = await h.rpc(key, ...call);
        assert.ok("error" in result, `${JSON.stringify(call)} should be refused`);
        assert.match(result.error, /^BatonError: .*maxWaiting/);
      }
    }
    assert.deepEqual(settled(await h.inspect(key)), settled(before));
  });
});
