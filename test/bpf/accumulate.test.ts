// Restart accumulation: the loader's maps start from zero after a restart; what the exporter reports must not go down.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RestartAccumulator } from '../../src/bpf/accumulate.js';
import { parseLine, toBpfSnapshot, type LoaderHello, type LoaderSnap } from '../../src/bpf/protocol.js';
import type { BpfRing, BpfSnapshot, BucketHist } from '../../src/bpf/types.js';
import { bucketPairs, flatBuckets } from '../../src/model/hist.js';

function hist(buckets: [number, number][], sumNs = 0): BucketHist {
  return { buckets: flatBuckets(buckets), count: buckets.reduce((a, [, c]) => a + c, 0), sumNs, aux0: 0, aux1: 0 };
}

function raw(n: { lat?: [number, number][]; ios?: number; drops?: number; run?: number; rings?: BpfRing[] }): BpfSnapshot {
  return {
    takenAtNs: 0,
    pollPath: 'tracepoint',
    programs: { rq_complete: { attached: true, ...(n.run !== undefined ? { runTimeNs: n.run, runCount: n.run } : {}) } },
    devices: n.lat ? [{ dev: '259:0', hists: { rq_lat: hist(n.lat, 10 * (n.lat.length ?? 0)) } }] : [],
    rings: n.rings ?? [],
    counters: { issue_missed: n.drops ?? 0 },
    deviceCounters: n.ios !== undefined ? { '259:0': { polled_ios: n.ios } } : {},
  };
}

const ring = (id: string, sleeps: number): BpfRing => ({ ring: id, pid: 1, comm: 'x', flags: 0, hybrid: false, hybridPollTimeNs: null, sleeps, iopollPasses: sleeps });

