// Types for the helpers, the Durable Objects' RPC surfaces (contract §1,
// §4, §5, §6) and the service binding's (contract §2, §7). The wire types
// (requests and replies), `BatonService` and each object's `<Class>Rpc`
// are generated from the method table and the Rust types in src/edge; a
// test fails when this file's generated section drifts from them, and
// another when a method of js/worker.mjs has no type
// (tests/miniflare/docs-types.test.mjs).

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
  /**
   * Unused since contract §1b: the event type a wait is for is the `turn`
   * Baton's `acquire` names. Kept so that existing callers type-check.
   */
  turnEventType?: string;
  /** Retry policy of the acquire/release steps. */
  stepRetries?: StepRetries;
  /**
   * The binding, on Baton's Worker, of this instance's Workflow: one of
   * `WORKFLOW_BINDINGS` (default: `WORKFLOW_BINDING`). Baton checks, wakes
   * and terminates the instance through it.
   */
  workflow?: string;
  /**
   * How many instances may hold `key` at once, 1 to 1000 (default 1). The
   * key keeps the limit of the latest call that named one.
   */
  limit?: number;
  /**
   * Contract §1c: -100 to 100 (default 0). When a slot frees it goes to a
   * waiter of the highest priority present.
   */
  priority?: number;
  /**
   * Contract §1c: within a priority, slots go round the tenants with
   * waiters (served longest ago first), then to that tenant's earliest
   * waiter. Instances that name none share one tenant.
   */
  tenant?: string;
  /**
   * Contract §1c: `"skip"` returns `{ busy: true }` without running `body`
   * (nothing registered) when the key is held to its limit or has
   * waiters: "run unless one is already running or queued". Default `"wait"`.
   */
  onBusy?: "wait" | "skip";
  /**
   * Contract §1e: 1 to 4 further keys of the same Coordinator namespace
   * (distinct from each other and from `key`) held with it, each with its
   * own limit, priority and tenant. The keys are taken in one global order
   * (sorted by UTF-8 bytes), each registered on only when reached, and
   * released in reverse on every exit; `body` runs once it holds them all.
   */
  also?: AlsoKey[];
  /**
   * Contract §1f: at most this many may wait for `key` (1 to 20000); a
   * section that would wait past it returns `{ busy: true }` without
   * registering, as with `onBusy: "skip"`. The key keeps the latest value.
   */
  maxWaiting?: number;
}

/** A further key of a section (contract §1e): a plain waiter with its own options. */
export interface AlsoKey {
  key: string;
  limit?: number;
  priority?: number;
  tenant?: string;
}

/**
 * What `withKey` returns when `body` ran, or when the id was superseded.
 * `busy` is never set here: it lets `if (result.busy)` narrow the result
 * of a call with `onBusy: "skip"` (contract §1c).
 */
export type WithKeyResult<T> = { superseded: false; value: T; busy?: undefined } | { superseded: true; busy?: undefined };

/** What `withKey` returns with `onBusy: "skip"` when the key was busy (contract §1c). */
export type WithKeyBusy = { busy: true; superseded?: undefined; value?: undefined };

/** What `withKey` passes to `body`: the fence of the grant it holds (contract §1b). */
export interface WithKeyGrant {
  fence: number;
  /** Contract §1e: every held key (the section's own and each of `also`) to its own fence. */
  fences: Record<string, number>;
}

/**
 * Runs `body` while `instanceId` holds `key`: acquires with `grant`
 * (waiting in `step.waitForEvent` for the grant itself), runs, and
 * releases on every exit. Two Baton steps when the key is free, three when
 * it waits once. A superseded instance gets `{ superseded: true }` and
 * `body` never runs; with `onBusy: "skip"`, a busy key gives `{ busy: true }`
 * and `body` never runs.
 */
export function withKey<T>(
  step: WorkflowStepLike,
  coordinator: CoordinatorNamespace,
  key: string,
  instanceId: string,
  body: (grant: WithKeyGrant) => Promise<T>,
  options: WithKeyOptions & { onBusy: "skip" },
): Promise<WithKeyResult<T> | WithKeyBusy>;
export function withKey<T>(
  step: WorkflowStepLike,
  coordinator: CoordinatorNamespace,
  key: string,
  instanceId: string,
  body: (grant: WithKeyGrant) => Promise<T>,
  options?: WithKeyOptions,
): Promise<WithKeyResult<T>>;

export const TURN_EVENT_TYPE: "baton-turn";

export interface SerialSpec {
  group: string;
  revision: string;
  /** The revision that should run now (for a deploy, the branch head); omit if unknown. */
  current?: string;
}

export interface SerializeOptions {
  /** Fallback poll while waiting for the push, in ms (default 30000). */
  pollInterval?: number;
  /** Heartbeat period while `body` runs, in ms (default 150000: four per default expiry). */
  heartbeatInterval?: number;
  /** Most claims before giving up with SerialQueueTimedOut (default 240). */
  maxPolls?: number;
  /** The turn event's type when Baton names no `turn`: must match the Worker's TURN_EVENT_TYPE (default "baton-turn"). */
  turnEventType?: string;
  /** The Workflow binding (on Baton's Worker) of this instance's Workflow, one of WORKFLOW_BINDINGS; pass it whenever it is not WORKFLOW_BINDING's. */
  workflow?: string;
  stepRetries?: StepRetries;
}

/** What `serialize` passes to `body`: the group's fence for this run's hold (contract §2a). */
export interface SerialLease {
  /** 1 for the group's first grant, one more per grant, never lower: a system the body writes to can refuse a lower fence than it has seen. Absent only from a queue without fences. */
  fence: number | undefined;
}

/** The payload of the turn event (type: the registration's `turn`) Baton sends a serial waiter registered with grant. */
export type SerialTurnEvent =
  | { group: string; instanceId: string; status: "holding"; fence: number }
  | { group: string; instanceId: string; status: "skipped"; supersededBy: { instanceId: string; revision: string } };

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
  body: (lease: SerialLease) => Promise<T>,
  options?: SerializeOptions,
): Promise<T>;

/** The `RATE_LIMITER` Durable Object namespace binding. */
export interface RateLimiterNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): RateLimiterRpc;
}

