// Plain data in and out of the efficiency model (docs/design.md §4–5). All times are nanoseconds;
// metrics convert to seconds. Nothing here does I/O.
import type { BucketHist, HistKind } from '../bpf/types.js';
import type { Era } from '../sources/types.js';

/** The policies of design.md §5, in the order the what-if table lists them. Label values are stable API. */
export const POLICIES = [
  'classic',
  'blkmq_half_mean',
  'blkmq_fixed',
  'three_quarter_mean',
  'min_minus_wake',
  'iouring_half_min',
  'best_static',
  'oracle',
] as const;
export type PolicyName = (typeof POLICIES)[number];

/** The policy the kernel runs now; `unknown` when sleeps are measured that no era/setting explains. */
export type CurrentPolicy = PolicyName | 'unknown';

/**
 * One piece of a distribution: probability `p` spread uniformly over (lo, hi], or an atom at `lo`
 * when lo === hi. Histogram buckets become uniform pieces; exact values (buckets 0–4, tests) atoms.
 */
export interface Piece {
  lo: number;
  hi: number;
  p: number;
}

/** A probability distribution on [0, ∞) as non-overlapping pieces sorted by lo; Σp = 1. */
export interface Dist {
  pieces: Piece[];
}

/** What one policy would do with the measured F_D, F_O and c_sw, per I/O at QD1. */
export interface PolicyOutcome {
  policy: PolicyName;
  /** the sleep s (for `oracle`: the mean of its per-I/O sleeps max(0, D − O)) */
  sleepNs: number;
  /** spin(s): CPU spent spinning */
  spinNs: number;
  /** cpu(s) = spin(s) + c_sw·[s > 0] */
  cpuNs: number;
  /** late(s) = E[max(0, s + O − D)]: latency added by oversleep */
  lateNs: number;
  /** latency(s) = E[max(D, s + O)] */
  latencyNs: number;
  /** cpu(s) / latency(s): share of one core a QD1 poller spends on this device (1 = classic polling) */
  cpuShare: number;
  /** P(D ≤ s + O): probability the I/O is already complete at wake-up (0 for classic) */
  oversleepProbability: number;
  /** late(s) ≤ budget · E[D] */
  meetsBudget: boolean;
}

export type DeviceTimeSource =
  /** product-limit estimate from exact (dev_spun) and left-censored (found_slept) samples */
  | 'censored_km'
  /** dev_spun only: plain empirical */
  | 'empirical'
  /** found_slept only: no exact sample, each value taken as its upper bound */
  | 'censored_only'
  /** rq_lat (issue → reaped): exact under classic polling, includes non-polled I/O and oversleep */
  | 'rq_lat';

export interface DistSummary {
  meanNs: number;
  /** lower end of the support (bucket lower bound) */
  minNs: number;
  p50Ns: number;
  p99Ns: number;
}

/** Window deltas of one device: the input of `analyse`, built from snapshots or by hand. */
export interface DeviceWindow {
  /** kernel dev_t "major:minor" */
  dev: string;
  /** block device name (label value); falls back to dev */
  device: string;
  /** seconds the deltas cover (> 0) */
  seconds: number;
  /** histogram deltas over the window (non-cumulative sparse buckets, counts and sums of the window) */
  hists: Partial<Record<HistKind, BucketHist>>;
  /** counter deltas over the window (polled_ios, sleeps, overslept, spun, spin_ns, sleep_ns, …) */
  counters: Record<string, number>;
  /** kernel era of the host */
  era: Era;
  /** the host's kernel release (`uname -r`), when read: splits the io_uring hybrid eras at 7.0 */
  release?: string;
  /** queue/io_poll_delay of the device, if read */
  ioPollDelay?: number;
  /**
   * debugfs poll_stat (4.12–6.3) at the window's end: the mean over its lines with samples,
   * weighted by their samples (the kernel's last 100 ms window with I/O); absent when none has any
   */
  pollStatMeanNs?: number;
  /**
   * --bpf.sample over the window (the highest rate read in it): rq_lat holds 1 in this many
   * completions, each counted this many times, so its count overstates the samples it rests on
   */
  sampleRate?: number;
  /** a device an io_uring ring polled in the same passes as this one (BpfDeviceSeries.sharedWith) */
  sharedWith?: string;
  /** tracepoint path: the shortest look since the loader started (BpfDeviceSeries.lookMinNs), at the window's end */
  lookMinNs?: number;
}

export interface AnalyseOptions {
  /** best_static: allowed late(s) as a fraction of E[D] (design.md default 0.01) */
  latencyBudget: number;
  /** c_sw when it cannot be measured; default DEFAULT_SWITCH_COST_NS */
  defaultSwitchCostNs?: number;
  /** F_O when wake overhead is not measured; default atom at DEFAULT_WAKE_OVERHEAD_NS */
  defaultWakeOverheadNs?: number;
  /** fewer device-time samples than this: no target (default MIN_SAMPLES) */
  minSamples?: number;
}

