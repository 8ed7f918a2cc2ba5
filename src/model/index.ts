// The efficiency model (docs/design.md §4–5): pure functions over plain data, no I/O, no clocks.
//
// API for report / record / replay / metrics (all times in ns, rates per second):
//   analyse(window: DeviceWindow, opts: AnalyseOptions) → ModelTarget | undefined
//       one device over one window of deltas: current vs optimal sleep, efficiency η, wasted CPU,
//       oversleep, the what-if table (ModelTarget.policies) and a one-line recommendation.
//       undefined when the window holds fewer device-time samples than opts.minSamples.
//   analysePair(from: SnapshotInputs, to: SnapshotInputs, opts) → ModelTarget[]
//       the same for every device between two snapshots (what `report --duration D` needs).
//   new EfficiencyModel({ windowSeconds, latencyBudget }) implements ModelStage
//       fed every snapshot in order by SnapshotEngine; keeps a bounded window and the monotonic
//       wasted-CPU-seconds counters; returns ModelResult.
//   evaluatePolicies(fD, fO, params) → PolicyOutcome[]      the what-if table on any distributions
//   dist helpers (atom, uniform, mixture, distFromHist, …) and estimateDeviceTime (F_D, censored).
// See README.md in this folder for the assumptions and limits.
export * from './types.js';
