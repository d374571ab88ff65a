// Starts Baton and a test Worker in one Miniflare: the real Workflow engine,
// the real Coordinator Durable Object (SQLite-backed) and the built WASM.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import path from "node:path";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * @param {{ holderCheckMs?: number, vars?: Record<string, string> }} options
 */
export async function startBaton(options = {}) {
  const mf = new Miniflare({
    workers: [
      {
        name: "test-workflows",
        compatibilityDate: "2026-07-01",
        modulesRoot: ROOT,
        modules: [
          { type: "ESModule", path: path.join(ROOT, "tests/miniflare/workflows.mjs") },
          { type: "ESModule", path: path.join(ROOT, "js/with-key.mjs") },
        ],
        durableObjects: {
          COORDINATOR: { className: "Coordinator", scriptName: "baton", useSQLite: true },
          RECORDER: { className: "Recorder", useSQLite: true },
        },
        workflows: {
          TEST_WF: { name: "test-workflow", className: "TestWorkflow" },
        },
      },
      {
        name: "baton",
        compatibilityDate: "2026-07-01",
        modulesRoot: ROOT,
        modules: [
          { type: "ESModule", path: path.join(ROOT, "js/worker.mjs") },
          { type: "ESModule", path: path.join(ROOT, "build/index.js") },
          { type: "CompiledWasm", path: path.join(ROOT, "build/index_bg.wasm") },
        ],
        durableObjects: {
          COORDINATOR: { className: "Coordinator", useSQLite: true },
        },
        workflows: {
          WORKFLOW: { name: "test-workflow", className: "TestWorkflow", scriptName: "test-workflows" },
        },
        bindings: {
          HOLDER_CHECK_MS: String(options.holderCheckMs ?? 5000),
          ...options.vars,
        },
      },
    ],
  });
  await mf.ready;
  return new Harness(mf);
}

class Harness {
  constructor(mf) {
    this.mf = mf;
  }

  async call(route, body) {
    const response = await this.mf.dispatchFetch(`http://test${route}`, {
      method: body === undefined ? "GET" : "POST",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${route}: ${response.status} ${text}`);
    return JSON.parse(text);
  }

  /** Calls a Coordinator method through a DO stub; returns { value } or { error }. */
  rpc(key, method, ...args) {
    return this.call("/rpc", { key, method, args });
  }

  async ok(key, method, ...args) {
    const result = await this.rpc(key, method, ...args);
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  }

  inspect(key) {
    return this.ok(key, "inspect", key);
  }

  create(id, params) {
    return this.call("/create", { id, params });
  }

  async status(id) {
    return (await this.call(`/status?id=${encodeURIComponent(id)}`)).status;
  }

  terminate(id) {
    return this.call("/terminate", { id });
  }

  sendEvent(id, type, payload) {
    return this.call("/event", { id, type, payload });
  }

  log() {
    return this.call("/log");
  }

  /** Polls `probe` until it returns a truthy value (bounded by `timeoutMs`). */
  async until(what, probe, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  untilStatus(id, wanted) {
    const set = new Set([wanted].flat());
    return this.until(`${id} to be ${[...set]}`, async () => {
      const status = await this.status(id);
      return set.has(status) ? status : null;
    });
  }

  dispose() {
    return this.mf.dispose();
  }
}
