import { describe, expect, it } from 'vitest';
import type { BpfSnapshot, BucketHist } from '../../src/bpf/types.js';
import { histSum } from '../../src/model/hist.js';
import { EfficiencyModel } from '../../src/model/stage.js';
import { SnapshotEngine } from '../../src/snapshot/engine.js';
import type { Snapshot, SnapshotInputs } from '../../src/snapshot/types.js';
import { normal, prng, simulatePoller } from './helpers.js';

type Cum = { hists: Record<string, BucketHist>; counters: Record<string, number> };

/** Cumulative BPF state of one device, advanced interval by interval with a simulated poller. */
function device(seed: number, sleepNs: number) {
  const r = prng(seed);
  let cum: Cum = { hists: {}, counters: {} };
  return {
    advance(n: number): Cum {
      const iv = simulatePoller({ n, D: () => normal(r, 10_000, 300), O: () => normal(r, 1000, 100), sleepNs, cswNs: 1500 });
      const hists = { ...cum.hists };
      for (const [k, h] of Object.entries(iv.hists)) hists[k] = hists[k] ? histSum(hists[k]!, h) : h;
      const counters = { ...cum.counters };
      for (const [k, v] of Object.entries(iv.counters)) counters[k] = (counters[k] ?? 0) + v;
      cum = { hists, counters };
      return cum;
    },
    restart() {
      cum = { hists: {}, counters: {} };
    },
  };
}

function inputs(tS: number, devs: Record<string, Cum>): SnapshotInputs {
  const bpf: BpfSnapshot = {
    takenAtNs: tS * 1e9,
    pollPath: 'fentry',
    programs: {},
    devices: Object.entries(devs).map(([dev, c]) => ({ dev, hists: c.hists })),
    rings: [],
    counters: {},
    deviceCounters: Object.fromEntries(Object.entries(devs).map(([dev, c]) => [dev, c.counters])),
  };
  return {
    takenAtMs: 1_700_000_000_000 + tS * 1000,
    bpf,
    bpfStatus: { mode: 'auto', state: 'running', cause: 'ok', reason: '', loaderRestarts: 0 },
    collectors: [],
    host: {
      features: {},
      era: { era: 'blkmq_hybrid', evidence: 'btf', reason: '' },
      devices: [
        { device: 'nvme0n1', devNum: '259:0', ioPollDelay: 0, errors: [] },
        { device: 'nvme1n1', devNum: '259:1', ioPollDelay: -1, errors: [] },
      ],
    },
  };
}

const snapshot = (i: SnapshotInputs): Snapshot => ({ ...i, pollStatAges: [], hctxTotals: [] });
const wastedOf = (r: ReturnType<EfficiencyModel['update']>, device: string) => r.wastedCpuSecondsTotal.find((w) => w.device === device)?.seconds;

describe('EfficiencyModel stage', () => {
  it('analyses each device over the window and integrates wasted CPU-seconds monotonically', () => {
    const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
    const half = device(1, 5000); // the kernel sleeps ½ mean
    const classic = device(2, 0);
    const first = model.update(snapshot(inputs(0, { '259:0': half.advance(10_000), '259:1': classic.advance(10_000) })));
    expect(first.targets).toEqual([]);
    expect(first.windowSeconds).toBe(0);
    expect(first.wastedCpuSecondsTotal).toEqual([]);

    let last = 0;
    let expected = 0;
    let r = first;
    for (let k = 1; k <= 8; k++) {
      r = model.update(snapshot(inputs(15 * k, { '259:0': half.advance(20_000), '259:1': classic.advance(20_000) })));
      const t = r.targets.find((x) => x.device === 'nvme0n1')!;
      // per interval: measured CPU of the interval minus best-static CPU for the same I/Os
      const w = wastedOf(r, 'nvme0n1')!;
      expect(w).toBeGreaterThanOrEqual(last);
      expected += ((t.measured!.cpuPerIoNs - t.best.cpuNs) * 20_000) / 1e9;
      last = w;
    }
    expect(r.windowSeconds).toBe(60);
    expect(r.configuredWindowSeconds).toBe(60);
    const t = r.targets.find((x) => x.device === 'nvme0n1')!;
    expect(t.current.policy).toBe('blkmq_half_mean');
    expect(t.windowSeconds).toBe(60);
    expect(t.measured!.iops).toBeCloseTo(20_000 / 15, 9);
    // stationary load: the counter's rate equals the gauge (the gauge uses the window's CPU per I/O,
    // the counter each interval's own)
    expect(Math.abs(last / expected - 1)).toBeLessThan(1e-3);
    expect(last / (8 * 15)).toBeCloseTo(t.wastedCpuCores!, 3);
    const c = r.targets.find((x) => x.device === 'nvme1n1')!;
    expect(c.current.policy).toBe('classic');
    expect(wastedOf(r, 'nvme1n1')!).toBeGreaterThan(wastedOf(r, 'nvme0n1')!); // classic wastes more
  });

  it('keeps its state through a scrape without BPF data, absorbs a loader restart, forgets a device that leaves', () => {
    const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
    const a = device(3, 5000);
    const b = device(4, 0);
    model.update(snapshot(inputs(0, { '259:0': a.advance(1000), '259:1': b.advance(1000) })));
    const r1 = model.update(snapshot(inputs(15, { '259:0': a.advance(75_000), '259:1': b.advance(75_000) })));
    const w1 = wastedOf(r1, 'nvme0n1')!;
    expect(w1).toBeGreaterThan(0);

    const { bpf: _, ...noBpf } = inputs(30, {});
    const r2 = model.update(snapshot(noBpf));
    expect(r2.targets).toEqual([]);
    expect(wastedOf(r2, 'nvme0n1')).toBe(w1);

    a.restart(); // loader restarted: cumulative series start again from zero
    const r3 = model.update(snapshot(inputs(45, { '259:0': a.advance(75_000), '259:1': b.advance(75_000) })));
    const t3 = r3.targets.find((x) => x.device === 'nvme0n1')!;
    expect(t3.measured!.polledIos).toBe(150_000); // 75k before the gap + 75k since the restart
    expect(wastedOf(r3, 'nvme0n1')!).toBeGreaterThan(w1);

    const r4 = model.update(snapshot(inputs(60, { '259:0': a.advance(75_000) })));
    expect(r4.wastedCpuSecondsTotal.map((w) => w.device)).toEqual(['nvme0n1']);
    expect(r4.targets.map((x) => x.device)).toEqual(['nvme0n1']);
  });

  it('runs inside the snapshot engine and reports as the model collector', async () => {
    const a = device(5, 5000);
    let t = 0;
    const engine = new SnapshotEngine(async () => inputs((t += 15), { '259:0': a.advance(75_000) }), new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 }));
    await engine.snapshot();
    const s = await engine.snapshot();
    expect(s.model!.targets[0]!.device).toBe('nvme0n1');
    expect(s.collectors.find((c) => c.name === 'model')).toMatchObject({ success: true });
  });

  it('turns malformed BPF data into a failed model collector, not a crash', async () => {
    const bad = inputs(0, { '259:0': { hists: { rq_lat: { buckets: [999, 1], count: 1, sumNs: 1, aux0: 0, aux1: 0 } }, counters: {} } });
    const engine = new SnapshotEngine(async () => bad, new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 }));
    const s = await engine.snapshot();
    expect(s.model).toBeUndefined();
    expect(s.collectors.find((c) => c.name === 'model')).toMatchObject({ success: false, error: expect.stringMatching(/bucket index 999/) });
  });
});
