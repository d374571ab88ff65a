var __defProp = Object.defineProperty;
var __name = (target, value) => __defProp(target, "name", { value, configurable: true });

// worker.mjs
import { WorkflowEntrypoint } from "cloudflare:workers";

// ../js/with-key.mjs
import { NonRetryableError } from "cloudflare:workflows";
var TURN_EVENT_TYPE = "baton-turn";
var DEFAULTS = {
  turnTimeout: "10 minutes",
  // 10 minutes x 1000 waits is about a week: past that the Workflow
  // is stuck for a reason no amount of waiting fixes.
  maxWaits: 1e3,
  turnEventType: TURN_EVENT_TYPE,
  stepRetries: { limit: 5, delay: "1 second", backoff: "exponential" }
};
var STEP_KEY_CHARS_MAX = 64;
function stepTag(key) {
  if (key.length <= STEP_KEY_CHARS_MAX) return key;
  let hash = 2166136261;
  for (let i = 0; i < key.length; i++) {
    hash = Math.imul(hash ^ key.charCodeAt(i), 16777619);
  }
  return `${key.slice(0, 32)}~${(hash >>> 0).toString(36)}`;
}
__name(stepTag, "stepTag");
async function withKey(step, coordinator, key, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  const stub = coordinator.get(coordinator.idFromName(key));
  const tag = stepTag(String(key));
  const stepConfig = { retries: settings.stepRetries, timeout: "1 minute" };
  const call = /* @__PURE__ */ __name((name, method) => step.do(name, stepConfig, async () => {
    try {
      return await method();
    } catch (error) {
      if (String(error?.message).startsWith("BatonError:")) {
        throw new NonRetryableError(error.message);
      }
      throw error;
    }
  }), "call");
  let outcome = await call(`baton acquire ${tag}`, () => stub.acquire(key, instanceId));
  for (let wait = 1; outcome === "pending"; wait++) {
    if (wait > settings.maxWaits) {
      throw new NonRetryableError(
        `Baton: gave up waiting for key ${JSON.stringify(key)} after ${settings.maxWaits} waits`
      );
    }
    try {
      await step.waitForEvent(`baton turn ${tag} #${wait}`, {
        type: settings.turnEventType,
        timeout: settings.turnTimeout
      });
    } catch {
    }
    outcome = await call(`baton acquire ${tag} #${wait}`, () => stub.acquire(key, instanceId));
  }
  if (outcome === "superseded") {
    return { superseded: true };
  }
  if (outcome !== "granted") {
    throw new NonRetryableError(`Baton: unexpected acquire outcome ${JSON.stringify(outcome)}`);
  }
  try {
    return { superseded: false, value: await body() };
  } finally {
    await call(`baton release ${tag}`, () => stub.release(key, instanceId));
  }
}
__name(withKey, "withKey");

