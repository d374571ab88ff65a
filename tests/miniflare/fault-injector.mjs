// A FAULT INJECTOR (test code): Baton's Worker as a user embeds it, every
// class of js/worker.mjs re-exported, each given an `env` whose Workflow
// bindings and D1 are wrappers around the real ones. Baton reaches them as
// it reaches the real ones, through the variables naming the bindings
// (WORKFLOW_BINDING, WORKFLOW_BINDINGS, "DB"); its own code has no branch
// for them.
//
// Always on (production-strict, where miniflare's engine is lenient;
// TOOLCHAIN.md):
// - `sendEvent` to an ended instance (complete, errored, terminated) throws;
// - `create` with an id already in use throws;
// - an event type outside ^[A-Za-z0-9_][A-Za-z0-9_-]*$ or over 100
//   characters throws.
//
// On a plan (POST /__fault-injector to Baton's Worker; `faultPlan` below):
// seeded faults, each decided by a hash of (seed, call, its identity, how
// many times that identity was called), so a seed gives the same faults to
// the same calls whatever order the runtime interleaves them in:
// - `status`, `sendEvent`, `create`, `terminate` throw production's
//   transient "internal error", or hang (up to `hangMsMax`) first; or,
//   scripted (`hangs`), never answer at all;
// - the calling Durable Object resets (`ctx.abort()`) when a chosen call
//   arrives: before its commit (a method of the object), between its
//   commit and the effect (a Workflow call, not made), or after the effect
//   (the call made, then the reset);
// - a D1 `batch` (the serial queue's) fails as a whole, before it runs;
// - a Durable Object's SQL write (`ctx.storage.sql.exec` of an INSERT,
//   UPDATE, DELETE or REPLACE) throws, as a failing storage would;
// - the object sending a list report (`BUSY_LIST`'s `report`) resets
//   between its commit and the report, or after it.
//
// A STAND-IN DATASET (test code): with the variable FAULT_INJECTOR_METRICS
// set, Baton's env has a `BATON_METRICS` that is not Workers Analytics
// Engine (miniflare has none) but records each `writeDataPoint` in this
// isolate (GET /__fault-injector/metrics reads and clears them), or, while
// the plan says `metricsThrow`, throws as a failing dataset would.
import * as baton from "../../js/worker.mjs";

/** Production's limits on an event type (TOOLCHAIN.md). */
const EVENT_TYPE = /^[A-Za-z0-9_][A-Za-z0-9_-]*$/;
const EVENT_TYPE_CHARS_MAX = 100;
const ENDED = new Set(["complete", "errored", "terminated"]);

/** The plan in force for this isolate (every object of Baton's Worker shares it), and what it injected. */
let plan = emptyPlan();
let injected = {};
/** How many times each call identity was seen under this plan (the hash's counter). */
let seen = new Map();
/** Ids this isolate has created, per Workflow: two racing creates of one id cannot both pass the check. */
const createdIds = new Map();

 /** The data points the stand-in dataset recorded (see the top). */
let metricPoints = [];

/** The stand-in for an Analytics Engine dataset: records, or throws while the plan says so. */
const standInDataset = {
  writeDataPoint(point) {
    if (plan.metricsThrow) {
      count("metricsThrown");
      throw new Error("fault-injector: writeDataPoint failed");
    }
    metricPoints.push(JSON.parse(JSON.stringify(point)));
  },
};

function emptyPlan() {
  return { metricsThrow: false, seed: 0, rates: {}, hangRate: 0, hangMsMax: 0, fails: [], hangs: [], resets: [], resetRates: {}, d1BatchRate: 0, d1Fails: 0, sqlFails: [] };
}

/**
 * Sets the plan: `{ seed, rates: { status, sendEvent, create, terminate }
 * (0..1, a thrown transient error), hangRate, hangMsMax (a hang before the
 * call, up to the bound), fails: [{ call, id?, type?, times? }] (scripted
 * transient errors: the next `times` matching calls throw), hangs: [{ call,
 * id?, type?, times? }] (the next `times` matching calls never answer: a
 * hang beyond any bound, which the caller can only abandon), resets: [{
 * object, at: "before" | "between" | "after", call, type?, id?, key?,
 * times? }], resetRates: { before, between, after } (seeded resets of any
 * object: as any method but `inspect` arrives, before or after any
 * `sendEvent`, `create`, `terminate` or list `report` it makes), d1BatchRate, d1Fails
 * (the next d1Fails batches fail), sqlFails: [{ object, times? }] (the next
 * `times` SQL writes of that class's objects throw) }`.
 * Returns what the previous plan injected.
 */
