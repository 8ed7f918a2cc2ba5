// The model at the measured queue depth (issue 15): when a device's pollers keep more than one
// polled I/O in flight, today's QD1 table is replaced by the poller model's (src/model/poller/),
// evaluated at that depth on the same F_D, F_O and c_sw. Pure.
import type { Era } from '../sources/types.js';
import { parseRelease } from '../sources/era.js';
import { evaluatePoller, Sampler, simulate, type CurrentPoller, type PollerEra, type PollerOutcome, type PollerResult, type SleepRule, type SubmissionPattern } from './poller/index.js';
import { deconvolveDeviceTime, withoutTransient } from './deconvolve.js';
import { mean, scaledToMean, shiftedBy, supportMin } from './dist.js';
import { fixedDelaySleep, type KernelOffsets } from './policies.js';
import type { CurrentState, DepthState, Dist, PolicyOutcome } from './types.js';

/**
 * A mean depth below this is QD1: closed forms, exactly today's model. The poller model itself
 * rounds depth points, so 1.5 is where it would stop being QD1 anyway.
 */
export const DEPTH_THRESHOLD = 1.5;

/**
 * Mean polled I/Os in flight at the start of a waiting call, from the BPF counters `waits` and
 * `inflight_sum` (src/bpf/README.md); undefined when the loader does not count them or nothing waited.
 */
export function meanInFlight(counters: Record<string, number>): number | undefined {
  const waits = counters['waits'];
  const sum = counters['inflight_sum'];
  if (waits === undefined || sum === undefined || !(waits > 0) || !(sum >= 0)) return undefined;
  const d = sum / waits;
  return Number.isFinite(d) ? d : undefined;
}

/**
 * Fewer finding looks than this (slept-through calls, or a classic loop's first passes) are left
 * out (their costs 0, as before they were counted): a mean of a few is noise. At QD1 a slept
 * request is rarely found at its first look (4 in 20,000 I/Os on the 7.3 guest, whose
 * switch-in → call read 25 µs each where it is 1 µs at depth).
 */
export const MIN_LOOKS = 16;

/**
 * The poller's costs around its polling, from the BPF counters (src/bpf/README.md), each 0 when not
 * counted. The time between poll loops (loop end → next loop start in the same task: reaping the
 * CQEs, user space, the next submissions) is fitted as `callNs` + `submitNs` · k over the gaps,
 * k the completions of the loop before each gap (least squares from the sums `gaps`, `gap_ns`,
 * `gap_k`, `gap_kk`, `gap_kns`): a poller that reaps two per call pays its syscalls once for both.
 * With one k only (classic QD1: always 1) or a fit outside [0, ∞) it is all per I/O.
 * `loopReapNs`: inside the loop after the poll that found completions (ending the requests,
 * posting CQEs), per completion (`reap_ns` / `reaped`).
 * `lookNs` + `lookPerIoNs` · k: a poll call that finds k completions already there (`looks`,
 * `look_ns`, `look_k`, `look_kk`, `look_kns`); with one k only it is all per call; fewer than
 * MIN_LOOKS count as none. A run that did not sleep has no such call; where it has at least
 * MIN_LOOKS loops whose first pass of oneshot calls found completions (a classic ring over several
 * devices, paced by its poller), or whose first call on one device found two or more (a classic
 * loop paced by its poller), the look is fitted on that loop's start → the finding call's end
 * (`pass_looks`, …, passLookFit): per loop (the pass's own start and the finding call) + per
 * completion found + `emptyLookNs` per call before it that found nothing, which the classic loop
 * pays before its completion work and nothing else in the model holds. `wakeToLookNs`: per sleep,
 * the woken poller's time from its switch-in to that call (`wake_look_ns` / `looks`).
 */
