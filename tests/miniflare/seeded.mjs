// What the seeded load tests (stress.test.mjs, nemesis.test.mjs) share:
// their random source, and how they count bodies running at once.

/** A small seeded PRNG (mulberry32), so a failing run can be replayed. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The most intervals (`{ start, end }`) open at once. At equal times an end
 * comes before a start: a slot handed on within the same millisecond is not
 * an overlap.
 */
export function mostAtOnce(intervals) {
  const events = intervals.flatMap((b) => [
    [b.start, +1],
    [b.end, -1],
  ]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let inside = 0;
  let most = 0;
  for (const [, delta] of events) {
    inside += delta;
    most = Math.max(most, inside);
  }
  return most;
}