export function faultPlan(next) {
  const report = faultReport();
  const once = (list) => (list ?? []).map((r) => ({ times: 1, ...r }));
  plan = {
    ...emptyPlan(),
    ...next,
    fails: once(next.fails),
    hangs: once(next.hangs),
    resets: once(next.resets),
    sqlFails: once(next.sqlFails),
  };
  injected = {};
  seen = new Map();
  return report;
}

export function faultReport() {
  return { seed: plan.seed, injected: { ...injected } };
}

function count(kind) {
  injected[kind] = (injected[kind] ?? 0) + 1;
}

/** A uniform draw in [0, 1) for the `n`th call of `identity`: FNV-1a then a 32-bit finalizer. */
function draw(identity) {
  const n = (seen.get(identity) ?? 0) + 1;
  seen.set(identity, n);
  let h = 0x811c9dc5;
  for (const c of `${plan.seed}|${identity}|${n}`) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 2 ** 32;
}

/** Production's transient failure of a platform call. */
function transient(call) {
  return new Error(`internal error; reference = fault-injector ${call}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The seeded faults of one binding call: a hang (up to the bound), then a
 * thrown transient error, each at the plan's rate for `call`.
 */
async function platformFaults(call, identity, { type, id } = {}) {
  const matches = (f) => f.times > 0 && f.call === call && (f.type === undefined || f.type === type) && (f.id === undefined || f.id === id);
  const forever = plan.hangs.find(matches);
  if (forever) {
    forever.times -= 1;
    count(`hang forever ${call}`);
    await new Promise(() => {});
  }
  const scripted = plan.fails.find(matches);
  if (scripted) {
    scripted.times -= 1;
    count(`throw ${call}`);
    throw transient(call);
  }
  if (plan.hangRate > 0) {
    const hang = draw(`hang ${call} ${identity}`);
    if (hang < plan.hangRate) {
      count(`hang ${call}`);
      await sleep(Math.floor((hang / plan.hangRate) * plan.hangMsMax));
    }
  }
  const rate = plan.rates[call] ?? 0;
  if (rate > 0 && draw(`${call} ${identity}`) < rate) {
    count(`throw ${call}`);
    throw transient(call);
  }
}

/**
 * The reset the plan holds for `object` at point `at` of `call` (with the
 * event `type`, instance `id` or the method's `key`, where they apply),
 * used up once taken.
 */
function resetDue(object, at, call, { type, id, key } = {}) {
  const reset = plan.resets.find(
    (r) =>
      r.times > 0 &&
      r.object === object &&
      r.at === at &&
      r.call === call &&
      (r.type === undefined || r.type === type) &&
      (r.id === undefined || r.id === id) &&
      (r.key === undefined || r.key === key),
  );
  if (reset) {
    reset.times -= 1;
  } else {
    const rate = plan.resetRates[at] ?? 0;
    if (!(rate > 0 && !UNRESET.has(call) && draw(`reset ${object} ${at} ${call} ${type ?? ""} ${id ?? ""} ${key ?? ""}`) < rate)) {
      return false;
    }
  }
  count(`reset ${object} ${at} ${call}`);
  return true;
}

/** Methods a seeded reset spares: the tests' own reads of what an object holds. */
const UNRESET = new Set(["inspect", "storageWork"]);

/**
 * Resets the Durable Object `ctx` belongs to, as a deploy or an overload
 * would. Awaited first, so that no WASM frame is on the stack: production
 * never resets an object inside a synchronous call into its WASM, and an
 * abort thrown through one leaves the module's state half-borrowed for
 * every object of the isolate.
 */
async function reset(ctx, why) {
  await Promise.resolve();
  ctx.abort(`fault-injector: reset ${why}`);
  // abort() ends the object; should it return, the call must not go on.
  throw new Error(`fault-injector: reset ${why}`);
}

/** One instance of a strict Workflow binding: the real handle, with production's refusals. */
class StrictInstance {
  #instance;
  #workflow;
  #object;

  constructor(instance, workflow, object) {
    this.#instance = instance;
    this.#workflow = workflow;
    this.#object = object;
    this.id = instance.id;
  }

  async status() {
    await platformFaults("status", `${this.#workflow.name} ${this.id}`, { id: this.id });
    return this.#instance.status();
  }

  async sendEvent(event) {
    const type = event?.type;
    if (typeof type !== "string" || type.length > EVENT_TYPE_CHARS_MAX || !EVENT_TYPE.test(type)) {
      throw new TypeError(`invalid event type ${JSON.stringify(type)}: must match ${EVENT_TYPE} and be at most ${EVENT_TYPE_CHARS_MAX} characters`);
    }
    const where = { type, id: this.id };
    if (this.#object && resetDue(this.#object.name, "between", "sendEvent", where)) {
      await reset(this.#object.ctx, `before sendEvent ${type} to ${this.id}`);
    }
    await platformFaults("sendEvent", `${this.#workflow.name} ${this.id} ${type}`, where);
    const { status } = await this.#instance.status();
    if (ENDED.has(status)) {
      throw new Error(`(instance.not_running) cannot send an event to instance ${this.id}: it is ${status}`);
    }
    await this.#instance.sendEvent(event);
    if (this.#object && resetDue(this.#object.name, "after", "sendEvent", where)) {
      await reset(this.#object.ctx, `after sendEvent ${type} to ${this.id}`);
    }
  }

  async terminate() {
    const where = { id: this.id };
    if (this.#object && resetDue(this.#object.name, "between", "terminate", where)) {
      await reset(this.#object.ctx, `before terminate of ${this.id}`);
    }
    await platformFaults("terminate", `${this.#workflow.name} ${this.id}`, where);
    await this.#instance.terminate();
    if (this.#object && resetDue(this.#object.name, "after", "terminate", where)) {
      await reset(this.#object.ctx, `after terminate of ${this.id}`);
    }
  }

  pause() {
    return this.#instance.pause();
  }

  resume() {
    return this.#instance.resume();
  }

  restart() {
    return this.#instance.restart();
  }
}

/** A Workflow binding that refuses what production refuses, and injects the plan's faults. */
class StrictWorkflow {
  #workflow;
  #object;

  /** `object`: `{ name, ctx }` of the Durable Object calling, if one is. */
  constructor(workflow, name, object) {
    this.#workflow = workflow;
    this.#object = object;
    this.name = name;
  }

  async get(id) {
    return new StrictInstance(await this.#workflow.get(id), this, this.#object);
  }

  async create(options = {}) {
    const id = options.id;
    const where = { id };
    if (this.#object && resetDue(this.#object.name, "between", "create", where)) {
      await reset(this.#object.ctx, `before create of ${id}`);
    }
    await platformFaults("create", `${this.name} ${id}`, where);
    if (id !== undefined) {
      const ids = createdIds.get(this.name) ?? createdIds.set(this.name, new Set()).get(this.name);
      // Claimed before the first await, so a racing create of the same id sees it.
      if (ids.has(id) || (await this.#exists(id))) {
        throw new Error(`(instance.already_exists) an instance with id ${id} already exists`);
      }
      ids.add(id);
    }
    const instance = await this.#workflow.create(options);
    if (this.#object && resetDue(this.#object.name, "after", "create", where)) {
      await reset(this.#object.ctx, `after create of ${id}`);
    }
    return new StrictInstance(instance, this, this.#object);
  }

  async #exists(id) {
    try {
      await this.#workflow.get(id);
      return true;
    } catch {
      return false;
    }
  }

  async createBatch(batch) {
    const instances = [];
    for (const options of batch) instances.push(await this.create(options));
    return instances;
  }
}

/** A D1 database whose `batch` fails as a whole at the plan's rate (before it runs, as a refused transaction). */
class D1Database {
  #db;

  constructor(db) {
    this.#db = db;
  }

  prepare(query) {
    return this.#db.prepare(query);
  }

  async batch(statements) {
    const scripted = plan.d1Fails > 0;
    if (scripted) plan.d1Fails -= 1;
    if (scripted || (plan.d1BatchRate > 0 && draw(`d1 batch ${statements.length}`) < plan.d1BatchRate)) {
      count("throw d1 batch");
      throw new Error("D1_ERROR: internal error; reference = fault-injector batch");
    }
    return this.#db.batch(statements);
  }

  exec(query) {
    return this.#db.exec(query);
  }

  dump() {
    return this.#db.dump();
  }

  withSession(...args) {
    return this.#db.withSession(...args);
  }
}

/**
 * The list shards' namespace (`BUSY_LIST`) as a Durable Object sees it:
 * the real one, except that a stub's `report` (a Coordinator's list report
 * of `report.key`) can reset the object sending it, between its commit and
 * the report or after the report.
 */
function listNamespace(namespace, object) {
  const stubOf = (stub) =>
    new Proxy(stub, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (name !== "report") return bound(target, name, value);
        return async (report, ...rest) => {
          const where = { key: report?.key };
          if (resetDue(object.name, "between", "report", where)) await reset(object.ctx, `before the list report of ${where.key}`);
          const answer = await target.report(report, ...rest);
          if (resetDue(object.name, "after", "report", where)) await reset(object.ctx, `after the list report of ${where.key}`);
          return answer;
        };
      },
    });
  // Methods bound to the real object (the runtime's own check `this`); its
  // constructor as it is (workers-rs checks a binding's type by its name).
  const bound = (target, name, value) => (typeof value === "function" && name !== "constructor" ? value.bind(target) : value);
  return new Proxy(namespace, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (name === "get") return (...args) => stubOf(target.get(...args));
      return bound(target, name, value);
    },
  });
}

/** The names of the Workflow bindings to wrap: the harness lists them in FAULT_INJECTOR_WORKFLOWS. */
function workflowNames(env) {
  return new Set(String(env.FAULT_INJECTOR_WORKFLOWS ?? "").split(",").filter(Boolean));
}

/** `env` as Baton is given it: its Workflows strict and faulty, its D1 faulty. `object`: the calling Durable Object. */
function injectedEnv(env, object) {
  const wrapped = new Map();
  const names = workflowNames(env);
  return new Proxy(env, {
    get(target, name, receiver) {
      if (name === "BATON_METRICS" && target.FAULT_INJECTOR_METRICS) return standInDataset;
      const value = Reflect.get(target, name, receiver);
      if (typeof name !== "string" || value == null) return value;
      if (!wrapped.has(name)) {
        if (names.has(name)) wrapped.set(name, new StrictWorkflow(value, name, object));
        else if (name === "DB") wrapped.set(name, new D1Database(value));
        else if (name === "BUSY_LIST" && object) wrapped.set(name, listNamespace(value, object));
        else return value;
      }
      return wrapped.get(name);
    },
  });
}

/** A SQL statement that changes rows. */
const SQL_WRITE = /^\s*(INSERT|UPDATE|DELETE|REPLACE)\b/i;

/**
 * The object's own SQLite with its writes able to fail on the plan
 * (`sqlFails`): its `exec` of a write throws before running, as a failing
 * storage would. The real handle's `exec`, shadowed on it.
 */
function faultySql(ctx, object) {
  const sql = ctx.storage?.sql;
  if (!sql) return;
  const exec = sql.exec.bind(sql);
  sql.exec = (query, ...bindings) => {
    const failing =
      plan.sqlFails.length > 0 && SQL_WRITE.test(query) && plan.sqlFails.find((f) => f.object === object && f.times > 0);
    if (failing) {
      failing.times -= 1;
      count(`sqlWrite ${object}`);
      throw new Error(`fault-injector: SQL write failed (${object})`);
    }
    return exec(query, ...bindings);
  };
}

/**
 * `Base` with an injected `env` and SQL writes that can fail, and each RPC
 * method (and the alarm) able to reset the object when it arrives, before
 * anything is committed.
 */
function faulty(Base) {
  const object = Base.name;
  const Faulty = class extends Base {
    constructor(ctx, env) {
      faultySql(ctx, object);
      super(ctx, injectedEnv(env, { name: object, ctx }));
    }
  };
  for (const method of Object.getOwnPropertyNames(Base.prototype)) {
    if (method === "constructor") continue;
    const real = Base.prototype[method];
    if (typeof real !== "function") continue;
    Faulty.prototype[method] = function (...args) {
      if (resetDue(object, "before", method, { key: args[0] })) return reset(this.ctx, `before ${object}.${method}`);
      return real.apply(this, args);
    };
  }
  Object.defineProperty(Faulty, "name", { value: object });
  return Faulty;
}

export const Coordinator = faulty(baton.Coordinator);
export const RateLimiter = faulty(baton.RateLimiter);
export const Debouncer = faulty(baton.Debouncer);
export const Runs = faulty(baton.Runs);
export const BusyList = faulty(baton.BusyList);

/** The default entrypoint, its `env` injected; `/__fault-injector` sets the plan (POST) or reads it (GET). */
export class Baton extends baton.Baton {
  constructor(ctx, env) {
    super(ctx, injectedEnv(env, undefined));
  }

  async fetch(request) {
    if (new URL(request.url).pathname === "/__fault-injector/metrics") {
      const points = metricPoints;
      metricPoints = [];
      return Response.json(points);
    }
    if (new URL(request.url).pathname === "/__fault-injector") {
      const reply = request.method === "POST" ? faultPlan(await request.json()) : faultReport();
      return Response.json(reply);
    }
    return super.fetch(request);
  }
}

export default Baton;
