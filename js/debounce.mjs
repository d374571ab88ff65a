// Debounce and deferred starts (contract §4), in one line from any Worker:
//
//   await debounce(env.DEBOUNCER, `build:${repo}`, { delayMs: 5000, params: push });
//   await debounce(env.DEBOUNCER, `import:${shop}`, { delayMs: 60000, params: hook, batch: {} });
//
// `namespace` is the Debouncer namespace: a Durable Object binding to
// Baton's `Debouncer` class. Each helper reaches the key's one object and
// answers what it answers; a refusal throws its `BatonError:` Error.
// (With a service binding to Baton instead, call `env.BATON.debounce({ key,
// ...options })` and friends directly: they take the same fields.)

function objectFor(namespace, key) {
  if (typeof namespace?.idFromName !== "function") {
    throw new TypeError("baton: the debounce helpers take env.DEBOUNCER, a Durable Object namespace");
  }
  return namespace.get(namespace.idFromName(key));
}

/**
 * `debounce(key, { delayMs, maxWaitMs?, edge?, params?, workflow?, idPrefix?, batch? })`.
 * With `batch: { maxItems?, maxBytes? }` (trailing only), the burst's run
 * gets `{ batch: [...] }`, every call's params in order (contract §4a).
 */
export function debounce(namespace, key, options) {
  return objectFor(namespace, key).debounce(key, options);
}

/** `startAt(key, { at, params?, workflow?, instanceId? })`: one start at `at`. */
export function startAt(namespace, key, options) {
  return objectFor(namespace, key).startAt(key, options);
}

/** Starts the key's pending start now and ends its burst: `{ started }`. */
export function debounceFlush(namespace, key) {
  return objectFor(namespace, key).flush(key);
}

/** Drops the key's pending start; its id never starts: `{ cancelled }`. */
export function debounceCancel(namespace, key) {
  return objectFor(namespace, key).cancel(key);
}

/** The key's pending start, recent starts, and creates being retried. */
export function debounceInspect(namespace, key) {
  return objectFor(namespace, key).inspect(key);
}
