// Every ```js and ```ts block of README.md and docs/ type-checks against the
// package's own types: `tsc --strict` with @cloudflare/workers-types, the
// package resolved as a user's project resolves it (node_modules/
// baton-workflows, here a link to this checkout, so its package.json
// "exports" and js/*.d.ts are what is read). docs-blocks.mjs says how a
// block becomes a module and what a fragment may leave undefined.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "./harness.mjs";
import { DOCS_ENV, allBlocks, allowedCodes, checkModule, codeBlocks, freeName, packageExports, parseDiagnostics, unknownWords } from "./docs-blocks.mjs";

let scratch;

before(() => {
  scratch = mkdtempSync(path.join(tmpdir(), "baton-docs-types-"));
  mkdirSync(path.join(scratch, "node_modules/@cloudflare"), { recursive: true });
  symlinkSync(ROOT, path.join(scratch, "node_modules/baton-workflows"));
  symlinkSync(path.join(ROOT, "node_modules/@cloudflare/workers-types"), path.join(scratch, "node_modules/@cloudflare/workers-types"));
  writeFileSync(path.join(scratch, "docs-env.d.ts"), DOCS_ENV);
});

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** tsc over `blocks` as modules in `dir` (free names per block in `free`): the diagnostics per block. */
function tsc(dir, blocks, free) {
  mkdirSync(dir, { recursive: true });
  const files = blocks.map((block, i) => {
    const file = `block-${i}.ts`;
    const { source, firstLine } = checkModule(block, [...(free[i] ?? [])]);
    writeFileSync(path.join(dir, file), source);
    return { file, block, firstLine, diagnostics: [] };
  });
  const config = {
    compilerOptions: {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: "es2022",
      module: "es2022",
      moduleResolution: "bundler",
      lib: ["es2022"],
      types: ["@cloudflare/workers-types"],
    },
    files: [path.join(scratch, "docs-env.d.ts"), ...files.map((f) => f.file)],
  };
  writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(config, null, 2));
  let output = "";
  try {
    execFileSync(path.join(ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.json", "--pretty", "false"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    output = `${error.stdout}${error.stderr}`;
  }
  const stray = [];
  const diagnostics = parseDiagnostics(output);
  // tsc failed with nothing this reader understands (a missing file, a bad
  // config): that is a failure too, never a pass.
  if (output.trim() !== "" && diagnostics.length === 0) stray.push(output);
  for (const d of diagnostics) {
    const entry = files.find((f) => path.basename(d.file) === f.file);
    if (entry) entry.diagnostics.push(d);
    else stray.push(`${d.file}:${d.line}: TS${d.code} ${d.message}`);
  }
  return { files, stray, output };
}

/**
 * Type-checks `blocks` (in a directory `name` of the scratch dir) and
 * returns the diagnostics they may not leave, as "page:line: TSnnnn
 * message" with the page's own line. Two passes: the first finds each
 * fragment's free names (docs-blocks.mjs's `freeName`), the second
 * declares them `any` and checks everything else.
 */
function check(blocks, name) {
  const exported = new Set(Object.values(packageExports()).flat().map((n) => n.replace(/^type\s+/, "")));
  const first = tsc(path.join(scratch, name, "1"), blocks, []);
  const free = first.files.map(({ block, diagnostics }) =>
    block.fragment ? new Set(diagnostics.map((d) => freeName(d, exported)).filter(Boolean)) : new Set(),
  );
  const second = tsc(path.join(scratch, name, "2"), blocks, free);
  const wrong = [...second.stray];
  for (const { block, firstLine, diagnostics } of second.files) {
    for (const d of diagnostics) {
      if (allowedCodes(block).has(d.code)) continue;
      wrong.push(`${block.page}:${block.line + (d.line - firstLine) + 1}: TS${d.code} ${d.message}`);
    }
  }
  return { wrong, output: second.output };
}

test("every js and ts block of README.md and docs/ type-checks against the package's types", () => {
  const blocks = allBlocks();
  assert.ok(blocks.length >= 20, `blocks found: ${blocks.length}`);
  const unknown = blocks.filter((b) => unknownWords(b).length > 0).map((b) => `${b.page}:${b.line}: ${unknownWords(b)}`);
  assert.deepEqual(unknown, [], "fence lines with words the checker does not know");
  const { wrong, output } = check(blocks, "docs");
  assert.deepEqual(wrong, [], `type errors in the docs' code:\n${wrong.join("\n")}\n\ntsc said:\n${output}`);
});

test("the checker fails a wrong call, a misspelt helper, a missing binding method and a stale option", () => {
  const page = [
    "```js fragment",
    "await withKey(step, this.env.COORDINATOR, `k`, event.instanceId);", // body missing
    "```",
    "```js fragment",
    "await withKy(step, this.env.COORDINATOR, `k`, event.instanceId, async () => 1);", // misspelt
    "```",
    "```js fragment",
    "await this.env.COORDINATOR.get(this.env.COORDINATOR.idFromName(k)).hold(k, id);", // no such method
    "```",
    "```js fragment",
    "await withKey(step, this.env.COORDINATOR, `k`, event.instanceId, async () => 1, { turnTimout: 5 });", // option
    "```",
    "```js fragment",
    "await withKey(step, this.env.COORDINATOR, `k`, event.instanceId, async () => userWork());", // fine: the user's name
    "```",
    "```ts",
    "const n: number = userWork();", // a whole ts block must define its names
    "```",
  ].join("\n");
  const blocks = codeBlocks("self-test.md", page);
  const { wrong } = check(blocks, "self-test");
  const lines = new Set(wrong.map((w) => Number(w.split(":")[1])));
  assert.deepEqual([...lines].sort((a, b) => a - b), [2, 5, 8, 11, 17], wrong.join("\n"));
});

/**
 * Methods of js/worker.mjs's classes that are Baton's own, not a user's:
 * they have no row in the method table (src/edge/methods.rs) and no type.
 */
const INTERNAL = {
  Coordinator: {
    storageWork: "the benchmark's count of storage statements",
    listReport: "Baton's list read asks it of a listed key it doubts",
  },
  RateLimiter: { storageWork: "the benchmark's count of storage statements" },
  Runs: { storageWork: "the benchmark's count of storage statements" },
  BusyList: {
    report: "a Coordinator's report of its key",
    reportMany: "a Coordinator's reports, batched",
    page: "coordinatorList's read of one shard",
  },
};

/** Every class of js/worker.mjs that workerd serves RPC on, with its methods (not its handlers). */
function rpcMethods() {
  const text = readFileSync(path.join(ROOT, "js/worker.mjs"), "utf8");
  const classes = {};
  for (const m of text.matchAll(/^export class (\w+) extends (?:DurableObject|WorkerEntrypoint) \{\n([\s\S]*?)^\}/gm)) {
    classes[m[1]] = [...m[2].matchAll(/^ {2}(?:async )?(\w+)\(/gm)].map((x) => x[1]).filter((n) => !["constructor", "alarm", "fetch"].includes(n));
  }
  return classes;
}

test("every RPC method of every class of baton-workflows/worker has a type (generated from the method table)", () => {
  const classes = rpcMethods();
  assert.ok(classes.Coordinator?.includes("setLimit") && classes.Baton?.includes("coordinatorEnqueue"), JSON.stringify(classes));
  const typed = [];
  for (const [name, methods] of Object.entries(classes)) {
    for (const method of methods) {
      if (INTERNAL[name]?.[method]) continue;
      typed.push(`type ${name}_${method} = ${name}[${JSON.stringify(method)}];`);
    }
    for (const method of Object.keys(INTERNAL[name] ?? {})) {
      assert.ok(methods.includes(method), `INTERNAL names ${name}.${method}, which js/worker.mjs does not have`);
    }
  }
  const source = [`import type { ${Object.keys(classes).join(", ")} } from "baton-workflows/worker";`, ...typed, ""].join("\n");
  const dir = path.join(scratch, "rpc-types");
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "methods.ts"), source);
  const config = {
    compilerOptions: { strict: true, noEmit: true, skipLibCheck: true, target: "es2022", module: "es2022", moduleResolution: "bundler", lib: ["es2022"], types: ["@cloudflare/workers-types"] },
    files: ["methods.ts"],
  };
  writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(config));
  let output = "";
  try {
    execFileSync(path.join(ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.json", "--pretty", "false"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    output = `${error.stdout}${error.stderr}`;
  }
  assert.equal(output, "", `methods of js/worker.mjs without a type (add a row to src/edge/methods.rs, or to INTERNAL with why):\n${output}`);
  assert.ok(typed.length >= 40, `methods checked: ${typed.length}`);
});
