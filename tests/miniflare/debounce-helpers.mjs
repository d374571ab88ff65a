// What the Debouncer's suites (debounce.test.mjs, debounce-batch.test.mjs)
// share: fresh keys, a call that must succeed, and the EchoWorkflow
// instances a Debouncer creates, read back through the harness.

/** A maker of keys no earlier test in the file used. */
export function freshKeys() {
  let made = 0;
  return (name) => `${name}:${++made}:${Date.now()}`;
}

/** Calls the Debouncer of `key` and returns its reply, or throws its refusal. */
export async function ok(harness, key, method, ...args) {
  const result = await harness.debouncer(key, method, ...args);
  if ("error" in result) throw new Error(`${method}: ${result.error}`);
  return result.value;
}

/** Waits for the echo instance `id` to complete and returns the params it got. */
export async function startedParams(harness, id) {
  await harness.until(`${id} to complete`, async () => {
    const details = await harness.details(id, "echo");
    if (details.status === "errored") throw new Error(`${id} errored: ${JSON.stringify(details)}`);
    return details.status === "complete";
  });
  return (await harness.details(id, "echo")).output.params;
}

/** Whether the echo instance `id` was created. */
export const exists = async (harness, id) => (await harness.details(id, "echo")).status !== "not_found";
