// A ring over several devices (io_uring 6.13+): one poller, one iopoll list and one
// hybrid_poll_time for every device it polls. BPF files each poll loop under the device of its
// pass's last poll and each sleep under its request's device, so per device those figures are the
// ring's split by chance; summed over the ring's devices they are the ring's own. This models the
// ring whole: the poller model (poller/) over the ring's devices, each with its own F_D and share
// of the I/Os, at the ring's depth, on the ring's summed costs; each device gets its part. Pure.
import { advise } from './advice.js';
import { analyse, checkOversleep, counter, currentSleep, DEFAULT_SWITCH_COST_NS, deviceTimeIdentified, deviceTimeState, DEFAULT_WAKE_OVERHEAD_NS, detectPolicy, deviceTime, MIN_SAMPLES, oversleepRatio, sharedRing, sleptJudged, sleepOnCpu, switchCost, unresolvedBound, wakeOverhead, wastedPerIoNs } from './analyse.js';
import { withoutTransient } from './deconvolve.js';
import { depthMix, deviceTimesAtDepth, meanInFlight, pollerCosts, pollerEra } from './depth.js';
import { atom, calibratedDist, mean, summary } from './dist.js';
import { filledBuckets, histSum } from './hist.js';
import { CostModel, WorstCase } from './policies.js';
import { evaluatePoller, type CurrentPoller, type PollerOutcome, type SleepRule, type SubmissionPattern } from './poller/index.js';
import type { AnalyseOptions, CurrentState, DeviceWindow, ModelTarget, PolicyOutcome, RingState } from './types.js';
import type { BucketHist, HistKind } from '../bpf/types.js';

/**
 * The units of analysis: each ring over several devices (shared devices linked by `sharedWith`,
 * transitively), then every other device alone. A shared device whose partner is not in the set
 * (an older loader, a partner without polled I/O in the window) stays alone: analyse withholds it.
 */
export function analysisUnits(ws: readonly DeviceWindow[]): DeviceWindow[][] {
  const shared = ws.filter((w) => sharedRing(w, counter(w, 'polled_ios')));
  const parent = new Map(shared.map((w) => [w.dev, w.dev]));
  const root = (d: string): string => {
    let r = d;
    while (parent.get(r) !== r) r = parent.get(r)!;
    return r;
  };
  for (const w of shared) if (w.sharedWith && parent.has(w.sharedWith)) parent.set(root(w.dev), root(w.sharedWith));
  const rings = new Map<string, DeviceWindow[]>();
  for (const w of shared) {
    const r = root(w.dev);
    rings.set(r, [...(rings.get(r) ?? []), w]);
  }
  return [...rings.values(), ...ws.filter((w) => !parent.has(w.dev)).map((w) => [w])];
}

/** A unit's analyses: a ring whole (analyseRing), or each device alone when it is one device or the ring cannot be modelled. */
export function analyseUnit(unit: readonly DeviceWindow[], opts: AnalyseOptions): ModelTarget[] {
  const ring = unit.length > 1 ? analyseRing(unit, opts) : undefined;
  return ring ?? unit.flatMap((w) => analyse(w, opts) ?? []);
}

/** The ring's window: counters and histograms summed over its devices (what the ring's poller did in all of them). */
function ringWindow(ws: readonly DeviceWindow[]): DeviceWindow {
  const hists: Partial<Record<HistKind, BucketHist>> = {};
  const counters: Record<string, number> = {};
  for (const w of ws) {
    for (const [k, h] of Object.entries(w.hists) as [HistKind, BucketHist][]) hists[k] = hists[k] ? histSum(hists[k]!, h) : h;
    for (const [k, v] of Object.entries(w.counters)) counters[k] = (counters[k] ?? 0) + v;
  }
  const w0 = ws[0]!;
  return { ...w0, dev: ws.map((w) => w.dev).join('+'), device: ws.map((w) => w.device).join('+'), hists, counters };
}

/**
 * One ring over several devices, modelled whole; undefined when it cannot be (a device with too
 * few samples or no polled I/O, no spin measured, an era without an io_uring poller model, a
 * loader without the depth counters): then each device is analysed alone, which withholds it.
 */
