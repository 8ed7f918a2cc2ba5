// The model at the measured depth (src/model/depth.ts): the depth input, the era mapping, and
// analyse() switching from the QD1 forms to the poller model only at depth.
import { describe, expect, it } from 'vitest';
import { analyse, deviceTimeIdentified, FILL_SPUN, MIN_RQLAT_SLOPE, MIN_SPUN_AT_DEPTH, wastedPerIoNs } from '../../src/model/analyse.js';
import { caveats } from '../../src/report/caveats.js';
import { depthMix, DEPTH_THRESHOLD, deviceTimeAtDepth, meanInFlight, MIN_LOOKS, pollerCosts, pollerEra } from '../../src/model/depth.js';
import { atom, mean, uniform } from '../../src/model/dist.js';
import { Sampler, simulate } from '../../src/model/poller/index.js';
import type { DeviceWindow } from '../../src/model/types.js';
import { histOf, normal, prng, simulatePoller } from './helpers.js';

const OPTS = { latencyBudget: 0.01 };

describe('depth inputs', () => {
  it('reads the mean in flight from the BPF counters, or nothing', () => {
    expect(meanInFlight({})).toBeUndefined();
    expect(meanInFlight({ waits: 0, inflight_sum: 0 })).toBeUndefined();
    expect(meanInFlight({ waits: 10 })).toBeUndefined();
    expect(meanInFlight({ waits: 8, inflight_sum: 30 })).toBe(3.75);
  });

  it('mixes the two closed loops around a mean so that the mix has that mean', () => {
    expect(depthMix(4)).toEqual([[4, 1]]);
    for (const m of [1.2, 2.25, 7.9, 31.5]) {
      const mix = depthMix(m);
      expect(mix).toHaveLength(2);
      expect(mix.reduce((a, [d, w]) => a + d * w, 0)).toBeCloseTo(m, 9);
      expect(mix.reduce((a, [, w]) => a + w, 0)).toBeCloseTo(1, 9);
    }
  });

  it('maps host eras to poll paths: 7.0 splits io_uring hybrid, the pre-7.0 eras poll one look per call', () => {
    expect(pollerEra('iouring_hybrid', '7.3.4+deb13-amd64')).toBe('iouring_70');
    expect(pollerEra('iouring_hybrid', '6.18.44')).toBe('iouring_613');
    expect(pollerEra('iouring_hybrid', undefined)).toBe('iouring_70');
    expect(pollerEra('no_hybrid', '6.8.0')).toBe('iouring_613');
    expect(pollerEra('blkmq_hybrid', '5.10.0-32-amd64')).toBe('blkmq_iouring');
    expect(pollerEra('unknown', undefined)).toBeUndefined();
  });
});

/** A classic poller at depth N on a constant device time: each I/O costs D/N of poll-loop CPU (N renewals in parallel). */
function classicAtDepth(n: number, D: number, N: number): DeviceWindow {
  const ios = Array.from({ length: n }, () => D);
  const waits = n; // a closed loop that reaps one and refills one per waiting call
  return {
    dev: '259:0', device: 'nvme0n1', seconds: 10, era: 'iouring_hybrid', release: '7.3.4',
    hists: { rq_lat: histOf(ios), spin: histOf(ios.map((d) => d / N)), iopoll: histOf(ios.map((d) => d / N)) },
    counters: { polled_ios: n, sleeps: 0, spin_ns: (n * D) / N, waits, inflight_sum: waits * N },
  };
}

