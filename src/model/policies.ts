// The QD1 cost model of design.md §5 and every policy evaluated on the same F_D, F_O and c_sw:
//   spin(s)    = E[max(0, D − s − O)] + R  (s > 0);  spin(0) = E[max(0, D − L)] + R
//   cpu(s)     = spin(s) + c_sw·[s > 0]
//   late(s)    = E[max(0, s + O − D)]
//   latency(s) = E[max(D, s + O)] = E[D] + late(s)
//   cpuShare   = cpu(s) / (latency(s) + R), the poller's share of an I/O's cycle
// with the poller's measured costs around the wait where the loader times them (fentry path; both
// 0 elsewhere, which is design.md's form): L, D's origin → the first look of a loop that does not
// sleep (the rest of the submission, on CPU but outside the poll loop), and R, per I/O, the
// completion work inside the loop after the poll that found it (in the measured spin).
import { expectPositive, mean, PositivePart, positivePart, restrictAbove, supportMin, totalMass } from './dist.js';
import { POLICIES, type Dist, type KernelTerms, type PolicyName, type PolicyOutcome } from './types.js';

export interface ModelParams {
  /** c_sw: on-CPU cost of one sleep/wake pair, ns */
  switchCostNs: number;
  /** best_static: allowed late(s) as a fraction of E[D] */
  latencyBudget: number;
  /** blkmq_fixed: io_poll_delay in ns; without it the policy is left out of the table */
  fixedSleepNs?: number;
  /** L: D's origin → the first look of a classic loop, ns (default 0; at most min O, see the constructor) */
  pollStartNs?: number;
  /** R: per I/O, the loop's completion work after the finding poll, ns (default 0) */
  loopReapNs?: number;
  /**
   * λ: the woken poller's first look, switch-in → the completion found, ns (default 0). The
   * caller passes F_O moved by λ (the first look after a sleep is at s + O + λ from D's origin),
   * so late and P(overslept) see it; here every slept I/O spins at least λ.
   */
  lookNs?: number;
  /**
   * Where a static sleep is set in whole steps (4.10–5.18: io_poll_delay, µs) the best static
   * sleep is the best one a setting gives (settableSleep); absent: any sleep.
   */
  sleepStepNs?: number;
}

/** Outcome fields without the policy name (the current, measured state uses this too). */
export type Outcome = Omit<PolicyOutcome, 'policy'>;

export class CostModel {
  readonly meanD: number;
  readonly meanO: number;
  readonly minD: number;
  readonly minO: number;
  /** the latency budget in ns: budget · E[D] */
  readonly budgetNs: number;
  /** D − O, prepared once: every policy and every step of the best_static search evaluates it */
  private readonly dMinusO: PositivePart;
  /** L and R (ModelParams), 0 when not given */
  readonly pollStartNs: number;
  readonly loopReapNs: number;
  /** λ (ModelParams), 0 when not given */
  readonly lookNs: number;
  /** E[(D − L)⁺]: a classic loop's spin before R */
  readonly classicSpinNs: number;

  constructor(
    readonly fD: Dist,
    readonly fO: Dist,
    readonly params: ModelParams,
  ) {
    if (!fD.pieces.length || !fO.pieces.length) throw new Error('CostModel: empty distribution');
    this.meanD = mean(fD);
    this.meanO = mean(fO);
    this.minD = supportMin(fD);
    this.minO = supportMin(fO);
    this.budgetNs = params.latencyBudget * this.meanD;
    this.dMinusO = new PositivePart([
      { dist: fD, sign: 1 },
      { dist: fO, sign: -1 },
    ]);
    // F_O is timed from D's origin and holds that stretch (analyse's L is F_O's own offset), so a
    // sleep never wakes before a classic loop would start: L ≤ min O keeps spin non-increasing in s
    this.pollStartNs = Math.min(nonNegative(params.pollStartNs, 'pollStartNs'), this.minO);
    this.loopReapNs = nonNegative(params.loopReapNs, 'loopReapNs');
    this.lookNs = nonNegative(params.lookNs, 'lookNs');
    this.classicSpinNs = this.pollStartNs > 0 ? expectPositive([{ dist: fD, sign: 1 }], -this.pollStartNs, 1) : this.meanD;
  }