export interface WithRateLimitOptions {
  /** Permits to acquire before `body` runs (default 1, at most 10000). */
  permits?: number;
  /** Most sleeps before giving up with a NonRetryableError (default 1000). */
  maxWaits?: number;
  /** Step-name tag for this call (default: the bucket and a per-run call number). */
  name?: string;
  /**
   * Contract §5a: when the bucket's next permit is further away than this
   * (ms, 0 to 86400000; 0 is "now or never"), throw `RateLimitMaxWait` at
   * once instead of sleeping, keeping no permit. Default: wait.
   */
  maxWaitMs?: number;
  /** Retry policy of the acquire steps. */
  stepRetries?: { limit: number; delay: string | number; backoff?: "constant" | "linear" | "exponential" };
}

/**
 * Acquires `permits` from `bucket` under `rules` in durable steps, sleeping
 * with `step.sleep(waitMs)` (no compute) while none is free, then runs `body`
 * and returns what it returns.
 */
export function withRateLimit<T>(
  step: WorkflowStepLike & { sleep(name: string, duration: string | number): Promise<void> },
  rateLimiter: RateLimiterNamespace,
  bucket: string,
  rules: RateRule[],
  body: () => Promise<T>,
  options?: WithRateLimitOptions,
): Promise<T>;

export interface PermitPoolOptions {
  /** Permits leased per round trip (default 10). */
  block?: number;
  /** How long a leased permit may wait to be spent before it is refunded, in ms (default 1000). */
  holdMs?: number;
  /** Longest a `take` waits for permits in all before throwing RateLimitTimeout, in ms (default 60000). */
  maxWaitMs?: number;
}

/** Permits for any Worker: leased from the bucket in blocks, spent locally. */
export class PermitPool {
  constructor(rateLimiter: RateLimiterNamespace, bucket: string, rules: RateRule[], options?: PermitPoolOptions);
  /** Leased permits still spendable. */
  readonly available: number;
  /**
   * Spends `n` permits (default 1), leasing and waiting as needed. With
   * `options.maxWaitMs` (contract §5a, 0 to 86400000), a permit further
   * away than that throws `RateLimitMaxWait` at once, keeping no permit.
   */
  take(n?: number, options?: { maxWaitMs?: number }): Promise<void>;
  /** Refunds every unspent permit; resolves to how many the bucket took back. */
  close(): Promise<number>;
}

/** Thrown by `PermitPool.take` when a permit is further away than `maxWaitMs`. */
export class RateLimitTimeout extends Error {
  waitMs: number;
}

/**
 * Thrown by `withRateLimit` and `PermitPool.take` given `maxWaitMs` when the
 * bucket's next permit is further away (contract §5a). Never retried.
 */
export class RateLimitMaxWait extends Error {
  name: "RateLimitMaxWait";
  bucket: string;
  /** How far away the bucket said its next permit is, in ms. */
  waitMs: number;
  maxWaitMs: number;
}

/** The `DEBOUNCER` Durable Object namespace binding. */
export interface DebouncerNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): DebouncerRpc;
}

/**
 * One Workflow start per burst of calls on `key`, the latest params winning
 * (contract §4): `await debounce(env.DEBOUNCER, key, { delayMs: 5000, params })`.
 * With `batch: { maxItems?, maxBytes? }` (trailing only), the run gets
 * `{ batch: [...] }`, every call's params in order (contract §4a).
 */
export function debounce(
  namespace: DebouncerNamespace,
  key: string,
  options: Omit<Debounce, "key">,
): Promise<DebounceReply>;

/** One start at `at` (ms since the epoch), replacing the key's pending start. */
export function startAt(
  namespace: DebouncerNamespace,
  key: string,
  options: Omit<StartAt, "key">,
): Promise<StartAtReply>;

/** Starts the key's pending start now and ends its burst. */
export function debounceFlush(namespace: DebouncerNamespace, key: string): Promise<FlushReply>;

/** Drops the key's pending start; the id it would have used never starts. */
export function debounceCancel(namespace: DebouncerNamespace, key: string): Promise<CancelReply>;

/** The key's pending start, recent starts, and starts whose create is being retried. */
export function debounceInspect(namespace: DebouncerNamespace, key: string): Promise<DebounceInspection>;

/**
 * Contract §3a: an option of `coordinated()`: a value, or a function of the
 * event (and `env`) that gives it.
 */
export type Declared<T, Env, Params> = T | ((event: CoordinatedEvent<Params>, env: Env) => T);

/** A binding option of `coordinated()`: the namespace, or a function of `env` giving it. */
export type DeclaredBinding<T, Env> = T | ((env: Env, event: CoordinatedEvent<unknown>) => T);

/** What `coordinated()` reads of the Workflow's event (a `WorkflowEvent`). */
export interface CoordinatedEvent<Params> {
  payload: Readonly<Params>;
  instanceId: string;
}

/** An `also` key of `coordinated()`, each field a value or a function of the event. */
export interface DeclaredAlsoKey<Env, Params> {
  key: Declared<string, Env, Params>;
  limit?: Declared<number, Env, Params>;
  priority?: Declared<number, Env, Params>;
  tenant?: Declared<string, Env, Params>;
}

/** `coordinated()`'s `rateLimit`: `withRateLimit` around the Workflow's `run`, inside the key. */
export interface DeclaredRateLimit<Env, Params> {
  limiter: DeclaredBinding<RateLimiterNamespace, Env>;
  bucket: Declared<string, Env, Params>;
  rules: Declared<RateRule[], Env, Params>;
  permits?: Declared<number, Env, Params>;
  maxWaitMs?: Declared<number, Env, Params>;
  maxWaits?: Declared<number, Env, Params>;
  name?: Declared<string, Env, Params>;
}

/**
 * Contract §3a: flow control declared on the Workflow class. Every option
 * of `withKey` (§1 to §1e) and of `withRateLimit` (§5, §5a), as a value or
 * a function of the event and `env` (the bindings: of `env`).
 */
