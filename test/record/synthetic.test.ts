// The synthetic recording: deterministic, what is committed is what the generator makes, and the
// frames say what the documented device model says.
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { upperNs } from '../../src/model/buckets.js';
import { SYNTHETIC_RECORDING } from '../../src/record/shipped.js';
import { readRecording } from '../../src/record/reader.js';
import { SYNTHETIC_DEFAULTS, SYNTHETIC_DEVICES, syntheticFrames, syntheticRecordingText } from '../../src/record/synthetic.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';
import { bucketPairs, bucketTotal } from '../../src/model/hist.js';

const small = { ...SYNTHETIC_DEFAULTS, minutes: 2, simPerStep: 200 };

describe('synthetic recording', () => {
  it('is deterministic for a seed and differs for another seed', () => {
    expect(syntheticRecordingText(small)).toBe(syntheticRecordingText(small));
    expect(syntheticRecordingText({ ...small, seed: 7 })).not.toBe(syntheticRecordingText(small));
  });

  it('the committed recordings/synthetic.jsonl equals a regeneration (run npm run recording:synthetic)', () => {
    expect(readFileSync(SYNTHETIC_RECORDING, 'utf8') === syntheticRecordingText()).toBe(true);
  });

  it('passes the reader\'s validation, 5 s apart, 15 minutes', async () => {
    const r = await readRecording(Readable.from([readFileSync(SYNTHETIC_RECORDING, 'utf8')]), 'synthetic');
    expect(r.header.source).toBe('synthetic');
    const frames: SnapshotInputs[] = [];
    for await (const f of r.frames) frames.push(f);
    expect(frames.length).toBe(181);
    expect(frames.every((f, i) => i === 0 || f.takenAtMs - frames[i - 1]!.takenAtMs === 5000)).toBe(true);
  });

  it('follows the device model: counts add up, the kernel sleeps half its running minimum, monotonic counters', () => {
    const frames = [...syntheticFrames(small)];
    const last = frames.at(-1)!;
    expect(last.host!.era.era).toBe('iouring_hybrid');
    for (const d of last.bpf!.devices) {
      const c = last.bpf!.deviceCounters[d.dev]!;
      const h = d.hists;
      // Every polled I/O is either spun or overslept; all but the ring's first slept.
      expect(c['spun']! + (c['overslept'] ?? 0)).toBe(c['polled_ios']);
      expect(c['polled_ios']! - c['sleeps']!).toBe(1);
      // QD1: one waiting call per I/O, each at one polled I/O in flight
      expect(c['waits']).toBe(c['polled_ios']);
      expect(c['inflight_sum']).toBe(c['waits']);
      expect(h.rq_lat!.count).toBe(c['polled_ios']);
      expect(h.dev_spun!.count + (h.found_slept?.count ?? 0)).toBe(c['polled_ios']);
      for (const k of Object.values(h)) expect(bucketTotal(k)).toBe(k.count);
      // off-CPU = requested sleep + wake overhead, as sums.
      expect(h.offcpu!.sumNs).toBe(h.sleep_req!.sumNs + h.wake_ovh!.sumNs);
      // The ring's estimate: the kernel sleeps half of it (sleep_req aux is the kernel's own value).
      const ring = last.bpf!.rings.find((r) => r.pid === (d.dev === '259:0' ? 3131 : 4242))!;
      const lastSleep = bucketPairs(h.sleep_req!).at(-1)![0];
      expect(Math.floor(ring.hybridPollTimeNs! / 2)).toBeLessThanOrEqual(upperNs(lastSleep));
      expect(h.sleep_req!.aux0 / h.sleep_req!.aux1).toBeCloseTo(h.sleep_req!.sumNs / h.sleep_req!.count, 6);
      // The generator's c_sw recoverable as (iopoll − offcpu − spin) per sleep; with the wake
      // latency (which the scheduler charges to the poller) it is what the model calls c_sw.
      const profile = SYNTHETIC_DEVICES.find((p) => p.dev === d.dev)!;
      const cswMeasured = (h.iopoll!.sumNs - h.offcpu!.sumNs - h.spin!.sumNs) / c['sleeps']!;
      expect(Math.abs(cswMeasured - profile.switchCostNs)).toBeLessThan(5);
      const charged = cswMeasured + h.wake_lat!.sumNs / c['sleeps']!;
      expect(Math.abs(charged - (d.dev === '259:0' ? 1500 : 2700))).toBeLessThan(20);
    }
    // nvme1n1 is the oversleeping device: a good share of found_slept.
    const c1 = last.bpf!.deviceCounters['259:1']!;
    expect(c1['overslept']! / c1['polled_ios']!).toBeGreaterThan(0.2);
    const keys = (f: SnapshotInputs) => Object.entries(f.bpf!.deviceCounters).flatMap(([d, r]) => Object.entries(r).map(([k, v]) => [`${d}/${k}`, v] as const));
    for (let i = 1; i < frames.length; i++) {
      const prev = new Map(keys(frames[i - 1]!));
      for (const [k, v] of keys(frames[i]!)) expect(v, k).toBeGreaterThanOrEqual(prev.get(k) ?? 0);
    }
  });

  it('device 1 has D tight around 10 µs, then 14 µs after the 10-minute phase change', () => {
    const meanDevSpun = (f: SnapshotInputs, g: SnapshotInputs) => {
      const a = f.bpf!.devices[0]!.hists.dev_spun!;
      const b = g.bpf!.devices[0]!.hists.dev_spun!;
      return (b.sumNs - a.sumNs) / (b.count - a.count);
    };
    const frames = [...syntheticFrames({ ...SYNTHETIC_DEFAULTS, simPerStep: 100 })];
    // dev_spun is D rounded up to the end of a poll call (p = 250 ns): mean ≈ E[D] + p/2.
    expect(meanDevSpun(frames[0]!, frames[100]!)).toBeGreaterThan(10_000);
    expect(meanDevSpun(frames[0]!, frames[100]!)).toBeLessThan(10_400);
    expect(meanDevSpun(frames[125]!, frames[180]!)).toBeGreaterThan(14_000);
    expect(meanDevSpun(frames[125]!, frames[180]!)).toBeLessThan(14_500);
  });
});
