// Distributions as mixtures of atoms and uniform pieces, and the exact expectations the model needs.
// A histogram bucket (lower, upper] becomes a uniform piece, so expectations over bucketed data are
// exact for "uniform within each bucket", and closed-form cases (atoms, uniforms) are exact.
import type { BucketHist } from '../bpf/types.js';
import { lowerNs, NB, OVERFLOW, upperNs } from './buckets.js';
import type { Dist, DistSummary, Piece } from './types.js';

export const atom = (v: number): Dist => ({ pieces: [{ lo: v, hi: v, p: 1 }] });

export function uniform(lo: number, hi: number): Dist {
  if (!(hi >= lo)) throw new Error(`uniform: hi ${hi} < lo ${lo}`);
  return { pieces: [{ lo, hi, p: 1 }] };
}

/** Weighted mixture; weights are normalised. */
export function mixture(parts: { dist: Dist; weight: number }[]): Dist {
  const total = parts.reduce((a, x) => a + x.weight, 0);
  if (!(total > 0)) throw new Error('mixture: total weight must be > 0');
  const pieces = parts.flatMap(({ dist, weight }) => dist.pieces.map((q) => ({ ...q, p: (q.p * weight) / total })));
  return { pieces: pieces.filter((q) => q.p > 0).sort((a, b) => a.lo - b.lo || a.hi - b.hi) };
}

/** The piece holding bucket i of the grid: atoms for the exact buckets 0–4 and for overflow (at its lower bound). */
export function bucketPiece(i: number, p: number): Piece {
  if (i <= 4) return { lo: i, hi: i, p };
  if (i >= OVERFLOW) return { lo: upperNs(OVERFLOW - 1), hi: upperNs(OVERFLOW - 1), p };
  return { lo: lowerNs(i), hi: upperNs(i), p };
}

/** Bucket masses [index, weight] (any scale) → distribution; undefined when the total is 0. */
export function distFromMasses(masses: readonly (readonly [number, number])[]): Dist | undefined {
  const clean = masses.filter(([i, w]) => w > 0 && Number.isInteger(i) && i >= 0 && i < NB);
  const total = clean.reduce((a, [, w]) => a + w, 0);
  if (!(total > 0)) return undefined;
  return { pieces: [...clean].sort((a, b) => a[0] - b[0]).map(([i, w]) => bucketPiece(i, w / total)) };
}

export function distFromHist(h: BucketHist | undefined): Dist | undefined {
  return h ? distFromMasses(h.buckets) : undefined;
}

/**
 * The distribution rescaled so its mean is `exactMean`. The BPF side keeps the exact sum of every
 * histogram; "uniform within the bucket" misplaces the mean by up to ~10% on 20%-wide buckets, so
 * the shape comes from the buckets and the scale from sum/count. Unchanged when either mean is 0.
 */
export function scaledToMean(d: Dist, exactMean: number): Dist {
  const m = mean(d);
  if (!(m > 0) || !(exactMean > 0) || !Number.isFinite(exactMean)) return d;
  const k = exactMean / m;
  return { pieces: d.pieces.map((q) => ({ lo: q.lo * k, hi: q.hi * k, p: q.p })) };
}

/** distFromHist with the mean taken from sumNs/count. */
export function calibratedDist(h: BucketHist | undefined): Dist | undefined {
  const d = distFromHist(h);
  return d && h && h.count > 0 ? scaledToMean(d, h.sumNs / h.count) : d;
}

export const mean = (d: Dist): number => d.pieces.reduce((a, q) => a + q.p * (q.lo + q.hi) / 2, 0);
export const totalMass = (d: Dist): number => d.pieces.reduce((a, q) => a + q.p, 0);

/** Lower end of the support. */
export const supportMin = (d: Dist): number => Math.min(...d.pieces.filter((q) => q.p > 0).map((q) => q.lo));

/** P(X ≤ x). */
export function cdf(d: Dist, x: number): number {
  let c = 0;
  for (const q of d.pieces) {
    if (q.hi <= x) c += q.p;
    else if (q.lo < x) c += (q.p * (x - q.lo)) / (q.hi - q.lo);
  }
  return Math.min(1, c);
}

/** Smallest x with P(X ≤ x) ≥ q (linear inside uniform pieces). */
export function quantile(d: Dist, q: number): number {
  const total = totalMass(d);
  let c = 0;
  for (const piece of d.pieces) {
    if (c + piece.p >= q * total) {
      if (piece.hi === piece.lo) return piece.lo;
      return piece.lo + ((q * total - c) / piece.p) * (piece.hi - piece.lo);
    }
    c += piece.p;
  }
  return d.pieces.length ? d.pieces[d.pieces.length - 1]!.hi : NaN;
}

