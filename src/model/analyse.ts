// One device over one window: F_D, F_O, c_sw, the current policy, the what-if table, efficiency,
// wasted CPU, oversleep, the self-check and a recommendation. Pure.
import type { BucketHist } from '../bpf/types.js';
import type { Era } from '../sources/types.js';
import { advise } from './advice.js';
import { lowerNs, midNs, NB, upperNs } from './buckets.js';
import { atom, bucketPiece, bucketPieceAt, calibratedDist, shiftedBy, summary } from './dist.js';
import { estimateDeviceTime } from './censored.js';
import { bucketPairs, bucketTotal, filledBuckets } from './hist.js';
import { CostModel, evaluatePolicies, NO_KERNEL_OFFSETS, policySleep, settableSleep, settingOf, WorstCase, type KernelOffsets, type UnresolvedAtom } from './policies.js';
import type { AnalyseOptions, CurrentPolicy, CurrentState, DepthState, DeviceTimeSource, DeviceWindow, Dist, KernelTerms, Measured, ModelTarget, OversleepCheck, UnresolvedBound } from './types.js';
import { analyseAtDepth, DEPTH_THRESHOLD, meanInFlight, pollerCosts, pollerEra, type PollerCosts } from './depth.js';

/** c_sw when it cannot be measured: the on-CPU cost of an hrtimer sleep plus a context switch pair on current x86 (design.md §5 anchor). */
export const DEFAULT_SWITCH_COST_NS = 1500;
/** F_O when wake overhead is not measured (no sleeps in the window): an atom at 1 µs. */
export const DEFAULT_WAKE_OVERHEAD_NS = 1000;
/** Fewer device-time samples in the window than this: no analysis (too noisy to act on). */
export const MIN_SAMPLES = 20;
/** Modelled and measured oversleep ratios further apart than this are flagged (checkOversleep). */
export const OVERSLEEP_MARGIN = 0.1;

export interface DeviceTime {
  dist: Dist;
  source: DeviceTimeSource;
  samples: number;
  censored: number;
  masses: [number, number][];
  /** the share the data cannot place, as atoms at the found times (empty when everything is resolved) */
  unresolved: UnresolvedAtom[];
}

/**
 * The factor that gives a histogram read as "uniform within each bucket" its exact mean sum/count
 * (the BPF side keeps exact sums; the bucket reading misplaces the mean by up to ~10%); 1 when
 * either mean is 0.
 */
function exactScale(h: BucketHist | undefined): number {
  if (!h || !(h.count > 0)) return 1;
  // the bucket reading's mean: Σ c·mid / Σ c (midNs is the mean of bucketPiece's piece)
  let n = 0;
  let sum = 0;
  for (let j = 0; j < h.buckets.length; j += 2) {
    const i = h.buckets[j]!;
    const c = h.buckets[j + 1]!;
    if (c > 0 && Number.isInteger(i) && i >= 0 && i < NB) {
      n += c;
      sum += c * midNs(i);
    }
  }
  const m = n > 0 ? sum / n : 0;
  const exact = h.sumNs / h.count;
  return m > 0 && exact > 0 && Number.isFinite(exact) ? exact / m : 1;
}

/**
 * The exact mean of each bucket (dense by index, 0 where empty) of a histogram that kept its
 * per-bucket sums (dev_spun, found_slept from a device's block in the loader); undefined without.
 */
function bucketMeans(h: BucketHist | undefined): Float64Array | undefined {
  const s = h?.bucketSumsNs;
  if (!h || !s) return undefined;
  // the sums in place, then each divided by its bucket's count (sums sit on the buckets' indices)
  const means = new Float64Array(NB);
  for (let j = 0; j < s.length; j += 2) means[s[j]!] = s[j + 1]!;
  for (let j = 0; j < h.buckets.length; j += 2) {
    const c = h.buckets[j + 1]!;
    means[h.buckets[j]!] = c > 0 ? means[h.buckets[j]!]! / c : 0;
  }
  return means;
}

