// Conversion of grid histograms to Prometheus histograms, and the BPF metric families built from a snapshot.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BpfSnapshot, BucketHist } from '../../src/bpf/types.js';
import { bucketOf, OVERFLOW, upperNs } from '../../src/model/buckets.js';
import { bpfFamilies, checkPromBuckets, MIN_EXPOSED_NS, promBuckets } from '../../src/metrics/bpf.js';
import { serialize } from '../../src/metrics/exposition.js';
import type { Snapshot } from '../../src/snapshot/types.js';
import { flatBuckets } from '../../src/model/hist.js';

function histOf(values: number[]): BucketHist {
  const m = new Map<number, number>();
  for (const v of values) m.set(bucketOf(v), (m.get(bucketOf(v)) ?? 0) + 1);
  return { buckets: flatBuckets([...m.entries()]), count: values.length, sumNs: values.reduce((a, b) => a + b, 0), aux0: 0, aux1: 0 };
}

describe('promBuckets', () => {
  it('is cumulative with le = the grid bound: 0.5 ms and 2 ms samples', () => {
    const b = promBuckets(histOf([500_000, 500_000, 2_000_000]), 1);
    const at = (le: number) => b.find((x) => Math.abs(x.le - le) < 1e-15)?.count;
    expect(at(458752e-9)).toBe(0); // (393216, 458752]
    expect(at(524288e-9)).toBe(2); // 0.5 ms lands in (458752, 524288]
    expect(at(1835008e-9)).toBe(2);
    expect(at(2097152e-9)).toBe(3); // 2 ms in (1835008, 2097152]
    expect(b.at(-1)).toEqual({ le: Infinity, count: 3 });
  });

  it('keeps 4, 2 or 1 boundaries per power of two, from MIN_EXPOSED_NS to the last finite bound', () => {
    const h = histOf([1000, 10_000, 100_000]);
    const finite = (k: number) => promBuckets(h, k).filter((x) => x.le !== Infinity).map((x) => Math.round(x.le * 1e9));
    const grid = Array.from({ length: OVERFLOW - bucketOf(MIN_EXPOSED_NS) }, (_, j) => upperNs(bucketOf(MIN_EXPOSED_NS) + j));
    expect(finite(1)).toEqual(grid);
    const ratios = (a: number[]) => a.slice(1).map((x, j) => x / a[j]!);
    expect(finite(4)[0]).toBe(MIN_EXPOSED_NS);
    expect(new Set(ratios(finite(4)))).toEqual(new Set([2]));
    expect(new Set(ratios(finite(2)))).toEqual(new Set([1.5, 4 / 3]));
  });

  it('puts samples below the first exposed bound into it and the overflow only into +Inf', () => {
    const h: BucketHist = { buckets: [0, 1, 3, 2, OVERFLOW, 4], count: 7, sumNs: 1, aux0: 0, aux1: 0 };
    const b = promBuckets(h, 4);
    expect(b[0]).toEqual({ le: MIN_EXPOSED_NS / 1e9, count: 3 });
    expect(b.at(-2)!.count).toBe(3);
    expect(b.at(-1)).toEqual({ le: Infinity, count: 7 });
  });

  it('is sorted, cumulative, ends in +Inf = count, and agrees with the grid for any samples and any keepEvery', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 40 }), { maxLength: 200 }), fc.constantFrom(1, 2, 4), (values, keep) => {
        const b = promBuckets(histOf(values), keep);
        checkPromBuckets(b, values.length);
        // every exposed bound counts exactly the samples ≤ it
        for (const { le, count } of b) if (le !== Infinity) expect(count).toBe(values.filter((v) => v <= Math.round(le * 1e9)).length);
      }),
    );
  });

  it('checkPromBuckets rejects what Prometheus would reject', () => {
    expect(() => checkPromBuckets([{ le: 1, count: 1 }], 1)).toThrow(/no \+Inf/);
    expect(() => checkPromBuckets([{ le: 1, count: 2 }, { le: Infinity, count: 1 }], 1)).toThrow(/not cumulative/);
    expect(() => checkPromBuckets([{ le: 2, count: 0 }, { le: 1, count: 0 }, { le: Infinity, count: 0 }], 0)).toThrow(/not increasing/);
    expect(() => checkPromBuckets([{ le: Infinity, count: 2 }], 3)).toThrow(/differs from _count 3/);
  });
});

