// Recording rules: the rates the dashboards and alerts share. Per-device rules keep every label of
// the source series (rate() drops only the name), so they join 1:1 with the exporter's gauges;
// node rules sum them by cluster, job and node.
import { nodeGrouping, type BundleConfig } from './config.js';

export interface RecordingRule {
  record: string;
  expr: string;
}

export interface AlertingRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RuleGroup<R> {
  name: string;
  rules: R[];
}

/** Names of the recorded series, with the rate window in them (level:metric:operations). */
export function recordNames(c: BundleConfig) {
  const w = c.rateWindow;
  return {
    deviceWastedCores: `device:hybridpoll_wasted_cpu_seconds:rate${w}`,
    nodeWastedCores: `node:hybridpoll_wasted_cpu_seconds:sum_rate${w}`,
    devicePolledIops: `device:hybridpoll_polled_ios:rate${w}`,
    nodePolledIops: `node:hybridpoll_polled_ios:sum_rate${w}`,
    deviceSpinCores: `device:hybridpoll_poll_spin_seconds:rate${w}`,
    nodeSpinCores: `node:hybridpoll_poll_spin_seconds:sum_rate${w}`,
    deviceOversleptRatio: `device:hybridpoll_poll_overslept_ios:ratio_rate${w}`,
    deviceLatencyMean: `device:hybridpoll_io_latency_seconds:mean${w}`,
    deviceLatencyP50: `device:hybridpoll_io_latency_seconds:p50_rate${w}`,
    deviceLatencyP99: `device:hybridpoll_io_latency_seconds:p99_rate${w}`,
  } as const;
}

/**
 * `expr` without the devices whose device time the exporter flags as not identified: their best
 * sleep, and so their efficiency and waste, is then a guess (the exporter still exports it, and
 * the device drill-down shows it beside the flag). `selector` selects the flag's series.
 */
export function identifiedOnly(c: BundleConfig, expr: string, selector = `{${c.selector}}`): string {
  return `${expr} unless on (${nodeGrouping(c)}, device) (hybridpoll_model_device_time_identified${selector} == 0)`;
}

export function recordingRules(c: BundleConfig): RuleGroup<RecordingRule> {
  const n = recordNames(c);
  const s = c.selector;
  const w = c.rateWindow;
  const byNode = nodeGrouping(c);
  return {
    name: 'hybridpoll.rules',
    rules: [
      // CPU-seconds per second = cores, where the device time is identified (the counter counts on).
      { record: n.deviceWastedCores, expr: identifiedOnly(c, `rate(hybridpoll_wasted_cpu_seconds_total{${s}}[${w}])`) },
      { record: n.nodeWastedCores, expr: `sum by (${byNode}) (${n.deviceWastedCores})` },
      { record: n.devicePolledIops, expr: `rate(hybridpoll_polled_ios_total{${s}}[${w}])` },
      { record: n.nodePolledIops, expr: `sum by (${byNode}) (${n.devicePolledIops})` },
      { record: n.deviceSpinCores, expr: `rate(hybridpoll_poll_spin_seconds_sum{${s}}[${w}])` },
      { record: n.nodeSpinCores, expr: `sum by (${byNode}) (${n.deviceSpinCores})` },
      // Of the I/Os that slept, the share already complete at wake-up (NaN while none slept).
      {
        record: n.deviceOversleptRatio,
        expr:
          `rate(hybridpoll_poll_overslept_ios_total{${s}}[${w}]) / ` +
          `(rate(hybridpoll_poll_overslept_ios_total{${s}}[${w}]) + rate(hybridpoll_poll_spun_ios_total{${s}}[${w}]))`,
      },
      {
        record: n.deviceLatencyMean,
        expr: `rate(hybridpoll_io_latency_seconds_sum{${s}}[${w}]) / rate(hybridpoll_io_latency_seconds_count{${s}}[${w}])`,
      },
      { record: n.deviceLatencyP50, expr: `histogram_quantile(0.5, rate(hybridpoll_io_latency_seconds_bucket{${s}}[${w}]))` },
      { record: n.deviceLatencyP99, expr: `histogram_quantile(0.99, rate(hybridpoll_io_latency_seconds_bucket{${s}}[${w}]))` },
    ],
  };
}
