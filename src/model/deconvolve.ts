// F_D at depth from the measured rq_lat histogram (issue 15). At depth most slept I/Os are found
// complete at their wake-up, so the found times bound D from above only; rq_lat (start →
// completion) holds every I/O's D plus the time its completion waited for the poller. Given a
// model of that wait (the poller simulation run on a candidate F_D), F_D is the distribution whose
// simulated rq_lat histogram is the measured one: a Richardson–Lucy deconvolution whose kernel
// P(rq_lat bucket | D cell) is re-estimated from each round's simulation. Pure.
import { bucketHolding, lowerNs, midNs, NB, upperNs } from './buckets.js';
import type { Dist } from './types.js';

/** Empty buckets (each 12–25 % above the last) that set a transient apart from the steady rq_lat. */
const TRANSIENT_GAP = 2;
/** The largest share of rq_lat's samples a transient holds. */
const TRANSIENT_SHARE = 0.01;

/**
 * rq_lat without a transient: a cluster of under TRANSIENT_SHARE of the samples above a gap of at
 * least TRANSIENT_GAP empty buckets. A ring's first fill shows so in the lab (31 I/Os at 1.05–1.31
 * ms beside a bulk at 0.39–0.79 ms on a 400 µs device at QD32, docs/validation.md): those requests
 * waited for the ring's start, not for the device, and the poller model, which runs the steady
 * loop, could explain them only as slow device times, each one spun for. Returns the other masses
 * (flat index, count pairs) and their mean (meanNs less the dropped buckets at their midpoints).
 */