describe('analyse at depth', () => {
  it('keeps the QD1 forms exactly when one I/O is in flight', () => {
    const r = prng(3);
    const { hists, counters } = simulatePoller({ n: 20_000, D: () => normal(r, 20_000, 500), O: () => normal(r, 1000, 100), sleepNs: 8000, cswNs: 1500, kernelEstimate: true });
    const w: DeviceWindow = { dev: '259:0', device: 'nvme0n1', seconds: 10, era: 'iouring_hybrid', release: '7.3.4', hists, counters };
    const { waits: _w, inflight_sum: _i, ...uncounted } = counters;
    const plain = analyse({ ...w, counters: uncounted }, OPTS)!;
    const qd1 = analyse(w, OPTS)!;
    expect(plain.inFlight).toBeUndefined();
    expect(qd1.depth).toBeUndefined();
    expect(qd1.inFlight).toBe(1);
    expect(qd1.policies).toEqual(plain.policies);
    expect(qd1.current).toEqual(plain.current);
    expect(qd1.efficiency).toBe(plain.efficiency);
    expect(DEPTH_THRESHOLD).toBe(1.5);
  });

  it('models classic polling at depth 4 as E[D]/4 per I/O, and its self-check holds on a run that does', () => {
    const t = analyse(classicAtDepth(4000, 50_000, 4), OPTS)!;
    expect(t.depth).toMatchObject({ method: 'simulation', era: 'iouring_70', meanInFlight: 4 });
    const classic = t.policies.find((p) => p.policy === 'classic')!;
    // the QD1 table would say E[D] = 50 µs
    expect(Math.abs(classic.cpuNs / 12_500 - 1)).toBeLessThan(0.03);
    expect(classic.cpuShare).toBeCloseTo(1, 2);
    expect(Math.abs(t.modelCpuErrorRatio!)).toBeLessThan(0.03);
    expect(t.current.policy).toBe('classic');
  });

  it('reports no wasted CPU for a classic poller when the best static sleep is 0, whatever the model is off by', () => {
    const w = classicAtDepth(4000, 50_000, 4);
    // the loop measured 20 % more CPU than the model's classic row: its error, not CPU a sleep saves
    const off: DeviceWindow = { ...w, counters: { ...w.counters, spin_ns: w.counters.spin_ns! * 1.2 } };
    const t = analyse(off, OPTS)!;
    expect(t.current.policy).toBe('classic');
    expect(t.best.sleepNs).toBe(0);
    expect(t.modelCpuErrorRatio!).toBeLessThan(-0.1);
    expect(t.wastedCpuCores).toBe(0);
    // the same measured CPU under a sleep is judged against the best row as before
    expect(wastedPerIoNs({ current: { ...t.current, policy: 'iouring_half_min' }, best: t.best }, t.measured!.cpuPerIoNs)).toBeCloseTo(t.measured!.cpuPerIoNs - t.best.cpuNs, 9);
    // and a classic poller whose best static sleep is not 0 wastes the difference
    expect(wastedPerIoNs({ current: t.current, best: { ...t.best, sleepNs: 10_000 } }, 5000)).toBe(5000 - t.best.cpuNs);
  });

  it('takes the table, best, oracle and current state from the poller model at the depth, and η against its classic row', () => {
    const r = prng(9);
    const { hists, counters } = simulatePoller({ n: 20_000, D: () => normal(r, 50_000, 1000), O: () => normal(r, 1500, 100), sleepNs: 12_000, cswNs: 1500, kernelEstimate: true });
    const w: DeviceWindow = { dev: '259:0', device: 'nvme0n1', seconds: 10, era: 'iouring_hybrid', release: '7.3.4', hists, counters: { ...counters, waits: 5000, inflight_sum: 20_000 } };
    // at depth 4 no sleep adds less than 1 % of E[D] here: a 10 % budget gives a best sleep > 0
    const t = analyse(w, { latencyBudget: 0.1 })!;
    expect(t.depth?.method).toBe('simulation');
    expect(t.best.sleepNs).toBeGreaterThan(0);
    expect(t.inFlight).toBe(4);
    const classic = t.policies.find((p) => p.policy === 'classic')!;
    expect(t.efficiency).toBeCloseTo((classic.cpuNs - t.current.outcome.cpuNs) / (classic.cpuNs - t.best.cpuNs), 12);
    expect(t.best).toBe(t.policies.find((p) => p.policy === 'best_static'));
    expect(t.oracle.cpuNs).toBeLessThanOrEqual(t.best.cpuNs + 3 * t.depth!.cpuStdErrNs + 1);
    // the current state keeps what was measured (its sleep, the share that slept) and the model's figures at depth
    expect(t.current).toMatchObject({ policy: 'iouring_half_min', sleepSource: 'kernel_estimate', sleepNs: 12_000 });
    expect(t.current.outcome.cpuNs).toBeLessThan(classic.cpuNs * 1.5);
    expect(t.wastedCpuCores).toBeCloseTo(((t.measured!.cpuPerIoNs - t.best.cpuNs) * t.measured!.iops) / 1e9, 9);
  });
});

