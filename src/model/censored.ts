// F_D, the device-time distribution, from exact and left-censored samples on the bucket grid.
//
// Under hybrid polling an I/O still pending after the sleep is timed exactly (`dev_spun`), one
// already complete at wake-up only says D ≤ x (`found_slept`, x = issue → found). That is left
// censoring: we observe max(D, C) and whether D > C, C being the wake-up time. The product-limit
// (Kaplan–Meier) estimator runs on the reversed time axis, from the top bucket down:
//   F(upper(i−1)) = F(upper(i)) · (1 − eᵢ / nᵢ),  nᵢ = samples (exact or censored) in buckets ≤ i,
// so bucket i gets mass F(upper(i)) · eᵢ / nᵢ. A censored sample leaves the risk set below its own
// bucket (it only says D ≤ x). Inside its own bucket it counts half (the actuarial life-table
// rule): its x lies above about half of that bucket's exact samples, so counting it fully would
// bias F upwards (measured: +0.05 at the low end with 20%-wide buckets, see the tests).
// Mass left below the lowest exact sample cannot be placed by the data: each censored sample at or
// below that bucket only says D ≤ its found time. It is returned apart (`unresolvedMasses`, by the
// censored samples' buckets) so that the caller places it at the found times (an upper bound on
// D) and can bound what the placement changes; `unresolved` is its total.
import type { BucketHist } from '../bpf/types.js';
import { NB } from './buckets.js';
import type { DeviceTimeSource } from './types.js';

export interface DeviceTimeEstimate {
  /** probability per bucket index, ascending, Σ = 1: resolved and unresolved together (charts) */
  masses: [number, number][];
  /** the part placed by exact samples: probability per dev_spun bucket, ascending, Σ = 1 − unresolved */
  resolvedMasses: [number, number][];
  /** the part the data cannot place: probability per found_slept bucket carrying it, ascending, Σ = unresolved */
  unresolvedMasses: [number, number][];
  source: Exclude<DeviceTimeSource, 'rq_lat'>;
  /** exact + censored samples */
  samples: number;
  censored: number;
  /** probability mass the estimator could not place below the lowest exact sample */
  unresolved: number;
}

const dense = (h: BucketHist | undefined): Float64Array => {
  const a = new Float64Array(NB);
  const b = h?.buckets ?? [];
  for (let j = 0; j < b.length; j += 2) {
    const i = b[j]!;
    const c = b[j + 1]!;
    if (Number.isInteger(i) && i >= 0 && i < NB && c > 0) a[i]! += c;
  }
  return a;
};

const normalised = (a: Float64Array): [number, number][] => {
  const total = a.reduce((x, y) => x + y, 0);
  const out: [number, number][] = [];
  a.forEach((v, i) => {
    if (v > 0) out.push([i, v / total]);
  });
  return out;
};

/** undefined when there is no sample at all. */
export function estimateDeviceTime(exact: BucketHist | undefined, censored: BucketHist | undefined): DeviceTimeEstimate | undefined {
  const e = dense(exact);
  const c = dense(censored);
  const ne = e.reduce((x, y) => x + y, 0);
  const nc = c.reduce((x, y) => x + y, 0);
  const samples = ne + nc;
  if (samples === 0) return undefined;
  if (nc === 0) {
    const masses = normalised(e);
    return { masses, resolvedMasses: masses, unresolvedMasses: [], source: 'empirical', samples, censored: 0, unresolved: 0 };
  }
  if (ne === 0) {
    const masses = normalised(c);
    return { masses, resolvedMasses: [], unresolvedMasses: masses, source: 'censored_only', samples, censored: nc, unresolved: 1 };
  }

  const mass = new Float64Array(NB);
  let atRisk = samples;
  let F = 1;
  let lowestExact = NB;
  for (let i = NB - 1; i >= 0; i--) {
    // atRisk is the count in buckets ≤ i
    if (e[i]! > 0) {
      const n = atRisk - c[i]! / 2;
      mass[i] = (F * e[i]!) / n;
      F *= 1 - e[i]! / n;
      lowestExact = i;
    }
    atRisk -= e[i]! + c[i]!;
  }
  const unresolved = F > 1e-12 ? F : 0;
  // Censored samples at or below the lowest exact bucket carry the rest, in proportion to their counts.
  let below = 0;
  if (unresolved > 0) for (let i = 0; i <= lowestExact; i++) below += c[i]!;
  // Σ mass + unresolved = 1 up to rounding; normalise both parts by the same total.
  let total = unresolved;
  for (let i = 0; i < NB; i++) total += mass[i]!;
  const masses: [number, number][] = [];
  const resolvedMasses: [number, number][] = [];
  const unresolvedMasses: [number, number][] = [];
  for (let i = 0; i < NB; i++) {
    const r = mass[i]! / total;
    const u = below > 0 && i <= lowestExact && c[i]! > 0 ? (unresolved * c[i]!) / below / total : 0;
    if (r > 0) resolvedMasses.push([i, r]);
    if (u > 0) unresolvedMasses.push([i, u]);
    if (r + u > 0) masses.push([i, r + u]);
  }
  return { masses, resolvedMasses, unresolvedMasses, source: 'censored_km', samples, censored: nc, unresolved: unresolved / total };
}
