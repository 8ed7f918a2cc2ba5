// F_D at depth from rq_lat (src/model/deconvolve.ts): a run simulated on a known device gives the
// rq_lat histogram the BPF side would; the deconvolution, with the same poller, must find the
// device's shape from a flat prior, not only its mean.
import { describe, expect, it } from 'vitest';
import { bucketOf, midNs } from '../../src/model/buckets.js';
import { deconvolveDeviceTime, withoutTransient } from '../../src/model/deconvolve.js';
import { deviceTimeAtDepth } from '../../src/model/depth.js';
import { cdf, mean, uniform } from '../../src/model/dist.js';
import { Sampler, simulate, type SimConfig } from '../../src/model/poller/index.js';
import type { Dist } from '../../src/model/types.js';

const twoPoint = (a: number, b: number): Dist => ({ pieces: [{ lo: a, hi: a, p: 0.5 }, { lo: b, hi: b, p: 0.5 }] });

// the qd4-twopoint lab run's poller (7.3, io_uring hybrid at QD4, its measured costs and sleep)
const poller = {
  era: 'iouring_70', depth: 4, switchCostNs: 5400, sleepOnCpuNs: 3300,
  submission: { submitNs: 4950, callNs: 1130, leadNs: 3730, reapNs: 0, minComplete: 1, loopReapNs: 1830, lookNs: 700, lookPerIoNs: 150, wakeToLookNs: 1130 },
  rule: { kind: 'static', sleepNs: [13_900] },
} satisfies Omit<SimConfig, 'devices' | 'wake' | 'ios' | 'warmup' | 'seed'>;
const wake = uniform(3900, 4800);

/** A run on the true device, seeded apart from the model's: its rq_lat masses (flat index, count pairs, as the BPF side counts them), mean rq_lat and CPU per I/O. */
function measured(fD: Dist): { rqLat: number[]; rqLatMeanNs: number; cpuNs: number } {
  const counts = new Map<number, number>();
  const st = simulate({ ...poller, devices: [{ fD: new Sampler(fD), share: 1 }], wake: new Sampler(wake), ios: 20_000, warmup: 200, seed: 11,
    observe: (_d, r) => {
      const b = bucketOf(Math.round(r));
      counts.set(b, (counts.get(b) ?? 0) + 1);
    } });
  return { rqLat: [...counts].sort((a, b) => a[0] - b[0]).flat(), rqLatMeanNs: st.perDevice[0]!.rqLatNs / st.perDevice[0]!.ios, cpuNs: (st.spinNs + st.switchNs) / st.ios };
}

const model = (fD: Dist, observe: (d: number, r: number) => void) => {
  simulate({ ...poller, devices: [{ fD: new Sampler(fD), share: 1 }], wake: new Sampler(wake), ios: 800, warmup: 200, seed: 7, observe });
};

describe('F_D deconvolved from rq_lat at depth', () => {
  it('finds both points of a two-point device (20 / 100 µs) whose rq_lat holds up to 60 µs of waiting', () => {
    const truth = twoPoint(20_000, 100_000);
    const fD = deconvolveDeviceTime(measured(truth).rqLat, model)!;
    // its pieces are the histogram's buckets, uniform over 20 % of their value: the mean within 10 %
    // (the model then fits the mean to rq_lat's, deviceTimeAtDepth; the next test)
    expect(Math.abs(mean(fD) / mean(truth) - 1)).toBeLessThan(0.1);
    // half below 30 µs, half above 80 µs, little between (rq_lat itself has its lower mode up to 57 µs)
    expect(cdf(fD, 30_000)).toBeGreaterThan(0.4);
    expect(1 - cdf(fD, 80_000)).toBeGreaterThan(0.4);
    expect(cdf(fD, 80_000) - cdf(fD, 30_000)).toBeLessThan(0.1);
  });
  it('gives the poller model the measured run\'s CPU back, where a mean-only fit of the found times does not', () => {
    const run = measured(twoPoint(20_000, 100_000));
    const fit = (fD: Dist) => deviceTimeAtDepth({ ...poller, fD, fO: wake, targetNs: run.rqLatMeanNs }).fD;
    const deconvolved = fit(deconvolveDeviceTime(run.rqLat, model)!);
    expect(Math.abs(measured(deconvolved).cpuNs / run.cpuNs - 1)).toBeLessThan(0.05);
    // at depth most slept I/Os are found at their wake-up: the found times put F_D near 90-105 µs
    // (the qd4-twopoint lab run's censored estimate); shifted to the same rq_lat mean it misses the CPU
    const found = fit(uniform(88_000, 105_000));
    expect(Math.abs(measured(found).cpuNs / run.cpuNs - 1)).toBeGreaterThan(0.1);
  });
  it('fits a fixed device to the run\'s rq_lat and CPU, where rq_lat does not time D', () => {
    // at QD4 on a 50 µs device every slept I/O is found at its wake-up: the poller, not D, sets rq_lat
    // (it reads the same for D from 30 to 50 µs), so D is not identified (the exporter flags it,
    // deviceTimeIdentified) and the fit can only give the run back
    const run = measured(uniform(49_000, 51_000));
    const fD = deviceTimeAtDepth({ ...poller, fD: deconvolveDeviceTime(run.rqLat, model)!, fO: wake, targetNs: run.rqLatMeanNs }).fD;
    const back = measured(fD);
    expect(Math.abs(back.rqLatMeanNs / run.rqLatMeanNs - 1)).toBeLessThan(0.01);
    expect(Math.abs(back.cpuNs / run.cpuNs - 1)).toBeLessThan(0.03);
  });
  it('gives nothing without rq_lat samples, and ignores buckets it cannot place', () => {
    let runs = 0;
    expect(deconvolveDeviceTime([], () => runs++)).toBeUndefined();
    expect(deconvolveDeviceTime([3, 10, 143, 5, 60.5, 2], () => runs++)).toBeUndefined();
    expect(runs).toBe(0);
  });
});

describe('rq_lat without a ring\'s start (withoutTransient)', () => {
  // the lab's qd32-normal400 window (400 ± 40 µs at QD32): the bulk in buckets 69–74, a ring's first fill in 77
  const window = [69, 2, 70, 3, 71, 7751, 72, 2143, 73, 10063, 74, 7, 77, 31];
  it('drops a cluster of under 1 % above two empty buckets, and its share of the mean', () => {
    const total = 20_000;
    const r = withoutTransient(window, 520_000);
    expect(r.buckets).toEqual(window.slice(0, 12));
    expect(r.meanNs).toBeCloseTo((520_000 * total - 31 * midNs(77)) / (total - 31), 6);
  });
  it('keeps a tail that the bulk reaches, one empty bucket away, or that holds 1 % or more', () => {
    const contiguous = [...window.slice(0, 12), 75, 5, 76, 9, 77, 31];
    expect(withoutTransient(contiguous, 520_000)).toEqual({ buckets: contiguous, meanNs: 520_000 });
    const oneGap = [...window.slice(0, 12), 76, 31];
    expect(withoutTransient(oneGap, 520_000)).toEqual({ buckets: oneGap, meanNs: 520_000 });
    const heavy = [...window.slice(0, 12), 77, 300];
    expect(withoutTransient(heavy, 520_000)).toEqual({ buckets: heavy, meanNs: 520_000 });
  });
});
