// Rate limits from the caller's side: `withRateLimit` for Workflow code and
// `PermitPool` for any Worker. Both ask the bucket's RateLimiter (contract
// §5) for permits; neither decides anything itself.
import { NonRetryableError } from "cloudflare:workflows";
import { batonSteps, stepTag } from "./steps.mjs";

const DEFAULTS = {
  permits: 1,
  // A refused acquire sleeps exactly until a permit frees, so each wait
  // ends in a grant unless others took it first; 1000 lost races in a row
  // means the bucket is far over-subscribed, not that waiting will help.
  maxWaits: 1000,
  stepRetries: { limit: 5, delay: "1 second", backoff: "exponential" },
};

// How many times each Workflow run has called withRateLimit per bucket, so
// that every call gets its own step names. A replay runs the same code in
// the same order with a new `step`, so the numbering repeats exactly.
const callsByStep = new WeakMap();

function callNumber(step, bucket) {
  let calls = callsByStep.get(step);
  if (!calls) callsByStep.set(step, (calls = new Map()));
  const n = (calls.get(bucket) ?? 0) + 1;
  calls.set(bucket, n);
  return n;
}

/**
 * Acquires `permits` (default 1) from `bucket` under `rules`, in steps,
 * sleeping with `step.sleep(waitMs)` while none is free, then runs `body`.
 * A partial grant keeps what it got and asks for the rest.
 */
export async function withRateLimit(step, rateLimiter, bucket, rules, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  // A fresh stub for every call: one that has thrown (a reset object)
  // throws on every later call, so a retried step must not reuse it.
  const stub = () => rateLimiter.get(rateLimiter.idFromName(bucket));
  const tag = settings.name ?? `${stepTag(String(bucket))} #${callNumber(step, bucket)}`;
  const call = batonSteps(step, settings.stepRetries);

  let got = 0;
  let waits = 0;
  // Each pass either grants at least one permit or sleeps once, so the loop
  // ends after at most `permits + maxWaits` passes.
  for (let pass = 1; got < settings.permits; pass++) {
    const wanted = settings.permits - got;
    const reply = await call(`baton rate ${tag} acquire ${pass}`, () =>
      stub().acquire(bucket, { rules, permits: wanted }),
    );
    got += reply.granted;
    if (reply.granted > 0) continue;
    if (++waits > settings.maxWaits) {
      throw new NonRetryableError(
        `Baton: no permit from bucket ${JSON.stringify(bucket)} after ${settings.maxWaits} waits`,
      );
    }
    await step.sleep(`baton rate ${tag} wait ${pass}`, Math.max(1, reply.waitMs));
  }
  return body();
}

/** Thrown by `PermitPool.take` when the wait for a permit would pass `maxWaitMs`. */
export class RateLimitTimeout extends Error {
  constructor(message, waitMs) {
    super(message);
    this.name = "RateLimitTimeout";
    this.waitMs = waitMs;
  }
}

/**
 * Permits for any Worker, leased from the bucket in blocks of `block` (one
 * round trip per block) and spent locally. A leased permit counted in the
 * bucket's windows from the moment it was leased, so a pool spends it
 * within `holdMs` or gives it back: that bounds how far real calls can
 * drift from the grants the windows saw (see docs/rate-limits.md).
 */
export class PermitPool {
  #rateLimiter;
  #bucket;
  #rules;
  #block;
  #holdMs;
  #maxWaitMs;
  /** Leases not yet spent, oldest first: `{ at, count }`. */
  #leases = [];
  #leasing = null;

  constructor(rateLimiter, bucket, rules, { block = 10, holdMs = 1000, maxWaitMs = 60_000 } = {}) {
    this.#rateLimiter = rateLimiter;
    this.#bucket = bucket;
    this.#rules = rules;
    this.#block = block;
    this.#holdMs = holdMs;
    this.#maxWaitMs = maxWaitMs;
  }

  /** Permits leased and still spendable. */
  get available() {
    this.#expire();
    return this.#leases.reduce((sum, lease) => sum + lease.count, 0);
  }

  /**
   * The bucket's object, a fresh stub for every call: once a stub has
   * thrown (the object was reset), every later call on it throws too.
   */
  #stub() {
    return this.#rateLimiter.get(this.#rateLimiter.idFromName(this.#bucket));
  }

  /**
   * Spends `n` permits (default 1), leasing blocks as needed and waiting
   * `waitMs` when the bucket has none; throws `RateLimitTimeout` rather
   * than wait past `maxWaitMs` in all.
   */
  async take(n = 1) {
    const deadline = Date.now() + this.#maxWaitMs;
    let taken = 0;
    while (taken < n) {
      this.#expire();
      const lease = this.#leases[0];
      if (lease) {
        const spent = Math.min(lease.count, n - taken);
        lease.count -= spent;
        taken += spent;
        if (lease.count === 0) this.#leases.shift();
        continue;
      }
      const reply = await this.#lease(Math.max(this.#block, n - taken));
      if (reply.granted > 0) continue;
      if (Date.now() + reply.waitMs > deadline) {
        // Give back what this call already took: it will not be spent.
        if (taken > 0) await this.#refund(taken);
        throw new RateLimitTimeout(
          `Baton: bucket ${JSON.stringify(this.#bucket)} has no permit for ${reply.waitMs} ms`,
          reply.waitMs,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, reply.waitMs));
    }
  }

  /** Gives every unspent permit back to the bucket; returns how many it took back. */
  async close() {
    const unused = this.#leases.reduce((sum, lease) => sum + lease.count, 0);
    this.#leases = [];
    return unused > 0 ? this.#refund(unused) : 0;
  }

  /** One lease in flight per pool: concurrent takers share it. */
  #lease(permits) {
    this.#leasing ??= (async () => {
      try {
        const reply = await this.#stub().acquire(this.#bucket, { rules: this.#rules, permits });
        if (reply.granted > 0) this.#leases.push({ at: Date.now(), count: reply.granted });
        return reply;
      } finally {
        this.#leasing = null;
      }
    })();
    return this.#leasing;
  }

  /** Drops leases older than `holdMs`, refunding them (best effort). */
  #expire() {
    const now = Date.now();
    let stale = 0;
    while (this.#leases.length > 0 && now - this.#leases[0].at >= this.#holdMs) {
      stale += this.#leases.shift().count;
    }
    if (stale > 0) this.#refund(stale).catch(() => {});
  }

  async #refund(permits) {
    let refunded = 0;
    // The contract takes at most 10,000 per refund.
    for (let left = permits; left > 0; ) {
      const chunk = Math.min(left, 10_000);
      refunded += (await this.#stub().refund(this.#bucket, { permits: chunk })).refunded;
      left -= chunk;
    }
    return refunded;
  }
}
