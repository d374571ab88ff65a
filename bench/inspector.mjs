// V8's sampling profiler on one of Miniflare's isolates, through its
// inspector: what bench/profile.mjs and bench/split.mjs both drive.

/** The profiler's sampling interval: fine enough to see a call of tens of µs. */
export const SAMPLING_US = 50;

/** A minimal Chrome DevTools Protocol client over the inspector's WebSocket. */
export async function connect(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 0;
  const waiting = new Map();
  ws.onmessage = ({ data }) => {
    const message = JSON.parse(data);
    if (message.id === undefined || !waiting.has(message.id)) return;
    const { resolve, reject } = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error) reject(new Error(JSON.stringify(message.error)));
    else resolve(message.result);
  };
  return {
    send(method, params = {}) {
      const id = ++next;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
    },
    close: () => ws.close(),
  };
}

/** The inspector's target whose title, URL or socket names `name`. */
export async function findTarget(inspectorPort, name) {
  const list = await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json();
  const found = list.find((t) => t.title?.includes(name) || t.url?.includes(name) || t.webSocketDebuggerUrl?.endsWith(name));
  if (!found) throw new Error(`no inspector target for ${name}: ${JSON.stringify(list)}`);
  return found;
}

/** The profile of `target`'s isolate while `run` runs, and what `run` returned. */
export async function profileWhile(target, run) {
  const cdp = await connect(target.webSocketDebuggerUrl);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
  await cdp.send("Profiler.start");
  const result = await run();
  const { profile } = await cdp.send("Profiler.stop");
  cdp.close();
  return { profile, result };
}
