// The code blocks of README.md and docs/, and how each is type-checked
// (tests/miniflare/docs-types.test.mjs) and run (docs-run.test.mjs).
//
// A ```js or ```ts block is a whole module unless its fence line says
// `fragment` (```js fragment): a fragment may use names it does not define
// (the reader's own functions and variables, `step`, `event`, `env`) and may
// stand for the inside of a Workflow's `run(event, step)`; everything else
// about it is checked. Other words of the fence line: `file=NAME` (a file of
// docs/deploying.md's projects, which package.test.mjs also deploys).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./harness.mjs";

/** The pages whose code is checked: README.md and every .md under docs/. */
export function pages() {
  const list = ["README.md"];
  for (const file of readdirSync(path.join(ROOT, "docs"), { recursive: true })) {
    if (String(file).endsWith(".md")) list.push(path.join("docs", String(file)));
  }
  return list.sort();
}

/** Words a fence line may carry after the language. */
const KNOWN_WORDS = /^(fragment|file=\S+)$/;

/**
 * Every ```js / ```ts block of `page` (relative to ROOT, or with its `text`
 * given): `{ page, line, lang, words, fragment, text }`, `line` being the
 * fence's 1-based line.
 */
export function codeBlocks(page, text = readFileSync(path.join(ROOT, page), "utf8")) {
  const blocks = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^```(\w+)(.*)$/);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    const [, lang, rest] = open;
    if (lang === "js" || lang === "ts") {
      const words = rest.trim().split(/\s+/).filter(Boolean);
      blocks.push({
        page,
        line: i + 1,
        lang,
        words,
        fragment: words.includes("fragment"),
        text: lines.slice(i + 1, end).join("\n"),
      });
    }
    i = end;
  }
  return blocks;
}

/** Every block of every page. */
export function allBlocks() {
  return pages().flatMap((page) => codeBlocks(page));
}

/** The fence-line words of `block` that this checker does not know. */
export function unknownWords(block) {
  return block.words.filter((w) => !KNOWN_WORDS.test(w));
}

/** The package's exports, by module: what a fragment may use without importing it. */
export function packageExports() {
  const index = readFileSync(path.join(ROOT, "js/index.mjs"), "utf8");
  const names = [...index.matchAll(/^export \{([^}]+)\}/gm)].flatMap((m) => m[1].split(",").map((n) => n.trim()));
  return {
    "baton-workflows": names.filter(Boolean),
    "baton-workflows/worker": ["batonService", "handleFetch"],
    "cloudflare:workers": ["WorkflowEntrypoint", "type WorkflowEvent", "type WorkflowStep"],
    "cloudflare:workflows": ["NonRetryableError"],
  };
}

/** The local names a block's `import { ... } from "..."` lines bind. */
function importedNames(importLines) {
  const names = new Set();
  for (const line of importLines) {
    const braces = line.match(/\{([^}]*)\}/);
    if (braces) {
      for (const part of braces[1].split(",")) {
        const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop();
        if (name) names.add(name);
      }
    }
    const whole = line.match(/^import\s+(?:type\s+)?(\w+)\s*(?:,|from)/);
    if (whole) names.add(whole[1]);
  }
  return names;
}

/**
 * Diagnostics a block may leave. A JS block is code a user runs untyped:
 * its parameters and variables may be implicitly `any` (TS7005, 7006,
 * 7031, 7034). Nothing else is allowed: a wrong argument, a missing
 * method, a wrong option or a misspelt helper fails.
 */
export function allowedCodes(block) {
  return new Set(block.lang === "js" ? [7005, 7006, 7031, 7034] : []);
}

/**
 * A fragment's free name, from a first pass's diagnostic: "Cannot find
 * name 'x'" (TS2304), the same with a suggestion (TS2552) unless it
 * suggests a name of the package (a misspelt helper is an error, not the
 * reader's own name), or a shorthand property with no value (TS18004).
 */
export function freeName(diagnostic, exported) {
  if (diagnostic.code === 2304) return diagnostic.message.match(/Cannot find name '([^']+)'/)?.[1];
  if (diagnostic.code === 2552) {
    const [, name, suggested] = diagnostic.message.match(/Cannot find name '([^']+)'\. Did you mean '([^']+)'/) ?? [];
    return exported.has(suggested) ? undefined : name;
  }
  if (diagnostic.code === 18004) return diagnostic.message.match(/shorthand property '([^']+)'/)?.[1];
  return undefined;
}

/**
 * The TypeScript module that checks `block`, and the line of the module
 * where the block's first line lands (for mapping errors back).
 *
 * - Its own `import` lines go first; for a fragment, the prelude imports
 *   every name of the package (and of `cloudflare:workers`) it did not
 *   import itself. A whole block imports what it uses.
 * - A fragment's free names (`free`: the reader's own functions and
 *   variables, which a first pass finds) are declared `any`.
 * - A fragment without a top-level `export` is the body of a Workflow's
 *   `run(event, step)` (so `this.env`, `step` and `event` are typed), with
 *   `env`, `request`, `ctx` and a Coordinator `stub` declared around it for
 *   the parts that are a Worker's `fetch`.
 * - A JS block's Workflow class and default export are typed as a
 *   TypeScript user would type them: `extends WorkflowEntrypoint` gets
 *   `<Env, any>`, `run(event, step)` its parameter types, `export default {`
 *   `ExportedHandler<Env>`. `Env` is docs-env.d.ts's (a ts block declares
 *   its own).
 */
export function checkModule(block, free = []) {
  const lines = block.text.split("\n");
  const imports = lines.filter((l) => /^import\s/.test(l));
  const body = lines.map((l) => (/^import\s/.test(l) ? "" : l));
  const own = importedNames(imports);
  const prelude = [...imports];
  const need = (module, names) => {
    const missing = names.filter((n) => !own.has(n.replace(/^type\s+/, "")));
    if (missing.length > 0) prelude.push(`import { ${missing.join(", ")} } from "${module}";`);
  };
  if (block.fragment) {
    for (const [module, names] of Object.entries(packageExports())) need(module, names);
    need("baton-workflows/worker", ["type Coordinator"]);
  }
  let text = body.join("\n");
  if (block.lang === "js") {
    const typed = text
      .replace(/extends WorkflowEntrypoint \{/g, "extends WorkflowEntrypoint<Env, any> {")
      .replace(/async run\(event, step\)/g, "async run(event: WorkflowEvent<any>, step: WorkflowStep)")
      .replace(/^export default \{/m, "export default <ExportedHandler<Env>>{");
    if (typed !== text && !block.fragment) need("cloudflare:workers", ["type WorkflowEvent", "type WorkflowStep"]);
    text = typed;
  }
  const wrapped = block.fragment && !/^export\s/m.test(text);
  if (block.fragment) {
    prelude.push(
      "declare const env: Env;",
      "declare const request: Request;",
      "declare const ctx: ExecutionContext;",
      "declare const stub: DurableObjectStub<Coordinator>;",
      "declare const step: WorkflowStep;",
      "declare const event: WorkflowEvent<any>;",
      // The reader's own names, found by a first pass (docs-types.test.mjs).
      ...free.map((name) => `declare const ${name}: any;`),
    );
  }
  if (wrapped) {
    prelude.push(
      "export class Fragment extends WorkflowEntrypoint<Env, any> {",
      "  async run(event: WorkflowEvent<any>, step: WorkflowStep): Promise<any> {",
    );
    return { source: [...prelude, text, "  }", "}", ""].join("\n"), firstLine: prelude.length + 1 };
  }
  return { source: [...prelude, text, ""].join("\n"), firstLine: prelude.length + 1 };
}

/** The ambient `Env` of the docs' JS blocks and fragments: Baton's bindings and the docs' own. */
export const DOCS_ENV = `// The bindings the docs' JS blocks and fragments use (docs-blocks.mjs).
interface Env {
  COORDINATOR: DurableObjectNamespace<import("baton-workflows/worker").Coordinator>;
  DEBOUNCER: DurableObjectNamespace<import("baton-workflows/worker").Debouncer>;
  RATE_LIMITER: DurableObjectNamespace<import("baton-workflows/worker").RateLimiter>;
  RUNS: DurableObjectNamespace<import("baton-workflows/worker").Runs>;
  BATON: Service<import("baton-workflows/worker").Baton>;
  DB: D1Database;
  WORKFLOW: Workflow;
  DEPLOY: Workflow;
  REPORT: Workflow;
  MIGRATE: Workflow;
  SITE: { publish(branch: string, artifact: unknown, options: { fence: number }): Promise<{ version: string }> };
}
`;

/**
 * tsc's diagnostics (`--pretty false`) as `{ file, line, code, message }`;
 * a continuation line joins the message before it.
 */
export function parseDiagnostics(output) {
  const out = [];
  for (const line of output.split("\n")) {
    const m = line.match(/^(.+?)\((\d+),(\d+)\): error TS(\d+): (.*)$/);
    if (m) out.push({ file: m[1], line: Number(m[2]), code: Number(m[4]), message: m[5] });
    else if (out.length > 0 && line.trim() !== "") out[out.length - 1].message += ` ${line.trim()}`;
  }
  return out;
}
