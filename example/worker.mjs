// An example Workflow that serialises on a key with Baton, and a small
// HTTP surface to start instances and watch the key being handed on.
import { WorkflowEntrypoint } from "cloudflare:workers";
import { withKey } from "../js/with-key.mjs";

export class ExampleWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const { key, holdSeconds = 5 } = event.payload;
    return withKey(step, this.env.COORDINATOR, key, event.instanceId, async () => {
      // Stands in for the work that must not run twice at once for this key.
      await step.sleep("work", `${holdSeconds} seconds`);
      return { key, finishedAt: await step.do("finish", async () => new Date().toISOString()) };
    }, { turnTimeout: "1 minute" });
  }
}

const json = (value, status = 200) =>
  new Response(JSON.stringify(value, null, 2) + "\n", {
    status,
    headers: { "content-type": "application/json" },
  });

export default {
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
      if (request.method === "GET" && url.pathname === "/inspect") {
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(key));
        return json(await stub.inspect(key));
      }
      if (request.method === "GET" && url.pathname === "/status") {
        const instance = await env.EXAMPLE.get(url.searchParams.get("id"));
        return json(await instance.status());
      }
      return json({ routes: ["POST /start?key=&count=&hold=", "GET /inspect?key=", "GET /status?id="] }, 404);
    } catch (error) {
      return json({ error: String(error?.message ?? error) }, 400);
    }
  },
};