/**
 * F_D. With hybrid samples: the product-limit estimate, whose parts are placed as the data allow:
 * the resolved part (exact dev_spun buckets) each at its bucket's exact mean where the loader kept
 * the per-bucket sums (bucketPieceAt), else scaled to dev_spun's exact mean, censored or not; the
 * unresolved part (found_slept samples below every exact one, which say only D ≤ found time) as
 * atoms at the found time: each bucket's exact mean where the loader kept found_slept's sums (the
 * found times of I/Os complete at wake-up follow O, so spread over two buckets their midpoints
 * put them µs apart: with λ in O' that read as spin the run never had, +8 … +12 % on the 5.10
 * guest's most censored runs), else the bucket's midpoint scaled to found_slept's exact mean;
 * kept inside their buckets: at the found time, never above. Without hybrid sleeps (classic
 * polling): rq_lat, issue → reaped, which is the device time to within one poll loop. Also rq_lat where the sleeps are too few to
 * judge (fewer than minSamples) but rq_lat is not: a window that is classic polling but for a
 * handful of sleeps (a mode switch; the fentry path records a pass's sleep at the task's next
 * loop or exit, so one can land after the hybrid run it belongs to) must not lose its figures.
 */
export function deviceTime(w: DeviceWindow, minSamples: number): DeviceTime | undefined {
  const { dev_spun: spun, found_slept: found } = w.hists;
  const est = estimateDeviceTime(spun, found);
  if (est && (est.samples >= minSamples || !(rqLatCounts(w).timed >= minSamples))) {
    const means = bucketMeans(spun);
    const k = means ? 1 : exactScale(spun);
    const resolved = est.resolvedMasses.map(([i, p]) => {
      const m = means?.[i];
      if (m !== undefined && m > 0) return bucketPieceAt(i, p, m);
      const q = bucketPiece(i, p);
      return { lo: q.lo * k, hi: q.hi * k, p };
    });
    const foundMeans = bucketMeans(found);
    const kf = exactScale(found);
    const unresolved = est.unresolvedMasses.map(([i, p]) => {
      const m = foundMeans?.[i];
      return { atNs: Math.min(upperNs(i), Math.max(lowerNs(i), m !== undefined && m > 0 ? m : midNs(i) * kf)), p };
    });
    const pieces = [...resolved, ...unresolved.map(({ atNs, p }) => ({ lo: atNs, hi: atNs, p }))].sort((a, b) => a.lo - b.lo || a.hi - b.hi);
    if (pieces.length) return { dist: { pieces }, source: est.source, samples: est.samples, censored: est.censored, masses: est.masses, unresolved };
  }
  const rq = w.hists.rq_lat;
  const dist = calibratedDist(rq);
  if (!rq || !dist) return undefined;
  const { total, timed } = rqLatCounts(w);
  return {
    dist,
    source: 'rq_lat',
    samples: timed,
    censored: 0,
    masses: bucketPairs(rq).filter(([, c]) => c > 0).sort((a, b) => a[0] - b[0]).map(([i, c]) => [i, c / total]),
    unresolved: [],
  };
}

/**
 * rq_lat's weighted count (its buckets' sum) and its timed completions, the count divided by the
 * sampling rate: what MIN_SAMPLES must judge (a device on the loader's hists fallback is timed
 * every time, so this errs low there).
 */
function rqLatCounts(w: DeviceWindow): { total: number; timed: number } {
  const total = w.hists.rq_lat ? bucketTotal(w.hists.rq_lat) : 0;
  return { total, timed: Math.floor(total / Math.max(1, w.sampleRate ?? 1)) };
}

export const counter = (w: DeviceWindow, k: string): number | undefined => {
  const v = w.counters[k];
  return v !== undefined && Number.isFinite(v) && v >= 0 ? v : undefined;
};

/**
 * c_sw measured: a poll loop (fentry path) or a poller's busy window (tracepoint path) that slept
 * spent iopoll = on-CPU overhead + off-CPU + spin, so (Σ iopoll − Σ offcpu − Σ spin) / sleeps is the
 * on-CPU cost per sleep. It also holds the loop's own bookkeeping (tracepoint path: everything from
 * the polled issue to the switch-out, submission included), so it errs high. Needs all three
 * histograms and at least one sleep.
 *
 * The wake latency (sched_wakeup → switch-in, inside off-CPU) counts as on-CPU: a wake-up that
 * preempts the idle task skips the run-queue clock update at the switch (check_preempt_curr's
 * rq_clock_skip_update, in every era), so the scheduler charges the poller from the wake-up
 * (validation.md: on 7.3 the VM gate's CPU accounting read −12…−15 % at QD4 and on NVMe without it,
 * +0.5…+1.4 % with it; validation-legacy.md: on 5.10 the sleeping runs read −5.8…−14.9 % without it,
 * the per-sleep shortfall equal to the wake latency, 2.2 µs). Where the woken poller waits behind
 * another task this overcounts; a dedicated polling CPU, the case worth modelling, does not wait.
 */
