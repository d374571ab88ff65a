// Decision logs: one JSON line per decision, enough to answer "why is this
// instance waiting?" from `wrangler tail`, and nothing secret in them.
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

describe("decision logs", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000 });
  });
  after(() => h?.dispose());

  test("a waiting instance's line names the holder and how long it has waited", async () => {
    const key = "log-key";
    await h.create("log-h", { key, waitForFinish: true });
    await h.untilInspect(key, "log-h holding", (v) => v.holder?.id === "log-h");
    await h.ok(key, "acquire", key, "log-w");
    await h.ok(key, "acquire", key, "log-w");
    const line = await h.until("a pending line for log-w", () =>
      decisions(h).findLast((d) => d.instance === "log-w" && d.decision === "pending"),
    );
    assert.equal(line.key, key);
    assert.match(line.reason, /log-h/);
    assert.equal(typeof line.waitedMs, "number");
    const granted = decisions(h).find((d) => d.instance === "log-h" && d.decision === "granted");
    assert.ok(granted, "the holder's grant is logged");
    await h.sendEvent("log-h", "finish", {});
  });

  test("serial-queue decisions are logged by group", async () => {
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
    const holding = decisions(h).find((d) => d.instance === "sq-a" && d.decision === "holding");
    assert.ok(holding, "the claim that won is logged");
  });

  test("lines carry no event payloads or input hashes", async () => {
    const key = "log-secret";
    await h.ok(key, "enqueue", key, true, "sec-a", "hash-that-must-not-appear");
    await h.until("the enqueue's line", () => decisions(h).find((d) => d.instance === "sec-a"));
    for (const line of h.runtimeLines) {
      assert.ok(!line.includes("hash-that-must-not-appear"), line);
    }
  });
});
