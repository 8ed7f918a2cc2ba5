// --bpf.sample on the real kernel: three loaders (1 in 1, 1 in 16, 1 in 64 completions timed)
// watch the same fio run on a loop device, so any difference between them is the sampling's.
// Counts and bytes must be identical; the scaled histograms must agree with the full one within
// the sampling error, computed from the data (binomial for the count, the standard error of a
// mean of k of n latencies for the mean). Needs root, BTF, fio.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BpfCollector } from '../../src/bpf/collector.js';
import type { BpfSnapshot, BucketHist } from '../../src/bpf/types.js';
import { createLogger } from '../../src/log.js';
import { upperNs } from '../../src/model/buckets.js';
import { bpfSkipReason, ensureLoader, fio, LOADER, loopDevice, warnSkip, type LoopDevice } from './helpers.js';
import { bucketPairs } from '../../src/model/hist.js';

const skip = warnSkip('test/bpf/sampling.test.ts', bpfSkipReason(['fio', 'losetup']));
const logs: string[] = [];
const log = createLogger('info', (l) => logs.push(l));
const RATES = [1, 16, 64] as const;

async function collector(sample: number): Promise<BpfCollector> {
  const c = await BpfCollector.create({ mode: 'on', loader: LOADER, timeoutMs: 5000, log, sample });
  const end = Date.now() + 30_000;
  while (c.status().state !== 'running') {
    if (Date.now() > end) throw new Error(`loader did not start: ${JSON.stringify(c.status())}\n${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return c;
}

const EMPTY: BucketHist = { buckets: [], count: 0, sumNs: 0, aux0: 0, aux1: 0 };
const rqLat = (s: BpfSnapshot | undefined, dev: string) => s?.devices.find((d) => d.dev === dev)?.hists.rq_lat ?? EMPTY;
const ios = (s: BpfSnapshot | undefined, dev: string) => s?.deviceCounters[dev]?.['ios'] ?? 0;

/** Standard deviation of the latencies in a histogram's buckets (bucket midpoints; the grid is 25 % wide). */
function stdDevNs(before: BucketHist, after: BucketHist): number {
  const prev = new Map(bucketPairs(before));
  let n = 0;
  let s = 0;
  let s2 = 0;
  for (const [i, c] of bucketPairs(after)) {
    const k = c - (prev.get(i) ?? 0);
    if (k <= 0) continue;
    const mid = i === 0 ? 0 : (upperNs(i - 1) + upperNs(i)) / 2;
    n += k;
    s += k * mid;
    s2 += k * mid * mid;
  }
  return Math.sqrt(Math.max(0, s2 / n - (s / n) ** 2));
}

describe.skipIf(skip)('sampling: 1 in 16 and 1 in 64 completions against every one, same fio run (root)', () => {
  let loop: LoopDevice;
  const cs: BpfCollector[] = [];

  beforeAll(async () => {
    ensureLoader();
    loop = loopDevice();
    for (const n of RATES) cs.push(await collector(n));
  });
  afterAll(async () => {
    for (const c of cs) await c.stop();
    loop?.detach();
  });

  it('keeps counts and bytes exact and the latency histogram within its sampling error', async () => {
    const s0 = await Promise.all(cs.map((c) => c.snapshot()));
    const r = await fio(loop.path, { seconds: 5, iodepth: 8 });
    const s1 = await Promise.all(cs.map((c) => c.snapshot()));
    const d = RATES.map((_, j) => {
      const h0 = rqLat(s0[j], loop.dev);
      const h1 = rqLat(s1[j], loop.dev);
      return { h0, h1, ios: ios(s1[j], loop.dev) - ios(s0[j], loop.dev), count: h1.count - h0.count, sumNs: h1.sumNs - h0.sumNs, bytes: h1.aux0 - h0.aux0 };
    });
    const full = d[0]!;
    const meanFull = full.sumNs / full.count;
    const sd = stdDevNs(full.h0, full.h1);
    const lines = [`fio ${r.ios} I/Os; every completion: ${full.ios} I/Os, mean ${(meanFull / 1000).toFixed(2)} µs, sd ${(sd / 1000).toFixed(2)} µs`];
    expect(r.ios).toBeGreaterThan(5000);
    expect(Math.abs(full.ios - r.ios) / r.ios).toBeLessThan(0.02); // the known tracepoint shortfall (src/bpf/README.md)
    expect(full.count).toBe(full.ios); // at 1 in 1 the histogram counts every completion
    RATES.forEach((n, j) => {
      const x = d[j]!;
      expect(s1[j]!.sampleRate).toBe(n);
      // the same events reach every program: exact counts and bytes, whatever the rate
      expect(x.ios).toBe(full.ios);
      expect(x.bytes).toBe(full.bytes);
      expect(x.bytes / x.ios).toBe(4096);
      if (n === 1) return;
      // k ~ Binomial(ios, 1/n) timed, count = n·k: variance ios·(n − 1); 4 σ
      const countTol = 4 * Math.sqrt(full.ios * (n - 1));
      // the mean of k of ios latencies: standard error sd/√k·√(1 − k/ios); 4 σ, plus 1 % for the
      // bucket-midpoint estimate of sd
      const k = x.count / n;
      const meanTol = (4 * sd * Math.sqrt(1 - k / full.ios)) / Math.sqrt(k) + 0.01 * meanFull;
      const mean = x.sumNs / x.count;
      lines.push(`1 in ${n}: ${k} timed, count ${x.count} (${(100 * (x.count / full.ios - 1)).toFixed(2)} %, tolerance ±${((100 * countTol) / full.ios).toFixed(2)} %), mean ${(mean / 1000).toFixed(2)} µs (${(100 * (mean / meanFull - 1)).toFixed(2)} %, tolerance ±${((100 * meanTol) / meanFull).toFixed(2)} %)`);
      expect(x.count % n).toBe(0);
      expect(Math.abs(x.count - full.ios)).toBeLessThanOrEqual(countTol);
      expect(Math.abs(mean - meanFull)).toBeLessThanOrEqual(meanTol);
    });
    console.info(`loop ${loop.dev}:\n  ${lines.join('\n  ')}`);
  });
});
