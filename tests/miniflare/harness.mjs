// Starts Baton and a test Worker in one Miniflare: the real Workflow engine,
// the real Coordinator Durable Object (SQLite-backed) and the built WASM.
//
// The options are Miniflare 5's (the Miniflare that the pinned wrangler
// runs, on its workerd): each Worker is `{ config, dev }`, its modules a
// manifest of contents, its bindings typed entries of `env`. The helpers
// below build those entries, so a test names a binding in one line.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The compatibility date of every Worker the tests and the bench start: the
 * date of the workerd that the pinned wrangler ships (workerd 1.YYYYMMDD.N),
 * the newest that runtime knows. package.test.mjs checks that every wrangler
 * config of the repository and docs/deploying.md names the same date, and
 * `npm run upgrade-runtime` moves them all with the pins.
 */
export const COMPATIBILITY_DATE = workerdDate();

function workerdDate() {
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "node_modules/workerd/package.json"), "utf8"));
  const [, y, m, d] = version.match(/^1\.(\d{4})(\d{2})(\d{2})\./) ?? [];
  if (!y) throw new Error(`workerd ${version}: not 1.YYYYMMDD.N`);
  return `${y}-${m}-${d}`;
}

/** A module of a manifest: its type and its bytes, read from `file` under ROOT unless given. */
const MODULE_TYPES = { ".mjs": "esm", ".js": "esm", ".wasm": "wasm" };

/**
 * A Worker's module manifest: `files` relative to ROOT, the first one the
 * main module; `contents` replaces a file's bytes (`{ [file]: bytes }`).
 */
export function manifest(files, contents = {}) {
  const modules = {};
  for (const file of files) {
    const type = MODULE_TYPES[path.extname(file)];
    if (!type) throw new Error(`manifest: no module type for ${file}`);
    const bytes = contents[file] ?? readFileSync(path.join(ROOT, file));
    modules[file] = { type, contents: type === "esm" ? String(bytes) : new Uint8Array(bytes) };
  }
  return { mainModule: files[0], modulesRoot: ROOT, modules };
}

/** Binding entries of a Worker's `env`. */
export const bind = {
  /** A Durable Object class `exportName` of Worker `worker`. */
  durableObject: (worker, exportName) => ({ type: "durable-object", worker, exportName }),
  /** Workflow `name`, whose class `exportName` Worker `worker` defines. */
  workflow: (worker, name, exportName) => ({ type: "workflow", name, worker, exportName }),
  /** A service binding to Worker `worker`'s default entrypoint. */
  service: (worker) => ({ type: "worker", worker }),
  d1: (id) => ({ type: "d1", id }),
  text: (value) => ({ type: "text", value }),
  /** Every entry of `vars` as a text binding. */
  vars: (vars) => Object.fromEntries(Object.entries(vars).map(([name, value]) => [name, bind.text(value)])),
};

/** The `exports` entries declaring SQLite-backed Durable Object classes. */
export function sqliteClasses(...classNames) {
  return Object.fromEntries(classNames.map((name) => [name, { type: "durable-object", storage: "sqlite" }]));
}

/**
 * A Miniflare 5 Worker entry. `sockets`: real ports for it (see batonUrl()).
 */
export function worker({ name, modules, env = {}, exports = {}, sockets }) {
  return {
    config: { name, compatibilityDate: COMPATIBILITY_DATE, manifest: modules, env, exports },
    dev: sockets ? { unsafeDirectSockets: sockets } : {},
  };
}

/**
 * A Worker that embeds Baton (contract §1a's embedded mode) and declares
 * its Workflows in `exports` only: its own module `entry` first, the
 * package's modules `js/<name>` it imports, then Baton's Worker and build.
 * It binds the Coordinator and the busy list as Baton's own classes and
 * declares them, with `classes` beside them, as SQLite-backed objects.
 */
export function embeddingWorker({ name, entry, jsModules = [], env = {}, classes = [], workflows = {} }) {
  return worker({
    name,
    modules: manifest([
      entry,
      ...jsModules.map((module) => `js/${module}`),
      "js/worker.mjs",
      "build/index.js",
      "build/assets.js",
      "build/index_bg.wasm",
    ]),
    env: {
      COORDINATOR: bind.durableObject(name, "Coordinator"),
      BUSY_LIST: bind.durableObject(name, "BusyList"),
      ...env,
    },
    exports: { ...sqliteClasses("Coordinator", "BusyList", ...classes), ...workflows },
  });
}

/**
 * Collects everything the Workers runtime prints, one entry a line (its
 * structured logs: decision logs among them), into `lines`; keeps at most
 * `keep` of the newest when given.
 */
export function collectLogs(lines, keep) {
  return (log) => {
    lines.push(...String(log.message).split("\n"));
    if (keep) lines.splice(0, Math.max(0, lines.length - keep));
  };
}

