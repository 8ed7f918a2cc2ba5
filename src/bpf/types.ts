// What the BPF collector hands to the rest of the exporter, after the loader's JSON lines are parsed.
// Plain data: the model and the recording format use these types too.

/** Histogram kinds kept per device by the BPF program (see src/bpf/README.md). */
export const HIST_KINDS = [
  'rq_lat', // request start (allocation, as iostat) → complete (for polled I/O: → reaped)
  'iopoll', // wall time of one poll loop: io_do_iopoll() passes from the first to the one that finds completions (fentry path); tracepoint path: on-CPU time of the busy window since the previous polled completion plus its sleeps' off-CPU time
  'spin', // on-CPU time of a poll loop (fentry) or of the busy window since the previous polled completion (tracepoint) after its last wake-up, all of it without a sleep; aux0/aux1: wake-up → completion ns and loops (I/Os) that slept
  'sleep_req', // hybrid sleep the kernel requested
  'offcpu', // real off-CPU time of that sleep
  'wake_ovh', // timer expiry → on CPU again: (switch-in − sleep start) − sleep_req, ≥ 0
  'wake_lat', // sched_wakeup → on CPU
  'dev_spun', // issue → found, I/O still pending after the sleep (exact device time, censoring-free)
  'found_slept', // issue → found, I/O already complete at wake-up (left-censored: D ≤ x)
  'oversleep_ub', // upper bound of the oversleep per overslept I/O
] as const;
export type HistKind = (typeof HIST_KINDS)[number];

/**
 * A cumulative histogram on the log-linear bucket grid (src/model/buckets.ts).
 * `buckets` is sparse and flat: index, count, index, count, …, non-cumulative, summed over CPUs.
 * Monotonic over time. Flat, not [index, count] pairs: a snapshot at 64 devices holds ~25 k
 * buckets, and a small array per bucket, kept by the model's window for a few collections, was
 * most of what V8's garbage collector copied and marked (bench/README.md, "Flat histogram
 * buckets").
 */
export interface BucketHist {
  buckets: number[];
  count: number;
  sumNs: number;
  /** kind-specific extra sums, see src/bpf/README.md (rq_lat: bytes, errors; sleep_req: Σ hybrid_poll_time/2, samples; spin: ns, loops after a sleep) */
  aux0: number;
  aux1: number;
  /**
   * dev_spun and found_slept, from a device's block in the loader's maps: each bucket's ns
   * (index, ns, … flat, the buckets' indices) — where in its bucket the device or found time
   * lies. Absent where not kept.
   */
  bucketSumsNs?: number[];
}

export interface BpfDeviceSeries {
  /** kernel dev_t as "major:minor" */
  dev: string;
  /** block device name resolved from sysfs, when known */
  device?: string;
  hists: Partial<Record<HistKind, BucketHist>>;
  /**
   * fentry: a device an io_uring ring polled in the same passes as this one (the loader's last
   * seen): the links that group a ring's devices for the model (src/model/ring.ts)
   */
  sharedWith?: string;
  /**
   * tracepoint path: the shortest switch-in → found of a slept I/O on the device since the loader
   * started (its calibration minimum): the woken poller's look where nothing delays it (the
   * model's λ there, src/model/README.md)
   */
  lookMinNs?: number;
}

/** Per io_uring ring state (6.13+, fentry path only). */
export interface BpfRing {
  /** stable anonymised id of the ring (hash of the ctx pointer) */
  ring: string;
  pid: number;
  comm: string;
  /** io_uring setup flags */
  flags: number;
  hybrid: boolean;
  /** ctx->hybrid_poll_time, ns; null while LLONG_MAX (no estimate yet) */
  hybridPollTimeNs: number | null;
  sleeps: number;
  iopollPasses: number;
  /** the ring's poll loops over every device it polls (absent from older loaders and recordings) */
  loops?: RingLoops;
}

/**
 * What the poller spent in one ring's poll loops (fentry path), counters: the ring's on-CPU time
 * is wall − off-CPU (+ the wake latency on io_uring hybrid kernels, which charge it; see
 * src/model/analyse.ts switchCost).
 */
export interface RingLoops {
  /** completions the ring's passes reaped */
  polledIos: number;
  /** poll loops ended */
  count: number;
  /** their wall time, first pass entry → the exit of the pass that found completions */
  wallNs: number;
  /** their on-CPU time after the last wake-up */
  spinNs: number;
  /** off-CPU time of their sleeps */
  offcpuNs: number;
  /** wake-up → switch-in of those sleeps */
  wakeLatencyNs: number;
}

