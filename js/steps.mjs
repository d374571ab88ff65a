// The one way the helpers call Baton from Workflow code: each call is a
// durable step with bounded retries, and a `BatonError` (bad input, which is
// bad on every retry) ends the step at once as a NonRetryableError named
// `BatonError` (options.mjs's `rpcRefusal`), as the helpers' own refusals are.
import { rpcRefusal } from "./options.mjs";

/** Returns `call(name, method)`, which runs `method` as the step `name`. */
export function batonSteps(step, retries) {
  const config = { retries, timeout: "1 minute" };
  return (name, method) =>
    step.do(name, config, async () => {
      try {
        return await method();
      } catch (error) {
        if (String(error?.message).startsWith("BatonError:")) {
          throw rpcRefusal(error);
        }
        throw error;
      }
    });
}

// Step names carry the key (or bucket) so a Workflow's history reads well; a
// long one is shortened (with a hash, so two long keys still differ) to keep
// names small.
const STEP_KEY_CHARS_MAX = 64;

/** `key` as it appears in step names. */
export function stepTag(key) {
  if (key.length <= STEP_KEY_CHARS_MAX) return key;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  }
  return `${key.slice(0, 32)}~${(hash >>> 0).toString(36)}`;
}