export interface CoordinatedOptions<Env = any, Params = any> {
  /** The Coordinator's namespace (`COORDINATOR`), or `(env) => env.COORDINATOR`. */
  coordinator: DeclaredBinding<CoordinatorNamespace, Env>;
  /** The key the run holds, e.g. `(event) => "deploy:" + event.payload.repo`. */
  key: Declared<string, Env, Params>;
  /**
   * `false` (default): wait in turn. `"waiting"`: a new instance supersedes
   * the key's waiters (§1). `"cancel"`: and cancels its holders (§1d).
   */
  supersede?: Declared<false | "waiting" | "cancel", Env, Params>;
  limit?: Declared<number, Env, Params>;
  priority?: Declared<number, Env, Params>;
  tenant?: Declared<string, Env, Params>;
  onBusy?: Declared<"wait" | "skip", Env, Params>;
  maxWaiting?: Declared<number, Env, Params>;
  also?: Declared<DeclaredAlsoKey<Env, Params>[], Env, Params>;
  /** Not needed: Baton finds the instance through any of its bindings (§1a); naming it saves a lookup. */
  workflow?: Declared<string, Env, Params>;
  turnTimeout?: Declared<WorkflowDuration, Env, Params>;
  maxWaits?: Declared<number, Env, Params>;
  stepRetries?: Declared<StepRetries, Env, Params>;
  rateLimit?: DeclaredRateLimit<Env, Params>;
}

/** What a superseded or skipped instance of a `coordinated()` class returns. */
export type CoordinatedSkip = { superseded: true } | { busy: true };

/**
 * Contract §3a: a class extending `Base` (Cloudflare's `WorkflowEntrypoint`)
 * whose subclass's `run(event, step, grant?)` runs inside the declared key:
 * registered at the start of the run, superseded or skipped instances
 * completing with `{ superseded: true }` / `{ busy: true }` without running
 * it, the key released on every exit. `grant` is `withKey`'s
 * `{ fence, fences }` (optional in the signature so that `run` still fits
 * `WorkflowEntrypoint`'s).
 */
export function coordinated<Base extends abstract new (...args: any[]) => any, Env = any, Params = any>(
  base: Base,
  options: CoordinatedOptions<Env, Params>,
): Base;

// --- Wire types, generated from src/edge (BATON_BLESS=1 cargo test --lib edge::schema) ---

/** `acquire`'s reply: over RPC the bare string. */
export type AcquireOutcome = "granted" | "pending" | "superseded" | "busy";

/** `acquire`'s reply over HTTP, where every reply is a JSON object. */
export type AcquireStatus = {
  status: AcquireOutcome;
};

/** A sequence number: events after it are read. */
export type After = number;

/** Most bytes of a batch's params, {"batch":[...]} as JSON: 1 to 1048576. */
export type BatchMaxBytes = number;

/** How many params a batch holds at most: 1 to 1000. */
export type BatchMaxItems = number;

/** `cancel`'s reply: the dropped start's id, which will never start. */
export type CancelReply = {
  cancelled: InstanceId | null;
};

/** A holder's `checked` (§10a): when Baton last asked the Workflow binding about it, and what the binding answered. */
export type Checked = {
  /** When, in ms since the epoch. */
  at: number;
  /** The instance's status as the binding gave it (`"running"`, `"waiting"`, `"complete"`...), `"not_found"`, or `"failed"` when the call threw or did not answer in time. */
  status: string;
};

/** `acquire(key, instanceId, options?)`. */
export type CoordinatorAcquire = {
  key: Ident;
  instanceId: InstanceId;
  options?: KeyOptions | null;
};

/** `acquire`'s reply over HTTP: `{ status }`, or with `grant` the object. */
export type CoordinatorAcquireHttpReply = AcquireStatus | CoordinatorGrantReply;

/** `acquire`'s reply: the string of §1, or with `options.grant` the object. */
export type CoordinatorAcquireReply = AcquireOutcome | CoordinatorGrantReply;

/** `enqueue(key, supersedes, instanceId, inputHash?, options?)`. */
export type CoordinatorEnqueue = {
  key: Ident;
  /** Drop (and terminate) every other waiting id; the holder is never touched. Absent means `false` (the Durable Object's positional `enqueue` takes it as a required argument). */
  supersedes?: boolean;
  instanceId: InstanceId;
  /** With `supersedes`: coalesce into a live waiter with the same hash. */
  inputHash?: InputHash | null;
  options?: KeyOptions | null;
};

/** `enqueue`'s reply. */
export type CoordinatorEnqueueReply = {
  /** The waiting ids this call dropped, in queue order. */
  terminated: InstanceId[];
  /** A live waiter with the same `inputHash` took this enqueue's place: nothing was registered, and the caller must not create its instance. */
  coalescedInto?: InstanceId;
  /** With `onBusy: "skip"` (§1c), `true`: the key had as many holders as its limit, or a waiter; nothing was registered, and the caller must not create its instance. Absent otherwise. */
  busy?: boolean;
  /** §1d, on a call with `cancelHolders: true`: the holders it cancelled (`[]` when none; absent on a call without the option). */
  cancelled?: InstanceId[] | null;
};

/** `acquire`'s reply with `options.grant` (§1b). */
export type CoordinatorGrantReply = {
  status: "granted";
  fence: number;
} | {
  status: "pending";
  turn: string;
  position: number;
  etaMs: number | null;
} | {
  status: "superseded";
} | {
  status: "busy";
};

/** `inspect(key)`. */
export type CoordinatorInspect = {
  key: Ident;
};

/** `inspect`'s reply. */
export type CoordinatorInspection = {
  key: Ident;
  /** The earliest holder (§1's one holder), or null. */
  holder: HolderView | null;
  /** In the order the key will be handed on. */
  waiting: WaiterView[];
  /** How many superseded ids the key remembers. */
  superseded: number;
  /** How many instances may hold the key at once. */
  limit: number;
  /** Every holder, in the order they got the key. */
  holders: HolderEntry[];
  /** The last holds that ended with a waiter behind them or with the holder found dead, newest first (at most 50; contract §10). */
  recent: RecentHold[];
  /** What happened at the key since its object was created. */
  counts: KeyCounts;
  /** §11: the operator's pause, or null. */
  paused: Paused | null;
  /** §11: the operator's limit override (then `limit`), or null. */
  limitOverride: number | null;
  /** §1f: the cap on the key's waiters the latest call that named one named, or null. */
  maxWaiting: number | null;
  /** §10a: the key's health at a glance. */
  state: KeyState;
  /** §10a: the waits of `recent`'s holds and of the waiters now. */
  waits: Waits;
};

