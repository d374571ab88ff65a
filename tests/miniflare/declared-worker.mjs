// A Worker with Baton embedded whose Workflows use `coordinated()` (contract
// §3a) and are declared in wrangler's `exports` only: no Workflow binding,
// no Baton call in their code, no binding named in their options. `Deploy`
// is WORKFLOW_BINDING's (the default); `Report` is the second of
// WORKFLOW_BINDINGS, which its instances never name: Baton finds them
// through it (§1a). The routes create, signal and read instances through
// `ctx.exports`, and read the Coordinator and the Recorder.
import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import { coordinated } from "../../js/coordinated.mjs";

export { BusyList, Coordinator } from "../../js/worker.mjs";

/** Every option from the payload, as a function of the event. */
const fromPayload = (name) => (event) => event.payload[name];

const OPTIONS = {
  coordinator: (env) => env.COORDINATOR,
  key: fromPayload("key"),
  supersede: (event) => event.payload.supersede ?? false,
  limit: fromPayload("limit"),
  onBusy: fromPayload("onBusy"),
  maxWaiting: fromPayload("maxWaiting"),
  also: fromPayload("also"),
  turnTimeout: "5 seconds",
  stepRetries: { limit: 1, delay: "100 milliseconds" },
};

/** The body of both Workflows: logs its entry with its fences, holds until "finish" if asked, logs its exit. */
async function body(env, event, step, grant) {
  const log = env.RECORDER.get(env.RECORDER.idFromName("log"));
  const id = event.instanceId;
  await step.do("enter", () => log.append(`enter ${id}`));
  if (event.payload.waitForFinish) await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
  await step.do("exit", () => log.append(`exit ${id}`));
  return { ran: id, fence: grant.fence, fences: grant.fences };
}

export class Deploy extends coordinated(WorkflowEntrypoint, OPTIONS) {
  async run(event, step, grant) {
    return body(this.env, event, step, grant);
  }
}

export class Report extends coordinated(WorkflowEntrypoint, OPTIONS) {
  async run(event, step, grant) {
    return body(this.env, event, step, grant);
  }
}

export class Recorder extends DurableObject {
  async append(line) {
    const lines = (await this.ctx.storage.get("lines")) ?? [];
    lines.push(line);
    await this.ctx.storage.put("lines", lines);
  }
  async lines() {
    return (await this.ctx.storage.get("lines")) ?? [];
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.json() : {};
    const workflow = ctx.exports[body.workflow ?? url.searchParams.get("workflow") ?? "Deploy"];
    switch (url.pathname) {
      case "/create":
        await workflow.create({ id: body.id, params: body.params });
        return Response.json({ created: body.id });
      case "/event":
        await (await workflow.get(body.id)).sendEvent({ type: body.type, payload: {} });
        return Response.json({ sent: body.id });
      case "/status":
        return Response.json(await (await workflow.get(url.searchParams.get("id"))).status());
      case "/inspect": {
        const key = url.searchParams.get("key");
        return Response.json(await env.COORDINATOR.get(env.COORDINATOR.idFromName(key)).inspect(key));
      }
      case "/log":
        return Response.json(await env.RECORDER.get(env.RECORDER.idFromName("log")).lines());
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
