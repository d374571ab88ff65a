// Decision logs (contract §9): one JSON line per decision, enough to answer
// "why is this instance waiting?" from `wrangler tail`, nothing secret in
// them, and at the default level (`BATON_LOG` unset: `contended`) nothing
// for a call that involves no other instance. Each level is read from the
// Worker's own output, for an uncontended pair and a contended hand-off
// through a real Workflow instance.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startBaton } from "./harness.mjs";

/** Decision lines printed so far, parsed. */
function decisions(h) {
  return h.runtimeLines
    .map((line) => line.slice(line.indexOf("{")))
    .filter((line) => line.includes('"baton":"decision"'))
    .map((line) => JSON.parse(line));
}

/** The decisions printed for instance `id`, as "decision" names in order. */
function linesOf(h, id) {
  return decisions(h)
    .filter((d) => d.instance === id)
    .map((d) => d.decision);
}

/**
 * An uncontended pair on a key of its own (`free-<tag>`), then a contended
 * hand-off: a real instance holds `busy-<tag>`, a waiter's acquire finds it
 * alive and waits, the holder releases to it. Returns the ids. The last
 * step is a contended decision logged at every level but `off`, and lines
 * print in order, so once it is there (or, at `off`, once the instance's
 * status shows the hand-off done) every earlier line is too.
 */
async function pairThenHandOff(h, tag) {
  const ids = { free: `free-${tag}`, holder: `hold-${tag}`, waiter: `wait-${tag}` };
  const free = `free-${tag}`;
  assert.equal(await h.ok(free, "acquire", free, ids.free), "granted");
  assert.deepEqual(await h.ok(free, "release", free, ids.free), { next: null });

  const busy = `busy-${tag}`;
  await h.create(ids.holder, { key: busy, waitForFinish: true });
  await h.untilInspect(busy, `${ids.holder} holding`, (v) => v.holder?.id === ids.holder);
  assert.equal(await h.ok(busy, "acquire", busy, ids.waiter), "pending");
  assert.deepEqual(await h.ok(busy, "release", busy, ids.holder), { next: ids.waiter });
  await h.untilInspect(busy, `${ids.waiter} handed the key`, (v) => v.holder?.id === ids.waiter);
  return ids;
}

describe("decision logs at the default level (contended)", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("an uncontended pair prints nothing; a contended hand-off prints each of its decisions", async () => {
    const ids = await pairThenHandOff(h, "c");
    await h.until("the hand-off's lines", () => linesOf(h, ids.holder).includes("released"));
    assert.deepEqual(linesOf(h, ids.free), [], "an uncontended acquire and release print nothing");
    // The holder's own grant was uncontended when it came.
    assert.deepEqual(linesOf(h, ids.holder), ["released"]);
    assert.deepEqual(linesOf(h, ids.waiter).slice(0, 1), ["pending"]);
    const pending = decisions(h).find((d) => d.instance === ids.waiter && d.decision === "pending");
    assert.equal(pending.key, "busy-c");
    assert.match(pending.reason, new RegExp(ids.holder));
    assert.equal(typeof pending.waitedMs, "number");
    const released = decisions(h).find((d) => d.instance === ids.holder && d.decision === "released");
    assert.match(released.reason, new RegExp(`handed the key to ${ids.waiter}`));
  });

  test("serial-queue decisions are logged by group, a claim that holds at once not at all", async () => {
    const group = "log-group";
    await h.serial("serialEnqueue", { group, instanceId: "sq-a", revision: "r1" });
    await h.serial("serialClaim", { group, instanceId: "sq-a" });
    await h.serial("serialEnqueue", { group, instanceId: "sq-b", revision: "r2" });
    await h.serial("serialEnqueue", { group, instanceId: "sq-c", revision: "r3" });
    await h.serial("serialClaim", { group, instanceId: "sq-b" });
    const skipped = await h.until("sq-b's skip", () =>
      decisions(h).find((d) => d.group === group && d.instance === "sq-b" && d.decision === "skipped"),
    );
    assert.match(skipped.reason, /sq-c/);
    assert.deepEqual(linesOf(h, "sq-a"), [], "sq-a's enqueue and claim were uncontended");
  });

  test("a group's pause and resume print a line each, naming no instance and not the reason (contract §11)", async () => {
    const group = "log-paused";
    await h.serial("serialPause", { group, reason: "reason-that-must-not-appear" });
    await h.serial("serialPause", { group, reason: "reason-that-must-not-appear" });
    await h.serial("serialResume", { group });
    const lines = await h.until("the resume's line", () => {
      const ours = decisions(h).filter((d) => d.group === group);
      return ours.some((d) => d.decision === "resumed") ? ours : null;
    });
    assert.deepEqual(
      lines.map((d) => [d.decision, d.reason, "instance" in d]),
      [
        ["paused", "paused by an operator: no claim succeeds and nobody is handed the group until resume", false],
        ["paused", "paused again: the reason replaced", false],
        ["resumed", "resumed: nobody waits for a free group", false],
      ],
    );
    for (const line of h.runtimeLines) {
      assert.ok(!line.includes("reason-that-must-not-appear"), line);
    }
  });

  test("a rate denial prints its counts; a decision whose write fails prints no line", async () => {
    const bucket = "log-rate";
    const rules = [{ id: "r", limit: 1, windowMs: 3_600_000 }];
    const rateLines = () => decisions(h).filter((d) => d.bucket === bucket);
    assert.equal((await h.rateOk(bucket, "acquire", bucket, { rules })).granted, 1);
    await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 3_600_000 });
    assert.equal((await h.rateOk(bucket, "acquire", bucket, { rules })).granted, 0);
    const denied = await h.until("the denial's line", () => rateLines()[0]);
    assert.deepEqual([denied.instance, denied.decision], ["-", "denied"]);
    assert.match(denied.reason, /^0 of 1 permit\(s\); retry in \d+ ms$/);

    // A denial that writes (a new limit for `r`), its first write failing
    // (the fault injector's): the object traps and restarts before it
    // prints, so no line tells of a decision that was not committed.
    const raised = { rules: [{ ...rules[0], limit: 2 }] };
    await h.faults({ sqlFails: [{ object: "RateLimiter", times: 1 }] });
    const failed = await h.rate(bucket, "acquire", bucket, raised);
    assert.ok("error" in failed, JSON.stringify(failed));
    assert.deepEqual((await h.faults({})).injected, { "sqlWrite RateLimiter": 1 });
    // The same call, committed: its line is the next one (lines print in order).
    assert.equal((await h.rateOk(bucket, "acquire", bucket, raised)).granted, 0);
    const lines = await h.until("the committed denial's line", () => (rateLines().length >= 2 ? rateLines() : null));
    assert.deepEqual(lines.map((d) => d.decision), ["denied", "denied"]);
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.deepEqual(view.rules.map((r) => [r.id, r.limit, r.used]), [["r", 2, 1]]);
  });

  test("lines carry no event payloads or input hashes", async () => {
    const key = "log-secret";
    // A superseding enqueue is contended, so it prints.
    await h.ok(key, "enqueue", key, true, "sec-a", "hash-that-must-not-appear");
    await h.ok(key, "enqueue", key, true, "sec-b", "hash-that-must-not-appear");
    await h.until("the enqueue's line", () => decisions(h).find((d) => d.instance === "sec-b"));
    for (const line of h.runtimeLines) {
      assert.ok(!line.includes("hash-that-must-not-appear"), line);
    }
  });
});

