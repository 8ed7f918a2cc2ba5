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

/**
 * bucketPiece placed by the exact mean of its samples: the widest uniform piece inside the bucket
 * with that mean (one end at a bucket bound), so that expectations near a tight device's minimum
 * see where in its bucket the samples lie. The mean is clamped to the bucket; atoms stay atoms.
 */
export function bucketPieceAt(i: number, p: number, meanNs: number): Piece {
  const q = bucketPiece(i, p);
  if (q.lo === q.hi || !Number.isFinite(meanNs)) return q;
  const m = Math.min(q.hi, Math.max(q.lo, meanNs));
  return m >= (q.lo + q.hi) / 2 ? { lo: 2 * m - q.hi, hi: q.hi, p } : { lo: q.lo, hi: 2 * m - q.lo, p };
}

/** Bucket masses [index, weight] (any scale) → distribution; undefined when the total is 0. */
export function distFromMasses(masses: readonly (readonly [number, number])[]): Dist | undefined {
  return distFromFlat(masses.flat());
}

export function distFromHist(h: BucketHist | undefined): Dist | undefined {
  return h ? distFromFlat(h.buckets) : undefined;
}

/** distFromMasses over flat index, weight pairs (BucketHist's buckets), without a pair per bucket. */
function distFromFlat(b: readonly number[]): Dist | undefined {
  const kept: number[] = [];
  let total = 0;
  let sorted = true;
  for (let j = 0; j < b.length; j += 2) {
    const i = b[j]!;
    const w = b[j + 1]!;
    if (!(w > 0 && Number.isInteger(i) && i >= 0 && i < NB)) continue;
    if (kept.length > 0 && b[kept[kept.length - 1]!]! > i) sorted = false;
    kept.push(j);
    total += w;
  }
  if (!(total > 0)) return undefined;
  // histogram deltas come in index order: sort (stably, to the same order) only when they do not
  if (!sorted) kept.sort((x, y) => b[x]! - b[y]!);
  return { pieces: kept.map((j) => bucketPiece(b[j]!, b[j + 1]! / total)) };
}

/**
 * The distribution rescaled so its mean is `exactMean`. The BPF side keeps the exact sum of every
 * histogram; "uniform within the bucket" misplaces the mean by up to ~10% on 20%-wide buckets, so
 * the shape comes from the buckets and the scale from sum/count. Unchanged when either mean is 0.
 */
export function scaledToMean(d: Dist, exactMean: number): Dist {
  const k = meanScale(d, exactMean);
  return k === undefined ? d : { pieces: d.pieces.map((q) => ({ lo: q.lo * k, hi: q.hi * k, p: q.p })) };
}

/** The distribution moved by x (every piece's ends + x). */
export const shiftedBy = (d: Dist, x: number): Dist => ({ pieces: d.pieces.map((q) => ({ lo: q.lo + x, hi: q.hi + x, p: q.p })) });

/** The factor that takes d's mean to exactMean; undefined when either mean is 0 (or not finite). */
function meanScale(d: Dist, exactMean: number): number | undefined {
  const m = mean(d);
  return m > 0 && exactMean > 0 && Number.isFinite(exactMean) ? exactMean / m : undefined;
}

/**
 * distFromHist with the mean taken from sumNs/count: scaledToMean on pieces just made, so scaled
 * where they are instead of copied (a collection at 64 devices makes about 100 k of them).
 */
