// Starts Baton beside the bench Worker (bench/worker.mjs) in one Miniflare,
// as the miniflare tests do: real Workflow engine, real Coordinator Durable
// Object, the built WASM (or other WASM bytes, for the size benchmark).
import { Miniflare } from "miniflare";
import path from "node:path";
import {
  applyMigrations,
  batonWorker,
  bind,
  callerModules,
  collectLogs,
  Harness,
  manifest,
  ROOT,
  sqliteClasses,
  worker,
} from "../tests/miniflare/harness.mjs";
import { existsSync, readFileSync } from "node:fs";

export { ROOT };

/**
 * Where Miniflare keeps its objects' storage (its temporary directory):
 * tmpfs when the machine has one, unless BENCH_TMPDIR names another. On a
 * disk shared with builds, each commit's fsync took from 0.2 to over 10 ms
 * (measured: the durable floor's pair at 16 ms while compilers ran), which
 * buries every figure a commit is part of; in memory a commit costs
 * workerd's own work, as the floors (bench/floors.mjs) show.
 */
export const STORAGE_DIR = process.env.BENCH_TMPDIR ?? (existsSync("/dev/shm") ? "/dev/shm" : undefined);
if (STORAGE_DIR) process.env.TMPDIR = STORAGE_DIR;

/** The runtime's last log lines (all Miniflares of this process), for a failure report. */
const STDERR_TAIL_LINES = 40;
const stderrTail = [];
export const runtimeStderrTail = () => stderrTail.join("\n");

/** The bench Workflow, defined by the bench Worker. */
const BENCH_WORKFLOW = { name: "bench-workflow", className: "BenchWorkflow", scriptName: "bench" };
const benchWorkflow = () => bind.workflow("bench", BENCH_WORKFLOW.name, BENCH_WORKFLOW.className);

/**
 * Miniflare options for Baton plus the bench Worker.
 * @param {{ vars?: Record<string, string>, benchVars?: Record<string, string>, wasm?: Uint8Array }} options
 * `vars`: Baton's variables; `benchVars`: the bench Worker's (`PLAIN_LOG`).
 * `wasm`: bytes to load instead of build/index_bg.wasm, and `glue` its JS
 * glue instead of build/index.js (each build's glue goes with its WASM). `traced`: Baton's
 * Worker with its SQL statements recorded (bench/traced-worker.mjs).
 */
export function benchOptions({ vars = {}, benchVars = {}, wasm, glue, traced = false } = {}) {
  if (!existsSync(path.join(ROOT, WASM_FLOOR_MODULES[2]))) {
    throw new Error("bench: the WASM floor is not built: run bash bench/wasm-floor/build.sh (npm run bench does)");
  }
  return {
    // The bench prints only its own figures, and the runtime's last lines
    // if it fails.
    handleStructuredLogs: collectLogs(stderrTail, STDERR_TAIL_LINES),
    workers: [
      worker({
        name: "bench",
        modules: manifest([...callerModules("bench/worker.mjs"), "bench/rate-baselines.mjs", "bench/plain-coordinator.mjs"]),
        env: {
          COORDINATOR: bind.durableObject("baton", "Coordinator"),
          RATE_LIMITER: bind.durableObject("baton", "RateLimiter"),
          JS_RATE_LIMITER: bind.durableObject("bench", "JsExactRateLimiter"),
          FIXED_RATE_LIMITER: bind.durableObject("bench", "FixedWindowRateLimiter"),
          // The baseline: what a user would write instead (bench/plain-coordinator.mjs),
          // in the calling Worker itself...
          PLAIN: bind.durableObject("bench", "PlainCoordinator"),
          // ...and the same class in a Worker of its own, reached as Baton's
          // Coordinator is (a Durable Object of another script).
          PLAIN_REMOTE: bind.durableObject("plain", "PlainCoordinator"),
          // The floors under the hot calls (issue 29, bench/floors.mjs), in a
          // Worker of their own, reached as Baton's objects are.
          RPC_FLOOR: bind.durableObject("floors", "RpcFloor"),
          DURABLE_FLOOR: bind.durableObject("floors", "DurableFloor"),
          REPLAY_FLOOR: bind.durableObject("floors", "ReplayFloor"),
          // The floor of Baton's own language (issue 38, bench/wasm-floor):
          // a workers-rs object doing the durable floor's one write.
          WASM_FLOOR: bind.durableObject("wasm-floor", "WasmFloor"),
          DEBOUNCER: bind.durableObject("baton", "Debouncer"),
          RUNS: bind.durableObject("baton", "Runs"),
          BUSY_LIST: bind.durableObject("baton", "BusyList"),
          BENCH_WF: benchWorkflow(),
          BATON: bind.service("baton"),
          // JS_QUEUE: P2's baseline, the same queue in a plain JS Worker.
          JS_QUEUE: bind.service("js-queue"),
          // Only to time a D1 round trip; the serial queue's tables live in Baton's.
          DB: bind.d1("DB"),
          ...bind.vars(benchVars),
        },
        exports: sqliteClasses("JsExactRateLimiter", "FixedWindowRateLimiter", "PlainCoordinator"),
      }),
      withGlue(traced ? tracedBaton(batonWorker({ workflow: BENCH_WORKFLOW, vars, wasm })) : batonWorker({ workflow: BENCH_WORKFLOW, vars, wasm }), glue),
      worker({
        name: "plain",
        modules: manifest(["bench/plain-worker.mjs", "bench/plain-coordinator.mjs"]),
        env: { PLAIN: bind.durableObject("plain", "PlainCoordinator"), BENCH_WF: benchWorkflow() },
        exports: sqliteClasses("PlainCoordinator"),
      }),
      worker({
        name: "floors",
        modules: manifest(["bench/floors.mjs"]),
        exports: sqliteClasses("RpcFloor", "DurableFloor", "ReplayFloor"),
      }),
      worker({
        name: "wasm-floor",
        modules: manifest(WASM_FLOOR_MODULES),
        exports: sqliteClasses("WasmFloor"),
      }),
      worker({
        name: "js-queue",
        modules: manifest(["bench/js-queue.mjs"]),
        env: { DB: bind.d1("DB"), WORKFLOW: benchWorkflow() },
      }),
    ],
  };
}

/** The WASM floor's Worker (bench/wasm-floor), as its build.sh leaves it. */
const WASM_FLOOR_MODULES = ["bench/wasm-floor/floor.mjs", "bench/wasm-floor/build/index.js", "bench/wasm-floor/build/index_bg.wasm"];

/** Baton's Worker entry `entry` with bench/traced-worker.mjs as its main module, wrapping js/worker.mjs. */
function tracedBaton(entry) {
  const { manifest: m } = entry.config;
  const traced = "bench/traced-worker.mjs";
  const modules = { [traced]: { type: "esm", contents: readFileSync(path.join(ROOT, traced), "utf8") }, ...m.modules };
  return { ...entry, config: { ...entry.config, manifest: { ...m, mainModule: traced, modules } } };
}

/** Baton's Worker entry `entry` with `glue` (a build's index.js text) for build/index.js, if given. */
function withGlue(entry, glue) {
  if (glue === undefined) return entry;
  const { manifest: m } = entry.config;
  const modules = { ...m.modules, "build/index.js": { type: "esm", contents: glue } };
  return { ...entry, config: { ...entry.config, manifest: { ...m, modules } } };
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

  /** A method of the plain JS Durable Object (P1's and P3's baseline) through a stub. */
  async plainRpc(key, method, ...args) {
    return (await this.call("/rpc", { key, method, args, binding: "PLAIN" })).value;
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