/**
 * @param {{ holderCheckMs?: number, vars?: Record<string, string>, listen?: boolean,
 *   persistRoot?: string, workflows?: Record<string, object> }} options
 * `listen`: Baton also gets a real HTTP port on 127.0.0.1 (for a browser), see `batonUrl()`.
 * `persistRoot`: keep every store (Durable Objects, alarms, Workflows, D1)
 * in this directory, so a later `startBaton` on it is a restart.
 * `workflows`: Workflow bindings Baton gets besides `WORKFLOW`, `OTHER` and `ECHO`.
 * `strict`: Baton's bindings go through the fault injector (see
 * `batonWorker`); on by default (`BATON_STRICT_BINDING=0` turns it off
 * for every Baton the tests start).
 * `migrations`: a directory of D1 migrations to apply instead of
 * migrations/ (an older release's, to test an upgrade).
 */
export async function startBaton(options = {}) {
  // Everything the Workers runtime prints, line by line (decision logs among it).
  const runtimeLines = [];
  const mf = new Miniflare({
    ...(options.persistRoot ? { resourcePersistencePath: options.persistRoot } : {}),
    handleStructuredLogs: collectLogs(runtimeLines),
    workers: [
      worker({
        name: "test-workflows",
        modules: manifest(callerModules("tests/miniflare/workflows.mjs")),
        env: {
          COORDINATOR: bind.durableObject("baton", "Coordinator"),
          DEBOUNCER: bind.durableObject("baton", "Debouncer"),
          RUNS: bind.durableObject("baton", "Runs"),
          BUSY_LIST: bind.durableObject("baton", "BusyList"),
          RECORDER: bind.durableObject("test-workflows", "Recorder"),
          FENCED: bind.durableObject("test-workflows", "FencedStore"),
          RATE_LIMITER: bind.durableObject("baton", "RateLimiter"),
          TEST_WF: bind.workflow("test-workflows", "test-workflow", "TestWorkflow"),
          OTHER_WF: bind.workflow("test-workflows", "other-workflow", "OtherWorkflow"),
          ECHO_WF: bind.workflow("test-workflows", "echo-workflow", "EchoWorkflow"),
          BATON: bind.service("baton"),
        },
        exports: sqliteClasses("Recorder", "FencedStore"),
      }),
      batonWorker({
        strict: options.strict,
        workflow: { name: "test-workflow", className: "TestWorkflow", scriptName: "test-workflows" },
        // OTHER: a second Workflow sharing Baton's keys (contract §1a);
        // ECHO: what the Debouncer starts in tests.
        workflows: {
          OTHER: { name: "other-workflow", className: "OtherWorkflow", scriptName: "test-workflows" },
          ECHO: ECHO_WORKFLOW,
          ...options.workflows,
        },
        vars: {
          HOLDER_CHECK_MS: String(options.holderCheckMs ?? 5000),
          WORKFLOW_BINDINGS: "WORKFLOW,OTHER",
          ...options.vars,
        },
        // Port 0: the OS picks a free one; batonUrl() reads it back.
        sockets: options.listen ? [{ host: "127.0.0.1", port: 0 }] : undefined,
      }),
    ],
  });
  await mf.ready;
  const db = await mf.getD1Database("DB", "baton");
  // A restart on persisted storage finds the tables already there.
  const migrated = options.persistRoot && (await tableExists(db, "serial_queue"));
  if (!migrated) await applyMigrations(db, options.migrations);
  const harness = new Harness(mf);
  harness.runtimeLines = runtimeLines;
  return harness;
}

/**
 * A key's or group's inspection without what time alone changes (§10a):
 * the wait figures, which count the current waiters' waits so far, and each
 * holder's last check, which the holder-check alarm renews. What a refused
 * or idempotent call must leave as it was.
 */
export function settled({ waits, ...view }) {
  if (!Array.isArray(view.holders)) return view;
  return { ...view, holders: view.holders.map(({ checked, ...holder }) => holder) };
}

/** The test Worker's Workflow that returns its params (for the Debouncer's starts). */
export const ECHO_WORKFLOW = { name: "echo-workflow", className: "EchoWorkflow", scriptName: "test-workflows" };

async function tableExists(db, name) {
  const { results } = await db.prepare("PRAGMA table_list").all();
  return results.some((row) => row.name === name);
}

/** Baton's classes, each a SQLite-backed Durable Object bound under its name. */
const BATON_CLASSES = {
  COORDINATOR: "Coordinator",
  RATE_LIMITER: "RateLimiter",
  DEBOUNCER: "Debouncer",
  RUNS: "Runs",
  BUSY_LIST: "BusyList",
};

