// The edge (issue 9, part 1; issue 8, §7 and the options): the Coordinator
// through the service binding (`env.BATON.coordinator*`, one object each)
// answering what the Durable Object answers, `options` decoded and refused
// alike by the object's positional methods, the service binding and the
// HTTP API, and every real reply checked against the schema the OpenAPI
// document (generated from the Rust types) gives for it.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { settled, startBaton, ROOT } from "./harness.mjs";

const TOKEN = "edge-token-41c7";
const OPENAPI = JSON.parse(readFileSync(path.join(ROOT, "static/openapi.json"), "utf8"));

/**
 * Checks `value` against a schema of the OpenAPI document: the subset of
 * JSON Schema the generated schemas use. Returns the first mismatch, or null.
 */
function mismatch(schema, value, at = "reply") {
  if (schema.$ref) {
    const name = schema.$ref.replace("#/components/schemas/", "");
    return mismatch(OPENAPI.components.schemas[name], value, at);
  }
  for (const key of ["anyOf", "oneOf"]) {
    if (schema[key]) {
      const fits = schema[key].filter((s) => mismatch(s, value, at) === null).length;
      if (key === "oneOf" ? fits !== 1 : fits === 0) return `${at}: ${JSON.stringify(value)} fits ${fits} of ${key}`;
    }
  }
  if ("const" in schema && value !== schema.const) return `${at}: ${JSON.stringify(value)} is not ${schema.const}`;
  if (schema.enum && !schema.enum.includes(value)) return `${at}: ${JSON.stringify(value)} not in ${schema.enum}`;
  const types = [schema.type ?? []].flat();
  if (types.length > 0) {
    const type =
      value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;
    const ok = types.includes(type) || (type === "integer" && types.includes("number"));
    if (!ok) return `${at}: ${JSON.stringify(value)} is not ${types}`;
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength) return `${at}: too short`;
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) return `${at}: does not match ${schema.pattern}`;
  }
  if (typeof value === "number" && schema.minimum !== undefined && value < schema.minimum) return `${at}: below minimum`;
  if (Array.isArray(value) && schema.items) {
    for (const [i, item] of value.entries()) {
      const m = mismatch(schema.items, item, `${at}[${i}]`);
      if (m) return m;
    }
  }
  if (value && typeof value === "object" && !Array.isArray(value) && schema.properties) {
    for (const field of schema.required ?? []) if (!(field in value)) return `${at}.${field} is missing`;
    for (const [field, item] of Object.entries(value)) {
      const property = schema.properties[field];
      if (!property) {
        if (schema.additionalProperties === false) return `${at}.${field} is not in the schema`;
        continue;
      }
      const m = mismatch(property, item, `${at}.${field}`);
      if (m) return m;
    }
  }
  return null;
}

/** The schema of `operationId`'s 200 reply. */
function replySchema(operationId) {
  for (const item of Object.values(OPENAPI.paths)) {
    for (const operation of Object.values(item)) {
      if (operation.operationId === operationId) {
        return operation.responses["200"].content["application/json"].schema;
      }
    }
  }
  throw new Error(`no operation ${operationId}`);
}

function assertFits(operationId, value) {
  assert.equal(mismatch(replySchema(operationId), value), null, `${operationId}: ${JSON.stringify(value)}`);
}



