// Types for the helpers and for the Coordinator's RPC surface (contract §1).

/**
 * A duration as Workflows take it: milliseconds, or `"<n> <unit>"` like
 * `"10 minutes"` (the same as `WorkflowSleepDuration` in
 * `@cloudflare/workers-types`).
 */
export type WorkflowDuration =
  | `${number} ${"second" | "minute" | "hour" | "day" | "week" | "month" | "year"}${"s" | ""}`
  | number;

/** Retry policy of the helpers' own steps (a `WorkflowStepConfig`'s `retries`). */
export interface StepRetries {
  limit: number;
  delay: WorkflowDuration;
  backoff?: "constant" | "linear" | "exponential";
}

/**
 * The part of `WorkflowStep` the helpers use. The real `WorkflowStep` of
 * `@cloudflare/workers-types` fits it (its `waitForEvent` is generic over a
 * serializable payload type; the helpers never read the payload, so this
 * asks for no particular one). Checked with `tsc --strict` by
 * tests/miniflare/package.test.mjs.
 */
export interface WorkflowStepLike {
  do<T>(
    name: string,
    config: { retries?: StepRetries; timeout?: WorkflowDuration },
    callback: () => Promise<T>,
  ): Promise<T>;
  waitForEvent(name: string, options: { type: string; timeout?: WorkflowDuration }): Promise<unknown>;
  sleep(name: string, duration: WorkflowDuration): Promise<void>;
}

export type AcquireOutcome = "granted" | "pending" | "superseded";

export interface CoordinatorInspection {
  key: string;
  holder: { id: string; since: number } | null;
  waiting: { id: string; since: number; inputHash?: string }[];
  superseded: number;
}

/** RPC methods of the `Coordinator` Durable Object. */
export interface CoordinatorRpc {
  enqueue(
    key: string,
    supersedes: boolean,
    instanceId: string,
    inputHash?: string,
  ): Promise<{ terminated: string[]; coalescedInto?: string }>;
  acquire(key: string, instanceId: string): Promise<AcquireOutcome>;
  release(key: string, instanceId: string): Promise<{ next: string | null }>;
  inspect(key: string): Promise<CoordinatorInspection>;
}

/** The `COORDINATOR` Durable Object namespace binding. */
export interface CoordinatorNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): CoordinatorRpc;
}

export interface WithKeyOptions {
  /** How long one wait for the turn event lasts before re-checking (default "10 minutes"). */
  turnTimeout?: WorkflowDuration;
  /** Most waits before giving up with a NonRetryableError (default 1000). */
  maxWaits?: number;
  /** Must match the Worker's TURN_EVENT_TYPE (default "baton-turn"). */
  turnEventType?: string;
  /** Retry policy of the acquire/release steps. */
  stepRetries?: StepRetries;
}

export type WithKeyResult<T> = { superseded: false; value: T } | { superseded: true };

/**
 * Runs `body` while `instanceId` holds `key`: acquires (waiting in
 * `step.waitForEvent`), runs, and releases on every exit. A superseded
 * instance gets `{ superseded: true }` and `body` never runs.
 */
export function withKey<T>(
  step: WorkflowStepLike,
  coordinator: CoordinatorNamespace,
  key: string,
  instanceId: string,
  body: () => Promise<T>,
  options?: WithKeyOptions,
): Promise<WithKeyResult<T>>;

export const TURN_EVENT_TYPE: "baton-turn";

export interface SerialSpec {
  group: string;
  revision: string;
  /** The revision that should run now (for a deploy, the branch head); omit if unknown. */
  current?: string;
}

/** The service binding to Baton's Worker (contract §2). */
export interface BatonService {
  serialEnqueue(input: { group: string; instanceId: string; revision: string; current?: string }): Promise<
    | { status: "waiting"; superseded: string[] }
    | { status: "skipped"; reason: "not_current"; current: string }
  >;
  serialClaim(input: { group: string; instanceId: string }): Promise<
    | { status: "holding" }
    | { status: "waiting"; holder: string | null }
    | { status: "skipped"; supersededBy: { instanceId: string; revision: string } }
    | { status: "timed_out" }
  >;
  serialHeartbeat(input: { group: string; instanceId: string }): Promise<{ holding: boolean }>;
  serialRelease(input: { group: string; instanceId: string }): Promise<{ next: string | null }>;
  serialInspect(input: { group: string }): Promise<{
    holder: { instanceId: string; revision: string; heartbeatAt: number } | null;
    waiting: { instanceId: string; revision: string; enqueuedAt: number }[];
    recent: {
      instanceId: string;
      revision: string;
      outcome: "superseded" | "timed_out" | "released" | "abandoned";
      finishedAt: number;
      supersededBy?: { instanceId: string; revision: string };
    }[];
  }>;
}

export interface SerializeOptions {
  /** Fallback poll while waiting for the push, in ms (default 30000). */
  pollInterval?: number;
  /** Heartbeat period while `body` runs, in ms (default 150000: four per default expiry). */
  heartbeatInterval?: number;
  /** Most claims before giving up with SerialQueueTimedOut (default 240). */
  maxPolls?: number;
  turnEventType?: string;
  stepRetries?: StepRetries;
}

/** Thrown (non-retryable) when a newer revision won; `revision` names it. */
export class RunSkipped extends Error {
  revision: string;
}
/** Thrown (non-retryable) after waiting past SERIAL_WAITER_TIMEOUT_MS behind a live holder. */
export class SerialQueueTimedOut extends Error {}
/** Thrown (non-retryable) when a heartbeat finds the group taken: the body runs no further step. */
export class SerialQueueLostHold extends Error {}

export function serialize<T>(
  step: WorkflowStepLike,
  baton: BatonService,
  spec: SerialSpec,
  instanceId: string,
  body: () => Promise<T>,
  options?: SerializeOptions,
): Promise<T>;
