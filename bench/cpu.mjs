// CPU time from /proc, for the A/B tools (bench/pairs-ab.mjs,
// bench/subset.mjs): workerd runs every isolate of a Miniflare (Baton, the
// bench Worker, D1, the Workflow engine) on its own threads, so its CPU is
// what a call costs the whole machine, beside the wall time.
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_S = 100; // USER_HZ, the unit of /proc/<pid>/stat's times

/**
 * The workerd processes this process started (call after Miniflare is
 * ready): only its descendants, since other work on the machine may run
 * workerd too.
 */
export function workerdPids() {
  const parentOf = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
  return readdirSync("/proc")
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("workerd")) return false;
        // A descendant of this process (Miniflare may start workerd through a shim).
        for (let at = Number(pid), depth = 0; at > 1 && depth < 8; at = parentOf(at), depth++) {
          if (at === process.pid) return true;
        }
        return false;
      } catch {
        return false;
      }
    });
}

/** CPU seconds so far: `pids`' user and system time, and this process's. */
export function cpuSeconds(pids) {
  let user = 0;
  let system = 0;
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    user += Number(fields[11]) / TICKS_PER_S;
    system += Number(fields[12]) / TICKS_PER_S;
  }
  const own = process.cpuUsage();
  return { user, system, bench: (own.user + own.system) / 1e6 };
}
