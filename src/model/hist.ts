// Operations on sparse cumulative histograms (BucketHist: flat index, count pairs on the grid of
// buckets.ts) and on counters: deltas between two readings with reset detection, sums, and the
// cumulative Prometheus `le` view.
import type { BucketHist } from '../bpf/types.js';
import { NB, upperNs } from './buckets.js';

export const emptyHist = (): BucketHist => ({ buckets: [], count: 0, sumNs: 0, aux0: 0, aux1: 0 });

/**
 * Dense scratch for bucket arithmetic: the model runs these for every histogram of every device on
 * every scrape, and a Map per operation was most of the window's cost. Indices are on the grid
 * (checkHist runs on every reading before it reaches here); `collect` leaves the scratch zeroed.
 */
const scratch = new Float64Array(NB);

/** Adds sign × each bucket's count into a dense array indexed by bucket (indices on the grid). */
export function addBuckets(into: Float64Array, h: BucketHist, sign: 1 | -1 = 1): void {
  const b = h.buckets;
  for (let j = 0; j < b.length; j += 2) into[b[j]!] = into[b[j]!]! + sign * b[j + 1]!;
}

/** The same for bucketSumsNs (index, ns pairs), into the scratch of sums. */
const sumScratch = new Float64Array(NB);
function addSums(h: BucketHist, sign: 1 | -1): void {
  const s = h.bucketSumsNs!;
  for (let j = 0; j < s.length; j += 2) sumScratch[s[j]!] = sumScratch[s[j]!]! + sign * s[j + 1]!;
}

const add = (h: BucketHist, sign: 1 | -1): void => addBuckets(scratch, h, sign);

/** The scratch's buckets (and, withSums, the sums of the buckets kept), leaving both zeroed. */
const collect = (withSums = false): Pick<BucketHist, 'buckets' | 'bucketSumsNs'> => {
  const out: number[] = [];
  const sums: number[] | undefined = withSums ? [] : undefined;
  for (let i = 0; i < NB; i++) {
    const c = scratch[i]!;
    if (c !== 0) {
      out.push(i, c);
      scratch[i] = 0;
      sums?.push(i, sumScratch[i]!);
    }
  }
  if (sums) sumScratch.fill(0);
  return sums ? { buckets: out, bucketSumsNs: sums } : { buckets: out };
};

/** Both carry per-bucket sums: a result of the two can carry them too (else it has none). */
const bothSummed = (a: BucketHist, b: BucketHist): boolean => a.bucketSumsNs !== undefined && b.bucketSumsNs !== undefined;

/** The buckets as [index, count] pairs, for code off the scrape's path (reports, recordings, tests). */
export const bucketPairs = (h: BucketHist): [number, number][] => flatPairs(h.buckets);

/** Flat index, value pairs (buckets, bucketSumsNs) as [index, value] pairs. */
export function flatPairs(flat: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (let j = 0; j < flat.length; j += 2) out.push([flat[j]!, flat[j + 1]!]);
  return out;
}

/** [index, count] pairs → BucketHist's flat buckets. */
export const flatBuckets = (pairs: readonly (readonly [number, number])[]): number[] => pairs.flat();

/** Buckets with a count above 0. */
export function filledBuckets(h: BucketHist): number {
  let n = 0;
  for (let j = 1; j < h.buckets.length; j += 2) if (h.buckets[j]! > 0) n++;
  return n;
}

/** Σ of the bucket counts. */
export function bucketTotal(h: BucketHist): number {
  let total = 0;
  for (let j = 1; j < h.buckets.length; j += 2) total += h.buckets[j]!;
  return total;
}

/** True when `cur` cannot have grown from `prev`: a bucket, the count, a sum or an aux field went down. */
export function histReset(prev: BucketHist, cur: BucketHist): boolean {
  if (cur.count < prev.count || cur.sumNs < prev.sumNs || cur.aux0 < prev.aux0 || cur.aux1 < prev.aux1) return true;
  add(cur, 1);
  let reset = false;
  for (let j = 0; j < prev.buckets.length && !reset; j += 2) reset = scratch[prev.buckets[j]!]! < prev.buckets[j + 1]!;
  for (let j = 0; j < cur.buckets.length; j += 2) scratch[cur.buckets[j]!] = 0;
  if (!reset && bothSummed(prev, cur)) {
    addSums(cur, 1);
    const p = prev.bucketSumsNs!;
    for (let j = 0; j < p.length && !reset; j += 2) reset = sumScratch[p[j]!]! < p[j + 1]!;
    sumScratch.fill(0);
  }
  return reset;
}

