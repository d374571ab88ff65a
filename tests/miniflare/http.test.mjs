// The HTTP API (issue 5, part 1) against the built Worker: every route with
// a good token, without one and with a wrong one; the API closed (503) when
// no BATON_TOKEN is set; malformed requests answered with the right status
// and message and leaving state unchanged; and the OpenAPI document checked
// against the routes that answer. Instance ids are made up (but for a
// serial holder that must be alive: a parked instance), and the holder-check alarm is set to a day so
// that no check moves a key while a test compares its state.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { settled, startBaton } from "./harness.mjs";

const TOKEN = "test-token-7f3a9c";
const JSON_TYPE = "application/json";
const BODY_BYTES_MAX = 64 * 1024;

/**
 * Sends one request to Baton's fetch handler; returns { status, body, headers }.
 * `body` is JSON-encoded unless `raw` is given; `token: null` sends no header.
 */
async function call(h, method, route, { body, raw, token = TOKEN, contentType = JSON_TYPE, headers = {} } = {}) {
  const init = { method, headers: { ...headers } };
  if (token !== null) init.headers.authorization = `Bearer ${token}`;
  if (body !== undefined || raw !== undefined) {
    init.body = raw ?? JSON.stringify(body);
    if (contentType !== null) init.headers["content-type"] = contentType;
    if (init.body instanceof ReadableStream) init.duplex = "half";
  }
  const response = await h.fetchBaton(route, init);
  const text = await response.text();
  let parsed = text;
  // A HEAD answer has no body, whatever its type says.
  if (text && (response.headers.get("content-type") ?? "").startsWith(JSON_TYPE)) parsed = JSON.parse(text);
  return { status: response.status, body: parsed, headers: response.headers };
}

async function ok(h, method, route, body) {
  const reply = await call(h, method, route, { body });
  assert.equal(reply.status, 200, `${method} ${route}: ${JSON.stringify(reply.body)}`);
  assert.equal(reply.headers.get("content-type"), "application/json; charset=utf-8");
  return reply.body;
}

/** The API routes, each with a body that would be accepted. */
const API_ROUTES = [
  ["POST", "/v1/keys/{key}/enqueue", { instanceId: "probe" }],
  ["POST", "/v1/keys/{key}/acquire", { instanceId: "probe" }],
  ["POST", "/v1/keys/{key}/release", { instanceId: "probe" }],
  ["GET", "/v1/keys/{key}", undefined],
  // Steering a key (contract §11); resumed before anything else acts on it.
  ["POST", "/v1/keys/{key}/pause", { reason: "probe" }],
  ["POST", "/v1/keys/{key}/resume", {}],
  ["PUT", "/v1/keys/{key}/limit", { limit: null }],
  ["POST", "/v1/groups/{group}/enqueue", { instanceId: "probe", revision: "r" }],
  ["POST", "/v1/groups/{group}/claim", { instanceId: "probe" }],
  ["POST", "/v1/groups/{group}/heartbeat", { instanceId: "probe" }],
  ["POST", "/v1/groups/{group}/release", { instanceId: "probe" }],
  ["GET", "/v1/groups/{group}", undefined],
  // Contract §11: an operator steers a group (resumed at once, so later routes find it unpaused).
  ["POST", "/v1/groups/{group}/pause", { reason: "probe" }],
  ["POST", "/v1/groups/{group}/resume", {}],
  ["POST", "/v1/buckets/{bucket}/acquire", { rules: [{ id: "r", limit: 5, windowMs: 1000 }] }],
  ["POST", "/v1/buckets/{bucket}/penalize", { cooldownMs: 1 }],
  ["POST", "/v1/buckets/{bucket}/refund", { permits: 1 }],
  ["GET", "/v1/buckets/{bucket}", undefined],
  ["POST", "/v1/debounce/{key}", { delayMs: 1000 }],
  ["POST", "/v1/debounce/{key}/start-at", { at: 1 }],
  ["POST", "/v1/debounce/{key}/flush", {}],
  ["POST", "/v1/debounce/{key}/cancel", {}],
  ["GET", "/v1/debounce/{key}", undefined],
  // In this order, so that `probe` holds the run key when it appends.
  ["POST", "/v1/runs/{key}/claim", { instanceId: "probe" }],
  ["POST", "/v1/runs/{key}/complete", { instanceId: "probe", result: { ok: true } }],
  ["POST", "/v1/runs/{key}/await", { timeoutMs: 0 }],
  ["POST", "/v1/runs/{key}/append", { instanceId: "probe", type: "probed" }],
  ["POST", "/v1/runs/{key}/events", {}],
  // What is busy (contract §10): the lists, their options in the query.
  ["GET", "/v1/keys", undefined],
  ["GET", "/v1/groups", undefined],
];