// ../js/serialize.mjs
import { NonRetryableError as NonRetryableError2 } from "cloudflare:workflows";
var RunSkipped = class extends NonRetryableError2 {
  static {
    __name(this, "RunSkipped");
  }
  constructor(message, revision) {
    super(message, "RunSkipped");
    this.name = "RunSkipped";
    this.revision = revision;
  }
};
var SerialQueueTimedOut = class extends NonRetryableError2 {
  static {
    __name(this, "SerialQueueTimedOut");
  }
  constructor(message) {
    super(message, "SerialQueueTimedOut");
    this.name = "SerialQueueTimedOut";
  }
};
var DEFAULTS2 = {
  pollInterval: 3e4,
  // Three per default expiry (600 s) would be 200 s; four leaves a margin
  // for a slow heartbeat step.
  heartbeatInterval: 15e4,
  // 30 s x 240 polls is two hours, past the default waiter timeout: the
  // queue's own timeout ends the wait first; this only bounds the loop.
  maxPolls: 240,
  turnEventType: "baton-turn",
  stepRetries: { limit: 5, delay: "1 second", backoff: "exponential" }
};
async function serialize(step, baton, spec, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS2, ...options };
  const { group, revision, current } = spec;
  const stepConfig = { retries: settings.stepRetries, timeout: "1 minute" };
  const call = /* @__PURE__ */ __name((name, method) => step.do(name, stepConfig, async () => {
    try {
      return await method();
    } catch (error) {
      if (String(error?.message).startsWith("BatonError:")) {
        throw new NonRetryableError2(error.message);
      }
      throw error;
    }
  }), "call");
  const who = { group, instanceId };
  const enqueued = await call(
    "baton serial enqueue",
    () => baton.serialEnqueue(current === void 0 ? { group, instanceId, revision } : { group, instanceId, revision, current })
  );
  if (enqueued.status === "skipped") {
    throw new RunSkipped(`revision ${revision} is not current (current is ${enqueued.current})`, enqueued.current);
  }
  for (let poll = 0; ; poll++) {
    const claim = await call(`baton serial claim #${poll}`, () => baton.serialClaim(who));
    if (claim.status === "holding") break;
    if (claim.status === "skipped") {
      const by = claim.supersededBy;
      throw new RunSkipped(`superseded by revision ${by.revision} (instance ${by.instanceId})`, by.revision);
    }
    if (claim.status === "timed_out") {
      throw new SerialQueueTimedOut(`waited too long behind the holder of group ${group}`);
    }
    if (poll + 1 >= settings.maxPolls) {
      throw new SerialQueueTimedOut(`gave up after ${settings.maxPolls} polls of group ${group}`);
    }
    try {
      await step.waitForEvent(`baton serial turn #${poll + 1}`, {
        type: settings.turnEventType,
        timeout: settings.pollInterval
      });
    } catch {
    }
  }
  try {
    const outcome = Promise.resolve().then(body).then(
      (value) => ({ done: true, value }),
      (error) => ({ done: true, error })
    );
    for (let beat = 1; ; beat++) {
      const next = await Promise.race([
        outcome,
        step.sleep(`baton serial heartbeat wait #${beat}`, settings.heartbeatInterval).then(() => ({ done: false }))
      ]);
      if (next.done) {
        if ("error" in next) throw next.error;
        return next.value;
      }
      await call(`baton serial heartbeat #${beat}`, () => baton.serialHeartbeat(who));
    }
  } finally {
    await call("baton serial release", () => baton.serialRelease(who));
  }
}
__name(serialize, "serialize");

// worker.mjs
var ExampleWorkflow = class extends WorkflowEntrypoint {
  static {
    __name(this, "ExampleWorkflow");
  }
  async run(event, step) {
    if (event.payload.deploy) return this.deploy(event, step);
    const { key, holdSeconds = 5 } = event.payload;
    return withKey(step, this.env.COORDINATOR, key, event.instanceId, async () => {
      await step.sleep("work", `${holdSeconds} seconds`);
      return { key, finishedAt: await step.do("finish", async () => (/* @__PURE__ */ new Date()).toISOString()) };
    }, { turnTimeout: "1 minute" });
  }
  /**
   * A deploy on every push: one in flight per repo/branch/check label, the
   * newest push wins, and a push that is no longer the branch head skips.
   * `head` is the branch head the dispatcher read when the push arrived.
   */
  async deploy(event, step) {
    const { repo, branch, label = "deploy", sha, head, holdSeconds = 5 } = event.payload.deploy;
    return serialize(
      step,
      this.env.BATON,
      { group: `${repo}:${branch}:${label}`, revision: sha, current: head },
      event.instanceId,
      async () => {
        await step.sleep("publish", `${holdSeconds} seconds`);
        return { deployed: sha };
      }
    );
  }
};
var json = /* @__PURE__ */ __name((value, status = 200) => new Response(JSON.stringify(value, null, 2) + "\n", {
  status,
  headers: { "content-type": "application/json" }
}), "json");
var worker_default = {
  async fetch(request, env) {
    const url = new URL(request.url);
    const key = url.searchParams.get("key") ?? "demo";
    try {
      if (request.method === "POST" && url.pathname === "/start") {
        const count = Math.min(Number(url.searchParams.get("count") ?? 1), 20);
        const holdSeconds = Math.min(Number(url.searchParams.get("hold") ?? 5), 300);
        const ids = [];
        for (let i = 0; i < count; i++) {
          const instance = await env.EXAMPLE.create({ params: { key, holdSeconds } });
          ids.push(instance.id);
        }
        return json({ started: ids });
      }
      if (request.method === "POST" && url.pathname === "/deploy") {
        const p = Object.fromEntries(url.searchParams);
        const deploy = { repo: p.repo ?? "acme/site", branch: p.branch ?? "main", sha: p.sha, head: p.head, holdSeconds: Number(p.hold ?? 5) };
        const instance = await env.EXAMPLE.create({ params: { deploy } });
        return json({ started: instance.id, deploy });
      }
      if (request.method === "GET" && url.pathname === "/group") {
        const group = url.searchParams.get("group") ?? "acme/site:main:deploy";
        return json(await env.BATON.serialInspect({ group }));
      }
      if (request.method === "GET" && url.pathname === "/inspect") {
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(key));
        return json(await stub.inspect(key));
      }
      if (request.method === "GET" && url.pathname === "/status") {
        const instance = await env.EXAMPLE.get(url.searchParams.get("id"));
        return json(await instance.status());
      }
      return json({ routes: ["POST /start?key=&count=&hold=", "GET /inspect?key=", "POST /deploy?sha=&head=&hold=", "GET /group?group=", "GET /status?id="] }, 404);
    } catch (error) {
      return json({ error: String(error?.message ?? error) }, 400);
    }
  }
};

