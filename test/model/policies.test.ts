import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { atom, mixture, uniform } from '../../src/model/dist.js';
import { bestStaticSleep, CostModel, evaluatePolicies, kernelHalfMeanSleep, settableSleep, settingOf, threeQuarterMeanSleep } from '../../src/model/policies.js';
import type { Dist, PolicyName, PolicyOutcome } from '../../src/model/types.js';

const C_SW = 1500;
const BUDGET = 0.01;
const FIXED = 4000; // io_poll_delay = 4 µs

const table = (fD: Dist, fO: Dist, budget = BUDGET, fixed: number | null = FIXED) =>
  new Map(evaluatePolicies(new CostModel(fD, fO, { switchCostNs: C_SW, latencyBudget: budget, ...(fixed ? { fixedSleepNs: fixed } : {}) })).map((r) => [r.policy, r]));

type Expect = Partial<Pick<PolicyOutcome, 'sleepNs' | 'spinNs' | 'cpuNs' | 'lateNs' | 'latencyNs' | 'oversleepProbability' | 'meetsBudget'>>;

function check(rows: Map<PolicyName, PolicyOutcome>, want: Record<PolicyName, Expect>) {
  expect([...rows.keys()].sort()).toEqual(Object.keys(want).sort());
  for (const [policy, w] of Object.entries(want) as [PolicyName, Expect][]) {
    const r = rows.get(policy)!;
    for (const [k, v] of Object.entries(w)) {
      if (typeof v === 'boolean') expect(r[k as keyof PolicyOutcome], `${policy}.${k}`).toBe(v);
      // 1e-6 relative on ns values of ~1e4: far below any bucket effect, only bisection rounding
      else expect(r[k as keyof PolicyOutcome] as number, `${policy}.${k}`).toBeCloseTo(v as number, 3);
    }
  }
}

