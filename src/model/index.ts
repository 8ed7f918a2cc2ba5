// The efficiency model (docs/design.md §4–5): pure functions over plain data, no I/O, no clocks.
//
// API for report / record / replay / metrics (all times in ns, rates per second):
//   analyse(window: DeviceWindow, opts: AnalyseOptions) → ModelTarget | undefined
//       one device over one window of deltas: current vs optimal sleep, efficiency η, wasted CPU,
//       oversleep, the what-if table (ModelTarget.policies) and a one-line recommendation with what
//       it rests on (advice: model / bounded / withheld when part of F_D is unresolved).
//       undefined when the window holds fewer device-time samples than opts.minSamples.
//   analysePair(from: SnapshotInputs, to: SnapshotInputs, opts) → ModelTarget[]
//       the same for every device between two snapshots (what `report --duration D` needs), with
//       each io_uring ring over several devices modelled whole (ring.ts analyseRing).
//   new EfficiencyModel({ windowSeconds, latencyBudget }) implements ModelStage
//       fed every snapshot in order by SnapshotEngine; keeps a bounded window and the monotonic
//       wasted-CPU-seconds counters; returns ModelResult.
//   evaluatePolicies(new CostModel(fD, fO, params)) → PolicyOutcome[]   the what-if table on any F_D, F_O
//   dist helpers (atom, uniform, mixture, distFromHist, …) and estimateDeviceTime (F_D, censored).
// See README.md in this folder for the assumptions and limits.
export * from './types.js';
export { analyse, detectPolicy, DEFAULT_SWITCH_COST_NS, DEFAULT_WAKE_OVERHEAD_NS, MIN_SAMPLES, OVERSLEEP_MARGIN } from './analyse.js';
export { analysePair } from './pair.js';
export { analyseRing, withheld } from './ring.js';
export { aboveClassicCause, advise, belowBestCause } from './advice.js';
export { EfficiencyModel, type EfficiencyModelOptions } from './stage.js';
export { CostModel, evaluatePolicies, policySleep, bestStaticSleep, iouringHalfMinSleep, WorstCase, type ModelParams, type Outcome, type UnresolvedAtom } from './policies.js';
export { estimateDeviceTime, type DeviceTimeEstimate } from './censored.js';
export { atom, uniform, mixture, distFromHist, distFromMasses, mean, cdf, quantile, summary, expectPositive } from './dist.js';
export { cumulativeLe, countLe, histIncrease, counterIncrease } from './hist.js';
export { Accumulator, SlidingWindow } from './window.js';
