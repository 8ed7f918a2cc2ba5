// The loader protocol: line splitting with a bound, validation of every message, conversion to BpfSnapshot.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NB } from '../../src/model/buckets.js';
import { LineSplitter, MAX_LINE_BYTES, parseLine, ProtocolError, toBpfSnapshot, type LoaderHello, type LoaderSnap } from '../../src/bpf/protocol.js';

const HELLO = {
  type: 'hello', proto: 2, version: '0.1.0', pid: 42, ncpu: 2, nb: 144, kernel: '6.18.44', poll_path: 'tracepoint',
  programs: {
    rq_issue: { state: 'attached', via: 'tp_btf' },
    rq_complete: { state: 'attached', via: 'raw_tp', note: 'tp_btf: probe load refused: Operation not permitted' },
    iopoll_enter: { state: 'failed', reason: 'fentry: probe load refused: Operation not permitted' },
    classic_poll_exit: { state: 'disabled', reason: 'tracepoint path forced (--force-tracepoint)' },
  },
  issue_arg: 0, polled_flag: '__REQ_POLLED=22', hybrid_poll_time: true, test_tgid: 0, calib_pct: 200, attempts: 1, load_us: 400000,
};

const DEV = { dev: '259:0', polled_ios: 3, classified_exact: 0, classified_calibrated: 2, sleeps_unmatched: 0, min_found_ns: 900, found_threshold_ns: 1800, min_dev_ns: 0 };

function snapJson(over: Record<string, unknown> = {}) {
  return {
    type: 'snap', id: '7', t: 123456789,
    hists: [
      { dev: '259:0', kind: 'rq_lat', count: 3, sum: 30000, aux0: 12288, aux1: 0, b: [50, 2, 60, 1] },
      { dev: '259:0', kind: 'sleep_req', count: 2, sum: 8000, aux0: 7000, aux1: 2, b: [45, 2] },
      { dev: '259:0', kind: 'found_slept', count: 1, sum: 9000, aux0: 0, aux1: 0, b: [46, 1] },
      { dev: '259:0', kind: 'spin', count: 2, sum: 500, aux0: 0, aux1: 0, b: [30, 2] },
      { dev: '8:0', kind: 'rq_lat', count: 1, sum: 100, aux0: 4096, aux1: 1, b: [26, 1] },
    ],
    devs: [DEV],
    rings: [{ ring: '00ab12cd34ef', pid: 99, comm: 'fio', flags: 0x20001, hpt: 8000, sleeps: 2, passes: 5 }],
    counters: { start_map_full: 0, issue_missed: 1, task_map_full: 0, hist_map_full: 0 },
    gates: { polled_tasks: 1, sleepers: 0 },
    bpf_stats: 1,
    progs: { rq_issue: { run_ns: 1000, run_cnt: 10, recursion_misses: 0 }, rq_complete: { run_ns: 2000, run_cnt: 10, recursion_misses: 3 } },
    ...over,
  };
}

const line = (o: unknown) => JSON.stringify(o);

describe('LineSplitter', () => {
  it('reassembles lines split across chunks and splits chunks holding several lines', () => {
    const lines: string[] = [];
    const s = new LineSplitter((l) => lines.push(l), () => {}, 100);
    s.push(Buffer.from('{"a":'));
    s.push(Buffer.from('1}\n{"b":2}\n{"c"'));
    s.push(Buffer.from(':3}\n'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it('drops an oversized line up to its newline, reports it once, and keeps going', () => {
    const lines: string[] = [];
    const oversized: number[] = [];
    const s = new LineSplitter((l) => lines.push(l), (n) => oversized.push(n), 10);
    s.push(Buffer.from('short\n' + 'x'.repeat(8)));
    s.push(Buffer.from('y'.repeat(20)));
    s.push(Buffer.from('zz\nnext\n'));
    expect(lines).toEqual(['short', 'next']);
    expect(oversized).toEqual([30]);
  });

  it('splits any chunking of any text exactly like String.split', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: fc.constantFrom('a', 'b', '\n', 'é') }), { maxLength: 20 }), (pieces) => {
        const text = pieces.join('');
        const lines: string[] = [];
        const s = new LineSplitter((l) => lines.push(l), () => {}, 1 << 20);
        for (const p of pieces) s.push(Buffer.from(p));
        expect(lines).toEqual(text.split('\n').slice(0, -1));
      }),
    );
  });
});