/** `pause(key, { reason? })`: the request `{ key, reason? }`. */
export type CoordinatorPause = {
  key: Ident;
  /** Why, for whoever looks at the key (`inspect`, the status page); never printed in the logs. A second pause replaces it. */
  reason?: PauseReason | null;
};

/** `pause`'s reply. */
export type CoordinatorPauseReply = {
  paused: Paused;
};

/** `release(key, instanceId)`. */
export type CoordinatorRelease = {
  key: Ident;
  instanceId: InstanceId;
};

/** `resume(key)`. */
export type CoordinatorResume = {
  key: Ident;
};

/** `resume`'s reply. */
export type CoordinatorResumeReply = {
  /** Who was handed a slot, in the order they were (each is sent its turn event); empty when nobody was or the key was not paused. */
  granted: InstanceId[];
};

/** `setLimit(key, limit)`. */
export type CoordinatorSetLimit = {
  key: Ident;
  /** The operator's limit, which wins over the callers' `options.limit` until it is cleared; `null` (or absent) clears it. */
  limit?: HolderLimit | null;
};

/** `setLimit`'s reply. */
export type CoordinatorSetLimitReply = {
  /** The limit now in force. */
  limit: number;
  /** The override now set, or null. */
  override: number | null;
};

/** `debounce(key, { delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix?, batch? })`. */
export type Debounce = {
  key: Ident;
  /** A burst ends after this much silence. */
  delayMs: DelayMs;
  /** ...or this long after its first call (default: 7 days), whichever is first. */
  maxWaitMs?: DelayMs | null;
  /** When the burst's start is made (default `trailing`). */
  edge?: DebounceEdge | null;
  /** The instance's params: any JSON value, at most 1 MiB serialized. The latest call's win, also when it sends none (with `batch`: every call's, in order). */
  params?: unknown;
  /** The Workflow binding to create through, one of WORKFLOW_BINDINGS (default WORKFLOW_BINDING). */
  workflow?: WorkflowName | null;
  /** The start's instance id is this plus a unique suffix (default `debounce-`). */
  idPrefix?: IdPrefix | null;
  /** Trailing only: the burst's start is created with `{ batch: [...] }`, the params of every call of the burst that sent any, in the order received (contract §4a). */
  batch?: DebounceBatch | null;
};

/** `batch`: when a batch starts before its burst ends. */
export type DebounceBatch = {
  /** The call that brings the batch to this many params starts it at once (default 100). */
  maxItems?: BatchMaxItems | null;
  /** Most bytes of the instance's params, `{"batch":[...]}` as JSON (default 1048576): a call whose params would pass it starts the batch at once without them, and they begin the next burst. */
  maxBytes?: BatchMaxBytes | null;
};

/** `edge`. */
export type DebounceEdge = "trailing" | "leading" | "both";

/** `inspect`'s reply. */
export type DebounceInspection = {
  key: Ident;
  pending: PendingStart | null;
  /** The most recent confirmed starts, newest first, at most 20. */
  started: StartedView[];
  /** Starts that fired but whose create is not confirmed yet: in flight, or failed and waiting for a retry (an addition to contract §4's shape, so a failing Workflow binding is visible). */
  retrying: RetryingView[];
};

/** `flush(key)`, `cancel(key)` and `inspect(key)`. */
export type DebounceKey = {
  key: Ident;
};

export type DebounceOutcome = "started" | "scheduled" | "suppressed";

/** `debounce`'s reply. */
export type DebounceReply = {
  outcome: DebounceOutcome;
  /** The id of the burst's start: the leading one (`started`, `suppressed`) or the trailing one (`scheduled`). */
  instanceId: InstanceId;
  /** When that start is made, while it is pending (ms since the epoch). */
  fireAt?: number | null;
};

/** Milliseconds, 1 to 604800000 (7 days). */
export type DelayMs = number;

/** Most events one call returns (default 100). */
export type EventLimit = number;

/** An event's type: 1 to 64 characters. */
export type EventType = string;

/** `flush`'s reply: the start made now, if one was pending. */
export type FlushReply = {
  started: InstanceId | null;
};

/** A page of `serialList`. */
export type GroupList = {
  groups: ListedGroup[];
  /** The next page's `cursor`; `null` on the last page. */
  cursor: string | null;
};

/** `serialClaim`, `serialHeartbeat` and `serialRelease`: `{ group, instanceId }`. */
export type GroupMember = {
  group: Ident;
  instanceId: InstanceId;
};

/** `serialHeartbeat`'s reply: whether the caller still holds the group. */
export type HeartbeatReply = {
  holding: boolean;
};

/** How a recent hold ended: released by its holder, or its holder found dead. */
export type HoldOutcome = "released" | "dead";

/** A holder, as `inspect`'s `holders` shows it. */
export type HolderEntry = {
  id: InstanceId;
  /** When the key passed to it, in ms since the epoch. */
  since: number;
  /** The Workflow binding Baton checks, wakes and terminates it through. */
  workflow: string;
  /** The fence of its grant (§1b; 0 for a grant from before fences). */
  fence: number;
  /** Being cancelled (§1d): terminated, it keeps its slot until found dead. */
  cancelling: boolean;
  /** §10a: when Baton last asked the Workflow binding about it, and what it answered; null before the first check. */
  checked: Checked | null;
};

/** How many instances may hold the key at once. */
export type HolderLimit = number;

/** The earliest holder, as `inspect`'s `holder` shows it. */
export type HolderView = {
  id: InstanceId;
  /** When the key passed to it, in ms since the epoch. */
  since: number;
  /** The fence of its grant (§1b; 0 for a grant from before fences). */
  fence: number;
};

/** The start of a debounce instance id; a unique suffix of at most 36 characters follows. */
export type IdPrefix = string;

/** A key, group or revision: non-empty, at most 512 UTF-8 bytes. */
export type Ident = string;

/** A caller's digest of an instance's input: 1 to 128 characters. */
export type InputHash = string;

/** A Workflow instance id: 1 to 100 letters, digits, '-' and '_', not starting with '-'. */
export type InstanceId = string;

