// What is busy (contract §10, issue 22): the list of busy keys at scale.
// Registers keys straight into the list shards (as their Coordinators'
// reports would: a bulk `reportMany` per shard, so the bench does not spend
// its time creating 100,000 contended keys), then times through the default
// entrypoint's `coordinatorList`:
// - one page of 500 from spread-out cursors, with 1,000 keys listed and
//   with 100,000 (the ratio is the figure: at most 1.5);
// - the full listing of 100,000 by pages of 500;
// - one page while keys keep entering and leaving the list.
// Prints the figures with the shard count; `node bench/subset.mjs list`
// runs it alone. The keys have no Coordinator behind them, so the read's
// verification of entries no report confirmed for a while (which would ask
// their Coordinators, find nothing and drop them) is set past the run:
// `startBench({ vars: LIST_VARS })`.
import { shardOf } from "../tests/miniflare/harness.mjs";
import { summary, fmt } from "./stats.mjs";

export const LIST_KEYS = 100_000;
/** Baton's variables for this bench: see the top of the file. */
export const LIST_VARS = { BATON_LIST_VERIFY_AFTER_MS: "86400000" };
const SMALL = 1_000;
const PAGE = 500;
/** Pages timed at each size: from cursors spread over the key space. */
const SAMPLES = 40;

const keyName = (i) => `busy/${String(i).padStart(6, "0")}`;

function report(key, stamp, waiting, now) {
  return { key, stamp, holders: 1, waiting, oldestSince: waiting > 0 ? now - 1000 : null, limit: 1, deadUntil: null };
}

/** Reports keys `from..to` with `waiting` waiters each (0: they leave), every shard at once. */
async function register(b, shards, from, to, waiting, stamp) {
  const byShard = Array.from({ length: shards }, () => []);
  const now = Date.now();
  for (let i = from; i < to; i++) byShard[shardOf(keyName(i), shards)].push(report(keyName(i), stamp, waiting, now));
  await Promise.all(byShard.map((reports, shard) => (reports.length ? b.call("/bench/list-report", { shard, reports }) : null)));
}

/** A cursor that starts a page just after key `i` (the cursor format of src/busy/page.rs). */
function cursorAfter(i) {
  return Buffer.concat([Buffer.from([1, "k".charCodeAt(0)]), Buffer.from(keyName(i))]).toString("base64url");
}

/** Reads of each sampled page, timed together (the Worker's clock moves in whole ms). */
const READS_PER_SAMPLE = 5;

/** One page of PAGE from each of SAMPLES cursors spread over `count` keys: ms per page. */
async function pagesAt(b, count) {
  const times = [];
  for (let n = 0; n < SAMPLES; n++) {
    const start = Math.floor((n / SAMPLES) * (count - PAGE));
    const read = await b.call("/bench/list-pages", { limit: PAGE, pages: 1, repeat: READS_PER_SAMPLE, cursor: cursorAfter(start) });
    if (read.sizes[0] < PAGE / 2) throw new Error(`a page of ${read.sizes[0]} keys from ${start} of ${count}`);
    times.push(read.times[0]);
  }
  return summary(times);
}

export async function listing(b, shards = 16) {
  // Warm every shard's object and the entrypoint before anything is timed.
  await b.call("/bench/list-pages", { limit: PAGE, pages: 1 });
  await register(b, shards, 0, SMALL, 2, 1);
  const small = await pagesAt(b, SMALL);
  const loadStarted = performance.now();
  for (let from = SMALL; from < LIST_KEYS; from += 10_000) {
    await register(b, shards, from, Math.min(from + 10_000, LIST_KEYS), 2, 1);
  }
  const loadMs = performance.now() - loadStarted;
  const large = await pagesAt(b, LIST_KEYS);

  // The full listing, 20 pages per request to the bench Worker (each page
  // is a request to every shard).
  const fullStarted = performance.now();
  const full = { times: [], sizes: [] };
  let cursor = null;
  do {
    const part = await b.call("/bench/list-pages", { limit: PAGE, pages: 20, cursor });
    full.times.push(...part.times);
    full.sizes.push(...part.sizes);
    cursor = part.cursor;
  } while (cursor !== null);
  const fullMs = performance.now() - fullStarted;
  const listed = full.sizes.reduce((a, n) => a + n, 0);
  if (listed !== LIST_KEYS) throw new Error(`the full listing read ${listed} keys`);

  // Churn: keys leave and come back, a batch at a time, while pages are read.
  let churning = true;
  let churned = 0;
  const churn = (async () => {
    let stamp = 2;
    while (churning) {
      const from = Math.floor(Math.random() * (LIST_KEYS - 200));
      await register(b, shards, from, from + 200, stamp % 2 ? 3 : 0, stamp);
      stamp++;
      churned += 200;
    }
  })();
  const underChurn = await pagesAt(b, LIST_KEYS);
  churning = false;
  await churn;

  return {
    shards,
    small,
    large,
    ratio: large.p50 / small.p50,
    loadMs,
    full: { ms: fullMs, pages: full.times.length, perPage: summary(full.times) },
    underChurn,
    churned,
  };
}

export function print(l) {
  console.log(
    `LIST (${l.shards} shards): a page of ${PAGE} p50 ${fmt(l.small.p50)} ms at ${SMALL} keys, ${fmt(l.large.p50)} ms at ${LIST_KEYS} ` +
      `(ratio ${fmt(l.ratio, 2)}, target <= 1.5); full listing of ${LIST_KEYS} in ${l.full.pages} pages: ${fmt(l.full.ms / 1000, 1)} s ` +
      `(page p50 ${fmt(l.full.perPage.p50)} ms); a page while keys enter and leave: p50 ${fmt(l.underChurn.p50)} ms ` +
      `(IQR ${fmt(l.underChurn.q1)}-${fmt(l.underChurn.q3)}, ${l.churned} reports meanwhile); loading ${LIST_KEYS} keys took ${fmt(l.loadMs / 1000, 1)} s`,
  );
}