describe('whether the data identify F_D', () => {
  it('at QD1 while at most half of it is unresolved; at depth while at least 5 % and 20 of the slept I/Os were spun for', () => {
    expect(MIN_SPUN_AT_DEPTH).toBe(0.05);
    expect(deviceTimeIdentified(0.5, undefined, { overslept: 10, spun: 0 })).toBe(true);
    expect(deviceTimeIdentified(0.51, undefined, { overslept: 0, spun: 100 })).toBe(false);
    // at depth the deconvolution places the unresolved share: what matters is whether I/Os were timed
    expect(deviceTimeIdentified(0.81, 4, { overslept: 7961, spun: 806 })).toBe(true);
    expect(deviceTimeIdentified(0, 4, { overslept: 9987, spun: 10 })).toBe(false);
    // one timed I/O of 61 is 1.6 %, but one sample: not identified (QD64, CI profile: E[D] +243 %)
    expect(deviceTimeIdentified(0, 4, { overslept: 60, spun: 1 })).toBe(false);
    expect(deviceTimeIdentified(0, 4, { overslept: 1000, spun: 60 })).toBe(true);
    // 3 % spun for (5.10 at QD4 under the ½-mean rule: E[D] +28 / +55 %): not identified
    expect(deviceTimeIdentified(0.96, 4, { overslept: 3880, spun: 120 })).toBe(false);
    // the 7.3 two-point device at QD4: 7.3 % and 9 %, identified (E[D] within 4 %)
    expect(deviceTimeIdentified(0.8, 4, { overslept: 7982, spun: 628 })).toBe(true);
    expect(deviceTimeIdentified(0, 4, { overslept: 0, spun: 0 })).toBe(true);
  });

  it('at depth with nothing slept (classic polling) while rq_lat moves with D', () => {
    expect(MIN_RQLAT_SLOPE).toBe(0.5);
    expect(deviceTimeIdentified(0, 32, { overslept: 0, spun: 0 }, 0.97)).toBe(true);
    expect(deviceTimeIdentified(0, 32, { overslept: 0, spun: 0 }, 0.5)).toBe(true);
    expect(deviceTimeIdentified(0, 32, { overslept: 0, spun: 0 }, 0.12)).toBe(false);
    // the slope only judges windows where nothing slept; at QD1 the closed forms have no fit
    expect(deviceTimeIdentified(0, 32, { overslept: 1000, spun: 100 }, 0.12)).toBe(true);
    expect(deviceTimeIdentified(0, undefined, { overslept: 0, spun: 0 }, 0.12)).toBe(true);
  });

  it('at depth not from the spun I/Os one fill can give: more than FILL_SPUN × depth', () => {
    expect(FILL_SPUN).toBe(2);
    // QD32 on the 400 µs device: 26 of 2475 (1.05 %) and 28 of 509, all from the first fill of 32
    expect(deviceTimeIdentified(0, 31.9, { overslept: 2449, spun: 26 })).toBe(false);
    expect(deviceTimeIdentified(0, 31.9, { overslept: 481, spun: 28 })).toBe(false);
    // over MIN_SPUN_AT_DEPTH either way: FILL_SPUN decides
    expect(deviceTimeIdentified(0, 31.9, { overslept: 1000, spun: 63 })).toBe(false);
    expect(deviceTimeIdentified(0, 31.9, { overslept: 1000, spun: 64 })).toBe(true);
    // the two-point device at QD4: 169 of 1724 (CI profile) and 781 of 8754 (full)
    expect(deviceTimeIdentified(0, 4, { overslept: 1555, spun: 169 })).toBe(true);
  });

  it('at depth with every slept I/O found complete at its wake-up: not identified, and the recommendation withheld', () => {
    const r = prng(11);
    const at = (sleepNs: number) => {
      const { hists, counters } = simulatePoller({ n: 20_000, D: () => normal(r, 50_000, 1000), O: () => normal(r, 1500, 100), sleepNs, cswNs: 1500, kernelEstimate: true });
      return analyse({ dev: '259:0', device: 'nvme0n1', seconds: 10, era: 'iouring_hybrid', release: '7.3.4', hists, counters: { ...counters, waits: 5000, inflight_sum: 20_000 } }, { latencyBudget: 0.1 })!;
    };
    const timed = at(12_000);
    expect(timed.depth?.method).toBe('simulation');
    expect(timed.deviceTime.identified).toBe(true);
    expect(timed.advice).not.toBe('withheld');
    const overslept = at(60_000);
    expect(overslept.depth?.method).toBe('simulation');
    expect(overslept.measured!.oversleepRatio).toBeGreaterThan(0.99);
    expect(overslept.deviceTime.identified).toBe(false);
    expect(overslept.advice).toBe('withheld');
    expect(overslept.recommendation).toMatch(/100% of the slept I\/Os were already complete at wake-up, so at this queue depth no device time was timed/);
    // the report says why, beside the figures it shows
    expect(caveats(overslept).identified).toMatch(/^the device time is not identified: at this queue depth under 1% of the slept I\/Os \(or fewer than 20\) were still pending at wake-up \(100\.0% overslept\)/);
    expect(caveats(timed).identified).toBeUndefined();
  });

  it('classic polling at depth: not identified where the poller sets the pace, and the recommendation withheld', () => {
    // a classic loop at QD32 reaping 8 per loop with 2 µs per I/O around it (a 64 µs round of 32);
    // rq_lat reads the round wherever D lies below it
    const at = (rqNs: number) => {
      const n = 8000;
      const r = prng(5);
      const lat = Array.from({ length: n }, () => rqNs * (0.97 + 0.06 * r()));
      const loops = n / 8;
      return analyse({
        dev: '259:0', device: 'nvme0n1', seconds: 10, era: 'iouring_hybrid', release: '7.3.4',
        hists: { rq_lat: histOf(lat), spin: histOf(Array.from({ length: loops }, () => 8 * 300)), iopoll: histOf(Array.from({ length: loops }, () => 8 * 300)) },
        counters: { polled_ios: n, sleeps: 0, spin_ns: n * 300, waits: loops, inflight_sum: loops * 32, gaps: loops, gap_ns: loops * 16_000, gap_k: n, gap_kk: loops * 64, gap_kns: loops * 8 * 16_000 },
      }, { latencyBudget: 0.1 })!;
    };
    const paced = at(66_000);
    expect(paced.depth?.method).toBe('simulation');
    expect(paced.current.sleptFraction).toBe(0);
    expect(paced.depth!.rqLatSlope).toBeLessThan(MIN_RQLAT_SLOPE);
    expect(paced.deviceTime.identified).toBe(false);
    expect(paced.advice).toBe('withheld');
    expect(paced.recommendation).toMatch(/each completion waits for the poller's next look rather than the device/);
    expect(caveats(paced).identified).toMatch(/^the device time is not identified: at this queue depth the classic poller is the bottleneck/);
    // a 400 µs device under the same poller: rq_lat follows D
    const device = at(420_000);
    expect(device.depth!.rqLatSlope).toBeGreaterThan(0.8);
    expect(device.deviceTime.identified).toBe(true);
    expect(device.advice).not.toBe('withheld');
  });

  it('at QD1 with every slept I/O found complete at its wake-up: not identified (all unresolved), the QD1 advice kept', () => {
    const r = prng(12);
    const { hists, counters } = simulatePoller({ n: 20_000, D: () => normal(r, 50_000, 1000), O: () => normal(r, 1500, 100), sleepNs: 60_000, cswNs: 1500, kernelEstimate: true });
    const t = analyse({ dev: '259:0', device: 'nvme0n1', seconds: 10, era: 'iouring_hybrid', release: '7.3.4', hists, counters }, OPTS)!;
    expect(t.depth).toBeUndefined();
    expect(t.deviceTime.unresolved).toBeGreaterThan(0.5);
    expect(t.deviceTime.identified).toBe(false);
    expect(caveats(t).identified).toMatch(/^the device time is not identified: over half of it \(\d+(\.\d)?%\) is unresolved/);
    expect(t.recommendation).not.toMatch(/at this queue depth/);
  });
});

describe('the poller costs around its polling', () => {
  const sums = (gaps: [number, number][]) => ({
    gaps: gaps.length,
    gap_ns: gaps.reduce((a, [g]) => a + g, 0),
    gap_k: gaps.reduce((a, [, k]) => a + k, 0),
    gap_kk: gaps.reduce((a, [, k]) => a + k * k, 0),
    gap_kns: gaps.reduce((a, [g, k]) => a + g * k, 0),
  });
  it('is 0 when not counted', () => {
    expect(pollerCosts({})).toEqual({ callNs: 0, submitNs: 0, leadNs: 0, loopReapNs: 0, lookNs: 0, lookPerIoNs: 0, emptyLookNs: 0, wakeToLookNs: 0 });
  });
  it('splits the time between loops into a per-call and a per-I/O part when the completions per loop vary', () => {
    // gap = 4 µs + 4.5 µs per completion of the loop before it
    const c = pollerCosts({ ...sums([[8500, 1], [13_000, 2], [8500, 1], [17_500, 3]]), reap_ns: 600_000, reaped: 200 });
    expect(c.callNs).toBeCloseTo(4000, 6);
    expect(c.submitNs).toBeCloseTo(4500, 6);
    expect(c.loopReapNs).toBe(3000);
  });
  it('moves the lead (last issue → next loop) out of the gap: from the per-call part first, then per I/O', () => {
    const g = sums([[8500, 1], [13_000, 2], [8500, 1], [17_500, 3]]);
    expect(pollerCosts({ ...g, lead_ns: 4 * 1500, leads: 4 })).toMatchObject({ leadNs: 1500 });
    expect(pollerCosts({ ...g, lead_ns: 4 * 1500, leads: 4 }).callNs).toBeCloseTo(2500, 6);
    // a lead above the per-call part (4 µs) takes the rest from the per-I/O part at the mean k (7/4)
    const c = pollerCosts({ ...g, lead_ns: 4 * 5750, leads: 4 });
    expect(c.callNs).toBe(0);
    expect(c.submitNs).toBeCloseTo(4500 - 1750 / 1.75, 6);
  });
  it('takes it all per I/O with one k only, or when the fit leaves [0, ∞)', () => {
    expect(pollerCosts(sums([[9000, 1], [9200, 1], [8800, 1]]))).toEqual({ callNs: 0, submitNs: 9000, leadNs: 0, loopReapNs: 0, lookNs: 0, lookPerIoNs: 0, emptyLookNs: 0, wakeToLookNs: 0 });
    // more completions, shorter gaps: a negative per-I/O part is not a cost
    const c = pollerCosts(sums([[9000, 1], [5000, 2]]));
    expect(c).toEqual({ callNs: 0, submitNs: 14_000 / 3, leadNs: 0, loopReapNs: 0, lookNs: 0, lookPerIoNs: 0, emptyLookNs: 0, wakeToLookNs: 0 });
  });
  const scaled = (sums: Record<string, number>, times: number): Record<string, number> =>
    Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, v * times]));
  // each call counted MIN_LOOKS times (the same means and fit)
  const looks = (calls: [number, number][], times = MIN_LOOKS) => scaled({
    looks: calls.length,
    look_ns: calls.reduce((a, [d]) => a + d, 0),
    look_k: calls.reduce((a, [, k]) => a + k, 0),
    look_kk: calls.reduce((a, [, k]) => a + k * k, 0),
    look_kns: calls.reduce((a, [d, k]) => a + d * k, 0),
  }, times);
  it('splits a finding poll call into a per-call and a per-completion part, all per call with one k only', () => {
    // call = 2.7 µs + 0.15 µs per completion found
    const c = pollerCosts(looks([[2850, 1], [3000, 2], [5100, 16], [2850, 1]]));
    expect(c.lookNs).toBeCloseTo(2700, 6);
    expect(c.lookPerIoNs).toBeCloseTo(150, 6);
    expect(pollerCosts(looks([[3000, 2], [3100, 2], [2900, 2]]))).toMatchObject({ lookNs: 3000, lookPerIoNs: 0 });
  });
  it('leaves out fewer than MIN_LOOKS slept looks, and their wake-up path with them', () => {
    const few: Record<string, number> = { ...looks([[3000, 2], [3100, 2], [2900, 2]], 5), wake_look_ns: 15 * 25_000 };
    expect(few['looks']).toBe(MIN_LOOKS - 1);
    expect(pollerCosts(few)).toMatchObject({ lookNs: 0, lookPerIoNs: 0, wakeToLookNs: 0 });
    expect(pollerCosts({ ...few, ...looks([[3000, 2]], MIN_LOOKS), wake_look_ns: MIN_LOOKS * 1000 })).toMatchObject({ lookNs: 3000, wakeToLookNs: 1000 });
  });
  // first passes as [loop start → finding call's end, completions found, empty calls before it]
  const passLooks = (loops: [number, number, number][]) => ({
    pass_looks: loops.length,
    pass_look_ns: loops.reduce((a, [y]) => a + y, 0),
    pass_look_k: loops.reduce((a, [, k]) => a + k, 0),
    pass_look_kk: loops.reduce((a, [, k]) => a + k * k, 0),
    pass_look_kns: loops.reduce((a, [y, k]) => a + y * k, 0),
    pass_look_j: loops.reduce((a, [, , j]) => a + j, 0),
    pass_look_jj: loops.reduce((a, [, , j]) => a + j * j, 0),
    pass_look_jk: loops.reduce((a, [, k, j]) => a + j * k, 0),
    pass_look_jns: loops.reduce((a, [y, , j]) => a + j * y, 0),
  });
  it('fits a run without slept looks\' looks on its classic loops\' first passes: per loop, per completion, per empty call', () => {
    // y = 1.8 µs + 0.1 µs per completion + 1.2 µs per empty oneshot call before the finding one
    const loops: [number, number, number][] = Array.from({ length: 96 }, (_, i) => {
      const k = 1 + (i % 4);
      const j = Math.floor(i / 4) % 3;
      return [1800 + 100 * k + 1200 * j, k, j];
    });
    const c = pollerCosts(passLooks(loops));
    expect(c.lookNs).toBeCloseTo(1800, 6);
    expect(c.lookPerIoNs).toBeCloseTo(100, 6);
    expect(c.emptyLookNs).toBeCloseTo(1200, 6);
    expect(c.wakeToLookNs).toBe(0);
    // no empty calls: j is not fitted
    const noEmpty = pollerCosts(passLooks(loops.filter(([, , j]) => j === 0)));
    expect(noEmpty.emptyLookNs).toBe(0);
    expect(noEmpty.lookNs).toBeCloseTo(1800, 6);
    expect(noEmpty.lookPerIoNs).toBeCloseTo(100, 6);
    // one k only: the per-completion part stays in the per-loop one
    const oneK = pollerCosts(passLooks(loops.filter(([, k]) => k === 2)));
    expect(oneK.lookNs).toBeCloseTo(2000, 6);
    expect(oneK.emptyLookNs).toBeCloseTo(1200, 6);
    // too few: left out, as a loader without them
    expect(pollerCosts(passLooks(loops.slice(0, MIN_LOOKS - 1)))).toMatchObject({ lookNs: 0, lookPerIoNs: 0, emptyLookNs: 0 });
    // a run with slept looks keeps those (the pass looks of its loops without a sleep are a different span)
    expect(pollerCosts({ ...passLooks(loops), ...looks([[3000, 2], [3100, 2], [2900, 2]]) })).toMatchObject({ lookNs: 3000, lookPerIoNs: 0, emptyLookNs: 0 });
  });
});

