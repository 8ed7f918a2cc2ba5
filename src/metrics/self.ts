// The exporter's own health: build info and per-collector success and duration.
import type { Snapshot } from '../snapshot/types.js';
import { VERSION } from '../version.js';
import { family, type MetricFamily } from './family.js';

export function selfFamilies(s: Snapshot): MetricFamily[] {
  return [
    family('build_info', 'gauge', 'Version of hybridpoll-exporter and the Node.js it runs on. Always 1.',
      [VERSION], (v) => ({ labels: { version: v, nodejs_version: process.versions.node }, value: 1 })),
    family('scrape_collector_success', 'gauge',
      'Whether a collector succeeded in this scrape (1) or hit an error (0, reason in the log and on the / page).',
      s.collectors, (c) => ({ labels: { collector: c.name }, value: c.success ? 1 : 0 })),
    family('scrape_collector_duration_seconds', 'gauge', 'Time a collector took in this scrape.',
      s.collectors, (c) => ({ labels: { collector: c.name }, value: c.durationSeconds })),
  ];
}
