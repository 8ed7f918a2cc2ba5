import { describe, expect, it } from 'vitest';
import { analyseRing, analyseUnit, analysisUnits, withheld } from '../../src/model/ring.js';
import type { DeviceWindow } from '../../src/model/types.js';
import { normal, prng, simulatePoller } from './helpers.js';

const OPTS = { latencyBudget: 0.01 };

/**
 * One device of a ring over two devices, as BPF reports it: its own I/Os' times, the ring's shared
 * poll calls, the device it shares with; the ring's waits (depth 2) filed under the first device.
 */
function ringDevice(dev: string, device: string, meanNs: number, seed: number, sharedWith: string | undefined, waits: boolean): DeviceWindow {
  const r = prng(seed);
  const n = 10_000;
  const { hists, counters } = simulatePoller({ n, D: () => normal(r, meanNs, meanNs / 40), O: () => normal(r, 1000, 100), sleepNs: 7000, cswNs: 1500, kernelEstimate: true });
  return {
    dev, device, seconds: 10, hists, era: 'iouring_hybrid', release: '7.3.0',
    counters: { ...counters, shared_polls: 2 * n, waits: waits ? n : 0, inflight_sum: waits ? 2 * n : 0 },
    ...(sharedWith ? { sharedWith } : {}),
  };
}

const fast = ringDevice('259:1', 'nvme1n1', 20_000, 1, '259:2', true);
const slow = ringDevice('259:2', 'nvme2n1', 100_000, 2, '259:1', false);

describe('ring: devices polled by one ring are grouped', () => {
  it('links shared devices through sharedWith, transitively; leaves a partnerless or unshared device alone', () => {
    const third = { ...ringDevice('259:3', 'nvme3n1', 50_000, 3, '259:2', false) };
    const lone = { ...ringDevice('259:4', 'nvme4n1', 50_000, 4, '259:9', false) };
    const five = ringDevice('259:5', 'nvme5n1', 50_000, 5, undefined, true);
    const own = { ...five, counters: { ...five.counters, shared_polls: 0 } };
    const units = analysisUnits([fast, own, slow, lone, third]).map((u) => u.map((w) => w.dev).sort());
    expect(units).toEqual([['259:1', '259:2', '259:3'], ['259:4'], ['259:5']]);
    // a unit of one is analysed alone: the partnerless shared device is withheld, the unshared one modelled
    const [t] = analyseUnit([lone], OPTS);
    expect(withheld(t!)).toBe(true);
    expect(t!.advice).toBe('withheld');
    expect(withheld(analyseUnit([own], OPTS)[0]!)).toBe(false);
  });
});

describe('ring: one ring over two devices, modelled whole', () => {
  const ts = analyseRing([fast, slow], OPTS)!;
  const [a, b] = ts as [NonNullable<typeof ts>[number], NonNullable<typeof ts>[number]];

  it('gives each device its part of the ring: the shares sum to 1, the measured CPU splits without loss', () => {
    expect(ts).toHaveLength(2);
    const ring = a.sharedRing!.ring!;
    expect(b.sharedRing!.ring!.devices).toEqual(['nvme1n1', 'nvme2n1']);
    expect(a.sharedRing!.ring!.cpuShare + b.sharedRing!.ring!.cpuShare).toBeCloseTo(1, 12);
    const ios = a.measured!.polledIos + b.measured!.polledIos;
    expect(a.measured!.cpuPerIoNs * a.measured!.polledIos + b.measured!.cpuPerIoNs * b.measured!.polledIos).toBeCloseTo(ring.measuredCpuPerIoNs * ios, 3);
    // the measured CPU is the ring's whole: spin and sleeps of both devices
    const spin = fast.counters['spin_ns']! + slow.counters['spin_ns']!;
    const sleeps = fast.counters['sleeps']! + slow.counters['sleeps']!;
    expect(ring.measuredCpuPerIoNs).toBeCloseTo((spin + sleeps * a.switchCostNs) / ios, 6);
    // the self-check is the ring's, on every device
    expect(a.modelCpuErrorRatio).toBeCloseTo(ring.modelCpuErrorRatio, 9);
    expect(b.modelCpuErrorRatio).toBeCloseTo(ring.modelCpuErrorRatio, 9);
    // the wasted CPU of the devices adds up to the ring's (measured − best) over its I/Os
    const wasted = a.wastedCpuCores! + b.wastedCpuCores!;
    const bestNs = a.best.cpuNs * a.measured!.polledIos + b.best.cpuNs * b.measured!.polledIos;
    expect(wasted).toBeCloseTo((ring.measuredCpuPerIoNs * ios - bestNs) / 10 / 1e9, 9);
  });

  it('runs the ring at its depth with one sleep for every device: the current, classic and best rows are ring-wide', () => {
    for (const t of ts) {
      expect(t.depth!.method).toBe('simulation');
      expect(t.inFlight).toBe(2);
      expect(t.current).toMatchObject({ policy: 'iouring_half_min', sleepNs: 7000, sleepSource: 'kernel_estimate' });
      expect(withheld(t)).toBe(false);
      expect(t.recommendation).toMatch(/one io_uring ring polls nvme1n1, nvme2n1/);
    }
    // one ring, one sleep: the best static sleep is a single value
    expect(a.best.sleepNs).toBe(b.best.sleepNs);
    expect(a.sharedRing!.ring!.bestSleepNs).toBe(a.best.sleepNs);
    // the slow device's I/Os cost the poller more than the fast one's under classic polling
    const classic = (t: typeof a) => t.policies.find((p) => p.policy === 'classic')!.cpuNs;
    expect(classic(b)).toBeGreaterThan(classic(a));
    // each device keeps its own device time, fitted to its own rq_lat
    expect(a.depth!.meanDeviceNs).toBeLessThan(30_000);
    expect(b.depth!.meanDeviceNs).toBeGreaterThan(80_000);
  });

  it('cannot model a ring with a device short of samples: the unit falls back to withholding each device', () => {
    const few = { ...slow, hists: {}, counters: { ...slow.counters, polled_ios: 5 } };
    expect(analyseRing([fast, few], OPTS)).toBeUndefined();
  });
});