export function switchCost(w: DeviceWindow, sleeps: number, fallback: number): { ns: number; source: 'measured' | 'default' } {
  const { iopoll, offcpu, spin, wake_lat: wakeLat } = w.hists;
  if (sleeps > 0 && iopoll && offcpu && spin && iopoll.count > 0 && offcpu.count > 0) {
    const wakeCharged = Math.min(offcpu.sumNs, wakeLat?.sumNs ?? 0);
    const charged = offcpu.sumNs - wakeCharged;
    const v = (iopoll.sumNs - charged - spin.sumNs) / sleeps;
    if (Number.isFinite(v) && v > 0) return { ns: v, source: 'measured' };
  }
  return { ns: fallback, source: 'default' };
}

/**
 * The on-CPU part of c_sw before a sleep, for a simulation that places the sleep itself (F_O from
 * its start): c_sw less the mean wake latency it holds (switchCost); 0 where c_sw is the default.
 */
export function sleepOnCpu(csw: ReturnType<typeof switchCost>, wakeLat: BucketHist | undefined): number {
  if (csw.source !== 'measured') return 0;
  return Math.max(0, csw.ns - (wakeLat && wakeLat.count > 0 ? wakeLat.sumNs / wakeLat.count : 0));
}

/**
 * F_O, timed from D's origin. The model starts the sleep at D's origin (spin(s) = E[(D − s − O)⁺]),
 * but the kernel arms it later: after the rest of the submission (on 5.10 when the waiting call
 * reaches blk_poll). `wake_ovh` is timed from the sleep's start; its aux0/aux1 hold the sum and count
 * of that stretch (sleep start − the slept I/O's issue, as its found time counts it), a software
 * path of near-constant length, so F_O is `wake_ovh` shifted by its mean: spin, late and
 * P(overslept) then see the wake-up where it was. Its CPU stays in c_sw, which holds the on-CPU
 * time from the issue to the switch-out: counted once. Without aux1 (loaders and recordings from
 * before it): `wake_ovh` as it is.
 */
export function wakeOverhead(h: BucketHist | undefined): Dist | undefined {
  if (!h || !(h.count > 0)) return undefined;
  const d = calibratedDist(h);
  const offset = originOffset(h);
  if (!d || offset === undefined) return d;
  return shiftedBy(d, offset);
}

/** The mean stretch from D's origin in h's aux (wake_ovh: to the sleep's start; iopoll: to the slept loop's start); undefined when not counted. */
function originOffset(h: BucketHist | undefined): number | undefined {
  const offset = h && h.aux1 > 0 ? h.aux0 / h.aux1 : 0;
  return offset > 0 && Number.isFinite(offset) ? offset : undefined;
}

/**
 * The QD1 model's L and R (CostModel) on the fentry path, where the measured spin is the poll loop:
 * a classic loop starts polling L after D's origin, and every loop spends R per I/O on completions
 * after its finding poll. L is the origin → loop-start stretch of the slept I/Os (the submission's
 * rest and the waiting call's entry: where the exporter's spin of a classic loop starts), from
 * iopoll's aux; a loader without it gives the origin → sleep-start stretch in wake_ovh's aux, which
 * errs high by the loop start's own BPF and the path to the timer; 0 without either. Only for
 * F_D from found times, whose origin and end these are: rq_lat (allocation → reaped) holds the
 * reaping already. The tracepoint path's spin is the whole busy window: neither applies.
 */
function loopCosts(w: DeviceWindow, source: DeviceTimeSource, costs: PollerCosts | undefined): { pollStartNs: number; loopReapNs: number } | undefined {
  if (!costs || source === 'rq_lat') return undefined;
  return { pollStartNs: originOffset(w.hists.iopoll) ?? originOffset(w.hists.wake_ovh) ?? 0, loopReapNs: costs.loopReapNs };
}

/**
 * λ, the QD1 model's look after a sleep: the time from the woken poller's switch-in to the
 * completion found, for a slept I/O already complete then. Its latency ends there, not at the
 * wake-up, and that stretch is on CPU: on the 5.10 guest the advice's added latency read 1.5× the
 * model's without it once F_D placed the device's minimum exactly (docs/validation-legacy.md, L9).
 * Tracepoint path: the loader's lifetime minimum of switch-in → found (lookMinNs), since a window
 * fed a ½-mean sleep holds a handful of looks, each after a wake-up delayed past D, and some
 * delayed again after the switch-in (seen: 11 of 7.6 and 16.8 µs mean where the path takes
 * 1.2), and a calibration not yet converged calls spun I/Os slept through. Fentry path, whose
 * classification counts polls: the window's mean look (found_slept's aux). 0 from loaders and
 * recordings without either. At depth the poller model has its own look terms (depth.ts).
 */
