// Pausing and resuming a serial group (contract §11) against real Workflow
// instances and D1: TestWorkflow's `runSerial` mode runs a body through
// `serialize`, and the Recorder logs when each body enters. A holder taken
// by hand is a parked instance (alive, so a claim leaves it the group).
// No assertion is about timing: every wait polls for a state, and the only
// time bounds are upper bounds on those waits.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT, applyMigrations, settled, startBaton } from "./harness.mjs";

const TOKEN = "pause-token-1c4e";
/** Short enough that a waiter times out within a test, were pauses counted. */
const WAITER_TIMEOUT_MS = 3000;

async function ok(h, method, input) {
  const result = await h.serial(method, input);
  assert.ok(!("error" in result), `${method}(${JSON.stringify(input)}) failed: ${result.error}`);
  return result.value;
}

/** A group as serialInspect answers it, without what time alone changes (`settled`). */
const inspect = async (h, group) => settled(await ok(h, "serialInspect", { group }));
const waitingIds = (view) => view.waiting.map((w) => w.instanceId);
const serial = (group, revision, extra = {}) => ({ mode: "serial", group, revision, ...extra });
const stepOutputs = async (h, id) => (await h.details(id)).__LOCAL_DEV_STEP_OUTPUTS ?? [];

/** The group's entry in serialList, if it is listed. */
async function listed(h, group) {
  const { groups } = await ok(h, "serialList", { limit: 500 });
  return groups.find((g) => g.group === group);
}

/** Makes `id` the group's holder by hand: a parked (live) instance, enqueued and claimed. */
async function holdDirectly(h, group, id, revision = "r0") {
  await h.create(id, { mode: "park" });
  await ok(h, "serialEnqueue", { group, instanceId: id, revision });
  assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: id }), { status: "holding" });
}

/** How many of `id`'s claims (or claims on enqueue) answered `waiting`. */
async function waitingClaims(h, id) {
  return (await stepOutputs(h, id)).filter((o) => o?.status === "waiting").length;
}

