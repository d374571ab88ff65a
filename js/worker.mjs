// The Worker's entry module, and the npm package's `baton-workflows/worker`: the Rust
// build (build/index.js, which imports the WASM; build/assets.js, the static
// files it serves) plus the one thing Rust
// cannot declare, Durable Object classes that extend `DurableObject`
// (workerd refuses JS RPC to any other), and a default entrypoint that
// carries the RPC methods for service-binding callers.
// No logic lives here: the Durable Objects' methods hand the contract's
// positional arguments to Rust (`CoordinatorCore`, ...), or turn them into
// the request object (`{ key, instanceId, ... }`, the same object the
// entrypoint's methods take) for it; Rust decodes and checks either. The
// entrypoint's methods hand their one object argument on as is. Those
// methods are generated from the method table (src/edge/methods.rs) into
// the marked regions (src/edge/worker_js.rs); the rest is written by hand.
//
// Standalone, this module is Baton's `main`. Embedded, a user's Worker
// re-exports the classes and mounts the rest with `handleFetch` and
// `batonService` (docs/deploying.md). Every export below is part of
// the package's surface, declared in worker.d.ts.
import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";
import {
  BusyListCore,
  BusyService,
  CoordinatorCore,
  CoordinatorService,
  HttpApi,
  RateLimiterCore,
  RateService,
  DebounceService,
  DebouncerCore,
  RunsCore,
  RunsService,
  SerialQueue,
} from "../build/index.js";
// static/'s files (the status page, the OpenAPI document) by name, which
// `HttpApi` serves: a JS module, not part of the WASM (scripts/assets.mjs).
import assets from "../build/assets.js";

/**
 * Runs `call`, a Rust method that decides synchronously outside
 * blockConcurrencyWhile; a broken invariant there traps the module
 * (panic = "abort"), and this resets the object as the gate would, so it
 * restarts from what was committed.
 */
function abortOnTrap(ctx, call) {
  try {
    return call();
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) ctx.abort(`Baton: ${error.message}`);
    throw error;
  }
}

