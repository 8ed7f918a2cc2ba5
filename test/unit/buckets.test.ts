import { describe, expect, it } from 'vitest';
import { bucketHolding, bucketOf, lowerNs, NB, OVERFLOW, upperNs } from '../../src/model/buckets.js';

describe('bucket grid', () => {
  it('has exact small buckets and the documented first bounds', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map(upperNs)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]);
    expect(upperNs(OVERFLOW)).toBe(Infinity);
    expect(upperNs(NB - 2)).toBe(1.5 * 2 ** 36);
  });

  it('puts every value in the bucket whose (lower, upper] contains it', () => {
    const values = [...Array(5000).keys(), 65536, 65537, 1e6, 123456789, 2 ** 30, 2 ** 30 + 1, 1.5 * 2 ** 36];
    for (const v of values) {
      const i = bucketOf(v);
      expect(v, `v=${v} i=${i}`).toBeLessThanOrEqual(upperNs(i));
      expect(v, `v=${v} i=${i}`).toBeGreaterThan(lowerNs(i));
    }
    expect(bucketOf(1.5 * 2 ** 36 + 1)).toBe(OVERFLOW);
  });

  it('places real-valued times as bucketOf places whole nanoseconds, a fraction past a bound in the next bucket', () => {
    for (const v of [...Array(5000).keys(), 65536, 65537, 1e6, 123456789, 2 ** 30, 2 ** 30 + 1, 1.5 * 2 ** 36, 1.5 * 2 ** 36 + 1]) expect(bucketHolding(v), `v=${v}`).toBe(bucketOf(v));
    for (const v of [20480.5, 99_999.25, 4.5, 0.25]) {
      const i = bucketHolding(v);
      expect(v, `v=${v} i=${i}`).toBeLessThanOrEqual(upperNs(i));
      expect(v, `v=${v} i=${i}`).toBeGreaterThan(lowerNs(i));
    }
  });

  it('bounds increase strictly', () => {
    for (let i = 1; i < NB; i++) expect(upperNs(i)).toBeGreaterThan(upperNs(i - 1));
  });
});