/** One request to Baton's HTTP API; returns { status, body }. */
async function http(h, route, body, token = TOKEN) {
  const headers = { "content-type": "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const response = await h.fetchBaton(route, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

describe("a paused serial group", () => {
  let h;
  before(async () => {
    h = await startBaton({ vars: { BATON_TOKEN: TOKEN, SERIAL_WAITER_TIMEOUT_MS: String(WAITER_TIMEOUT_MS) } });
  });
  after(() => h?.dispose());

  test("a release hands on nothing, no claim succeeds, superseding goes on; resume hands the group to the newest waiter", async () => {
    const group = "paused-deploys";
    await h.create("p-A", serial(group, "r1", { waitForFinish: true }));
    const held = await h.until("p-A holding", async () => (await inspect(h, group)).holder?.instanceId === "p-A");
    assert.ok(held);
    const fenceA = (await stepOutputs(h, "p-A")).find((o) => o && "lease" in o).lease.fence;

    const paused = await ok(h, "serialPause", { group, reason: "incident 7" });
    assert.deepEqual(Object.keys(paused.paused).sort(), ["reason", "since"]);
    assert.equal(paused.paused.reason, "incident 7");
    // Pausing again keeps the first since and takes the new reason.
    const again = await ok(h, "serialPause", { group, reason: "incident 7, still" });
    assert.deepEqual(again, { paused: { since: paused.paused.since, reason: "incident 7, still" } });

    // Two arrivals while paused: the newer supersedes the older, as usual.
    await h.create("p-B", serial(group, "r2"));
    await h.until("p-B waiting", async () => waitingIds(await inspect(h, group)).includes("p-B"));
    await h.create("p-C", serial(group, "r3"));
    const outputB = await h.output("p-B", 30_000);
    assert.equal(outputB.error, "RunSkipped", JSON.stringify(outputB));

    // The holder finishes: its release frees the group and hands it to nobody.
    await h.sendEvent("p-A", "finish", {});
    assert.deepEqual(await h.output("p-A", 30_000), { ran: true, value: "deployed" });
    let view = await inspect(h, group);
    assert.equal(view.holder, null);
    assert.deepEqual(waitingIds(view), ["p-C"]);
    assert.deepEqual(view.paused, again.paused);
    const entry = await listed(h, group);
    assert.deepEqual({ ...entry, oldestWaitMs: 0 }, { group, holder: null, waiting: 1, oldestWaitMs: 0, paused: true, state: "paused" });

    // No claim succeeds: p-C's own claim, and a claim on enqueue, wait behind nobody.
    const claim = await ok(h, "serialClaim", { group, instanceId: "p-C" });
    assert.equal(claim.status, "waiting");
    assert.equal(claim.holder, null);
    const onEnqueue = await ok(h, "serialEnqueue", { group, instanceId: "p-direct", revision: "r3", current: "r3", claim: true });
    assert.deepEqual(onEnqueue, { status: "waiting", superseded: [], holder: null });
    assert.deepEqual(await ok(h, "serialRelease", { group, instanceId: "p-direct" }), { next: null });
    assert.deepEqual(await h.logOf(["p-A", "p-B", "p-C"]), ["enter p-A", "exit p-A"]);

    // Resume hands the group to p-C, the newest waiter, by its turn, with the next fence.
    assert.deepEqual(await ok(h, "serialResume", { group }), { granted: "p-C" });
    assert.deepEqual(await h.output("p-C", 30_000), { ran: true, value: "deployed" });
    const fenceC = (await stepOutputs(h, "p-C")).find((o) => o && "lease" in o).lease.fence;
    assert.equal(fenceC, fenceA + 1);
    assert.deepEqual(await h.logOf(["p-A", "p-B", "p-C"]), ["enter p-A", "exit p-A", "enter p-C", "exit p-C"]);
    view = await inspect(h, group);
    assert.equal(view.paused, null);
    // Resuming a group that is not paused hands nothing on.
    assert.deepEqual(await ok(h, "serialResume", { group }), { granted: null });
  });

  test("a waiter that waited through a pause longer than its timeout is not timed out", async () => {
    const group = "paused-timeout";
    await holdDirectly(h, group, "t-H");
    await ok(h, "serialPause", { group });
    await h.create("t-W", serial(group, "r1", { options: { pollInterval: 300 } }));
    // Past its timeout since it enqueued, behind a live holder, it keeps claiming.
    const enqueuedAt = await h.until("t-W waiting", async () => (await inspect(h, group)).waiting[0]?.enqueuedAt);
    await h.until("t-W's timeout to pass", async () => Date.now() > enqueuedAt + WAITER_TIMEOUT_MS + 500);
    const claimsBefore = await waitingClaims(h, "t-W");
    await h.until("t-W to claim twice more", async () => (await waitingClaims(h, "t-W")) >= claimsBefore + 2, 30_000);
    let view = await inspect(h, group);
    assert.deepEqual(waitingIds(view), ["t-W"]);
    assert.deepEqual(view.recent.filter((r) => r.instanceId === "t-W"), []);
    assert.equal(await h.status("t-W"), "running");

    // Resumed, the group is still held: nobody is handed it; the holder's
    // release hands it to t-W, whose timeout runs from the resume.
    assert.deepEqual(await ok(h, "serialResume", { group }), { granted: null });
    // Its next claim, behind the live holder, still waits: counted from the
    // resume, its time is not up.
    const claimsResumed = await waitingClaims(h, "t-W");
    await h.until("t-W to claim after the resume", async () => (await waitingClaims(h, "t-W")) > claimsResumed, 30_000);
    assert.deepEqual(waitingIds(await inspect(h, group)), ["t-W"]);
    assert.deepEqual(await ok(h, "serialRelease", { group, instanceId: "t-H" }), { next: "t-W" });
    assert.deepEqual(await h.output("t-W", 30_000), { ran: true, value: "deployed" });
    view = await inspect(h, group);
    assert.equal(view.recent.find((r) => r.instanceId === "t-W").outcome, "released");
    await h.sendEvent("t-H", "finish", {});
  });

  test("bad input for every field and route is refused by name and changes nothing", async () => {
    const group = "paused-refusals";
    await holdDirectly(h, group, "r-H");
    await ok(h, "serialEnqueue", { group, instanceId: "r-W", revision: "r0" });
    const before = await inspect(h, group);
    const tooLong = "é".repeat(257); // 514 UTF-8 bytes
    const rpc = [
      ["serialPause", {}, "group"],
      ["serialPause", { group: "" }, "group"],
      ["serialPause", { group: 7 }, "group"],
      ["serialPause", { group, reason: 5 }, "reason"],
      ["serialPause", { group, reason: tooLong }, "reason"],
      ["serialPause", { group, reason: "x", until: 1 }, "input"],
      ["serialResume", {}, "group"],
      ["serialResume", { group: null }, "group"],
      ["serialResume", { group, reason: "x" }, "input"],
    ];
    for (const [method, input, field] of rpc) {
      const result = await h.serial(method, input);
      assert.match(String(result.error), new RegExp(`BatonError: ${field}\\b`), `${method}(${JSON.stringify(input).slice(0, 60)})`);
    }
    const base = `/v1/groups/${group}`;
    const routes = [
      [`${base}/pause`, { reason: 5 }, 400, "reason"],
      [`${base}/pause`, { reason: tooLong }, 400, "reason"],
      [`${base}/pause`, { group: "other" }, 400, "body"],
      [`${base}/pause`, { reason: "x", until: 1 }, 400, "body"],
      [`${base}/resume`, { reason: "x" }, 400, "body"],
      [`/v1/groups/${"g".repeat(513)}/pause`, {}, 400, "group"],
    ];
    for (const [route, body, status, field] of routes) {
      const reply = await http(h, route, body);
      assert.equal(reply.status, status, `${route} ${JSON.stringify(body).slice(0, 60)}: ${JSON.stringify(reply.body)}`);
      assert.match(reply.body.error, new RegExp(`BatonError: ${field}\\b`), route);
    }
    for (const route of [`${base}/pause`, `${base}/resume`]) {
      assert.equal((await http(h, route, {}, null)).status, 401, route);
    }
    assert.deepEqual(await inspect(h, group), before, "refused requests changed the group");
    assert.equal((await listed(h, group)).paused, false);

    // The bound itself is accepted: 512 bytes, over HTTP as over RPC.
    const longest = "é".repeat(256);
    const reply = await http(h, `${base}/pause`, { reason: longest });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.paused.reason, longest);
    assert.deepEqual((await inspect(h, group)).paused, reply.body.paused);
    assert.deepEqual((await http(h, `${base}/resume`, {})).body, { granted: null });
    await ok(h, "serialRelease", { group, instanceId: "r-W" });
    await ok(h, "serialRelease", { group, instanceId: "r-H" });
    await h.sendEvent("r-H", "finish", {});
  });
});

describe("a paused group across a restart and an upgrade", () => {
  test("the pause survives a restart; resume then hands the group on", async () => {
    const persistRoot = mkdtempSync(path.join(tmpdir(), "baton-serial-pause-"));
    try {
      const group = "restarted";
      let h = await startBaton({ persistRoot });
      let paused;
      try {
        paused = await ok(h, "serialPause", { group, reason: "freeze" });
        await ok(h, "serialEnqueue", { group, instanceId: "rs-W", revision: "r1" });
      } finally {
        await h.dispose();
      }
      h = await startBaton({ persistRoot });
      try {
        const view = await inspect(h, group);
        assert.deepEqual(view.paused, paused.paused);
        assert.deepEqual(waitingIds(view), ["rs-W"]);
        assert.equal((await listed(h, group)).paused, true);
        assert.deepEqual(await ok(h, "serialClaim", { group, instanceId: "rs-W" }), { status: "waiting", holder: null });
        assert.deepEqual(await ok(h, "serialResume", { group }), { granted: "rs-W" });
        assert.equal((await inspect(h, group)).paused, null);
      } finally {
        await h.dispose();
      }
    } finally {
      rmSync(persistRoot, { recursive: true, force: true });
    }
  });

  test("a database made by migrations 0001 to 0003 migrates, and its rows work with pauses", async () => {
    const older = mkdtempSync(path.join(tmpdir(), "baton-migrations-"));
    try {
      for (const file of ["0001_serial_queue.sql", "0002_serial_grant.sql", "0003_serial_list.sql"]) {
        copyFileSync(path.join(ROOT, "migrations", file), path.join(older, file));
      }
      const h = await startBaton({ migrations: older });
      try {
        // Live instances (parked), so that no status check finds them dead.
        await h.create("old-H", { mode: "park" });
        await h.create("old-W", { mode: "park" });
        const db = await h.mf.getD1Database("DB", "baton");
        const now = Date.now();
        // As the release before §11 wrote them: a holder with its fence, a waiter with grant.
        await db
          .prepare(
            "INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at, heartbeat_at, fence) VALUES ('old', 'old-H', 'r1', 'holding', ?1, ?1, 4)",
          )
          .bind(now)
          .run();
        await db
          .prepare("INSERT INTO serial_queue (group_name, instance_id, revision, state, enqueued_at, turn_prefix) VALUES ('old', 'old-W', 'r1', 'waiting', ?1, 'baton-turn')")
          .bind(now)
          .run();
        // What `wrangler d1 migrations apply` does on upgrade: only the new file.
        await applyMigrations(db);
        const applied = (await db.prepare("SELECT name FROM d1_migrations ORDER BY id").all()).results.map((r) => r.name);
        assert.deepEqual(applied, ["0001_serial_queue.sql", "0002_serial_grant.sql", "0003_serial_list.sql", "0004_serial_pause.sql"]);

        let view = await inspect(h, "old");
        assert.equal(view.paused, null);
        assert.equal(view.holder.instanceId, "old-H");
        assert.equal((await ok(h, "serialClaim", { group: "old", instanceId: "old-W" })).status, "waiting");
        await ok(h, "serialPause", { group: "old" });
        assert.deepEqual(await ok(h, "serialRelease", { group: "old", instanceId: "old-H" }), { next: null });
        assert.deepEqual(await ok(h, "serialResume", { group: "old" }), { granted: "old-W" });
        view = await inspect(h, "old");
        assert.equal(view.holder.instanceId, "old-W");
        await h.sendEvent("old-H", "finish", {});
        await h.sendEvent("old-W", "finish", {});
      } finally {
        await h.dispose();
      }
    } finally {
      rmSync(older, { recursive: true, force: true });
    }
  });
});
