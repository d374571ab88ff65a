// A Worker with Baton embedded whose Workflow is declared in wrangler's
// `exports` only: it has no Workflow binding, and Baton reaches it through
// the Worker's own exports by the name in WORKFLOW_BINDING (its class
// name). The routes create, signal and read its instances through
// `ctx.exports` too, and call the Coordinator.
import { WorkflowEntrypoint } from "cloudflare:workers";
import { withKey } from "../../js/with-key.mjs";

export { BusyList, Coordinator } from "../../js/worker.mjs";

/**
 * Takes `key` with withKey and holds it until a "finish" event. The turn
 * timeout is an hour: an instance that waits gets the key only by Baton's
 * turn event (sent through the exported Workflow), never by a re-check.
 */
export class ExportedWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const held = await withKey(step, this.env.COORDINATOR, event.payload.key, event.instanceId, async ({ fence }) => {
      await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
      return fence;
    }, { turnTimeout: "1 hour" });
    return held.superseded ? { fence: null } : { fence: held.value };
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.json() : {};
    const workflow = ctx.exports.ExportedWorkflow;
    switch (url.pathname) {
      case "/bindings":
        return Response.json({ env: Object.keys(env), exports: Object.keys(ctx.exports) });
      case "/create":
        await workflow.create({ id: body.id, params: { key: body.key } });
        return Response.json({ created: body.id });
      case "/event":
        await (await workflow.get(body.id)).sendEvent({ type: body.type, payload: {} });
        return Response.json({ sent: body.id });
      case "/terminate":
        await (await workflow.get(body.id)).terminate();
        return Response.json({ terminated: body.id });
      case "/status":
        return Response.json(await (await workflow.get(url.searchParams.get("id"))).status());
      case "/inspect": {
        const key = url.searchParams.get("key");
        return Response.json(await env.COORDINATOR.get(env.COORDINATOR.idFromName(key)).inspect(key));
      }
      default:
        return new Response("not found", { status: 404 });
    }
  },
};
