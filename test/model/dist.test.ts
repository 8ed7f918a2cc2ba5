import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketOf, lowerNs, upperNs } from '../../src/model/buckets.js';
import { atom, bucketPieceAt, cdf, distFromHist, expectPositive, mean, mixture, quantile, restrictAbove, shiftedBy, uniform } from '../../src/model/dist.js';
import { countLe, cumulativeLe } from '../../src/model/hist.js';
import { histOf } from './helpers.js';

/** Numerical E[(shift + U1 − U2 + U3)⁺] by a fine midpoint grid, for an independent check. */
function numeric3(a: [number, number], b: [number, number], c: [number, number], shift: number, k = 120): number {
  let acc = 0;
  const at = (r: [number, number], j: number) => r[0] + ((j + 0.5) / k) * (r[1] - r[0]);
  for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) for (let l = 0; l < k; l++) acc += Math.max(0, shift + at(a, i) - at(b, j) + at(c, l));
  return acc / k ** 3;
}

describe('expectPositive', () => {
  it('is exact for atoms and a single uniform', () => {
    expect(expectPositive([{ dist: atom(5), sign: 1 }], -3, 1)).toBe(2);
    expect(expectPositive([{ dist: atom(5), sign: 1 }], -5, 0)).toBe(0); // strict > 0
    // E[(U − t)⁺] for U ~ U[0, 10], t = 4: (10 − 4)² / 20 = 1.8
    expect(expectPositive([{ dist: uniform(0, 10), sign: 1 }], -4, 1)).toBeCloseTo(1.8, 12);
    expect(expectPositive([{ dist: uniform(0, 10), sign: 1 }], -4, 0)).toBeCloseTo(0.6, 12);
    expect(expectPositive([{ dist: uniform(0, 10), sign: -1 }], 4, 1)).toBeCloseTo(0.8, 12); // E[(4 − U)⁺] = 16/20
  });

  it('matches numerical integration for a sum of three uniforms with mixed signs', () => {
    const A: [number, number] = [9000, 11_000];
    const B: [number, number] = [500, 1700];
    const C: [number, number] = [3000, 4000];
    for (const shift of [-14_000, -13_000, -12_500, -11_000]) {
      const exact = expectPositive(
        [
          { dist: uniform(...A), sign: 1 },
          { dist: uniform(...B), sign: -1 },
          { dist: uniform(...C), sign: 1 },
        ],
        shift,
        1,
      );
      expect(Math.abs(exact - numeric3(A, B, C, shift))).toBeLessThan(0.5);
    }
  });

  it('stays accurate when a very narrow piece meets a very wide one', () => {
    // D in a 0.2 s wide bucket near 1 s, O an atom-like 1 ns wide piece: no catastrophic cancellation
    const v = expectPositive(
      [
        { dist: uniform(0.9e9, 1.1e9), sign: 1 },
        { dist: uniform(1000, 1001), sign: -1 },
      ],
      -1e9,
      1,
    );
    const want = (0.1e9 - 1000.5) ** 2 / (2 * 0.2e9);
    expect(Math.abs(v / want - 1)).toBeLessThan(1e-4);
  });
});

describe('distributions on the bucket grid', () => {
  it('turn a bucket into a uniform piece over (lower, upper], small buckets into atoms', () => {
    const h = histOf([3, 10_000, 10_000, 12_000]);
    const d = distFromHist(h)!;
    expect(d.pieces).toEqual([
      { lo: 3, hi: 3, p: 0.25 },
      { lo: lowerNs(bucketOf(10_000)), hi: upperNs(bucketOf(10_000)), p: 0.5 },
      { lo: lowerNs(bucketOf(12_000)), hi: upperNs(bucketOf(12_000)), p: 0.25 },
    ]);
    // P(X ≤ le) at every bound equals the cumulative bucket count: Prometheus semantics
    for (const { leNs, count } of cumulativeLe(h)) expect(cdf(d, leNs)).toBeCloseTo(count / h.count, 12);
    expect(countLe(h, 10_240)).toBe(3); // 10000 ∈ (8192, 10240], 12000 above
    expect(countLe(h, 10_239)).toBe(1);
  });

  it('have consistent mean, cdf and quantile', () => {
    const d = mixture([
      { dist: uniform(0, 10), weight: 1 },
      { dist: atom(20), weight: 1 },
    ]);
    expect(mean(d)).toBe(12.5);
    expect(cdf(d, 5)).toBe(0.25);
    expect(quantile(d, 0.25)).toBe(5);
    expect(quantile(d, 0.9)).toBe(20);
    const r = restrictAbove(d, 6);
    expect(r.pieces).toEqual([
      { lo: 6, hi: 10, p: 0.2 },
      { lo: 20, hi: 20, p: 0.5 },
    ]);
  });
});

describe('shiftedBy', () => {
  it('moves every piece by x: the mean by x, the shape kept', () => {
    const d = mixture([{ dist: uniform(10, 20), weight: 1 }, { dist: atom(40), weight: 3 }]);
    const s = shiftedBy(d, -5);
    expect(mean(s)).toBeCloseTo(mean(d) - 5, 12);
    expect(quantile(s, 0.9)).toBeCloseTo(quantile(d, 0.9) - 5, 12);
    expect(s.pieces.map((q) => q.p)).toEqual(d.pieces.map((q) => q.p));
  });
});

describe('bucketPieceAt', () => {
  it('is the widest uniform piece inside the bucket with the given mean (clamped to the bucket)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 5, max: 140 }), fc.double({ min: -0.2, max: 1.2, noNaN: true }), (i, f) => {
        const lo = lowerNs(i);
        const hi = upperNs(i);
        const q = bucketPieceAt(i, 0.5, lo + f * (hi - lo));
        const m = Math.min(hi, Math.max(lo, lo + f * (hi - lo)));
        expect(q.p).toBe(0.5);
        expect(q.lo).toBeGreaterThanOrEqual(lo - 1e-9 * hi);
        expect(q.hi).toBeLessThanOrEqual(hi + 1e-9 * hi);
        expect(Math.abs((q.lo + q.hi) / 2 - m)).toBeLessThanOrEqual(1e-9 * hi);
        // one end at a bucket bound: no wider piece with that mean fits
        expect(Math.min(Math.abs(q.lo - lo), Math.abs(q.hi - hi))).toBeLessThan(1e-9 * hi + 1e-6);
      }),
    );
  });

  it('keeps the exact buckets 0–4 as atoms', () => {
    expect(bucketPieceAt(3, 1, 2.5)).toEqual({ lo: 3, hi: 3, p: 1 });
  });
});