/** `inspect`'s `counts`: since the key's object was created. */
export type KeyCounts = {
  /** Slots granted (by `acquire` or by a hand-off). */
  grants: number;
  /** Grants of a slot that a holder or a dead holder gave up to a waiter. */
  handOffs: number;
  /** Holders found dead (each lost its slot). */
  deadHolders: number;
  /** Waiters superseded. */
  superseded: number;
  /** Enqueues that coalesced into a live waiter. */
  coalesced: number;
  /** Holders cancelled by a superseding enqueue (§1d). */
  cancelled: number;
};

/** A page of `coordinatorList`. */
export type KeyList = {
  keys: ListedKey[];
  /** The next page's `cursor`; `null` on the last page. */
  cursor: string | null;
};

/** The options of `enqueue` and `acquire` (contract §1a). Unknown fields are refused. */
export type KeyOptions = {
  /** The Workflow binding of the instance being registered, one of `WORKFLOW_BINDINGS` (default `WORKFLOW_BINDING`). */
  workflow?: WorkflowName | null;
  /** How many instances may hold the key at once (default 1); the key keeps the limit of the latest call that named one. */
  limit?: HolderLimit | null;
  /** Hand-off by grant (§1b): the registration this call makes is sent the grant itself on a turn event of its own, and `acquire` answers an object (`CoordinatorGrantReply`) instead of a string. */
  grant?: boolean | null;
  /** §1c: slots go to a waiter of the highest priority present (-100 to 100, default 0); fixed by the call that registers the id. */
  priority?: Priority | null;
  /** §1c: within a priority, slots go round the tenants with waiters (served longest ago first, one never served before them), then to that tenant's earliest waiter. Waiters that name none share one tenant. Fixed by the call that registers the id. */
  tenant?: Ident | null;
  /** §1c: `"skip"` answers busy instead of registering a caller that would wait: `acquire` answers `"busy"` (`{ status: "busy" }` with `grant`), `enqueue` `{ busy: true, terminated: [] }` when the key has as many holders as its limit or any waiter. Default `"wait"`. */
  onBusy?: OnBusy | null;
  /** §1d, on a superseding `enqueue` only: every holder of the key (but the caller) is cancelled: terminated through its own Workflow, it keeps its slot until the binding reports it dead, and the slot then goes on with the next fence. A call that coalesces cancels nothing. Refused with `supersedes: false`, and on `acquire`. */
  cancelHolders?: boolean | null;
  /** §1f: a call that would register a new waiter while the key already has this many waiters (after the call's own superseding) registers nothing and answers busy, as `onBusy: "skip"` does. The key keeps the value of the latest call that named one (1 to 20000). */
  maxWaiting?: MaxWaiting | null;
};

/** §10a: the first that applies, in this order: `paused` (an operator paused it); `stalled` (waiters wait, and for longer than `HOLDER_CHECK_MS` a holder has not taken up a slot handed to it, or its status checks fail); `backlogged` (waiters wait behind the holders); `at_capacity` (every slot held, nobody waits); `active` (some slots held, nobody waits); `idle`. */
export type KeyState = "paused" | "stalled" | "backlogged" | "at_capacity" | "active" | "idle";

/** Most entries one page answers (default 100). */
export type ListLimit = number;

/** `coordinatorList({ cursor?, limit? })` and `serialList(...)`. */
export type ListRequest = {
  /** Where to go on: the `cursor` the previous page answered (none or `null` for the first page). */
  cursor?: string | null;
  limit?: ListLimit | null;
  /** §10a: only the entries in this state (a page may then answer fewer than `limit`, and still a `cursor` while more may follow). */
  state?: KeyState | null;
};

/** A group with a holder or a waiter. */
export type ListedGroup = {
  group: string;
  /** The holder's instance id. */
  holder: string | null;
  waiting: number;
  /** How long its earliest waiter has waited (0 without waiters). */
  oldestWaitMs: number;
  /** Whether an operator paused it (contract §11). */
  paused: boolean;
  /** §10a, as a key of limit 1 with no stall: `paused`, `backlogged`, `at_capacity` or `idle`. */
  state: KeyState;
};

/** A key with a waiter, or whose holder was found dead in the last hour. */
export type ListedKey = {
  key: string;
  /** How many hold it. */
  holders: number;
  /** How many wait for it. */
  waiting: number;
  /** How long its earliest waiter has waited (0 without waiters). */
  oldestWaitMs: number;
  limit: number;
  /** §11: an operator paused the key. */
  paused: boolean;
  /** §10a: its health at a glance, from what the key last reported. */
  state: KeyState;
};

/** How many may wait for the key at most; a call past it answers busy. */
export type MaxWaiting = number;

/** `options.onBusy` (§1c). */
export type OnBusy = "wait" | "skip";

/** Why an operator paused it: at most 512 UTF-8 bytes. */
export type PauseReason = string;

/** An operator's pause of a key or a group (contract §11), as `pause`, `serialPause`, `inspect` and `serialInspect` show it. */
export type Paused = {
  /** When it was first paused (a second pause keeps it), in ms since the epoch. */
  since: number;
  /** The reason the latest pause gave, or null. */
  reason: string | null;
};

/** The pending start, as `inspect` shows it. */
export type PendingStart = {
  instanceId: InstanceId;
  /** `trailing`, `leading` or `both` (the burst's latest call's), or `at`. */
  edge: string;
  workflow: string;
  firstAt: number;
  lastAt: number;
  fireAt: number;
  calls: number;
  /** How many params the batch holds, when the burst batches (contract §4a). */
  items?: number | null;
};

/** Slots go to a waiter of the highest priority present. */
export type Priority = number;

/** `acquire(bucket, { rules, permits? })`. */
export type RateAcquire = {
  bucket: Ident;
  rules: RateRules;
  /** How many permits to acquire (default 1): all or part are granted. */
  permits?: RatePermits | null;
};

/** `acquire`'s reply. */
export type RateAcquireReply = {
  /** Permits granted, 0 to `permits`. */
  granted: number;
  /** 0 when anything was granted; otherwise the milliseconds until an acquire of one permit would be granted. */
  waitMs: number;
};

/** How long no permit is granted, in milliseconds from now. */
export type RateCooldownMs = number;

/** `inspect(bucket)`. */
export type RateInspect = {
  bucket: Ident;
};

