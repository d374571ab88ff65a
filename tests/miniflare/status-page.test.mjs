// The status page (static/) in Debian's headless Chromium, served by the real
// Baton Worker on a real port and reading its authenticated API, while real
// Workflow instances hold and wait on a key and a serial-queue group.
// `bash scripts/chromium.sh` installs the browser (scripts/test.sh runs it).
// No assertion is about timing: every wait polls the page for a state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { startBaton, ROOT } from "./harness.mjs";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "status-page-test-token";
const OUT = path.join(ROOT, "tests/miniflare/.out");

/** Polls `probe(page)` until it returns a truthy value; fails naming the last value seen. */
async function untilPage(page, what, probe, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe(page);
    if (last) return last;
    if (Date.now() > deadline) {
      const shown = await page.locator("main").innerText();
      throw new Error(`timed out waiting for the page to show ${what}; the page shows:\n${shown}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A table's body rows as the visible text of each cell (hidden columns left out). */
function rows(page, table) {
  return page.$$eval(`${table} tbody tr`, (trs) =>
    trs.map((tr) => [...tr.cells].filter((c) => c.checkVisibility()).map((c) => c.innerText.trim())),
  );
}

const text = (page, selector) => page.locator(selector).innerText();

/** Types the token and a key or group into the page and starts watching it. */
async function watch(page, kind, name) {
  await page.fill("#token", TOKEN);
  await page.selectOption("#kind", kind);
  await page.fill("#name", name);
  await page.click("#watch-form button[type=submit]");
}

const serial = (group, revision, extra = {}) => ({ mode: "serial", group, revision, ...extra });

describe("status page in headless Chromium", () => {
  let h;
  let context;
  let page;
  let userData;
  const pageErrors = [];

  before(async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `${CHROMIUM} is missing: run \`bash scripts/chromium.sh\` (Debian's chromium package)`,
    );
    // An hour between holder checks: the key's holder changes only when it releases.
    h = await startBaton({
      holderCheckMs: 3_600_000,
      listen: true,
      // ECHO: what the debounce key's starts are created through.
      vars: { BATON_TOKEN: TOKEN, WORKFLOW_BINDINGS: "WORKFLOW,ECHO" },
    });
    // A fresh profile each run: no cookies, storage or cache from an earlier one.
    userData = mkdtempSync(path.join(os.tmpdir(), "baton-chromium-"));
    context = await chromium.launchPersistentContext(userData, {
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1100, height: 800 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await page.goto(await h.batonUrl());
    mkdirSync(OUT, { recursive: true });
  });

  after(async () => {
    await context?.close();
    await h?.dispose();
    if (userData) rmSync(userData, { recursive: true, force: true });
  });

  test("a key: holder, then waiters in order, updating live as the key is handed on", async (t) => {
    // A "/" and a space: the page must send the key as one encoded path segment.
    const key = "page/key one";
    await h.create("page-h", { key, waitForFinish: true });
    await h.untilInspect(key, "page-h holding", (view) => view.holder?.id === "page-h");
    for (const id of ["page-w1", "page-w2"]) {
      await h.create(id, { key, waitForFinish: true });
      await h.untilInspect(key, `${id} waiting`, (view) => view.waiting.some((w) => w.id === id));
    }

    // A wrong token first: the page says so in words, not a bare status.
    await page.fill("#token", "not-the-token");
    await page.selectOption("#kind", "key");
    await page.fill("#name", key);
    await page.click("#watch-form button[type=submit]");
    await untilPage(page, "the token rejected", async (p) => (await text(p, "#error")).includes("Token rejected"));
    assert.equal(await page.isVisible("#view"), false, "no data is shown for a rejected token");

    await watch(page, "key", key);
    await untilPage(page, "page-h holding", async (p) => (await text(p, "#holder-id")) === "page-h");
    assert.equal(await page.isVisible("#error"), false, "the error is gone once the token is right");
    assert.equal(await text(page, "#view-title"), `Key “${key}”`);
    assert.match(await text(page, "#holder-since"), /^\d+ (s|min).* ago \(.+\)$/, "relative and absolute");
    assert.match(await text(page, "#updated"), /^Updated /);

    const waiting = await rows(page, "#waiting");
    assert.deepEqual(
      waiting.map(([position, id]) => [position, id]),
      [
        ["1", "page-w1"],
        ["2", "page-w2"],
      ],
    );
    for (const row of waiting) assert.match(row.at(-1), /^\d+ (s|min)/, `how long ${row[1]} has waited`);
    assert.equal(await text(page, "#superseded-count"), "0");
    assert.equal(await page.isVisible("#recent"), false, "recent outcomes are a group's");

    // The token stays in this tab's session storage: not in localStorage, not in the URL.
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem("baton.token"),
      local: Object.keys(localStorage).length,
      url: location.href,
    }));
    assert.equal(storage.session, TOKEN);
    assert.equal(storage.local, 0);
    assert.ok(!storage.url.includes(TOKEN), storage.url);

    const shot = path.join(OUT, "status-page.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);
    console.log(`status page screenshot (key): ${shot}`);

    // Live: the holder finishes, the key moves on, the page follows without a reload.
    await h.sendEvent("page-h", "finish", {});
    await untilPage(page, "page-w1 holding", async (p) => (await text(p, "#holder-id")) === "page-w1");
    await untilPage(page, "page-w2 alone in the queue", async (p) =>
      JSON.stringify((await rows(p, "#waiting")).map((r) => r.slice(0, 2))) === JSON.stringify([["1", "page-w2"]]),
    );
    await h.sendEvent("page-w1", "finish", {});
    await untilPage(page, "page-w2 holding", async (p) => (await text(p, "#holder-id")) === "page-w2");
    await h.sendEvent("page-w2", "finish", {});
    await untilPage(page, "the key free", (p) => p.isVisible("#holder-none"));
    assert.equal(await page.isVisible("#waiting-none"), true);
  });

  test("a group: holder, the newest waiter, and the superseded run naming what replaced it", async (t) => {
    const group = "page/deploy main";
    const options = { pollInterval: 1000 };
    await h.create("page-A", serial(group, "r1", { waitForFinish: true }));
    await h.until("page-A holding", async () => (await inspectGroup(h, group)).holder?.instanceId === "page-A");
    await h.create("page-B", serial(group, "r2", { options }));
    await h.until("page-B waiting", async () =>
      (await inspectGroup(h, group)).waiting.some((w) => w.instanceId === "page-B"),
    );
    await h.create("page-C", serial(group, "r3", { options }));
    await h.until("page-B superseded", async () =>
      (await inspectGroup(h, group)).recent.some((r) => r.instanceId === "page-B"),
    );

    await watch(page, "group", group);
    await untilPage(page, "page-A holding", async (p) => (await text(p, "#holder-id")) === "page-A");
    assert.equal(await text(page, "#view-title"), `Group “${group}”`);
    assert.equal(await text(page, "#holder-revision"), "r1");
    assert.equal(await text(page, "#holder-since-label"), "Last heartbeat");
    assert.deepEqual(
      (await rows(page, "#waiting")).map((r) => r.slice(0, 3)),
      [["1", "page-C", "r3"]],
    );
    // §10a: the group's state and its waiters' waits, as serialInspect answers them.
    assert.equal(await text(page, "#health-state"), (await inspectGroup(h, group)).state);
    assert.equal(await text(page, "#health-state"), "backlogged");
    assert.match(await text(page, "#health-waits"), /^Waits: p50 .+, p95 .+ \(over 1 waiting now\)\.$/);
    assert.equal(await page.isVisible("#holders"), false, "holder checks are a key's");
    const recent = await rows(page, "#recent");
    const b = recent.find((r) => r[0] === "page-B");
    assert.ok(b, `page-B in recent outcomes: ${JSON.stringify(recent)}`);
    assert.deepEqual(b.slice(0, 4), ["page-B", "r2", "superseded (skipped)", "page-C (revision r3)"]);
    assert.match(b[4], / ago \(.+\)$/);
    assert.equal(await page.isVisible("#superseded"), false, "the superseded count is a key's");

    const shot = path.join(OUT, "status-page-group.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);
    console.log(`status page screenshot (group): ${shot}`);

    // Live: A releases, C takes the group, A shows as released.
    await h.sendEvent("page-A", "finish", {});
    await untilPage(page, "page-A released", async (p) =>
      (await rows(p, "#recent")).some((r) => r[0] === "page-A" && r[2] === "released"),
    );
    await untilPage(page, "page-C holding or done", async (p) =>
      (await rows(p, "#recent")).some((r) => r[0] === "page-C") || (await text(p, "#holder-id")) === "page-C",
    );
  });

  test("a group paused and resumed from its detail, shown paused in the overview", async (t) => {
    const group = "page/paused deploys";
    await h.create("sp-A", serial(group, "r1", { waitForFinish: true }));
    await h.until("sp-A holding", async () => (await inspectGroup(h, group)).holder?.instanceId === "sp-A");
    await watch(page, "group", group);
    await untilPage(page, "sp-A holding", async (p) => (await text(p, "#holder-id")) === "sp-A");
    assert.equal(await text(page, "#group-paused-state"), "Not paused: claims and hand-offs run as usual.");
    assert.equal(await page.isDisabled("#group-resume"), true, "nothing to resume");

    await page.fill("#group-pause-reason", "incident 12: bad deploys");
    await page.click("#group-pause");
    await untilPage(page, "the group paused", async (p) => (await text(p, "#group-paused-state")).startsWith("Paused since "));
    assert.match(await text(page, "#group-paused-state"), /Reason: “incident 12: bad deploys”\.$/);
    assert.equal(await text(page, "#group-steer-result"), `Paused “${group}”.`);
    assert.equal((await inspectGroup(h, group)).paused.reason, "incident 12: bad deploys");
    await untilPage(page, "the group's state paused", async (p) => (await text(p, "#health-state")) === "paused");

    // A waiter arrives; the holder finishes: its release hands on nothing.
    await h.create("sp-B", serial(group, "r2"));
    await untilPage(page, "sp-B waiting", async (p) => (await rows(p, "#waiting")).some((r) => r[1] === "sp-B"));
    await h.sendEvent("sp-A", "finish", {});
    await untilPage(page, "nobody holding", (p) => p.isVisible("#holder-none"));
    assert.deepEqual((await rows(page, "#waiting")).map((r) => r[1]), ["sp-B"]);
    const shot = path.join(OUT, "status-page-group-paused.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);
    console.log(`status page screenshot (paused group): ${shot}`);

    // The overview marks the group paused.
    await page.click("#show-overview");
    await untilPage(page, "the paused group listed", async (p) =>
      (await rows(p, "#busy")).find((r) => r[1] === group && r[0] === "group (paused)"),
    );

    // Back on its detail, Resume hands the group to sp-B.
    await page.click(`#busy tbody a:text-is("${group}")`);
    await untilPage(page, "the group paused", async (p) => !(await p.isDisabled("#group-resume")));
    await page.click("#group-resume");
    await untilPage(page, "the resume's answer", async (p) =>
      (await text(p, "#group-steer-result")) === `Resumed “${group}”: the group went on to sp-B.`,
    );
    await untilPage(page, "the group not paused", async (p) => (await text(p, "#group-paused-state")).startsWith("Not paused"));
    assert.deepEqual(await h.output("sp-B", 30_000), { ran: true, value: "deployed" });
  });

  test("a bucket: each rule's use and next free permit, and the penalty", async (t) => {
    const bucket = "page/provider acme";
    const rules = [
      { id: "ten-minutes", limit: 3, windowMs: 600_000 },
      { id: "hour", limit: 10, windowMs: 3_600_000 },
    ];
    await h.rateOk(bucket, "acquire", bucket, { rules, permits: 3 });
    await watch(page, "bucket", bucket);
    await untilPage(page, "the bucket's rules", async (p) => (await rows(p, "#rules")).length === 2);
    assert.equal(await text(page, "#view-title"), `Bucket “${bucket}”`);
    assert.equal(await text(page, "#cooldown"), "No penalty in force.");
    const [tight, loose] = await rows(page, "#rules");
    assert.deepEqual(tight.slice(0, 4), ["ten-minutes", "3", "10 min 0 s", "3 of 3"]);
    assert.match(tight[4], /^in \d+ min/, "the full rule frees in about ten minutes");
    assert.deepEqual(loose, ["hour", "10", "1 h 0 min", "3 of 10", "now"]);
    assert.equal(await page.isVisible("#holder"), false, "a bucket has no holder");
    assert.equal(await page.isVisible("#waiting"), false);

    // Live: a penalty shows without a reload.
    await h.rateOk(bucket, "penalize", bucket, { cooldownMs: 3_600_000 });
    await untilPage(page, "the penalty", async (p) => (await text(p, "#cooldown")).startsWith("Penalized: no grants for "));

    const shot = path.join(OUT, "status-page-bucket.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);
    console.log(`status page screenshot (bucket): ${shot}`);
  });

  test("a Worker with no token configured: the page says the API is not configured", async () => {
    // A second Baton without BATON_TOKEN: its API answers 503, never open.
    const bare = await startBaton({ listen: true });
    const other = await context.newPage();
    other.on("pageerror", (error) => pageErrors.push(String(error)));
    try {
      await other.goto(await bare.batonUrl());
      await watch(other, "key", "anything");
      await untilPage(other, "API not configured", async (p) =>
        (await text(p, "#error")).includes("API not configured (503)"),
      );
      assert.equal(await other.isVisible("#view"), false);
    } finally {
      await other.close();
      await bare.dispose();
    }
  });

  test("an unreachable API: the error shows, the last data stays marked stale, then recovers", async () => {
    // Still watching from above; the browser plays the outage.
    await page.route("**/v1/**", (route) => route.abort("connectionrefused"));
    await untilPage(page, "API unreachable", async (p) => (await text(p, "#error")).includes("Cannot reach the API"));
    assert.match(await text(page, "#updated"), /^Last good update /);
    assert.equal(await page.isVisible("#view"), true, "the last data is still shown");
    await page.unroute("**/v1/**");
    await untilPage(page, "recovery", async (p) => !(await p.isVisible("#error")));
    assert.match(await text(page, "#updated"), /^Updated /);
  });

  test("a run: its state, claimant and live event log, then its result", async (t) => {
    const key = "page/report 2026-12";
    const events = [{ type: "fetched", data: { pages: 3 } }, { type: "parsed" }];
    const [{ instanceId: id }] = await h.call("/start-once", {
      key,
      params: { mode: "run", key, events, waitForFinish: true, result: { rows: 7 } },
    });
    await watch(page, "run", key);
    await untilPage(page, "the run's two events", async (p) => (await rows(p, "#run-events")).length === 2);
    assert.equal(await text(page, "#run-title"), `Run “${key}”`);
    assert.equal(await text(page, "#run-state"), "running");
    assert.equal(await text(page, "#run-claimant"), id);
    assert.equal(await page.isVisible("#run-outcome"), false, "no outcome yet");
    assert.deepEqual(
      (await rows(page, "#run-events")).map(([seq, , type, data]) => [seq, type, data]),
      [
        ["1", "fetched", '{"pages":3}'],
        ["2", "parsed", ""],
      ],
    );
    assert.equal(await page.isVisible("#view"), false, "the key/group view is hidden");

    const shot = path.join(OUT, "status-page-run.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);

    // Live: the run finishes; the page shows its result without a reload.
    await h.sendEvent(id, "finish", {});
    await untilPage(page, "the run complete", async (p) => (await text(p, "#run-state")) === "complete");
    assert.match(await text(page, "#run-outcome"), /"rows": 7/);
  });

  test("a debounce key: its pending start, then the start in recent starts", async (t) => {
    const key = "page/debounce one";
    const options = { delayMs: 600_000, workflow: "ECHO" };
    const first = (await h.debouncer(key, "debounce", key, { ...options, params: { n: 1 } })).value;
    await h.debouncer(key, "debounce", key, { ...options, params: { n: 2 } });
    await watch(page, "debounce", key);
    await untilPage(page, "the pending start", async (p) => (await text(p, "#pending-id")) === first.instanceId);
    assert.equal(await text(page, "#debounce-title"), `Debounce key “${key}”`);
    assert.equal(await page.isVisible("#view"), false, "the key/group view is hidden");
    assert.equal(await text(page, "#pending-calls"), "2");
    assert.match(await text(page, "#pending-edge"), /^trailing/);
    assert.equal(await text(page, "#pending-workflow"), "ECHO");
    assert.match(await text(page, "#pending-fire"), /^in \d+ (min|h)/, "the fire time ahead");
    assert.equal(await page.isVisible("#started-none"), true);

    const shot = path.join(OUT, "status-page-debounce.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);

    // Flushed: the page follows without a reload.
    await h.debouncer(key, "flush", key);
    await untilPage(page, "the start listed", async (p) =>
      (await rows(p, "#started")).some((row) => row[0] === first.instanceId),
    );
    assert.equal(await page.isVisible("#pending-none"), true);
  });

  test("the overview of what is busy, and a key's time line of holds and waits", async (t) => {
    // A picture a person can read: a few seconds between the steps, so
    // that holds and waits have a length on the time line.
    const pause = () => new Promise((resolve) => setTimeout(resolve, 1500));
    const key = "page/timeline";
    await h.create("tl-a", { key, waitForFinish: true });
    await h.untilInspect(key, "tl-a holding", (v) => v.holder?.id === "tl-a");
    await pause();
    for (const id of ["tl-b", "tl-c"]) {
      await h.create(id, { key, waitForFinish: true });
      await h.untilInspect(key, `${id} waiting`, (v) => v.waiting.some((w) => w.id === id));
      await pause();
    }
    // tl-a dies; tl-d's acquire finds it dead, and the key goes to tl-b.
    await h.terminate("tl-a");
    await h.create("tl-d", { key, waitForFinish: true });
    await h.untilInspect(key, "tl-b holding", (v) => v.holder?.id === "tl-b");
    await pause();
    await h.sendEvent("tl-b", "finish", {});
    await h.untilInspect(key, "tl-c holding", (v) => v.holder?.id === "tl-c");
    // A second key waiting longer, and a group with a holder and a waiter.
    const other = "page/other key";
    await h.create("ov-h", { key: other, waitForFinish: true });
    await h.untilInspect(other, "ov-h holding", (v) => v.holder?.id === "ov-h");
    const group = "page/busy group";
    await h.create("ov-g1", serial(group, "r1", { waitForFinish: true }));
    await h.until("ov-g1 holding", async () => (await inspectGroup(h, group)).holder?.instanceId === "ov-g1");
    await h.create("ov-g2", serial(group, "r2", { options: { pollInterval: 1000 } }));
    await h.until("ov-g2 waiting", async () => (await inspectGroup(h, group)).waiting.length === 1);
    await pause();
    await h.create("ov-w", { key: other, waitForFinish: true });
    await h.untilInspect(other, "ov-w waiting", (v) => v.waiting.length === 1);

    await page.fill("#token", TOKEN);
    await page.click("#show-overview");
    await untilPage(page, "both keys and the group", async (p) => {
      const names = (await rows(p, "#busy")).map((r) => r[1]);
      return [key, other, group].every((n) => names.includes(n));
    });
    assert.equal(await page.isVisible("#view"), false, "the overview alone");
    const busy = await rows(page, "#busy");
    const row = (name) => busy.find((r) => r[1] === name);
    assert.deepEqual(row(key).slice(0, 4), ["key", key, "1 of 1", "1"]);
    assert.deepEqual(row(group).slice(0, 4), ["group", group, "ov-g1", "1"]);
    assert.match(row(key)[4], /^\d+ (s|min)/);
    // The longest wait first: tl-d has waited since before ov-w and ov-g2.
    assert.equal(busy[0][1], key, JSON.stringify(busy));
    assert.match(await text(page, "#overview-summary"), /^2 keys and 1 group busy; the longest wait is /);
    const overviewShot = path.join(OUT, "status-page-overview.png");
    await page.screenshot({ path: overviewShot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, overviewShot)}`);
    console.log(`status page screenshot (overview): ${overviewShot}`);

    // Each entry links to its detail: the key's tables and its time line.
    await page.click(`#busy tbody a:text-is("${key}")`);
    await untilPage(page, "tl-c holding", async (p) => (await text(p, "#holder-id")) === "tl-c");
    await untilPage(page, "the recent holds", async (p) => (await rows(p, "#key-recent")).length === 2);
    assert.equal(await text(page, "#view-title"), `Key “${key}”`);
    const recent = await rows(page, "#key-recent");
    assert.deepEqual(recent.map((r) => [r[0], r[5]]), [
      ["tl-b", "released"],
      ["tl-a", "holder found dead"],
    ]);
    assert.match(recent[0][2], /^\d+ s$/, "how long tl-b waited");
    assert.match(await text(page, "#counts"), /3 grants, 2 hand-offs, 1 dead holders/);
    const segments = await page.$$eval("#timeline rect.seg", (rects) =>
      rects.map((r) => [r.parentNode && r.getAttribute("class"), r.querySelector("title").textContent.split(":")[0]]),
    );
    const has = (kind, who) => segments.some(([c, w]) => c === `seg ${kind}` && w === who);
    assert.ok(has("dead", "tl-a"), JSON.stringify(segments));
    assert.ok(has("waited", "tl-b") && has("released", "tl-b"), JSON.stringify(segments));
    assert.ok(has("holding", "tl-c") && has("waiting", "tl-d"), JSON.stringify(segments));
    const timelineShot = path.join(OUT, "status-page-timeline.png");
    await page.screenshot({ path: timelineShot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, timelineShot)}`);
    console.log(`status page screenshot (key time line): ${timelineShot}`);

    for (const id of ["tl-c", "tl-d", "ov-h", "ov-w", "ov-g1"]) await h.sendEvent(id, "finish", {});
  });

  test("a paused key (§11): paused on its detail, its time line and the busy list; pause, resume and the limit from the page", async (t) => {
    const key = "page/paused key";
    await h.create("pz-h", { key, waitForFinish: true });
    await h.untilInspect(key, "pz-h holding", (v) => v.holder?.id === "pz-h");
    await h.create("pz-w", { key, waitForFinish: true });
    await h.untilInspect(key, "pz-w waiting", (v) => v.waiting.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // a hold with a length to draw

    await watch(page, "key", key);
    await untilPage(page, "pz-h holding", async (p) => (await text(p, "#holder-id")) === "pz-h");
    assert.equal(await page.isVisible("#paused-banner"), false, "not paused yet");
    await page.fill("#pause-reason", "deploy freeze");
    await page.click("#pause");
    await untilPage(page, "the key paused", async (p) =>
      (await p.isVisible("#paused-banner")) && (await text(p, "#paused-banner")).includes("deploy freeze"),
    );
    assert.deepEqual((await h.inspect(key)).paused?.reason, "deploy freeze");
    // The limit field: raised while paused, nobody is handed a slot.
    await page.fill("#limit", "2");
    await page.click("#set-limit");
    await untilPage(page, "the override shown", async (p) => (await text(p, "#limit-now")) === "limit 2 (operator's override)");
    assert.deepEqual((await rows(page, "#waiting")).map((r) => r[1]), ["pz-w"], "paused: the raised limit handed nothing on");
    await untilPage(page, "the pause on the time line", (p) => p.isVisible("#timeline rect.band.paused"));
    await new Promise((resolve) => setTimeout(resolve, 3000)); // a pause with a length to draw
    const shot = path.join(OUT, "status-page-paused.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);
    console.log(`status page screenshot (paused key): ${shot}`);

    // The busy list shows it paused.
    await page.click("#show-overview");
    await untilPage(page, "the key listed as paused", async (p) =>
      (await p.$$eval("#busy tbody tr.paused a", (as) => as.map((a) => a.textContent))).includes(key),
    );
    const overviewShot = path.join(OUT, "status-page-paused-overview.png");
    await page.screenshot({ path: overviewShot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, overviewShot)}`);

    // Resume from the key's detail: the free slot goes to the waiter at once.
    await page.click(`#busy tbody a:text-is("${key}")`);
    await untilPage(page, "the key's detail", async (p) => (await text(p, "#holder-id")) === "pz-h");
    await page.click("#resume");
    await untilPage(page, "resumed, pz-w handed a slot", async (p) => (await text(p, "#steer-result")).includes("pz-w"));
    await untilPage(page, "the banner gone", async (p) => !(await p.isVisible("#paused-banner")));
    await page.click("#clear-limit");
    await untilPage(page, "the override cleared", async (p) => (await text(p, "#limit-now")) === "limit 1 (the callers')");
    for (const id of ["pz-h", "pz-w"]) await h.sendEvent(id, "finish", {});
  });

  test("a cancellation (contract §1d) on a key's time line", async (t) => {
    const pause = () => new Promise((resolve) => setTimeout(resolve, 1500));
    const key = "page/cancel";
    await h.create("cn-old", { key, waitForFinish: true });
    await h.untilInspect(key, "cn-old holding", (v) => v.holder?.id === "cn-old");
    await pause();
    // The newest run replaces the running one: cn-old is terminated, and
    // its slot goes to cn-new once it is reported terminated.
    assert.deepEqual(await h.ok(key, "enqueue", key, true, "cn-new", null, { cancelHolders: true }), {
      terminated: [],
      cancelled: ["cn-old"],
    });
    await h.create("cn-new", { key, waitForFinish: true });
    await h.untilInspect(key, "cn-new holding", (v) => v.holder?.id === "cn-new");
    await pause();

    await watch(page, "key", key);
    await untilPage(page, "cn-new holding", async (p) => (await text(p, "#holder-id")) === "cn-new");
    await untilPage(page, "the cancelled hold", async (p) => (await rows(p, "#key-recent")).length === 1);
    const recent = await rows(page, "#key-recent");
    assert.deepEqual(recent.map((r) => [r[0], r[1], r[5]]), [["cn-old", "1", "holder cancelled (terminated)"]]);
    assert.match(await text(page, "#counts"), /, 1 cancelled\.$/);
    const drawn = await page.$$eval("#timeline .seg, #timeline .mark", (els) =>
      els.map((e) => [e.getAttribute("class"), e.querySelector("title").textContent.split(":")[0]]),
    );
    const has = (kind, who) => drawn.some(([c, w]) => c === kind && w === who);
    assert.ok(has("seg cancelled", "cn-old") && has("mark cancelled", "cn-old"), JSON.stringify(drawn));
    assert.ok(has("seg holding", "cn-new"), JSON.stringify(drawn));
    const shot = path.join(OUT, "status-page-cancel.png");
    await page.screenshot({ path: shot, fullPage: true });
    t.diagnostic(`screenshot: ${path.relative(ROOT, shot)}`);
    console.log(`status page screenshot (a cancellation): ${shot}`);
    await h.sendEvent("cn-new", "finish", {});
  });

  test("no script errors on the page", () => {
    assert.deepEqual(pageErrors, []);
  });
});

async function inspectGroup(h, group) {
  const result = await h.serial("serialInspect", { group });
  if ("error" in result) throw new Error(result.error);
  return result.value;
}

// §10a on the page: each key coloured by its state, the state filter, a
// key's wait figures and each holder's last check. Screenshots of a
// stalled, a backlogged and a paused key go to BATON_SCREENS (if set).
describe("status page: a key's health (§10a)", () => {
  let h;
  let context;
  let page;
  let userData;
  const pageErrors = [];
  const screens = process.env.BATON_SCREENS;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run \`bash scripts/chromium.sh\``);
    // Checks every half second; a long grace keeps a slot handed to an
    // instance not created yet.
    h = await startBaton({ holderCheckMs: 500, listen: true, vars: { BATON_TOKEN: TOKEN, ENQUEUE_GRACE_MS: "600000" } });
    userData = mkdtempSync(path.join(os.tmpdir(), "baton-chromium-"));
    context = await chromium.launchPersistentContext(userData, {
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"],
      viewport: { width: 1100, height: 800 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await page.goto(await h.batonUrl());
    mkdirSync(OUT, { recursive: true });
    if (screens) mkdirSync(screens, { recursive: true });
  });

  after(async () => {
    await context?.close();
    await h?.dispose();
    if (userData) rmSync(userData, { recursive: true, force: true });
  });

  async function shot(t, name) {
    for (const dir of [OUT, screens].filter(Boolean)) {
      const file = path.join(dir, `status-page-${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      t.diagnostic(`screenshot: ${file}`);
    }
  }

  /** `holder` holding `key`, then each of `waiters` (real instances) waiting. */
  async function held(key, holder, waiters) {
    await h.create(holder, { key, waitForFinish: true });
    await h.untilInspect(key, `${holder} holding`, (v) => v.holders.some((x) => x.id === holder));
    for (const id of waiters) {
      await h.create(id, { key, waitForFinish: true });
      await h.untilInspect(key, `${id} waiting`, (v) => v.waiting.some((w) => w.id === id));
    }
  }

  test("each key's state in the overview, the filter, and a key's waits and last checks", async (t) => {
    const backlogged = "health/backlogged";
    const paused = "health/paused";
    const stalled = "health/stalled";
    await held(backlogged, "hp-b-h", ["hp-b-w1", "hp-b-w2"]);
    await held(paused, "hp-p-h", ["hp-p-w"]);
    await h.ok(paused, "pause", paused, { reason: "incident 42" });
    // A slot handed to an instance not created yet, a waiter behind it.
    await held(stalled, "hp-s-h", []);
    await h.ok(stalled, "enqueue", stalled, false, "hp-s-w1");
    await h.create("hp-s-w2", { key: stalled, waitForFinish: true });
    await h.untilInspect(stalled, "two waiting", (v) => v.waiting.length === 2);
    await h.sendEvent("hp-s-h", "finish", {});
    await h.untilInspect(stalled, "stalled", (v) => v.state === "stalled");

    await page.fill("#token", TOKEN);
    await page.click("#show-overview");
    const stateOf = async (p, name) => (await rows(p, "#busy")).find((r) => r[1] === name)?.[5];
    await untilPage(page, "the three states", async (p) =>
      (await stateOf(p, backlogged)) === "backlogged" &&
      (await stateOf(p, paused)) === "paused" &&
      (await stateOf(p, stalled)) === "stalled",
    );
    const classes = await page.$$eval("#busy tbody tr", (trs) => trs.map((tr) => [tr.querySelector("th a")?.textContent, tr.className]));
    assert.ok(classes.some(([n, c]) => n === stalled && c.includes("state-stalled")), JSON.stringify(classes));
    await shot(t, "health-overview");
    // The filter keeps one state.
    await page.selectOption("#state-filter", "stalled");
    await untilPage(page, "only the stalled key", async (p) => {
      const names = (await rows(p, "#busy")).map((r) => r[1]);
      return names.length === 1 && names[0] === stalled;
    });
    await page.selectOption("#state-filter", "");

    // The stalled key's detail: its state, its waits, its holder not checked into its slot.
    await page.click(`#busy tbody a:text-is("${stalled}")`);
    await untilPage(page, "the stalled key's state", async (p) => (await text(p, "#health-state")) === "stalled");
    assert.match(await text(page, "#health-waits"), /^Waits: p50 \d+ s, p95 \d+ s \(over \d+:/);
    const holders = await rows(page, "#holders");
    assert.equal(holders[0][0], "hp-s-w1");
    await untilPage(page, "hp-s-w1's last check", async (p) => /^not found, checked \d+ s ago$/.test((await rows(p, "#holders"))[0]?.[2] ?? ""));
    await shot(t, "stalled-key");

    // The backlogged key: each holder's check says what the binding said.
    await page.click("#show-overview");
    await page.click(`#busy tbody a:text-is("${backlogged}")`);
    await untilPage(page, "backlogged", async (p) => (await text(p, "#health-state")) === "backlogged");
    await untilPage(page, "hp-b-h checked", async (p) => /^running, checked \d+ s ago$/.test((await rows(p, "#holders"))[0]?.[2] ?? ""));
    await shot(t, "backlogged-key");

    await page.click("#show-overview");
    await page.click(`#busy tbody a:text-is("${paused}")`);
    await untilPage(page, "paused", async (p) => (await text(p, "#health-state")) === "paused");
    await shot(t, "paused-key");

    await h.ok(paused, "resume", paused);
    await h.create("hp-s-w1", { key: stalled, waitForFinish: true });
    await untilPage(page, "the stalled key back", async () => (await h.inspect(stalled)).state === "backlogged");
    for (const id of ["hp-b-h", "hp-p-h", "hp-s-w1"]) await h.sendEvent(id, "finish", {});
  });

  test("no script errors on the page", () => {
    assert.deepEqual(pageErrors, []);
  });
});
