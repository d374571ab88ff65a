// The test Worker: a Workflow that takes a key through `withKey`, a
// Recorder that logs when bodies enter and exit, and a small HTTP control
// surface the Node tests drive.
import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import { withKey } from "../../js/with-key.mjs";
import { serialize } from "../../js/serialize.mjs";

const NO_RETRY = { retries: { limit: 0, delay: 0 } };

/**
 * What both modes run while they hold: log the entry, hold (until a "finish"
 * event, or for `holdMs`), log the exit, and return `result`.
 */
async function recordedBody(step, recorder, id, { waitForFinish, holdMs }, result) {
  await step.do("enter", NO_RETRY, () => recorder.append("enter", id));
  if (waitForFinish) {
    await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
  } else if (holdMs > 0) {
    await step.sleep("hold", holdMs);
  }
  await step.do("exit", NO_RETRY, () => recorder.append("exit", id));
  return result;
}

export class TestWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    // One class for both helpers: the serial queue wakes instances through one Workflow binding.
    if (event.payload.mode === "serial") return this.runSerial(event, step);
    const { key, holdMs = 0, waitForFinish = false, turnTimeout = "10 minutes" } = event.payload;
    const { workflow, limit } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    return withKey(
      step,
      this.env.COORDINATOR,
      key,
      id,
      () => recordedBody(step, recorder, id, { waitForFinish, holdMs }, "done"),
      { turnTimeout, stepRetries: { limit: 2, delay: "100 milliseconds" }, workflow, limit },
    );
  }

  /** A deploy-like run through `serialize`: payload { group, revision, current?, holdMs?, waitForFinish?, options? }. */
  async runSerial(event, step) {
    const { group, revision, current, holdMs = 0, waitForFinish = false, options = {} } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    try {
      const value = await serialize(
        step,
        this.env.BATON,
        current === undefined ? { group, revision } : { group, revision, current },
        id,
        () => recordedBody(step, recorder, id, { waitForFinish, holdMs }, "deployed"),
        { stepRetries: { limit: 2, delay: "100 milliseconds" }, ...options },
      );
      return { ran: true, value };
    } catch (error) {
      // Surface the helper's outcome as output so tests can read it.
      if (["RunSkipped", "SerialQueueTimedOut", "SerialQueueLostHold"].includes(error?.name)) {
        return { ran: false, error: error.name, message: error.message, revision: error.revision };
      }
      throw error;
    }
  }
}

/**
 * A second Workflow class, bound to Baton as OTHER (contract §1a): the same
 * code, so one key can be shared by instances of two Workflows. Its
 * instances pass `workflow: "OTHER"` (in their payload) to `withKey`.
 */
export class OtherWorkflow extends TestWorkflow {}

export class Recorder extends DurableObject {
  async append(kind, id) {
    const log = (await this.ctx.storage.get("log")) ?? [];
    log.push({ kind, id, at: Date.now() });
    await this.ctx.storage.put("log", log);
  }

  async entries() {
    return (await this.ctx.storage.get("log")) ?? [];
  }
}

/** The test Worker's binding for Baton's Workflow binding name ("OTHER" or the default). */
const workflowOf = (env, name) => (name === "OTHER" ? env.OTHER_WF : env.TEST_WF);

const json = (value, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.json() : undefined;
    switch (url.pathname) {
      case "/rpc": {
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(body.key));
        try {
          return json({ value: await stub[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/bulk-enqueue": {
        // Many enqueues from inside the Worker, as callers would send them,
        // without a Node round trip each.
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(body.key));
        for (let i = 0; i < body.count; i++) {
          await stub.enqueue(body.key, false, `${body.prefix}${i}`);
        }
        return json({ enqueued: body.count });
      }
      case "/serial": {
        try {
          return json({ value: await env.BATON[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/create": {
        await workflowOf(env, body.workflow).create({ id: body.id, params: body.params });
        return json({ created: body.id });
      }
      case "/status": {
        try {
          const workflow = workflowOf(env, url.searchParams.get("workflow"));
          const instance = await workflow.get(url.searchParams.get("id"));
          return json(await instance.status());
        } catch (error) {
          return json({ status: "not_found", error: String(error?.message ?? error) });
        }
      }
      case "/terminate": {
        await (await workflowOf(env, body.workflow).get(body.id)).terminate();
        return json({ terminated: body.id });
      }
      case "/event": {
        const instance = await workflowOf(env, body.workflow).get(body.id);
        await instance.sendEvent({ type: body.type, payload: body.payload });
        return json({ sent: body.id });
      }
      case "/log": {
        return json(await env.RECORDER.get(env.RECORDER.idFromName("log")).entries());
      }
      default:
        return json({ error: "no such route" }, 404);
    }
  },
};
