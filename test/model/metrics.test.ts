import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BpfSnapshot } from '../../src/bpf/types.js';
import { modelFamilies } from '../../src/metrics/model.js';
import { render } from '../../src/metrics/render.js';
import { EfficiencyModel } from '../../src/model/stage.js';
import { POLICIES } from '../../src/model/types.js';
import type { Snapshot } from '../../src/snapshot/types.js';
import { normal, prng, simulatePoller } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PROMTOOL = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find(existsSync);

function snap(tS: number, n: number, era: 'iouring_hybrid' | 'blkmq_hybrid' = 'iouring_hybrid'): Snapshot {
  const r = prng(tS + 1);
  const { hists, counters } = simulatePoller({ n, D: () => normal(r, 10_000, 300), O: () => normal(r, 1000, 100), sleepNs: 5000, cswNs: 1500, kernelEstimate: true });
  const bpf: BpfSnapshot = { takenAtNs: tS * 1e9, pollPath: 'fentry', programs: {}, devices: [{ dev: '259:0', device: 'nvme0n1', hists }], rings: [], counters: {}, deviceCounters: { '259:0': counters } };
  return {
    takenAtMs: tS * 1000,
    bpf,
    bpfStatus: { mode: 'auto', state: 'running', cause: 'ok', reason: '', loaderRestarts: 0 },
    collectors: [],
    host: { features: {}, era: { era, evidence: 'btf', reason: '' }, devices: [] },
    pollStatAges: [],
    hctxTotals: [],
  };
}

/** A cumulative sequence: snapshot k holds the sum of k simulated intervals (the simulator is deterministic per seed). */
function run(era?: 'iouring_hybrid' | 'blkmq_hybrid'): Snapshot {
  const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
  let s = snap(0, 1000, era);
  s.model = model.update(s);
  const later = snap(15, 20_000, era);
  later.model = model.update(later);
  return later;
}

describe('model metric families of a device a ring over several devices polls', () => {
  it('withhold every modelled figure, keep what was measured, and say why', () => {
    const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
    const shared = (s: Snapshot, polls: number): Snapshot => ({ ...s, bpf: { ...s.bpf!, deviceCounters: { '259:0': { ...s.bpf!.deviceCounters['259:0']!, shared_polls: polls } } } });
    const a = shared(snap(0, 1000), 1000);
    a.model = model.update(a);
    const b = shared(snap(15, 20_000), 40_000);
    b.model = model.update(b);
    const byName = new Map(modelFamilies(b).map((f) => [f.name, f.samples]));
    expect(byName.get('hybridpoll_model_ring_shared')).toEqual([{ labels: { device: 'nvme0n1' }, value: 1 }]);
    for (const n of ['sleep_efficiency_ratio', 'optimal_sleep_seconds', 'wasted_cpu_cores', 'measured_cpu_seconds_per_io', 'model_cpu_error_ratio', 'model_device_time_mean_seconds', 'policy_cpu_seconds_per_io', 'wasted_cpu_seconds_total']) {
      expect(byName.get(`hybridpoll_${n}`), n).toEqual([]);
    }
    for (const n of ['current_sleep_seconds', 'polled_iops', 'oversleep_ratio', 'model_input_info']) expect(byName.get(`hybridpoll_${n}`)!.length, n).toBe(1);
  });
});