export function summary(d: Dist): DistSummary {
  return { meanNs: mean(d), minNs: supportMin(d), p50Ns: quantile(d, 0.5), p99Ns: quantile(d, 0.99) };
}

/** The sub-probability part of d on (lo, ∞) — pieces are cut, mass is not renormalised. */
export function restrictAbove(d: Dist, lo: number): Dist {
  const pieces: Piece[] = [];
  for (const q of d.pieces) {
    if (q.hi === q.lo) {
      if (q.lo > lo) pieces.push(q);
    } else if (q.lo >= lo) pieces.push(q);
    else if (q.hi > lo) pieces.push({ lo, hi: q.hi, p: (q.p * (q.hi - lo)) / (q.hi - q.lo) });
  }
  return { pieces };
}

/** One term of a sum Σ sign·X for the expectations below. */
export interface Term {
  dist: Dist;
  sign: 1 | -1;
}

/** Relative width below which a uniform piece is treated as an atom at its midpoint (floating-point safety). */
const NARROW = 1e-4;

const factorial = (n: number): number => (n <= 1 ? 1 : n * factorial(n - 1));

/**
 * E[(shift + Σ signᵢ·Xᵢ)⁺] (order 1) or P(shift + Σ signᵢ·Xᵢ > 0) (order 0), over independent Xᵢ,
 * exactly, as a sum over combinations of pieces. For one combination with atom part x₀ and uniform
 * widths w₁..w_k the value is Δ_{w₁}…Δ_{w_k} Pₖ(x₀) / Πw with Pₖ(x) = (x⁺)^{k+order}/(k+order)!
 * (k-fold integration of x⁺ or of the step). Sub-probability inputs scale the result by their mass.
 */
export function expectPositive(terms: readonly Term[], shift: number, order: 0 | 1): number {
  const n = terms.length;
  const lists = terms.map((t) => t.dist.pieces.filter((q) => q.p > 0));
  if (lists.some((l) => l.length === 0)) return 0;
  // Odometer over the combinations of pieces; no allocation per combination (this is the hot loop).
  const idx = new Int32Array(n);
  const widths = new Float64Array(n);
  let total = 0;
  for (;;) {
    let p = 1;
    let x0 = shift;
    let k = 0;
    for (let t = 0; t < n; t++) {
      const q = lists[t]![idx[t]!]!;
      const sign = terms[t]!.sign;
      p *= q.p;
      if (q.hi === q.lo) x0 += sign * q.lo;
      else {
        // a negative uniform on (lo, hi] is a positive uniform of the same width starting at −hi
        x0 += sign > 0 ? q.lo : -q.hi;
        widths[k++] = q.hi - q.lo;
      }
    }
    total += p * combination(x0, widths, k, order);
    let t = n - 1;
    while (t >= 0 && ++idx[t]! === lists[t]!.length) idx[t--] = 0;
    if (t < 0) return total;
  }
}

const kept = new Float64Array(32);

function combination(x0: number, widths: Float64Array, count: number, order: 0 | 1): number {
  let span = 0;
  for (let j = 0; j < count; j++) span += widths[j]!;
  if (x0 + span <= 0) return 0;
  // Entirely positive: the indicator is 1 and the positive part is linear (mean of the sum).
  if (x0 > 0 || (x0 === 0 && count > 0)) return order === 0 ? 1 : x0 + span / 2;
  // Narrow pieces relative to the scale lose digits in the finite differences: use their midpoints.
  const scale = Math.max(Math.abs(x0), Math.abs(x0 + span));
  let base = x0;
  let k = 0;
  for (let j = 0; j < count; j++) {
    const w = widths[j]!;
    if (w < NARROW * scale) base += w / 2;
    else kept[k++] = w;
  }
  const pow = k + order;
  if (pow === 0) return base > 0 ? 1 : 0;
  const denom = factorial(pow);
  // Σ over the 2^k vertices of the box with alternating signs.
  let acc = 0;
  let prod = 1;
  for (let j = 0; j < k; j++) prod *= kept[j]!;
  for (let mask = 0; mask < 1 << k; mask++) {
    let x = base;
    let bits = 0;
    for (let j = 0; j < k; j++) {
      if (mask & (1 << j)) {
        x += kept[j]!;
        bits++;
      }
    }
    if (x > 0) acc += ((k - bits) % 2 === 0 ? 1 : -1) * x ** pow;
  }
  const v = acc / denom / prod;
  // Clamp rounding noise into the valid range.
  return order === 0 ? Math.min(1, Math.max(0, v)) : Math.max(0, v);
}
