// What the BPF programs cost the host, and the sampling rate that keeps it under a budget.
// Pure: the collector feeds it one snapshot per collection.

/**
 * ns per completed I/O of the block programs when the kernel does not measure them
 * (kernel.bpf_stats_enabled=0): the issue program plus a completion that is only counted, and
 * what timing a completion adds. From bench/bpf-cost's A/B runs at --sample 1 and 16 on the
 * development machine (bench/README.md, "The cost table"): 234 ns timed, 182 ns at 1 in 16, so
 * 55 ns for the timing and 180 for the rest; bpf_stats' own clock reads are in these figures, so
 * the estimate errs high. Only the block programs: the scheduler programs' runs are not counted
 * without bpf_stats.
 */
export const ESTIMATE_NS = { perIo: 180, perTimedIo: 55 } as const;

export type CpuSource = 'bpf_stats' | 'estimate';

export interface CpuMeter {
  /** CPU seconds of our BPF programs since the exporter started, monotonic */
  seconds: number;
  /** how the last step was measured */
  source: CpuSource;
  /** what the last step was taken from */
  last?: { runNs: number; ios: number; atNs: number };
  /** CPU share (of one CPU) over the last step, and the completion rate then */
  share?: number;
  iops?: number;
}

export interface CpuInput {
  /** kernel.bpf_stats_enabled was 1 for the snapshot */
  bpfStats: boolean;
  /** Σ run_time_ns over our programs (restart-adjusted, monotonic) */
  runNs: number;
  /** completions so far (exact, restart-adjusted) */
  ios: number;
  /** the sampling rate the step ran at */
  sample: number;
  /** loader clock of the snapshot, ns */
  atNs: number;
}

/**
 * One step of the meter. With bpf_stats the step is the programs' measured run time; without, the
 * completions times ESTIMATE_NS at the step's sampling rate. A counter that went down (the
 * sysctl toggled, a new loader) adds nothing for that step.
 */
export function stepCpu(prev: CpuMeter | undefined, x: CpuInput): CpuMeter {
  const source: CpuSource = x.bpfStats ? 'bpf_stats' : 'estimate';
  const last = { runNs: x.runNs, ios: x.ios, atNs: x.atNs };
  if (!prev?.last) return { seconds: 0, source, last };
  const dIos = Math.max(0, x.ios - prev.last.ios);
  const dRun = x.runNs - prev.last.runNs;
  const ns = x.bpfStats ? (dRun >= 0 && prev.source === 'bpf_stats' ? dRun : 0) : dIos * (ESTIMATE_NS.perIo + ESTIMATE_NS.perTimedIo / x.sample);
  const dt = (x.atNs - prev.last.atNs) / 1e9;
  return {
    seconds: prev.seconds + ns / 1e9,
    source,
    last,
    ...(dt > 0 ? { share: ns / 1e9 / dt, iops: dIos / dt } : {}),
  };
}

export const SAMPLE_MAX = 1024;

/**
 * --bpf.sample=auto: the next rate from the last step's CPU share against the budget (fractions
 * of one CPU). Rates are powers of two. Over the budget: the rate grows by the factor the share
 * exceeds 80 % of the budget (as if the cost fell as 1/N; it falls less, the fixed per-I/O part
 * stays, so the next steps grow it further until the share is under). Under 35 % of the budget:
 * halved, once per step (halving at most doubles the share: still under 70 %). In between nothing
 * changes: that dead band is the hysteresis that keeps the rate from flapping at a steady load.
 */
export function nextSampleRate(n: number, share: number | undefined, budget: number, max = SAMPLE_MAX): number {
  if (share === undefined || !Number.isFinite(share)) return n;
  if (share > budget) {
    const want = n * (share / (0.8 * budget));
    return Math.min(max, 2 ** Math.ceil(Math.log2(Math.max(want, n * 2))));
  }
  if (share < 0.35 * budget && n > 1) return n / 2;
  return n;
}
