import { describe, expect, it } from 'vitest';
import { bucketOf, upperNs } from '../../src/model/buckets.js';
import { estimateDeviceTime } from '../../src/model/censored.js';
import { distFromMasses, mean } from '../../src/model/dist.js';
import { histOf, normal, prng } from './helpers.js';
import { bucketPairs } from '../../src/model/hist.js';

/** P(D ≤ upper(i)) of an estimate, from its bucket masses. */
const cdfAt = (masses: [number, number][], i: number) => masses.reduce((a, [j, p]) => (j <= i ? a + p : a), 0);

describe('device-time estimator', () => {
  it('is the plain empirical distribution when nothing is censored', () => {
    const exact = histOf([1000, 1000, 3000, 9000]);
    const est = estimateDeviceTime(exact, undefined)!;
    expect(est.source).toBe('empirical');
    expect(est.masses).toEqual([
      [bucketOf(1000), 0.5],
      [bucketOf(3000), 0.25],
      [bucketOf(9000), 0.25],
    ]);
    expect(est.unresolved).toBe(0);
  });

  it('is undefined without samples and an upper bound with only censored ones', () => {
    expect(estimateDeviceTime(undefined, undefined)).toBeUndefined();
    const est = estimateDeviceTime(undefined, histOf([5000, 5000]))!;
    expect(est).toMatchObject({ source: 'censored_only', unresolved: 1, censored: 2, resolvedMasses: [] });
    expect(est.masses).toEqual([[bucketOf(5000), 1]]);
    expect(est.unresolvedMasses).toEqual(est.masses);
  });

  it('matches the hand-computed product-limit estimate', () => {
    // exact at buckets of 2000 and 8000, censored (D ≤ x) at 4000 and 8000:
    //   top bucket (8000): 4 samples ≤ it, the censored one in it counts ½ → n = 3.5, e = 1 → mass 2/7, F = 5/7
    //   4000: no exact sample; the censored one leaves the risk set → 1 sample below
    //   2000: n = 1 (the exact 2000), e = 1 → mass 5/7, F = 0
    const est = estimateDeviceTime(histOf([2000, 8000]), histOf([4000, 8000]))!;
    expect(est.source).toBe('censored_km');
    expect(est.masses.map(([i]) => i)).toEqual([bucketOf(2000), bucketOf(8000)]);
    expect(est.masses[0]![1]).toBeCloseTo(5 / 7, 12);
    expect(est.masses[1]![1]).toBeCloseTo(2 / 7, 12);
    expect(est.unresolved).toBe(0);
  });

  it('puts mass it cannot resolve below the lowest exact sample at the censored samples’ bounds', () => {
    // censored at 1000 lies below every exact sample: the data only say D ≤ 1000 for it
    const est = estimateDeviceTime(histOf([8000, 9000]), histOf([1000]))!;
    expect(est.unresolved).toBeCloseTo(1 / 3, 12);
    expect(est.masses.find(([i]) => i === bucketOf(1000))![1]).toBeCloseTo(1 / 3, 12);
    // apart from the resolved part, so the caller can place it at the found time and bound it
    expect(est.unresolvedMasses).toEqual([[bucketOf(1000), expect.closeTo(1 / 3, 12)]]);
    expect(est.resolvedMasses.map(([i]) => i)).toEqual([bucketOf(8000), bucketOf(9000)]);
    expect(est.resolvedMasses.reduce((a, [, p]) => a + p, 0)).toBeCloseTo(2 / 3, 12);
  });

  it('splits the unresolved mass over every censored bucket at or below the lowest exact one', () => {
    // censored at 1000 and 3000 (3 and 1 samples), exact only at 8000 and above: 4 of 6 unresolved
    const est = estimateDeviceTime(histOf([8000, 20_000]), histOf([1000, 1000, 1000, 3000]))!;
    expect(est.unresolved).toBeCloseTo(4 / 6, 12);
    const byBucket = new Map(est.unresolvedMasses);
    expect(byBucket.get(bucketOf(1000))).toBeCloseTo((4 / 6) * (3 / 4), 12);
    expect(byBucket.get(bucketOf(3000))).toBeCloseTo((4 / 6) * (1 / 4), 12);
    expect([...est.resolvedMasses, ...est.unresolvedMasses].reduce((a, [, p]) => a + p, 0)).toBeCloseTo(1, 12);
  });

  it('recovers a known F_D from simulated left censoring', () => {
    // D: lognormal-like around 10 µs with a tail; C (wake-up time = sleep + wake overhead) varies
    // independently of D, as the kernel's sleep does over a window. Observe max(D, C) and D > C.
    const rand = prng(42);
    const n = 200_000;
    const truth: number[] = [];
    const exact: number[] = [];
    const censored: number[] = [];
    for (let k = 0; k < n; k++) {
      const D = Math.exp(normal(rand, Math.log(10_000), 0.35));
      const C = 2000 + rand() * 14_000 + Math.max(0, normal(rand, 1000, 300));
      truth.push(D);
      if (D > C) exact.push(D);
      else censored.push(C);
    }
    const est = estimateDeviceTime(histOf(exact), histOf(censored))!;
    expect(est.source).toBe('censored_km');
    expect(censored.length / n).toBeGreaterThan(0.3); // heavy censoring: the test means something
    const want = histOf(truth);
    const wantMasses = bucketPairs(want).map(([i, c]) => [i, c / n] as [number, number]);
    // CDF at every bound within 0.02, mean within 2%
    for (let i = bucketOf(3000); i <= bucketOf(40_000); i++) {
      expect(Math.abs(cdfAt(est.masses, i) - cdfAt(wantMasses, i)), `le=${upperNs(i)}`).toBeLessThan(0.02);
    }
    const mEst = mean(distFromMasses(est.masses)!);
    const mTrue = mean(distFromMasses(wantMasses)!);
    expect(Math.abs(mEst / mTrue - 1)).toBeLessThan(0.02);
    // and the naive reading (censored values taken as D) is visibly worse: the estimator matters
    const naive = histOf([...exact, ...censored]);
    const naiveMasses = bucketPairs(naive).map(([i, c]) => [i, c / n] as [number, number]);
    expect(Math.abs(mean(distFromMasses(naiveMasses)!) / mTrue - 1)).toBeGreaterThan(0.05);
  });
});
