// Contract §1b against real Workflow instances: withKey registers with
// `grant`, so every hand-off (a release, a dead holder found by acquire's
// check or by the alarm, a raised limit, a waiter not created yet) sends
// the waiter the grant itself and it runs its body with no acquire after
// the wait. Each instance started with `countSteps` reports the Baton steps
// its section took and the fence its body was given. No assertion is about
// timing; every wait polls for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startBaton } from "./harness.mjs";

/** The Baton steps of one section that waited once: acquire, the wait, release. */
const contended = (key) => [`baton acquire ${key}`, `baton turn ${key} #1`, `baton release ${key}`];
/** ... and of one that found the key free. */
const free = (key) => [`baton acquire ${key}`, `baton release ${key}`];

function untilWaiting(h, key, id) {
  return h.untilInspect(key, `${id} waiting`, (view) => view.waiting.some((w) => w.id === id));
}

function untilHolding(h, key, id) {
  return h.untilInspect(key, `${id} holding`, (view) => view.holders.some((x) => x.id === id));
}

/** The fence `inspect` shows for holder `id`. */
async function fenceOf(h, key, id) {
  const view = await h.inspect(key);
  const holder = view.holders.find((x) => x.id === id);
  assert.ok(holder, `${id} holds ${key}: ${JSON.stringify(view)}`);
  return holder.fence;
}

/** A holder that waits for "finish", and a counted waiter behind it (turn events an hour apart). */
async function holderAndWaiter(h, key) {
  const holder = `${key}-h`;
  const waiter = `${key}-w`;
  await h.create(holder, { key, waitForFinish: true, countSteps: true });
  await untilHolding(h, key, holder);
  await h.create(waiter, { key, countSteps: true, turnTimeout: "1 hour" });
  await untilWaiting(h, key, waiter);
  return { holder, waiter, fence: await fenceOf(h, key, holder) };
}