/** `inspect`'s reply. */
export type RateInspection = {
  bucket: Ident;
  /** The cooldown's end while it lasts, in ms since the epoch. */
  cooldownUntil: number | null;
  /** Every rule id the bucket remembers, with its values as last given. */
  rules: RateRuleView[];
};

/** `penalize(bucket, { cooldownMs })`. */
export type RatePenalize = {
  bucket: Ident;
  cooldownMs: RateCooldownMs;
};

/** `penalize`'s reply. */
export type RatePenalizeReply = {
  /** The cooldown's end as it now stands, in ms since the epoch. */
  until: number;
};

/** How many permits. */
export type RatePermits = number;

/** `refund(bucket, { permits })`. */
export type RateRefund = {
  bucket: Ident;
  permits: RatePermits;
};

/** `refund`'s reply. */
export type RateRefundReply = {
  /** How many permits were returned. */
  refunded: number;
};

/** One window rule: at most `limit` permits in any `windowMs`. */
export type RateRule = {
  id: RateRuleId;
  limit: RateRuleLimit;
  windowMs: RateWindowMs;
};

/** A rule's name within its bucket: its grants are remembered under it. */
export type RateRuleId = string;

/** Most permits the rule grants in any window. */
export type RateRuleLimit = number;

/** One rule as `inspect` shows it. */
export type RateRuleView = {
  id: RateRuleId;
  limit: number;
  windowMs: number;
  /** Permits granted under the rule in the last `windowMs`. */
  used: number;
  /** When the rule next has a free permit (now if it has one), in ms since the epoch. */
  nextFreeAt: number;
};

/** The bucket's window rules for this call, with distinct ids. */
export type RateRules = RateRule[];

/** The rule's window, in milliseconds. */
export type RateWindowMs = number;

/** A hold `inspect`'s `recent` shows. */
export type RecentHold = {
  id: InstanceId;
  /** The fence of its grant. */
  fence: number;
  /** When it got the key, in ms since the epoch. */
  from: number;
  /** When it ended. */
  to: number;
  /** How long the holder had waited for the key, in ms. */
  waited: number;
  outcome: HoldOutcome;
  /** Its holder was cancelled by a superseding enqueue (§1d). */
  cancelled: boolean;
};

/** `release`'s reply (the Coordinator's and the serial queue's): the instance this call handed the key or group to and sent the turn event, if any (its status is checked after the reply). */
export type ReleaseReply = {
  next: InstanceId | null;
};

export type RetryingView = {
  instanceId: InstanceId;
  workflow: string;
  firedAt: number;
  /** Creates that failed so far. */
  failures: number;
  nextTryAt: number;
  lastError?: string | null;
};

/** An execution named with its revision. */
export type Revisioned = {
  instanceId: InstanceId;
  revision: Ident;
};

/** `append(key, { instanceId, type, data? })`. */
export type RunAppend = {
  key: Ident;
  instanceId: InstanceId;
  type: EventType;
  /** Any JSON value, at most 64 KiB serialized. */
  data?: unknown;
};

/** `append`'s reply: the event's place in the log. */
export type RunAppendReply = {
  seq: number;
};

/** `await(key, { timeoutMs })`. */
export type RunAwait = {
  key: Ident;
  timeoutMs: WaitMs;
};

/** `claim(key, { instanceId, workflow? })`. */
export type RunClaim = {
  key: Ident;
  instanceId: InstanceId;
  /** The Workflow binding the claimant belongs to (one of WORKFLOW_BINDINGS; default WORKFLOW_BINDING), through which the object checks whether it is dead. */
  workflow?: WorkflowName | null;
};

/** `claim`'s reply: `{ claimed: true }` for the claimant, otherwise the claimant's id and the run's state (never "none"). */
export type RunClaimReply = {
  claimed: boolean;
  instanceId?: InstanceId;
  state?: RunState;
  result?: unknown;
  error?: string | null;
};

/** `complete(key, { instanceId, result?, error? })`. */
export type RunComplete = {
  key: Ident;
  instanceId: InstanceId;
  /** Any JSON value, at most 1 MiB serialized: the run is "complete". */
  result?: unknown;
  /** At most 1 MiB: the run is "failed". At most one of `result` and `error`. */
  error?: string | null;
};

/** `complete`'s reply: whether this call recorded the outcome. */
export type RunCompleteReply = {
  recorded: boolean;
};

/** One event of a run's log. */
export type RunEvent = {
  /** Counts from 1 per run key, with no gaps. */
  seq: number;
  /** When it was appended, in ms since the epoch. */
  at: number;
  type: string;
  /** As appended; `null` when none was given. */
  data: unknown;
};

/** `events(key, { after?, timeoutMs?, limit? })`. */
export type RunEvents = {
  key: Ident;
  /** Events with `seq > after` (default 0). */
  after?: After | null;
  /** How long to wait when there are none (default 0). */
  timeoutMs?: WaitMs | null;
  /** At most this many (default 100). */
  limit?: EventLimit | null;
};

/** `events`' reply. */
export type RunEventsReply = {
  events: RunEvent[];
  latestSeq: number;
  /** The oldest event kept (`latestSeq + 1` when none is). */
  firstSeq: number;
};

/** A run's state: no claimant, claimed without an outcome, or finished. */
export type RunState = "none" | "running" | "complete" | "failed";

/** `await`'s reply. */
export type RunView = {
  state: RunState;
  /** The claimant, unless `state` is "none". */
  instanceId?: InstanceId;
  /** With "complete": the result, if one was recorded. */
  result?: unknown;
  /** With "failed": the error. */
  error?: string | null;
};

/** `serialClaim`'s reply. */
export type SerialClaimReply = {
  status: "holding";
  fence?: number | null;
} | {
  status: "waiting";
  holder: InstanceId | null;
  turn?: string | null;
} | {
  status: "skipped";
  supersededBy: Revisioned;
} | {
  status: "timed_out";
};