describe('parseLine', () => {
  it('parses a hello line', () => {
    const h = parseLine(line(HELLO)) as LoaderHello;
    expect(h.type).toBe('hello');
    expect(h.pollPath).toBe('tracepoint');
    expect(h.programs['rq_complete']).toEqual({ state: 'attached', via: 'raw_tp', reason: 'tp_btf: probe load refused: Operation not permitted' });
    expect(h.programs['iopoll_enter']?.state).toBe('failed');
  });

  it('parses a snap line', () => {
    const s = parseLine(line(snapJson())) as LoaderSnap;
    expect(s.id).toBe('7');
    expect(s.hists).toHaveLength(5);
    expect(s.hists[0]).toEqual({ dev: '259:0', kind: 'rq_lat', hist: { buckets: [50, 2, 60, 1], count: 3, sumNs: 30000, aux0: 12288, aux1: 0 } });
    expect(s.rings[0]?.hpt).toBe(8000);
    expect(s.bpfStats).toBe(true);
  });

  it.each([
    ['not JSON', '{"type":"snap",', /not JSON/],
    ['a JSON array', '[1,2]', /message: expected an object/],
    ['an unknown message type', line({ type: 'bogus' }), /unknown message type "bogus"/],
    ['no message type', line({ id: 1 }), /unknown message type undefined/],
    ['another protocol version', line({ ...HELLO, proto: 1 }), /protocol 1.*rebuild the loader/],
    ['another bucket grid', line({ ...HELLO, nb: 100 }), /100 buckets/],
    ['an unknown poll path', line({ ...HELLO, poll_path: 'kprobe' }), /unknown path "kprobe"/],
    ['an unknown program state', line({ ...HELLO, programs: { x: { state: 'maybe' } } }), /hello.programs.x.state: unknown state/],
    ['a negative count', line(snapJson({ counters: { issue_missed: -1 } })), /snap.counters.issue_missed: expected a non-negative integer/],
    ['a fractional count', line(snapJson({ gates: { sleepers: 0.5 } })), /snap.gates.sleepers/],
    ['a bucket index off the grid', line(snapJson({ hists: [{ dev: '1:0', kind: 'spin', count: 1, sum: 1, aux0: 0, aux1: 0, b: [NB, 1] }] })), /bucket index 144 is off the grid/],
    ['a count that is not the sum of its buckets', line(snapJson({ hists: [{ dev: '1:0', kind: 'spin', count: 5, sum: 1, aux0: 0, aux1: 0, b: [3, 1] }] })), /count 5 is not the sum of the buckets \(1\)/],
    ['a malformed device', line(snapJson({ hists: [{ dev: 'sda', kind: 'spin', count: 0, sum: 0, aux0: 0, aux1: 0, b: [] }] })), /expected "major:minor"/],
    ['buckets that are not pairs', line(snapJson({ hists: [{ dev: '1:0', kind: 'spin', count: 1, sum: 0, aux0: 0, aux1: 0, b: [1, 1, 1] }] })), /snap.hists\[0\].b: expected index, count pairs, got 3 numbers/],
    ['a bucket index repeated', line(snapJson({ hists: [{ dev: '1:0', kind: 'spin', count: 2, sum: 0, aux0: 0, aux1: 0, b: [7, 1, 7, 1] }] })), /snap.hists\[0\].b\[2\]: bucket index 7 repeated or not ascending/],
    ['bucket indices descending', line(snapJson({ hists: [{ dev: '1:0', kind: 'spin', count: 2, sum: 0, aux0: 0, aux1: 0, b: [9, 1, 7, 1] }] })), /bucket index 7 repeated or not ascending/],
    ['a bucket pair as an array', line(snapJson({ hists: [{ dev: '1:0', kind: 'spin', count: 1, sum: 0, aux0: 0, aux1: 0, b: [[3, 1], [4, 0]] }] })), /snap.hists\[0\].b\[0\]: expected a non-negative integer/],
    ['bucket sums on other indices than the buckets', line(snapJson({ hists: [{ dev: '1:0', kind: 'dev_spun', count: 2, sum: 90, aux0: 0, aux1: 0, b: [7, 1, 9, 1], bs: [7, 40, 8, 50] }] })), /snap.hists\[0\].bs\[2\]: sum of bucket 8 where the buckets have 9/],
    ['fewer bucket sums than buckets', line(snapJson({ hists: [{ dev: '1:0', kind: 'dev_spun', count: 2, sum: 90, aux0: 0, aux1: 0, b: [7, 1, 9, 1], bs: [7, 40] }] })), /snap.hists\[0\].bs: 1 sums for 2 buckets/],
    ['a negative bucket sum', line(snapJson({ hists: [{ dev: '1:0', kind: 'dev_spun', count: 1, sum: 40, aux0: 0, aux1: 0, b: [7, 1], bs: [7, -40] }] })), /snap.hists\[0\].bs\[1\]: expected a non-negative integer/],
    ['a missing field', line({ ...snapJson(), rings: undefined }), /snap.rings: expected an array/],
    ['a negative waits count', line(snapJson({ devs: [{ ...DEV, waits: -1, inflight_sum: 0 }] })), /snap.devs\[0\].waits: expected a non-negative integer/],
    ['a non-numeric inflight_sum', line(snapJson({ devs: [{ ...DEV, waits: 2, inflight_sum: '8' }] })), /snap.devs\[0\].inflight_sum: expected a non-negative integer/],
  ])('rejects %s with a clear error', (_what, text, msg) => {
    expect(() => parseLine(text)).toThrow(ProtocolError);
    expect(() => parseLine(text)).toThrow(msg);
  });

  it("carries dev_spun's per-bucket sums where the loader prints them, and none where it does not", () => {
    const spun = { dev: '1:0', kind: 'dev_spun', count: 3, sum: 150_000, aux0: 0, aux1: 0, b: [37, 2, 38, 1], bs: [37, 98_000, 38, 52_000] };
    const s = parseLine(line(snapJson({ hists: [spun, { ...spun, kind: 'found_slept', bs: undefined }] }))) as LoaderSnap;
    expect(s.hists[0]!.hist.bucketSumsNs).toEqual([37, 98_000, 38, 52_000]);
    expect(s.hists[1]!.hist).not.toHaveProperty('bucketSumsNs');
  });

  it('refuses an oversized line before parsing it', () => {
    expect(() => parseLine(' '.repeat(MAX_LINE_BYTES + 1))).toThrow(/exceeds the limit/);
  });

  it('skips unknown histogram kinds (a newer loader) and names them', () => {
    const s = parseLine(line(snapJson({ hists: [...snapJson().hists, { dev: '1:0', kind: 'future_kind', count: 0, sum: 0, aux0: 0, aux1: 0, b: [] }] }))) as LoaderSnap;
    expect(s.hists).toHaveLength(5);
    expect(s.unknownKinds).toEqual(['future_kind']);
  });

  it('passes loader errors and fatal messages through', () => {
    expect(parseLine(line({ type: 'fatal', msg: 'no kernel BTF' }))).toEqual({ type: 'fatal', msg: 'no kernel BTF' });
    expect(parseLine(line({ type: 'error', msg: 'unknown request' }))).toEqual({ type: 'error', msg: 'unknown request' });
  });

  it('never throws anything but a ProtocolError on arbitrary input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (text) => {
        try {
          parseLine(text);
        } catch (e) {
          expect(e).toBeInstanceOf(ProtocolError);
        }
      }),
    );
  });
});

