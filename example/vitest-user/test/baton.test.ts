// The user's Workflows against Baton, in Cloudflare's Vitest plugin: real
// Workflow instances and Baton's real Durable Objects and D1, in the Workers
// runtime. The plugin's introspection waits for Baton's own steps (their
// names are Baton's: `baton acquire <key>`, `baton serial enqueue <group>`), so each
// test knows where an instance stands without polling or sleeping; an
// `approved` event (which the Workflows' bodies wait for) decides when a
// holder lets go.
import { env, introspectWorkflowInstance, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { APPROVED } from "../src/index";

/** Lets instance `id` of `workflow` past its body's wait. */
async function approve(workflow: Workflow, id: string) {
  const instance = await workflow.get(id);
  await instance.sendEvent({ type: APPROVED, payload: {} });
}

function coordinator(key: string) {
  return env.COORDINATOR.get(env.COORDINATOR.idFromName(key));
}

describe("withKey", () => {
  it("runs two instances on one key one after the other, their fences increasing", async () => {
    const key = "migrate:orders";
    await using first = await introspectWorkflowInstance(env.MIGRATE, "orders-1");
    await using second = await introspectWorkflowInstance(env.MIGRATE, "orders-2");

    await env.MIGRATE.create({ id: "orders-1", params: { database: "orders" } });
    expect(await first.waitForStepResult({ name: `baton acquire ${key}` })).toMatchObject({ status: "granted" });
    await env.MIGRATE.create({ id: "orders-2", params: { database: "orders" } });
    expect(await second.waitForStepResult({ name: `baton acquire ${key}` })).toMatchObject({ status: "pending" });

    // While the first holds the key, the second waits: Baton's own view,
    // read inside its Durable Object.
    const view = await runInDurableObject(coordinator(key), (object) => object.inspect(key));
    expect(view.holders.map((holder) => holder.id)).toEqual(["orders-1"]);
    expect(view.waiting.map((waiter) => waiter.id)).toEqual(["orders-2"]);

    await approve(env.MIGRATE, "orders-1");
    await first.waitForStatus("complete");
    await approve(env.MIGRATE, "orders-2");
    await second.waitForStatus("complete");

    const [one, two] = [await first.getOutput(), await second.getOutput()] as { migrated: { fence: number } }[];
    expect(two.migrated.fence).toBeGreaterThan(one.migrated.fence);
    expect(await coordinator(key).inspect(key)).toMatchObject({ holder: null, waiting: [] });
  });

  it("ends a superseded instance without running its body", async () => {
    const key = "migrate:users";
    await using holder = await introspectWorkflowInstance(env.MIGRATE, "users-1");
    await using superseded = await introspectWorkflowInstance(env.MIGRATE, "users-2");
    await using newest = await introspectWorkflowInstance(env.MIGRATE, "users-3");

    await env.MIGRATE.create({ id: "users-1", params: { database: "users" } });
    await holder.waitForStepResult({ name: `baton acquire ${key}` });
    // The documented flow: register, then create. users-3 registers with
    // `supersedes`, which drops users-2 before it has started.
    await coordinator(key).enqueue(key, false, "users-2");
    expect(await coordinator(key).enqueue(key, true, "users-3")).toMatchObject({ terminated: ["users-2"] });

    await env.MIGRATE.create({ id: "users-2", params: { database: "users" } });
    expect(await superseded.waitForStepResult({ name: `baton acquire ${key}` })).toEqual({ status: "superseded" });
    await superseded.waitForStatus("complete");
    expect(await superseded.getOutput()).toEqual({ migrated: null });

    await env.MIGRATE.create({ id: "users-3", params: { database: "users" } });
    await approve(env.MIGRATE, "users-1");
    await approve(env.MIGRATE, "users-3");
    await newest.waitForStatus("complete");
    expect(await newest.getOutput()).toMatchObject({ migrated: { database: "users" } });
    await holder.waitForStatus("complete");
  });
});

describe("serialize", () => {
  it("runs the newest revision of a serial group, skipping the one it replaced", async () => {
    await using a = await introspectWorkflowInstance(env.PUBLISH, "docs-a");
    await using b = await introspectWorkflowInstance(env.PUBLISH, "docs-b");
    await using c = await introspectWorkflowInstance(env.PUBLISH, "docs-c");

    await env.PUBLISH.create({ id: "docs-a", params: { site: "docs", revision: "a" } });
    expect(await a.waitForStepResult({ name: "baton serial enqueue publish:docs" })).toMatchObject({ status: "holding" });
    await env.PUBLISH.create({ id: "docs-b", params: { site: "docs", revision: "b" } });
    expect(await b.waitForStepResult({ name: "baton serial enqueue publish:docs" })).toMatchObject({ status: "waiting" });
    await env.PUBLISH.create({ id: "docs-c", params: { site: "docs", revision: "c" } });
    expect(await c.waitForStepResult({ name: "baton serial enqueue publish:docs" })).toMatchObject({
      status: "waiting",
      superseded: ["docs-b"],
    });

    // b is told at once, by its own turn event, and never publishes.
    await b.waitForStatus("complete");
    expect(await b.getOutput()).toEqual({ published: null, supersededBy: "c" });

    await approve(env.PUBLISH, "docs-a");
    await a.waitForStatus("complete");
    await approve(env.PUBLISH, "docs-c");
    await c.waitForStatus("complete");
    const [first, last] = [await a.getOutput(), await c.getOutput()] as { published: string; fence: number }[];
    expect(first.published).toBe("a");
    expect(last.published).toBe("c");
    expect(last.fence).toBeGreaterThan(first.fence);
  });
});

describe("coordinated", () => {
  it("runs a declared Workflow's instances on one key in turn, fences rising", async () => {
    const key = "reindex:products";
    await using first = await introspectWorkflowInstance(env.REINDEX, "products-1");
    await using second = await introspectWorkflowInstance(env.REINDEX, "products-2");

    await env.REINDEX.create({ id: "products-1", params: { index: "products" } });
    expect(await first.waitForStepResult({ name: `baton acquire ${key}` })).toMatchObject({ status: "granted" });
    await env.REINDEX.create({ id: "products-2", params: { index: "products" } });
    expect(await second.waitForStepResult({ name: `baton acquire ${key}` })).toMatchObject({ status: "pending" });

    await approve(env.REINDEX, "products-1");
    await first.waitForStatus("complete");
    await approve(env.REINDEX, "products-2");
    await second.waitForStatus("complete");
    const [one, two] = [await first.getOutput(), await second.getOutput()] as { fence: number }[];
    expect(two.fence).toBeGreaterThan(one.fence);
    expect(await coordinator(key).inspect(key)).toMatchObject({ holder: null, waiting: [] });
  });
});