describe("decision logs with BATON_LOG=all", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000, vars: { BATON_LOG: "all" } });
  });
  after(() => h?.dispose());

  test("every decision prints, the uncontended pair's too", async () => {
    const ids = await pairThenHandOff(h, "a");
    await h.until("the hand-off's lines", () => linesOf(h, ids.holder).includes("released"));
    assert.deepEqual(linesOf(h, ids.free), ["granted", "released"]);
    assert.deepEqual(linesOf(h, ids.holder).slice(0, 1), ["granted"], "the holder's uncontended grant");
    assert.ok(linesOf(h, ids.holder).includes("released"));
    assert.deepEqual(linesOf(h, ids.waiter).slice(0, 1), ["pending"]);
  });

  test("a rate grant prints its counts", async () => {
    const bucket = "log-rate-all";
    const rules = [{ id: "r", limit: 5, windowMs: 3_600_000 }];
    assert.equal((await h.rateOk(bucket, "acquire", bucket, { rules, permits: 2 })).granted, 2);
    const line = await h.until("the grant's line", () => decisions(h).find((d) => d.bucket === bucket));
    assert.deepEqual([line.instance, line.decision, line.reason], ["-", "granted", "2 of 2 permit(s); retry in 0 ms"]);
  });
});

describe("decision logs with BATON_LOG=off", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000, vars: { BATON_LOG: "off" } });
  });
  after(() => h?.dispose());

  test("no decision prints, contended or not", async () => {
    const ids = await pairThenHandOff(h, "o");
    // The waiter holds the key (checked above), so every decision of the
    // hand-off has been made; a last contended one, then the check.
    const key = "log-off";
    await h.ok(key, "enqueue", key, true, "off-a");
    await h.ok(key, "enqueue", key, true, "off-b");
    // An operator's pause and resume (§11) print nothing at `off` either.
    assert.ok("value" in (await h.serial("serialPause", { group: "log-off" })));
    assert.ok("value" in (await h.serial("serialResume", { group: "log-off" })));
    assert.deepEqual(decisions(h), []);
    assert.ok(ids.waiter);
  });
});

describe("a BATON_LOG the Worker does not know", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000, vars: { BATON_LOG: "verbose" } });
  });
  after(() => h?.dispose());

  test("is reported naming the variable, and the default level is kept", async () => {
    const ids = await pairThenHandOff(h, "v");
    await h.until("the hand-off's lines", () => linesOf(h, ids.holder).includes("released"));
    assert.deepEqual(linesOf(h, ids.free), []);
    assert.ok(
      h.runtimeLines.some((line) => line.includes('BATON_LOG must be "contended", "all" or "off" (got "verbose")')),
      "the operator is told which variable is wrong",
    );
  });
});