export interface CurrentState {
  policy: CurrentPolicy;
  /** mean requested sleep of the I/Os that slept (0 for classic) */
  sleepNs: number;
  /** fraction of polled I/Os that slept (0..1) */
  sleptFraction: number;
  /**
   * where sleepNs came from: the kernel's own estimate (aux0/aux1 of sleep_req), the sleep_req
   * histogram, the setting (4.10–5.15 io_poll_delay ≥ 0 with no sleep seen by BPF: the policy's
   * sleep on this F_D), or none (classic)
   */
  sleepSource: 'kernel_estimate' | 'sleep_req' | 'setting' | 'none';
  /** the model evaluated at the measured sleeps (mixture over slept / not slept and over sleep values) */
  outcome: Omit<PolicyOutcome, 'policy'>;
}

export interface Measured {
  /** polled I/Os in the window */
  polledIos: number;
  /** polled I/Os per second */
  iops: number;
  /** spin CPU per polled I/O */
  spinPerIoNs: number;
  /** (spin + sleeps · c_sw) / polled I/Os */
  cpuPerIoNs: number;
  /** overslept / (overslept + spun): fraction of slept I/Os already complete at wake-up */
  oversleepRatio?: number;
}

/** The analysis of one device over one window: what report, replay and metrics show. */
export interface ModelTarget {
  device: string;
  dev: string;
  windowSeconds: number;
  /** F_D: device time distribution, bucket masses on the grid (index → probability), for charts */
  deviceTime: DistSummary & {
    source: DeviceTimeSource;
    samples: number;
    censored: number;
    masses: [number, number][];
    /**
     * share of F_D the data cannot place: I/Os already complete at wake-up with no exact sample
     * below them (1 for censored_only). The model puts it at their found time (`unresolvedAtNs`),
     * the most the data allow, so with a share > 0 the modelled late() and oversleep are lower
     * bounds and the best static sleep an upper bound.
     */
    unresolved: number;
    /** mean found time the unresolved share is placed at (absent when the share is 0) */
    unresolvedAtNs?: number;
    /**
     * whether the data identify F_D (deviceTimeIdentified): false when most of it rests on
     * where the model puts I/Os that were complete at wake-up, so E[D] and every figure that
     * extrapolates to another sleep can be off either way
     */
    identified: boolean;
  };
  wakeOverhead: DistSummary & { source: 'measured' | 'default' };
  /** c_sw used, and whether it was measured ((iopoll − offcpu + wake_lat − spin) per sleep) or the default */
  switchCostNs: number;
  switchCostSource: 'measured' | 'default';
  latencyBudget: number;
  current: CurrentState;
  /** the what-if table: one row per policy that could be evaluated (blkmq_fixed needs io_poll_delay > 0) */
  policies: PolicyOutcome[];
  best: PolicyOutcome;
  oracle: PolicyOutcome;
  /** η = (cpu(0) − cpu(current)) / (cpu(0) − cpu(best)); undefined when the best static sleep is 0 */
  efficiency?: number;
  measured?: Measured;
  /** (measured CPU per I/O − cpu(best)) × IOPS / 1e9, in cores (raw; may be negative when the model is off); 0 where the device polls classically and the best static sleep is 0 (wastedPerIoNs) */
  wastedCpuCores?: number;
  /** modelled cpu(current) / measured CPU per I/O − 1 */
  modelCpuErrorRatio?: number;
  /** modelled against measured oversleep of the current state; absent when either is unknown */
  oversleepCheck?: OversleepCheck;
  /** with an unresolved share: what the advice can still promise whatever those device times are */
  bound?: UnresolvedBound;
  /**
   * where the user sets the sleep as io_poll_delay (whole µs, 4.10–5.18): the setting that gives
   * the best static sleep (best.sleepNs = setting less the measured timer lag); absent where the
   * best is classic polling
   */
  optimalSetting?: number;
  /**
   * present when the device's pollers kept more than one polled I/O in flight (mean ≥ 1.5 at the
   * start of a waiting call): the table, best, oracle and current state are then the poller
   * model's at that depth (src/model/depth.ts), not the QD1 forms
   */
  depth?: DepthState;
  /** mean polled I/Os in flight at the start of a waiting call, when the loader counts it */
  inFlight?: number;
  /** the block layer's terms the model measured for its rules (absent when neither the mean nor the timer lag was) */
  kernel?: KernelTerms;
  /** the poller's time around its polling (depth.ts pollerCosts), when the loader counts it (fentry path) */
  pollerCosts?: { callNs: number; submitNs: number; leadNs: number; loopReapNs: number; lookNs: number; lookPerIoNs: number; emptyLookNs: number; wakeToLookNs: number };
  /**
   * what the recommendation rests on: `model` (the best static sleep; nothing unresolved),
   * `bounded` (a sleep within the budget whatever the unresolved device times, the model's best
   * not provably so), `withheld` (no sleep can be shown to save CPU within the budget)
   */
  advice: 'model' | 'bounded' | 'withheld';
  /** one line for humans */
  recommendation: string;
  /**
   * present when an io_uring ring that polls this device also polls others (BPF: shared_polls,
   * poll calls in passes over two devices' requests, per polled I/O): one poller serves them all
   * and its loops are split between the devices by BPF. With `ring` the ring was modelled whole
   * (src/model/ring.ts: one poller over its devices, one sleep) and this device's figures are its
   * part of the ring's; without it (the ring's devices could not be grouped or analysed) every
   * modelled figure is withheld and the advice is `withheld`.
   */
  sharedRing?: { pollsPerIo: number; ring?: RingState };
}