/**
 * Whether every Baton the tests start reaches its Workflows and D1 through
 * the fault injector (tests/miniflare/fault-injector.mjs): production-strict
 * Workflow bindings (miniflare's engine is more lenient than production,
 * TOOLCHAIN.md), and no fault unless a test's plan sets one. On by
 * default, so `npm test` (and CI) sees production's refusals;
 * `BATON_STRICT_BINDING=0` runs against miniflare's bindings as they are.
 */
export const STRICT_BINDING = process.env.BATON_STRICT_BINDING !== "0";
const FAULT_INJECTOR = "tests/miniflare/fault-injector.mjs";

/**
 * Miniflare's Worker entry for Baton's own Worker, as wrangler.toml declares
 * it: the entry module, the built WASM with its glue and static files
 * (build/assets.js), its Durable Objects, D1, and the Workflow it coordinates
 * (`workflow`: `{ name, className, scriptName }`, bound as WORKFLOW;
 * `workflows`: more, by binding name). `vars`: its variables.
 * `wasm`: other module bytes to load instead of build/index_bg.wasm.
 * `sockets`: real ports for it. `strict`: the fault injector is its main
 * module (it re-exports every class with wrapped bindings).
 */
export function batonWorker({ workflow, workflows = {}, vars = {}, wasm, sockets, strict = STRICT_BINDING }) {
  const files = ["js/worker.mjs", "build/index.js", "build/assets.js", "build/index_bg.wasm"];
  if (strict) {
    // The fault injector is Baton's main module, embedding js/worker.mjs as a user's Worker does.
    files.unshift(FAULT_INJECTOR);
    vars = { FAULT_INJECTOR_WORKFLOWS: Object.keys({ WORKFLOW: workflow, ...workflows }).join(","), ...vars };
  }
  const env = {
    ...Object.fromEntries(Object.entries(BATON_CLASSES).map(([name, className]) => [name, bind.durableObject("baton", className)])),
    DB: bind.d1("DB"),
    ...Object.fromEntries(
      Object.entries({ WORKFLOW: workflow, ...workflows }).map(([name, w]) => [name, bind.workflow(w.scriptName, w.name, w.className)]),
    ),
    ...bind.vars(vars),
  };
  return worker({
    name: "baton",
    modules: manifest(files, wasm ? { "build/index_bg.wasm": wasm } : {}),
    env,
    exports: sqliteClasses(...Object.values(BATON_CLASSES)),
    sockets,
  });
}

/** A calling Worker's module files: its entry plus the npm package's helpers. */
export function callerModules(entry) {
  return [entry, "js/with-key.mjs", "js/serialize.mjs", "js/rate-limit.mjs", "js/steps.mjs", "js/options.mjs", "js/coordinated.mjs", "js/debounce.mjs", "js/runs.mjs"];
}

/**
 * Applies migrations/*.sql in name order, as `wrangler d1 migrations apply`
 * does, recording each in wrangler's `d1_migrations` table so that a
 * restart on persisted storage applies only what is new. `dir` is another
 * copy of them (the installed package's).
 */
export async function applyMigrations(db, dir = path.join(ROOT, "migrations")) {
  await db
    .prepare("CREATE TABLE IF NOT EXISTS d1_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TEXT)")
    .run();
  const applied = new Set((await db.prepare("SELECT name FROM d1_migrations").all()).results.map((r) => r.name));
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql") && !applied.has(f)).sort()) {
    const text = readFileSync(path.join(dir, file), "utf8").replace(/^--.*$/gm, "");
    for (const statement of text.split(";").map((s) => s.trim()).filter(Boolean)) {
      await db.prepare(statement).run();
    }
    await db.prepare("INSERT INTO d1_migrations (name, applied_at) VALUES (?, datetime('now'))").bind(file).run();
  }
}

/**
 * The list shard a key lives on (contract §10), computed here independently
 * of Baton's Rust (src/busy/shard.rs): FNV-1a, 64 bits, of the key's UTF-8
 * bytes, modulo the shard count. A report sent elsewhere would not be found
 * by the shard a Coordinator reports to.
 */
export function shardOf(key, shards) {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(key)) {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return Number(hash % BigInt(shards));
}

/** A list shard's object name, by its index (src/busy/shard.rs). */
export const shardName = (index) => `baton-list-${index}`;

