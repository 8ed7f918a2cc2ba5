import { describe, expect, it } from 'vitest';
import type { BpfSnapshot, BucketHist } from '../../src/bpf/types.js';
import { checkHist, flatBuckets, histIncrease, histReset, histSum } from '../../src/model/hist.js';
import { Accumulator, SlidingWindow } from '../../src/model/window.js';

const h = (buckets: [number, number][], sumNs = 0): BucketHist => ({
  buckets: flatBuckets(buckets),
  count: buckets.reduce((a, [, c]) => a + c, 0),
  sumNs,
  aux0: 0,
  aux1: 0,
});

function bpf(tNs: number, devs: Record<string, { rq?: BucketHist; ios?: number }>): BpfSnapshot {
  return {
    takenAtNs: tNs,
    pollPath: 'fentry',
    programs: {},
    devices: Object.entries(devs).map(([dev, d]) => ({ dev, hists: d.rq ? { rq_lat: d.rq } : {} })),
    rings: [],
    counters: {},
    deviceCounters: Object.fromEntries(Object.entries(devs).map(([dev, d]) => [dev, d.ios === undefined ? {} : { polled_ios: d.ios }] as [string, Record<string, number>])),
  };
}

describe('histogram increase', () => {
  it('diffs bucket by bucket and detects resets', () => {
    const a = h([[40, 5], [41, 2]], 700);
    const b = h([[40, 7], [41, 2], [45, 1]], 1000);
    expect(histReset(a, b)).toBe(false);
    expect(histIncrease(a, b)).toEqual({ buckets: [40, 2, 45, 1], count: 3, sumNs: 300, aux0: 0, aux1: 0 });
    // a bucket went down although the count grew: the loader restarted in between
    const c = h([[40, 1], [50, 9]], 2000);
    expect(histReset(b, c)).toBe(true);
    expect(histIncrease(b, c)).toBe(c);
  });
});

describe('histogram increase with per-bucket sums', () => {
  const summed = (b: BucketHist, sums: [number, number][]): BucketHist => ({ ...b, bucketSumsNs: flatBuckets(sums) });
  it('diffs and adds the sums with the buckets where both sides have them, and drops them where one has none', () => {
    const a = summed(h([[40, 5], [41, 2]], 700), [[40, 500], [41, 200]]);
    const b = summed(h([[40, 7], [41, 2], [45, 1]], 1000), [[40, 690], [41, 200], [45, 110]]);
    expect(histIncrease(a, b)).toEqual({ buckets: [40, 2, 45, 1], bucketSumsNs: [40, 190, 45, 110], count: 3, sumNs: 300, aux0: 0, aux1: 0 });
    expect(histSum(a, b).bucketSumsNs).toEqual([40, 1190, 41, 400, 45, 110]);
    expect(histIncrease(h([[40, 5], [41, 2]], 700), b)).not.toHaveProperty('bucketSumsNs');
    expect(histSum(a, h([[40, 1]], 100))).not.toHaveProperty('bucketSumsNs');
  });
  it('takes a bucket sum that went down as a reset, as a count that went down', () => {
    const a = summed(h([[40, 5]], 500), [[40, 500]]);
    expect(histReset(a, summed(h([[40, 6]], 600), [[40, 450]]))).toBe(true);
    expect(histReset(a, summed(h([[40, 6]], 600), [[40, 600]]))).toBe(false);
  });
  it('refuses malformed sums with a clear error', () => {
    expect(() => checkHist(summed(h([[40, 1]], 100), [[200, 100]]), 'dev_spun')).toThrow(/dev_spun: bucket sum index 200 is not on the grid/);
    expect(() => checkHist({ ...h([[40, 1]], 100), bucketSumsNs: [40] }, 'dev_spun')).toThrow(/not index, ns pairs/);
  });
});