export class Coordinator extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new CoordinatorCore(ctx, env);
  }

  // enqueue, acquire and release decide synchronously, outside
  // blockConcurrencyWhile: they run in abortOnTrap.
  // --- Coordinator: methods generated from the method table (BATON_BLESS=1 cargo test --lib edge::worker_js) ---
  enqueue(key, supersedes, instanceId, inputHash, options) {
    return abortOnTrap(this.ctx, () => this.#core.enqueue({ key, supersedes, instanceId, inputHash, options }));
  }

  acquire(key, instanceId, options) {
    return abortOnTrap(this.ctx, () => this.#core.acquire(key, instanceId, options));
  }

  release(key, instanceId) {
    return abortOnTrap(this.ctx, () => this.#core.release(key, instanceId));
  }

  inspect(key) {
    return this.#core.inspect({ key });
  }

  pause(key, options) {
    return this.#core.pause(key, options);
  }

  resume(key) {
    return this.#core.resume({ key });
  }

  setLimit(key, limit) {
    return this.#core.setLimit({ key, limit });
  }
  // --- end of the generated methods ---

  alarm() {
    return this.#core.alarm();
  }

  /** Storage statements run since the object started (for the benchmark). */
  storageWork() {
    return this.#core.storageWork();
  }

  /** Reports the key to its list shard as it is now (Baton's list read asks it of an entry it doubts). */
  listReport(key) {
    return this.#core.listReport(key);
  }
}

/**
 * One bucket's exact sliding-window rate limits (contract §5). Each method
 * hands its positional arguments to Rust (`RateLimiterCore`), which merges
 * them into the request object (`{ bucket, rules, permits? }`) and decodes it.
 */
export class RateLimiter extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new RateLimiterCore(ctx, env);
  }

  // Every method decides synchronously, outside blockConcurrencyWhile.
  // --- RateLimiter: methods generated from the method table (BATON_BLESS=1 cargo test --lib edge::worker_js) ---
  acquire(bucket, options) {
    return abortOnTrap(this.ctx, () => this.#core.acquire(bucket, options));
  }

  penalize(bucket, options) {
    return abortOnTrap(this.ctx, () => this.#core.penalize(bucket, options));
  }

  refund(bucket, options) {
    return abortOnTrap(this.ctx, () => this.#core.refund(bucket, options));
  }

  inspect(bucket) {
    return abortOnTrap(this.ctx, () => this.#core.inspect(bucket));
  }
  // --- end of the generated methods ---

  /** Storage statements run since the object started (for the benchmark). */
  storageWork() {
    return this.#core.storageWork();
  }
}

/**
 * Debounce and deferred starts (contract §4): one object per key. Rust
 * builds the request object from `(key, options)`, refusing a `key` inside
 * the options rather than letting either win silently.
 */
export class Debouncer extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new DebouncerCore(ctx, env);
  }

  // --- Debouncer: methods generated from the method table (BATON_BLESS=1 cargo test --lib edge::worker_js) ---
  debounce(key, options) {
    return this.#core.debounce(key, options);
  }

  startAt(key, options) {
    return this.#core.startAt(key, options);
  }

  flush(key) {
    return this.#core.flush(key);
  }

  cancel(key) {
    return this.#core.cancel(key);
  }

  inspect(key) {
    return this.#core.inspect(key);
  }
  // --- end of the generated methods ---

  alarm() {
    return this.#core.alarm();
  }
}

/**
 * Idempotent runs (contract §6): one object per run key. `await` is a
 * method name JS allows (reserved words are valid property names), so
 * callers write `stub.await(key, { timeoutMs })` as the contract says.
 */
export class Runs extends DurableObject {
  // Rust builds the request object from (key, options), refusing a `key`
  // inside the options rather than letting either win silently.
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new RunsCore(ctx, env);
  }

  // --- Runs: methods generated from the method table (BATON_BLESS=1 cargo test --lib edge::worker_js) ---
  claim(key, options) {
    return this.#core.claim(key, options);
  }

  complete(key, options) {
    return this.#core.complete(key, options);
  }

  await(key, options) {
    return this.#core.awaitRun(key, options);
  }

  append(key, options) {
    return this.#core.append(key, options);
  }

  events(key, options) {
    return this.#core.events(key, options);
  }
  // --- end of the generated methods ---

  alarm() {
    return this.#core.alarm();
  }

  /** Storage statements run since the object started, and open waits (for the benchmark). */
  storageWork() {
    return this.#core.storageWork();
  }
}

/**
 * One shard of the list of busy keys (contract §10): each Coordinator
 * object reports its key to the shard its key hashes to, and the default
 * entrypoint's `coordinatorList` reads every shard and merges them.
 * Baton's own objects are its only callers.
 */
export class BusyList extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new BusyListCore(ctx, env);
  }

  report(report) {
    return this.#core.report(report);
  }

  reportMany(reports) {
    return this.#core.reportMany(reports);
  }

  page(request) {
    return this.#core.page(request);
  }

  alarm() {
    return this.#core.alarm();
  }
}

/**
 * The default entrypoint: the Rust fetch handler, and every method for
 * callers with a service binding (contract §2 and §7), each taking one
 * object whose fields are the arguments by name. Exported by name too, so
 * an embedding Worker can serve it as a named entrypoint.
 */
export class Baton extends WorkerEntrypoint {
  // Each service is built on its first use: the runtime makes an entrypoint
  // per call, and a call uses one of them. The generated methods reach
  // them through these getters, one per service the method table names.
  #services = {};
  #http;

  get #coordinatorService() {
    return (this.#services.coordinator ??= new CoordinatorService(this.env));
  }

  get #serialQueue() {
    return (this.#services.serial ??= new SerialQueue(this.env, this.ctx));
  }

  get #runsService() {
    return (this.#services.runs ??= new RunsService(this.env));
  }

  get #rateService() {
    return (this.#services.rate ??= new RateService(this.env));
  }

  get #debounceService() {
    return (this.#services.debounce ??= new DebounceService(this.env));
  }

  get #busyService() {
    return (this.#services.busy ??= new BusyService(this.env));
  }

