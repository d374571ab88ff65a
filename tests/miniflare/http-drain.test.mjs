// A refused request's body is read before the answer goes (limits.rs,
// HTTP_BODY_DRAIN_BYTES_MAX), so a client still writing gets its 413 (or
// 401, or the 404 of a path no route matches) and not a reset. Over a real socket, as a user's client talks to
// `wrangler dev` or to Cloudflare, many requests at once, with no retry: a
// single reset fails the test.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startBaton } from "./harness.mjs";

const TOKEN = "drain-token-51c0";
const BODY_BYTES_MAX = 64 * 1024;
/** Requests per case, and how many are in flight at once (the load). */
const ROUNDS = 120;
const IN_FLIGHT = 12;

/**
 * One POST over a fresh connection: `size` bytes written in `chunk`-byte
 * writes, with a Content-Length unless `chunked`. Resolves { status, body }
 * or rejects with the transport's error (ECONNRESET, EPIPE).
 */
function post(url, { size, chunk = 8192, chunked = false, token = TOKEN }) {
  return new Promise((resolve, reject) => {
    const headers = { "content-type": "application/json", authorization: `Bearer ${token}` };
    if (!chunked) headers["content-length"] = String(size);
    const request = http.request(url, { method: "POST", headers, agent: false }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (text) => (body += text));
      response.on("end", () => resolve({ status: response.statusCode, body: JSON.parse(body) }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.setTimeout(30_000, () => request.destroy(new Error("no answer in 30 s")));
    // A JSON object of `size` bytes, written piece by piece as a slow client would.
    const text = `{"instanceId":"h","pad":"${"x".repeat(size - 27)}"}`;
    let offset = 0;
    const write = () => {
      while (offset < text.length) {
        const piece = text.slice(offset, offset + chunk);
        offset += piece.length;
        if (!request.write(piece)) return request.once("drain", write);
      }
      request.end();
    };
    write();
  });
}

/** Runs `ROUNDS` copies of `send` with `IN_FLIGHT` at a time; returns every outcome. */
async function underLoad(send) {
  const outcomes = [];
  let next = 0;
  const lane = async () => {
    while (next < ROUNDS) {
      next += 1;
      outcomes.push(await send().catch((error) => ({ error: error.code ?? error.message })));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return outcomes;
}

describe("a refused body is read before the answer", () => {
  let h;
  let base;
  let url;
  before(async () => {
    h = await startBaton({ listen: true, vars: { BATON_TOKEN: TOKEN } });
    base = await h.batonUrl();
    url = new URL("v1/keys/drain/release", base);
  });
  after(() => h?.dispose());

  const cases = [
    // The size the fuzz saw reset, declared.
    ["a declared 71,690-byte body", { size: 71_690 }, 413, `payload too large: the Content-Length is over ${BODY_BYTES_MAX} bytes`],
    // No declared length: refused once the bytes pass the limit.
    ["a chunked 200 KB body", { size: 200_000, chunked: true }, 413, `payload too large: the body is over ${BODY_BYTES_MAX} bytes`],
    // Refused before the body is looked at.
    ["a wrong token with a 300 KB body", { size: 300_000, token: "wrong" }, 401, "unauthorized: wrong token"],
  ];
  // Refused by the route table, before any operation: the API's own limit bounds the drain.
  const unrouted = [
    // The fuzz's case: a group name with a slash matches no route.
    ["a 71,690-byte body to /v1/groups/a/b/enqueue (no route)", "v1/groups/a/b/enqueue", { size: 71_690 }, 404, "not found: no such route (see /openapi.json)"],
    ["a chunked 200 KB body to an unknown path", "v1/nothing-here", { size: 200_000, chunked: true }, 404, "not found: no such route (see /openapi.json)"],
    // A path that exists for GET only.
    ["a 71,690-byte POST to the status page", "", { size: 71_690 }, 405, "method not allowed: use GET"],
  ];
  for (const [name, path, options, status, message] of unrouted) {
    cases.push([name, options, status, message, path]);
  }
  for (const [name, options, status, message, path] of cases) {
    test(`${name}: every one of ${ROUNDS} answered ${status}, none reset`, async () => {
      const target = path === undefined ? url : new URL(path, base);
      const outcomes = await underLoad(() => post(target, options));
      const wrong = outcomes.filter((o) => o.status !== status || o.body?.error !== message);
      assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} of ${outcomes.length} not answered ${status}`);
      assert.equal(outcomes.length, ROUNDS);
    });
  }
});
