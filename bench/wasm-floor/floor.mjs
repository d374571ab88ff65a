// The WASM floor's Worker (issue 38; src/lib.rs says what it measures): the
// `DurableObject` class workerd's RPC needs, handing each call's arguments to
// the Rust core as Baton's js/worker.mjs hands them to its cores.
import { DurableObject } from "cloudflare:workers";
import { FloorCore } from "./build/index.js";

export class WasmFloor extends DurableObject {
  #core;

  constructor(ctx, env) {
    super(ctx, env);
    this.#core = new FloorCore(ctx);
  }

  acquire(key, second, options) {
    return this.#core.acquire(key, second, options);
  }

  release(key, instanceId) {
    return this.#core.release(key, instanceId);
  }

  storageWork() {
    return this.#core.storageWork();
  }
}

export default {
  fetch() {
    return new Response("the bench's WASM floor Worker", { status: 404 });
  },
};