function lookAfterWake(w: DeviceWindow): number {
  if (w.lookMinNs !== undefined && w.lookMinNs > 0 && Number.isFinite(w.lookMinNs)) return w.lookMinNs;
  const h = w.hists.found_slept;
  const v = h && h.aux1 > 0 ? h.aux0 / h.aux1 : 0;
  return Number.isFinite(v) && v > 0 ? v : 0;
}

/**
 * Eras whose sleep the user sets as io_poll_delay, in whole µs (4.10–5.18: every polled I/O on
 * 4.10–5.15, sync HIPRI I/O on 5.16–5.18): there the best static sleep is the best a setting gives.
 * io_uring's hybrid sleep (6.13+) is the kernel's own estimate, not a setting.
 */
const SETTABLE_ERAS: readonly Era[] = ['blkmq_hybrid', 'blkmq_hybrid_sync_only'];
const IO_POLL_DELAY_STEP_NS = 1000;

/** The policy the kernel runs, from era and setting, checked against whether anything was seen sleeping. */
export function detectPolicy(era: Era, ioPollDelay: number | undefined, slept: boolean, kernelEstimate: boolean): CurrentPolicy {
  if (!slept) return settingPolicy(era, ioPollDelay) ?? 'classic';
  if (kernelEstimate || era === 'iouring_hybrid') return 'iouring_half_min';
  const blkmq = era === 'blkmq_hybrid' || era === 'blkmq_hybrid_sync_only' || era === 'blkmq_hybrid_dead' || era === 'unknown';
  if (blkmq && ioPollDelay === 0) return 'blkmq_half_mean';
  if (blkmq && ioPollDelay !== undefined && ioPollDelay > 0) return 'blkmq_fixed';
  return 'unknown';
}

/**
 * 4.10–5.15 with io_poll_delay ≥ 0: every polled I/O (sync HIPRI and io_uring) goes through the
 * hybrid sleep, but the BPF side may not see legacy sleeps (docs/kernel.md §3.1, prototype README
 * "Legacy kernels in the fallback"): trust the setting then. Later eras sleep only when measured.
 */
function settingPolicy(era: Era, ioPollDelay: number | undefined): 'blkmq_half_mean' | 'blkmq_fixed' | undefined {
  if (era !== 'blkmq_hybrid' || ioPollDelay === undefined || ioPollDelay < 0) return undefined;
  return ioPollDelay === 0 ? 'blkmq_half_mean' : 'blkmq_fixed';
}

