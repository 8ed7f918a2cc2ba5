// Seeded randomness for the simulation: independent streams and inverse-CDF sampling of a Dist.
import type { Dist } from '../types.js';

/** sfc32 seeded through splitmix32: fast, 128-bit state, uniform in [0, 1). */
export function stream(seed: number, id: number): () => number {
  let s = (seed ^ Math.imul(id + 1, 0x9e3779b9)) >>> 0;
  const mix = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = mix();
  let b = mix();
  let c = mix();
  let d = mix();
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let k = 0; k < 12; k++) next();
  return next;
}

/**
 * Inverse CDF of a Dist (atoms and uniform pieces): one uniform in, one value out, so a value is a
 * monotone function of its uniform (common random numbers across policies keep their order).
 */
export class Sampler {
  private readonly cum: Float64Array;
  private readonly lo: Float64Array;
  private readonly width: Float64Array;
  private readonly p: Float64Array;

  constructor(d: Dist) {
    const pieces = d.pieces.filter((q) => q.p > 0).sort((a, b) => a.lo - b.lo || a.hi - b.hi);
    if (!pieces.length) throw new Error('Sampler: empty distribution');
    const total = pieces.reduce((a, q) => a + q.p, 0);
    this.cum = new Float64Array(pieces.length);
    this.lo = Float64Array.from(pieces, (q) => q.lo);
    this.width = Float64Array.from(pieces, (q) => q.hi - q.lo);
    this.p = Float64Array.from(pieces, (q) => q.p / total);
    let c = 0;
    pieces.forEach((q, i) => (this.cum[i] = c += q.p / total));
  }

  at(u: number): number {
    const { cum } = this;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid]! > u) hi = mid;
      else lo = mid + 1;
    }
    const before = cum[lo]! - this.p[lo]!;
    const f = Math.min(1, Math.max(0, (u - before) / this.p[lo]!));
    return this.lo[lo]! + f * this.width[lo]!;
  }
}