/** `serialEnqueue({ group, instanceId, revision, current?, workflow?, claim?, grant? })`. */
export type SerialEnqueue = {
  group: Ident;
  instanceId: InstanceId;
  revision: Ident;
  /** The revision that should run now; omit if unknown. */
  current?: Ident | null;
  /** The Workflow binding (one of WORKFLOW_BINDINGS; default WORKFLOW_BINDING) through which Baton checks and wakes this instance. */
  workflow?: WorkflowName | null;
  /** Also claim, in the same batch: the reply is the claim's, with `superseded` added. */
  claim?: boolean | null;
  /** Register with grant: the replies carry `turn`, the event type Baton hands this instance the group with (or tells it it was superseded), and a `holding` reply carries the group's `fence`. */
  grant?: boolean | null;
};

/** `serialEnqueue`'s reply. */
export type SerialEnqueueReply = {
  status: "waiting";
  superseded: InstanceId[];
  holder?: InstanceId;
  turn?: string | null;
} | {
  status: "skipped";
  reason: SkipReason;
  current: Ident;
} | {
  status: "holding";
  superseded: InstanceId[];
  fence?: number | null;
} | {
  status: "timed_out";
  superseded: InstanceId[];
};

export type SerialFinished = {
  instanceId: InstanceId;
  revision: Ident;
  outcome: SerialOutcome;
  /** In ms since the epoch. */
  finishedAt: number;
  supersededBy?: Revisioned;
};

export type SerialHolder = {
  instanceId: InstanceId;
  revision: Ident;
  /** Its last heartbeat (or its claim), in ms since the epoch. */
  heartbeatAt: number;
};

/** `serialInspect({ group })`. */
export type SerialInspect = {
  group: Ident;
};

/** `serialInspect`'s reply. */
export type SerialInspection = {
  holder: SerialHolder | null;
  /** In the order they arrived. */
  waiting: SerialWaiter[];
  /** Finished executions, newest first. */
  recent: SerialFinished[];
  /** Set while an operator paused the group (contract §11). */
  paused: Paused | null;
  /** §10a, as a key of limit 1 whose stall the queue does not track: `paused`, `backlogged`, `at_capacity` or `idle`. */
  state: KeyState;
  /** §10a: the waits of the waiters now, so far (a group's finished runs do not keep how long they waited). */
  waits: Waits;
};

/** How a finished execution ended. */
export type SerialOutcome = "superseded" | "timed_out" | "released" | "abandoned";

/** `serialPause({ group, reason? })` (contract §11). */
export type SerialPause = {
  group: Ident;
  /** Why, for whoever looks at the group (kept while it is paused). */
  reason?: PauseReason | null;
};

/** `serialPause`'s reply: the pause as it stands. */
export type SerialPauseReply = {
  paused: Paused;
};

/** `serialResume({ group })` (contract §11). */
export type SerialResume = {
  group: Ident;
};

/** `serialResume`'s reply. */
export type SerialResumeReply = {
  /** The waiter the group went on to (handed it by its turn, or woken to claim it); null when it was not paused, is held, or nobody waits. */
  granted: InstanceId | null;
};

export type SerialWaiter = {
  instanceId: InstanceId;
  revision: Ident;
  /** In ms since the epoch. */
  enqueuedAt: number;
};

export type SkipReason = "not_current";

/** `startAt(key, { at, params?, workflow?, instanceId? })`. */
export type StartAt = {
  key: Ident;
  /** When to create the instance, in ms since the epoch; at most 365 days ahead; a past time starts it at once. */
  at: number;
  params?: unknown;
  workflow?: WorkflowName | null;
  /** The id to create it under (default: the pending start's, or a new `start-` id). */
  instanceId?: InstanceId | null;
};

/** `startAt`'s reply: `at` as the caller gave it. */
export type StartAtReply = {
  instanceId: InstanceId;
  at: number;
};

export type StartedView = {
  instanceId: InstanceId;
  /** When its create was confirmed, ms since the epoch. */
  at: number;
};

/** How long a long-poll may wait, in milliseconds. */
export type WaitMs = number;

/** A waiter, as `inspect` shows it. */
export type WaiterView = {
  id: InstanceId;
  /** When it joined the queue, in ms since the epoch. */
  since: number;
  inputHash?: InputHash;
  /** Its place in the order the key will be handed on (1 is next). */
  position: number;
  /** §1c: the estimate of its wait (as a `pending` reply's), or null before the key's first finished hold. */
  etaMs: number | null;
  /** §1c: as registered (0 unless named). */
  priority: number;
  /** §1c: as registered; null is the tenant shared by every waiter that names none. */
  tenant: Ident | null;
};

/** `inspect`'s `waits` (§10a): how long the key's recent holders waited for it and how long its waiters have waited so far, as percentiles. */
export type Waits = {
  /** The median wait in ms (0 when `n` is 0). */
  p50Ms: number;
  /** The 95th percentile wait in ms (0 when `n` is 0). */
  p95Ms: number;
  /** How many waits the figures are over: the recent holds' and the current waiters'. */
  n: number;
};

/** The binding name of a Workflow of Baton's Worker, one of WORKFLOW_BINDINGS. */
export type WorkflowName = string;

/** The service binding to Baton's Worker: its default entrypoint (contract §2, §7). */
export interface BatonService {
  coordinatorEnqueue(input: CoordinatorEnqueue): Promise<CoordinatorEnqueueReply>;
  coordinatorAcquire(input: CoordinatorAcquire): Promise<CoordinatorAcquireReply>;
  coordinatorRelease(input: CoordinatorRelease): Promise<ReleaseReply>;
  coordinatorInspect(input: CoordinatorInspect): Promise<CoordinatorInspection>;
  coordinatorPause(input: CoordinatorPause): Promise<CoordinatorPauseReply>;
  coordinatorResume(input: CoordinatorResume): Promise<CoordinatorResumeReply>;
  coordinatorSetLimit(input: CoordinatorSetLimit): Promise<CoordinatorSetLimitReply>;
  serialEnqueue(input: SerialEnqueue): Promise<SerialEnqueueReply>;
  serialClaim(input: GroupMember): Promise<SerialClaimReply>;
  serialHeartbeat(input: GroupMember): Promise<HeartbeatReply>;
  serialRelease(input: GroupMember): Promise<ReleaseReply>;
  serialInspect(input: SerialInspect): Promise<SerialInspection>;
  serialPause(input: SerialPause): Promise<SerialPauseReply>;
  serialResume(input: SerialResume): Promise<SerialResumeReply>;
  coordinatorList(input: ListRequest): Promise<KeyList>;
  serialList(input: ListRequest): Promise<GroupList>;
  rateAcquire(input: RateAcquire): Promise<RateAcquireReply>;
  ratePenalize(input: RatePenalize): Promise<RatePenalizeReply>;
  rateRefund(input: RateRefund): Promise<RateRefundReply>;
  rateInspect(input: RateInspect): Promise<RateInspection>;
  debounce(input: Debounce): Promise<DebounceReply>;
  startAt(input: StartAt): Promise<StartAtReply>;
  debounceFlush(input: DebounceKey): Promise<FlushReply>;
  debounceCancel(input: DebounceKey): Promise<CancelReply>;
  debounceInspect(input: DebounceKey): Promise<DebounceInspection>;
  runClaim(input: RunClaim): Promise<RunClaimReply>;
  runComplete(input: RunComplete): Promise<RunCompleteReply>;
  runAwait(input: RunAwait): Promise<RunView>;
  runAppend(input: RunAppend): Promise<RunAppendReply>;
  runEvents(input: RunEvents): Promise<RunEventsReply>;
}