/** The analysis of one device over one window; undefined with too few device-time samples. */
export function analyse(w: DeviceWindow, opts: AnalyseOptions): ModelTarget | undefined {
  if (!(w.seconds > 0)) throw new Error(`window of ${w.seconds} s`);
  const polledIos = counter(w, 'polled_ios');
  const hybridSeen = (w.hists.dev_spun?.count ?? 0) + (w.hists.found_slept?.count ?? 0) > 0;
  // A device nobody polled in this window (IRQ-driven disks, idle NVMe) has nothing to model.
  if (polledIos === 0 && !hybridSeen) return undefined;
  const minSamples = opts.minSamples ?? MIN_SAMPLES;
  const dt = deviceTime(w, minSamples);
  if (!dt || dt.samples < minSamples) return undefined;

  const sleepReq = w.hists.sleep_req;
  const sleeps = counter(w, 'sleeps') ?? sleepReq?.count ?? 0;
  const wakeDist = wakeOverhead(w.hists.wake_ovh);
  const fO = wakeDist ?? atom(opts.defaultWakeOverheadNs ?? DEFAULT_WAKE_OVERHEAD_NS);
  const csw = switchCost(w, sleeps, opts.defaultSwitchCostNs ?? DEFAULT_SWITCH_COST_NS);
  const fixedSleepNs = w.ioPollDelay !== undefined && w.ioPollDelay > 0 ? w.ioPollDelay * 1000 : undefined;
  const sleepStepNs = SETTABLE_ERAS.includes(w.era) ? IO_POLL_DELAY_STEP_NS : undefined;
  const inFlight = meanInFlight(w.counters);
  const costs = w.counters['gaps'] !== undefined ? pollerCosts(w.counters) : undefined;
  const era = pollerEra(w.era, w.release);
  const atDepth = inFlight !== undefined && inFlight >= DEPTH_THRESHOLD && era !== undefined;
  const look = atDepth ? 0 : lookAfterWake(w);
  const m = new CostModel(dt.dist, look > 0 ? shiftedBy(fO, look) : fO, {
    switchCostNs: csw.ns,
    latencyBudget: opts.latencyBudget,
    ...(fixedSleepNs !== undefined ? { fixedSleepNs } : {}),
    ...(sleepStepNs !== undefined ? { sleepStepNs } : {}),
    ...(!atDepth ? loopCosts(w, dt.source, costs) : {}),
    ...(look > 0 ? { lookNs: look } : {}),
  });

  // The current state, as measured: which I/Os slept and for how long.
  const kernelEstimate = sleepReq !== undefined && sleepReq.aux1 > 0;
  const slept = sleeps > 0 && (kernelEstimate || (sleepReq !== undefined && sleepReq.count > 0 && filledBuckets(sleepReq) > 0));
  const policy = detectPolicy(w.era, w.ioPollDelay, slept, kernelEstimate);
  const sleepDist = slept ? currentSleep(policy, sleepReq!, kernelEstimate) : undefined;
  const sleptFraction = polledIos ? Math.min(1, sleeps / polledIos) : 1;
  const sleptOutcome = sleepDist ? m.mixedOutcome(sleptFraction, sleepDist) : undefined;
  // the block layer's terms, δ against the latency of what was measured (classic without sleeps)
  const kernel = kernelTermsOf(w, policy, sleptOutcome ? sleepReq : undefined, sleptOutcome?.latencyNs ?? m.meanD);
  const offsets = kernel ?? NO_KERNEL_OFFSETS;
  const qd1Policies = evaluatePolicies(m, offsets);
  const settingSleep = !slept && policy !== 'classic' && policy !== 'unknown' && policy !== 'oracle' ? policySleep(policy, m, offsets) : undefined;
  let current: CurrentState;
  if (sleptOutcome) {
    current = { policy, sleepNs: sleptOutcome.sleepNs, sleptFraction, sleepSource: kernelEstimate ? 'kernel_estimate' : 'sleep_req', outcome: sleptOutcome };
  } else if (settingSleep !== undefined && settingSleep > 0) {
    current = { policy, sleepNs: settingSleep, sleptFraction: 1, sleepSource: 'setting', outcome: m.outcome(settingSleep) };
  } else {
    current = { policy: 'classic', sleepNs: 0, sleptFraction: 0, sleepSource: 'none', outcome: m.outcome(0) };
  }

  // At depth the table, best, oracle and current state are the poller model's (depth.ts); at QD1
  // (or where the loader does not count the depth) the closed forms, with L and R where measured.
  let policies = qd1Policies;
  let classicCpuNs = m.cpu(0);
  let depth: DepthState | undefined;
  if (atDepth) {
    // the simulation places each sleep itself: F_O from the sleep's start, and the on-CPU part of
    // c_sw before it as wall time
    const d = analyseAtDepth({
      era, device: w.device, meanDepth: inFlight, fD: dt.dist, fO: calibratedDist(w.hists.wake_ovh) ?? fO,
      sleepOnCpuNs: sleepOnCpu(csw, w.hists.wake_lat), switchCostNs: csw.ns, latencyBudget: opts.latencyBudget,
      ...(fixedSleepNs !== undefined ? { fixedSleepNs } : {}), ...(sleepStepNs !== undefined ? { sleepStepNs } : {}), ...(kernel ? { kernel } : {}), ...(costs ?? pollerCosts({})), current, qd1: qd1Policies,
      ...(w.hists.rq_lat && w.hists.rq_lat.count > 0 ? { rqLatMeanNs: w.hists.rq_lat.sumNs / w.hists.rq_lat.count, rqLatBuckets: w.hists.rq_lat.buckets } : {}),
    });
    ({ policies, classicCpuNs, depth, current } = d);
  }
  const best = policies.find((p) => p.policy === 'best_static')!;
  const oracle = policies.find((p) => p.policy === 'oracle')!;

  const gain = classicCpuNs - best.cpuNs;
  const efficiency = gain > 1e-9 * classicCpuNs ? (classicCpuNs - current.outcome.cpuNs) / gain : undefined;

  let measured: Measured | undefined;
  const spinNs = counter(w, 'spin_ns') ?? w.hists.spin?.sumNs;
  if (polledIos && polledIos > 0 && spinNs !== undefined) {
    const oversleep = oversleepRatio(w);
    measured = {
      polledIos,
      iops: polledIos / w.seconds,
      spinPerIoNs: spinNs / polledIos,
      cpuPerIoNs: (spinNs + sleeps * csw.ns) / polledIos,
      ...(oversleep !== undefined ? { oversleepRatio: oversleep } : {}),
    };
  }

  const unresolved = dt.unresolved.reduce((a, x) => a + x.p, 0);
  const oversleepCheck = checkOversleep(current, measured);
  const partial: Omit<ModelTarget, 'recommendation' | 'advice'> = {
    device: w.device,
    dev: w.dev,
    windowSeconds: w.seconds,
    deviceTime: deviceTimeState(dt, unresolved, deviceTimeIdentified(unresolved, depth?.meanInFlight, sleptJudged(w), depth?.rqLatSlope)),
    wakeOverhead: { ...summary(fO), source: wakeDist ? 'measured' : 'default' },
    switchCostNs: csw.ns,
    switchCostSource: csw.source,
    latencyBudget: opts.latencyBudget,
    current,
    policies,
    best,
    oracle,
    ...(efficiency !== undefined ? { efficiency } : {}),
    ...(measured
      ? {
          measured,
          wastedCpuCores: (wastedPerIoNs({ current, best }, measured.cpuPerIoNs) * measured.iops) / 1e9,
          ...(measured.cpuPerIoNs > 0 ? { modelCpuErrorRatio: current.outcome.cpuNs / measured.cpuPerIoNs - 1 } : {}),
        }
      : {}),
    ...(oversleepCheck ? { oversleepCheck } : {}),
    ...(depth ? { depth } : {}),
    ...(inFlight !== undefined ? { inFlight } : {}),
    ...(costs ? { pollerCosts: costs } : {}),
    ...(kernel ? { kernel } : {}),
    ...(unresolved > 0 ? { bound: unresolvedBound(new WorstCase(m, dt.unresolved), best.sleepNs, sleepStepNs, offsets) } : {}),
    ...(sleepStepNs !== undefined && best.sleepNs > 0 ? { optimalSetting: settingOf(best.sleepNs, sleepStepNs, offsets) } : {}),
  };
  const shared = sharedRing(w, polledIos);
  if (shared) {
    const { efficiency: _e, wastedCpuCores: _w, modelCpuErrorRatio: _m, ...kept } = partial;
    return {
      ...kept,
      sharedRing: shared,
      advice: 'withheld',
      recommendation: `${w.device}: polled by an io_uring ring that also polls other devices (${shared.pollsPerIo.toFixed(1)} shared poll calls per I/O): one poller serves them all, so this device's own figures are not modelled; see the ring's CPU (hybridpoll_ring_poll_cpu_seconds_total)`,
    };
  }
  return { ...partial, ...advise(partial) };
}