// ../node_modules/wrangler/templates/middleware/middleware-ensure-req-body-drained.ts
var drainBody = /* @__PURE__ */ __name(async (request, env, _ctx, middlewareCtx) => {
  try {
    return await middlewareCtx.next(request, env);
  } finally {
    try {
      if (request.body !== null && !request.bodyUsed) {
        const reader = request.body.getReader();
        while (!(await reader.read()).done) {
        }
      }
    } catch (e) {
      console.error("Failed to drain the unused request body.", e);
    }
  }
}, "drainBody");
var middleware_ensure_req_body_drained_default = drainBody;

// ../node_modules/wrangler/templates/middleware/middleware-miniflare3-json-error.ts
function reduceError(e) {
  return {
    name: e?.name,
    message: e?.message ?? String(e),
    stack: e?.stack,
    cause: e?.cause === void 0 ? void 0 : reduceError(e.cause)
  };
}
__name(reduceError, "reduceError");
var jsonError = /* @__PURE__ */ __name(async (request, env, _ctx, middlewareCtx) => {
  try {
    return await middlewareCtx.next(request, env);
  } catch (e) {
    const error = reduceError(e);
    const body = JSON.stringify(error);
    const headers = {
      "Content-Type": "application/json",
      "MF-Experimental-Error-Stack": "true"
    };
    const encoded = encodeURIComponent(body);
    if (encoded.length <= 8192) {
      headers["MF-Experimental-Error-Stack-Payload"] = encoded;
    }
    return new Response(body, { status: 500, headers });
  }
}, "jsonError");
var middleware_miniflare3_json_error_default = jsonError;

// wrangler-config:config:middleware/patch-console-prefix
var prefix = "[baton-example]";

// ../node_modules/wrangler/templates/middleware/middleware-patch-console-prefix.ts
["log", "debug", "info"].forEach((method) => {
  globalThis.console[method] = new Proxy(globalThis.console[method], {
    apply(target, thisArg, argumentsList) {
      return target.apply(thisArg, [prefix, ...argumentsList]);
    }
  });
});
var passthrough = /* @__PURE__ */ __name((request, env, _ctx, middlewareCtx) => {
  return middlewareCtx.next(request, env);
}, "passthrough");
var middleware_patch_console_prefix_default = passthrough;

// .wrangler/tmp/bundle-cqVhTx/middleware-insertion-facade.js
var __INTERNAL_WRANGLER_MIDDLEWARE__ = [
  middleware_ensure_req_body_drained_default,
  middleware_miniflare3_json_error_default,
  middleware_patch_console_prefix_default
];
var middleware_insertion_facade_default = worker_default;

// ../node_modules/wrangler/templates/middleware/common.ts
var __facade_middleware__ = [];
function __facade_register__(...args) {
  __facade_middleware__.push(...args.flat());
}
__name(__facade_register__, "__facade_register__");
function __facade_invokeChain__(request, env, ctx, dispatch, middlewareChain) {
  const [head, ...tail] = middlewareChain;
  const middlewareCtx = {
    dispatch,
    next(newRequest, newEnv) {
      return __facade_invokeChain__(newRequest, newEnv, ctx, dispatch, tail);
    }
  };
  return head(request, env, ctx, middlewareCtx);
}
__name(__facade_invokeChain__, "__facade_invokeChain__");
function __facade_invoke__(request, env, ctx, dispatch, finalMiddleware) {
  return __facade_invokeChain__(request, env, ctx, dispatch, [
    ...__facade_middleware__,
    finalMiddleware
  ]);
}
__name(__facade_invoke__, "__facade_invoke__");

