// The bundle's knobs, mixin style: every rule and dashboard query is built from these, so users
// retarget the bundle (job name, node label, thresholds) without editing PromQL.

export interface Thresholds {
  /** Wasted CPU per node, in cores, above which HybridPollWastedCPUHigh fires. */
  wastedCpuCores: number;
  wastedCpuFor: string;
  /** Latency added by oversleep as a fraction of the mean I/O latency. */
  oversleepLatencyRatio: number;
  oversleepFor: string;
  /** Efficiency η below which HybridPollEfficiencyLow fires ... */
  efficiencyMin: number;
  /** ... while the device completes more polled I/Os per second than this. */
  efficiencyBusyIops: number;
  efficiencyFor: string;
  noPollQueuesFor: string;
  hybridIneffectiveFor: string;
  bpfDownFor: string;
  loaderRestartsFor: string;
  /** How long the BPF programs' CPU may exceed the node's --bpf.cpu-budget. */
  bpfCpuFor: string;
  exporterDownFor: string;
  /** How long the served snapshot may stay older than three collection intervals + 1 minute. */
  snapshotStaleFor: string;
}

export interface BundleConfig {
  /** Label matchers that select the exporter's series, inserted into every query. */
  selector: string;
  /** Label naming the node in a series: `instance` (PodMonitor relabels it to the node name) or `node`. */
  nodeLabel: string;
  /** Label naming the cluster; kept by every aggregation, a dashboard variable only when multiCluster. */
  clusterLabel: string;
  multiCluster: boolean;
  /** Range of the recording rules' rate() windows; also part of the rule names. */
  rateWindow: string;
  /** BPF programs whose absence is a designed degradation, not a fault: the fentry poll path
   *  (all four or none) falls back to tracepoints where the kernel refuses trampolines. */
  bpfOptionalPrograms: string;
  /** `%s` is replaced by the lower-cased alert name: the GitHub anchor of its runbook.md heading. */
  runbookUrlPattern: string;
  dashboardTitlePrefix: string;
  dashboardUidPrefix: string;
  thresholds: Thresholds;
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  wastedCpuCores: 0.5,
  wastedCpuFor: '30m',
  oversleepLatencyRatio: 0.1,
  oversleepFor: '15m',
  efficiencyMin: 0.5,
  efficiencyBusyIops: 1000,
  efficiencyFor: '1h',
  noPollQueuesFor: '10m',
  hybridIneffectiveFor: '15m',
  bpfDownFor: '10m',
  loaderRestartsFor: '15m',
  bpfCpuFor: '15m',
  exporterDownFor: '5m',
  snapshotStaleFor: '5m',
};

export const DEFAULT_CONFIG: BundleConfig = {
  selector: 'job="hybridpoll-exporter"',
  nodeLabel: 'instance',
  clusterLabel: 'cluster',
  multiCluster: false,
  rateWindow: '5m',
  bpfOptionalPrograms: 'iopoll_enter|iopoll_exit|classic_poll_enter|classic_poll_exit',
  // Relative to the repository root; point it at your published copy with --runbook-url-pattern.
  runbookUrlPattern: 'docs/runbook.md#%s',
  dashboardTitlePrefix: 'HybridPoll / ',
  dashboardUidPrefix: 'hybridpoll-',
  thresholds: DEFAULT_THRESHOLDS,
};

/** Labels that identify one node's series after aggregation (the cluster label is harmless when absent). */
export function nodeGrouping(c: BundleConfig): string {
  return [c.clusterLabel, 'job', c.nodeLabel].join(', ');
}