/**
 * What the block layer's sleeps hold beyond the model's own terms (analyse.ts kernelTermsOf): the
 * `blkmq_half_mean`, `three_quarter_mean` and `blkmq_fixed` rows sleep by them.
 */
export interface KernelTerms {
  /** the kernel's completion-time mean (poll_stat's: driver issue → completion found), whose half its ½-mean rule sleeps */
  meanNs?: number;
  /** `sleep_req`: twice the requested sleeps of a window the kernel slept by that rule; `poll_stat`: debugfs */
  meanSource?: 'sleep_req' | 'poll_stat';
  /** δ: meanNs less the model's latency at the window's measured state; 0 without meanNs */
  offsetNs: number;
  /**
   * io_poll_delay less the mean requested sleep of a window that slept by it: the kernel reads its
   * clock for the timer before the sleep start BPF sees, so a sleep is this much shorter from there;
   * 0 where not measured
   */
  timerLagNs: number;
}

/** The ring a device shares its poller with, modelled whole (ModelTarget.sharedRing.ring). */
export interface RingState {
  /** the ring's devices: dev_t ("major:minor") and label, in the same order */
  devs: string[];
  devices: string[];
  polledIos: number;
  /** per I/O over the ring: measured poll-loop CPU ((Σ spin + Σ sleeps · c_sw) / Σ polled I/Os), and modelled over the measured mix of its devices' I/Os */
  measuredCpuPerIoNs: number;
  currentCpuNs: number;
  classicCpuNs: number;
  bestCpuNs: number;
  /** the ring's one best static sleep */
  bestSleepNs: number;
  /** currentCpuNs / measuredCpuPerIoNs − 1: the ring's self-check, which every device of it shares */
  modelCpuErrorRatio: number;
  /** this device's part of the ring's poll-loop CPU (the model's attribution; the devices' parts sum to 1) */
  cpuShare: number;
}

/** How the model was evaluated at depth (ModelTarget.depth). */
export interface DepthState {
  /** mean polled I/Os in flight at the start of a waiting call (BPF: inflight_sum / waits) */
  meanInFlight: number;
  /** the poller model's era (src/model/poller/types.ts PollerEra) */
  era: string;
  /** `closed_form` (QD1 forms) or `simulation` (the seeded simulation) */
  method: 'closed_form' | 'simulation';
  /** the depths simulated and the share of I/Os each stands for */
  points: { depth: number; ioShare: number }[];
  /** the current state's modelled sleeps per I/O and completions per reaping pass */
  sleepsPerIo: number;
  reapedPerPass: number;
  /** standard error of the current state's modelled CPU per I/O (the simulation's own noise) */
  cpuStdErrNs: number;
  /** F_D at depth (depth.ts fitDeviceTime: deconvolved from rq_lat, then shifted to its mean): the shift, and the mean device time after it */
  deviceShiftNs: number;
  meanDeviceNs: number;
  /**
   * classic polling (nothing slept): how much the simulated mean rq_lat moves per ns of E[D] when
   * every fitted device time is halved (depth.ts deviceTimesAtDepth); near 0 where completions wait
   * for the poller, so that rq_lat does not place D (deviceTimeIdentified)
   */
  rqLatSlope?: number;
  /** under the kernel's own rule (io_uring): where its running minimum ends */
  kernelEstimateNs?: number;
}

export interface OversleepCheck {
  /** P(D ≤ S + O) under the current state, per slept I/O */
  modelled: number;
  /** overslept / (overslept + spun) */
  measured: number;
  /** |modelled − measured| ≤ OVERSLEEP_MARGIN */
  consistent: boolean;
}

/**
 * The worst case for the advice: the unresolved share at D = 0 instead of at its found times (the
 * least the data allow), which maximises late(s) and minimises the CPU a sleep saves.
 */
export interface UnresolvedBound {
  /** the largest sleep (≤ the best static sleep) within the budget of the worst case's E[D]; 0 when none */
  sleepNs: number;
  /** modelled cpu at that sleep (the model's placement) */
  cpuNs: number;
  /** worst-case late at that sleep */
  lateNs: number;
  /** worst-case CPU saved against classic polling at that sleep (≤ 0: none) */
  savingNs: number;
  /** worst-case late at the model's best static sleep */
  bestLateNs: number;
  /** the io_poll_delay (µs) that gives sleepNs, where the user sets the sleep (ModelTarget.optimalSetting) */
  setting?: number;
}

/** What the model stage adds to each snapshot. */
export interface ModelResult {
  /** window length actually covered by the deltas (≤ the configured window) */
  windowSeconds: number;
  configuredWindowSeconds: number;
  latencyBudget: number;
  targets: ModelTarget[];
  /** monotonic wasted CPU-seconds per device present in the BPF data (integrated over snapshots) */
  wastedCpuSecondsTotal: { device: string; seconds: number }[];
}