/** A key's `counts` before anything happened at it (contract §10). */
const NO_COUNTS = { grants: 0, handOffs: 0, deadHolders: 0, superseded: 0, coalesced: 0, cancelled: 0 };
/** §10a: a key nobody ever waited on. */
const NO_WAITS = { p50Ms: 0, p95Ms: 0, n: 0 };

// A bucket route takes the group's name: both are identifiers of the same rules.
const fill = (template, key, group) =>
  template
    .replace("{key}", encodeURIComponent(key))
    .replace("{group}", encodeURIComponent(group))
    .replace("{bucket}", encodeURIComponent(group));


/** Both sides of the state a request could touch, read through RPC (not HTTP). */
async function snapshot(h, key, group) {
  const coordinator = await h.rpc(key, "inspect", key);
  const serial = await h.serial("serialInspect", { group });
  assert.ok(!("error" in coordinator) && !("error" in serial), "inspect failed");
  return { key: settled(coordinator.value), group: settled(serial.value) };
}

describe("HTTP API with BATON_TOKEN set", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 86_400_000, vars: { BATON_TOKEN: TOKEN } });
  });
  after(() => h?.dispose());

  test("the Coordinator routes: enqueue, acquire, release, inspect", async () => {
    const key = "deploy:acme/site main";
    const base = `/v1/keys/${encodeURIComponent(key)}`;
    assert.deepEqual(await ok(h, "GET", base), { key, holder: null, waiting: [], superseded: 0, limit: 1, holders: [], recent: [], counts: NO_COUNTS, paused: null, limitOverride: null, maxWaiting: null, state: "idle", waits: NO_WAITS });

    assert.deepEqual(await ok(h, "POST", `${base}/enqueue`, { instanceId: "a" }), { terminated: [] });
    assert.deepEqual(await ok(h, "POST", `${base}/acquire`, { instanceId: "a" }), { status: "granted" });
    let view = await ok(h, "GET", base);
    assert.equal(view.holder.id, "a");
    assert.equal(typeof view.holder.since, "number");
    assert.deepEqual(view, (await h.rpc(key, "inspect", key)).value, "HTTP and RPC see the same state");

    assert.deepEqual(await ok(h, "POST", `${base}/release`, { instanceId: "a" }), { next: null });
    assert.equal((await ok(h, "GET", base)).holder, null);

    // Supersedes: b is dropped, c waits alone; b's acquire says superseded.
    await ok(h, "POST", `${base}/enqueue`, { instanceId: "b", supersedes: false, inputHash: "h-b" });
    assert.deepEqual(await ok(h, "POST", `${base}/enqueue`, { instanceId: "c", supersedes: true }), {
      terminated: ["b"],
    });
    view = await ok(h, "GET", base);
    assert.deepEqual(view.waiting.map((w) => w.id), ["c"]);
    assert.equal(view.superseded, 1);
    assert.deepEqual(await ok(h, "POST", `${base}/acquire`, { instanceId: "b" }), { status: "superseded" });
    assert.deepEqual(await ok(h, "POST", `${base}/acquire`, { instanceId: "c" }), { status: "granted" });
    assert.deepEqual(await ok(h, "POST", `${base}/release`, { instanceId: "c" }), { next: null });
    // Not a holder or waiter: release is a no-op.
    assert.deepEqual(await ok(h, "POST", `${base}/release`, { instanceId: "nobody" }), { next: null });
  });

  test("the serial-queue routes: enqueue, claim, heartbeat, release, inspect", async () => {
    const group = "acme/site:main:deploy";
    const base = `/v1/groups/${encodeURIComponent(group)}`;
    assert.deepEqual(await ok(h, "GET", base), { holder: null, waiting: [], recent: [], paused: null, state: "idle", waits: NO_WAITS });

    // d1 holds, alive: a claim that finds a holder asks its Workflow whether
    // it is dead (contract §2a), and a made-up id would be.
    await h.create("d1", { mode: "park" });
    assert.deepEqual(await ok(h, "POST", `${base}/enqueue`, { instanceId: "d1", revision: "r1", current: "r1" }), {
      status: "waiting",
      superseded: [],
    });
    assert.deepEqual(await ok(h, "POST", `${base}/claim`, { instanceId: "d1" }), { status: "holding" });
    assert.deepEqual(await ok(h, "POST", `${base}/heartbeat`, { instanceId: "d1" }), { holding: true });
    assert.deepEqual(await ok(h, "POST", `${base}/heartbeat`, { instanceId: "d9" }), { holding: false });

    await ok(h, "POST", `${base}/enqueue`, { instanceId: "d2", revision: "r2" });
    assert.deepEqual(await ok(h, "POST", `${base}/enqueue`, { instanceId: "d3", revision: "r3" }), {
      status: "waiting",
      superseded: ["d2"],
    });
    assert.deepEqual(await ok(h, "POST", `${base}/enqueue`, { instanceId: "d4", revision: "r4", current: "r5" }), {
      status: "skipped",
      reason: "not_current",
      current: "r5",
    });
    assert.deepEqual(await ok(h, "POST", `${base}/claim`, { instanceId: "d3" }), { status: "waiting", holder: "d1" });
    assert.deepEqual(await ok(h, "POST", `${base}/claim`, { instanceId: "d2" }), {
      status: "skipped",
      supersededBy: { instanceId: "d3", revision: "r3" },
    });

    let view = await ok(h, "GET", base);
    assert.equal(view.holder.instanceId, "d1");
    assert.deepEqual(view.waiting.map((w) => w.instanceId), ["d3"]);
    const { waits, ...rpc } = (await h.serial("serialInspect", { group })).value;
    assert.deepEqual({ ...view, waits: undefined }, { ...rpc, waits: undefined }, "HTTP and RPC see the same state");
    assert.equal(view.state, "backlogged");
    assert.equal(waits.n, 1, "d3 waits");

    // d3 is a made-up id: the release sends it the turn event and names it;
    // the status check after the reply finds it dead and abandons it.
    assert.deepEqual(await ok(h, "POST", `${base}/release`, { instanceId: "d1" }), { next: "d3" });
    view = await h.until("d3 abandoned after the release", async () => {
      const v = await ok(h, "GET", base);
      return v.recent.some((r) => r.instanceId === "d3") ? v : null;
    });
    assert.equal(view.holder, null);
    assert.deepEqual(view.waiting, []);
    const outcome = Object.fromEntries(view.recent.map((r) => [r.instanceId, r.outcome]));
    assert.equal(outcome.d1, "released");
    assert.equal(outcome.d2, "superseded");
    assert.equal(outcome.d3, "abandoned");

    // Contract §2a's fields over HTTP: claim on enqueue (the group's second
    // grant), grant's turn, and the refusals naming the field.
    await h.create("d5", { mode: "park" });
    assert.deepEqual(await ok(h, "POST", `${base}/enqueue`, { instanceId: "d5", revision: "r6", claim: true }), {
      status: "holding",
      superseded: [],
      fence: 2,
    });
    const waiting = await ok(h, "POST", `${base}/enqueue`, { instanceId: "d6", revision: "r7", grant: true, claim: true });
    assert.equal(waiting.status, "waiting");
    assert.equal(waiting.holder, "d5");
    assert.match(waiting.turn, /^[A-Za-z0-9_][A-Za-z0-9_-]*$/);
    const { waits: waited, ...before } = await ok(h, "GET", base);
    for (const [field, body] of [
      ["claim", { instanceId: "d7", revision: "r8", claim: "yes" }],
      ["grant", { instanceId: "d7", revision: "r8", grant: 1 }],
      ["workflow", { instanceId: "d7", revision: "r8", workflow: "NOPE" }],
    ]) {
      const reply = await call(h, "POST", `${base}/enqueue`, { body });
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      assert.match(JSON.stringify(reply.body), new RegExp(`BatonError: ${field}\\b`));
    }
    const { waits: later, ...after } = await ok(h, "GET", base);
    assert.deepEqual(after, before);
    assert.equal(later.n, waited.n, "d6 still waits");
  });

  test("every API route refuses a missing, malformed or wrong token, changing nothing", async () => {
    const key = "auth-key";
    const group = "auth-group";
    // A holder and a waiter on each side, so that an accepted request would show.
    await ok(h, "POST", `/v1/keys/${key}/enqueue`, { instanceId: "held" });
    await ok(h, "POST", `/v1/keys/${key}/acquire`, { instanceId: "held" });
    await ok(h, "POST", `/v1/keys/${key}/enqueue`, { instanceId: "queued" });
    await ok(h, "POST", `/v1/groups/${group}/enqueue`, { instanceId: "held", revision: "r1" });
    await ok(h, "POST", `/v1/groups/${group}/claim`, { instanceId: "held" });
    await ok(h, "POST", `/v1/groups/${group}/enqueue`, { instanceId: "queued", revision: "r1" });
    const before = await snapshot(h, key, group);
    // For each route, a body that would change that state if it were let through.
    const harmful = {
      "/v1/keys/{key}/enqueue": { instanceId: "intruder", supersedes: true },
      "/v1/keys/{key}/acquire": { instanceId: "intruder" },
      "/v1/keys/{key}/release": { instanceId: "held" },
      "/v1/keys/{key}/pause": { reason: "intrusion" },
      "/v1/keys/{key}/resume": {},
      "/v1/keys/{key}/limit": { limit: 7 },
      "/v1/groups/{group}/enqueue": { instanceId: "intruder", revision: "r2" },
      "/v1/groups/{group}/claim": { instanceId: "intruder" },
      "/v1/groups/{group}/heartbeat": { instanceId: "held" },
      "/v1/groups/{group}/release": { instanceId: "held" },
      "/v1/groups/{group}/pause": { reason: "intruder" },
      "/v1/groups/{group}/resume": {},
      "/v1/debounce/{key}": { delayMs: 1, edge: "leading" },
      "/v1/debounce/{key}/start-at": { at: 1 },
      "/v1/debounce/{key}/flush": {},
      "/v1/debounce/{key}/cancel": {},
    };
    const refusals = [
      [{ token: null }, "unauthorized: missing Authorization: Bearer <token> header"],
      [{ token: "" }, "unauthorized: the Authorization header must be Bearer <token>"],
      [{ token: `${TOKEN}x` }, "unauthorized: wrong token"],
      [{ token: TOKEN.slice(0, -1) }, "unauthorized: wrong token"],
      [{ token: TOKEN.toUpperCase() }, "unauthorized: wrong token"],
      [{ token: "x".repeat(4096) }, "unauthorized: wrong token"],
      [{ token: null, headers: { authorization: `Basic ${TOKEN}` } }, "unauthorized: the Authorization header must be Bearer <token>"],
      [{ token: null, headers: { authorization: TOKEN } }, "unauthorized: the Authorization header must be Bearer <token>"],
    ];
    for (const [method, template] of API_ROUTES) {
      const route = fill(template, key, group);
      for (const [options, message] of refusals) {
        // A GET never has a body (`/v1/debounce/{key}` is a GET and a POST).
        const body = method === "GET" ? undefined : harmful[template];
        const reply = await call(h, method, route, { body, ...options });
        const what = `${method} ${route} ${JSON.stringify(options).slice(0, 80)}`;
        assert.equal(reply.status, 401, what);
        assert.deepEqual(reply.body, { error: message }, what);
        assert.match(reply.headers.get("www-authenticate"), /^Bearer/, what);
      }
    }
    assert.deepEqual(await snapshot(h, key, group), before, "refused requests changed state");

    // The same routes with the good token (on another key and group) answer 200.
    for (const [method, template, body] of API_ROUTES) {
      const reply = await call(h, method, fill(template, "auth-ok", "auth-ok"), { body });
      assert.equal(reply.status, 200, `${method} ${template}: ${JSON.stringify(reply.body)}`);
    }
  });

  test("malformed requests get the right status and message and change nothing", async () => {
    const key = "m/k";
    const group = "m:g";
    const k = `/v1/keys/${encodeURIComponent(key)}`;
    const g = `/v1/groups/${encodeURIComponent(group)}`;
    // A holder and a waiter on each side, so that an accepted request would show.
    await ok(h, "POST", `${k}/enqueue`, { instanceId: "holder" });
    await ok(h, "POST", `${k}/acquire`, { instanceId: "holder" });
    await ok(h, "POST", `${k}/enqueue`, { instanceId: "waiter", inputHash: "h1" });
    await ok(h, "POST", `${g}/enqueue`, { instanceId: "holder", revision: "r1" });
    await ok(h, "POST", `${g}/claim`, { instanceId: "holder" });
    await ok(h, "POST", `${g}/enqueue`, { instanceId: "waiter", revision: "r2" });
    const before = await snapshot(h, key, group);
    assert.equal(before.key.holder.id, "holder");
    assert.equal(before.key.waiting.length, 1);
    assert.equal(before.group.holder.instanceId, "holder");
    assert.equal(before.group.waiting.length, 1);

    const padded = (bytes) => {
      // A JSON object of exactly `bytes` bytes: { "instanceId": "holder", "pad": "xxx…" }.
      const head = '{"instanceId":"holder","pad":"';
      return `${head}${"x".repeat(bytes - head.length - 2)}"}`;
    };
    const chunked = (chunks, size) =>
      new ReadableStream({
        start(controller) {
          for (let i = 0; i < chunks; i++) controller.enqueue(new TextEncoder().encode(" ".repeat(size)));
          controller.close();
        },
      });
    const bad = (field) => `BatonError: ${field}`;
    const cases = [
      // Bodies that are not JSON objects: 415.
      ["truncated JSON", "POST", `${k}/release`, { raw: '{"instanceId": "holder"' }, 415, "unsupported media type: the body is not valid JSON"],
      ["trailing comma", "POST", `${k}/release`, { raw: '{"instanceId": "holder",}' }, 415, "unsupported media type: the body is not valid JSON"],
      ["empty body", "POST", `${k}/release`, { raw: "" }, 415, "unsupported media type: the body is not valid JSON"],
      ["JSON array", "POST", `${k}/release`, { body: [{ instanceId: "holder" }] }, 415, "unsupported media type: the body must be a JSON object"],
      ["JSON string", "POST", `${g}/release`, { body: "holder" }, 415, "unsupported media type: the body must be a JSON object"],
      ["JSON null", "POST", `${g}/release`, { raw: "null" }, 415, "unsupported media type: the body must be a JSON object"],
      ["not UTF-8", "POST", `${g}/release`, { raw: new Uint8Array([0x7b, 0xff, 0x7d]) }, 415, "unsupported media type: the body is not valid JSON"],
      // Content types that are not JSON: 415, even with a JSON body.
      ["text/plain", "POST", `${k}/release`, { body: { instanceId: "holder" }, contentType: "text/plain" }, 415, "unsupported media type: the Content-Type must be application/json"],
      ["form", "POST", `${g}/release`, { body: { instanceId: "holder" }, contentType: "application/x-www-form-urlencoded" }, 415, "unsupported media type: the Content-Type must be application/json"],
      ["no content type", "POST", `${g}/release`, { raw: new TextEncoder().encode('{"instanceId":"holder"}'), contentType: null }, 415, "unsupported media type: the Content-Type must be application/json"],
      // Wrong types and bad values: 400 with the BatonError naming the field.
      ["instanceId a number", "POST", `${k}/release`, { body: { instanceId: 7 } }, 400, bad("instanceId must be a string")],
      ["instanceId missing", "POST", `${k}/release`, { body: {} }, 400, bad("instanceId is required")],
      ["instanceId null", "POST", `${g}/release`, { body: { instanceId: null } }, 400, bad("instanceId is required")],
      ["instanceId with a slash", "POST", `${k}/enqueue`, { body: { instanceId: "a/b", supersedes: true } }, 400, bad("instanceId may hold only letters, digits, '-' and '_' (found '/')")],
      ["instanceId too long", "POST", `${k}/enqueue`, { body: { instanceId: "a".repeat(101), supersedes: true } }, 400, bad("instanceId must be at most 100 characters (got 101)")],
      ["supersedes a string", "POST", `${k}/enqueue`, { body: { instanceId: "newer", supersedes: "true" } }, 400, bad("supersedes must be a boolean")],
      ["inputHash too long", "POST", `${k}/enqueue`, { body: { instanceId: "newer", supersedes: true, inputHash: "h".repeat(129) } }, 400, bad("inputHash must be at most 128 characters (got 129)")],
      ["revision missing", "POST", `${g}/enqueue`, { body: { instanceId: "newer" } }, 400, bad("revision is required")],
      ["revision an object", "POST", `${g}/enqueue`, { body: { instanceId: "newer", revision: { sha: "x" } } }, 400, bad("revision must be a string")],
      ["current empty", "POST", `${g}/enqueue`, { body: { instanceId: "newer", revision: "r3", current: "" } }, 400, bad("current must not be empty")],
      ["revision too long", "POST", `${g}/enqueue`, { body: { instanceId: "newer", revision: "r".repeat(513) } }, 400, bad("revision must be at most 512 UTF-8 bytes (got 513)")],
      // Unknown fields: 400 naming the field.
      ["unknown field", "POST", `${k}/release`, { body: { instanceId: "holder", force: true } }, 400, bad('body has an unknown field "force"; accepted fields: instanceId')],
      ["key in the body", "POST", `${k}/enqueue`, { body: { key, instanceId: "newer", supersedes: true } }, 400, bad('body has an unknown field "key" (the key comes from the path); accepted fields: supersedes, instanceId, inputHash, options')],
      ["group in the body", "POST", `${g}/heartbeat`, { body: { group, instanceId: "holder" } }, 400, bad('body has an unknown field "group" (the group comes from the path); accepted fields: instanceId')],
      ["another route's field", "POST", `${g}/claim`, { body: { instanceId: "waiter", revision: "r2" } }, 400, bad('body has an unknown field "revision"; accepted fields: instanceId')],
      // Bad keys and groups in the path: 400.
      ["key not percent-encoding", "POST", "/v1/keys/%zz/acquire", { body: { instanceId: "holder" } }, 400, bad("key must be percent-encoded UTF-8 in the path")],
      ["key not UTF-8", "GET", "/v1/keys/%ff", {}, 400, bad("key must be percent-encoded UTF-8 in the path")],
      ["group cut mid-character", "POST", "/v1/groups/m%3Ag%C3/release", { body: { instanceId: "holder" } }, 400, bad("group must be percent-encoded UTF-8 in the path")],
      ["empty key", "POST", "/v1/keys//release", { body: { instanceId: "holder" } }, 400, bad("key must not be empty")],
      ["key too long", "GET", `/v1/keys/${"%E2%82%AC".repeat(171)}`, {}, 400, bad("key must be at most 512 UTF-8 bytes (got 513)")],
      // Size: 413 by Content-Length and by the bytes of a chunked body; at the limit it is read.
      // (Miniflare's getWorker().fetch forwards a body without its length
      // unless the header is set, so the declared cases set it.)
      ["declared length over the limit", "POST", `${k}/release`, { raw: padded(BODY_BYTES_MAX + 1), headers: { "content-length": String(BODY_BYTES_MAX + 1) } }, 413, `payload too large: the Content-Length is over ${BODY_BYTES_MAX} bytes`],
      ["huge declared body", "POST", `${g}/release`, { raw: padded(4 * BODY_BYTES_MAX), headers: { "content-length": String(4 * BODY_BYTES_MAX) } }, 413, `payload too large: the Content-Length is over ${BODY_BYTES_MAX} bytes`],
      ["undeclared body one byte over", "POST", `${k}/release`, { raw: padded(BODY_BYTES_MAX + 1) }, 413, `payload too large: the body is over ${BODY_BYTES_MAX} bytes`],
      // A function: the stream is made when the case is sent.
      ["chunked body over the limit", "POST", `${k}/release`, () => ({ raw: chunked(20, 4096) }), 413, `payload too large: the body is over ${BODY_BYTES_MAX} bytes`],
      ["body at the limit", "POST", `${k}/release`, { raw: padded(BODY_BYTES_MAX) }, 400, bad('body has an unknown field "pad"; accepted fields: instanceId')],
      // Wrong methods: 405 naming the right one; unknown routes: 404.
      ["GET an action", "GET", `${k}/release`, {}, 405, "method not allowed: use POST"],
      ["POST to inspect", "POST", k, { body: { instanceId: "holder" } }, 405, "method not allowed: use GET"],
      ["PUT", "PUT", `${g}/claim`, { body: { instanceId: "waiter" } }, 405, "method not allowed: use POST"],
      ["DELETE a group", "DELETE", g, {}, 405, "method not allowed: use GET"],
      ["PATCH a key", "PATCH", k, { body: { holder: null } }, 405, "method not allowed: use GET"],
      ["unknown action", "POST", `${k}/steal`, { body: { instanceId: "x" } }, 404, "not found: no such route (see /openapi.json)"],
      ["unknown version", "GET", "/v2/keys/m", {}, 404, "not found: no such route (see /openapi.json)"],
      ["trailing slash", "POST", `${g}/release/`, { body: { instanceId: "holder" } }, 404, "not found: no such route (see /openapi.json)"],
      ["unencoded slash in key", "POST", "/v1/keys/m/k/release", { body: { instanceId: "holder" } }, 404, "not found: no such route (see /openapi.json)"],
    ];
    assert.ok(cases.length >= 20);
    for (const [name, method, route, options, status, message] of cases) {
      const reply = await call(h, method, route, typeof options === "function" ? options() : options);
      assert.equal(reply.status, status, `${name}: ${JSON.stringify(reply.body)}`);
      assert.deepEqual(reply.body, { error: message }, name);
      if (status === 405) assert.ok(reply.headers.get("allow"), `${name}: Allow header`);
      assert.deepEqual(await snapshot(h, key, group), before, `${name} changed state`);
    }
  });

  test("the status page's files are served without a token", async () => {
    for (const [route, type] of [
      ["/", "text/html; charset=utf-8"],
      ["/app.js", "text/javascript; charset=utf-8"],
      ["/style.css", "text/css; charset=utf-8"],
      ["/openapi.json", "application/json; charset=utf-8"],
    ]) {
      const reply = await call(h, "GET", route, { token: null });
      assert.equal(reply.status, 200, route);
      assert.equal(reply.headers.get("content-type"), type, route);
    }
  });

  test("/openapi.json is OpenAPI 3.1 and lists exactly the routes that answer", async () => {
    const reply = await call(h, "GET", "/openapi.json", { token: null });
    const doc = reply.body;
    assert.equal(typeof doc, "object");
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.components.securitySchemes.bearer.scheme, "bearer");
    const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    const documented = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      const methods = Object.keys(item).filter((m) => m !== "parameters").map((m) => m.toUpperCase());
      const route = fill(template, "probe-key", "probe-group");
      for (const method of METHODS) {
        // With the token, an empty JSON object as the body: a documented
        // route answers (200 or a 400 for the missing field), never 404/405.
        const options = method === "GET" || method === "HEAD" ? {} : { body: {} };
        const answer = await call(h, method, route, options);
        if (methods.includes(method)) {
          assert.ok(![404, 405].includes(answer.status), `${method} ${template} is documented but answers ${answer.status}`);
          const operation = item[method.toLowerCase()];
          const isPublic = Array.isArray(operation.security) && operation.security.length === 0;
          const anonymous = await call(h, method, route, { ...options, token: null });
          assert.equal(anonymous.status === 401, !isPublic, `${method} ${template}: security says public=${isPublic}`);
          documented.push(`${method} ${template}`);
        } else {
          assert.equal(answer.status, 405, `${method} ${template} is not documented but answers ${answer.status}`);
        }
      }
      // Near misses of a documented path are not routes (unless another
      // documented template takes them: `/v1/keys/extra` is a key's).
      const routed = (path) =>
        Object.keys(doc.paths).some((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, "[^/]*")}$`).test(path));
      for (const near of [`${route}/`, `${route}/extra`, route.replace("/v1/", "/v2/")]) {
        if (near === route || near === "//" || near.startsWith("//") || routed(near)) continue;
        assert.equal((await call(h, "GET", near)).status, 404, `${near} should be 404`);
      }
    }
    // Every route this suite exercises is documented.
    for (const [method, template] of API_ROUTES) {
      assert.ok(documented.includes(`${method} ${template}`), `${method} ${template} is not documented`);
    }
    for (const asset of ["/", "/app.js", "/style.css", "/openapi.json"]) {
      assert.ok(documented.includes(`GET ${asset}`), `GET ${asset} is not documented`);
    }
    assert.equal(documented.length, API_ROUTES.length + 4, "documented routes: " + documented.join(", "));
  });
});

describe("HTTP API without BATON_TOKEN", () => {
  let h;
  before(async () => {
    h = await startBaton({ holderCheckMs: 86_400_000 });
  });
  after(() => h?.dispose());

  test("every API route answers 503 not configured, whatever the token; the page still loads", async () => {
    for (const [method, template, body] of API_ROUTES) {
      const route = fill(template, "k", "g");
      for (const token of [null, TOKEN, "", "anything"]) {
        const reply = await call(h, method, route, { body, token });
        assert.equal(reply.status, 503, `${method} ${route} token=${token}`);
        assert.deepEqual(reply.body, { error: "not configured: set the BATON_TOKEN secret to enable the API" });
      }
    }
    assert.deepEqual((await h.rpc("k", "inspect", "k")).value, { key: "k", holder: null, waiting: [], superseded: 0, limit: 1, holders: [], recent: [], counts: NO_COUNTS, paused: null, limitOverride: null, maxWaiting: null, state: "idle", waits: NO_WAITS });
    assert.equal((await call(h, "GET", "/", { token: null })).status, 200);
    assert.equal((await call(h, "GET", "/openapi.json", { token: null })).status, 200);
    // Routing still comes first: unknown routes and wrong methods say so.
    assert.equal((await call(h, "GET", "/v1/nothing")).status, 404);
    assert.equal((await call(h, "GET", "/v1/keys/k/acquire")).status, 405);
  });
});