describe('sliding window', () => {
  const feed = (w: SlidingWindow, acc: Accumulator, tS: number, devs: Parameters<typeof bpf>[1]) =>
    w.push({ tMs: 1_000_000 + tS * 1000, monoNs: tS * 1e9, devices: acc.update(bpf(tS * 1e9, devs)) });

  it('says the highest sample rate read over the delta', () => {
    const w = new SlidingWindow(60);
    const acc = new Accumulator();
    const rates = [1, 64, 16];
    rates.forEach((sampleRate, i) => w.push({ tMs: 1_000_000 + i * 1000, monoNs: i * 1e9, sampleRate, devices: acc.update(bpf(i * 1e9, { '259:0': { rq: h([[40, 10 + i]], 100), ios: i } })) }));
    expect(w.delta('259:0')!.sampleRate).toBe(64);
    const plain = new SlidingWindow(60);
    const acc2 = new Accumulator();
    for (let i = 0; i < 2; i++) plain.push({ tMs: 1_000_000 + i * 1000, devices: acc2.update(bpf(i * 1e9, { '259:0': { rq: h([[40, 10 + i]], 100), ios: i } })) });
    expect(plain.delta('259:0')!.sampleRate).toBeUndefined();
  });

  it('diffs the latest entry against the oldest within the window and trims older ones', () => {
    const w = new SlidingWindow(60);
    const acc = new Accumulator();
    for (let t = 0; t <= 120; t += 15) feed(w, acc, t, { '259:0': { rq: h([[40, t * 10]], t * 100), ios: t * 10 } });
    // entries at 60, 75, …, 120 remain: 5 of them, 60 s
    expect(w.size).toBe(5);
    const d = w.delta('259:0')!;
    expect(d.seconds).toBe(60);
    expect(d.counters['polled_ios']).toBe(600);
    expect(d.hists.rq_lat).toMatchObject({ buckets: [40, 600], count: 600, sumNs: 6000 });
    expect(w.lastInterval('259:0')!.counters['polled_ios']).toBe(150);
  });

  it('keeps an entry exactly one window old despite scrape jitter', () => {
    const w = new SlidingWindow(60);
    const acc = new Accumulator();
    feed(w, acc, 0, { a: { ios: 0 } });
    feed(w, acc, 60.5, { a: { ios: 605 } });
    expect(w.delta('a')!.seconds).toBe(60.5);
  });

  it('absorbs counter and histogram resets (loader restart) like PromQL increase()', () => {
    const w = new SlidingWindow(60);
    const acc = new Accumulator();
    feed(w, acc, 0, { a: { rq: h([[40, 100]]), ios: 100 } });
    feed(w, acc, 10, { a: { rq: h([[40, 150]]), ios: 150 } });
    feed(w, acc, 20, { a: { rq: h([[40, 30]]), ios: 30 } }); // restarted: 30 since
    feed(w, acc, 30, { a: { rq: h([[40, 50]]), ios: 50 } });
    const d = w.delta('a')!;
    expect(d.counters['polled_ios']).toBe(50 + 30 + 20);
    expect(d.hists.rq_lat!.count).toBe(100);
  });

  it('measures a device that appears mid-window from its first reading, and forgets one that disappears', () => {
    const w = new SlidingWindow(60);
    const acc = new Accumulator();
    feed(w, acc, 0, { a: { ios: 0 } });
    feed(w, acc, 10, { a: { ios: 10 }, b: { ios: 1000 } });
    feed(w, acc, 20, { a: { ios: 20 }, b: { ios: 1500 } });
    expect(w.delta('b')).toMatchObject({ seconds: 10, counters: { polled_ios: 500 } });
    feed(w, acc, 30, { a: { ios: 30 } });
    expect(w.delta('b')).toBeUndefined();
    // b comes back (re-attached, counters from zero): a new epoch, not diffed against its old life
    feed(w, acc, 40, { a: { ios: 40 }, b: { ios: 7 } });
    expect(w.delta('b')).toBeUndefined();
    feed(w, acc, 50, { a: { ios: 50 }, b: { ios: 9 } });
    expect(w.delta('b')).toMatchObject({ seconds: 10, counters: { polled_ios: 2 } });
    expect(w.delta('a')).toMatchObject({ seconds: 50, counters: { polled_ios: 50 } });
  });

  it('starts afresh when the clock goes backwards (replay loop)', () => {
    const w = new SlidingWindow(60);
    const acc = new Accumulator();
    feed(w, acc, 100, { a: { ios: 1000 } });
    feed(w, acc, 110, { a: { ios: 1100 } });
    feed(w, acc, 0, { a: { ios: 0 } });
    expect(w.size).toBe(1);
    expect(w.delta('a')).toBeUndefined();
    feed(w, acc, 10, { a: { ios: 100 } });
    expect(w.delta('a')).toMatchObject({ seconds: 10, counters: { polled_ios: 100 } });
  });

  it('thins entries by time: a bounded number whatever the scrape rate, the oldest anchoring the window', () => {
    const w = new SlidingWindow(60, 6); // older entries at least 10 s apart
    const acc = new Accumulator();
    let most = 0;
    for (let t = 0; t <= 200; t += 0.25) {
      feed(w, acc, t, { a: { ios: t * 4 } });
      most = Math.max(most, w.size);
    }
    expect(most).toBeLessThanOrEqual(6 + 3);
    // span within one spacing of the window, and the last interval is the last scrape's
    const d = w.delta('a')!;
    expect(d.seconds).toBeGreaterThanOrEqual(50);
    expect(d.seconds).toBeLessThanOrEqual(60 * 1.02);
    expect(d.counters['polled_ios']).toBeCloseTo(d.seconds * 4, 6);
    expect(w.lastInterval('a')).toMatchObject({ seconds: 0.25, counters: { polled_ios: 1 } });
  });

  it('rejects histograms off the grid with a clear error', () => {
    const acc = new Accumulator();
    expect(() => acc.update(bpf(0, { a: { rq: h([[144, 1]]) } }))).toThrow(/bucket index 144 is not on the grid/);
    expect(() => acc.update(bpf(0, { a: { rq: h([[3, -1]]) } }))).toThrow(/count -1/);
  });
});