export function calibratedDist(h: BucketHist | undefined): Dist | undefined {
  const d = distFromHist(h);
  const k = d && h && h.count > 0 ? meanScale(d, h.sumNs / h.count) : undefined;
  if (d && k !== undefined) {
    for (const q of d.pieces) {
      q.lo *= k;
      q.hi *= k;
    }
  }
  return d;
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

/** n! for the powers `combination` needs (at most 31 uniform widths + 1). */
const FACTORIAL = Float64Array.from({ length: 33 }, (_, n) => { let f = 1; for (let j = 2; j <= n; j++) f *= j; return f; });

/**
 * E[(shift + Σ signᵢ·Xᵢ)⁺] (order 1) or P(shift + Σ signᵢ·Xᵢ > 0) (order 0), over independent Xᵢ,
 * exactly, as a sum over combinations of pieces. For one combination with atom part x₀ and uniform
 * widths w₁..w_k the value is Δ_{w₁}…Δ_{w_k} Pₖ(x₀) / Πw with Pₖ(x) = (x⁺)^{k+order}/(k+order)!
 * (k-fold integration of x⁺ or of the step). Sub-probability inputs scale the result by their mass.
 *
 * Prepared once per set of terms, evaluated at many shifts (the best_static search, every policy).
 * The term with the most pieces is "searched": for each combination r of the other terms (offset
 * x_r, span σ_r) its pieces, sorted, split into three runs: entirely below 0 (worth 0), entirely
 * above (worth x_r + σ_r/2 + mid, summed by suffix sums in O(1)) and the few that straddle 0,
 * computed exactly. A search from the last runs' bounds finds them, so one evaluation costs
 * O(R·(log n + straddlers)) instead of O(R·n) with R = product of the other terms' sizes.
 * `positivePart` is the same sum at one shift, without the table of combinations (what a single
 * evaluation does not need).
 */
export class PositivePart {
  private readonly searched: Searched;
  /** combinations of the other terms: atom part, probability, total width, uniform widths (stride `slots`) */
  private readonly restX: Float64Array;
  private readonly restP: Float64Array;
  private readonly restSpan: Float64Array;
  private readonly restK: Uint8Array;
  private readonly restW: Float64Array;
  private readonly slots: number;
  private readonly widths: Float64Array;

  constructor(terms: readonly Term[]) {
    const split = splitTerms(terms);
    this.searched = split.searched;
    const count = split.count;
    this.slots = Math.max(1, split.others.length);
    this.restX = new Float64Array(count);
    this.restP = new Float64Array(count);
    this.restSpan = new Float64Array(count);
    this.restK = new Uint8Array(count);
    this.restW = new Float64Array(count * this.slots);
    this.widths = new Float64Array(terms.length);
    const widths = this.widths;
    const at = new Float64Array(3);
    forEachCombination(split, widths, at, (r, k) => {
      this.restX[r] = at[0]!;
      this.restP[r] = at[1]!;
      this.restSpan[r] = at[2]!;
      this.restK[r] = k;
      for (let j = 0; j < k; j++) this.restW[r * this.slots + j] = widths[j]!;
    });
  }

  /** The expectation (order 1) or probability (order 0) at this shift. */
  at(shift: number, order: 0 | 1): number {
    // Both orders come from the same pieces in one pass, and callers ask for the same shift in a
    // row (spin, late and the oversleep probability of one sleep): remember the last one.
    if (shift !== this.lastShift) this.evaluate(shift);
    return this.last[order]!;
  }

  private lastShift = NaN;
  private readonly last = new Float64Array(2);
  /** one combination's [atom part with the shift, probability, total width] for Searched.add */
  private readonly combo = new Float64Array(3);

  private evaluate(shift: number): void {
    const { searched, restX, restP, restSpan, restK, restW, slots, widths, last, combo } = this;
    last[0] = last[1] = 0;
    for (let r = 0; r < restX.length; r++) {
      const k = restK[r]!;
      for (let j = 0; j < k; j++) widths[j] = restW[r * slots + j]!;
      combo[0] = shift + restX[r]!;
      combo[1] = restP[r]!;
      combo[2] = restSpan[r]!;
      searched.add(combo, widths, k, last);
    }
    this.lastShift = shift;
  }
}

/**
 * [P(shift + Σ signᵢ·Xᵢ > 0), E[(shift + Σ signᵢ·Xᵢ)⁺]] at one shift: PositivePart's sum, in the
 * same order, with each combination of the other terms formed as it is visited instead of stored.
 */
export function positivePart(terms: readonly Term[], shift: number): [probability: number, expectation: number] {
  const split = splitTerms(terms);
  const widths = new Float64Array(terms.length);
  const acc = new Float64Array(2);
  const at = new Float64Array(3);
  forEachCombination(split, widths, at, (_, k) => {
    at[0] = shift + at[0]!;
    split.searched.add(at, widths, k, acc);
  });
  return [acc[0]!, acc[1]!];
}

/** One evaluation; prepare a PositivePart when evaluating the same terms at many shifts. */
export function expectPositive(terms: readonly Term[], shift: number, order: 0 | 1): number {
  return positivePart(terms, shift)[order];
}

/** The terms as the search sees them: the searched one, and the others' pieces with mass. */
interface Split {
  searched: Searched;
  others: Piece[][];
  signs: (1 | -1)[];
  /** number of combinations of the others; 0 when a term has no mass (every value is 0) */
  count: number;
}

function splitTerms(terms: readonly Term[]): Split {
  const lists = terms.map((t) => t.dist.pieces.filter((q) => q.p > 0));
  let searched = 0;
  lists.forEach((l, t) => {
    if (l.length > lists[searched]!.length) searched = t;
  });
  const others = lists.filter((_, t) => t !== searched);
  return {
    searched: new Searched(lists[searched] ?? [], terms[searched]?.sign ?? 1),
    others,
    signs: terms.filter((_, t) => t !== searched).map((t) => t.sign),
    count: lists.some((l) => l.length === 0) ? 0 : others.reduce((a, l) => a * l.length, 1),
  };
}

/**
 * Odometer over the combinations of the other terms: writes each one's atom part, probability and
 * total width to at[0..3) and its k uniform widths to widths[0..k), then calls `visit` with the
 * index and k. The doubles go through the array, not as arguments: passed to a function V8 does
 * not inline, each would be a new heap number, and at 64 devices those were megabytes of garbage
 * per collection (bench/README.md, "Collection CPU at 64 devices").
 */
function forEachCombination(split: Split, widths: Float64Array, at: Float64Array, visit: (r: number, k: number) => void): void {
  const { others, signs, count } = split;
  const idx = new Int32Array(others.length);
  for (let r = 0; r < count; r++) {
    let p = 1;
    let x = 0;
    let span = 0;
    let k = 0;
    for (let t = 0; t < others.length; t++) {
      const q = others[t]![idx[t]!]!;
      p *= q.p;
      if (q.hi === q.lo) x += signs[t]! * q.lo;
      else {
        // a negative uniform on (lo, hi] is a positive uniform of the same width starting at −hi
        x += signs[t]! > 0 ? q.lo : -q.hi;
        const w = q.hi - q.lo;
        widths[k++] = w;
        span += w;
      }
    }
    at[0] = x;
    at[1] = p;
    at[2] = span;
    visit(r, k);
    let t = others.length - 1;
    while (t >= 0 && ++idx[t]! === others[t]!.length) idx[t--] = 0;
  }
}

/** The searched term: pieces of sign·X sorted by start, with the running sums the search needs. */
class Searched {
  /** start, width, probability of each piece */
  private readonly start: Float64Array;
  private readonly width: Float64Array;
  private readonly prob: Float64Array;
  /** running max of start + width: the pieces before the first one above a bound all end below it */
  private readonly endMax: Float64Array;
  /** suffix sums of p and p·mid (index n: 0) */
  private readonly sufP: Float64Array;
  private readonly sufMid: Float64Array;

  /**
   * The last two run bounds found: the odometer steps the other terms' atom part a little at a
   * time, so the next bounds are usually within a piece or two of these.
   */
  private lastAbove = 0;
  private lastFirst = 0;
  /** the value firstAboveNear looks for, passed in an array (see forEachCombination) */
  private readonly bound = new Float64Array(1);

  constructor(list: readonly Piece[], sign: 1 | -1) {
    const n = list.length;
    // sign·X on a piece (lo, hi] of X is a piece starting at lo (sign +) or −hi (sign −), same width
    const startOf = (q: Piece): number => (sign > 0 ? q.lo : -q.hi);
    const before = (a: Piece, b: Piece): number => startOf(a) - startOf(b) || (a.hi - a.lo) - (b.hi - b.lo);
    // Histogram pieces come sorted: sort (stably, so in the same order) only when they are not.
    let sorted: readonly Piece[] = list;
    for (let d = 1; d < n; d++) {
      if (before(list[d - 1]!, list[d]!) > 0) {
        sorted = [...list].sort(before);
        break;
      }
    }
    // one buffer for the six arrays: a few hundred bytes, allocated on every evaluation's setup
    const buf = new Float64Array(6 * n + 2);
    this.start = buf.subarray(0, n);
    this.width = buf.subarray(n, 2 * n);
    this.prob = buf.subarray(2 * n, 3 * n);
    this.endMax = buf.subarray(3 * n, 4 * n);
    this.sufP = buf.subarray(4 * n, 5 * n + 1);
    this.sufMid = buf.subarray(5 * n + 1, 6 * n + 2);
    for (let d = 0, m = -Infinity; d < n; d++) {
      const q = sorted[d]!;
      this.start[d] = startOf(q);
      this.width[d] = q.hi - q.lo;
      this.prob[d] = q.p;
      this.endMax[d] = m = Math.max(m, sign > 0 ? q.hi : -q.lo);
    }
    for (let d = n - 1; d >= 0; d--) {
      const p = this.prob[d]!;
      this.sufP[d] = this.sufP[d + 1]! + p;
      this.sufMid[d] = this.sufMid[d + 1]! + p * (this.start[d]! + this.width[d]! / 2);
    }
  }

  /**
   * Adds to acc [order 0, order 1] every piece's share with one combination of the other terms:
   * at = [atom part x (shift included), probability pr, total width span], uniform widths in widths[0..k).
   */
  add(at: Float64Array, widths: Float64Array, k: number, acc: Float64Array): void {
    const { start, width, prob, endMax, sufP, sufMid } = this;
    const x = at[0]!;
    const pr = at[1]!;
    const span = at[2]!;
    const n = start.length;
    // pieces with x + start > 0 lie entirely above 0: the indicator is 1, the positive part linear
    const bound = this.bound;
    bound[0] = -x;
    const above = (this.lastAbove = firstAboveNear(start, bound, this.lastAbove));
    if (above < n) {
      acc[0] = acc[0]! + pr * sufP[above]!;
      acc[1] = acc[1]! + pr * ((x + span / 2) * sufP[above]! + sufMid[above]!);
    }
    // pieces ending at or below −x − span lie entirely below 0; the rest straddle it
    bound[0] = -x - span;
    const first = (this.lastFirst = firstAboveNear(endMax, bound, this.lastFirst));
    for (let d = first; d < above; d++) {
      let count = k;
      if (width[d]! > 0) widths[count++] = width[d]!;
      pair[0] = x + start[d]!;
      combination(widths, count, pair);
      const q = pr * prob[d]!;
      acc[0] = acc[0]! + q * pair[0]!;
      acc[1] = acc[1]! + q * pair[1]!;
    }
  }
}

/**
 * firstAbove(a, v) started from `hint`, the answer for a nearby v: a few steps from there (the
 * unique i with a[i − 1] ≤ v < a[i]), else the binary search. Its branches are what one
 * evaluation spends most on when the other terms have many combinations.
 */
function firstAboveNear(a: Float64Array, bound: Float64Array, hint: number): number {
  const v = bound[0]!;
  const n = a.length;
  let i = Math.min(hint, n);
  for (let step = 0; step < 4; step++) {
    if (i > 0 && a[i - 1]! > v) i--;
    else if (i < n && !(a[i]! > v)) i++;
    else return i;
  }
  return firstAbove(a, v);
}

/** Smallest index i with a[i] > v (a ascending); a.length when none. */
function firstAbove(a: Float64Array, v: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! > v) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

const kept = new Float64Array(32);
/** combination's result: [P(· > 0), E[(·)⁺]] */
const pair = new Float64Array(2);
/** the box's vertices by mask and each one's sign parity (1: subtracted); grown on demand */
let vertex = new Float64Array(16);
let parity = new Uint8Array(16);

/**
 * One combination of pieces, atom part out[0] and uniform widths[0..count): writes order 0 and
 * order 1 into `out` (they share every vertex).
 */
function combination(widths: Float64Array, count: number, out: Float64Array): void {
  const x0 = out[0]!;
  let span = 0;
  for (let j = 0; j < count; j++) span += widths[j]!;
  if (x0 + span <= 0) {
    out[0] = out[1] = 0;
    return;
  }
  // Entirely positive: the indicator is 1 and the positive part is linear (mean of the sum).
  if (x0 > 0 || (x0 === 0 && count > 0)) {
    out[0] = 1;
    out[1] = x0 + span / 2;
    return;
  }
  // Narrow pieces relative to the scale lose digits in the finite differences: use their midpoints.
  const scale = Math.max(Math.abs(x0), Math.abs(x0 + span));
  let base = x0;
  let k = 0;
  for (let j = 0; j < count; j++) {
    const w = widths[j]!;
    if (w < NARROW * scale) base += w / 2;
    else kept[k++] = w;
  }
  let prod = 1;
  for (let j = 0; j < k; j++) prod *= kept[j]!;
  if (k === 3) {
    // Three uniform pieces (D − O − S from histograms, the bulk of the model): the loop below
    // unrolled, the same vertices added to the sums in the same order (mask 0 is subtracted).
    const v1 = base + kept[0]!;
    const v2 = base + kept[1]!;
    const v3 = v1 + kept[1]!;
    const c = kept[2]!;
    let acc0 = 0;
    let acc1 = 0;
    let x: number;
    let xk: number;
    if ((x = base) > 0) { xk = x * x * x; acc0 -= xk; acc1 -= xk * x; }
    if ((x = v1) > 0) { xk = x * x * x; acc0 += xk; acc1 += xk * x; }
    if ((x = v2) > 0) { xk = x * x * x; acc0 += xk; acc1 += xk * x; }
    if ((x = v3) > 0) { xk = x * x * x; acc0 -= xk; acc1 -= xk * x; }
    if ((x = base + c) > 0) { xk = x * x * x; acc0 += xk; acc1 += xk * x; }
    if ((x = v1 + c) > 0) { xk = x * x * x; acc0 -= xk; acc1 -= xk * x; }
    if ((x = v2 + c) > 0) { xk = x * x * x; acc0 -= xk; acc1 -= xk * x; }
    if ((x = v3 + c) > 0) { xk = x * x * x; acc0 += xk; acc1 += xk * x; }
    out[0] = Math.min(1, Math.max(0, acc0 / FACTORIAL[3]! / prod));
    out[1] = Math.max(0, acc1 / FACTORIAL[4]! / prod);
    return;
  }
  // Vertex `mask` is base plus the widths of its set bits, added in ascending bit order: built from
  // the vertex without its highest bit in one addition each (the same sums, 2^k additions, not k·2^k).
  const n = 1 << k;
  if (vertex.length < n) {
    vertex = new Float64Array(n);
    parity = new Uint8Array(n);
  }
  vertex[0] = base;
  parity[0] = k & 1;
  for (let j = 0, half = 1; j < k; j++, half <<= 1) {
    const w = kept[j]!;
    for (let m = 0; m < half; m++) {
      vertex[half + m] = vertex[m]! + w;
      parity[half + m] = parity[m]! ^ 1;
    }
  }
  // Σ over the 2^k vertices with alternating signs, of x^k (order 0) and x^(k+1) (order 1).
  let acc0 = 0;
  let acc1 = 0;
  for (let mask = 0; mask < n; mask++) {
    const x = vertex[mask]!;
    if (x > 0) {
      // x^k by multiplication (k is small): Math.pow is the slowest step of this hot loop
      let xk = 1;
      for (let e = 0; e < k; e++) xk *= x;
      if (parity[mask]) {
        acc0 -= xk;
        acc1 -= xk * x;
      } else {
        acc0 += xk;
        acc1 += xk * x;
      }
    }
  }
  // Clamp rounding noise into the valid range.
  out[0] = Math.min(1, Math.max(0, acc0 / FACTORIAL[k]! / prod));
  out[1] = Math.max(0, acc1 / FACTORIAL[k + 1]! / prod);
}