describe("§1b with real Workflows (holder-check alarm effectively off)", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("a free key costs two Baton steps, a release hands it on by grant in three", async () => {
    const key = "grant-release";
    const { holder, waiter, fence } = await holderAndWaiter(h, key);
    const view = await h.inspect(key);
    assert.equal(view.holder.fence, fence);
    await h.sendEvent(holder, "finish", {});
    const first = await h.output(holder);
    assert.deepEqual(first.batonSteps, free(key));
    assert.equal(first.fence, fence);
    const second = await h.output(waiter);
    // The wait's event was the grant: no acquire after it.
    assert.deepEqual(second.batonSteps, contended(key));
    assert.equal(second.fence, fence + 1);
    assert.deepEqual(await h.logOf([holder, waiter]), [
      `enter ${holder}`,
      `exit ${holder}`,
      `enter ${waiter}`,
      `exit ${waiter}`,
    ]);
  });

  test("a pending grant reply names its own turn and place; a repeated acquire the same", async () => {
    const key = "grant-reply";
    await h.create(`${key}-h`, { key, waitForFinish: true });
    await untilHolding(h, key, `${key}-h`);
    const a = await h.ok(key, "acquire", key, "reply-a", { grant: true });
    const b = await h.ok(key, "acquire", key, "reply-b", { grant: true });
    assert.equal(a.status, "pending");
    assert.equal(a.position, 1);
    assert.equal(b.position, 2);
    assert.match(a.turn, /^baton-turn-[0-9a-f]{16}-\d+$/);
    assert.notEqual(a.turn, b.turn);
    assert.deepEqual(await h.ok(key, "acquire", key, "reply-a", { grant: true }), a);
    // Without grant the replies stay §1's strings; an id registered without
    // grant is told the shared turn event type.
    assert.equal(await h.ok(key, "acquire", key, "reply-a"), "pending");
    await h.ok(key, "enqueue", key, false, "reply-c");
    assert.deepEqual(await h.ok(key, "acquire", key, "reply-c", { grant: true }), {
      status: "pending",
      turn: "baton-turn",
      position: 3,
      // §1c: no hold of this key has finished yet.
      etaMs: null,
    });
    // A later registration of the same instance gets another turn.
    await h.ok(key, "release", key, "reply-a");
    const again = await h.ok(key, "acquire", key, "reply-a", { grant: true });
    assert.notEqual(again.turn, a.turn);
    // So does the same instance on another key.
    const other = await h.ok("grant-reply-2", "acquire", "grant-reply-2", "reply-a", { grant: true });
    assert.deepEqual(other, { status: "granted", fence: 1 });
    for (const id of ["reply-a", "reply-b", "reply-c"]) await h.ok(key, "release", key, id);
    await h.sendEvent(`${key}-h`, "finish", {});
    await h.output(`${key}-h`);
  });

  test("a dead holder found by acquire's check hands its slot to the earliest waiter by grant", async () => {
    const key = "grant-dead";
    const { holder, waiter, fence } = await holderAndWaiter(h, key);
    await h.terminate(holder);
    await h.untilStatus(holder, "terminated");
    // A newcomer's acquire checks the holder: dead, so the slot goes to
    // the waiter ahead of it, which is sent the grant.
    const probe = await h.ok(key, "acquire", key, "dead-probe", { grant: true });
    assert.equal(probe.status, "pending");
    const second = await h.output(waiter);
    assert.deepEqual(second.batonSteps, contended(key));
    assert.equal(second.fence, fence + 1);
    await h.untilInspect(key, "the probe handed the key", (v) => v.holder?.id === "dead-probe");
    assert.equal(await fenceOf(h, key, "dead-probe"), fence + 2);
    await h.ok(key, "release", key, "dead-probe");
  });

  test("a raised limit hands the free slot by grant to the waiter ahead of the caller", async () => {
    const key = "grant-limit";
    const { holder, waiter, fence } = await holderAndWaiter(h, key);
    const raiser = await h.ok(key, "acquire", key, "limit-raiser", { grant: true, limit: 2 });
    assert.equal(raiser.status, "pending", JSON.stringify(raiser));
    const second = await h.output(waiter);
    assert.deepEqual(second.batonSteps, contended(key));
    assert.equal(second.fence, fence + 1);
    await h.sendEvent(holder, "finish", {});
    await h.output(holder);
    await h.untilInspect(key, "the raiser handed a slot", (v) => v.holders.some((x) => x.id === "limit-raiser"));
    assert.equal(await fenceOf(h, key, "limit-raiser"), fence + 2);
    assert.deepEqual(await h.ok(key, "acquire", key, "limit-raiser", { grant: true }), {
      status: "granted",
      fence: fence + 2,
    });
    await h.ok(key, "release", key, "limit-raiser");
  });

  test("a waiter not created yet is handed the slot within its grace, and its first acquire is granted", async () => {
    const key = "grant-late";
    await h.create(`${key}-h`, { key, waitForFinish: true });
    await untilHolding(h, key, `${key}-h`);
    const fence = await fenceOf(h, key, `${key}-h`);
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "late-w", undefined, { grant: true }), {
      terminated: [],
    });
    await h.sendEvent(`${key}-h`, "finish", {});
    await h.output(`${key}-h`);
    await h.untilInspect(key, "late-w handed the key", (v) => v.holder?.id === "late-w");
    assert.equal(await fenceOf(h, key, "late-w"), fence + 1);
    await h.create("late-w", { key, countSteps: true });
    const late = await h.output("late-w");
    assert.deepEqual(late.batonSteps, free(key));
    assert.equal(late.fence, fence + 1);
  });

  test("bad grant options are refused by name and change nothing", async () => {
    const key = "grant-bad";
    for (const grant of ["yes", 1, null, {}]) {
      if (grant === null) continue; // null is "absent", as for every option
      const acquired = await h.rpc(key, "acquire", key, "bad-a", { grant });
      assert.match(acquired.error ?? "", /^BatonError: grant must be a boolean/, JSON.stringify(acquired));
      const enqueued = await h.rpc(key, "enqueue", key, false, "bad-e", undefined, { grant });
      assert.match(enqueued.error ?? "", /^BatonError: grant must be a boolean/, JSON.stringify(enqueued));
    }
    const view = await h.inspect(key);
    assert.equal(view.holder, null);
    assert.deepEqual(view.waiting, []);
    // Through the service binding (§7) the refusal is the same.
    const viaService = await h.serial("coordinatorAcquire", { key, instanceId: "bad-a", options: { grant: "yes" } });
    assert.match(viaService.error ?? "", /^BatonError: grant must be a boolean/);
    // And a good one answers the object form there too.
    assert.deepEqual(
      (await h.serial("coordinatorAcquire", { key, instanceId: "svc", options: { grant: true } })).value,
      { status: "granted", fence: 1 },
    );
    await h.serial("coordinatorRelease", { key, instanceId: "svc" });
  });
});

describe("§1b: the holder-check alarm hands a dead holder's slot by grant", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 1000 });
  });
  after(() => h?.dispose());

  test("a terminated holder's slot goes to the waiter with no acquire from anyone", async () => {
    const key = "grant-alarm";
    const { holder, waiter, fence } = await holderAndWaiter(h, key);
    await h.terminate(holder);
    const second = await h.output(waiter);
    assert.deepEqual(second.batonSteps, contended(key));
    assert.equal(second.fence, fence + 1);
  });
});

test("fences continue across a restart of the runtime with its storage", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "baton-grant-"));
  const key = "grant-restart";
  try {
    const first = await startBaton({ holderCheckMs: 3_600_000, persistRoot: dir });
    let before;
    try {
      await first.create("restart-a", { key, countSteps: true });
      await first.create("restart-b", { key, countSteps: true });
      const fences = [(await first.output("restart-a")).fence, (await first.output("restart-b")).fence];
      before = Math.max(...fences);
      assert.deepEqual(fences.sort(), [1, 2]);
    } finally {
      await first.dispose();
    }
    // Instances parked across a restart do not resume locally: new ones do.
    const second = await startBaton({ holderCheckMs: 3_600_000, persistRoot: dir });
    try {
      await second.create("restart-c", { key, countSteps: true });
      assert.equal((await second.output("restart-c")).fence, before + 1);
    } finally {
      await second.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