  fetch(request) {
    return (this.#http ??= new HttpApi(this.env, this.ctx, assets)).fetch(request);
  }

  // --- Baton: methods generated from the method table (BATON_BLESS=1 cargo test --lib edge::worker_js) ---
  coordinatorEnqueue(input) {
    return this.#coordinatorService.coordinatorEnqueue(input);
  }

  coordinatorAcquire(input) {
    return this.#coordinatorService.coordinatorAcquire(input);
  }

  coordinatorRelease(input) {
    return this.#coordinatorService.coordinatorRelease(input);
  }

  coordinatorInspect(input) {
    return this.#coordinatorService.coordinatorInspect(input);
  }

  coordinatorPause(input) {
    return this.#coordinatorService.coordinatorPause(input);
  }

  coordinatorResume(input) {
    return this.#coordinatorService.coordinatorResume(input);
  }

  coordinatorSetLimit(input) {
    return this.#coordinatorService.coordinatorSetLimit(input);
  }

  serialEnqueue(input) {
    return this.#serialQueue.serialEnqueue(input);
  }

  serialClaim(input) {
    return this.#serialQueue.serialClaim(input);
  }

  serialHeartbeat(input) {
    return this.#serialQueue.serialHeartbeat(input);
  }

  serialRelease(input) {
    return this.#serialQueue.serialRelease(input);
  }

  serialInspect(input) {
    return this.#serialQueue.serialInspect(input);
  }

  serialPause(input) {
    return this.#serialQueue.serialPause(input);
  }

  serialResume(input) {
    return this.#serialQueue.serialResume(input);
  }

  coordinatorList(input) {
    return this.#busyService.coordinatorList(input);
  }

  serialList(input) {
    return this.#busyService.serialList(input);
  }

  rateAcquire(input) {
    return this.#rateService.rateAcquire(input);
  }

  ratePenalize(input) {
    return this.#rateService.ratePenalize(input);
  }

  rateRefund(input) {
    return this.#rateService.rateRefund(input);
  }

  rateInspect(input) {
    return this.#rateService.rateInspect(input);
  }

  debounce(input) {
    return this.#debounceService.debounce(input);
  }

  startAt(input) {
    return this.#debounceService.startAt(input);
  }

  debounceFlush(input) {
    return this.#debounceService.debounceFlush(input);
  }

  debounceCancel(input) {
    return this.#debounceService.debounceCancel(input);
  }

  debounceInspect(input) {
    return this.#debounceService.debounceInspect(input);
  }

  runClaim(input) {
    return this.#runsService.runClaim(input);
  }

  runComplete(input) {
    return this.#runsService.runComplete(input);
  }

  runAwait(input) {
    return this.#runsService.runAwait(input);
  }

  runAppend(input) {
    return this.#runsService.runAppend(input);
  }

  runEvents(input) {
    return this.#runsService.runEvents(input);
  }
  // --- end of the generated methods ---
}

export default Baton;

/**
 * Baton's HTTP API, status page and OpenAPI document, for an embedding
 * Worker's own `fetch`: `return handleFetch(request, env, ctx)`. (`ctx`
 * carries work past the reply: a serial release's status check.)
 */
export function handleFetch(request, env, ctx) {
  return new HttpApi(env, withWaitUntil(ctx), assets).fetch(request);
}

/**
 * `ctx`, or one whose `waitUntil` lets the promise run unawaited when the
 * caller has no request context (a Workflow): what runs after a reply is a
 * status check whose loss only delays skipping a dead waiter.
 */
function withWaitUntil(ctx = {}) {
  if (typeof ctx.waitUntil === "function") return ctx;
  return { ...ctx, waitUntil: (promise) => void promise.catch(() => {}) };
}

/**
 * The default entrypoint's RPC methods, called in this Worker with its own
 * `env` (no service binding): `serialize(step, batonService(this.env), ...)`.
 */
export function batonService(env, ctx) {
  // Callers outside a request (a Workflow) may have no context to give.
  return new Baton(withWaitUntil(ctx), env);
}
