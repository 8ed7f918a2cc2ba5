// Serialises metric families with prom-client: Prometheus text 0.0.4 or OpenMetrics 1.0.
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { MetricFamily } from './family.js';

export type Format = 'prometheus' | 'openmetrics';

export const CONTENT_TYPE: Record<Format, string> = {
  prometheus: Registry.PROMETHEUS_CONTENT_TYPE,
  openmetrics: Registry.OPENMETRICS_CONTENT_TYPE,
};

/** OpenMetrics only when the client asks for it, as Prometheus does in its Accept header. */
export function negotiate(accept: string | undefined): Format {
  return accept && /application\/openmetrics-text/i.test(accept) ? 'openmetrics' : 'prometheus';
}

/** Process metrics (process_*, nodejs_*) live in their own registry so tests can leave them out. */
export function processRegistry(): Registry {
  const r = new Registry();
  collectDefaultMetrics({ register: r });
  return r;
}

/**
 * prom-client's Registry accepts any object with name/help/type/get(); its Histogram cannot be
 * loaded with pre-aggregated buckets, so every family goes through this adapter.
 */
function adapter(f: MetricFamily) {
  const metric = {
    // prom-client renames counters for OpenMetrics (drops `_total` from the family name) by
    // assigning metric.name before calling get(): read it back from here, not from f.
    name: f.name,
    help: f.help,
    type: f.type,
    aggregator: 'sum' as const,
    get: async () => ({
      name: metric.name,
      help: f.help,
      type: f.type,
      aggregator: 'sum' as const,
      values: f.samples.map((s) => ({
        labels: s.labels,
        value: s.value,
        ...(s.suffix ? { metricName: f.name + s.suffix } : {}),
      })),
    }),
  };
  return metric;
}

export async function render(families: MetricFamily[], format: Format, extra?: Registry): Promise<string> {
  const reg = new Registry();
  reg.setContentType(CONTENT_TYPE[format] as never);
  for (const f of families) {
    if (f.samples.length > 0) reg.registerMetric(adapter(f) as never);
  }
  // Process metrics are read as data and rendered by the same registry, so the format is consistent.
  for (const m of extra ? await extra.getMetricsAsJSON() : []) {
    if (m.values.length === 0) continue;
    // As in adapter(): hand back the (possibly renamed) registered name, or OpenMetrics gets `_total_total`.
    const metric = {
      name: m.name,
      help: m.help,
      type: String(m.type),
      aggregator: 'sum',
      get: async () => ({ ...m, name: metric.name }),
    };
    reg.registerMetric(metric as never);
  }
  return reg.metrics();
}
