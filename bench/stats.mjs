// Summaries of repeated measurements: median, percentiles, spread.

/** The p-th percentile (0-100) by nearest rank: always one of the samples. */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export const median = (values) => percentile(values, 50);

export const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

/** n, p50, p99, mean, min, max and the interquartile range of `values`. */
export function summary(values) {
  return {
    n: values.length,
    p50: median(values),
    p99: percentile(values, 99),
    mean: mean(values),
    min: Math.min(...values),
    max: Math.max(...values),
    q1: percentile(values, 25),
    q3: percentile(values, 75),
  };
}

/** Rounds for display: 2 significant decimals below 10, 1 below 100, none above. */
export function fmt(value) {
  if (!Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

/** "p50 X (min A, max B, n N)" for a summary, with a unit. */
export function spread(s, unit = "ms") {
  return `median ${fmt(s.p50)} ${unit} (min ${fmt(s.min)}, IQR ${fmt(s.q1)}–${fmt(s.q3)}, max ${fmt(s.max)}; n=${s.n})`;
}