/** cur − prev, bucket by bucket (caller checked there was no reset). */
export function histDelta(prev: BucketHist, cur: BucketHist): BucketHist {
  add(cur, 1);
  add(prev, -1);
  const summed = bothSummed(prev, cur);
  if (summed) {
    addSums(cur, 1);
    addSums(prev, -1);
  }
  return {
    ...collect(summed),
    count: cur.count - prev.count,
    sumNs: cur.sumNs - prev.sumNs,
    aux0: cur.aux0 - prev.aux0,
    aux1: cur.aux1 - prev.aux1,
  };
}

export function histSum(a: BucketHist, b: BucketHist): BucketHist {
  add(a, 1);
  add(b, 1);
  const summed = bothSummed(a, b);
  if (summed) {
    addSums(a, 1);
    addSums(b, 1);
  }
  return { ...collect(summed), count: a.count + b.count, sumNs: a.sumNs + b.sumNs, aux0: a.aux0 + b.aux0, aux1: a.aux1 + b.aux1 };
}

/** What the series gained from prev to cur; after a reset everything in cur is new (as PromQL increase()). */
export function histIncrease(prev: BucketHist | undefined, cur: BucketHist): BucketHist {
  return !prev || histReset(prev, cur) ? cur : histDelta(prev, cur);
}

export function counterIncrease(prev: number | undefined, cur: number): number {
  return prev === undefined || cur < prev ? cur : cur - prev;
}

/** Rejects malformed input with a clear message (indices off the grid, negative or non-finite counts). */
export function checkHist(h: BucketHist, what: string): void {
  const b = h.buckets;
  if (b.length % 2 !== 0) throw new Error(`${what}: buckets are not index, count pairs (${b.length} numbers)`);
  for (let j = 0; j < b.length; j += 2) {
    const i = b[j]!;
    const c = b[j + 1]!;
    if (!Number.isInteger(i) || i < 0 || i >= NB) throw new Error(`${what}: bucket index ${i} is not on the grid 0..${NB - 1}`);
    if (!Number.isFinite(c) || c < 0) throw new Error(`${what}: bucket ${i} has count ${c}`);
  }
  const s = h.bucketSumsNs;
  if (s !== undefined) {
    if (s.length % 2 !== 0) throw new Error(`${what}: bucket sums are not index, ns pairs (${s.length} numbers)`);
    for (let j = 0; j < s.length; j += 2) {
      if (!Number.isInteger(s[j]) || s[j]! < 0 || s[j]! >= NB) throw new Error(`${what}: bucket sum index ${s[j]} is not on the grid 0..${NB - 1}`);
      if (!Number.isFinite(s[j + 1]) || s[j + 1]! < 0) throw new Error(`${what}: bucket ${s[j]} has sum ${s[j + 1]}`);
    }
  }
  for (const k of ['count', 'sumNs', 'aux0', 'aux1'] as const) {
    if (!Number.isFinite(h[k]) || h[k] < 0) throw new Error(`${what}: ${k} is ${h[k]}`);
  }
}

/** Cumulative counts at every bound: Prometheus `le` semantics, bucket i holds (upper(i−1), upper(i)]. */
export function cumulativeLe(h: BucketHist): { leNs: number; count: number }[] {
  const sorted = bucketPairs(h).sort((a, b) => a[0] - b[0]);
  let acc = 0;
  return sorted.map(([i, c]) => {
    acc += c;
    return { leNs: upperNs(i), count: acc };
  });
}

/** Number of samples ≤ x ns (exact when x is a bound of the grid). */
export function countLe(h: BucketHist, x: number): number {
  let n = 0;
  for (let j = 0; j < h.buckets.length; j += 2) if (upperNs(h.buckets[j]!) <= x) n += h.buckets[j + 1]!;
  return n;
}