describe("the edge", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 3_600_000, vars: { BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());

  async function service(method, input) {
    const result = await h.serial(method, input);
    if ("error" in result) throw new Error(`${method}: ${result.error}`);
    return result.value;
  }

  async function http(method, route, body) {
    const init = { method, headers: { authorization: `Bearer ${TOKEN}` } };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["content-type"] = "application/json";
    }
    const response = await h.fetchBaton(route, init);
    return { status: response.status, body: await response.json() };
  }

  test("coordinator* on the service binding answer what the Durable Object answers", async () => {
    const key = "svc";
    await h.create("svc-h", { key, waitForFinish: true });
    await h.untilInspect(key, "svc-h holding", (view) => view.holder?.id === "svc-h");

    const enqueued = await service("coordinatorEnqueue", { key, supersedes: false, instanceId: "svc-w", inputHash: "h" });
    assert.deepEqual(enqueued, { terminated: [] });
    assertFits("keyEnqueue", enqueued);
    // `supersedes` may be left out here (it defaults to false, as over HTTP).
    assert.deepEqual(await service("coordinatorEnqueue", { key, instanceId: "svc-x" }), { terminated: [] });

    const viaService = await service("coordinatorInspect", { key });
    assert.deepEqual(settled(viaService), settled(await h.inspect(key)));
    assert.equal(viaService.holder.id, "svc-h");
    assert.deepEqual(viaService.waiting.map((w) => [w.id, w.inputHash]), [["svc-w", "h"], ["svc-x", undefined]]);
    assertFits("keyInspect", viaService);

    const acquired = await service("coordinatorAcquire", { key, instanceId: "svc-w", options: { workflow: "WORKFLOW" } });
    assert.equal(acquired, "pending");
    assert.equal(await h.ok(key, "acquire", key, "svc-w"), "pending");

    // A waiter's release leaves the queue; the holder keeps the key.
    const released = await service("coordinatorRelease", { key, instanceId: "svc-x" });
    assert.deepEqual(released, { next: null });
    assertFits("keyRelease", released);
    assert.deepEqual((await h.inspect(key)).waiting.map((w) => w.id), ["svc-w"]);

    // The same, over HTTP: the HTTP reply of acquire is `{ status }`.
    const k = `/v1/keys/${key}`;
    const acquire = await http("POST", `${k}/acquire`, { instanceId: "svc-w", options: { limit: 1 } });
    assert.deepEqual(acquire, { status: 200, body: { status: "pending" } });
    assertFits("keyAcquire", acquire.body);
    const inspected = await http("GET", k);
    assert.deepEqual(settled(inspected.body), settled(await h.inspect(key)));

    await service("coordinatorRelease", { key, instanceId: "svc-w" });
    await h.sendEvent("svc-h", "finish", {});
    assert.deepEqual(await h.output("svc-h"), { superseded: false, value: "done" });
    assert.deepEqual(await service("coordinatorInspect", { key }), {
      key,
      holder: null,
      waiting: [],
      superseded: 0,
      limit: 1,
      holders: [],
      // One grant (svc-h's); svc-w left as a waiter, so no hold had a waiter behind it.
      recent: [],
      counts: { grants: 1, handOffs: 0, deadHolders: 0, superseded: 0, coalesced: 0, cancelled: 0 },
      paused: null,
      limitOverride: null,
      maxWaiting: null,
      state: "idle",
      waits: { p50Ms: 0, p95Ms: 0, n: 0 },
    });
  });

  test("the schema check itself catches a reply of another shape", () => {
    assert.notEqual(mismatch(replySchema("keyRelease"), { next: 5 }), null);
    assert.notEqual(mismatch(replySchema("keyRelease"), {}), null);
    assert.notEqual(mismatch(replySchema("keyAcquire"), { status: "maybe" }), null);
    assert.notEqual(mismatch(replySchema("groupClaim"), { status: "waiting" }), null);
    assert.notEqual(mismatch(replySchema("keyInspect"), { key: "k", holder: null, waiting: [{ id: "-x", since: 1 }], superseded: 0, limit: 1, holders: [] }), null);
    assert.equal(mismatch(replySchema("groupClaim"), { status: "waiting", holder: null }), null);
  });

  test("serial* replies fit their schemas", async () => {
    const group = "edge-g";
    // A live holder: a claim that finds a made-up one finds it dead (contract §2a).
    await h.create("eg-1", { mode: "park" });
    const enqueued = await service("serialEnqueue", { group, instanceId: "eg-1", revision: "r1" });
    assertFits("groupEnqueue", enqueued);
    assertFits("groupClaim", await service("serialClaim", { group, instanceId: "eg-1" }));
    assertFits("groupEnqueue", await service("serialEnqueue", { group, instanceId: "eg-2", revision: "r2" }));
    assertFits("groupEnqueue", await service("serialEnqueue", { group, instanceId: "eg-3", revision: "r3" }));
    assertFits("groupClaim", await service("serialClaim", { group, instanceId: "eg-2" }));
    assertFits("groupClaim", await service("serialClaim", { group, instanceId: "eg-3" }));
    assertFits("groupHeartbeat", await service("serialHeartbeat", { group, instanceId: "eg-1" }));
    assertFits(
      "groupEnqueue",
      await service("serialEnqueue", { group, instanceId: "eg-4", revision: "r0", current: "r9" }),
    );
    const inspected = await service("serialInspect", { group });
    assert.equal(inspected.holder.instanceId, "eg-1");
    assert.equal(inspected.recent[0].supersededBy?.instanceId, "eg-3");
    assertFits("groupInspect", inspected);
    assertFits("groupRelease", await service("serialRelease", { group, instanceId: "eg-1" }));
    // Contract §2a's replies: a claim on enqueue that holds (with its fence),
    // one that waits with its turn, a claim answering both.
    await h.create("eg-5", { mode: "park" });
    const held = await service("serialEnqueue", { group, instanceId: "eg-5", revision: "r5", claim: true });
    assert.equal(held.status, "holding");
    assertFits("groupEnqueue", held);
    const waits = await service("serialEnqueue", { group, instanceId: "eg-6", revision: "r6", claim: true, grant: true });
    assert.equal(waits.status, "waiting");
    assertFits("groupEnqueue", waits);
    assertFits("groupClaim", await service("serialClaim", { group, instanceId: "eg-6" }));
    // Contract §11: pause (then inspect and list, paused) and resume.
    assertFits("groupPause", await service("serialPause", { group, reason: "edge" }));
    const paused = await service("serialInspect", { group });
    assert.equal(paused.paused.reason, "edge");
    assertFits("groupInspect", paused);
    assertFits("groupResume", await service("serialResume", { group }));
  });

  test("bad options and unknown fields are refused alike everywhere, naming the field, and change nothing", async () => {
    const key = "opts";
    await h.ok(key, "enqueue", key, false, "opt-w");
    const before = settled(await h.inspect(key));

    const refusals = [
      [{ fast: true }, 'BatonError: options has an unknown field "fast"; accepted fields: workflow, limit, grant, priority, tenant, onBusy, cancelHolders, maxWaiting'],
      [{ limit: 2, workflow: "WORKFLOW", extra: 1 }, 'BatonError: options has an unknown field "extra"; accepted fields: workflow, limit, grant, priority, tenant, onBusy, cancelHolders, maxWaiting'],
      ["fast", "BatonError: options must be an object"],
      [5, "BatonError: options must be an object"],
      [[{ limit: 2 }], "BatonError: options must be an object"],
      [{ limit: 0 }, "BatonError: limit must be an integer from 1 to 1000 (got 0)"],
      [{ limit: 1001 }, "BatonError: limit must be an integer from 1 to 1000 (got 1001)"],
      [{ limit: 2.5 }, "BatonError: limit must be an integer from 1 to 1000 (got 2.5)"],
      [{ limit: -1 }, "BatonError: limit must be an integer from 1 to 1000 (got -1)"],
      [{ limit: "3" }, "BatonError: limit must be a number"],
      [{ workflow: "NOPE" }, 'BatonError: workflow must name one of WORKFLOW_BINDINGS (WORKFLOW, OTHER), not "NOPE"'],
      [{ workflow: "" }, "BatonError: workflow must not be empty"],
      [{ workflow: 7 }, "BatonError: workflow must be a string"],
      [{ workflow: "not a binding" }, "BatonError: workflow must be a binding name: letters, digits and '_', not starting with a digit"],
      // §1b: grant is a boolean.
      [{ grant: "yes" }, "BatonError: grant must be a boolean"],
      [{ grant: 1 }, "BatonError: grant must be a boolean"],
      // withKey's own options with one more: not the fast path's exact `{ grant: true }`.
      [{ grant: true, fast: true }, 'BatonError: options has an unknown field "fast"; accepted fields: workflow, limit, grant, priority, tenant, onBusy, cancelHolders, maxWaiting'],
    ];
    for (const [options, message] of refusals) {
      const what = JSON.stringify(options);
      // The Durable Object's positional methods.
      assert.deepEqual(await h.rpc(key, "acquire", key, "opt-new", options), { error: message }, `acquire ${what}`);
      assert.deepEqual(await h.rpc(key, "enqueue", key, true, "opt-new", null, options), { error: message }, `enqueue ${what}`);
      // The service binding.
      assert.deepEqual(
        await h.serial("coordinatorAcquire", { key, instanceId: "opt-new", options }),
        { error: message },
        `coordinatorAcquire ${what}`,
      );
      assert.deepEqual(
        await h.serial("coordinatorEnqueue", { key, supersedes: true, instanceId: "opt-new", options }),
        { error: message },
        `coordinatorEnqueue ${what}`,
      );
      // The HTTP API: 400 with the same message.
      for (const action of ["acquire", "enqueue"]) {
        const reply = await http("POST", `/v1/keys/${key}/${action}`, { instanceId: "opt-new", supersedes: true, options });
        const expected = action === "acquire"
          ? { status: 400, body: { error: 'BatonError: body has an unknown field "supersedes"; accepted fields: instanceId, options' } }
          : { status: 400, body: { error: message } };
        assert.deepEqual(reply, expected, `HTTP ${action} ${what}`);
      }
      const reply = await http("POST", `/v1/keys/${key}/acquire`, { instanceId: "opt-new", options });
      assert.deepEqual(reply, { status: 400, body: { error: message } }, `HTTP acquire ${what}`);
    }

    // withKey's call (`{ grant: true }`) with a bad key or id: the same
    // refusal, naming the field, as the call without options.
    for (const [badKey, badId, message] of [
      ["", "opt-new", "BatonError: key must not be empty"],
      [key, "-opt", "BatonError: instanceId must not start with '-'"],
      [key, 7, "BatonError: instanceId must be a string"],
    ]) {
      const bare = await h.rpc(key, "acquire", badKey, badId);
      assert.deepEqual(bare, { error: message }, `acquire(${JSON.stringify(badKey)}, ${JSON.stringify(badId)})`);
      assert.deepEqual(await h.rpc(key, "acquire", badKey, badId, { grant: true }), bare, `the same with { grant: true }`);
    }

    // Unknown fields of the request itself, and of the service binding's object.
    assert.deepEqual(await h.serial("coordinatorAcquire", { key, instanceId: "opt-new", limit: 2 }), {
      error: 'BatonError: input has an unknown field "limit"; accepted fields: key, instanceId, options',
    });
    assert.deepEqual(await h.serial("coordinatorRelease", { key, instanceId: "opt-w", options: {} }), {
      error: 'BatonError: input has an unknown field "options"; accepted fields: key, instanceId',
    });
    assert.deepEqual(await h.serial("coordinatorInspect", key), { error: "BatonError: input must be an object" });
    assert.deepEqual(await h.serial("coordinatorInspect"), { error: "BatonError: input is required" });
    assert.deepEqual(await h.serial("coordinatorEnqueue", { key, supersedes: null, instanceId: "opt-new" }), {
      error: "BatonError: supersedes is required",
    });
    assert.deepEqual(await h.serial("serialClaim", { group: "g", instanceId: "opt-w", revision: "r" }), {
      error: 'BatonError: input has an unknown field "revision"; accepted fields: group, instanceId',
    });

    assert.deepEqual(settled(await h.inspect(key)), before);

    // Good options are taken.
    assert.deepEqual(await h.ok(key, "enqueue", key, false, "opt-a", null, { workflow: "WORKFLOW", limit: 1 }), { terminated: [] });
    assert.deepEqual(
      await service("coordinatorEnqueue", { key, supersedes: false, instanceId: "opt-b", options: { limit: 1000 } }),
      { terminated: [] },
    );
    assert.deepEqual((await h.inspect(key)).waiting.map((w) => w.id), ["opt-w", "opt-a", "opt-b"]);
  });
});
