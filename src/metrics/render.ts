// Renders a scrape: our metric families and prom-client's process metrics, through the direct
// serializer (exposition.ts). prom-client still collects process_* and nodejs_* and names the
// content types; three of its gauges are left out so the body passes `promtool check metrics`.
import { Registry, collectDefaultMetrics } from 'prom-client';
import { runStepsYielding } from '../steps.js';
import { fromPromClient, serialize, serializeSteps, type ExposedFamily, type Format } from './exposition.js';
import type { MetricFamily } from './family.js';

export type { Format } from './exposition.js';

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
 * prom-client's three gauges named `_total`, which the exposition formats reserve for counters
 * (promtool: `non-counter metrics should not have "_total" suffix`). Each is the sum of the
 * labelled gauge of the same name without `_total` (`nodejs_active_handles{type}`, …), so they are
 * left out rather than renamed (docs/metrics.md).
 */
export const DROPPED_PROCESS_METRICS: ReadonlySet<string> = new Set([
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
]);

/** The process registry's families as data, without the three above. */
export async function processFamilies(extra: Registry | undefined): Promise<ExposedFamily[]> {
  if (!extra) return [];
  return (await extra.getMetricsAsJSON()).filter((m) => !DROPPED_PROCESS_METRICS.has(m.name)).map(fromPromClient);
}

export async function render(families: MetricFamily[], format: Format, extra?: Registry): Promise<string> {
  // Process metrics are read as data and written by the same serializer, so the format is consistent.
  return serialize([...families, ...(await processFamilies(extra))], format);
}

/**
 * render() for the refresh loop, as UTF-8 bytes: family groups (metrics/index.ts familyGroups)
 * built as the serializer reaches them, with a turn of the event loop between families, so a
 * scrape that arrives during a refresh is served at once from the previous body. A group's samples
 * are written before the next group is built: they die young instead of being copied by every
 * scavenge of the rest of the rendering (bench/README.md, "Exposition without line strings").
 * The process metrics are read first, before the groups.
 */
export async function renderYielding(groups: readonly (() => MetricFamily[])[], format: Format, extra?: Registry, expectedBytes = 0): Promise<Buffer> {
  const processed = await processFamilies(extra);
  function* families(): Generator<ExposedFamily> {
    for (const g of groups) yield* g();
    yield* processed;
  }
  return runStepsYielding(serializeSteps(families(), format, expectedBytes));
}
