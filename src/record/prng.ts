// A small seeded PRNG (mulberry32) and the distributions the synthetic device model draws from.
// Deterministic across platforms: only 32-bit integer arithmetic and Math.log/cos/sqrt of its output.

export interface Rng {
  /** uniform in [0, 1) */
  next(): number;
  uniform(lo: number, hi: number): number;
  /** standard normal (Box–Muller) */
  normal(): number;
  /** exponential with the given mean */
  exponential(mean: number): number;
  /** lognormal with the given median and log-standard-deviation */
  lognormal(median: number, sigma: number): number;
}

export function rng(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    const u = 1 - next(); // (0, 1]: log stays finite
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
  };
  return {
    next,
    uniform: (lo, hi) => lo + (hi - lo) * next(),
    normal,
    exponential: (mean) => -mean * Math.log(1 - next()),
    lognormal: (median, sigma) => median * Math.exp(sigma * normal()),
  };
}