  spin(s: number): number {
    // after a sleep: λ, then until D where D is later (F_O holds λ): max(λ, D − s − O)
    return (s > 0 ? this.lookNs + this.dMinusO.at(-s, 1) : this.classicSpinNs) + this.loopReapNs;
  }

  cpu(s: number): number {
    return this.spin(s) + (s > 0 ? this.params.switchCostNs : 0);
  }

  late(s: number): number {
    // E[(s + O − D)⁺] = E[(D − O − s)⁺] − (E[D] − E[O] − s): one expectation serves both.
    if (!(s > 0)) return 0;
    return this.noiseFree(this.dMinusO.at(-s, 1) - (this.meanD - this.meanO - s));
  }

  /** Rounding residue of a difference of ~E[D]-sized terms reads as 0 (and never negative). */
  noiseFree(v: number): number {
    return v > 1e-12 * this.meanD ? v : 0;
  }

  latency(s: number): number {
    return this.meanD + this.late(s);
  }

  /** P(D ≤ s + O): the I/O is already complete at wake-up. */
  oversleepProbability(s: number): number {
    return s > 0 ? 1 - this.dMinusO.at(-s, 0) : 0;
  }

  outcome(s: number): Outcome {
    const spinNs = this.spin(s);
    const cpuNs = spinNs + (s > 0 ? this.params.switchCostNs : 0);
    const lateNs = this.late(s);
    const latencyNs = this.meanD + lateNs;
    return {
      sleepNs: s,
      spinNs,
      cpuNs,
      lateNs,
      latencyNs,
      cpuShare: cpuNs / (latencyNs + this.loopReapNs),
      oversleepProbability: this.oversleepProbability(s),
      meetsBudget: lateNs <= this.budgetNs * (1 + 1e-9),
    };
  }

  /**
   * The model at a random sleep: with probability `slept` the I/O sleeps S ~ fS, otherwise it is
   * polled classically. This is how the measured current state is evaluated.
   */
  mixedOutcome(slept: number, fS: Dist): Outcome {
    if (!(slept > 0) || !fS.pieces.length) return this.outcome(0);
    // one shift: evaluated as visited, not prepared (the |O|·|S| combinations are the model's bulk)
    const [notOverslept, spinSlept] = positivePart(
      [
        { dist: this.fD, sign: 1 },
        { dist: this.fO, sign: -1 },
        { dist: fS, sign: -1 },
      ],
      0,
    );
    const meanS = mean(fS);
    const lateSlept = this.noiseFree(spinSlept - (this.meanD - this.meanO - meanS));
    const spinNs = (1 - slept) * this.classicSpinNs + slept * (spinSlept + this.lookNs) + this.loopReapNs;
    const cpuNs = spinNs + slept * this.params.switchCostNs;
    const lateNs = slept * lateSlept;
    const latencyNs = this.meanD + lateNs;
    return {
      sleepNs: meanS,
      spinNs,
      cpuNs,
      lateNs,
      latencyNs,
      cpuShare: cpuNs / (latencyNs + this.loopReapNs),
      oversleepProbability: slept * (1 - notOverslept),
      meetsBudget: lateNs <= this.budgetNs * (1 + 1e-9),
    };
  }
}

function nonNegative(v: number | undefined, what: string): number {
  if (v === undefined) return 0;
  if (!(Number.isFinite(v) && v >= 0)) throw new Error(`CostModel: ${what} must be a finite number ≥ 0 (got ${v})`);
  return v;
}

