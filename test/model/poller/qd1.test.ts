// The general model at depth 1 IS today's QD1 model: exactly where the closed form is used, and
// within the simulation's own standard error where the simulation runs the same case.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { atom, uniform } from '../../../src/model/dist.js';
import { CostModel, evaluatePolicies, iouringHalfMinSleep, kernelHalfMeanSleep } from '../../../src/model/policies.js';
import { evaluatePoller, ringHalfMinSleep, Sampler, simulate, type SleepRule } from '../../../src/model/poller/index.js';
import { distArb, input, NO_COST, SIM_ERAS, STAT_SEED } from './helpers.js';

describe('closed form at depth 1 (exact)', () => {
  it('every row equals CostModel/evaluatePolicies, for every era and any submit/reap cost', () => {
    fc.assert(
      fc.property(
        distArb(500, 200_000),
        distArb(0, 8000),
        fc.double({ min: 0, max: 6000, noNaN: true }),
        fc.double({ min: 0.001, max: 0.3, noNaN: true }),
        fc.constantFrom('iouring_613', 'iouring_70', 'blkmq_iouring', 'blkmq_sync'),
        fc.option(fc.double({ min: 1, max: 100_000, noNaN: true }), { nil: undefined }),
        fc.double({ min: 0, max: 3000, noNaN: true }),
        fc.option(fc.record({ offsetNs: fc.double({ min: -3000, max: 5000, noNaN: true }), timerLagNs: fc.double({ min: 0, max: 800, noNaN: true }) }), { nil: undefined }),
        (fD, fO, csw, budget, era, fixed, cost, kernel) => {
          const m = new CostModel(fD, fO, { switchCostNs: csw, latencyBudget: budget, ...(fixed !== undefined ? { fixedSleepNs: fixed } : {}) });
          const r = evaluatePoller({
            ...input({ era, fO, switchCostNs: csw, latencyBudget: budget, submission: { submitNs: cost, reapNs: cost / 2, minComplete: 1 } }),
            devices: [{ device: 'd', fD, share: 1, ...(fixed !== undefined ? { fixedSleepNs: fixed } : {}), ...(kernel ? { kernel } : {}) }],
            current: { policy: 'blkmq_fixed', rule: 'static', sleepNs: 3000 },
          });
          expect(r.method).toBe('closed_form');
          const want = evaluatePolicies(m, kernel);
          expect(r.policies.map((p) => p.policy)).toEqual(want.map((p) => p.policy));
          want.forEach((w, i) => {
            const got = r.policies[i]!;
            expect(got.cpuNs).toBe(w.cpuNs);
            expect(got.spinNs).toBe(w.spinNs);
            expect(got.sleepNs).toBe(w.sleepNs);
            expect(got.addedLatencyNs).toBe(w.lateNs);
            expect(got.latencyNs).toBe(w.latencyNs);
            expect(got.meetsBudget).toBe(w.meetsBudget);
            expect(got.taskCpuNs).toBeCloseTo(w.cpuNs + 1.5 * cost, 6);
            if (cost === 0) expect(got.cpuShare).toBe(w.cpuShare);
          });
          expect(r.current.cpuNs).toBe(m.outcome(3000).cpuNs);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("the block layer's current rules at QD1 sleep by the device's kernel terms (δ, timer lag)", () => {
    const fD = uniform(8000, 12_000);
    const kernel = { offsetNs: 2000, timerLagNs: 300 };
    const m = new CostModel(fD, atom(1000), { switchCostNs: 1500, latencyBudget: 0.01, fixedSleepNs: 7000 });
    const dev = { device: 'd', fD, share: 1, fixedSleepNs: 7000, kernel };
    const half = evaluatePoller({ ...input({ era: 'blkmq_sync' }), devices: [dev], current: { policy: 'blkmq_half_mean', rule: 'kernel' } });
    expect(half.current.sleepNs).toBe(kernelHalfMeanSleep(m, kernel));
    expect(half.current.sleepNs).toBe(5700); // ½(10000 + 2000) − 300: no oversleep there
    const fixed = evaluatePoller({ ...input({ era: 'blkmq_sync' }), devices: [dev], current: { policy: 'blkmq_fixed', rule: 'kernel' } });
    expect(fixed.current.sleepNs).toBe(6700);
    expect(fixed.policies.find((p) => p.policy === 'blkmq_fixed')!.sleepNs).toBe(6700);
  });

  it('6.13–6.19 under the kernel rule at QD1: the table stays exact, the current state is simulated', () => {
    const fD = uniform(8000, 12_000);
    const r = evaluatePoller(input({ era: 'iouring_613', fD, submission: { submitNs: 600, reapNs: 0, minComplete: 1 }, current: { policy: 'iouring_half_min', rule: 'kernel' }, sim: { ios: 500 } }));
    expect(r.method).toBe('closed_form');
    const want = evaluatePolicies(new CostModel(fD, atom(1000), { switchCostNs: 1500, latencyBudget: 0.01 }));
    expect(r.policies.map((p) => p.cpuNs)).toEqual(want.map((p) => p.cpuNs));
    // the estimate collapses to issue → first look (the submission): sleeps of 300 ns save 300 ns of spin for 1.5 µs of c_sw
    expect(r.kernelEstimateNs).toBe(600);
    expect(r.current.cpuNs).toBeGreaterThan(want[0]!.cpuNs);
  });

  it("the ring's half-minimum on one device is iouringHalfMinSleep", () => {
    fc.assert(
      fc.property(distArb(500, 200_000), distArb(0, 8000), (fD, fO) => {
        const m = new CostModel(fD, fO, { switchCostNs: 1500, latencyBudget: 0.01 });
        expect(ringHalfMinSleep([m])).toBe(iouringHalfMinSleep(m));
      }),
      { numRuns: 100 },
    );
  });

  it('a ring over two devices: the shared half-minimum is at most each device alone (the fastest sets it)', () => {
    const fast = new CostModel(uniform(4000, 6000), atom(800), { switchCostNs: 1500, latencyBudget: 0.01 });
    const slow = new CostModel(uniform(20_000, 30_000), atom(800), { switchCostNs: 1500, latencyBudget: 0.01 });
    const ring = ringHalfMinSleep([fast, slow]);
    expect(ring).toBeLessThanOrEqual(iouringHalfMinSleep(fast));
    expect(ring).toBeLessThan(iouringHalfMinSleep(slow));
  });
});

describe('simulation at depth 1 against the closed form (within 4 standard errors + 0.5 % of E[D])', () => {
  // The simulation draws D and O by inverse CDF: at QD1 its per-I/O CPU is a sample mean of
  // (D − s − O)⁺ + c_sw·[s > 0], whose expectation is the closed form; the batch-means standard
  // error bounds the difference. That SE is estimated from 10 batches (9 degrees of freedom), so
  // the difference passes 4 estimated SE by chance about 3 times in 1000 comparisons (Student's t),
  // and a run makes over 200: random cases failed .ci/run once (2026-12-06, four atoms of D). The
  // cases are fixed by STAT_SEED; a change to the simulation or the closed form still moves them.
  const rules = (m: CostModel): { rule: SleepRule; s: number }[] => [
    { rule: { kind: 'none' }, s: 0 },
    { rule: { kind: 'static', sleepNs: [m.meanD / 2] }, s: m.meanD / 2 },
    { rule: { kind: 'static', sleepNs: [m.meanD * 0.9] }, s: m.meanD * 0.9 },
  ];
  it.each(SIM_ERAS)('%s: cpu, added latency and sleeps per I/O', (era) => {
    fc.assert(
      fc.property(distArb(2000, 100_000), distArb(0, 4000), fc.double({ min: 0, max: 4000, noNaN: true }), fc.integer({ min: 1, max: 1e6 }), (fD, fO, csw, seed) => {
        const m = new CostModel(fD, fO, { switchCostNs: csw, latencyBudget: 0.01 });
        for (const { rule, s } of rules(m)) {
          const st = simulate({ era, depth: 1, devices: [{ fD: new Sampler(fD), share: 1 }], wake: new Sampler(fO), switchCostNs: csw, submission: NO_COST, rule, ios: 4000, warmup: 10, seed });
          const want = m.outcome(s);
          const cpu = (st.spinNs + st.switchNs) / st.ios;
          const se = seOf(st.batchCpuPerIo);
          expect(Math.abs(cpu - want.cpuNs), `${rule.kind} s=${s}`).toBeLessThanOrEqual(4 * se + 0.005 * m.meanD);
          expect(Math.abs(st.latencyNs / st.ios - want.latencyNs)).toBeLessThanOrEqual(0.03 * m.meanD + 4 * se);
          expect(st.sleeps / st.ios).toBe(s > 0 ? 1 : 0);
        }
      }),
      { numRuns: 12, seed: STAT_SEED },
    );
  });

  it('the oracle at depth 1: E[min(D, c_sw)]', () => {
    fc.assert(
      fc.property(distArb(500, 20_000), distArb(0, 4000), fc.double({ min: 100, max: 6000, noNaN: true }), fc.integer({ min: 1, max: 1e6 }), (fD, fO, csw, seed) => {
        const m = new CostModel(fD, fO, { switchCostNs: csw, latencyBudget: 0.01 });
        const want = evaluatePolicies(m).find((p) => p.policy === 'oracle')!;
        const st = simulate({ era: 'iouring_70', depth: 1, devices: [{ fD: new Sampler(fD), share: 1 }], wake: new Sampler(fO), switchCostNs: csw, submission: NO_COST, rule: { kind: 'oracle' }, ios: 4000, warmup: 10, seed });
        expect(Math.abs((st.spinNs + st.switchNs) / st.ios - want.cpuNs)).toBeLessThanOrEqual(4 * seOf(st.batchCpuPerIo) + 0.005 * m.meanD);
      }),
      { numRuns: 12, seed: STAT_SEED },
    );
  });

  it('constant D: the simulation is exact (no variance): D = 10 µs, O = 1 µs, s = 5 µs → cpu 5.5 µs', () => {
    for (const era of SIM_ERAS) {
      const st = simulate({ era, depth: 1, devices: [{ fD: new Sampler(atom(10_000)), share: 1 }], wake: new Sampler(atom(1000)), switchCostNs: 1500, submission: NO_COST, rule: { kind: 'static', sleepNs: [5000] }, ios: 100, warmup: 5, seed: 7 });
      expect((st.spinNs + st.switchNs) / st.ios).toBeCloseTo(5500, 6);
      expect(st.latencyNs / st.ios).toBeCloseTo(10_000, 6);
    }
  });
});

function seOf(b: number[]): number {
  const m = b.reduce((a, x) => a + x, 0) / b.length;
  return Math.sqrt(b.reduce((a, x) => a + (x - m) ** 2, 0) / (b.length - 1) / b.length);
}