// .wrangler/tmp/bundle-cqVhTx/middleware-loader.entry.ts
var __Facade_ScheduledController__ = class ___Facade_ScheduledController__ {
  constructor(scheduledTime, cron, noRetry) {
    this.scheduledTime = scheduledTime;
    this.cron = cron;
    this.#noRetry = noRetry;
  }
  scheduledTime;
  cron;
  static {
    __name(this, "__Facade_ScheduledController__");
  }
  #noRetry;
  noRetry() {
    if (!(this instanceof ___Facade_ScheduledController__)) {
      throw new TypeError("Illegal invocation");
    }
    this.#noRetry();
  }
};
function wrapExportedHandler(worker) {
  if (__INTERNAL_WRANGLER_MIDDLEWARE__ === void 0 || __INTERNAL_WRANGLER_MIDDLEWARE__.length === 0) {
    return worker;
  }
  for (const middleware of __INTERNAL_WRANGLER_MIDDLEWARE__) {
    __facade_register__(middleware);
  }
  const fetchDispatcher = /* @__PURE__ */ __name(function(request, env, ctx) {
    if (worker.fetch === void 0) {
      throw new Error("Handler does not export a fetch() function.");
    }
    return worker.fetch(request, env, ctx);
  }, "fetchDispatcher");
  return {
    ...worker,
    fetch(request, env, ctx) {
      const dispatcher = /* @__PURE__ */ __name(function(type, init) {
        if (type === "scheduled" && worker.scheduled !== void 0) {
          const controller = new __Facade_ScheduledController__(
            Date.now(),
            init.cron ?? "",
            () => {
            }
          );
          return worker.scheduled(controller, env, ctx);
        }
      }, "dispatcher");
      return __facade_invoke__(request, env, ctx, dispatcher, fetchDispatcher);
    }
  };
}
__name(wrapExportedHandler, "wrapExportedHandler");
function wrapWorkerEntrypoint(klass) {
  if (__INTERNAL_WRANGLER_MIDDLEWARE__ === void 0 || __INTERNAL_WRANGLER_MIDDLEWARE__.length === 0) {
    return klass;
  }
  for (const middleware of __INTERNAL_WRANGLER_MIDDLEWARE__) {
    __facade_register__(middleware);
  }
  return class extends klass {
    #fetchDispatcher = /* @__PURE__ */ __name((request, env, ctx) => {
      this.env = env;
      this.ctx = ctx;
      if (super.fetch === void 0) {
        throw new Error("Entrypoint class does not define a fetch() function.");
      }
      return super.fetch(request);
    }, "#fetchDispatcher");
    #dispatcher = /* @__PURE__ */ __name((type, init) => {
      if (type === "scheduled" && super.scheduled !== void 0) {
        const controller = new __Facade_ScheduledController__(
          Date.now(),
          init.cron ?? "",
          () => {
          }
        );
        return super.scheduled(controller);
      }
    }, "#dispatcher");
    fetch(request) {
      return __facade_invoke__(
        request,
        this.env,
        this.ctx,
        this.#dispatcher,
        this.#fetchDispatcher
      );
    }
  };
}
__name(wrapWorkerEntrypoint, "wrapWorkerEntrypoint");
var WRAPPED_ENTRY;
if (typeof middleware_insertion_facade_default === "object") {
  WRAPPED_ENTRY = wrapExportedHandler(middleware_insertion_facade_default);
} else if (typeof middleware_insertion_facade_default === "function") {
  WRAPPED_ENTRY = wrapWorkerEntrypoint(middleware_insertion_facade_default);
}
var middleware_loader_entry_default = WRAPPED_ENTRY;
export {
  ExampleWorkflow,
  __INTERNAL_WRANGLER_MIDDLEWARE__,
  middleware_loader_entry_default as default
};
//# sourceMappingURL=worker.js.map
