// --bpf.histograms: which eBPF histograms keep their full buckets; the others expose only
// le="+Inf" with _sum and _count (equal to the full histogram's), as valid histograms.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, CommanderError } from 'commander';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BpfSnapshot, BucketHist, HistKind } from '../../src/bpf/types.js';
import { addHostOptions, hostOptionsOf } from '../../src/cli/common.js';
import { bpfFamilies, DEFAULT_FULL_HISTOGRAMS, HISTOGRAM_NAMES, parseHistogramList, promBuckets } from '../../src/metrics/bpf.js';
import type { MetricFamily } from '../../src/metrics/family.js';
import { render } from '../../src/metrics/render.js';
import { bucketOf, OVERFLOW } from '../../src/model/buckets.js';
import type { Snapshot } from '../../src/snapshot/types.js';
import { flatBuckets } from '../../src/model/hist.js';

const KINDS: HistKind[] = ['rq_lat', 'sleep_req', 'offcpu', 'wake_ovh', 'wake_lat', 'spin', 'dev_spun', 'found_slept', 'oversleep_ub', 'iopoll'];
const ROOT = resolve(import.meta.dirname, '../..');

function histOf(values: number[], overflow = 0): BucketHist {
  const m = new Map<number, number>();
  for (const v of values) m.set(bucketOf(v), (m.get(bucketOf(v)) ?? 0) + 1);
  if (overflow) m.set(OVERFLOW, (m.get(OVERFLOW) ?? 0) + overflow);
  return { buckets: flatBuckets([...m.entries()]), count: values.length + overflow, sumNs: values.reduce((a, b) => a + b, 0), aux0: 0, aux1: 0 };
}

function snapOf(devices: { dev: string; values: number[] }[]): Snapshot {
  const bpf: BpfSnapshot = {
    takenAtNs: 1,
    pollPath: 'fentry',
    programs: {},
    devices: devices.map(({ dev, values }) => ({ dev, hists: Object.fromEntries(KINDS.map((k, j) => [k, histOf(values.map((v) => v * (j + 1)), j % 3)])) })),
    rings: [],
    counters: {},
    deviceCounters: {},
  };
  return {
    takenAtMs: 0,
    host: { features: {}, era: { era: 'iouring_hybrid', evidence: 'btf', reason: '' }, devices: [{ device: 'nvme0n1', devNum: '259:0', errors: [] }] },
    bpf,
    bpfStatus: { mode: 'auto', state: 'running', cause: 'ok', reason: '', loaderRestarts: 0 },
    collectors: [],
    pollStatAges: [],
    hctxTotals: [],
  };
}

const histFamilies = (fs: MetricFamily[]) => new Map(fs.filter((f) => f.type === 'histogram').map((f) => [f.name, f]));
const buckets = (f: MetricFamily, device: string) => f.samples.filter((x) => x.suffix === '_bucket' && x.labels['device'] === device);
const one = (f: MetricFamily, device: string, suffix: '_sum' | '_count') => f.samples.find((x) => x.suffix === suffix && x.labels['device'] === device)!.value;