describe('model metric families of a ring over two devices, linked by BPF', () => {
  /** two devices of one ring at time tS: each its own I/Os (10 and 40 µs), the ring's depth 2, linked both ways */
  function ringSnap(tS: number, n: number): Snapshot {
    const base = snap(tS, n);
    const dev = (d: string, name: string, meanNs: number, seed: number, other: string, waits: boolean) => {
      const r = prng(seed + tS);
      const { hists, counters } = simulatePoller({ n, D: () => normal(r, meanNs, meanNs / 30), O: () => normal(r, 1000, 100), sleepNs: 5000, cswNs: 1500, kernelEstimate: true });
      return { series: { dev: d, device: name, hists, sharedWith: other }, counters: { ...counters, shared_polls: 2 * n, waits: waits ? n : 0, inflight_sum: waits ? 2 * n : 0 } };
    };
    const a = dev('259:0', 'nvme0n1', 10_000, 1, '259:1', true);
    const b = dev('259:1', 'nvme1n1', 40_000, 2, '259:0', false);
    return { ...base, bpf: { ...base.bpf!, devices: [a.series, b.series], deviceCounters: { '259:0': a.counters, '259:1': b.counters } } };
  }

  it('show every figure as the device\'s part of the ring; the wasted counters add up to the ring\'s', () => {
    const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
    const a = ringSnap(0, 1000);
    a.model = model.update(a);
    const b = ringSnap(15, 20_000);
    b.model = model.update(b);
    const byName = new Map(modelFamilies(b).map((f) => [f.name, f.samples]));
    expect(byName.get('hybridpoll_model_ring_shared')!.map((x) => x.value)).toEqual([1, 1]);
    for (const n of ['optimal_sleep_seconds', 'wasted_cpu_cores', 'measured_cpu_seconds_per_io', 'model_cpu_error_ratio', 'wasted_cpu_seconds_total']) {
      expect(byName.get(`hybridpoll_${n}`)!.length, n).toBe(2);
    }
    const [t0, t1] = b.model.targets;
    const ring = t0!.sharedRing!.ring!;
    expect(t1!.sharedRing!.ring!.devices).toEqual(ring.devices);
    // one sleep for the ring, one self-check
    expect(t0!.best.sleepNs).toBe(t1!.best.sleepNs);
    expect(t0!.modelCpuErrorRatio).toBeCloseTo(t1!.modelCpuErrorRatio!, 9);
    // the counter of the last interval: each device its share of the ring's measured CPU above its best
    const w = new Map(b.model.wastedCpuSecondsTotal.map((x) => [x.device, x.seconds]));
    const iv = (d: string, k: string) => b.bpf!.deviceCounters[d]![k]! - a.bpf!.deviceCounters[d]![k]!;
    const ringNs = ['259:0', '259:1'].reduce((x, d) => x + iv(d, 'spin_ns') + iv(d, 'sleeps') * t0!.switchCostNs, 0);
    const expected = (t: typeof t0, d: string) => Math.max(0, ringNs * t!.sharedRing!.ring!.cpuShare - iv(d, 'polled_ios') * t!.best.cpuNs) / 1e9;
    expect(w.get('nvme0n1')! + w.get('nvme1n1')!).toBeGreaterThan(0);
    expect(w.get('nvme0n1')).toBeCloseTo(expected(t0, '259:0'), 9);
    expect(w.get('nvme1n1')).toBeCloseTo(expected(t1, '259:1'), 9);
  });
});