describe('closed forms, every policy', () => {
  it('constant D = 10 µs, O = 1 µs', () => {
    // spin(s) = (9000 − s)⁺, late(s) = (s − 9000)⁺; the ring's minimum: 10000 → max(10000 − 5000, 1000) = 5000, s = 2500
    check(table(atom(10_000), atom(1000)), {
      classic: { sleepNs: 0, spinNs: 10_000, cpuNs: 10_000, lateNs: 0, latencyNs: 10_000, oversleepProbability: 0, meetsBudget: true },
      blkmq_half_mean: { sleepNs: 5000, spinNs: 4000, cpuNs: 5500, lateNs: 0, latencyNs: 10_000, oversleepProbability: 0 },
      blkmq_fixed: { sleepNs: 4000, spinNs: 5000, cpuNs: 6500, lateNs: 0 },
      three_quarter_mean: { sleepNs: 7500, spinNs: 1500, cpuNs: 3000, lateNs: 0 },
      // s + O = D exactly: complete at wake-up, nothing late
      min_minus_wake: { sleepNs: 9000, spinNs: 0, cpuNs: 1500, lateNs: 0, oversleepProbability: 1 },
      iouring_half_min: { sleepNs: 2500, spinNs: 6500, cpuNs: 8000, lateNs: 0 },
      best_static: { sleepNs: 9000, spinNs: 0, cpuNs: 1500, lateNs: 0, meetsBudget: true },
      oracle: { sleepNs: 9000, spinNs: 0, cpuNs: 1500, lateNs: 0, latencyNs: 10_000 },
    });
  });

  it('constant D = 10 µs, O = 2.5 µs from D\'s origin, with the loop starting L = 2 µs after it and R = 0.3 µs of reaping per I/O', () => {
    // classic spins (D − L) + R; a sleep's spin is (D − s − O)⁺ + R; late and latency do not move
    const m = new CostModel(atom(10_000), atom(2500), { switchCostNs: C_SW, latencyBudget: BUDGET, fixedSleepNs: FIXED, pollStartNs: 2000, loopReapNs: 300 });
    check(new Map(evaluatePolicies(m).map((r) => [r.policy, r])), {
      classic: { sleepNs: 0, spinNs: 8300, cpuNs: 8300, lateNs: 0, latencyNs: 10_000, meetsBudget: true },
      blkmq_half_mean: { sleepNs: 5000, spinNs: 2800, cpuNs: 4300, lateNs: 0, latencyNs: 10_000 },
      blkmq_fixed: { sleepNs: 4000, spinNs: 3800, cpuNs: 5300, lateNs: 0 },
      three_quarter_mean: { sleepNs: 7500, spinNs: 300, cpuNs: 1800, lateNs: 0, oversleepProbability: 1 },
      min_minus_wake: { sleepNs: 7500, spinNs: 300, cpuNs: 1800, lateNs: 0, oversleepProbability: 1 },
      // the ring's minimum: 10000 → max(10000 − 5000, 2500) = 5000, s = 2500
      iouring_half_min: { sleepNs: 2500, spinNs: 5300, cpuNs: 6800, lateNs: 0 },
      best_static: { sleepNs: 7500, spinNs: 300, cpuNs: 1800, lateNs: 0, meetsBudget: true },
      // D − L = 8 µs > c_sw: the oracle sleeps every I/O
      oracle: { sleepNs: 7500, spinNs: 300, cpuNs: 1800, lateNs: 0, latencyNs: 10_000 },
    });
    expect(m.outcome(0).cpuShare).toBeCloseTo(8300 / 10_300, 9);
    // a loop that starts 8.6 µs late spins 1.4 µs: cheaper than any sleep, so classic is best and the oracle never sleeps
    const late = new CostModel(atom(10_000), atom(9000), { switchCostNs: C_SW, latencyBudget: BUDGET, pollStartNs: 8600, loopReapNs: 300 });
    const rows = new Map(evaluatePolicies(late).map((r) => [r.policy, r]));
    expect(rows.get('best_static')).toMatchObject({ sleepNs: 0 });
    expect(rows.get('best_static')!.cpuNs).toBeCloseTo(1700, 6);
    expect(rows.get('oracle')!.cpuNs).toBeCloseTo(1700, 6);
    // a wake-up timed from D's origin holds L: an L above min O is taken as min O (spin stays non-increasing)
    expect(new CostModel(atom(10_000), atom(1000), { switchCostNs: C_SW, latencyBudget: BUDGET, pollStartNs: 2000 }).pollStartNs).toBe(1000);
    expect(() => new CostModel(atom(10_000), atom(1000), { switchCostNs: C_SW, latencyBudget: BUDGET, loopReapNs: -1 })).toThrow(/loopReapNs/);
  });

  it('uniform D on [8, 12] µs, O = 1 µs', () => {
    // X = D − O ~ U[7000, 11000]: spin(s) = 9000 − s (s ≤ 7000), (11000 − s)²/8000 above; late(s) = (s − 7000)²/8000
    const sBest = 7000 + Math.sqrt(100 * 8000); // late(s) = 1% of 10 µs
    check(table(uniform(8000, 12_000), atom(1000)), {
      classic: { sleepNs: 0, cpuNs: 10_000, lateNs: 0 },
      blkmq_half_mean: { sleepNs: 5000, spinNs: 4000, cpuNs: 5500, lateNs: 0, oversleepProbability: 0 },
      blkmq_fixed: { sleepNs: 4000, spinNs: 5000, cpuNs: 6500 },
      // ¾ of the mean under the ½-mean rule, which does not oversleep here: ¾ E[D]
      three_quarter_mean: {
        sleepNs: 7500,
        spinNs: 3500 ** 2 / 8000,
        cpuNs: 3500 ** 2 / 8000 + C_SW,
        lateNs: 500 ** 2 / 8000,
        latencyNs: 10_000 + 500 ** 2 / 8000,
        oversleepProbability: 500 / 4000,
        meetsBudget: true,
      },
      min_minus_wake: { sleepNs: 7000, spinNs: 2000, cpuNs: 3500, lateNs: 0 },
      // 10000 → max(8000 − 5000, 1000) = 3000 → max(8000 − 1500, 1000) = 6500 does not lower it: s = 1500
      iouring_half_min: { sleepNs: 1500, spinNs: 7500, cpuNs: 9000 },
      best_static: { sleepNs: sBest, spinNs: (11_000 - sBest) ** 2 / 8000, cpuNs: (11_000 - sBest) ** 2 / 8000 + C_SW, lateNs: 100, meetsBudget: true },
      // D ≥ 8 µs > c_sw: the oracle always sleeps D − O
      oracle: { sleepNs: 9000, spinNs: 0, cpuNs: C_SW, lateNs: 0 },
    });
  });

  it('two-point D: 5 or 15 µs, O = 1 µs', () => {
    // X ∈ {4000, 14000} each ½: spin(s) = ½(4000 − s)⁺ + ½(14000 − s)⁺, late(s) = ½(s − 4000)⁺ + ½(s − 14000)⁺
    const fD = mixture([
      { dist: atom(5000), weight: 1 },
      { dist: atom(15_000), weight: 1 },
    ]);
    check(table(fD, atom(1000)), {
      classic: { sleepNs: 0, cpuNs: 10_000 },
      // the kernel's rule s = ½·latency(s): s = 5000 + ¼(s − 4000), s = 16000/3 (E[D]/2 = 5000 before the oversleep)
      blkmq_half_mean: { sleepNs: 16_000 / 3, spinNs: 13_000 / 3, cpuNs: 13_000 / 3 + C_SW, lateNs: 2000 / 3, latencyNs: 32_000 / 3, oversleepProbability: 0.5, meetsBudget: false },
      blkmq_fixed: { sleepNs: 4000, spinNs: 5000, cpuNs: 6500, lateNs: 0, oversleepProbability: 0.5, meetsBudget: true },
      // ¾ of the ½-mean rule's mean latency(16000/3) = 32000/3: s = 8000
      three_quarter_mean: { sleepNs: 8000, spinNs: 3000, cpuNs: 4500, lateNs: 2000, latencyNs: 12_000, meetsBudget: false },
      min_minus_wake: { sleepNs: 4000, spinNs: 5000, cpuNs: 6500, lateNs: 0 },
      // 10000 → max(5000 − 5000, 1000) = 1000 → max(5000 − 500, 1000) does not lower it: s = 500
      iouring_half_min: { sleepNs: 500, spinNs: 8500, cpuNs: 10_000, lateNs: 0 },
      // ½(s − 4000) ≤ 100 → s = 4200
      best_static: { sleepNs: 4200, spinNs: 4900, cpuNs: 6400, lateNs: 100, meetsBudget: true },
      oracle: { sleepNs: 9000, spinNs: 0, cpuNs: C_SW, lateNs: 0 },
    });
  });

  it('classic is best when a sleep/wake pair costs more than it saves', () => {
    // D = 1.4 µs < c_sw: any sleep costs at least 1.5 µs
    const rows = table(atom(1400), atom(100), BUDGET, null);
    expect(rows.has('blkmq_fixed')).toBe(false);
    expect(rows.get('best_static')).toMatchObject({ sleepNs: 0, cpuNs: 1400 });
    // the oracle does not sleep for D ≤ c_sw either
    expect(rows.get('oracle')).toMatchObject({ cpuNs: 1400, sleepNs: 0 });
  });

  it('no positive sleep meets the budget when the wake overhead alone exceeds it', () => {
    // late(0+) = E[(O − D)⁺] = ½·(3000 − 2000) = 500 > 1% of E[D]
    const fD = mixture([
      { dist: atom(2000), weight: 1 },
      { dist: atom(20_000), weight: 1 },
    ]);
    expect(table(fD, atom(3000)).get('best_static')).toMatchObject({ sleepNs: 0, cpuNs: 11_000, lateNs: 0 });
  });
});