export function pollerCosts(counters: Record<string, number>): PollerCosts {
  const c = (k: string) => {
    const v = counters[k];
    return v !== undefined && Number.isFinite(v) && v >= 0 ? v : undefined;
  };
  const reaped = c('reaped');
  const reapNs = c('reap_ns');
  const loopReapNs = reaped && reapNs !== undefined ? reapNs / reaped : 0;
  const gap = lineFit(c('gaps'), c('gap_ns'), c('gap_k'), c('gap_kk'), c('gap_kns'), 'slope');
  const counted = c('looks');
  const looks = counted !== undefined && counted >= MIN_LOOKS ? counted : undefined;
  const slept = lineFit(looks, c('look_ns'), c('look_k'), c('look_kk'), c('look_kns'), 'intercept');
  // a run without slept looks (classic): its loops' first passes of oneshot calls that found completions
  const passLooks = c('pass_looks');
  const pass = !looks && passLooks !== undefined && passLooks >= MIN_LOOKS
    ? passLookFit(passLooks, (k) => c(`pass_look_${k}`))
    : undefined;
  const look = pass ?? { ...slept, e: 0 };
  const wakeLook = c('wake_look_ns');
  // the gap holds the lead (issue → next loop), which the simulation places after the issue: take it
  // from the per-call part first, the rest from the per-I/O part (at the mean completions per gap)
  const n = c('leads');
  const l = c('lead_ns');
  const leadNs = n && l !== undefined && gap.meanY > 0 ? Math.min(l / n, gap.meanY) : 0;
  const fromCall = Math.min(gap.a, leadNs);
  const k = gap.meanK > 0 ? gap.meanK : 1;
  return {
    callNs: gap.a - fromCall,
    submitNs: Math.max(0, gap.b - (leadNs - fromCall) / k),
    leadNs,
    loopReapNs,
    lookNs: look.a,
    lookPerIoNs: look.b,
    emptyLookNs: look.e,
    wakeToLookNs: looks && wakeLook !== undefined ? wakeLook / looks : 0,
  };
}

export interface PollerCosts {
  /** per waiting call before the submissions, per I/O submitted, after the issue before the first poll; in the loop per completion */
  callNs: number;
  submitNs: number;
  leadNs: number;
  loopReapNs: number;
  /** a poll call that finds completions: per call and per completion it finds; per sleep, switch-in → that call */
  lookNs: number;
  lookPerIoNs: number;
  /** a one-look poll call that finds nothing (from a classic ring's first passes; 0 elsewhere) */
  emptyLookNs: number;
  wakeToLookNs: number;
}

/**
 * A classic loop's first pass, y = a + b·k + e·j (k the completions its finding call found, j the
 * oneshot calls before it that found nothing), by least squares from the sums (`pass_looks`,
 * `pass_look_ns`, `_k`, `_kk`, `_kns`, `_j`, `_jj`, `_jk`, `_jns`). The columns that do not vary
 * (their variance under 0.05) or whose fit leaves [0, ∞) are dropped: j first, then k, down to the
 * mean y per loop. Loaders before j (five sums) give j's sums as undefined: then j is not fitted.
 */
function passLookFit(n: number, sum: (k: string) => number | undefined): { a: number; b: number; e: number } | undefined {
  const sy = sum('ns');
  if (sy === undefined) return undefined;
  const [sk, skk, sky, sj, sjj, sjk, sjy] = ['k', 'kk', 'kns', 'j', 'jj', 'jk', 'jns'].map((x) => sum(x) ?? 0) as [number, number, number, number, number, number, number];
  const varies = (s1: number, s2: number) => n * s2 - s1 * s1 > 0.05 * n * n;
  // the normal equations over the columns [1, k, j], or [1, j]
  const fit = (useK: boolean): { a: number; b: number; e: number } | undefined => {
    const cols = [[n, sk, sj, sy], [sk, skk, sjk, sky], [sj, sjk, sjj, sjy]];
    const keep = [0, ...(useK ? [1] : []), 2];
    const m = keep.map((r) => [...keep.map((c) => cols[r]![c]!), cols[r]![3]!]);
    const x = solve(m);
    if (!x || x.some((v) => !(v >= 0) || !Number.isFinite(v))) return undefined;
    const at = (col: number) => (keep.includes(col) ? x[keep.indexOf(col)]! : 0);
    return { a: at(0), b: at(1), e: at(2) };
  };
  const kv = varies(sk, skk);
  const jv = varies(sj, sjj);
  // without j: the two-column fit every other look uses
  return (kv && jv ? fit(true) : undefined) ?? (jv ? fit(false) : undefined) ?? { ...lineFit(n, sy, sk, skk, sky, 'intercept'), e: 0 };
}