export function analyseRing(ws: readonly DeviceWindow[], opts: AnalyseOptions): ModelTarget[] | undefined {
  const minSamples = opts.minSamples ?? MIN_SAMPLES;
  const dts = ws.map((w) => deviceTime(w, minSamples));
  const ios = ws.map((w) => counter(w, 'polled_ios') ?? 0);
  if (dts.some((d) => !d || d.samples < minSamples) || ios.some((n) => !(n > 0))) return undefined;
  const ring = ringWindow(ws);
  const era = pollerEra(ring.era, ring.release);
  const inFlight = meanInFlight(ring.counters);
  const spinNs = counter(ring, 'spin_ns') ?? ring.hists.spin?.sumNs;
  if (era === undefined || era === 'blkmq_sync' || inFlight === undefined || spinNs === undefined) return undefined;

  const polledIos = ios.reduce((a, n) => a + n, 0);
  const sleeps = counter(ring, 'sleeps') ?? ring.hists.sleep_req?.count ?? 0;
  const wakeDist = wakeOverhead(ring.hists.wake_ovh);
  const fO = wakeDist ?? atom(opts.defaultWakeOverheadNs ?? DEFAULT_WAKE_OVERHEAD_NS);
  const csw = switchCost(ring, sleeps, opts.defaultSwitchCostNs ?? DEFAULT_SWITCH_COST_NS);
  const costs = pollerCosts(ring.counters);

  // the ring's one sleep: the kernel's own hybrid_poll_time/2 (the same for every device of it)
  const sleepReq = ring.hists.sleep_req;
  const kernelEstimate = sleepReq !== undefined && sleepReq.aux1 > 0;
  const slept = sleeps > 0 && sleepReq !== undefined && (kernelEstimate || (sleepReq.count > 0 && filledBuckets(sleepReq) > 0));
  const policy = detectPolicy(ring.era, undefined, slept, kernelEstimate);
  const sleepNs = slept ? mean(currentSleep(policy, sleepReq!, kernelEstimate)!) : 0;
  const current: CurrentPoller = sleepNs > 0 ? { policy, rule: 'static', sleepNs } : { policy: 'classic', rule: 'none' };
  const rule: SleepRule = sleepNs > 0 ? { kind: 'static', sleepNs: ws.map(() => sleepNs) } : { kind: 'none' };

  // as analyse at depth: the simulation places each sleep (F_O from its start, c_sw's on-CPU part before it)
  const sleepOnCpuNs = sleepOnCpu(csw, ring.hists.wake_lat);
  const simFO = calibratedDist(ring.hists.wake_ovh) ?? fO;
  const submission: SubmissionPattern = { ...costs, reapNs: 0, minComplete: 1 };
  const sim = { era, fO: simFO, sleepOnCpuNs, switchCostNs: csw.ns, submission };
  const fits = deviceTimesAtDepth({
    ...sim, depth: Math.max(1, Math.round(inFlight)), rule, slope: rule.kind === 'none',
    devices: ws.map((w, i) => {
      const rq = w.hists.rq_lat;
      return { fD: dts[i]!.dist, share: ios[i]!, ...(rq && rq.count > 0 ? { targetNs: withoutTransient(rq.buckets, rq.sumNs / rq.count).meanNs } : {}) };
    }),
  });
  const r = evaluatePoller({
    ...sim, latencyBudget: opts.latencyBudget, depth: depthMix(Math.max(1, inFlight)), current,
    devices: ws.map((w, i) => ({ device: w.device, fD: fits[i]!.fD, share: ios[i]! })),
  });

  const measuredCpu = (spinNs + sleeps * csw.ns) / polledIos;
  // the ring's figures per I/O over the measured mix of its devices' I/Os
  const overRing = (o: PollerOutcome) => ws.reduce((a, _, k) => a + ios[k]! * o.perDevice[k]!.cpuNs, 0) / polledIos;
  const cpuWeight = ws.map((_, k) => ios[k]! * r.current.perDevice[k]!.cpuNs);
  const currentCpuNs = overRing(r.current);
  const cpuTotal = currentCpuNs * polledIos;
  const state: Omit<RingState, 'cpuShare'> = {
    devs: ws.map((w) => w.dev),
    devices: ws.map((w) => w.device),
    polledIos,
    measuredCpuPerIoNs: measuredCpu,
    currentCpuNs,
    classicCpuNs: overRing(r.policies.find((p) => p.policy === 'classic')!),
    bestCpuNs: overRing(r.best),
    bestSleepNs: r.best.sleepNs,
    modelCpuErrorRatio: currentCpuNs / measuredCpu - 1,
  };

  return ws.map((w, k) => {
    const dt = dts[k]!;
    const m = new CostModel(dt.dist, fO, { switchCostNs: csw.ns, latencyBudget: opts.latencyBudget });
    // this device's part of a ring-wide outcome: its I/Os' CPU and latency; the sleep, budget and share are the ring's
    const row = (o: PollerOutcome, p: PolicyOutcome['policy']): PolicyOutcome => {
      const pd = o.perDevice[k]!;
      return {
        policy: p,
        sleepNs: o.sleepNs,
        spinNs: Math.max(0, pd.cpuNs - pd.sleepsPerIo * csw.ns),
        cpuNs: pd.cpuNs,
        lateNs: pd.addedLatencyNs,
        latencyNs: pd.latencyNs,
        cpuShare: o.cpuShare,
        // not simulated at depth (as analyseAtDepth): the QD1 figure at that sleep
        oversleepProbability: m.outcome(o.sleepNs).oversleepProbability,
        meetsBudget: o.meetsBudget,
      };
    };
    const policies = r.policies.map((o) => row(o, o.policy as PolicyOutcome['policy']));
    const best = policies.find((p) => p.policy === 'best_static')!;
    const oracle = policies.find((p) => p.policy === 'oracle')!;
    const classic = policies.find((p) => p.policy === 'classic')!;
    const { policy: _p, ...outcome } = row(r.current, 'classic');
    const devSleeps = counter(w, 'sleeps') ?? w.hists.sleep_req?.count ?? 0;
    const cur: CurrentState = {
      policy: current.policy,
      sleepNs,
      sleptFraction: sleepNs > 0 ? Math.min(1, devSleeps / ios[k]!) : 0,
      sleepSource: sleepNs > 0 ? (kernelEstimate ? 'kernel_estimate' : 'sleep_req') : 'none',
      outcome,
    };
    // the ring's measured CPU split as the model splits its own: every device shares the ring's self-check
    const cpuShare = cpuTotal > 0 ? cpuWeight[k]! / cpuTotal : ios[k]! / polledIos;
    const cpuPerIoNs = (measuredCpu * polledIos * cpuShare) / ios[k]!;
    const oversleep = oversleepRatio(w);
    const measured = {
      polledIos: ios[k]!,
      iops: ios[k]! / w.seconds,
      spinPerIoNs: (spinNs * cpuShare) / ios[k]!,
      cpuPerIoNs,
      ...(oversleep !== undefined ? { oversleepRatio: oversleep } : {}),
    };
    const gain = classic.cpuNs - best.cpuNs;
    const unresolved = dt.unresolved.reduce((a, x) => a + x.p, 0);
    const oversleepCheck = checkOversleep(cur, measured);
    const partial: Omit<ModelTarget, 'recommendation' | 'advice'> = {
      device: w.device,
      dev: w.dev,
      windowSeconds: w.seconds,
      // the ring is always evaluated at depth (simulation)
      deviceTime: deviceTimeState(dt, unresolved, deviceTimeIdentified(unresolved, inFlight, sleptJudged(w), fits[k]!.rqLatSlope)),
      wakeOverhead: { ...summary(fO), source: wakeDist ? 'measured' : 'default' },
      switchCostNs: csw.ns,
      switchCostSource: csw.source,
      latencyBudget: opts.latencyBudget,
      current: cur,
      policies,
      best,
      oracle,
      ...(gain > 1e-9 * classic.cpuNs ? { efficiency: (classic.cpuNs - outcome.cpuNs) / gain } : {}),
      measured,
      wastedCpuCores: (wastedPerIoNs({ current: cur, best }, cpuPerIoNs) * measured.iops) / 1e9,
      modelCpuErrorRatio: outcome.cpuNs / cpuPerIoNs - 1,
      ...(oversleepCheck ? { oversleepCheck } : {}),
      depth: {
        meanInFlight: inFlight,
        era: r.era,
        method: r.method,
        points: r.depthPoints,
        sleepsPerIo: r.current.perDevice[k]!.sleepsPerIo,
        reapedPerPass: r.current.reapedPerPass,
        cpuStdErrNs: r.current.cpuStdErrNs,
        deviceShiftNs: fits[k]!.shiftNs,
        meanDeviceNs: mean(fits[k]!.fD),
        ...(fits[k]!.rqLatSlope !== undefined ? { rqLatSlope: fits[k]!.rqLatSlope } : {}),
      },
      inFlight,
      pollerCosts: costs,
      ...(unresolved > 0 ? { bound: unresolvedBound(new WorstCase(m, dt.unresolved), best.sleepNs) } : {}),
      sharedRing: { pollsPerIo: sharedRing(w, ios[k])!.pollsPerIo, ring: { ...state, cpuShare } },
    };
    const a = advise(partial);
    return { ...partial, ...a, recommendation: `${a.recommendation} (one io_uring ring polls ${state.devices.join(', ')}: its one sleep, this device's part of its CPU)` };
  });
}

/** Every modelled figure of the device withheld: polled by a ring over several devices that could not be modelled whole. */
export function withheld(t: ModelTarget): boolean {
  return t.sharedRing !== undefined && t.sharedRing.ring === undefined;
}