describe('model metric families', () => {
  const s = run();
  const fams = modelFamilies(s);
  const byName = new Map(fams.map((f) => [f.name, f]));

  it('implements every name of the "Efficiency model" section of docs/metrics.md', () => {
    const doc = readFileSync(resolve(ROOT, 'docs/metrics.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Efficiency model'), doc.indexOf('## Exporter health'));
    const names = [...section.matchAll(/^\| `(hybridpoll_[a-z_]+)`/gm)].map((m) => m[1]!);
    expect(names.length).toBeGreaterThan(15);
    // the io_poll_delay setting exists only where the sleep is one (4.10–5.18): below
    const settingOnly = ['hybridpoll_optimal_io_poll_delay_microseconds'];
    for (const n of names.filter((x) => !settingOnly.includes(x))) {
      expect(byName.has(n), n).toBe(true);
      expect(byName.get(n)!.samples.length, n).toBeGreaterThan(0);
    }
    for (const n of settingOnly) expect(byName.get(n)?.samples ?? [], n).toEqual([]);
    expect(fams.map((f) => f.name).filter((n) => !names.includes(n))).toEqual([]);
  });

  it('where the sleep is set as io_poll_delay (4.10–5.18): the optimal sleep is one a whole-µs setting gives, and the setting is exported', () => {
    const snapshot = run('blkmq_hybrid');
    const fam = new Map(modelFamilies(snapshot).map((f) => [f.name, f]));
    const setting = fam.get('hybridpoll_optimal_io_poll_delay_microseconds')!.samples;
    expect(setting).toHaveLength(1);
    const opt = fam.get('hybridpoll_optimal_sleep_seconds')!.samples[0]!.value;
    // D ~ N(10 µs, 0.3 µs), O ~ 1 µs: a best sleep of several µs; no timer lag measured here, so the sleep is the setting
    expect(setting[0]!.value).toBeGreaterThanOrEqual(5);
    expect(Number.isInteger(setting[0]!.value)).toBe(true);
    expect(opt).toBeCloseTo(setting[0]!.value * 1e-6, 12);
    // and the advice says what to set
    expect(snapshot.model!.targets[0]!.recommendation).toContain(`a static sleep of ${setting[0]!.value}.0 µs (io_poll_delay ${setting[0]!.value}) would save`);
    // the same data on io_uring (any sleep): a best sleep at least as long, with a cpu at most as high
    const any = new Map(modelFamilies(run()).map((f) => [f.name, f]));
    const optAny = any.get('hybridpoll_optimal_sleep_seconds')!.samples[0]!.value;
    expect(optAny).toBeGreaterThanOrEqual(opt);
    expect(optAny - opt).toBeLessThan(1e-6);
  });

  it('exports seconds, one row per policy, and the current policy', () => {
    const v = (name: string, labels: Record<string, string>) => byName.get(name)!.samples.find((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l))!.value;
    expect(v('hybridpoll_current_sleep_seconds', { device: 'nvme0n1' })).toBeCloseTo(5e-6, 12);
    expect(v('hybridpoll_policy_sleep_seconds', { device: 'nvme0n1', policy: 'blkmq_half_mean' })).toBeCloseTo(5e-6, 7);
    expect(v('hybridpoll_policy_cpu_share_ratio', { device: 'nvme0n1', policy: 'classic' })).toBe(1);
    expect(new Set(byName.get('hybridpoll_policy_cpu_seconds_per_io')!.samples.map((x) => x.labels['policy']))).toEqual(
      new Set(POLICIES.filter((p) => p !== 'blkmq_fixed')), // no io_poll_delay > 0 on this device
    );
    expect(byName.get('hybridpoll_current_policy_info')!.samples).toEqual([{ labels: { device: 'nvme0n1', policy: 'iouring_half_min' }, value: 1 }]);
    expect(byName.get('hybridpoll_wasted_cpu_seconds_total')!.type).toBe('counter');
    // sleeping 5 µs on D ~ 10 µs: nothing censored, nothing unresolved (a 0 is exported, not absent)
    expect(v('hybridpoll_model_unresolved_ratio', { device: 'nvme0n1' })).toBe(0);
    // E[D] of D ~ N(10 µs, 0.3 µs) on the bucket grid, and the mean the ½-mean policy halves
    const meanD = v('hybridpoll_model_device_time_mean_seconds', { device: 'nvme0n1' });
    expect(Math.abs(meanD / 1e-5 - 1)).toBeLessThan(0.03);
    expect(v('hybridpoll_policy_sleep_seconds', { device: 'nvme0n1', policy: 'blkmq_half_mean' })).toBeCloseTo(meanD / 2, 12);
  });

  it('exports the unresolved share of a device whose fast I/Os are always complete at wake-up', () => {
    const r = prng(7);
    // half the I/Os at ~5 µs under a 10 µs sleep: found after the wake-up, never timed exactly
    const { hists, counters } = simulatePoller({ n: 4000, D: () => (r() < 0.5 ? 5000 : normal(r, 50_000, 500)), O: () => 1000, sleepNs: 10_000, cswNs: 1500 });
    const one: Snapshot = { ...s, model: undefined, bpf: { ...s.bpf!, takenAtNs: 100e9, devices: [{ dev: '259:0', device: 'nvme0n1', hists }], deviceCounters: { '259:0': counters } } };
    const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
    const zero = Object.fromEntries(Object.keys(hists).map((k) => [k, { buckets: [], count: 0, sumNs: 0, aux0: 0, aux1: 0 }]));
    const zeroCounters = Object.fromEntries(Object.keys(counters).map((k) => [k, 0]));
    model.update({ ...one, takenAtMs: 90_000, bpf: { ...one.bpf!, takenAtNs: 90e9, devices: [{ dev: '259:0', device: 'nvme0n1', hists: zero }], deviceCounters: { '259:0': zeroCounters } } });
    const fam = modelFamilies({ ...one, takenAtMs: 100_000, model: model.update({ ...one, takenAtMs: 100_000 }) }).find((f) => f.name === 'hybridpoll_model_unresolved_ratio')!;
    expect(fam.samples).toHaveLength(1);
    expect(fam.samples[0]!.value).toBeCloseTo(counters.overslept! / counters.polled_ios!, 9);
  });

  it('renders nothing without a model result', () => {
    expect(modelFamilies({ ...s, model: undefined })).toEqual([]);
  });

  if (!PROMTOOL) console.warn('SKIPPING promtool check of the model metrics: promtool not found (apt-get install prometheus)');
  it.skipIf(!PROMTOOL)('passes promtool check metrics', async () => {
    const text = await render(fams, 'prometheus');
    // promtool exits non-zero on errors; lint warnings are printed but do not fail
    const out = execFileSync(PROMTOOL!, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(out).not.toMatch(/error/i);
  });
});
