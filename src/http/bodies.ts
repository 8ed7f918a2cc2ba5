// Scrape bodies: rendered once per snapshot and format (Prometheus text by the refresh loop,
// OpenMetrics on its first request), kept as bytes, and served with a few live lines appended at
// serve time: the age of the snapshot, and the refresh loop's own health.
import type { Registry } from 'prom-client';
import type { BpfExposition } from '../metrics/bpf.js';
import { serialize } from '../metrics/exposition.js';
import { family, type MetricFamily } from '../metrics/family.js';
import { familyGroups } from '../metrics/index.js';
import { renderYielding, type Format } from '../metrics/render.js';
import type { Snapshot } from '../snapshot/types.js';

const EOF = '# EOF\n';

/** The refresh loop as the scrape sees it (absent when every scrape takes its own snapshot). */
export interface RefreshStatus {
  intervalSeconds: number;
  skippedTicks(): number;
}

export interface BodyOptions {
  bpf?: BpfExposition;
  /** process_* and nodejs_* metrics, as of the rendering (the refresh), not of the scrape */
  processMetrics?: Registry;
  refresh?: RefreshStatus;
  /** wall clock, ms; injectable for tests */
  now?: () => number;
}

export class ScrapeBodies {
  // Scrapes that share a snapshot share its rendering: N concurrent scrapers must not cost N
  // renders (test/hardening/load.test.ts). Weak: gone with the snapshot.
  private readonly rendered = new WeakMap<Snapshot, Map<Format, Promise<Buffer>>>();
  private readonly now: () => number;

  constructor(private readonly o: BodyOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * The cached part of a scrape body: every family of the snapshot, without OpenMetrics' final
   * `# EOF` (the live lines go before it).
   */
  cached(snap: Snapshot, format: Format): Promise<Buffer> {
    let byFormat = this.rendered.get(snap);
    if (!byFormat) this.rendered.set(snap, (byFormat = new Map()));
    let body = byFormat.get(format);
    if (!body) {
      body = renderYielding(familyGroups(snap, this.o.bpf ? { bpf: this.o.bpf } : {}), format, this.o.processMetrics)
        .then((text) => Buffer.from(format === 'openmetrics' && text.endsWith(EOF) ? text.slice(0, -EOF.length) : text));
      // A failed rendering (a bug: a family exposed twice) is not cached: the next scrape retries.
      body.catch(() => byFormat.delete(format));
      byFormat.set(format, body);
    }
    return body;
  }

  /** The lines computed at serve time, in the format's syntax, ending the body. */
  live(snap: Snapshot, format: Format): string {
    const families: MetricFamily[] = [
      family('snapshot_age_seconds', 'gauge',
        'Age of the snapshot this scrape serves: seconds since its collection began. Collection runs every --collector.interval, not per scrape (0: per scrape).',
        [snap], (s) => ({ labels: {}, value: Math.max(0, (this.now() - s.takenAtMs) / 1000) })),
    ];
    const r = this.o.refresh;
    if (r) {
      families.push(
        family('snapshot_refresh_interval_seconds', 'gauge', 'Time between two collections (--collector.interval).',
          [r], (x) => ({ labels: {}, value: x.intervalSeconds })),
        family('snapshot_refresh_skipped_total', 'counter',
          'Collection ticks skipped because the previous collection was still running (it outlived --collector.interval).',
          [r], (x) => ({ labels: {}, value: x.skippedTicks() })),
      );
    }
    const text = serialize(families, format);
    // Prometheus text: a blank line separates these families from the cached ones.
    return format === 'openmetrics' ? text : `\n${text}`;
  }
}
