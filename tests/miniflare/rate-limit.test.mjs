// The RateLimiter Durable Object (contract §5, §7) in miniflare: direct RPC
// on the bucket's stub, the service binding's rate* methods, real Workflows
// through withRateLimit, the PermitPool, and a restart on persisted storage.
//
// No assertion depends on the clock's pace: windows are an hour long, so
// nothing frees while a test runs, and every exact count follows from the
// calls alone; the rest are relationships that hold whatever the clock does.
// The exact window arithmetic is the core's, checked by brute force in
// tests/rate_limit_props.rs.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startBaton } from "./harness.mjs";

const HOUR = 3_600_000;
const rule = (id, limit, windowMs = HOUR) => ({ id, limit, windowMs });

/** An inspection without what moves with the clock: a free rule's
 * `nextFreeAt` (it is "now") and the cooldown (it ends by itself). */
function stable(view) {
  const { cooldownUntil, ...rest } = view;
  return {
    ...rest,
    rules: view.rules.map(({ nextFreeAt, ...r }) => (r.used < r.limit ? r : { ...r, nextFreeAt })),
  };
}

describe("RateLimiter", () => {
  let h;
  before(async () => {
    h = await startBaton();
  });
  after(() => h?.dispose());

  test("many concurrent callers on a two-rule bucket get exactly what the tighter rule allows", async () => {
    const bucket = "two-rules";
    // 5 per 10 minutes and 8 per hour: the first binds.
    const rules = [rule("ten-minutes", 5, 600_000), rule("hour", 8)];
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => h.rateOk(bucket, "acquire", bucket, { rules })),
    );
    const granted = replies.reduce((sum, r) => sum + r.granted, 0);
    assert.equal(granted, 5, JSON.stringify(replies));
    for (const r of replies) {
      if (r.granted > 0) assert.equal(r.waitMs, 0);
      // Refused until the first grant leaves the 10-minute window.
      else assert.ok(r.waitMs > 0 && r.waitMs <= 600_000, JSON.stringify(r));
    }
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.equal(view.bucket, bucket);
    assert.equal(view.cooldownUntil, null);
    assert.deepEqual(
      view.rules.map((r) => [r.id, r.limit, r.windowMs, r.used]),
      [["ten-minutes", 5, 600_000, 5], ["hour", 8, HOUR, 5]],
    );
    const [tight, loose] = view.rules;
    assert.ok(tight.nextFreeAt > Date.now() - 1000, "the tight rule is full");
    assert.ok(loose.nextFreeAt <= Date.now(), "the loose rule still has permits");
  });

  test("waitMs says when the next permit frees: the call's time plus waitMs is the rule's nextFreeAt", async () => {
    const bucket = "wait";
    const rules = [rule("r", 2, 600_000)];
    assert.deepEqual(await h.rateOk(bucket, "acquire", bucket, { rules, permits: 2 }), { granted: 2, waitMs: 0 });
    const sent = Date.now();
    const refused = await h.rateOk(bucket, "acquire", bucket, { rules });
    const answered = Date.now();
    assert.equal(refused.granted, 0);
    const { nextFreeAt } = (await h.rateOk(bucket, "inspect", bucket)).rules[0];
    // The object decided at some instant between sending and answering.
    assert.ok(sent + refused.waitMs <= nextFreeAt && nextFreeAt <= answered + refused.waitMs,
      `${sent} + ${refused.waitMs} .. ${answered} + ${refused.waitMs} vs ${nextFreeAt}`);
  });

  test("blocks: all or part of a block is granted, never more than the window holds", async () => {
    const bucket = "blocks";
    const rules = [rule("r", 25)];
    const sizes = [10, 10, 10, 10];
    const replies = [];
    for (const permits of sizes) replies.push(await h.rateOk(bucket, "acquire", bucket, { rules, permits }));
    assert.deepEqual(replies.map((r) => r.granted), [10, 10, 5, 0]);
    assert.ok(replies[3].waitMs > 0);
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 25);
  });

  test("penalize blocks grants until its end and is never shortened", async () => {
    const bucket = "penalty";
    const rules = [rule("r", 100)];
    const before = Date.now();
    const { until } = await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 600_000 });
    assert.ok(until >= before + 600_000 && until <= Date.now() + 600_000, `${until}`);
    const shorter = await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 1_000 });
    assert.equal(shorter.until, until, "a shorter penalty changes nothing");
    const refused = await h.rateOk(bucket, "acquire", bucket, { rules });
    assert.equal(refused.granted, 0);
    assert.ok(refused.waitMs > 590_000, `${refused.waitMs}`);
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.equal(view.cooldownUntil, until);
    const longer = await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 1_200_000 });
    assert.ok(longer.until > until);
  });

  test("refund returns permits, newest first, and never more than were granted", async () => {
    const bucket = "refund";
    const rules = [rule("r", 10)];
    await h.rateOk(bucket, "acquire", bucket, { rules, permits: 10 });
    assert.equal((await h.rateOk(bucket, "acquire", bucket, { rules })).granted, 0);
    assert.deepEqual(await h.rateOk(bucket, "refund", bucket, { permits: 4 }), { refunded: 4 });
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 6);
    assert.deepEqual(await h.rateOk(bucket, "acquire", bucket, { rules, permits: 5 }), { granted: 4, waitMs: 0 });
    assert.deepEqual(await h.rateOk(bucket, "refund", bucket, { permits: 10_000 }), { refunded: 10 });
    assert.deepEqual(await h.rateOk(bucket, "refund", bucket, { permits: 1 }), { refunded: 0 });
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 0);
  });

  test("new values for a rule id apply to the grants already made", async () => {
    const bucket = "values";
    await h.rateOk(bucket, "acquire", bucket, { rules: [rule("r", 10)], permits: 6 });
    const lowered = await h.rateOk(bucket, "acquire", bucket, { rules: [rule("r", 4)] });
    assert.equal(lowered.granted, 0);
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.deepEqual(view.rules.map((r) => [r.id, r.limit, r.used]), [["r", 4, 6]]);
  });

  test("valid variants of the common argument shape are read alike", async () => {
    // The object reads { rules, permits } of plain rules by a quicker way
    // and anything else by the general decoder: both must accept these.
    const bucket = "shapes";
    const rules = [rule("r", 10)];
    const calls = [
      [{ rules, permits: 2 }, 2],
      [{ permits: 2, rules }, 2],
      [{ rules }, 1],
      [{ rules, permits: null }, 1],
      [{ rules, permits: undefined }, 1],
      [{ rules: [{ windowMs: HOUR, limit: 10, id: "r" }] }, 1],
      [{ rules: [rule("r", 10), rule("wide", 10, 2 * HOUR)], permits: 9 }, 2],
    ];
    for (const [options, granted] of calls) {
      const reply = await h.rateOk(bucket, "acquire", bucket, options);
      assert.equal(reply.granted, granted, JSON.stringify(options));
    }
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.deepEqual(view.rules.map((r) => [r.id, r.used]), [["r", 10], ["wide", 2]]);
  });

  test("the last acquire's rules are kept by their text: the same text decides alike, a new one is decoded anew, bad ones are refused and change nothing", async () => {
    const bucket = "kept-rules";
    const options = { rules: [rule("r", 5), rule("s", 7)] };
    for (let i = 0; i < 3; i++) {
      assert.equal((await h.rateOk(bucket, "acquire", bucket, options)).granted, 1);
    }
    // Another text: its rules are decoded, their new limit in force at once.
    const raised = { rules: [rule("r", 6), rule("s", 7)], permits: 2 };
    assert.equal((await h.rateOk(bucket, "acquire", bucket, raised)).granted, 2);
    const snapshot = stable(await h.rateOk(bucket, "inspect", bucket));
    // Bad rules after good ones: refused naming the field, every time;
    // the kept text's bucket argument is still checked.
    const cases = [
      [[bucket, { rules: [rule("r", 0)] }], "limit"],
      [[bucket, { rules: [rule("r", 0)] }], "limit"],
      [[bucket, { rules: [rule("r", 6), rule("r", 6)] }], "rules"],
      [[bucket, { ...raised, bucket }], "options"],
      [["", raised], "bucket"],
    ];
    for (const [args, field] of cases) {
      const result = await h.rate(bucket, "acquire", ...args);
      assert.ok("error" in result, `${JSON.stringify(args)} should be refused`);
      assert.match(result.error, new RegExp(`^BatonError: ${field} `));
    }
    assert.deepEqual(stable(await h.rateOk(bucket, "inspect", bucket)), snapshot);
    // The kept text again, then the first one, decoded anew: its limit of 5 is back.
    assert.equal((await h.rateOk(bucket, "acquire", bucket, raised)).granted, 1);
    assert.equal((await h.rateOk(bucket, "acquire", bucket, options)).granted, 0);
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.deepEqual(view.rules.map((r) => [r.id, r.limit, r.used]), [["r", 5, 6], ["s", 7, 6]]);
  });

  test("bad input is refused naming the field and changes nothing", async () => {
    const bucket = "bad";
    const rules = [rule("r", 3)];
    await h.rateOk(bucket, "acquire", bucket, { rules, permits: 2 });
    await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 1 });
    const snapshot = stable(await h.rateOk(bucket, "inspect", bucket));
    const nine = Array.from({ length: 9 }, (_, i) => rule(`r${i}`, 1));
    const cases = [
      [["acquire", bucket, {}], "rules"],
      [["acquire", bucket, { rules: [] }], "rules"],
      [["acquire", bucket, { rules: nine }], "rules"],
      [["acquire", bucket, { rules: [rule("r", 3), rule("r", 4)] }], "rules"],
      [["acquire", bucket, { rules: [rule("r", 0)] }], "limit"],
      [["acquire", bucket, { rules: [rule("r", 100_001)] }], "limit"],
      [["acquire", bucket, { rules: [rule("r", 2.5)] }], "limit"],
      [["acquire", bucket, { rules: [rule("r", 3, 0)] }], "windowMs"],
      [["acquire", bucket, { rules: [rule("r", 3, 86_400_001)] }], "windowMs"],
      [["acquire", bucket, { rules: [{ id: "", limit: 1, windowMs: 1 }] }], "id"],
      [["acquire", bucket, { rules: [{ id: "x".repeat(65), limit: 1, windowMs: 1 }] }], "id"],
      [["acquire", bucket, { rules, permits: 0 }], "permits"],
      [["acquire", bucket, { rules, permits: 10_001 }], "permits"],
      [["acquire", bucket, { rules, burst: 1 }], "burst"],
      [["acquire", bucket, { rules: [{ ...rule("r", 3), burst: 1 }] }], "burst"],
      [["acquire", bucket, { rules, bucket: "other" }], "options"],
      // Near the common shape, which the object reads by a quicker way:
      // anything off it takes the general decode and its refusals.
      [["acquire", bucket, { rules, permits: "2" }], "permits"],
      [["acquire", bucket, { rules: { 0: rule("r", 3) } }], "rules"],
      [["acquire", bucket, { rules: [{ ...rule("r", 3), limit: "3" }] }], "limit"],
      [["acquire", bucket, { rules: [{ id: "r", limit: 3 }] }], "windowMs"],
      [["acquire", bucket, { rules: [rule("r", 3), "r"] }], "rules"],
      [["acquire", "", { rules }], "bucket"],
      // Numbers a JSON text may round (not safe integers) are read value by value.
      [["acquire", bucket, { rules, permits: 1.5 }], "permits"],
      [["acquire", bucket, { rules: [{ ...rule("r", 3), limit: 2 ** 60 }] }], "limit"],
      [["penalize", bucket, { cooldownMs: -1 }], "cooldownMs"],
      [["penalize", bucket, { cooldownMs: 86_400_001 }], "cooldownMs"],
      [["penalize", bucket, { cooldownMs: 1.5 }], "cooldownMs"],
      [["penalize", bucket, {}], "cooldownMs"],
      [["refund", bucket, { permits: 0 }], "permits"],
      [["refund", bucket, { permits: 3, rules }], "rules"],
    ];
    for (const [[method, ...args], field] of cases) {
      const result = await h.rate(bucket, method, ...args);
      assert.ok("error" in result, `${method} ${JSON.stringify(args)} should be refused`);
      assert.match(result.error, /^BatonError: /);
      assert.ok(result.error.includes(field), `${result.error} should name ${field}`);
    }
    assert.deepEqual(stable(await h.rateOk(bucket, "inspect", bucket)), snapshot);
  });

  test("the service binding's rate* methods answer what the object answers", async () => {
    const bucket = "service";
    const rules = [rule("a", 3), rule("b", 5)];
    assert.deepEqual(await h.serial("rateAcquire", { bucket, rules, permits: 4 }), {
      value: { granted: 3, waitMs: 0 },
    });
    const refused = (await h.serial("rateAcquire", { bucket, rules })).value;
    assert.equal(refused.granted, 0);
    assert.deepEqual(await h.serial("rateRefund", { bucket, permits: 1 }), { value: { refunded: 1 } });
    const { until } = (await h.serial("ratePenalize", { bucket, cooldownMs: 600_000 })).value;
    const view = (await h.serial("rateInspect", { bucket })).value;
    assert.equal(view.cooldownUntil, until);
    assert.deepEqual(view.rules.map((r) => r.used), [2, 2]);
    assert.deepEqual(stable(view), stable(await h.rateOk(bucket, "inspect", bucket)));
    const bad = await h.serial("rateAcquire", { bucket, rules, permits: 0 });
    assert.match(bad.error, /^BatonError: permits /);
    const unknown = await h.serial("rateInspect", { bucket, extra: 1 });
    assert.match(unknown.error, /^BatonError: .*extra/);
  });

  test("a permit pool leases blocks, spends them locally and refunds what it did not spend", async () => {
    const bucket = "pool";
    const rules = [rule("r", 25)];
    const first = await h.call("/rate-pool", { bucket, rules, take: 12, block: 10 });
    assert.deepEqual(first, { taken: 12, available: 8, refunded: 8, error: null });
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 12);
    // 13 left: a second pool takes them and then finds the bucket empty.
    const second = await h.call("/rate-pool", { bucket, rules, take: 20, block: 10 });
    assert.deepEqual(second, { taken: 13, available: 0, refunded: 0, error: "RateLimitTimeout" });
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 25);
  });

  test("real Workflows share a bucket through withRateLimit", async () => {
    const bucket = "workflows";
    // 6 permits an hour for 4 instances of 2 calls: 6 calls run, 2 wait
    // (in step.sleep) past the end of this test.
    const rules = [rule("r", 6)];
    const ids = ["rl-1", "rl-2", "rl-3", "rl-4"];
    for (const id of ids) await h.create(id, { mode: "rate", bucket, rules, calls: 2 });
    await h.until("6 calls spent", async () => (await h.logOf(ids)).length === 6);
    const view = await h.rateOk(bucket, "inspect", bucket);
    assert.equal(view.rules[0].used, 6);
    const statuses = await Promise.all(ids.map((id) => h.status(id)));
    const done = statuses.filter((s) => s === "complete").length;
    assert.ok(done >= 2 && done <= 3, `at most 3 instances finished their 2 calls: ${statuses}`);
    // The others sleep in step.sleep until the first grant leaves the
    // hour: alive, and without having called.
    for (const id of ids) assert.ok(["complete", "running", "waiting"].includes(await h.status(id)));
    assert.equal((await h.logOf(ids)).length, 6, "no call ran without a permit");
  });

  test("§5a: maxWaitMs throws RateLimitMaxWait at once, spending no permit", async () => {
    const bucket = "max-wait";
    const rules = [rule("r", 2)];
    // The hour's two permits go to the first instance.
    await h.create("mw-full", { mode: "rate", bucket, rules, calls: 2 });
    assert.deepEqual(await h.output("mw-full"), { spent: 2 });
    // The next permit is about an hour away: past 60 s, so the helper gives up at once.
    await h.create("mw-late", { mode: "rate", bucket, rules, maxWaitMs: 60_000 });
    const { error, spent } = await h.output("mw-late");
    assert.equal(spent, 0);
    assert.equal(error.name, "RateLimitMaxWait");
    assert.equal(error.bucket, bucket);
    assert.equal(error.maxWaitMs, 60_000);
    assert.ok(error.waitMs > 60_000, `waitMs ${error.waitMs}`);
    // 0 is "now or never"; a block of 3 whose first two are granted
    // gives them back before it throws.
    await h.create("mw-now", { mode: "rate", bucket: "max-wait-2", rules: [rule("r", 2)], permits: 3, maxWaitMs: 0 });
    assert.equal((await h.output("mw-now")).error.name, "RateLimitMaxWait");
    assert.deepEqual(await h.logOf(["mw-late", "mw-now"]), []);
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 2);
    assert.equal((await h.rateOk("max-wait-2", "inspect", "max-wait-2")).rules[0].used, 0);
    // A pool's take does the same, keeping nothing of its own call.
    const pool = await h.call("/rate-pool", { bucket, rules, take: 1, block: 1, takeOptions: { maxWaitMs: 1000 } });
    assert.match(pool.error, /^RateLimitMaxWait \d+ 1000$/);
    assert.equal(pool.taken, 0);
    assert.equal((await h.rateOk(bucket, "inspect", bucket)).rules[0].used, 2);
  });

  test("§5a: a bad maxWaitMs is refused by name before any call", async () => {
    const bucket = "max-wait-bad";
    for (const [i, maxWaitMs] of [-1, 1.5, 86_400_001, "10"].entries()) {
      await h.create(`mw-bad-${i}`, { mode: "rate", bucket, rules: [rule("r", 5)], maxWaitMs });
      const { error } = await h.output(`mw-bad-${i}`);
      assert.match(error.message, /^BatonError: maxWaitMs must be an integer from 0 to 86400000/);
      const pool = await h.call("/rate-pool", { bucket, rules: [rule("r", 5)], take: 1, block: 1, takeOptions: { maxWaitMs } });
      assert.match(pool.error, /^BatonError: maxWaitMs /);
    }
    // Nothing reached the bucket.
    assert.deepEqual((await h.rateOk(bucket, "inspect", bucket)).rules, []);
  });

  test("a refusal from Baton itself (a rule's limit) ends the instance with its message, named BatonError", async () => {
    // The rules are checked by the RateLimiter, not the helper: the refusal
    // crosses RPC as a plain Error, and js/steps.mjs rethrows it as a
    // NonRetryableError named BatonError. Under NonRetryableError's own name
    // the engine showed only "a step threw an NonRetryableError", not the
    // refusal.
    const bucket = "bad-rule";
    await h.create("bad-rule-1", { mode: "rate", bucket, rules: [rule("r", 0)] });
    await h.untilStatus("bad-rule-1", ["complete", "errored"]);
    const { status, error } = await h.details("bad-rule-1");
    assert.equal(status, "errored");
    assert.equal(error.message, "BatonError: limit must be an integer from 1 to 100000 (got 0)");
    assert.deepEqual((await h.rateOk(bucket, "inspect", bucket)).rules, []);
  });

  test("a Workflow that waits in step.sleep gets its permit when the window frees", async () => {
    const bucket = "sleeper";
    // Short window: the point is the sleep and the re-acquire, not timing.
    const rules = [rule("r", 1, 1_500)];
    await h.create("sleeper-1", { mode: "rate", bucket, rules, calls: 3 });
    assert.deepEqual(await h.output("sleeper-1"), { spent: 3 });
  });
});

