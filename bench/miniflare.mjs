// Starts Baton beside the bench Worker (bench/worker.mjs) in one Miniflare,
// as the miniflare tests do: real Workflow engine, real Coordinator Durable
// Object, the built WASM (or other WASM bytes, for the size benchmark).
import { Miniflare } from "miniflare";
import { applyMigrations, batonWorker, callerModules, ROOT } from "../tests/miniflare/harness.mjs";

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
        modules: callerModules("bench/worker.mjs"),
        durableObjects: {
          COORDINATOR: { className: "Coordinator", scriptName: "baton", useSQLite: true },
        },
        workflows: { BENCH_WF: { name: "bench-workflow", className: "BenchWorkflow" } },
        serviceBindings: { BATON: "baton" },
        // Only to time a D1 round trip; the serial queue's tables live in Baton's.
        d1Databases: ["DB"],
      },
      batonWorker({
        workflow: { name: "bench-workflow", className: "BenchWorkflow", scriptName: "bench" },
        vars,
        wasm,
      }),
    ],
  };
}

/** Starts Miniflare with `benchOptions(options)` and applies the D1 migrations. */
export async function startBench(options = {}) {
  const mf = new Miniflare(benchOptions(options));
  await mf.ready;
  await applyMigrations(await mf.getD1Database("DB", "baton"));
  return new Bench(mf);
}

export class Bench {
  constructor(mf) {
    this.mf = mf;
  }

  /** POSTs `body` (or GETs) a bench Worker route; returns the parsed JSON. */
  async call(route, body) {
    const response = await this.mf.dispatchFetch(`http://bench${route}`, {
      method: body === undefined ? "GET" : "POST",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${route}: ${response.status} ${text}`);
    return JSON.parse(text);
  }

  /** A Coordinator method through a stub (from the Worker). */
  async rpc(key, method, ...args) {
    return (await this.call("/rpc", { key, method, args })).value;
  }

  /** A serial-queue method through the service binding. */
  async serial(method, input) {
    return (await this.call("/serial", { method, args: [input] })).value;
  }

  create(id, params) {
    return this.call("/create", { id, params });
  }

  details(id) {
    return this.call(`/status?id=${encodeURIComponent(id)}`);
  }

  sendEvent(id, type, payload = {}) {
    return this.call("/event", { id, type, payload });
  }

  terminate(id) {
    return this.call("/terminate", { id });
  }

  /** Polls `probe` until it returns a truthy value (bounded by `timeoutMs`). */
  async until(what, probe, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Waits for instance `id` to finish and returns its output (throws unless complete). */
  async output(id, timeoutMs) {
    const details = await this.until(
      `${id} to finish`,
      async () => {
        const d = await this.details(id);
        return ["complete", "errored", "terminated"].includes(d.status) ? d : null;
      },
      timeoutMs,
    );
    if (details.status !== "complete") throw new Error(`${id} ended ${JSON.stringify(details)}`);
    return details.output;
  }

  dispose() {
    return this.mf.dispose();
  }
}