export function withoutTransient(rqLat: readonly number[], meanNs: number): { buckets: readonly number[]; meanNs: number } {
  const pairs: [number, number][] = [];
  for (let j = 0; j + 1 < rqLat.length; j += 2) if (rqLat[j + 1]! > 0) pairs.push([rqLat[j]!, rqLat[j + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const total = pairs.reduce((a, [, c]) => a + c, 0);
  let below = 0;
  for (let k = 1; k < pairs.length; k++) {
    below += pairs[k - 1]![1];
    if (pairs[k]![0] - pairs[k - 1]![0] - 1 < TRANSIENT_GAP || total - below >= TRANSIENT_SHARE * total) continue;
    const droppedNs = pairs.slice(k).reduce((a, [i, c]) => a + c * midNs(i), 0);
    return { buckets: pairs.slice(0, k).flat(), meanNs: (meanNs * total - droppedNs) / below };
  }
  return { buckets: rqLat, meanNs };
}

/** Runs the poller on F_D and reports each measured I/O's device time and rq_lat (ns). */
export type ObserveRun = (fD: Dist, observe: (deviceNs: number, rqLatNs: number) => void) => void;

/**
 * Richardson–Lucy rounds, one simulation of SHIFT_IOS I/Os each (depth.ts): 10 rounds read the
 * lab's recorded qd4-twopoint self-check at −6.9 %, 20 at −6.4 %; 20 cost about 9.5–14 ms of CPU
 * per device at depth per collection (bench/model-depth).
 */
const ROUNDS = 20;
/**
 * Weight, in simulated I/Os, of the pooled kernel (rq_lat = D + a wait drawn from every I/O's
 * wait) in each cell's kernel: a cell the round drew rarely or never still gets one, so its mass
 * moves instead of staying at the prior.
 */
const POOLED_WEIGHT = 4;

/** Buckets below this hold the exact values 0–4 ns: no device is that fast. */
const FIRST = 5;
/**
 * Cells per histogram bucket in F_D's grid: a bucket is 20–25 % wide, and a device time near one
 * of its edges (100 µs in (98.3, 114.7] µs) placed uniformly over all of it moves the mean by up
 * to 10 %; the kernel, which spreads a cell over the rq_lat buckets, tells the cells apart. On a
 * simulated run (test/model/deconvolve.test.ts) one cell per bucket placed a fixed 50 µs device
 * at +15.7 %, four at −2 %.
 */
const CELLS = 4;
/** Mass below which a cell is dropped from the result (and from the next round's draws). */
const NEGLIGIBLE = 1e-4;
/** Waits the pooled kernel is built from (quantiles of the round's): its cost is cells × this. */
const POOLED_WAITS = 64;

/** F_D's grid: CELLS equal cells of each bucket FIRST..top, as uniform pieces. */
interface Grid {
  lo: Float64Array;
  hi: Float64Array;
}

function gridUpTo(top: number): Grid {
  const n = (top - FIRST + 1) * CELLS;
  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  for (let c = 0; c < n; c++) {
    const i = FIRST + Math.floor(c / CELLS);
    const width = (upperNs(i) - lowerNs(i)) / CELLS;
    lo[c] = lowerNs(i) + (c % CELLS) * width;
    hi[c] = lo[c]! + width;
  }
  return { lo, hi };
}

/** The grid cell holding v (clamped to the grid). */
function cellAt(g: Grid, v: number): number {
  const i = bucketHolding(v);
  if (i < FIRST) return 0;
  const width = (upperNs(i) - lowerNs(i)) / CELLS;
  const c = (i - FIRST) * CELLS + Math.min(CELLS - 1, Math.max(0, Math.floor((v - lowerNs(i)) / width)));
  return Math.min(c, g.lo.length - 1);
}

/**
 * F_D from the measured rq_lat masses (flat index, count pairs, as BucketHist.buckets), starting
 * from a flat prior over every bucket up to rq_lat's highest (D ≤ rq_lat: rq_lat starts at or
 * before the issue and ends at or after the completion). Undefined without rq_lat samples.
 */
export function deconvolveDeviceTime(rqLat: readonly number[], run: ObserveRun): Dist | undefined {
  const measured = new Float64Array(NB);
  let total = 0;
  let top = -1;
  for (let j = 0; j + 1 < rqLat.length; j += 2) {
    const i = rqLat[j]!;
    const c = rqLat[j + 1]!;
    if (!(c > 0) || !Number.isInteger(i) || i < FIRST || i >= NB - 1) continue;
    measured[i] = measured[i]! + c;
    total += c;
    top = Math.max(top, i);
  }
  if (!(total > 0)) return undefined;
  for (let j = 0; j < NB; j++) measured[j] = measured[j]! / total;

  const g = gridUpTo(top);
  const n = g.lo.length;
  let w = new Float64Array(n).fill(1 / n);
  const drawn = new Float64Array(n);
  const kernel = new Float64Array(n * NB);
  const pooled = new Float64Array(n * NB);
  const simulated = new Float64Array(NB);
  // each simulated I/O's rq_lat − D, in a typed buffer (sorted natively, no boxed doubles)
  let waits = new Float64Array(1024);
  let nWaits = 0;
  for (let k = 0; k < ROUNDS; k++) {
    drawn.fill(0);
    kernel.fill(0);
    nWaits = 0;
    run(distOf(g, w), (d, r) => {
      const c = cellAt(g, d);
      drawn[c] = drawn[c]! + 1;
      const at = c * NB + bucketHolding(r);
      kernel[at] = kernel[at]! + 1;
      if (nWaits === waits.length) {
        const bigger = new Float64Array(2 * waits.length);
        bigger.set(waits);
        waits = bigger;
      }
      waits[nWaits++] = Math.max(0, r - d);
    });
    if (!nWaits) break;
    pooledKernel(g, w, quantiles(waits.subarray(0, nWaits), POOLED_WAITS), pooled);
    // each cell's kernel: its own draws, shrunk towards the pooled one
    simulated.fill(0);
    for (let c = 0; c < n; c++) {
      if (!(w[c]! > 0)) continue;
      const m = drawn[c]!;
      for (let j = 0; j < NB; j++) {
        const at = c * NB + j;
        kernel[at] = (kernel[at]! + POOLED_WEIGHT * pooled[at]!) / (m + POOLED_WEIGHT);
        simulated[j] = simulated[j]! + w[c]! * kernel[at]!;
      }
    }
    const next = new Float64Array(n);
    let sum = 0;
    for (let c = 0; c < n; c++) {
      if (!(w[c]! > 0)) continue;
      let f = 0;
      for (let j = 0; j < NB; j++) if (simulated[j]! > 0) f += (kernel[c * NB + j]! * measured[j]!) / simulated[j]!;
      next[c] = w[c]! * f;
      sum += next[c]!;
    }
    if (!(sum > 0)) break;
    for (let c = 0; c < n; c++) next[c] = next[c]! / sum >= NEGLIGIBLE ? next[c]! / sum : 0;
    w = next;
  }
  return distOf(g, w);
}

/**
 * The pooled kernel: for each cell c with mass, P(bucket of (D + wait) = j) with D at the cell's
 * quarter points and the wait drawn from every simulated I/O's (rq_lat − D), in row c of `out`.
 */
function pooledKernel(g: Grid, w: Float64Array, waits: Float64Array, out: Float64Array): void {
  out.fill(0);
  const share = 1 / waits.length / 2;
  for (let c = 0; c < g.lo.length; c++) {
    if (!(w[c]! > 0)) continue;
    for (const q of [0.25, 0.75]) {
      const d = g.lo[c]! + q * (g.hi[c]! - g.lo[c]!);
      // waits ascending, so the buckets of d + wait are too: walk them up from d's
      let j = bucketHolding(d);
      for (const x of waits) {
        while (j < NB - 1 && upperNs(j) < d + x) j++;
        out[c * NB + j] = out[c * NB + j]! + share;
      }
    }
  }
}

/** At most n values spread evenly over the sample, ascending (all of it, sorted in place, when it is smaller). */
function quantiles(xs: Float64Array, n: number): Float64Array {
  xs.sort();
  if (xs.length <= n) return xs;
  return Float64Array.from({ length: n }, (_, k) => xs[Math.floor(((k + 0.5) * xs.length) / n)]!);
}

/** Cell masses (normalised) as a distribution of uniform pieces. */
function distOf(g: Grid, w: Float64Array): Dist {
  let sum = 0;
  for (let c = 0; c < w.length; c++) sum += w[c]!;
  const pieces = [];
  for (let c = 0; c < w.length; c++) if (w[c]! > 0) pieces.push({ lo: g.lo[c]!, hi: g.hi[c]!, p: w[c]! / sum });
  return { pieces };
}
