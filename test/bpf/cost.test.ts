// The BPF CPU meter and the --bpf.sample=auto rule (src/bpf/cost.ts): pure.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ESTIMATE_NS, nextSampleRate, SAMPLE_MAX, stepCpu, type CpuMeter } from '../../src/bpf/cost.js';

const S = 1e9;

describe('stepCpu', () => {
  it('adds the measured run time with bpf_stats, and the share of one CPU it was', () => {
    let m = stepCpu(undefined, { bpfStats: true, runNs: 5e9, ios: 0, sample: 1, atNs: 0 });
    expect(m.seconds).toBe(0); // the first reading is the baseline: earlier run time was not ours to count
    m = stepCpu(m, { bpfStats: true, runNs: 5e9 + 0.1e9, ios: 1e6, sample: 1, atNs: 10 * S });
    expect(m).toMatchObject({ source: 'bpf_stats', share: 0.01, iops: 1e5 });
    expect(m.seconds).toBeCloseTo(0.1, 12);
  });

  it('estimates from the completions without bpf_stats, cheaper per I/O when sampling', () => {
    const m0 = stepCpu(undefined, { bpfStats: false, runNs: 0, ios: 0, sample: 1, atNs: 0 });
    const full = stepCpu(m0, { bpfStats: false, runNs: 0, ios: 1e6, sample: 1, atNs: S });
    const sampled = stepCpu(m0, { bpfStats: false, runNs: 0, ios: 1e6, sample: 16, atNs: S });
    expect(full.source).toBe('estimate');
    expect(full.seconds).toBeCloseTo((1e6 * (ESTIMATE_NS.perIo + ESTIMATE_NS.perTimedIo)) / 1e9, 12);
    expect(sampled.seconds).toBeCloseTo((1e6 * (ESTIMATE_NS.perIo + ESTIMATE_NS.perTimedIo / 16)) / 1e9, 12);
  });

  it('never goes down, whatever the readings do (sysctl toggled, counters reset)', () => {
    const reading = fc.record({ bpfStats: fc.boolean(), runNs: fc.nat(), ios: fc.nat(), sample: fc.integer({ min: 1, max: 1024 }) });
    fc.assert(fc.property(fc.array(reading, { minLength: 1, maxLength: 30 }), (rs) => {
      let m: CpuMeter | undefined;
      let prev = 0;
      rs.forEach((r, i) => {
        m = stepCpu(m, { ...r, atNs: i * S });
        expect(m.seconds).toBeGreaterThanOrEqual(prev);
        prev = m.seconds;
      });
    }));
  });
});

describe('nextSampleRate', () => {
  const budget = 0.005;

  it('raises the rate over the budget to the power of two that the share asks for', () => {
    expect(nextSampleRate(1, 0.02, budget)).toBe(8); // 4× over: 1 × 0.02 / 0.004 = 5 → 8
    expect(nextSampleRate(8, 0.0051, budget)).toBe(16); // just over: at least doubled
    expect(nextSampleRate(512, 1, budget)).toBe(SAMPLE_MAX);
  });

  it('halves under 35 % of the budget and holds in the dead band between', () => {
    expect(nextSampleRate(16, 0.001, budget)).toBe(8);
    expect(nextSampleRate(1, 0, budget)).toBe(1);
    expect(nextSampleRate(16, 0.002, budget)).toBe(16);
    expect(nextSampleRate(16, 0.005, budget)).toBe(16);
    expect(nextSampleRate(16, undefined, budget)).toBe(16);
  });

  it('settles without flapping when the cost falls as 1/N plus a fixed part', () => {
    // share(N) = iops × (fixed + timed / N): the loop has to stop within a few steps and stay
    fc.assert(fc.property(fc.integer({ min: 1000, max: 3_000_000 }), fc.double({ min: 10e-9, max: 200e-9 }), fc.double({ min: 10e-9, max: 200e-9 }), (iops, fixed, timed) => {
      const share = (n: number) => iops * (fixed + timed / n);
      let n = 1;
      const seen: number[] = [];
      for (let i = 0; i < 40; i++) {
        n = nextSampleRate(n, share(n), budget);
        seen.push(n);
      }
      const tail = seen.slice(-10);
      expect(new Set(tail).size).toBe(1);
      // where the budget is reachable at all, the settled rate meets it
      if (share(SAMPLE_MAX) <= budget) expect(share(tail[0]!)).toBeLessThanOrEqual(budget);
    }));
  });
});
