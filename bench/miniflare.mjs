// Starts Baton beside the bench Worker (bench/worker.mjs) in one Miniflare,
// as the miniflare tests do: real Workflow engine, real Coordinator Durable
// Object, the built WASM (or other WASM bytes, for the size benchmark).
import { Miniflare } from "miniflare";
import path from "node:path";
import {
  applyMigrations,
  batonWorker,
  callerModules,
  Harness,
  ROOT,
} from "../tests/miniflare/harness.mjs";
import { readFileSync } from "node:fs";

export { ROOT };

/** The runtime's last stderr lines (all Miniflares of this process), for a failure report. */
const STDERR_TAIL_LINES = 40;
const stderrTail = [];
export const runtimeStderrTail = () => stderrTail.join("\n");

/**
 * Miniflare options for Baton plus the bench Worker.
 * @param {{ vars?: Record<string, string>, wasm?: Uint8Array }} options
 * `wasm`: bytes to load instead of build/index_bg.wasm.
 */
export function benchOptions({ vars = {}, wasm } = {}) {
  return {
    // Baton logs every decision; the bench prints only its own figures,
    // and the runtime's last error lines if it fails.
    handleRuntimeStdio(stdout, stderr) {
      stdout.resume();
      stderr.on("data", (chunk) => {
        stderrTail.push(...String(chunk).split("\n").filter(Boolean));
        stderrTail.splice(0, Math.max(0, stderrTail.length - STDERR_TAIL_LINES));
      });
    },
    workers: [
      {
        name: "bench",
        compatibilityDate: "2026-07-01",
        modulesRoot: ROOT,
        modules: [
          ...callerModules("bench/worker.mjs"),
          { type: "ESModule", path: path.join(ROOT, "bench/rate-baselines.mjs") },
          { type: "ESModule", path: path.join(ROOT, "bench/plain-coordinator.mjs") },
        ],
        durableObjects: {
          COORDINATOR: { className: "Coordinator", scriptName: "baton", useSQLite: true },
          RATE_LIMITER: { className: "RateLimiter", scriptName: "baton", useSQLite: true },
          JS_RATE_LIMITER: { className: "JsExactRateLimiter", useSQLite: true },
          FIXED_RATE_LIMITER: { className: "FixedWindowRateLimiter", useSQLite: true },
          // The baseline: what a user would write instead (bench/plain-coordinator.mjs),
          // in the calling Worker itself...
          PLAIN: { className: "PlainCoordinator", useSQLite: true },
          // ...and the same class in a Worker of its own, reached as Baton's
          // Coordinator is (a Durable Object of another script).
          PLAIN_REMOTE: { className: "PlainCoordinator", scriptName: "plain", useSQLite: true },
          DEBOUNCER: { className: "Debouncer", scriptName: "baton", useSQLite: true },
          RUNS: { className: "Runs", scriptName: "baton", useSQLite: true },
        },
        workflows: { BENCH_WF: { name: "bench-workflow", className: "BenchWorkflow" } },
        // JS_QUEUE: P2's baseline, the same queue in a plain JS Worker.
        serviceBindings: { BATON: "baton", JS_QUEUE: "js-queue" },
        // Only to time a D1 round trip; the serial queue's tables live in Baton's.
        d1Databases: ["DB"],
      },
      batonWorker({
        workflow: { name: "bench-workflow", className: "BenchWorkflow", scriptName: "bench" },
        vars,
        wasm,
      }),
      {
        name: "plain",
        compatibilityDate: "2026-07-01",
        modulesRoot: ROOT,
        modules: [
          { type: "ESModule", path: path.join(ROOT, "bench/plain-worker.mjs") },
          { type: "ESModule", path: path.join(ROOT, "bench/plain-coordinator.mjs") },
        ],
        durableObjects: { PLAIN: { className: "PlainCoordinator", useSQLite: true } },
        workflows: { BENCH_WF: { name: "bench-workflow", className: "BenchWorkflow", scriptName: "bench" } },
      },
      {
        name: "js-queue",
        compatibilityDate: "2026-07-01",
        modulesRoot: ROOT,
        modules: [{ type: "ESModule", path: path.join(ROOT, "bench/js-queue.mjs") }],
        d1Databases: ["DB"],
        workflows: { WORKFLOW: { name: "bench-workflow", className: "BenchWorkflow", scriptName: "bench" } },
      },
    ],
  };
}

/** Starts Miniflare with `benchOptions(options)` and applies the D1 migrations. */
export async function startBench(options = {}) {
  const mf = new Miniflare(benchOptions(options));
  await mf.ready;
  await applyMigrations(await mf.getD1Database("DB", "baton"));
  await applyJsQueueSchema(await mf.getD1Database("DB", "js-queue"));
  return new Bench(mf);
}

/** Creates the P2 baseline's table (bench/js-queue.sql) in its D1 database `db`. */
export async function applyJsQueueSchema(db) {
  const schema = readFileSync(path.join(ROOT, "bench/js-queue.sql"), "utf8").replace(/^--.*$/gm, "");
  for (const statement of schema.split(";").filter((s) => s.trim())) {
    await db.prepare(statement).run();
  }
}

/** The test harness's controls; `rpc` and `serial` answer with the value alone. */
export class Bench extends Harness {
  constructor(mf) {
    super(mf);
    // Finer than the tests' polling: waits here bound measurements' wall time.
    this.pollMs = 20;
  }

  /** A Coordinator method through a stub (from the Worker). */
  async rpc(key, method, ...args) {
    return (await super.rpc(key, method, ...args)).value;
  }

  /** A Debouncer method through a stub (from the Worker). */
  async debouncer(key, method, ...args) {
    const result = await this.call("/debouncer", { key, method, args });
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  }

  /** A serial-queue method through the service binding (`binding`: BATON or JS_QUEUE). */
  async serial(method, input, binding = "BATON") {
    return (await this.call("/serial", { method, args: [input], binding })).value;
  }
}