describe('the seed-001 anchor: D tight around 10 µs, O ≈ 1 µs, c_sw = 1.5 µs', () => {
  it('gives ≈55% of a core for ½ mean and ≈30% for ¾ mean (Optane: 56.3% / 35.3%)', () => {
    const rows = table(uniform(9500, 10_500), uniform(800, 1200));
    const half = rows.get('blkmq_half_mean')!.cpuShare;
    const threeQ = rows.get('three_quarter_mean')!.cpuShare;
    // Exact here: no oversleep, so cpu/latency = (E[D] − s − E[O] + c_sw)/E[D].
    expect(half).toBeCloseTo((10_000 - 5000 - 1000 + 1500) / 10_000, 9);
    expect(threeQ).toBeCloseTo((10_000 - 7500 - 1000 + 1500) / 10_000, 9);
    expect(Math.abs(half - 0.55)).toBeLessThan(0.01);
    expect(Math.abs(threeQ - 0.3)).toBeLessThan(0.01);
    expect(rows.get('classic')!.cpuShare).toBe(1);
  });
});

// Random F_D, F_O as mixtures of atoms and uniform pieces, c_sw and budget: the properties of §7.
const piece = (lo: number, hi: number) =>
  fc.record({ a: fc.double({ min: lo, max: hi, noNaN: true }), w: fc.double({ min: 0, max: hi - lo, noNaN: true }), p: fc.double({ min: 0.05, max: 1, noNaN: true }), isAtom: fc.boolean() });
const distArb = (lo: number, hi: number) =>
  fc.array(piece(lo, hi), { minLength: 1, maxLength: 5 }).map((ps) =>
    mixture(ps.map(({ a, w, p, isAtom }) => ({ dist: isAtom || w === 0 ? atom(a) : uniform(a, a + w), weight: p }))),
  );