describe('bpfFamilies', () => {
  const bpf: BpfSnapshot = {
    takenAtNs: 1,
    pollPath: 'tracepoint',
    programs: { rq_issue: { attached: true, runTimeNs: 2e9, runCount: 5 }, iopoll_enter: { attached: false, reason: 'EPERM' } },
    devices: [
      { dev: '259:0', hists: { rq_lat: histOf([10_000, 20_000]), sleep_req: histOf([4000]) } },
      { dev: '7:3', hists: { rq_lat: histOf([300_000]) } },
    ],
    rings: [{ ring: 'abc', pid: 9, comm: 'fio', flags: 0x20001, hybrid: true, hybridPollTimeNs: 8000, sleeps: 1, iopollPasses: 2 }],
    counters: { start_map_full: 0, issue_missed: 4, recursion_misses: 1 },
    deviceCounters: { '259:0': { polled_ios: 2, sleeps: 1, overslept: 1, spun: 0, classified_exact: 0, classified_calibrated: 1 }, '7:3': { polled_ios: 0 } },
  };
  const snap = (over: Partial<Snapshot> = {}): Snapshot => ({
    takenAtMs: 0,
    host: { features: {}, era: { era: 'iouring_hybrid', evidence: 'btf', reason: '' }, devices: [{ device: 'nvme0n1', devNum: '259:0', errors: [] }] },
    bpf,
    bpfStatus: { mode: 'auto', state: 'running', cause: 'ok', reason: 'tracepoint poll path', loaderRestarts: 2 },
    collectors: [],
    pollStatAges: [],
    hctxTotals: [],
    ...over,
  });
  const byName = (s: Snapshot) => new Map(bpfFamilies(s).map((f) => [f.name, f]));

  it('labels devices by name where sysfs knows them, else major:minor', () => {
    const f = byName(snap()).get('hybridpoll_io_latency_seconds')!;
    expect(f.type).toBe('histogram');
    const devices = new Set(f.samples.map((x) => x.labels['device']));
    expect(devices).toEqual(new Set(['nvme0n1', '7:3']));
    const count = f.samples.find((x) => x.suffix === '_count' && x.labels['device'] === 'nvme0n1');
    const sum = f.samples.find((x) => x.suffix === '_sum' && x.labels['device'] === 'nvme0n1');
    const inf = f.samples.find((x) => x.suffix === '_bucket' && x.labels['device'] === 'nvme0n1' && x.labels['le'] === '+Inf');
    expect([count?.value, sum?.value, inf?.value]).toEqual([2, 30_000 / 1e9, 2]);
  });

  it('exports the self-metrics, drops and run time', () => {
    const m = byName(snap());
    expect(m.get('hybridpoll_bpf_up')!.samples[0]!.value).toBe(1);
    expect(m.get('hybridpoll_bpf_poll_path_info')!.samples[0]!.labels).toEqual({ path: 'tracepoint' });
    expect(m.get('hybridpoll_bpf_loader_restarts_total')!.samples[0]!.value).toBe(2);
    expect(m.get('hybridpoll_bpf_program_attached')!.samples.map((x) => [x.labels['program'], x.value])).toEqual([['rq_issue', 1], ['iopoll_enter', 0]]);
    expect(m.get('hybridpoll_bpf_events_dropped_total')!.samples.find((x) => x.labels['reason'] === 'issue_missed')!.value).toBe(4);
    expect(m.get('hybridpoll_bpf_program_run_seconds_total')!.samples).toEqual([{ labels: { program: 'rq_issue' }, value: 2 }]);
    expect(m.get('hybridpoll_polled_ios_total')!.samples.find((x) => x.labels['device'] === 'nvme0n1')!.value).toBe(2);
    expect(m.get('hybridpoll_ring_hybrid_poll_time_seconds')!.samples).toEqual([{ labels: { ring: 'abc' }, value: 8e-6 }]);
  });

  it("exports each ring's sleeps, and where the loader counts its loops its I/Os, loops, spin and CPU (wall − off-CPU + wake latency)", () => {
    const loops = { polledIos: 1000, count: 990, wallNs: 60e6, spinNs: 20e6, offcpuNs: 30e6, wakeLatencyNs: 2e6 };
    const m = byName(snap({ bpf: { ...bpf, rings: [{ ...bpf.rings[0]!, loops }, { ...bpf.rings[0]!, ring: 'old', sleeps: 7 }] } }));
    expect(m.get('hybridpoll_ring_poll_sleeps_total')!.samples).toEqual([{ labels: { ring: 'abc' }, value: 1 }, { labels: { ring: 'old' }, value: 7 }]);
    // 'old' comes from a loader without the loop counters: no series, not a 0
    expect(m.get('hybridpoll_ring_polled_ios_total')!.samples).toEqual([{ labels: { ring: 'abc' }, value: 1000 }]);
    expect(m.get('hybridpoll_ring_poll_loops_total')!.samples).toEqual([{ labels: { ring: 'abc' }, value: 990 }]);
    expect(m.get('hybridpoll_ring_poll_spin_seconds_total')!.samples).toEqual([{ labels: { ring: 'abc' }, value: 0.02 }]);
    expect(m.get('hybridpoll_ring_poll_cpu_seconds_total')!.samples).toEqual([{ labels: { ring: 'abc' }, value: 0.032 }]);
    expect(m.get('hybridpoll_ring_poll_cpu_seconds_total')!.type).toBe('counter');
  });

  it('exports the depth counters per device, as counters, only where the loader counted them', () => {
    const depth = snap({ bpf: { ...bpf, deviceCounters: { ...bpf.deviceCounters, '259:0': { ...bpf.deviceCounters['259:0']!, waits: 40, inflight_sum: 130 } } } });
    const text = serialize(bpfFamilies(depth).filter((f) => /^hybridpoll_poll_(waits|inflight_ios)_total$/.test(f.name)), 'prometheus');
    expect(text).toMatch(/^# HELP hybridpoll_poll_waits_total Waiting calls of pollers at whose start .*\n# TYPE hybridpoll_poll_waits_total counter\nhybridpoll_poll_waits_total\{device="nvme0n1"\} 40\n/);
    expect(text).toMatch(/# HELP hybridpoll_poll_inflight_ios_total .*rate\(this\) \/ rate\(poll_waits_total\) is the mean polled I\/Os in flight at the start of a waiting call\.\n# TYPE hybridpoll_poll_inflight_ios_total counter\nhybridpoll_poll_inflight_ios_total\{device="nvme0n1"\} 130\n?$/);
    // 7:3 comes from a device record without the fields (an older loader): no series, not a 0
    expect(text).not.toContain('7:3');
    // nothing at all from a snapshot without them
    expect(bpfFamilies(snap()).find((f) => f.name === 'hybridpoll_poll_waits_total')!.samples).toEqual([]);
  });

  it('says why when the loader is not running, and nothing when BPF is switched off', () => {
    const down = byName(snap({ bpf: undefined, bpfStatus: { mode: 'auto', state: 'disabled', cause: 'not_privileged', reason: 'not privileged: needs root', loaderRestarts: 0 } }));
    expect(down.get('hybridpoll_bpf_up')!.samples[0]!.value).toBe(0);
    expect(down.get('hybridpoll_bpf_status_info')!.samples[0]!.labels).toEqual({ state: 'disabled', reason: 'not_privileged' });
    expect(down.has('hybridpoll_io_latency_seconds')).toBe(false);
    expect(bpfFamilies(snap({ bpf: undefined, bpfStatus: { mode: 'off', state: 'disabled', cause: 'disabled_by_flag', reason: 'disabled by flag', loaderRestarts: 0 } }))).toEqual([]);
  });

  it('reduces boundaries with keepEvery', () => {
    const count = (k: number) => bpfFamilies(snap(), { keepEvery: k }).find((f) => f.name === 'hybridpoll_io_latency_seconds')!.samples.filter((x) => x.suffix === '_bucket').length;
    expect(count(1)).toBeGreaterThan(3.5 * count(4));
    expect(count(2)).toBeGreaterThan(1.8 * count(4));
  });
});