describe('RestartAccumulator', () => {
  it('passes values through within one run', () => {
    const a = new RestartAccumulator();
    a.newRun();
    const s = a.apply(raw({ lat: [[50, 3]], ios: 3, drops: 1, run: 7 }));
    expect(s.devices[0]!.hists.rq_lat).toEqual(hist([[50, 3]], 10));
    expect(s.deviceCounters['259:0']).toEqual({ polled_ios: 3 });
    expect(s.counters['issue_missed']).toBe(1);
    expect(s.programs['rq_complete']).toEqual({ attached: true, runTimeNs: 7, runCount: 7 });
  });

  it('adds the totals of the previous run after a restart', () => {
    const a = new RestartAccumulator();
    a.newRun();
    a.apply(raw({ lat: [[50, 3], [60, 1]], ios: 4, drops: 2, run: 100 }));
    a.newRun();
    const early = a.apply(raw({ drops: 0 })); // the new loader has seen nothing yet
    expect(early.devices[0]!.hists.rq_lat!.count).toBe(4);
    expect(early.deviceCounters['259:0']).toEqual({ polled_ios: 4 });
    const s = a.apply(raw({ lat: [[50, 1], [70, 2]], ios: 3, drops: 1, run: 5 }));
    expect(s.devices[0]!.hists.rq_lat!.buckets).toEqual([50, 4, 60, 1, 70, 2]);
    expect(s.devices[0]!.hists.rq_lat!.count).toBe(7);
    expect(s.devices[0]!.hists.rq_lat!.sumNs).toBe(20 + 20);
    expect(s.deviceCounters['259:0']).toEqual({ polled_ios: 7 });
    expect(s.counters['issue_missed']).toBe(3);
    expect(s.programs['rq_complete']!.runTimeNs).toBe(105);
  });

  it("keeps dev_spun's per-bucket sums across a restart while every run kept them, and drops them once one did not", () => {
    const spun = (b: [number, number][], sums: [number, number][] | undefined): BpfSnapshot => ({
      ...raw({}),
      devices: [{ dev: '259:0', hists: { dev_spun: { ...hist(b, sums ? sums.reduce((x, [, v]) => x + v, 0) : 0), ...(sums ? { bucketSumsNs: flatBuckets(sums) } : {}) } } }],
    });
    const a = new RestartAccumulator();
    a.newRun();
    a.apply(spun([[37, 2]], [[37, 98_000]]));
    a.newRun();
    const s = a.apply(spun([[37, 1], [38, 1]], [[37, 49_500], [38, 52_000]]));
    expect(s.devices[0]!.hists.dev_spun!.bucketSumsNs).toEqual([37, 147_500, 38, 52_000]);
    a.newRun();
    // a run whose device went to the fallback map: its samples have no sums, so no total has them
    const t = a.apply(spun([[37, 1]], undefined));
    expect(t.devices[0]!.hists.dev_spun!.buckets).toEqual([37, 4, 38, 1]);
    expect(t.devices[0]!.hists.dev_spun).not.toHaveProperty('bucketSumsNs');
  });

  it('keeps the depth counters monotonic across a loader restart, through the protocol, with their ratio', () => {
    const hello = parseLine(JSON.stringify({ type: 'hello', proto: 2, version: '0', pid: 1, ncpu: 2, nb: 144, kernel: '7.3', poll_path: 'fentry', programs: {},
      polled_flag: '__REQ_POLLED=22', hybrid_poll_time: true, test_tgid: 0, calib_pct: 200, load_us: 1 })) as LoaderHello;
    const dev = (polled: number, depth?: [number, number]) => ({ dev: '259:0', polled_ios: polled, classified_exact: 0, classified_calibrated: 0, sleeps_unmatched: 0,
      min_found_ns: 0, found_threshold_ns: 0, min_dev_ns: 0, ...(depth ? { waits: depth[0], inflight_sum: depth[1] } : {}) });
    const snapOf = (d: ReturnType<typeof dev>) => toBpfSnapshot(hello, parseLine(JSON.stringify({ type: 'snap', id: '1', t: 1, hists: [], devs: [d], rings: [],
      counters: {}, gates: {}, bpf_stats: 0, progs: {} })) as LoaderSnap);
    const a = new RestartAccumulator();
    a.newRun();
    a.apply(snapOf(dev(40, [10, 40]))); // QD4: 10 waits at 4 in flight
    a.newRun();
    const early = a.apply(snapOf(dev(0, [0, 0])));
    expect(early.deviceCounters['259:0']).toMatchObject({ polled_ios: 40, waits: 10, inflight_sum: 40 });
    const s = a.apply(snapOf(dev(8, [4, 8]))); // the new run at QD2
    expect(s.deviceCounters['259:0']).toMatchObject({ polled_ios: 48, waits: 14, inflight_sum: 48 });
    // a run of an older loader (no depth fields) keeps the totals instead of dropping or resetting them
    a.newRun();
    const older = a.apply(snapOf(dev(5)));
    expect(older.deviceCounters['259:0']).toMatchObject({ polled_ios: 53, waits: 14, inflight_sum: 48 });
  });

  it('absorbs a value that goes down within a run (a recreated map entry)', () => {
    const a = new RestartAccumulator();
    a.newRun();
    a.apply(raw({ ios: 10, lat: [[5, 10]] }));
    const s = a.apply(raw({ ios: 2, lat: [[5, 1]] }));
    expect(s.deviceCounters['259:0']!['polled_ios']).toBe(12);
    expect(s.devices[0]!.hists.rq_lat!.count).toBe(11);
  });

  it('forgets rings whose process exited, keeps waiting for others across a restart', () => {
    const a = new RestartAccumulator();
    a.newRun();
    a.apply(raw({ rings: [ring('a', 5), ring('b', 1)] }));
    expect(a.apply(raw({ rings: [ring('a', 6)] })).rings.map((r) => r.ring)).toEqual(['a']); // b exited
    a.newRun();
    expect(a.apply(raw({ rings: [] })).rings).toEqual([]);
    expect(a.apply(raw({ rings: [ring('a', 1)] })).rings[0]!.sleeps).toBe(7); // a came back: 6 + 1
    expect(a.apply(raw({ rings: [ring('b', 1)] })).rings[0]!.sleeps).toBe(1); // b's history was dropped
  });

  it("keeps a ring's loop counters monotonic across a restart, and leaves them out where the loader has none", () => {
    const a = new RestartAccumulator();
    const loops = (n: number) => ({ polledIos: n, count: n, wallNs: 10 * n, spinNs: 4 * n, offcpuNs: 5 * n, wakeLatencyNs: n });
    a.newRun();
    a.apply(raw({ rings: [{ ...ring('a', 5), loops: loops(100) }] }));
    a.newRun();
    expect(a.apply(raw({ rings: [{ ...ring('a', 1), loops: loops(3) }] })).rings[0]!.loops).toEqual(loops(103));
    expect(a.apply(raw({ rings: [ring('c', 1)] })).rings[0]).not.toHaveProperty('loops');
  });

  it('forgets a device on request, and only that one', () => {
    const a = new RestartAccumulator();
    a.newRun();
    const two = (ios: number): BpfSnapshot => ({
      ...raw({ lat: [[5, ios]], ios }),
      devices: [{ dev: '259:0', hists: { rq_lat: hist([[5, ios]]) } }, { dev: '7:1', hists: { rq_lat: hist([[6, ios]]) } }],
      deviceCounters: { '259:0': { polled_ios: ios }, '7:1': { polled_ios: ios } },
    });
    a.apply(two(3));
    expect(a.devices().sort()).toEqual(['259:0', '7:1']);
    a.forget('7:1');
    expect(a.devices()).toEqual(['259:0']);
    const s = a.apply(raw({ lat: [[5, 4]], ios: 4 }));
    expect(s.devices.map((d) => d.dev)).toEqual(['259:0']);
    expect(Object.keys(s.deviceCounters)).toEqual(['259:0']);
    expect(s.deviceCounters['259:0']!['polled_ios']).toBe(4);
  });

  it('never lets any reported counter or bucket go down, whatever the runs do', () => {
    // a run = a sequence of growing raw readings; between runs the loader restarts from zero
    const run = fc.array(fc.tuple(fc.nat(50), fc.nat(50), fc.nat(5)), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.array(run, { minLength: 1, maxLength: 5 }), (runs) => {
        const a = new RestartAccumulator();
        let prev: BpfSnapshot | undefined;
        let trueTotal = 0;
        for (const steps of runs) {
          a.newRun();
          let ios = 0;
          let b1 = 0;
          let b2 = 0;
          for (const [di, d1, d2] of steps) {
            ios += di;
            b1 += d1;
            b2 += d2;
            const s = a.apply(raw({ ios, lat: ([[10, b1], [20, b2]] as [number, number][]).filter(([, c]) => c > 0) }));
            const h = s.devices[0]?.hists.rq_lat;
            if (prev) {
              expect(s.deviceCounters['259:0']!['polled_ios']).toBeGreaterThanOrEqual(prev.deviceCounters['259:0']!['polled_ios']!);
              const ph = prev.devices[0]?.hists.rq_lat;
              for (const [i, c] of ph ? bucketPairs(ph) : []) expect(bucketPairs(h!).find(([j]) => j === i)![1]).toBeGreaterThanOrEqual(c);
            }
            if (h) expect(h.count).toBe(bucketPairs(h).reduce((x, [, c]) => x + c, 0));
            prev = s;
          }
          trueTotal += ios;
        }
        // with a reading at the end of every run nothing is lost
        expect(prev!.deviceCounters['259:0']!['polled_ios']).toBe(trueTotal);
      }),
    );
  });
});