/** Gaussian elimination with partial pivoting on an augmented n×(n+1) matrix; undefined when singular. */
function solve(m: number[][]): number[] | undefined {
  const n = m.length;
  for (let i = 0; i < n; i++) {
    let p = i;
    for (let r = i + 1; r < n; r++) if (Math.abs(m[r]![i]!) > Math.abs(m[p]![i]!)) p = r;
    if (!(Math.abs(m[p]![i]!) > 1e-12 * Math.max(1, Math.abs(m[0]![0]!)))) return undefined;
    [m[i], m[p]] = [m[p]!, m[i]!];
    for (let r = 0; r < n; r++) {
      if (r === i) continue;
      const f = m[r]![i]! / m[i]![i]!;
      for (let c = i; c <= n; c++) m[r]![c] = m[r]![c]! - f * m[i]![c]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/**
 * y = a + b·k by least squares from the sums n, Σy, Σk, Σk², Σky. k must vary for the split (its
 * variance over the samples at least 0.05); otherwise, or with a fit outside [0, ∞), it is all in
 * the `fallback` term (slope: y/k per unit of k; intercept: mean y). All 0 without samples.
 */
function lineFit(
  n: number | undefined, sy: number | undefined, sk: number | undefined, skk: number | undefined, sky: number | undefined, fallback: 'slope' | 'intercept',
): { a: number; b: number; meanY: number; meanK: number } {
  if (!n || sy === undefined || !sk) return { a: 0, b: 0, meanY: 0, meanK: 0 };
  const base = { meanY: sy / n, meanK: sk / n };
  const all = fallback === 'slope' ? { ...base, a: 0, b: sy / sk } : { ...base, a: sy / n, b: 0 };
  if (skk === undefined || sky === undefined) return all;
  const v = n * skk - sk * sk;
  if (!(v > 0.05 * n * n)) return all;
  const b = (n * sky - sk * sy) / v;
  const a = (sy - b * sk) / n;
  return a >= 0 && b >= 0 && Number.isFinite(a + b) ? { ...base, a, b } : all;
}

/**
 * The depth histogram for the poller model from a mean: the two closed loops around it (floor and
 * ceil) in the mix that has that mean. Only the mean is counted; a closed loop at iodepth N reads
 * N at every wait, so an integer mean is one point.
 */
export function depthMix(mean: number): [number, number][] {
  const lo = Math.max(1, Math.floor(mean));
  const frac = mean - lo;
  if (frac < 1e-6) return [[lo, 1]];
  return [
    [lo, 1 - frac],
    [lo + 1, frac],
  ];
}

/**
 * The poller model's era for a host era (how an io_uring poller at depth polls; a sync HIPRI job
 * has one I/O in flight, so depth > 1 per task is io_uring IOPOLL), or undefined when the era is
 * not known. Before 7.0 a poll call by a running task is one look at the queue (blk_poll's, then
 * blk_hctx_poll's task-running check); 7.0 removed it. io_uring hybrid with a release that cannot
 * be read is taken as 7.0+. Eras without a reachable hybrid sleep still poll classically at depth,
 * where classic CPU per I/O is not E[D] but about E[D]/depth: they get the model of their poll path.
 */
export function pollerEra(era: Era, release: string | undefined): PollerEra | undefined {
  switch (era) {
    case 'iouring_hybrid': {
      const v = parseRelease(release);
      return v && v[0] === 6 ? 'iouring_613' : 'iouring_70';
    }
    case 'no_hybrid': // 6.4–6.12: io_do_iopoll over a wq_list, one look per call, as 6.13–6.19
      return 'iouring_613';
    case 'pre_hybrid':
    case 'blkmq_hybrid':
    case 'blkmq_hybrid_sync_only':
    case 'blkmq_hybrid_dead':
      return 'blkmq_iouring';
    case 'unknown':
      return undefined;
  }
}

/** The current state as the poller model runs it: the measured sleep, the setting's rule, or classic. */
function currentPoller(c: CurrentState): CurrentPoller {
  if (c.sleepSource === 'none' || c.sleepNs <= 0) return { policy: 'classic', rule: 'none' };
  if (c.sleepSource === 'setting') return { policy: c.policy, rule: 'kernel' };
  return { policy: c.policy, rule: 'static', sleepNs: c.sleepNs };
}

/** The current state as one simulation rule (the kernel's block-layer rule approximated by its first round, E[D]/2). */
function simRule(c: CurrentPoller, fD: Dist, fixedSleepNs: number | undefined): SleepRule {
  if (c.rule === 'none') return { kind: 'none' };
  if (c.rule === 'static') return { kind: 'static', sleepNs: [c.sleepNs ?? 0] };
  if (c.policy === 'iouring_half_min') return { kind: 'ring_min' };
  return { kind: 'static', sleepNs: [c.policy === 'blkmq_fixed' && fixedSleepNs ? fixedSleepNs : mean(fD) / 2] };
}

function row(o: PollerOutcome, policy: PolicyOutcome['policy'], qd1: PolicyOutcome | undefined): PolicyOutcome {
  return {
    policy,
    sleepNs: o.sleepNs,
    spinNs: o.spinNs,
    cpuNs: o.cpuNs,
    lateNs: o.addedLatencyNs,
    latencyNs: o.latencyNs,
    cpuShare: o.cpuShare,
    // not simulated at depth (poller README "Interface"): the QD1 figure of the same policy
    oversleepProbability: qd1?.oversleepProbability ?? 0,
    meetsBudget: o.meetsBudget,
  };
}

/** Rounds of the device-time correction (deviceTimeAtDepth) and the I/Os each simulates. */
const SHIFT_ROUNDS = 3;
const SHIFT_IOS = 800;

/**
 * F_D without the poller's own queueing. At depth a completion can wait while the poller submits,
 * reaps or sleeps on another request, and every measured device time (found times, rq_lat) holds
 * that wait; the simulation adds it again. So F_D is shifted until the simulated current state's
 * mean rq_lat (start → completion, as BPF times it: SimDeviceStats.rqLatNs) equals the measured
 * mean rq_lat (`targetNs`), a few rounds of one simulation
 * each (common random numbers: the shift is monotone). A shift that would take F_D below 0 stops
 * at its lowest point. Returns the shifted F_D and the shift: negative where the measured times hold
 * the poller's queueing; where every slept I/O is found at its wake-up rq_lat barely depends on D, so
 * the shift is not identified and can come out large either way (docs/validation.md).
 */
export function deviceTimeAtDepth(a: {
  era: Exclude<PollerEra, 'blkmq_sync'>; depth: number; fD: Dist; fO: Dist; sleepOnCpuNs: number; switchCostNs: number;
  submission: SubmissionPattern; rule: SleepRule; targetNs: number; slope?: boolean;
}): { fD: Dist; shiftNs: number; rqLatSlope?: number } {
  const { fD, targetNs, ...rest } = a;
  const [d] = deviceTimesAtDepth({ ...rest, devices: [{ fD, share: 1, targetNs }] });
  return d!;
}

/**
 * deviceTimeAtDepth for a poller over several devices (a ring): each device's F_D shifted by its
 * own measured mean rq_lat, all in one simulation per round (the poller's queueing on one device
 * depends on the others'). A device without a target keeps its F_D.
 */
export function deviceTimesAtDepth(a: {
  era: Exclude<PollerEra, 'blkmq_sync'>; depth: number; devices: readonly { fD: Dist; share: number; targetNs?: number }[]; fO: Dist; sleepOnCpuNs: number;
  switchCostNs: number; submission: SubmissionPattern; rule: SleepRule;
  /** also measure each device's rqLatSlope (one or two more simulations) */
  slope?: boolean;
}): { fD: Dist; shiftNs: number; rqLatSlope?: number }[] {
  const minLo = a.devices.map((d) => supportMin(d.fD));
  const wake = new Sampler(a.fO);
  const shift = a.devices.map(() => 0);
  // each device's simulated mean rq_lat on the F_D given (common random numbers: seed 7)
  const rqLatOn = (fDs: readonly Dist[]): number[] => simulate({
    era: a.era, depth: a.depth, devices: a.devices.map((d, i) => ({ fD: new Sampler(fDs[i]!), share: d.share })), wake,
    switchCostNs: a.switchCostNs, sleepOnCpuNs: a.sleepOnCpuNs, submission: a.submission, rule: a.rule, ios: SHIFT_IOS * a.devices.length,
    warmup: Math.max(200, 4 * a.depth), seed: 7,
  }).perDevice.map((pd) => (pd.ios ? pd.rqLatNs / pd.ios : NaN));
  const rqLat = (x: readonly number[]) => rqLatOn(a.devices.map((d, i) => shiftedBy(d.fD, x[i]!)));
  // the last round's rq_lat, when it ended the rounds by barely moving F_D (within 0.2 % of the target)
  let settled: number[] | undefined;
  for (let k = 0; k < SHIFT_ROUNDS; k++) {
    const found = rqLat(shift);
    let moved = false;
    a.devices.forEach((d, i) => {
      if (d.targetNs === undefined || !Number.isFinite(found[i]!)) return;
      const next = Math.max(-minLo[i]!, shift[i]! + (d.targetNs - found[i]!));
      if (Math.abs(next - shift[i]!) >= 0.002 * d.targetNs) moved = true;
      shift[i] = next;
    });
    if (!moved) {
      settled = found;
      break;
    }
  }
  const fits = a.devices.map((d, i) => ({ fD: shiftedBy(d.fD, shift[i]!), shiftNs: shift[i]! }));
  if (!a.slope) return fits;
  // How much the fitted mean rq_lat moves with D, from every device time scaled down by SLOPE_STEP:
  // about 1 where completions wait for nothing but the device, about 0 where every one waits for the
  // poller instead (a poller-paced loop), where rq_lat cannot place D.
  const at = settled ?? rqLat(shift);
  const below = rqLatOn(fits.map((f) => scaledToMean(f.fD, (1 - SLOPE_STEP) * mean(f.fD))));
  return fits.map((f, i) => {
    const step = SLOPE_STEP * mean(f.fD);
    return { ...f, rqLatSlope: step > 0 ? (at[i]! - below[i]!) / step : 0 };
  });
}

/**
 * The step of D, as a share of its fitted mean, over which deviceTimesAtDepth measures rqLatSlope:
 * wide, so that a fit that landed past the knee of a poller-paced loop (E[D] above the loop's round,
 * rq_lat's excess over the simulated round taken for device time) reads the plateau below it. At
 * 0.2 the lab's classic QD64 run on the 50 µs device, fitted at E[D] 177 µs, read identified in one
 * boot of two (CI profile 2026-12-07 15:00).
 */
const SLOPE_STEP = 0.5;

/**
 * F_D at depth without the poller's queueing, from what the window measured of rq_lat less a
 * transient (withoutTransient): its shape deconvolved from rq_lat's histogram (deconvolve.ts; the
 * found times bound D from above only where slept I/Os are found at their wake-up), then its mean
 * fitted to rq_lat's mean
 * (deviceTimeAtDepth). Without rq_lat's histogram the measured F_D is the shape; without its
 * mean, F_D is not moved.
 */
export function fitDeviceTime(a: {
  era: Exclude<PollerEra, 'blkmq_sync'>; depth: number; fD: Dist; fO: Dist; sleepOnCpuNs: number; switchCostNs: number;
  submission: SubmissionPattern; rule: SleepRule; rqLatMeanNs?: number; rqLatBuckets?: readonly number[]; slope?: boolean;
}): { fD: Dist; shiftNs: number; rqLatSlope?: number } {
  const { rqLatMeanNs: measuredMean, rqLatBuckets: measured, slope, ...sim } = a;
  const steady = measured ? withoutTransient(measured, measuredMean ?? NaN) : undefined;
  const rqLatBuckets = steady?.buckets;
  const rqLatMeanNs = steady && measuredMean !== undefined ? steady.meanNs : measuredMean;
  const wake = new Sampler(a.fO);
  const shape = rqLatBuckets
    ? deconvolveDeviceTime(rqLatBuckets, (fD, observe) => {
        simulate({
          era: a.era, depth: a.depth, devices: [{ fD: new Sampler(fD), share: 1 }], wake, switchCostNs: a.switchCostNs, sleepOnCpuNs: a.sleepOnCpuNs,
          submission: a.submission, rule: a.rule, ios: SHIFT_IOS, warmup: Math.max(200, 4 * a.depth), seed: 7, observe,
        });
      })
    : undefined;
  const fD = shape ?? a.fD;
  return rqLatMeanNs !== undefined && rqLatMeanNs > 0 ? deviceTimeAtDepth({ ...sim, fD, targetNs: rqLatMeanNs, ...(slope ? { slope } : {}) }) : { fD, shiftNs: 0 };
}

export interface AtDepthInput {
  era: PollerEra;
  device: string;
  meanDepth: number;
  fD: Dist;
  /**
   * F_O as wake_ovh measures it, from the sleep's start (not shifted to D's origin: the simulation
   * places the sleep itself), and the on-CPU wall time per sleep before it (sleepOnCpuNs)
   */
  fO: Dist;
  sleepOnCpuNs: number;
  switchCostNs: number;
  latencyBudget: number;
  fixedSleepNs?: number;
  /** ModelParams.sleepStepNs: io_poll_delay's step where the user sets the sleep */
  sleepStepNs?: number;
  /** the block layer's δ and timer lag (analyse.ts kernelTermsOf), for its rules */
  kernel?: KernelOffsets;
  /** pollerCosts(): the poller's time between loops (per call, per I/O, after the issue), its completion work in the loop, a finding poll call */
  callNs: number;
  submitNs: number;
  leadNs: number;
  loopReapNs: number;
  lookNs: number;
  lookPerIoNs: number;
  wakeToLookNs: number;
  /** measured mean rq_lat (issue → completion) of the window: the target of deviceTimeAtDepth; undefined: F_D as measured */
  rqLatMeanNs?: number;
  /** measured rq_lat masses (flat index, count pairs): F_D is deconvolved from them (deconvolve.ts) before the mean is fitted */
  rqLatBuckets?: readonly number[];
  /** today's QD1 analysis of the same window: its current state and table (oversleep figures) */
  current: CurrentState;
  qd1: PolicyOutcome[];
}

export interface AtDepth {
  policies: PolicyOutcome[];
  current: CurrentState;
  /** classic polling's CPU per I/O at this depth (η's cpu(0)) */
  classicCpuNs: number;
  depth: DepthState;
}

/**
 * The what-if table, best, oracle and current state of one device's poller at its measured depth.
 * One device per poller (rings over several devices are not attributed yet). The time between
 * loops is the submission cost (the refill waits for it; reaping is in it). Throws on malformed
 * input (evaluatePoller's message).
 */
export function analyseAtDepth(a: AtDepthInput): AtDepth {
  const submission: SubmissionPattern = { submitNs: a.submitNs, callNs: a.callNs, leadNs: a.leadNs, reapNs: 0, minComplete: 1, loopReapNs: a.loopReapNs, lookNs: a.lookNs, lookPerIoNs: a.lookPerIoNs, wakeToLookNs: a.wakeToLookNs };
  const current = currentPoller(a.current);
  const simEra = a.era === 'blkmq_sync' ? undefined : a.era;
  const fit = simEra
    ? fitDeviceTime({
        era: simEra, depth: Math.max(1, Math.round(a.meanDepth)), fD: a.fD, fO: a.fO, sleepOnCpuNs: a.sleepOnCpuNs, switchCostNs: a.switchCostNs,
        submission, rule: simRule(current, a.fD, fixedDelaySleep(a.fixedSleepNs, a.kernel)), slope: current.rule === 'none',
        ...(a.rqLatMeanNs !== undefined ? { rqLatMeanNs: a.rqLatMeanNs } : {}), ...(a.rqLatBuckets ? { rqLatBuckets: a.rqLatBuckets } : {}),
      })
    : { fD: a.fD, shiftNs: 0 };
  const r: PollerResult = evaluatePoller({
    era: a.era,
    devices: [{ device: a.device, fD: fit.fD, share: 1, ...(a.fixedSleepNs !== undefined ? { fixedSleepNs: a.fixedSleepNs } : {}), ...(a.sleepStepNs !== undefined ? { sleepStepNs: a.sleepStepNs } : {}), ...(a.kernel ? { kernel: a.kernel } : {}) }],
    fO: a.fO,
    sleepOnCpuNs: a.sleepOnCpuNs,
    switchCostNs: a.switchCostNs,
    latencyBudget: a.latencyBudget,
    depth: depthMix(a.meanDepth),
    submission,
    current,
  });
  const qd1 = (p: string) => a.qd1.find((x) => x.policy === p);
  const policies = r.policies.map((o) => row(o, o.policy as PolicyOutcome['policy'], qd1(o.policy)));
  const classic = policies.find((p) => p.policy === 'classic')!;
  const { policy: _p, ...cur } = row(r.current, 'classic', undefined);
  return {
    policies,
    classicCpuNs: classic.cpuNs,
    current: {
      ...a.current,
      ...(a.current.sleepSource === 'setting' ? { sleepNs: r.current.sleepNs } : {}),
      outcome: { ...cur, oversleepProbability: a.current.outcome.oversleepProbability },
    },
    depth: {
      meanInFlight: a.meanDepth,
      era: r.era,
      method: r.method,
      points: r.depthPoints,
      sleepsPerIo: r.current.sleepsPerIo,
      reapedPerPass: r.current.reapedPerPass,
      cpuStdErrNs: r.current.cpuStdErrNs,
      deviceShiftNs: fit.shiftNs,
      meanDeviceNs: mean(fit.fD),
      ...(fit.rqLatSlope !== undefined ? { rqLatSlope: fit.rqLatSlope } : {}),
      ...(r.kernelEstimateNs !== undefined ? { kernelEstimateNs: r.kernelEstimateNs } : {}),
    },
  };
}
