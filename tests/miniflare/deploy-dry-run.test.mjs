// The deploy path: `wrangler deploy --dry-run` bundles Baton from the repo as
// it stands (running the [build] command) and lists the bindings a real
// deployment gets. Offline: nothing is uploaded.
//
// Not behind the strict binding (RELIABILITY.md): it tests wrangler's
// bundle as a user gets it, not Baton behind the harness.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "./harness.mjs";

test("wrangler deploy --dry-run bundles Baton with its bindings", () => {
  const outdir = mkdtempSync(path.join(tmpdir(), "baton-dry-run-"));
  try {
    const output = execFileSync(
      path.join(ROOT, "node_modules/.bin/wrangler"),
      ["deploy", "--dry-run", "--outdir", outdir],
      { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" } },
    );
    for (const binding of [
      "env.COORDINATOR (Coordinator)",
      "env.DEBOUNCER (Debouncer)",
      "env.RATE_LIMITER (RateLimiter)",
      "env.WORKFLOW",
      "env.DB (baton)",
    ]) {
      assert.ok(output.includes(binding), `bindings should list ${binding}:\n${output}`);
    }
    const files = readdirSync(outdir);
    assert.ok(files.includes("worker.js"), `bundle: ${files}`);
    assert.ok(files.some((f) => f.endsWith(".wasm")), `bundle has the module: ${files}`);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});