/** Shared poll calls per polled I/O above which a device counts as polled by a ring over several devices. */
export const SHARED_RING_POLLS_PER_IO = 0.01;

/** The window's slept I/Os, judged: found complete at the wake-up (overslept) or still pending and spun for. */
export function sleptJudged(w: DeviceWindow): { overslept: number; spun: number } {
  return { overslept: counter(w, 'overslept') ?? w.hists.found_slept?.count ?? 0, spun: counter(w, 'spun') ?? w.hists.dev_spun?.count ?? 0 };
}

/** Measured.oversleepRatio: overslept / (overslept + spun) of the window's slept I/Os; undefined when none was judged. */
export function oversleepRatio(w: DeviceWindow): number | undefined {
  const { overslept, spun } = sleptJudged(w);
  return overslept + spun > 0 ? overslept / (overslept + spun) : undefined;
}

/**
 * Below this share of the slept I/Os still pending at their wake-up (timed exactly while spun for),
 * or below MIN_SAMPLES of them, F_D at depth is not identified: the found times bound D from above
 * only and rq_lat, which the depth fit deconvolves, barely depends on D when every I/O waits for a
 * wake-up instead. Measured on the virtual-time bed (docs/validation.md, "The model at depth"):
 * 806 of 8773 (9 %) spun for gave E[D] within 4 %, 628 of 8610 (7.3 %) identified too; 0–11 of up
 * to 10,000 gave −31 … +243 %, moving from boot to boot (1 of 61 at QD64 in a short run: +243 %);
 * on 5.10 at QD4 under the ½-mean rule 3 % gave +28 / +55 % (docs/validation-legacy.md, "At
 * depth"), where the threshold was 1 % until 2026-12-07. No 7.3 run of the full profile lies
 * between 1.6 and 7.3 %.
 */
export const MIN_SPUN_AT_DEPTH = 0.05;

