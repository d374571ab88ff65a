// The helpers' own checks of their options, before any step: a bad option
// is refused with the same words Baton's RPC uses (`BatonError: <field>
// <reason>`, as `String(error)`), naming the option, and nothing is called. Thrown as a
// NonRetryableError, so a Workflow step that meets one fails at once
// instead of retrying what will be wrong on every try.
import { NonRetryableError } from "cloudflare:workflows";

/**
 * A refusal of the helper's options: a NonRetryableError named
 * `BatonError`, so that it reads `BatonError: <field> <reason>` as a string
 * and as the Workflow instance's error (the engine reports a step's error
 * as "<name>: <message>"; under any other name it hides the message).
 */
export function batonError(field, reason) {
  return refusal(`${field} ${reason}`, field);
}

/**
 * A refusal Baton's RPC threw (its message `BatonError: <field> <reason>`,
 * its field as the own property `batonField`), as the helpers throw it:
 * the same NonRetryableError named `BatonError` as `batonError`'s, so the
 * instance's error reads `BatonError: <field> <reason>` (under
 * NonRetryableError's own name the engine shows only that a step threw one).
 */
export function rpcRefusal(error) {
  return refusal(error.message.slice("BatonError:".length).trimStart(), error.batonField);
}

function refusal(message, field) {
  const error = new NonRetryableError(message, "BatonError");
  error.name = "BatonError";
  error.field = field;
  return error;
}

/** `value`, if it is an integer from `min` to `max`; else the refusal naming `field`. */
export function integerIn(field, value, min, max) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw batonError(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(value) ?? String(value)})`);
  }
  return value;
}

/** Contract §5a: how long a rate-limit wait may be before the helper gives up, 0 to 24 hours. */
export const MAX_WAIT_MS_MAX = 86_400_000;
