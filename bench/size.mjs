// P6: the deployed WASM's gzipped size, as scripts/build.sh builds it (already
// through wasm-opt -O2) and after a further -Oz pass (what size alone would
// still gain); and the cold start of Baton in Miniflare on each module.
import { Miniflare } from "miniflare";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { ROOT, benchOptions } from "./miniflare.mjs";
import { summary } from "./stats.mjs";

/** Cold starts per module (the two modules alternate, to share any drift). */
export const COLD_RUNS = 7;

export const WASM_OPT = path.join(ROOT, "node_modules/.bin/wasm-opt");
/**
 * worker-build 0.8.7's own feature list for wasm-opt (it names them rather
 * than --all-features so binaryen never emits encodings workerd lacks):
 * rustc's wasm32 defaults plus exception handling for wasm-bindgen's catch
 * wrappers (`try_table`) and reference types for externref.
 */
export const WASM_OPT_FEATURES = [
  "mutable-globals",
  "sign-ext",
  "nontrapping-float-to-int",
  "bulk-memory",
  "multivalue",
  "reference-types",
  "exception-handling",
].map((f) => `--enable-${f}`);

const gzipBytes = (bytes) => gzipSync(bytes, { level: 9 }).length;

/**
 * Sizes of build/index_bg.wasm and of its wasm-opt -Oz version (written to
 * bench-out/), and of the JS beside it: the glue and the static files.
 */
export function wasmSizes(outDir) {
  const built = readFileSync(path.join(ROOT, "build/index_bg.wasm"));
  const glue = readFileSync(path.join(ROOT, "build/index.js"));
  // static/'s files, served from JS rather than compiled into the WASM
  // (scripts/assets.mjs): the Worker's upload carries them all the same.
  const assets = readFileSync(path.join(ROOT, "build/assets.js"));
  mkdirSync(outDir, { recursive: true });
  const optPath = path.join(outDir, "index_bg.oz.wasm");
  const started = performance.now();
  execFileSync(WASM_OPT, [path.join(ROOT, "build/index_bg.wasm"), "-Oz", ...WASM_OPT_FEATURES, "-o", optPath]);
  const optMs = performance.now() - started;
  const optimized = readFileSync(optPath);
  return {
    built: { bytes: built.length, gzip: gzipBytes(built) },
    optimized: { bytes: optimized.length, gzip: gzipBytes(optimized), path: optPath, optMs },
    glue: { bytes: glue.length, gzip: gzipBytes(glue) },
    assets: { bytes: assets.length, gzip: gzipBytes(assets) },
    optimizedBytes: optimized,
  };
}

const rpcRequest = (key, method, args) => ({
  method: "POST",
  body: JSON.stringify({ key, method, args }),
});

async function rpc(mf, key, method, ...args) {
  const response = await mf.dispatchFetch("http://bench/rpc", rpcRequest(key, method, args));
  const body = await response.json();
  if (!response.ok) throw new Error(`${method}: ${body.error}`);
  return body.value;
}

/**
 * One cold start: new Miniflare until ready, then the first response (the
 * bench Worker calling a fresh Coordinator), a second fresh object in the
 * now warm Worker, and a warm call to that object. Checks the module
 * works: an acquire is granted and its release frees the key.
 */
export async function coldStart(wasm, glue) {
  const t0 = performance.now();
  const mf = new Miniflare(benchOptions({ wasm, glue }));
  try {
    await mf.ready;
    const t1 = performance.now();
    await rpc(mf, "cold-a", "inspect", "cold-a");
    const t2 = performance.now();
    await rpc(mf, "cold-b", "inspect", "cold-b");
    const t3 = performance.now();
    await rpc(mf, "cold-b", "inspect", "cold-b");
    const t4 = performance.now();
    const granted = await rpc(mf, "cold-b", "acquire", "cold-b", "cold-x");
    const released = await rpc(mf, "cold-b", "release", "cold-b", "cold-x");
    if (granted !== "granted" || released.next !== null) {
      throw new Error(`module misbehaves: acquire ${granted}, release ${JSON.stringify(released)}`);
    }
    return { readyMs: t1 - t0, firstResponseMs: t2 - t1, totalMs: t2 - t0, freshObjectMs: t3 - t2, warmMs: t4 - t3 };
  } finally {
    await mf.dispose();
  }
}

/** COLD_RUNS cold starts on each module, alternating. */
export async function coldStarts(optimizedBytes) {
  const runs = { built: [], optimized: [] };
  for (let i = 0; i < COLD_RUNS; i++) {
    runs.built.push(await coldStart(undefined));
    runs.optimized.push(await coldStart(optimizedBytes));
  }
  const fields = ["readyMs", "firstResponseMs", "totalMs", "freshObjectMs", "warmMs"];
  const summarize = (list) => Object.fromEntries(fields.map((f) => [f, summary(list.map((r) => r[f]))]));
  return { built: summarize(runs.built), optimized: summarize(runs.optimized) };
}