/**
 * At depth, more spun-for slept I/Os than this many times the mean in-flight depth. A poller's
 * first fill puts `depth` I/Os in flight at once, and before its loop settles some of them are
 * spun for even where the settled loop finds every slept I/O long complete: QD32 on the 400 µs
 * device spun for 26–28 per run (one fill of 32), all of them in its first fill, timed from
 * io_uring's issue while the submission plug held the device back by up to 31 submissions, and
 * counted identified they put E[D] at +5 … +24 % (docs/validation.md, "QD32 on a device-bound
 * device").
 */
export const FILL_SPUN = 2;

/**
 * Classic polling at depth (nothing slept, F_D fitted to rq_lat alone): below this rqLatSlope
 * (DepthState) D is not identified. A poller-bound loop finds each completion at its next pass
 * whatever the device's time, so rq_lat reads the loop, not D: on the virtual-time bed classic
 * QD32 / QD64 on the 50 µs device put E[D] at +52 / +343 %, counted identified before
 * (docs/validation.md, "Classic polling at depth").
 */
export const MIN_RQLAT_SLOPE = 0.5;

/**
 * ModelTarget.deviceTime.identified: at QD1 (closed forms on the product-limit F_D, `depth`
 * undefined) while at most half of F_D is unresolved; at depth while at least MIN_SAMPLES,
 * MIN_SPUN_AT_DEPTH of the judged slept I/Os and more than FILL_SPUN × depth of them were spun for;
 * with none judged (nothing slept: F_D from rq_lat) while rq_lat moves with D (`rqLatSlope`, where
 * the fit measured it).
 */
export function deviceTimeIdentified(unresolved: number, depth: number | undefined, slept: { overslept: number; spun: number }, rqLatSlope?: number): boolean {
  if (depth === undefined) return !(unresolved > 0.5);
  const judged = slept.overslept + slept.spun;
  if (judged === 0) return !(rqLatSlope !== undefined && rqLatSlope < MIN_RQLAT_SLOPE);
  return slept.spun >= MIN_SAMPLES && slept.spun >= MIN_SPUN_AT_DEPTH * judged && slept.spun > FILL_SPUN * depth;
}

/**
 * Wasted CPU per I/O: the measured CPU less the best static sleep's. A device that polls
 * classically where the best static sleep is 0 already runs the best policy and wastes nothing:
 * the difference there is the model's own error at the state it was fed, not CPU a sleep would
 * save (on the test bed's classic runs at depth, 10–29 % of their CPU: docs/validation.md, "Wasted
 * CPU against the measured runs").
 */
export function wastedPerIoNs(t: Pick<ModelTarget, 'current' | 'best'>, measuredPerIoNs: number): number {
  return t.current.policy === 'classic' && t.best.sleepNs === 0 ? 0 : measuredPerIoNs - t.best.cpuNs;
}

/** ModelTarget.deviceTime: F_D's summary and where it came from (`unresolved`: its unresolved share). */
export function deviceTimeState(dt: DeviceTime, unresolved: number, identified: boolean): ModelTarget['deviceTime'] {
  return {
    ...summary(dt.dist),
    source: dt.source,
    samples: dt.samples,
    censored: dt.censored,
    masses: dt.masses,
    unresolved,
    identified,
    ...(unresolved > 0 ? { unresolvedAtNs: dt.unresolved.reduce((a, x) => a + x.p * x.atNs, 0) / unresolved } : {}),
  };
}

/** ModelTarget.sharedRing, when the window shows the device polled alongside another in one ring. */
export function sharedRing(w: DeviceWindow, polledIos: number | undefined): ModelTarget['sharedRing'] {
  const polls = counter(w, 'shared_polls');
  if (polls === undefined || !(polledIos && polledIos > 0)) return undefined;
  const pollsPerIo = polls / polledIos;
  return pollsPerIo > SHARED_RING_POLLS_PER_IO ? { pollsPerIo } : undefined;
}

/** A measured timer lag beyond this share of io_poll_delay is taken for a setting changed in the window. */
const MAX_TIMER_LAG = 0.1;

/**
 * KernelTerms of a window. The mean the block layer's adaptive rule reads (poll_stat: driver issue
 * → completion found) and δ, its excess over the model's latency of the window's measured state
 * (the completion's end after block_rq_complete, the tracepoint programs' run time among it: ≈ 3.4
 * µs per I/O on 5.10 in virtual time, docs/validation-legacy.md). Where the kernel slept by that
 * rule the requested sleeps give it over the whole window (sleep = (mean + 1)/2 ns, so twice the
 * sleep to within a ns, and on BPF's clock like the sleeps themselves); otherwise the poll_stat
 * lines read with the window's last snapshot (the last 100 ms with I/O, a sample). The timer lag
 * where the kernel slept a fixed io_poll_delay: the setting less the requested sleeps' mean.
 * Undefined when neither is measured.
 */