describe('the simulation\'s finding call and plugged submissions', () => {
  const base = { era: 'iouring_70' as const, devices: [{ fD: new Sampler(atom(50_000)), share: 1 }], wake: new Sampler(atom(1000)), switchCostNs: 2000, rule: { kind: 'none' as const }, ios: 2000, warmup: 200, seed: 5 };
  it('charges each finding call its cost as spin, and completes its requests at its end', () => {
    const sub = { submitNs: 1000, reapNs: 0, minComplete: 1 };
    const a = simulate({ ...base, depth: 1, submission: sub });
    const b = simulate({ ...base, depth: 1, submission: { ...sub, lookNs: 2000, lookPerIoNs: 500 } });
    // QD1 classic: one finding call per I/O, one completion each
    expect(b.spinNs / b.ios - a.spinNs / a.ios).toBeCloseTo(2500, 6);
    expect(b.perDevice[0]!.rqLatNs / b.ios - a.perDevice[0]!.rqLatNs / a.ios).toBeCloseTo(2500, 6);
  });
  it('charges an empty one-look call its cost where the poller sets the pace, and not where it waits on the device', () => {
    // one ring over a 20 µs and a 100 µs device at QD16: the 100 µs device's unfinished requests lead the list
    const ring = { ...base, devices: [{ fD: new Sampler(atom(20_000)), share: 1 }, { fD: new Sampler(atom(100_000)), share: 1 }], depth: 16 };
    const sub = { submitNs: 1000, reapNs: 0, minComplete: 1, loopReapNs: 1500, lookNs: 1500 };
    const a = simulate({ ...ring, submission: sub });
    const b = simulate({ ...ring, submission: { ...sub, emptyLookNs: 1000 } });
    expect(b.spinNs / b.ios).toBeGreaterThan(a.spinNs / a.ios + 100);
    // QD1 on one device, 7.0 with ONESHOT (minComplete 0): every empty look lies inside the wait for the device
    const qd1 = { ...base, depth: 1, submission: { submitNs: 1000, reapNs: 0, minComplete: 0 } };
    const c = simulate(qd1);
    const d = simulate({ ...qd1, submission: { ...qd1.submission, emptyLookNs: 1000 } });
    expect(d.spinNs / d.ios).toBeCloseTo(c.spinNs / c.ios, 6);
  });
  it('charges each sleep the woken poller\'s time to its next poll call, as spin', () => {
    const sub = { submitNs: 1000, reapNs: 0, minComplete: 1 };
    const rule = { kind: 'static' as const, sleepNs: [20_000] };
    const a = simulate({ ...base, depth: 1, rule, submission: sub });
    const b = simulate({ ...base, depth: 1, rule, submission: { ...sub, wakeToLookNs: 1500 } });
    expect(b.sleeps).toBe(b.ios);
    // the device (50 µs) is not done at the wake-up (21 µs): the return path only moves the spin's start
    expect(b.spinNs / b.ios).toBeCloseTo(a.spinNs / a.ios, 6);
    const late = { ...rule, sleepNs: [60_000] };
    const c = simulate({ ...base, depth: 1, rule: late, submission: sub });
    const d = simulate({ ...base, depth: 1, rule: late, submission: { ...sub, wakeToLookNs: 1500 } });
    expect(d.spinNs / d.ios - c.spinNs / c.ios).toBeCloseTo(1500, 6);
  });
  it('starts rq_lat at the plug\'s cached time: shared within a submission of more than 2, per 32 requests', () => {
    const sub = { submitNs: 1000, reapNs: 0, minComplete: 64 };
    // a depth-N closed loop that waits for all N: every refill submits N in one call
    const rq = (depth: number) => {
      const s = simulate({ ...base, depth, submission: { ...sub, minComplete: depth } });
      return { rq: s.perDevice[0]!.rqLatNs / s.ios, found: s.perDevice[0]!.foundLatencyNs / s.ios };
    };
    // unplugged (2): rq_lat starts at each issue, as the found time does
    expect(rq(2).rq - rq(2).found).toBeCloseTo(0, 6);
    // plugged (32): request i starts i submissions early, on average 15.5 µs
    expect(Math.abs(rq(32).rq - rq(32).found - 15_500)).toBeLessThan(200);
    // 64: two flushes of 32, the same mean
    expect(Math.abs(rq(64).rq - rq(64).found - 15_500)).toBeLessThan(200);
  });
  it('starts the device at the plug\'s flush: a request waits for the rest of its submission, less the dispatches after it', () => {
    const sub = { submitNs: 1000, reapNs: 0, minComplete: 64 };
    const found = (depth: number) => {
      const s = simulate({ ...base, depth, submission: { ...sub, minComplete: depth } });
      return s.perDevice[0]!.foundLatencyNs / s.ios - 50_000;
    };
    // unplugged (2): each request reaches the device at the end of its own submission
    expect(found(2)).toBeCloseTo(0, 6);
    // plugged (32): request i is dispatched 31 − i submissions later, less 31 − i dispatches of 0.13 submission each:
    // on average 15.5 × 870 ns
    expect(Math.abs(found(32) - 15.5 * 870)).toBeLessThan(200);
    // 64: two flushes of 32, the same mean
    expect(Math.abs(found(64) - 15.5 * 870)).toBeLessThan(200);
  });
});

