// The bench's environment (date, machine, tool versions) and the writing of
// its figures: one line per figure on the console, docs/benchmarks.md in full.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT, STORAGE_DIR } from "./miniflare.mjs";

const run = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (error) {
    return `unavailable (${error.message.split("\n")[0]})`;
  }
};

const packageVersion = (name) =>
  JSON.parse(readFileSync(path.join(ROOT, "node_modules", name, "package.json"), "utf8")).version;

/** Date, machine and tool versions, as strings. */
export function environment() {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = cpuinfo.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? "unknown";
  const cargoBin = path.join(process.env.CARGO_HOME ?? path.join(os.homedir(), ".cargo"), "bin");
  const installed = run("cargo", ["install", "--list"]);
  const cargoTool = (name) => installed.match(new RegExp(`^${name} (v\\S+):`, "m"))?.[1] ?? "not installed";
  return {
    date: new Date().toISOString(),
    /** The machine's load averages (1, 5, 15 min) at the start: other work shares its cores. */
    load: os.loadavg().map((l) => l.toFixed(1)).join(", "),
    cpu: model,
    cpus: run("nproc", []),
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    rustc: run("rustc", ["--version"]),
    workerBuild: cargoTool("worker-build"),
    wasmBindgen: cargoTool("wasm-bindgen-cli"),
    node: process.version,
    miniflare: packageVersion("miniflare"),
    workerd: `${packageVersion("workerd")} (${run(path.join(ROOT, "node_modules/.bin/workerd"), ["--version"])})`,
    wrangler: packageVersion("wrangler"),
    wasmOpt: run(path.join(ROOT, "node_modules/.bin/wasm-opt"), ["--version"]),
    cargoBin,
    storage: STORAGE_DIR ?? "the system's temporary directory",
    /** The release profile's `opt-level` as Cargo.toml sets it. */
    optLevel: readFileSync(path.join(ROOT, "Cargo.toml"), "utf8").match(/\[profile\.release\][^[]*?opt-level\s*=\s*(\S+)/)?.[1] ?? "unknown",
    /** scripts/build.sh's wasm-opt level (BATON_WASM_OPT_LEVEL overrides it). */
    wasmOptLevel: process.env.BATON_WASM_OPT_LEVEL ?? readFileSync(path.join(ROOT, "scripts/build.sh"), "utf8").match(/BATON_WASM_OPT_LEVEL:-(\S+?)\}/)?.[1] ?? "unknown",
  };
}

/** A met figure using more than this share of its target's allowance is called close. */
const NEAR_TARGET = 0.8;

const mark = (met) => (met === null ? "—" : met ? "met" : "**MISSED**");

/** Prints one figure against its target. */
export function printFigure(f) {
  const verdict = f.met === null ? "" : f.met ? "  [met]" : "  [MISSED]";
  console.log(`${f.id.padEnd(4)} ${f.name}: ${f.measured}${f.target ? `  (target ${f.target})` : ""}${verdict}`);
}

/**
 * docs/benchmarks.md: environment, a table of every figure against its target,
 * method and spread per section, and the missed targets with their reasons.
 */
export function markdown({ env, figures, sections, missed, wallMs }) {
  const lines = [
    "# Benchmarks",
    "",
    "Written by `npm run bench` (scripts/bench.sh, bench/run.mjs); rerun it to refresh this file.",
    "Everything runs locally in Miniflare: real Workflow instances, the real Coordinator",
    "Durable Object and D1, the release build of the WASM. The machine is shared and",
    "noisy: each figure says how many runs it took and their spread. \"Issue N\" names",
    "the change that moved a figure, in the project's own tracker (not public).",
    "",
    `- Date: ${env.date}`,
    `- Machine: ${env.cpu}, ${env.cpus} CPUs (nproc), ${env.memory} RAM, ${env.os}`,
    `- Tools: ${env.rustc}; worker-build ${env.workerBuild}; wasm-bindgen-cli ${env.wasmBindgen};` +
      ` Node ${env.node}; miniflare ${env.miniflare}; workerd ${env.workerd}; wrangler ${env.wrangler};` +
      ` ${env.wasmOpt} (npm binaryen)`,
    `- Build: \`scripts/build.sh\` (cargo release profile: opt-level ${env.optLevel}, LTO; worker-build --no-opt, then wasm-opt ${env.wasmOptLevel} from the npm package binaryen)`,
    `- Storage: Miniflare's objects keep their SQLite in ${env.storage} (bench/miniflare.mjs says why)`,
    `- Load: ${env.load}`,
    `- Wall time of the bench: ${(wallMs / 1000).toFixed(0)} s`,
    "",
    "| | figure | measured | target | |",
    "|---|---|---|---|---|",
    ...figures.map((f) => `| ${f.id} | ${f.name} | ${f.measured} | ${f.target || "—"} | ${mark(f.met)} |`),
    "",
  ];
  if (missed.length) {
    lines.push("## Missed targets", "");
    for (const m of missed) lines.push(`### ${m.id}: ${m.name}`, "", m.text, "");
  } else {
    lines.push("Every target is met.", "");
  }
  // `used`: the share of the target's allowance the figure takes (1 = on the target).
  const close = figures.filter((f) => f.met && f.used > NEAR_TARGET);
  if (close.length) {
    lines.push(
      `Met with little margin (over ${NEAR_TARGET * 100}% of the target's allowance used): ` +
        close.map((f) => `${f.id} ${f.name} (${Math.round(f.used * 100)}%)`).join("; ") +
        ".",
      "",
    );
  }
  for (const s of sections) lines.push(`## ${s.title}`, "", s.text, "");
  return lines.join("\n");
}