describe('toBpfSnapshot', () => {
  const snap = toBpfSnapshot(parseLine(line(HELLO)) as LoaderHello, parseLine(line(snapJson())) as LoaderSnap);

  it("takes the tracepoint path's calibration minimum as the look's (lookMinNs), and not the fentry path's (a poll call's length)", () => {
    expect(snap.devices.find((d) => d.dev === '259:0')!.lookMinNs).toBe(900);
    expect(snap.devices.find((d) => d.dev === '8:0')).not.toHaveProperty('lookMinNs');
    const fentry = toBpfSnapshot(parseLine(line({ ...HELLO, poll_path: 'fentry' })) as LoaderHello, parseLine(line(snapJson())) as LoaderSnap);
    expect(fentry.devices.find((d) => d.dev === '259:0')).not.toHaveProperty('lookMinNs');
  });

  it('groups histograms by device', () => {
    expect(snap.devices.map((d) => d.dev).sort()).toEqual(['259:0', '8:0']);
    expect(Object.keys(snap.devices.find((d) => d.dev === '259:0')!.hists).sort()).toEqual(['found_slept', 'rq_lat', 'sleep_req', 'spin']);
  });

  it('derives the per-device counters the model reads', () => {
    expect(snap.deviceCounters['259:0']).toMatchObject({ polled_ios: 3, sleeps: 2, sleep_ns: 8000, spin_ns: 500, overslept: 1, spun: 0, classified_calibrated: 2 });
    expect(snap.deviceCounters['8:0']).toMatchObject({ polled_ios: 0, sleeps: 0 });
    expect(snap.counters).toMatchObject({ polled_ios: 3, sleeps: 2, issue_missed: 1, recursion_misses: 3 });
  });

  it('carries the depth counters of a loader that counts them, and leaves them out (not 0) for an older one', () => {
    const parsed = parseLine(line(snapJson({ devs: [{ ...DEV, waits: 3, inflight_sum: 12 }] }))) as LoaderSnap;
    expect(parsed.devices[0]).toMatchObject({ waits: 3, inflightSum: 12 });
    const depth = toBpfSnapshot(parseLine(line(HELLO)) as LoaderHello, parsed);
    expect(depth.deviceCounters['259:0']).toMatchObject({ polled_ios: 3, waits: 3, inflight_sum: 12 });
    // a device with histograms but no record, and every device of an older loader: absent
    expect(depth.deviceCounters['8:0']).not.toHaveProperty('waits');
    const old = parseLine(line(snapJson())) as LoaderSnap;
    expect(old.devices[0]).not.toHaveProperty('waits');
    expect(old.devices[0]).not.toHaveProperty('inflightSum');
    expect(snap.deviceCounters['259:0']).not.toHaveProperty('waits');
    expect(snap.deviceCounters['259:0']).not.toHaveProperty('inflight_sum');
  });

  it('carries the poller-cost counters of a loader that counts them (all or none), and refuses a malformed one', () => {
    const costs = { gaps: 4, gap_ns: 36_000, gap_k: 5, gap_kk: 7, gap_kns: 45_000, reap_ns: 15_000, reaped: 5, lead_ns: 6000, leads: 4 };
    const parsed = parseLine(line(snapJson({ devs: [{ ...DEV, waits: 4, inflight_sum: 16, ...costs }] }))) as LoaderSnap;
    expect(parsed.devices[0]!.poller).toEqual(costs);
    const snap2 = toBpfSnapshot(parseLine(line(HELLO)) as LoaderHello, parsed);
    expect(snap2.deviceCounters['259:0']).toMatchObject(costs);
    expect(snap.deviceCounters['259:0']).not.toHaveProperty('gaps');
    expect(() => parseLine(line(snapJson({ devs: [{ ...DEV, ...costs, reaped: undefined }] })))).toThrow(/snap.devs\[0\].reaped/);
    expect(() => parseLine(line(snapJson({ devs: [{ ...DEV, ...costs, gap_kns: -3 }] })))).toThrow(/snap.devs\[0\].gap_kns: expected a non-negative integer/);
  });

  it('carries the finding-look and classic pass-look counters where the loader prints them (each set all or none)', () => {
    const costs = { gaps: 4, gap_ns: 36_000, gap_k: 5, gap_kk: 7, gap_kns: 45_000, reap_ns: 15_000, reaped: 5, lead_ns: 6000, leads: 4 };
    const looks = { looks: 2, look_ns: 5000, look_k: 3, look_kk: 5, look_kns: 8000, wake_look_ns: 900 };
    const pass = { pass_looks: 3, pass_look_ns: 6000, pass_look_k: 4, pass_look_kk: 6, pass_look_kns: 8200, pass_look_j: 2, pass_look_jj: 4, pass_look_jk: 3, pass_look_jns: 5000 };
    const all = parseLine(line(snapJson({ devs: [{ ...DEV, ...costs, ...looks, ...pass }] }))) as LoaderSnap;
    expect(all.devices[0]!.poller).toEqual({ ...costs, ...looks, ...pass });
    expect(toBpfSnapshot(parseLine(line(HELLO)) as LoaderHello, all).deviceCounters['259:0']).toMatchObject(pass);
    // a loader before the pass looks
    const older = parseLine(line(snapJson({ devs: [{ ...DEV, ...costs, ...looks }] }))) as LoaderSnap;
    expect(older.devices[0]!.poller).not.toHaveProperty('pass_looks');
    expect(() => parseLine(line(snapJson({ devs: [{ ...DEV, ...costs, ...looks, ...pass, pass_look_kns: undefined }] })))).toThrow(/snap.devs\[0\].pass_look_kns/);
  });

  it('reports program status and, with bpf_stats on, run time', () => {
    expect(snap.pollPath).toBe('tracepoint');
    expect(snap.programs['rq_issue']).toEqual({ attached: true, runTimeNs: 1000, runCount: 10 });
    expect(snap.programs['iopoll_enter']).toEqual({ attached: false, reason: 'fentry: probe load refused: Operation not permitted' });
    const off = toBpfSnapshot(parseLine(line(HELLO)) as LoaderHello, parseLine(line(snapJson({ bpf_stats: 0 }))) as LoaderSnap);
    expect(off.programs['rq_issue']).toEqual({ attached: true });
  });

  it('takes the exact I/O count and the sampling rate from a sampling loader, and from an older one its rq_lat count and 1', () => {
    // the older loader (no ios, no sample): every completion is in the histogram
    expect(snap.sampleRate).toBe(1);
    expect(snap.deviceCounters['259:0']!['ios']).toBe(3);
    expect(snap.counters['ios']).toBe(4);
    const weighted = snapJson({ sample: 16, hists: [{ dev: '259:0', kind: 'rq_lat', count: 32, sum: 320000, aux0: 20 * 4096, aux1: 0, ios: 20, b: [50, 16, 60, 16] }] });
    const s = toBpfSnapshot(parseLine(line({ ...HELLO, sample: 16 })) as LoaderHello, parseLine(line(weighted)) as LoaderSnap);
    expect(s.sampleRate).toBe(16);
    expect(s.deviceCounters['259:0']!['ios']).toBe(20);
    expect(s.devices[0]!.hists.rq_lat!.count).toBe(32); // the estimate, scaled in the kernel
    expect(() => parseLine(line(snapJson({ sample: 0 })))).toThrow(ProtocolError);
    expect(parseLine(line({ type: 'sample', n: 64 }))).toEqual({ type: 'sample', n: 64 });
  });

  it('marks hybrid rings from their setup flags', () => {
    expect(snap.rings[0]).toEqual({ ring: '00ab12cd34ef', pid: 99, comm: 'fio', flags: 0x20001, hybrid: true, hybridPollTimeNs: 8000, sleeps: 2, iopollPasses: 5 });
  });

  it("takes a ring's loop counters where the loader prints them, all or none", () => {
    const ring = { ring: '00ab12cd34ef', pid: 99, comm: 'fio', flags: 0x20001, hpt: 8000, sleeps: 2, passes: 5, reaped: 4, loops: 3, loop_ns: 900, spin_ns: 300, off_ns: 400, wlat_ns: 50 };
    const s = toBpfSnapshot(parseLine(line(HELLO)) as LoaderHello, parseLine(line(snapJson({ rings: [ring] }))) as LoaderSnap);
    expect(s.rings[0]!.loops).toEqual({ polledIos: 4, count: 3, wallNs: 900, spinNs: 300, offcpuNs: 400, wakeLatencyNs: 50 });
    const { wlat_ns: _, ...partial } = ring;
    expect(() => parseLine(line(snapJson({ rings: [partial] })))).toThrow(/snap.rings\[0\].wlat_ns/);
  });
});