export function kernelTermsOf(w: DeviceWindow, policy: CurrentPolicy, sleepReq: BucketHist | undefined, latencyNs: number): KernelTerms | undefined {
  const legacySleeps = sleepReq && sleepReq.aux1 === 0 && sleepReq.count > 0 ? sleepReq.sumNs / sleepReq.count : undefined;
  const fromSleeps = policy === 'blkmq_half_mean' && legacySleeps !== undefined ? 2 * legacySleeps : undefined;
  const meanNs = fromSleeps ?? w.pollStatMeanNs;
  const hasMean = meanNs !== undefined && meanNs > 0 && Number.isFinite(meanNs);
  const settingNs = w.ioPollDelay !== undefined && w.ioPollDelay > 0 ? w.ioPollDelay * 1000 : undefined;
  const lag = policy === 'blkmq_fixed' && settingNs !== undefined && legacySleeps !== undefined ? settingNs - legacySleeps : undefined;
  const hasLag = lag !== undefined && Math.abs(lag) <= MAX_TIMER_LAG * settingNs!;
  if (!hasMean && !hasLag) return undefined;
  return {
    ...(hasMean ? { meanNs, meanSource: fromSleeps !== undefined ? ('sleep_req' as const) : ('poll_stat' as const) } : {}),
    offsetNs: hasMean ? meanNs - latencyNs : 0,
    timerLagNs: hasLag ? lag : 0,
  };
}

/**
 * The kernel's sleep as the model sees it: an atom where the kernel sleeps one value (its own
 * estimate hybrid_poll_time/2 on the fentry path; a fixed io_poll_delay; ½ mean when the requested
 * sleeps fill one bucket, one poll_stat class), at the exact mean of what was measured; otherwise
 * the requested-sleep histogram scaled to its exact mean. Spreading a single value over its bucket
 * would make the current row disagree with the what-if row at the same sleep.
 */
export function currentSleep(policy: CurrentPolicy, sleepReq: BucketHist, kernelEstimate: boolean): Dist | undefined {
  if (kernelEstimate) return atom(sleepReq.aux0 / sleepReq.aux1);
  const filled = filledBuckets(sleepReq);
  if (sleepReq.count > 0 && (policy === 'blkmq_fixed' || (policy === 'blkmq_half_mean' && filled === 1))) return atom(sleepReq.sumNs / sleepReq.count);
  return calibratedDist(sleepReq);
}

/**
 * Modelled P(overslept | slept) of the current state against the measured ratio. They come from the
 * same samples, so they differ by the grid (F_D uniform within buckets; the censored estimator's
 * half-count rule errs by up to ~0.05 in the CDF, censored.ts) plus what the model cannot place:
 * unresolved I/Os set at their found time read as not overslept. OVERSLEEP_MARGIN is twice the
 * estimator's error; beyond it the modelled oversleep and added latency are not to be trusted.
 */
export function checkOversleep(current: CurrentState, measured: Measured | undefined): OversleepCheck | undefined {
  if (!measured || measured.oversleepRatio === undefined || !(current.sleptFraction > 0)) return undefined;
  const modelled = current.outcome.oversleepProbability / current.sleptFraction;
  return { modelled, measured: measured.oversleepRatio, consistent: Math.abs(modelled - measured.oversleepRatio) <= OVERSLEEP_MARGIN };
}

/** What the advice can promise whatever the unresolved device times are (UnresolvedBound). */
export function unresolvedBound(wc: WorstCase, bestSleepNs: number, stepNs?: number, k: KernelOffsets = NO_KERNEL_OFFSETS): UnresolvedBound {
  const any = wc.boundedSleep(bestSleepNs);
  // where the sleep is set in whole steps, the largest a setting gives within the worst case's budget
  const sleepNs = stepNs === undefined || !(any > 0) ? any : settableSleep(any, stepNs, k);
  const setting = stepNs !== undefined && sleepNs > 0 ? { setting: settingOf(sleepNs, stepNs, k) } : {};
  return { sleepNs, cpuNs: wc.m.cpu(sleepNs), lateNs: wc.late(sleepNs), savingNs: wc.saving(sleepNs), bestLateNs: wc.late(bestSleepNs), ...setting };
}
