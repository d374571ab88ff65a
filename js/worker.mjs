// The Worker's entry module: the Rust build (build/index.js) plus the one
// thing Rust cannot declare, a Durable Object class that extends
// `DurableObject` (workerd refuses JS RPC to any other). Each method only
// delegates to the Rust `CoordinatorCore`; no logic lives here.
import { DurableObject } from "cloudflare:workers";
import RustWorker, { CoordinatorCore } from "../build/index.js";

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

export default RustWorker;
