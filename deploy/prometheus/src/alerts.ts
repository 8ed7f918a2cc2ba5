// Alerting rules in mixin style: HybridPoll… names, severity critical|warning|info, a static
// summary ending in a period, a templated description. runbook_url is added afterwards by
// addRunbookLinks, in one place.
import type { BundleConfig } from './config.js';
import { identifiedOnly, recordNames, type AlertingRule, type RuleGroup } from './rules.js';

export function alertRules(c: BundleConfig): RuleGroup<AlertingRule> {
  const n = recordNames(c);
  const s = c.selector;
  const t = c.thresholds;
  const node = `{{ $labels.${c.nodeLabel} }}`;
  const dev = `${node}/{{ $labels.device }}`;
  return {
    name: 'hybridpoll.alerts',
    rules: [
      {
        alert: 'HybridPollWastedCPUHigh',
        expr: `${n.nodeWastedCores} > ${t.wastedCpuCores}`,
        for: t.wastedCpuFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Hybrid polling wastes CPU compared with the best static sleep.',
          description:
            `Polling on ${node} spends {{ printf "%.2f" $value }} cores more than the best static sleep would ` +
            `(threshold ${t.wastedCpuCores} cores for ${t.wastedCpuFor}).`,
        },
      },
      {
        alert: 'HybridPollOversleepAddsLatency',
        expr: `avg_over_time(hybridpoll_oversleep_added_latency_seconds{${s}}[${c.rateWindow}]) / ${n.deviceLatencyMean} > ${t.oversleepLatencyRatio}`,
        for: t.oversleepFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Hybrid polling sleeps past completions and adds latency.',
          description:
            `Oversleep on ${dev} adds {{ $value | humanizePercentage }} to the mean I/O latency ` +
            `(threshold ${pct(t.oversleepLatencyRatio)} for ${t.oversleepFor}).`,
        },
      },
      {
        alert: 'HybridPollEfficiencyLow',
        expr: `(${identifiedOnly(c, `hybridpoll_sleep_efficiency_ratio{${s}} < ${t.efficiencyMin}`)}) and ${n.devicePolledIops} > ${t.efficiencyBusyIops}`,
        for: t.efficiencyFor,
        labels: { severity: 'info' },
        annotations: {
          summary: 'The kernel\'s hybrid sleep is far from the best static sleep on a busy device.',
          description:
            `Sleep efficiency on ${dev} is {{ printf "%.2f" $value }} (below ${t.efficiencyMin} for ${t.efficiencyFor} ` +
            `while polling more than ${t.efficiencyBusyIops} I/Os per second).`,
        },
      },
      {
        alert: 'HybridPollNoPollQueues',
        expr: `${n.devicePolledIops} > 0 and ignoring (type) hybridpoll_device_hw_queues{${s}, type="poll"} == 0`,
        for: t.noPollQueuesFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'Polled I/O runs on a device that has no poll queues.',
          description:
            `${dev} completes {{ printf "%.0f" $value }} polled I/Os per second but has no poll hardware queue: ` +
            'the I/O completes by interrupt while the submitter spins.',
        },
      },
      {
        alert: 'HybridPollHybridIneffective',
        expr: `hybridpoll_device_hybrid_configured_ineffective{${s}} == 1`,
        for: t.hybridIneffectiveFor,
        labels: { severity: 'info' },
        annotations: {
          summary: 'Hybrid polling is configured but this kernel ignores it.',
          description:
            `${dev} has io_poll_delay >= 0, but on this kernel (5.16-6.3) io_uring polled I/O never sleeps: ` +
            'the setting has no effect.',
        },
      },
      {
        alert: 'HybridPollBPFCollectorDown',
        expr: `hybridpoll_scrape_collector_success{${s}, collector="bpf"} == 0`,
        for: t.bpfDownFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'The eBPF collector of hybridpoll-exporter fails.',
          description: `The bpf collector on ${node} has failed for ${t.bpfDownFor}: no sleep, spin or efficiency data from this node.`,
        },
      },
      {
        alert: 'HybridPollBPFProgramDetached',
        expr: `hybridpoll_bpf_program_attached{${s}, program!~"${c.bpfOptionalPrograms}"} == 0`,
        for: t.bpfDownFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'A BPF program of hybridpoll-exporter is not attached.',
          description: `BPF program {{ $labels.program }} on ${node} has been detached for ${t.bpfDownFor}: its timings are missing.`,
        },
      },
      {
        alert: 'HybridPollBPFLoaderRestarting',
        expr: `increase(hybridpoll_bpf_loader_restarts_total{${s}}[10m]) > 0`,
        for: t.loaderRestartsFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'The BPF loader of hybridpoll-exporter keeps restarting.',
          description: `The BPF loader on ${node} restarted {{ printf "%.0f" $value }} times in the last 10 minutes, continuously for ${t.loaderRestartsFor}.`,
        },
      },
      {
        // The budget is the node's own --bpf.cpu-budget (hybridpoll_bpf_cpu_budget_ratio): both
        // series carry the same labels, so they match one to one.
        alert: 'HybridPollBPFCPUOverBudget',
        expr: `rate(hybridpoll_bpf_cpu_seconds_total{${s}}[${c.rateWindow}]) > hybridpoll_bpf_cpu_budget_ratio{${s}}`,
        for: t.bpfCpuFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'The BPF programs of hybridpoll-exporter use more CPU than their budget.',
          description: `The in-kernel BPF programs on ${node} use {{ $value | humanizePercentage }} of a CPU, above the node's --bpf.cpu-budget, for ${t.bpfCpuFor}.`,
        },
      },
      {
        alert: 'HybridPollExporterDown',
        expr: `up{${s}} == 0`,
        for: t.exporterDownFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'hybridpoll-exporter cannot be scraped.',
          description: `Prometheus has failed to scrape hybridpoll-exporter on ${node} for ${t.exporterDownFor}.`,
        },
      },
      {
        // The exporter answers, but from a collection that stopped: scrapes serve the latest one.
        // Only with a refresh loop (the interval series is absent with --collector.interval=0).
        alert: 'HybridPollSnapshotStale',
        expr: `hybridpoll_snapshot_age_seconds{${s}} > 3 * hybridpoll_snapshot_refresh_interval_seconds{${s}} + 60`,
        for: t.snapshotStaleFor,
        labels: { severity: 'warning' },
        annotations: {
          summary: 'hybridpoll-exporter serves stale data.',
          description: `hybridpoll-exporter on ${node} has served a snapshot {{ humanizeDuration $value }} old for ${t.snapshotStaleFor}: its collection loop has stopped refreshing.`,
        },
      },
    ],
  };
}

function pct(r: number): string {
  return `${Math.round(r * 1000) / 10}%`;
}