/** Bisection on a monotone predicate over [lo, hi]: the boundary where pred turns false. */
function boundary(lo: number, hi: number, pred: (s: number) => boolean): number {
  for (let k = 0; k < 200 && hi - lo > 1e-9 * Math.max(1, hi); k++) {
    const mid = (lo + hi) / 2;
    if (pred(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * best_static: argmin cpu(s) subject to late(s) ≤ budget·E[D]. spin is non-increasing and late
 * non-decreasing in s, so the cheapest feasible positive sleep is the largest feasible one; of the
 * sleeps with that same cpu the smallest is taken (least added latency). Classic (s = 0) wins when
 * sleeping cannot beat cpu(0) or no positive sleep meets the budget. Where the sleep is set in
 * whole steps (ModelParams.sleepStepNs) the same among the sleeps a setting gives.
 */
export function bestStaticSleep(m: CostModel, k: KernelOffsets = NO_KERNEL_OFFSETS): number {
  const feasible = (s: number) => m.late(s) <= m.budgetNs;
  // late(s) ≥ s + E[O] − E[D], so beyond E[D] − E[O] + budget + 1 nothing is feasible.
  const hi = Math.max(1, m.meanD - m.meanO + m.budgetNs + 1);
  const tiny = 1e-9 * Math.max(1, m.meanD);
  if (!feasible(tiny)) return 0;
  const sMax = boundary(tiny, hi, feasible);
  const floor = m.spin(sMax);
  const sBest = boundary(0, sMax, (s) => s === 0 || m.spin(s) > floor + tiny);
  let s = Math.min(sMax, sBest + tiny);
  const step = m.params.sleepStepNs;
  if (step !== undefined) {
    // the cheapest settable sleep is the largest within the budget, unless one at or under the
    // continuous best costs the same (least latency)
    const top = settableSleep(sMax, step, k);
    const low = settableSleep(s, step, k);
    s = low > 0 && m.cpu(low) <= m.cpu(top) ? low : top;
    if (!(s > 0)) return 0;
  }
  return m.cpu(s) < m.cpu(0) ? s : 0;
}

/**
 * The largest sleep ≤ s that a whole number of steps gives (the kernel sleeps io_poll_delay less
 * the timer lag, KernelTerms); 0 when even one step sleeps longer (io_poll_delay 0 is not a fixed
 * sleep but the ½-mean rule).
 */
export function settableSleep(s: number, stepNs: number, k: KernelOffsets = NO_KERNEL_OFFSETS): number {
  const n = Math.floor((s + k.timerLagNs) / stepNs + 1e-9);
  return n >= 1 ? n * stepNs - k.timerLagNs : 0;
}

/** The setting (whole steps) that gives a sleep settableSleep returned. */
export function settingOf(sleepNs: number, stepNs: number, k: KernelOffsets = NO_KERNEL_OFFSETS): number {
  return Math.round((sleepNs + k.timerLagNs) / stepNs);
}

/** A point mass of F_D the data cannot place: I/Os complete at wake-up, put at their found time. */
export interface UnresolvedAtom {
  atNs: number;
  p: number;
}

/**
 * The worst case of the unresolved share for the advice: those I/Os at D = 0 instead of at their
 * found times x (the data say only D ≤ x). Each then adds E[min(x, s + O)] to late(s) (its wake-up
 * is late by all of s + O instead of (s + O − x)⁺) and saves that much less CPU (its spin falls
 * from E[(x − s − O)⁺] to 0 and its share of E[D] by x); the budget shrinks with E[D].
 */
export class WorstCase {
  readonly share: number;
  readonly budgetNs: number;
  private readonly o: PositivePart;

  constructor(
    readonly m: CostModel,
    readonly atoms: readonly UnresolvedAtom[],
  ) {
    this.share = atoms.reduce((a, x) => a + x.p, 0);
    this.budgetNs = m.params.latencyBudget * Math.max(0, m.meanD - atoms.reduce((a, x) => a + x.p * x.atNs, 0));
    this.o = new PositivePart([{ dist: m.fO, sign: 1 }]);
  }

  /** Σ p·E[min(x, s + O)] = Σ p·(s + E[O] − E[(s + O − x)⁺]) */
  private shift(s: number): number {
    if (!(s > 0)) return 0;
    return this.atoms.reduce((a, x) => a + x.p * (s + this.m.meanO - this.o.at(s - x.atNs, 1)), 0);
  }

  late(s: number): number {
    return s > 0 ? this.m.late(s) + this.shift(s) : 0;
  }

  /** CPU saved against classic polling: cpu(0) − cpu(s) in the worst case */
  saving(s: number): number {
    return s > 0 ? this.m.cpu(0) - this.m.cpu(s) - this.shift(s) : 0;
  }

  /**
   * The largest sleep ≤ limit within the worst case's budget (late is non-decreasing, spin
   * non-increasing, so it is also the cheapest); 0 when none. late ≥ share·(s + E[O]) bounds the
   * search, and settles it without one evaluation when even a sleep of 0 cannot fit.
   */
  boundedSleep(limit: number): number {
    const hi = Math.min(limit, this.share > 0 ? this.budgetNs / this.share - this.m.meanO : limit);
    if (!(hi > 0)) return 0;
    const feasible = (s: number) => this.late(s) <= this.budgetNs * (1 + 1e-9);
    if (feasible(hi)) return hi;
    return boundary(0, hi, (s) => s === 0 || feasible(s));
  }
}

/**
 * iouring_half_min (6.13+): sleep = ½ the ring's running minimum of (issue → end of poll − sleep).
 * A poll after sleep s ends at max(D, s + O), so a sample is max(D − s, O). The first I/O does not
 * sleep (sample ≈ E[D]); every later I/O can only lower the minimum. Following the path on which
 * each further I/O has the minimum device time and wake overhead gives m ← max(min D − m/2, min O)
 * while that lowers m; it stops after a few steps (e.g. m = D/2 and s = D/4 for a constant D).
 */
export function iouringHalfMinSleep(m: CostModel): number {
  let est = m.meanD;
  for (let k = 0; k < 64; k++) {
    const next = Math.max(m.minD - est / 2, m.minO);
    if (!(next < est)) break;
    est = next;
  }
  return Math.max(0, est / 2);
}

/**
 * oracle: per I/O, knowing D and O, sleep s = D − O − λ (spin λ, pay c_sw) or do not sleep (pay
 * (D − L)⁺), whichever is cheaper: cpu = E[min((D − L)⁺, c_sw + λ)] + R. When D ≤ O + λ a sleep is
 * late by O + λ − D. A floor in cpu for every static policy, not bound by the latency budget.
 */
function oracleOutcome(m: CostModel): Outcome {
  // a sleep costs c_sw and the look after it (F_O holds λ: the oracle wakes λ before D)
  const c = m.params.switchCostNs + m.lookNs;
  const dSleeps = restrictAbove(m.fD, c + m.pollStartNs); // the I/Os the oracle sleeps for
  const pSleeps = totalMass(dSleeps);
  const excessOverC = expectPositive([{ dist: m.fD, sign: 1 }], -(c + m.pollStartNs), 1);
  const cpuNs = m.classicSpinNs - excessOverC + m.loopReapNs; // E[min((D − L)⁺, c)] + R
  const [sleepsAfterWake, sleepNs] = positivePart([{ dist: dSleeps, sign: 1 }, { dist: m.fO, sign: -1 }], 0);
  const lateNs = expectPositive([{ dist: m.fO, sign: 1 }, { dist: dSleeps, sign: -1 }], 0, 1);
  const latencyNs = m.meanD + lateNs;
  return {
    sleepNs,
    spinNs: cpuNs - pSleeps * m.params.switchCostNs,
    cpuNs,
    lateNs,
    latencyNs,
    cpuShare: cpuNs / (latencyNs + m.loopReapNs),
    oversleepProbability: pSleeps - sleepsAfterWake,
    meetsBudget: lateNs <= m.budgetNs * (1 + 1e-9),
  };
}

/** KernelTerms' two figures the rows use; none measured: both 0. */
export type KernelOffsets = Pick<KernelTerms, 'offsetNs' | 'timerLagNs'>;
export const NO_KERNEL_OFFSETS: KernelOffsets = { offsetNs: 0, timerLagNs: 0 };

/**
 * blkmq_half_mean as the kernel runs it (blk_mq_poll_nsecs): ½ of the mean of what poll_stat
 * records. A sample runs from the driver issue to the completion found, so it holds the oversleep
 * (the "vicious cycle"): at QD1 the kernel settles where s = ½·K(s) − lag, K(s) = latency(s) + δ
 * the mean of what poll_stat records at that sleep, δ what its samples hold beyond the model's
 * latency and lag the timer's start before the model's sleep start (KernelTerms; 0 where not
 * measured). g(s) = ½·K(s) − lag − s is convex (late is) and decreasing (late' ≤ 1), and g ≥ 0 at
 * s = ½·(E[D] + δ) − lag, so Newton's steps from there rise to the root without overshooting it.
 */
export function kernelHalfMeanSleep(m: CostModel, k: KernelOffsets = NO_KERNEL_OFFSETS): number {
  const rule = (s: number, latency: number) => (latency + k.offsetNs) / 2 - k.timerLagNs - s;
  let s = Math.max(0, rule(0, m.meanD));
  for (let i = 0; i < 64 && s > 0; i++) {
    // latency'(s) = P(D < s + O): the I/Os complete by the wake-up
    const next = s - rule(s, m.latency(s)) / (m.oversleepProbability(s) / 2 - 1);
    if (!(next > s + 1e-9 * m.meanD)) return Math.max(s, next);
    s = next;
  }
  return s;
}

/**
 * three_quarter_mean: seed 001's rule as a stock kernel can run it, io_poll_delay fixed at ¾ of the
 * mean poll_stat shows under the ½-mean rule, ¾·K(s½) − lag (its patch made the rule itself ¾,
 * which on a device that oversleeps there climbs further by the vicious cycle).
 */
export function threeQuarterMeanSleep(m: CostModel, k: KernelOffsets = NO_KERNEL_OFFSETS, halfLatencyNs = m.latency(kernelHalfMeanSleep(m, k))): number {
  return Math.max(0, (3 / 4) * (halfLatencyNs + k.offsetNs) - k.timerLagNs);
}

/** blkmq_fixed: io_poll_delay (ns) as the sleep lasts from the sleep start BPF sees, less the timer lag; undefined without a setting. */
export function fixedDelaySleep(fixedSleepNs: number | undefined, k: KernelOffsets = NO_KERNEL_OFFSETS): number | undefined {
  return fixedSleepNs === undefined ? undefined : Math.max(0, fixedSleepNs - k.timerLagNs);
}

/** The sleep each static policy picks on this data; undefined for blkmq_fixed without a setting. */
export function policySleep(policy: Exclude<PolicyName, 'oracle'>, m: CostModel, k: KernelOffsets = NO_KERNEL_OFFSETS): number | undefined {
  switch (policy) {
    case 'classic':
      return 0;
    case 'blkmq_half_mean':
      return kernelHalfMeanSleep(m, k);
    case 'blkmq_fixed':
      return fixedDelaySleep(m.params.fixedSleepNs, k);
    case 'three_quarter_mean':
      return threeQuarterMeanSleep(m, k);
    case 'min_minus_wake':
      return Math.max(0, m.minD - m.meanO);
    case 'iouring_half_min':
      return iouringHalfMinSleep(m);
    case 'best_static':
      return bestStaticSleep(m, k);
  }
}

const STATIC = POLICIES.filter((p): p is Exclude<PolicyName, 'oracle'> => p !== 'oracle');

/** The what-if table: every policy that can be evaluated, in POLICIES order; `k` for the block layer's rules. */
export function evaluatePolicies(m: CostModel, k: KernelOffsets = NO_KERNEL_OFFSETS): PolicyOutcome[] {
  const rows: PolicyOutcome[] = [];
  for (const policy of STATIC) {
    // ¾ mean from the ½-mean row's latency, already evaluated (POLICIES has it first): the
    // evaluations of F_D and F_O are the model's bulk at 64 devices
    const half = policy === 'three_quarter_mean' ? rows.find((r) => r.policy === 'blkmq_half_mean') : undefined;
    const s = half ? threeQuarterMeanSleep(m, k, half.latencyNs) : policySleep(policy, m, k);
    if (s !== undefined) rows.push({ policy, ...m.outcome(s) });
  }
  rows.push({ policy: 'oracle', ...oracleOutcome(m) });
  return rows;
}