export const RING_LOOP_FIELDS = ['polledIos', 'count', 'wallNs', 'spinNs', 'offcpuNs', 'wakeLatencyNs'] as const satisfies readonly (keyof RingLoops)[];

/** A RingLoops whose every field is f of its name (sums, restart adjustment, replay shifts). */
export const mapRingLoops = (f: (k: keyof RingLoops) => number): RingLoops =>
  Object.fromEntries(RING_LOOP_FIELDS.map((k) => [k, f(k)])) as unknown as RingLoops;

/** The poller's CPU in a ring's loops (or a difference of two readings), ns: wall − off-CPU + the wake latency the 6.13+ scheduler charges. */
export const ringPollCpuNs = (l: Pick<RingLoops, 'wallNs' | 'offcpuNs' | 'wakeLatencyNs'>): number =>
  Math.max(0, l.wallNs - l.offcpuNs + Math.min(l.offcpuNs, l.wakeLatencyNs));

export type PollPath = 'fentry' | 'tracepoint' | 'none';

export interface BpfProgramStatus {
  attached: boolean;
  /** why not attached, e.g. "load failed: Operation not permitted" */
  reason?: string;
  /** from kernel.bpf_stats_enabled=1; absent when the sysctl is off */
  runTimeNs?: number;
  runCount?: number;
}

export interface BpfSnapshot {
  /** CLOCK_MONOTONIC of the loader when the maps were read, ns */
  takenAtNs: number;
  pollPath: PollPath;
  /**
   * 1 in sampleRate completions was timed when the loader read its maps (--bpf.sample). rq_lat's
   * buckets and sum are already scaled: each timed completion counts sampleRate times in the
   * kernel, so the histogram estimates every completion even when the rate changed in between;
   * `ios` (per device and in total) is the exact count. Absent in recordings made before sampling.
   */
  sampleRate?: number;
  /** kernel.bpf_stats_enabled was 1: the programs' runTimeNs/runCount are measured */
  bpfStats?: boolean;
  /**
   * CPU of our BPF programs since the exporter started (src/bpf/cost.ts): measured (bpf_stats) or
   * estimated from the completions; budget: --bpf.cpu-budget as a fraction of one CPU.
   */
  cpu?: { seconds: number; source: 'bpf_stats' | 'estimate'; budget: number };
  programs: Record<string, BpfProgramStatus>;
  devices: BpfDeviceSeries[];
  rings: BpfRing[];
  /** live rings counted under ring="other" (past --bpf.max-rings); absent while there is no such aggregate */
  ringsOther?: number;
  /**
   * Cumulative counters, kept monotonic across loader restarts by the Node side:
   * ios (completions, exact whatever the sampling), polled_ios, overslept, spun, sleeps, sleep_ns, spin_ns (totals over devices), start_map_full,
   * issue_missed, task_map_full, hist_map_full, recursion_misses (drops), and the loader's
   * diagnostics (src/bpf/README.md).
   */
  counters: Record<string, number>;
  /** Per-device cumulative counters, keyed by "major:minor": ios, polled_ios, sleeps, sleep_ns, spin_ns,
   * overslept, spun, classified_exact, classified_calibrated, sleeps_unmatched, and (loaders that
   * count them; absent otherwise) waits and inflight_sum: waiting calls at whose start the poller's
   * depth was sampled and Σ of its polled I/Os in flight then (src/bpf/README.md). */
  deviceCounters: Record<string, Record<string, number>>;
}

/** State of the BPF collector as a whole, for self-metrics and the / page. */
export interface BpfStatus {
  mode: 'auto' | 'on' | 'off';
  /** running: loader up; disabled: mode off or auto without privileges; failed: tried and failed */
  state: 'running' | 'disabled' | 'failed' | 'starting';
  /** why, as one of a fixed set: the metric label (free text would make a new series per message) */
  cause: BpfCause;
  /** why, in words (log line and the / page) */
  reason: string;
  loaderRestarts: number;
}

export const BPF_CAUSES = ['ok', 'loading', 'restarting', 'loader_down', 'disabled_by_flag', 'not_privileged', 'no_btf', 'no_loader', 'loader_unusable'] as const;
export type BpfCause = (typeof BPF_CAUSES)[number];
