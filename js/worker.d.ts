// Types for `baton-workflows/worker`: the Worker itself, for a user's Worker to embed
// (re-export the Durable Object classes, mount the HTTP API and the RPC
// methods) or to name in its binding types:
//
//   import type { Coordinator, RateLimiter, Runs, Baton } from "baton-workflows/worker";
//   interface Env {
//     COORDINATOR: DurableObjectNamespace<Coordinator>;
//     RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
//     RUNS: DurableObjectNamespace<Runs>;
//     BATON: Service<Baton>;
//   }
//
// Needs `@cloudflare/workers-types` (or `wrangler types`) for
// "cloudflare:workers". Each class's RPC methods are the interfaces of the
// package's main types (index.d.ts), merged into the class declaration, so
// one declaration serves the stub, the binding and the helpers.
import { DurableObject, WorkerEntrypoint } from "cloudflare:workers";
import type { BatonService, CoordinatorRpc, DebouncerRpc, RateLimiterRpc, RunsRpc } from "./index.js";

/** The Coordinator Durable Object (contract §1). Bind it as `COORDINATOR`. */
export declare class Coordinator extends DurableObject {}
export interface Coordinator extends CoordinatorRpc {}

/** The Debouncer Durable Object (contract §4). Bind it as `DEBOUNCER`. */
export declare class Debouncer extends DurableObject {}
export interface Debouncer extends DebouncerRpc {}

/** The RateLimiter Durable Object (contract §5). Bind it as `RATE_LIMITER`. */
export declare class RateLimiter extends DurableObject {}
export interface RateLimiter extends RateLimiterRpc {}

/** The Runs Durable Object (contract §6). Bind it as `RUNS`. */
export declare class Runs extends DurableObject {}
export interface Runs extends RunsRpc {}

/**
 * One shard of the list of busy keys (contract §10): Baton's Coordinators
 * report to it and `coordinatorList` reads it. Bind it as `BUSY_LIST`; its
 * methods are Baton's own.
 */
export declare class BusyList extends DurableObject {}

/** Baton's default entrypoint: the RPC methods of a service binding, and the HTTP API. */
export declare class Baton extends WorkerEntrypoint {
  fetch(request: Request): Promise<Response>;
}
export interface Baton extends BatonService {}
export default Baton;

/** Baton's HTTP API, status page and OpenAPI document, served from your own `fetch`. */
export declare function handleFetch(request: Request, env: object, ctx: ExecutionContext): Promise<Response>;

/**
 * The default entrypoint's RPC methods, run in your own Worker with its
 * `env` (no service binding): pass it to `serialize` as the `baton` argument.
 */
export declare function batonService(env: object, ctx?: ExecutionContext): BatonService;
