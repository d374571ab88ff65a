// The Worker's entry module, and the npm package's `baton/worker`: the Rust
// build (build/index.js, which imports the WASM) plus the one thing Rust
// cannot declare, Durable Object classes that extend `DurableObject`
// (workerd refuses JS RPC to any other), and a default entrypoint that
// carries the queue's RPC methods. Each method only delegates to Rust
// (`CoordinatorCore`, `SerialQueue`); no logic lives here.
//
// Standalone, this module is Baton's `main`. Embedded, a user's Worker
// re-exports the classes and mounts the rest with `handleFetch` and
// `batonService` (the README's "Deploying"). Every export below is part of
// the package's surface, declared in worker.d.ts.
import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";
import RustWorker, { CoordinatorCore, SerialQueue } from "../build/index.js";

export class Coordinator extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new CoordinatorCore(ctx, env);
  }

  enqueue(key, supersedes, instanceId, inputHash) {
    return this.#core.enqueue(key, supersedes, instanceId, inputHash);
  }

  acquire(key, instanceId) {
    return this.#core.acquire(key, instanceId);
  }

  release(key, instanceId) {
    return this.#core.release(key, instanceId);
  }

  inspect(key) {
    return this.#core.inspect(key);
  }

  alarm() {
    return this.#core.alarm();
  }

  /** Storage statements run since the object started (for the benchmark). */
  storageWork() {
    return this.#core.storageWork();
  }
}

/**
 * The default entrypoint: the Rust fetch handler, and the serial queue's
 * RPC methods for callers with a service binding (contract §2). Exported
 * by name too, so an embedding Worker can serve it as a named entrypoint
 * or extend it as its own default.
 */
export class Baton extends WorkerEntrypoint {
  #serial;

  constructor(ctx, env) {
    super(ctx, env);
    this.#serial = new SerialQueue(env);
  }

  fetch(request) {
    return RustWorker.prototype.fetch.call(this, request);
  }

  serialEnqueue(input) {
    return this.#serial.serialEnqueue(input);
  }

  serialClaim(input) {
    return this.#serial.serialClaim(input);
  }

  serialHeartbeat(input) {
    return this.#serial.serialHeartbeat(input);
  }

  serialRelease(input) {
    return this.#serial.serialRelease(input);
  }

  serialInspect(input) {
    return this.#serial.serialInspect(input);
  }
}

export default Baton;

/**
 * Baton's HTTP API, status page and OpenAPI document, for an embedding
 * Worker's own `fetch`: `return handleFetch(request, env, ctx)`.
 */
export function handleFetch(request, env, ctx) {
  return RustWorker.prototype.fetch.call({ env, ctx }, request);
}

/**
 * The default entrypoint's RPC methods, called in this Worker with its own
 * `env` (no service binding): `serialize(step, batonService(this.env), ...)`.
 */
export function batonService(env, ctx = {}) {
  // The methods use only `env`; the runtime's constructor wants some object
  // for the context, which callers outside a request (a Workflow) may lack.
  return new Baton(ctx, env);
}