const modelArb = fc
  .record({
    fD: distArb(500, 200_000),
    fO: distArb(0, 8000),
    csw: fc.double({ min: 0, max: 6000, noNaN: true }),
    budget: fc.double({ min: 0.001, max: 0.3, noNaN: true }),
    fixed: fc.double({ min: 1, max: 100_000, noNaN: true }),
    // the fentry path's L and R, or none (design.md's form)
    loop: fc.option(fc.record({ pollStartNs: fc.double({ min: 0, max: 20_000, noNaN: true }), loopReapNs: fc.double({ min: 0, max: 5000, noNaN: true }) })),
  })
  .map(({ fD, fO, csw, budget, fixed, loop }) => new CostModel(fD, fO, { switchCostNs: csw, latencyBudget: budget, fixedSleepNs: fixed, ...(loop ?? {}) }));

describe('properties', () => {
  it('oracle ≤ best_static ≤ every policy that meets the budget, in cpu', () => {
    fc.assert(
      fc.property(modelArb, (m) => {
        const rows = evaluatePolicies(m);
        const best = rows.find((r) => r.policy === 'best_static')!;
        const oracle = rows.find((r) => r.policy === 'oracle')!;
        const eps = 1e-6 * m.meanD;
        expect(best.meetsBudget).toBe(true);
        expect(oracle.cpuNs).toBeLessThanOrEqual(best.cpuNs + eps);
        for (const r of rows) {
          if (r.policy !== 'oracle' && r.meetsBudget) expect(best.cpuNs, r.policy).toBeLessThanOrEqual(r.cpuNs + eps);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('where the sleep is a whole-µs setting (io_poll_delay): best_static is the cheapest setting in budget, under the best of any sleep by less than a step', () => {
    fc.assert(
      fc.property(modelArb, fc.double({ min: 0, max: 900, noNaN: true }), (any, lagNs) => {
        const m = new CostModel(any.fD, any.fO, { ...any.params, sleepStepNs: 1000 });
        const k = { offsetNs: 0, timerLagNs: lagNs };
        const s = bestStaticSleep(m, k);
        const free = bestStaticSleep(any, k);
        const eps = 1e-6 * m.meanD;
        // every setting that keeps within the budget (late is non-decreasing: the first one out ends it)
        const settings: number[] = [];
        for (let n = 1; m.late(n * 1000 - lagNs) <= m.budgetNs; n++) settings.push(n * 1000 - lagNs);
        if (s === 0) {
          // no setting gives a sleep in budget that beats classic polling
          for (const x of settings) expect(m.cpu(x)).toBeGreaterThanOrEqual(m.cpu(0) - eps);
          return;
        }
        expect(settableSleep(s, 1000, k)).toBeCloseTo(s, 6);
        expect(settingOf(s, 1000, k) * 1000 - lagNs).toBeCloseTo(s, 6);
        expect(m.late(s)).toBeLessThanOrEqual(m.budgetNs + eps);
        // no cheaper than the best of any sleep, and the cheapest of the settings
        expect(m.cpu(s)).toBeGreaterThanOrEqual(any.cpu(free) - eps);
        for (const x of settings) expect(m.cpu(s)).toBeLessThanOrEqual(m.cpu(x) + eps);
      }),
      { numRuns: 300 },
    );
    // one below a step: nothing to set
    expect(settableSleep(999, 1000)).toBe(0);
    expect(settableSleep(999, 1000, { offsetNs: 0, timerLagNs: 230 })).toBe(770);
    expect(settableSleep(42_280, 1000, { offsetNs: 0, timerLagNs: 230 })).toBe(41_770);
  });

  it('spin(s) is non-increasing and late(s) non-decreasing in s', () => {
    fc.assert(
      fc.property(modelArb, fc.double({ min: 0, max: 250_000, noNaN: true }), fc.double({ min: 0, max: 250_000, noNaN: true }), (m, x, y) => {
        const [s1, s2] = x <= y ? [x, y] : [y, x];
        const eps = 1e-9 * (m.meanD + s2);
        expect(m.spin(s2)).toBeLessThanOrEqual(m.spin(s1) + eps);
        expect(m.late(s2)).toBeGreaterThanOrEqual(m.late(s1) - eps);
        // and the identities between them
        expect(m.latency(s2)).toBeCloseTo(m.meanD + m.late(s2), 6);
      }),
      { numRuns: 300 },
    );
  });

  it('matches a Monte-Carlo estimate of spin and late', () => {
    // An independent check of the exact expectations: sample D and O directly.
    const fD = mixture([
      { dist: uniform(6000, 9000), weight: 2 },
      { dist: atom(12_000), weight: 1 },
      { dist: uniform(20_000, 40_000), weight: 0.5 },
    ]);
    const fO = mixture([
      { dist: uniform(500, 1500), weight: 3 },
      { dist: atom(4000), weight: 1 },
    ]);
    const m = new CostModel(fD, fO, { switchCostNs: C_SW, latencyBudget: BUDGET });
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const draw = (d: Dist) => {
      let u = rand();
      for (const q of d.pieces) {
        if ((u -= q.p) <= 0) return q.lo + rand() * (q.hi - q.lo);
      }
      const q = d.pieces[d.pieces.length - 1]!;
      return q.lo + rand() * (q.hi - q.lo);
    };
    const n = 200_000;
    for (const s of [3000, 7000, 10_000]) {
      let spin = 0;
      let late = 0;
      for (let k = 0; k < n; k++) {
        const D = draw(fD);
        const O = draw(fO);
        spin += Math.max(0, D - s - O);
        late += Math.max(0, s + O - D);
      }
      expect(Math.abs(spin / n - m.spin(s))).toBeLessThan(0.01 * m.meanD);
      expect(Math.abs(late / n - m.late(s))).toBeLessThan(0.01 * m.meanD);
    }
  });
});

describe('the block layer\'s mean rules as the kernel runs them', () => {
  const model = (fD: Dist) => new CostModel(fD, atom(1000), { switchCostNs: C_SW, latencyBudget: BUDGET });
  const k = (offsetNs: number, timerLagNs = 0) => ({ offsetNs, timerLagNs });

  it('½ mean at QD1: the fixed point s = ½·latency(s), above E[D]/2 when the device oversleeps', () => {
    const m = model(uniform(2000, 18_000));
    const s = kernelHalfMeanSleep(m);
    expect(s).toBeGreaterThan(m.meanD / 2 + 200);
    expect(s).toBeCloseTo(m.latency(s) / 2, 3);
    expect(kernelHalfMeanSleep(model(atom(10_000)))).toBe(5000);
    // ¾ mean is io_poll_delay fixed at ¾ of that mean, not a fixed point of its own
    expect(threeQuarterMeanSleep(m)).toBeCloseTo((3 / 4) * m.latency(s), 6);
  });

  it('δ, the kernel samples\' excess over the model\'s latency, is slept at the rule\'s fraction; the timer lag is not slept', () => {
    // no oversleep at these sleeps: s = f·(E[D] + δ) − lag
    expect(kernelHalfMeanSleep(model(atom(10_000)), k(2000))).toBe(6000);
    expect(threeQuarterMeanSleep(model(atom(10_000)), k(1000))).toBe(8250);
    expect(threeQuarterMeanSleep(model(atom(10_000)), k(1000, 300))).toBe(7950);
    const m = new CostModel(atom(10_000), atom(1000), { switchCostNs: C_SW, latencyBudget: BUDGET, fixedSleepNs: FIXED });
    const rows = new Map(evaluatePolicies(m, k(1000, 300)).map((r) => [r.policy, r]));
    expect(rows.get('blkmq_half_mean')!.sleepNs).toBe(5200);
    expect(rows.get('three_quarter_mean')!.sleepNs).toBe(7950);
    expect(rows.get('blkmq_fixed')!.sleepNs).toBe(FIXED - 300);
    // the other rows do not read them
    expect(rows.get('best_static')!.sleepNs).toBeCloseTo(9000, 3);
    expect(rows.get('min_minus_wake')!.sleepNs).toBe(9000);
    // a negative δ (a model latency above the kernel's mean) never sleeps below 0
    expect(kernelHalfMeanSleep(model(atom(10_000)), k(-20_000))).toBe(0);
    expect(threeQuarterMeanSleep(model(atom(10_000)), k(-20_000))).toBe(0);
  });

  it('the fixed point agrees with plain iteration on random piecewise devices', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 20_000 }), fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: -3000, max: 5000 }), fc.integer({ min: 0, max: 800 }), (lo, w, d, lag) => {
        const m = model(mixture([{ dist: uniform(lo, lo + w), weight: 1 }, { dist: atom(lo + w / 3), weight: 1 }]));
        const s = kernelHalfMeanSleep(m, { offsetNs: d, timerLagNs: lag });
        let t = Math.max(0, (m.meanD + d) / 2 - lag);
        for (let i = 0; i < 400; i++) t = Math.max(0, (m.latency(t) + d) / 2 - lag);
        expect(Math.abs(s - t)).toBeLessThan(1e-6 * m.meanD);
      }),
      { seed: 20261206, numRuns: 200 },
    );
  });
});