export class Harness {
  constructor(mf) {
    this.mf = mf;
    /** How often `until` polls. */
    this.pollMs = 50;
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

  /** Calls a serial-queue method through the service binding; returns { value } or { error }. */
  serial(method, ...args) {
    return this.call("/serial", { method, args });
  }

  /** Calls a RateLimiter method through the bucket's DO stub; returns { value } or { error }. */
  rate(bucket, method, ...args) {
    return this.call("/rate", { bucket, method, args });
  }

  /** Calls a RateLimiter method; returns its value, throws its error. */
  async rateOk(bucket, method, ...args) {
    const result = await this.rate(bucket, method, ...args);
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  }

  /** Calls a Coordinator method through a DO stub; returns { value } or { error }. */
  rpc(key, method, ...args) {
    return this.call("/rpc", { key, method, args });
  }

  /** Calls a Coordinator method; returns its value, throws its error. */
  async ok(key, method, ...args) {
    const result = await this.call("/rpc", { key, method, args });
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  }

  inspect(key) {
    return this.ok(key, "inspect", key);
  }

  /** Calls a Runs method (`method(key, options)`) through a DO stub; returns { value } or { error }. */
  runs(key, method, options) {
    return this.call("/runs", { key, method, args: options === undefined ? [key] : [key, options] });
  }

  /** Calls a Runs method; returns its value, throws its error. */
  async runsOk(key, method, options) {
    const result = await this.runs(key, method, options);
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  }

  /** Creates instance `id`; `workflow` "OTHER" makes it an OtherWorkflow instance. */
  create(id, params, workflow) {
    return this.call("/create", { id, params, workflow });
  }

  /**
   * The instance's status details (`status`, `output`, ...); `not_found` if
   * unknown. `workflow`: "OTHER", or "echo" for the EchoWorkflow's instances.
   */
  details(id, workflow) {
    const of = workflow ? `&workflow=${workflow}` : "";
    return this.call(`/status?id=${encodeURIComponent(id)}${of}`);
  }

  /** Calls a Debouncer method through a DO stub; returns { value } or { error }. */
  debouncer(key, method, ...args) {
    return this.call("/debouncer", { key, method, args });
  }

  async status(id, workflow) {
    return (await this.details(id, workflow)).status;
  }

  terminate(id, workflow) {
    return this.call("/terminate", { id, workflow });
  }

  sendEvent(id, type, payload, workflow) {
    return this.call("/event", { id, type, payload, workflow });
  }

  log() {
    return this.call("/log");
  }

  /** The Recorder's log restricted to `ids`, as "enter id" / "exit id" lines. */
  async logOf(ids) {
    const wanted = new Set(ids);
    return (await this.log()).filter((e) => wanted.has(e.id)).map((e) => `${e.kind} ${e.id}`);
  }

  /** Waits for instance `id` to finish and returns its output; throws unless it completed. */
  async output(id, timeoutMs, workflow) {
    await this.untilStatus(id, ["complete", "errored", "terminated"], timeoutMs, workflow);
    const details = await this.details(id, workflow);
    if (details.status !== "complete") {
      throw new Error(`${id} should complete: ${JSON.stringify(details)}`);
    }
    return details.output;
  }

  /** Polls `probe` until it returns a truthy value (bounded by `timeoutMs`). */
  async until(what, probe, timeoutMs = 60_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, this.pollMs));
    }
  }

  untilStatus(id, wanted, timeoutMs, workflow) {
    const set = new Set([wanted].flat());
    return this.until(
      `${id} to be ${[...set]}`,
      async () => {
        const status = await this.status(id, workflow);
        return set.has(status) ? status : null;
      },
      timeoutMs,
    );
  }

  /** Polls `inspect(key)` until `predicate` holds for it; returns that view. */
  untilInspect(key, what, predicate, timeoutMs) {
    return this.until(
      `${key}: ${what}`,
      async () => {
        const view = await this.inspect(key);
        return predicate(view) ? view : null;
      },
      timeoutMs,
    );
  }

  /**
   * Sends a request to Baton's own fetch handler (the HTTP API), not to the
   * test Worker that `dispatchFetch` reaches. Returns the Response.
   */
  async fetchBaton(route, init = {}) {
    this.batonWorker ??= await this.mf.getWorker("baton");
    return this.batonWorker.fetch(`http://baton${route}`, init);
  }

  /**
   * Sets the fault injector's plan (tests/miniflare/fault-injector.mjs,
   * `faultPlan`); needs startBaton({ strict: true }). Returns what the
   * previous plan injected: `{ seed, injected: { [kind]: count } }`.
   */
  async faults(plan) {
    const response = await this.fetchBaton("/__fault-injector", { method: "POST", body: JSON.stringify(plan) });
    if (!response.ok) throw new Error(`fault plan: ${response.status} ${await response.text()}`);
    return response.json();
  }

  /** What the fault injector's plan has injected so far. */
  async faultReport() {
    return (await this.fetchBaton("/__fault-injector")).json();
  }

  /** Baton's own address on a real port (a URL ending in "/"); needs startBaton({ listen: true }). */
  async batonUrl() {
    return (await this.mf.unsafeGetDirectURL("baton")).href;
  }

  dispose() {
    return this.mf.dispose();
  }
}