describe('parseHistogramList (--bpf.histograms)', () => {
  it('names every histogram kind by its metric name without hybridpoll_ and _seconds', () => {
    expect(HISTOGRAM_NAMES).toHaveLength(10);
    expect(HISTOGRAM_NAMES).toContain('io_latency');
    expect(HISTOGRAM_NAMES).toContain('poll_spin');
    expect(HISTOGRAM_NAMES).toContain('iopoll_pass');
    expect(DEFAULT_FULL_HISTOGRAMS).toEqual(['io_latency']);
  });

  it('accepts a list (in any order, with spaces), all and none', () => {
    expect(parseHistogramList('io_latency')).toEqual(['io_latency']);
    expect(parseHistogramList('poll_spin, io_latency')).toEqual(['io_latency', 'poll_spin']);
    expect(parseHistogramList('all')).toEqual([...HISTOGRAM_NAMES]);
    expect(parseHistogramList('none')).toEqual([]);
  });

  it('rejects unknown names, full metric names and an empty list, naming the valid ones', () => {
    for (const bad of ['io_latency,bogus', 'hybridpoll_io_latency_seconds', 'io_latency_seconds', '', ',', 'all,io_latency']) {
      expect(() => parseHistogramList(bad), bad).toThrow(/expected all, none or a comma-separated list of: io_latency, poll_sleep_requested, .*iopoll_pass$/);
    }
    expect(() => parseHistogramList('io_latency,bogus')).toThrow(/^unknown histogram "bogus";/);
  });

  const parse = (args: string[]) => {
    const cmd = addHostOptions(new Command('serve')).exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
    cmd.parse(args, { from: 'user' });
    return hostOptionsOf(cmd.opts(), cmd);
  };

  it('defaults to io_latency and reaches the host options', () => {
    expect(parse([]).bpf.fullHistograms).toEqual(['io_latency']);
    expect(parse(['--bpf.histograms=io_latency,poll_spin']).bpf.fullHistograms).toEqual(['io_latency', 'poll_spin']);
    expect(parse(['--bpf.histograms', 'all']).bpf.fullHistograms).toEqual([...HISTOGRAM_NAMES]);
  });

  it('fails an unknown name as an invalid option argument', () => {
    let err: unknown;
    try {
      parse(['--bpf.histograms=poll_spinn']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CommanderError);
    expect((err as CommanderError).code).toBe('commander.invalidArgument');
    expect((err as CommanderError).exitCode).toBe(1);
    expect((err as CommanderError).message).toMatch(/^error: option '--bpf.histograms <list>' argument 'poll_spinn' is invalid\. unknown histogram "poll_spinn"; expected .*io_latency, .*$/);
  });

  it.skipIf(!existsSync(resolve(ROOT, 'dist/cli.js')))('the built CLI exits 1 with one error: line', () => {
    const r = spawnSync(process.execPath, [resolve(ROOT, 'dist/cli.js'), 'serve', '--bpf.histograms=bogus'], { encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(1);
    const errors = r.stderr.split('\n').filter((l) => l.startsWith('error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('poll_oversleep_upper_bound');
  });
});

describe('the loop-start offset (aux of iopoll)', () => {
  it('is exported per device with iopoll: aux0 in seconds, aux1 the loops (0 where the loader does not count it)', () => {
    const snap = snapOf([{ dev: '259:0', values: [1000, 2000] }, { dev: '7:3', values: [500] }]);
    const iop = snap.bpf!.devices[0]!.hists.iopoll!;
    snap.bpf!.devices[0]!.hists.iopoll = { ...iop, aux0: 3_500, aux1: 2 };
    const fs = bpfFamilies(snap);
    const get = (name: string) => fs.find((f) => f.name === `hybridpoll_${name}`)!.samples;
    expect(get('poll_loop_start_offset_seconds_total').map((x) => [x.labels['device'], x.value])).toEqual([['nvme0n1', 3.5e-6], ['7:3', 0]]);
    expect(get('poll_loop_start_offset_total').map((x) => [x.labels['device'], x.value])).toEqual([['nvme0n1', 2], ['7:3', 0]]);
  });
});

describe('histogram exposition per --bpf.histograms', () => {
  const snap = snapOf([
    { dev: '259:0', values: [100, 900, 5_000, 20_000, 20_000, 3e6] },
    { dev: '7:3', values: [64, 300_000] },
  ]);
  const all = histFamilies(bpfFamilies(snap, { keepEvery: 4, fullHistograms: HISTOGRAM_NAMES }));
  const def = histFamilies(bpfFamilies(snap));

  it('keeps every histogram name and type', () => {
    expect([...def.keys()]).toEqual([...all.keys()]);
    expect(def.size).toBe(10);
  });

  it('by default, full buckets for io_latency only; the others +Inf, _sum and _count equal to the full ones', () => {
    for (const [name, full] of all) {
      const d = def.get(name)!;
      for (const device of ['nvme0n1', '7:3']) {
        const fullBuckets = buckets(full, device);
        expect(fullBuckets.length).toBeGreaterThan(20);
        const inf = fullBuckets.at(-1)!;
        expect(inf.labels).toEqual({ device, le: '+Inf' });
        if (name === 'hybridpoll_io_latency_seconds') {
          expect(d.samples.filter((x) => x.labels['device'] === device)).toEqual(full.samples.filter((x) => x.labels['device'] === device));
          continue;
        }
        expect(buckets(d, device)).toEqual([inf]);
        expect(inf.value).toBe(one(full, device, '_count'));
        expect(one(d, device, '_count')).toBe(one(full, device, '_count'));
        expect(one(d, device, '_sum')).toBe(one(full, device, '_sum'));
      }
    }
  });

  it('cuts the series per device from 330 to 60 (pow2)', () => {
    const series = (m: Map<string, MetricFamily>) => [...m.values()].reduce((n, f) => n + f.samples.filter((x) => x.labels['device'] === 'nvme0n1').length, 0);
    expect(series(all)).toBe(10 * (31 + 2)); // 30 boundaries + +Inf, _sum, _count
    expect(series(def)).toBe(31 + 2 + 9 * 3);
  });

  it('renders valid histograms (+Inf bucket, _sum, _count) in both formats', async () => {
    for (const format of ['prometheus', 'openmetrics'] as const) {
      const text = await render(bpfFamilies(snap), format);
      expect(text).toContain('# TYPE hybridpoll_poll_spin_seconds histogram');
      expect(text).toContain('hybridpoll_poll_spin_seconds_bucket{device="nvme0n1",le="+Inf"} 8'); // 6 samples + 2 in the overflow bucket
      expect(text).toContain('hybridpoll_poll_spin_seconds_count{device="nvme0n1"} 8');
      expect(text).not.toMatch(/hybridpoll_poll_spin_seconds_bucket\{device="nvme0n1",le="0/);
      expect(text).toMatch(/hybridpoll_io_latency_seconds_bucket\{device="nvme0n1",le="0\.000001024"\} \d/);
    }
  });

  it('full buckets are exactly promBuckets for any samples and any keepEvery (overflow included)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 2 ** 40 }), { maxLength: 60 }), fc.constantFrom(1, 2, 4), (values, keepEvery) => {
        const s = snapOf([{ dev: '259:0', values }]);
        const f = bpfFamilies(s, { keepEvery, fullHistograms: ['poll_spin'] }).find((x) => x.name === 'hybridpoll_poll_spin_seconds')!;
        const h = s.bpf!.devices[0]!.hists.spin!;
        const want = promBuckets(h, keepEvery).map((b) => ({ labels: { device: 'nvme0n1', le: b.le === Infinity ? '+Inf' : String(b.le) }, value: b.count, suffix: '_bucket' }));
        expect(buckets(f, 'nvme0n1')).toEqual(want);
      }),
    );
  });

  it('still throws when +Inf would differ from _count', () => {
    const s = snapOf([{ dev: '259:0', values: [1000] }]);
    s.bpf!.devices[0]!.hists.offcpu = { buckets: [10, 1], count: 2, sumNs: 1, aux0: 0, aux1: 0 };
    expect(() => bpfFamilies(s)).toThrow(/\+Inf bucket 1 differs from _count 2/);
  });
});
