// The one place that maps a histogram bucket index to its bound (and back).
// Log-linear grid, 4 sub-buckets per power of two, in nanoseconds, values bucketed on v−1 so that
// bucket i holds exactly (upper(i−1), upper(i)] — Prometheus `le` semantics with no off-by-one:
//   i 0..4 : v = 0..4 exactly                     upper = i
//   i ≥ 5  : u = v−1, e = floor(log2 u), s = (u >> (e−2)) & 3
//            i = 1 + 4(e−1) + s                   upper = (5+s)·2^(e−2)
//   i = NB−1: overflow (> 1.5·2^36 ns ≈ 103 s)    upper = +Inf
// The BPF program (src/bpf/hpoll.h) computes the same index.

export const NB = 144;
export const OVERFLOW = NB - 1;

/** upperNs by its formula, for the table below. */
function upperOf(i: number): number {
  if (i >= OVERFLOW) return Infinity;
  if (i <= 4) return i;
  const e = Math.floor((i - 1) / 4) + 1;
  const s = (i - 1) % 4;
  return (5 + s) * 2 ** (e - 2);
}

/** Every bucket's upper bound: the model reads them for each piece of every distribution it builds. */
const UPPER = Float64Array.from({ length: NB }, (_, i) => upperOf(i));

/** Inclusive upper bound of bucket i in ns; Infinity for the overflow bucket. */
export function upperNs(i: number): number {
  return Number.isInteger(i) && i >= 0 && i < NB ? UPPER[i]! : upperOf(i);
}

/** Exclusive lower bound of bucket i in ns (−1 for bucket 0, which holds exactly 0). */
export function lowerNs(i: number): number {
  return i === 0 ? -1 : upperNs(i - 1);
}

/** Bucket index of a value in ns (integer, ≥ 0), as the BPF program computes it. */
export function bucketOf(v: number): number {
  if (v <= 4) return Math.max(0, Math.floor(v));
  const u = Math.floor(v) - 1;
  const e = Math.floor(Math.log2(u));
  // Math.log2 can round up just below a power of two; correct it exactly.
  const ee = 2 ** e > u ? e - 1 : e;
  const s = Math.floor(u / 2 ** (ee - 2)) & 3;
  return Math.min(1 + 4 * (ee - 1) + s, OVERFLOW);
}

/**
 * The bucket holding a real-valued time v, (upper(i − 1), upper(i)]: bucketOf for values that are
 * not whole nanoseconds (the model's simulated times), by binary search over the bounds; equal to
 * bucketOf on integers.
 */
export function bucketHolding(v: number): number {
  let lo = 0;
  let hi = OVERFLOW;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (UPPER[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Representative value of bucket i for expectations: its midpoint (the lower bound for the overflow bucket). */
export function midNs(i: number): number {
  if (i <= 4) return i;
  const up = upperNs(i);
  const lo = upperNs(i - 1);
  return up === Infinity ? lo : (lo + up) / 2;
}
