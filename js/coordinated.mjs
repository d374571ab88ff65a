// coordinated(WorkflowEntrypoint, options): flow control declared once on
// the Workflow class (contract §3a), for users who would rather state it
// next to the Workflow than call Baton in its code.
//
//   export class Deploy extends coordinated(WorkflowEntrypoint, {
//     coordinator: (env) => env.COORDINATOR,
//     key: (event) => `deploy:${event.payload.repo}`,
//     supersede: "cancel",
//   }) {
//     async run(event, step, { fence }) { ... }
//   }
//
// The wrapper runs the class's own `run` inside the key, exactly as
// `withKey` would: it registers the instance itself at the start of the run
// (with `supersedes`, and `cancelHolders` for "cancel"), takes the key (and
// any `also` keys, and then a permit of `rateLimit`), runs `run(event, step,
// { fence, fences })`, and releases on every exit. A superseded instance
// completes returning `{ superseded: true }` and a skipped one `{ busy: true
// }`, without running `run`. The instance's id is `event.instanceId`, and no
// Workflow binding is named: Baton finds the instance through any of its
// bindings (§1a).
//
// Every option is a value or a function: the bindings (`coordinator`,
// `rateLimit.limiter`) of `(env, event)`, every other option of `(event,
// env)`. A bad option fails the instance at its first step with the
// `BatonError` naming the option, and calls nothing.
import { batonSteps, stepTag } from "./steps.mjs";
import { batonError, integerIn } from "./options.mjs";
import { keyOptions, sectionKeys, withKey } from "./with-key.mjs";
import { withRateLimit } from "./rate-limit.mjs";

/** The options the wrapper knows; any other is refused by name. */
const OPTIONS = [
  "coordinator",
  "key",
  "supersede",
  "limit",
  "priority",
  "tenant",
  "onBusy",
  "maxWaiting",
  "also",
  "workflow",
  "turnTimeout",
  "maxWaits",
  "stepRetries",
  "rateLimit",
];
const RATE_OPTIONS = ["limiter", "bucket", "rules", "permits", "maxWaitMs", "maxWaits", "name"];
const SUPERSEDE = [false, "waiting", "cancel"];

/** Marks a class's `run` once wrapped, so a subclass of it is not wrapped twice. */
const WRAPPED = Symbol("baton coordinated run");

/** `value`, or what it gives when it is a function of `args`. */
function resolved(value, ...args) {
  return typeof value === "function" ? value(...args) : value;
}

/**
 * The options for this event: every function called, and checked. Throws
 * the `BatonError` naming the first bad option.
 */
export function resolveOptions(options, event, env) {
  if (options === null || typeof options !== "object") throw batonError("options", "must be an object");
  for (const name of Object.keys(options)) {
    if (!OPTIONS.includes(name)) throw batonError(name, "is not an option of coordinated()");
  }
  const of = (name) => {
    try {
      return resolved(options[name], event, env);
    } catch (error) {
      throw batonError(name, `could not be computed from the event: ${error?.message ?? error}`);
    }
  };
  const coordinator = resolved(options.coordinator, env, event);
  if (typeof coordinator?.idFromName !== "function" || typeof coordinator?.get !== "function") {
    throw batonError("coordinator", "must be the Coordinator's Durable Object namespace (or (env) => it)");
  }
  const key = of("key");
  if (typeof key !== "string" || key.length === 0) throw batonError("key", "must be a non-empty string");
  const supersede = options.supersede === undefined ? false : of("supersede");
  if (!SUPERSEDE.includes(supersede)) throw batonError("supersede", 'must be false, "waiting" or "cancel"');
  const settings = { coordinator, key, supersede };
  for (const name of ["limit", "priority", "tenant", "onBusy", "maxWaiting", "workflow", "turnTimeout", "maxWaits", "stepRetries"]) {
    const value = of(name);
    if (value !== undefined) settings[name] = value;
  }
  if (settings.limit !== undefined) integerIn("limit", settings.limit, 1, 1000);
  if (settings.priority !== undefined) integerIn("priority", settings.priority, -100, 100);
  if (settings.maxWaiting !== undefined) integerIn("maxWaiting", settings.maxWaiting, 1, 20_000);
  if (settings.onBusy !== undefined && !["wait", "skip"].includes(settings.onBusy)) {
    throw batonError("onBusy", 'must be "wait" or "skip"');
  }
  if (settings.tenant !== undefined && (typeof settings.tenant !== "string" || settings.tenant.length === 0)) {
    throw batonError("tenant", "must be a non-empty string");
  }
  if (options.also !== undefined) settings.also = alsoOf(of("also"), event, env);
  if (options.rateLimit !== undefined) settings.rateLimit = rateOf(options.rateLimit, event, env);
  // `also`'s own rules (count, distinct keys), checked as withKey will.
  sectionKeys(key, settings);
  return settings;
}

/** `also`, each entry's fields resolved. */
function alsoOf(also, event, env) {
  if (!Array.isArray(also)) return also;
  return also.map((entry, i) => {
    if (entry === null || typeof entry !== "object") return entry;
    return Object.fromEntries(
      Object.entries(entry).map(([name, value]) => {
        try {
          return [name, resolved(value, event, env)];
        } catch (error) {
          throw batonError(`also[${i}].${name}`, `could not be computed from the event: ${error?.message ?? error}`);
        }
      }),
    );
  });
}

