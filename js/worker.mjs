// The Worker's entry module: the Rust build (build/index.js) plus the one
// thing Rust cannot declare, a Durable Object class that extends
// `DurableObject` (workerd refuses JS RPC to any other), and a default
// entrypoint that carries the serial queue's RPC methods. Each method only
// delegates to Rust (`CoordinatorCore`, `SerialQueue`); no logic lives here.
import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";
import RustWorker, { CoordinatorCore, RunsCore, SerialQueue } from "../build/index.js";

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
 * Idempotent runs (contract §6): one object per run key. `await` is a
 * method name JS allows (reserved words are valid property names), so
 * callers write `stub.await(key, { timeoutMs })` as the contract says.
 */
export class Runs extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new RunsCore(ctx, env);
  }

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

  alarm() {
    return this.#core.alarm();
  }

  /** Storage statements run since the object started, and open waits (for the benchmark). */
  storageWork() {
    return this.#core.storageWork();
  }
}

/**
 * The default entrypoint: the Rust fetch handler, and the serial queue's
 * RPC methods for callers with a service binding (contract §2).
 */
export default class Baton extends WorkerEntrypoint {
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
