// HTTP edge: /metrics, /healthz and /. Snapshots come from a SnapshotSource: the refresh loop's
// latest (serve with --collector.interval > 0) or one per scrape (SnapshotEngine, single-flight).
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { BpfExposition } from '../metrics/bpf.js';
import { CONTENT_TYPE, negotiate } from '../metrics/render.js';
import type { SnapshotSource } from '../snapshot/refresher.js';
import { ScrapeBodies, type RefreshStatus } from './bodies.js';
import { indexPage } from './indexPage.js';

export interface AppOptions {
  source: SnapshotSource;
  log: Logger;
  /** process_* and nodejs_* metrics; omitted in tests that compare output */
  processMetrics?: Registry;
  metricsPath?: string;
  /** --bpf.buckets: which histogram boundaries to expose */
  bpf?: BpfExposition;
  /** the bodies, when the refresh loop renders them ahead of the scrapes (serve) */
  bodies?: ScrapeBodies;
  refresh?: RefreshStatus;
}

export function createApp(o: AppOptions): Express {
  const app = express();
  const metricsPath = o.metricsPath ?? '/metrics';
  const bodies = o.bodies ?? new ScrapeBodies({
    ...(o.bpf ? { bpf: o.bpf } : {}),
    ...(o.processMetrics ? { processMetrics: o.processMetrics } : {}),
    ...(o.refresh ? { refresh: o.refresh } : {}),
  });
  app.disable('x-powered-by');
  // No ETag: a scrape body is never revalidated, and express would hash every 2.5 MB body.
  app.set('etag', false);

  app.get(metricsPath, async (req, res) => {
    try {
      const format = negotiate(req.get('accept'));
      const encoding = req.acceptsEncodings('gzip', 'identity') === 'gzip' ? 'gzip' : 'identity';
      const snap = await o.source.snapshot();
      // The cached bytes (compressed once per collection) go out as they are: no copy, no
      // re-encoding per scrape.
      const [cached, live] = await bodies.body(snap, format, encoding);
      res.status(200).type(CONTENT_TYPE[format]).set('Content-Length', String(cached.length + live.length)).vary('Accept-Encoding');
      if (encoding === 'gzip') res.set('Content-Encoding', 'gzip');
      res.write(cached);
      res.end(live);
    } catch (e) {
      o.log.error('scrape failed', { err: e instanceof Error ? e.stack ?? e.message : String(e) });
      res.status(500).type('text/plain').send('scrape failed; see the exporter log\n');
    }
  });

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  app.get('/', async (_req, res) => {
    const snap = o.source.latest() ?? (await o.source.snapshot().catch(() => undefined));
    res.type('text/html').send(indexPage(snap, metricsPath, o.refresh?.intervalSeconds));
  });

  return app;
}