/** RPC methods of the `Coordinator` Durable Object: its requests' fields as positional arguments. */
export interface CoordinatorRpc {
  enqueue(key: Ident, supersedes: boolean, instanceId: InstanceId, inputHash?: InputHash | null, options?: KeyOptions | null): Promise<CoordinatorEnqueueReply>;
  acquire(key: Ident, instanceId: InstanceId, options?: KeyOptions | null): Promise<CoordinatorAcquireReply>;
  release(key: Ident, instanceId: InstanceId): Promise<ReleaseReply>;
  inspect(key: Ident): Promise<CoordinatorInspection>;
  pause(key: Ident, options?: Omit<CoordinatorPause, "key">): Promise<CoordinatorPauseReply>;
  resume(key: Ident): Promise<CoordinatorResumeReply>;
  setLimit(key: Ident, limit?: HolderLimit | null): Promise<CoordinatorSetLimitReply>;
}

/** RPC methods of the `RateLimiter` Durable Object: its requests' fields as positional arguments. */
export interface RateLimiterRpc {
  acquire(bucket: Ident, options: Omit<RateAcquire, "bucket">): Promise<RateAcquireReply>;
  penalize(bucket: Ident, options: Omit<RatePenalize, "bucket">): Promise<RatePenalizeReply>;
  refund(bucket: Ident, options: Omit<RateRefund, "bucket">): Promise<RateRefundReply>;
  inspect(bucket: Ident): Promise<RateInspection>;
}

/** RPC methods of the `Debouncer` Durable Object: its requests' fields as positional arguments. */
export interface DebouncerRpc {
  debounce(key: Ident, options: Omit<Debounce, "key">): Promise<DebounceReply>;
  startAt(key: Ident, options: Omit<StartAt, "key">): Promise<StartAtReply>;
  flush(key: Ident): Promise<FlushReply>;
  cancel(key: Ident): Promise<CancelReply>;
  inspect(key: Ident): Promise<DebounceInspection>;
}

/** RPC methods of the `Runs` Durable Object: its requests' fields as positional arguments. */
export interface RunsRpc {
  claim(key: Ident, options: Omit<RunClaim, "key">): Promise<RunClaimReply>;
  complete(key: Ident, options: Omit<RunComplete, "key">): Promise<RunCompleteReply>;
  await(key: Ident, options: Omit<RunAwait, "key">): Promise<RunView>;
  append(key: Ident, options: Omit<RunAppend, "key">): Promise<RunAppendReply>;
  events(key: Ident, options?: Omit<RunEvents, "key">): Promise<RunEventsReply>;
}
// --- End of the generated wire types ---

// --- Idempotent runs (contract §6): the object's methods and the helpers ---
// (The request and reply shapes are the generated wire types above.)

/** The `RUNS` Durable Object namespace binding. */
export interface RunsNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): RunsRpc;
}

/** The part of a Workflow binding `startOnce` uses. */
export interface WorkflowBindingLike<P> {
  create(options: { id: string; params?: P }): Promise<unknown>;
}

export interface StartOnceOptions {
  /** The id to claim with (default: `idPrefix` + a random UUID). Pass the same one when retrying. */
  instanceId?: string;
  /** Prefix of a generated id (default "run-"). */
  idPrefix?: string;
  /** The Workflow's binding name on Baton's Worker (one of WORKFLOW_BINDINGS), if not the default. */
  workflow?: string;
}

/**
 * Claims `key` and creates the Workflow instance if this call won the
 * claim. `started: false` means another caller's instance holds it:
 * `instanceId` is that one.
 */
export function startOnce<P>(
  runs: RunsNamespace,
  workflow: WorkflowBindingLike<P>,
  key: string,
  params: P,
  options?: StartOnceOptions,
): Promise<{ instanceId: string; started: boolean }>;

/** Long-polls `key` until its run has an outcome or `timeoutMs` (default 60000) passes. */
export function awaitRun(runs: RunsNamespace, key: string, options?: { timeoutMs?: number }): Promise<RunView>;

export interface RunReporter {
  /** Appends a progress event in a step; resolves to its seq. Await each before the next. */
  event(type: string, data?: unknown): Promise<number>;
  /** Records `complete` in a step; true if this call recorded it. */
  complete(result?: unknown): Promise<boolean>;
  /** Records `failed` in a step; true if this call recorded it. */
  fail(error: string): Promise<boolean>;
}

export interface RunReporterOptions {
  /** Retry policy of the reporting steps. */
  stepRetries?: { limit: number; delay: string | number; backoff?: "constant" | "linear" | "exponential" };
}

/** The claimant's reporter for the run under `key`, for Workflow code. */
export function runReporter(
  step: WorkflowStepLike,
  runs: RunsNamespace,
  key: string,
  instanceId: string,
  options?: RunReporterOptions,
): RunReporter;

/**
 * Runs `body` as the claimant and records its outcome: the return value as
 * `result`, or a thrown error's message as `error` (and rethrows it).
 */
export function reportRun<T>(
  step: WorkflowStepLike,
  runs: RunsNamespace,
  key: string,
  instanceId: string,
  body: (report: RunReporter) => Promise<T>,
  options?: RunReporterOptions,
): Promise<T>;
