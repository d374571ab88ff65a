// Types for the helpers and for the Coordinator's RPC surface (contract §1).

/** The subset of `WorkflowStep` the helpers use. */
export interface WorkflowStepLike {
  do<T>(name: string, config: object, callback: () => Promise<T>): Promise<T>;
  waitForEvent<T = unknown>(
    name: string,
    options: { type: string; timeout?: string | number },
  ): Promise<{ payload: T; timestamp: Date; type: string }>;
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
  turnTimeout?: string | number;
  /** Most waits before giving up with a NonRetryableError (default 1000). */
  maxWaits?: number;
  /** Must match the Worker's TURN_EVENT_TYPE (default "baton-turn"). */
  turnEventType?: string;
  /** Retry policy of the acquire/release steps. */
  stepRetries?: { limit: number; delay: string | number; backoff?: "constant" | "linear" | "exponential" };
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