describe('F_D without the poller\'s queueing (deviceTimeAtDepth)', () => {
  it('recovers the device time from a hybrid poller\'s measured latency at depth 4', () => {
    // while the poller sleeps for one request, the others complete and wait for it: the measured
    // latency is well above the device time
    const submission = { submitNs: 6000, reapNs: 0, minComplete: 1, loopReapNs: 3000 };
    // a short sleep on a spread device, so that some I/Os are spun for: where every slept I/O is
    // found at its wake-up the latency does not depend on D (docs/validation.md, "The model at depth")
    const rule = { kind: 'static' as const, sleepNs: [6_000] };
    const common = { era: 'iouring_70' as const, depth: 4, switchCostNs: 5000, sleepOnCpuNs: 4000, submission, rule };
    const truth = simulate({ ...common, devices: [{ fD: new Sampler(uniform(40_000, 60_000)), share: 1 }], wake: new Sampler(uniform(4000, 5000)), ios: 4000, warmup: 200, seed: 3 });
    const measured = truth.perDevice[0]!.rqLatNs / truth.perDevice[0]!.ios;
    expect(measured).toBeGreaterThan(55_000);
    const fit = deviceTimeAtDepth({ ...common, fD: uniform(measured - 10_000, measured + 10_000), fO: uniform(4000, 5000), targetNs: measured });
    expect(fit.shiftNs).toBeLessThan(0);
    expect(Math.abs(mean(fit.fD) / 50_000 - 1)).toBeLessThan(0.03);
  });
  it('measures how much rq_lat moves with D: about 1 where the device sets the pace, near 0 where the classic poller does', () => {
    // a classic loop at QD32 spending ≈ 1.8 µs per I/O around its polls: 58 µs per round of 32
    const submission = { submitNs: 1500, callNs: 1000, reapNs: 0, minComplete: 1, loopReapNs: 300 };
    const common = { era: 'iouring_70' as const, depth: 32, fO: atom(1000), switchCostNs: 1500, sleepOnCpuNs: 0, submission, rule: { kind: 'none' as const }, slope: true };
    const slopeAt = (d: number) => {
      const st = simulate({ ...common, devices: [{ fD: new Sampler(atom(d)), share: 1 }], wake: new Sampler(atom(1000)), ios: 2000, warmup: 200, seed: 3 });
      return deviceTimeAtDepth({ ...common, fD: atom(d), targetNs: st.perDevice[0]!.rqLatNs / st.perDevice[0]!.ios }).rqLatSlope!;
    };
    const poller = slopeAt(50_000);
    const device = slopeAt(400_000);
    expect(poller).toBeLessThan(MIN_RQLAT_SLOPE);
    expect(device).toBeGreaterThan(0.8);
    expect(device).toBeLessThan(1.2);
    // only when asked (classic windows), at two simulations' cost
    expect(deviceTimeAtDepth({ ...common, slope: false, fD: atom(400_000), targetNs: 420_000 }).rqLatSlope).toBeUndefined();
  });
  it('leaves F_D alone when nothing queues (the poller always looks)', () => {
    const fit = deviceTimeAtDepth({ era: 'iouring_70', depth: 4, fD: uniform(49_000, 51_000), fO: atom(1000), sleepOnCpuNs: 0, switchCostNs: 1500, submission: { submitNs: 0, reapNs: 0, minComplete: 1 }, rule: { kind: 'none' }, targetNs: 50_000 });
    expect(Math.abs(fit.shiftNs)).toBeLessThan(100);
  });
});
