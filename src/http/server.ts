// HTTP edge: /metrics, /healthz and /. All content comes from the snapshot engine.
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import type { BpfExposition } from '../metrics/bpf.js';
import { familiesOf } from '../metrics/index.js';
import { CONTENT_TYPE, negotiate, render, type Format } from '../metrics/render.js';
import type { SnapshotEngine } from '../snapshot/engine.js';
import type { Snapshot } from '../snapshot/types.js';
import { indexPage } from './indexPage.js';

export interface AppOptions {
  engine: SnapshotEngine;
  log: Logger;
  /** process_* and nodejs_* metrics; omitted in tests that compare output */
  processMetrics?: Registry;
  metricsPath?: string;
  /** --bpf.buckets: which histogram boundaries to expose */
  bpf?: BpfExposition;
}

export function createApp(o: AppOptions): Express {
  const app = express();
  const metricsPath = o.metricsPath ?? '/metrics';
  app.disable('x-powered-by');
  // No ETag: a scrape body is never revalidated, and express would hash every 2.5 MB body.
  app.set('etag', false);
  // Scrapes that share a snapshot (engine single-flight) share its rendering too: N concurrent
  // scrapers must not cost N renders (test/hardening/load.test.ts). Weak: gone with the snapshot.
  const rendered = new WeakMap<Snapshot, Map<Format, Promise<string>>>();
  const renderOnce = (snap: Snapshot, format: Format): Promise<string> => {
    const byFormat = rendered.get(snap) ?? new Map<Format, Promise<string>>();
    rendered.set(snap, byFormat);
    let body = byFormat.get(format);
    if (!body) {
      body = render(familiesOf(snap, o.bpf ? { bpf: o.bpf } : {}), format, o.processMetrics);
      byFormat.set(format, body);
    }
    return body;
  };

  app.get(metricsPath, async (req, res) => {
    try {
      const format = negotiate(req.get('accept'));
      const snap = await o.engine.snapshot();
      const body = await renderOnce(snap, format);
      res.type(CONTENT_TYPE[format]).send(body);
    } catch (e) {
      o.log.error('scrape failed', { err: e instanceof Error ? e.stack ?? e.message : String(e) });
      res.status(500).type('text/plain').send('scrape failed; see the exporter log\n');
    }
  });

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  app.get('/', async (_req, res) => {
    const snap = o.engine.latest() ?? (await o.engine.snapshot().catch(() => undefined));
    res.type('text/html').send(indexPage(snap, metricsPath));
  });

  return app;
}