/** `rateLimit`, resolved and checked. */
function rateOf(rate, event, env) {
  if (rate === null || typeof rate !== "object") throw batonError("rateLimit", "must be an object { limiter, bucket, rules, ... }");
  for (const name of Object.keys(rate)) {
    if (!RATE_OPTIONS.includes(name)) throw batonError(`rateLimit.${name}`, "is not an option of rateLimit");
  }
  const limiter = resolved(rate.limiter, env, event);
  if (typeof limiter?.idFromName !== "function" || typeof limiter?.get !== "function") {
    throw batonError("rateLimit.limiter", "must be the RateLimiter's Durable Object namespace (or (env) => it)");
  }
  const out = { limiter };
  for (const name of ["bucket", "rules", "permits", "maxWaitMs", "maxWaits", "name"]) {
    try {
      const value = resolved(rate[name], event, env);
      if (value !== undefined) out[name] = value;
    } catch (error) {
      throw batonError(`rateLimit.${name}`, `could not be computed from the event: ${error?.message ?? error}`);
    }
  }
  if (typeof out.bucket !== "string" || out.bucket.length === 0) throw batonError("rateLimit.bucket", "must be a non-empty string");
  if (!Array.isArray(out.rules) || out.rules.length === 0) throw batonError("rateLimit.rules", "must be 1 to 8 rules { id, limit, windowMs }");
  if (out.permits !== undefined) integerIn("rateLimit.permits", out.permits, 1, 10_000);
  if (out.maxWaitMs !== undefined) integerIn("rateLimit.maxWaitMs", out.maxWaitMs, 0, 86_400_000);
  return out;
}

/**
 * The wrapped run: the options checked (a bad one fails the first step),
 * the instance registered (superseding as `supersede` says), then the
 * class's own `run` inside the key, and inside `rateLimit` if given.
 */
async function coordinatedRun(instance, run, options, event, step) {
  let settings;
  try {
    settings = resolveOptions(options, event, instance.env);
  } catch (error) {
    // The first step fails, naming the option; nothing was called.
    await step.do("baton options", { retries: { limit: 0, delay: 0 } }, async () => {
      throw error;
    });
  }
  const id = event.instanceId;
  const { coordinator, key } = settings;
  const register = registration(settings);
  if (register) {
    const call = batonSteps(step, settings.stepRetries ?? DEFAULT_RETRIES);
    const reply = await call(`baton enqueue ${stepTag(key)}`, () =>
      coordinator.get(coordinator.idFromName(key)).enqueue(key, true, id, undefined, register),
    );
    if (reply?.busy) return { busy: true };
  }
  const { rateLimit, ...keyed } = settings;
  const result = await withKey(
    step,
    coordinator,
    key,
    id,
    (grant) => {
      if (!rateLimit) return run.call(instance, event, step, grant);
      const { limiter, bucket, rules, ...rateOptions } = rateLimit;
      return withRateLimit(step, limiter, bucket, rules, () => run.call(instance, event, step, grant), rateOptions);
    },
    keyed,
  );
  if (result.busy) return { busy: true };
  if (result.superseded) return { superseded: true };
  return result.value;
}

/**
 * The options of the instance's own registration at the start of its run
 * (an `enqueue` that supersedes, with `cancelHolders` for "cancel"), or
 * undefined when `supersede` is false and the run only acquires. Exported
 * for the benchmark, which makes a section's calls as the wrapper does.
 */
export function registration(settings) {
  if (settings.supersede === false) return undefined;
  const register = { ...keyOptions(settings) };
  if (settings.supersede === "cancel") register.cancelHolders = true;
  return register;
}

const DEFAULT_RETRIES = { limit: 5, delay: "1 second", backoff: "exponential" };

/**
 * A class extending `Base` (Cloudflare's `WorkflowEntrypoint`) whose
 * subclass's `run(event, step, { fence, fences })` runs inside the key
 * `options` declare. See the module's comment, and docs/declared.md.
 */
export function coordinated(Base, options) {
  if (typeof Base !== "function") throw batonError("Base", "must be a class (WorkflowEntrypoint)");
  return class Coordinated extends Base {
    constructor(...args) {
      super(...args);
      // The subclass's own `run`, wrapped on its prototype once: the
      // Workflows engine calls `run` as a method of the class.
      const proto = new.target.prototype;
      const run = proto.run;
      if (typeof run !== "function" || run[WRAPPED] || run === Coordinated.prototype.run) return;
      const wrapped = function (event, step) {
        return coordinatedRun(this, run, options, event, step);
      };
      wrapped[WRAPPED] = true;
      Object.defineProperty(proto, "run", { value: wrapped, writable: true, configurable: true });
    }

    /** A class that declares no `run` of its own: refused at its first step. */
    async run(event, step) {
      return step.do("baton options", { retries: { limit: 0, delay: 0 } }, async () => {
        throw batonError("run", "the class extending coordinated() must define run(event, step, { fence })");
      });
    }
  };
}