describe("RateLimiter over HTTP", () => {
  const TOKEN = "rate-test-token";
  let h;
  before(async () => {
    h = await startBaton({ vars: { BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());

  async function http(method, route, body) {
    const init = { method, headers: { authorization: `Bearer ${TOKEN}` } };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await h.fetchBaton(route, init);
    return { status: response.status, body: await response.json() };
  }

  test("the bucket routes answer what RPC answers, and refuse bad input with 400", async () => {
    const route = `/v1/buckets/${encodeURIComponent("api:acme/eu")}`;
    const rules = [rule("second", 5, 600_000), rule("minute", 100)];
    assert.deepEqual(await http("POST", `${route}/acquire`, { rules, permits: 7 }), {
      status: 200,
      body: { granted: 5, waitMs: 0 },
    });
    const refused = await http("POST", `${route}/acquire`, { rules });
    assert.equal(refused.status, 200);
    assert.equal(refused.body.granted, 0);
    assert.deepEqual(await http("POST", `${route}/refund`, { permits: 2 }), { status: 200, body: { refunded: 2 } });
    const penalized = await http("POST", `${route}/penalize`, { cooldownMs: 60_000 });
    assert.equal(penalized.status, 200);
    const view = await http("GET", route);
    assert.equal(view.status, 200);
    assert.equal(view.body.bucket, "api:acme/eu");
    assert.equal(view.body.cooldownUntil, penalized.body.until);
    assert.deepEqual(view.body.rules.map((r) => [r.id, r.used]), [["second", 3], ["minute", 3]]);
    assert.deepEqual(stable(view.body), stable(await h.rateOk("api:acme/eu", "inspect", "api:acme/eu")));

    for (const [body, field] of [
      [{ rules: [] }, "rules"],
      [{ rules, permits: 0 }, "permits"],
      [{ rules, bucket: "x" }, "bucket"],
      [{ rules: [rule("r", 1, 0)] }, "windowMs"],
    ]) {
      const reply = await http("POST", `${route}/acquire`, body);
      assert.equal(reply.status, 400, JSON.stringify(reply));
      assert.match(reply.body.error, /^BatonError: /);
      assert.ok(reply.body.error.includes(field), `${reply.body.error} should name ${field}`);
    }
    assert.equal((await http("POST", `${route}/penalize`, { cooldownMs: 0 })).status, 400);
    assert.deepEqual(stable((await http("GET", route)).body), stable(view.body), "refusals changed nothing");
  });
});

describe("RateLimiter across a restart", () => {
  test("grants survive the runtime being disposed and booted again on the same storage", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "baton-rate-"));
    try {
      const bucket = "durable";
      const rules = [rule("r", 3)];
      let h = await startBaton({ persistRoot: root });
      try {
        assert.deepEqual(await h.rateOk(bucket, "acquire", bucket, { rules, permits: 3 }), { granted: 3, waitMs: 0 });
        await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 600_000 });
      } finally {
        await h.dispose();
      }
      h = await startBaton({ persistRoot: root });
      try {
        const view = await h.rateOk(bucket, "inspect", bucket);
        assert.equal(view.rules[0].used, 3, "the grants were kept");
        assert.ok(view.cooldownUntil > Date.now(), "and the penalty");
        const refused = await h.rateOk(bucket, "acquire", bucket, { rules });
        assert.equal(refused.granted, 0);
        assert.ok(refused.waitMs > 0);
      } finally {
        await h.dispose();
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
