// HTTP edge: /metrics, /healthz and /. Snapshots come from a SnapshotSource: the refresh loop's
// latest (serve with --collector.interval > 0) or one per scrape (SnapshotEngine, single-flight).
// A plain node:http handler: three GET routes did not need Express, which cost the process
// ~10 MiB of RSS and module loading at start (bench/README.md, "The cost table"). It answers as
// Express did: paths case-insensitive with an optional trailing slash, HEAD like GET without a
// body, anything else 404 with Express's page.
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
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

/** The request handler, and (tests, replay) a listen() that serves it on a new server. */
export type App = RequestListener & { listen: (port: number, host?: string) => Server };

/** The route key of a path: lower case, query and one trailing slash dropped. */
export function routeOf(url: string | undefined): string {
  const path = (url ?? '/').split('?', 1)[0]!.toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

const qualityOf = (header: string, coding: string): number | undefined => {
  let q: number | undefined;
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name !== coding) continue;
    const p = params.map((x) => x.trim()).find((x) => x.startsWith('q='));
    q = p ? Number(p.slice(2)) || 0 : 1;
  }
  return q;
};

/**
 * gzip when the client accepts it at least as much as identity (RFC 9110 12.5.3; as Express's
 * acceptsEncodings('gzip', 'identity') chose): no header, or one that does not name gzip or *, is
 * identity.
 */
export function wantsGzip(header: string | undefined): boolean {
  if (!header || !header.trim()) return false;
  const star = qualityOf(header, '*');
  const gzip = qualityOf(header, 'gzip') ?? star ?? 0;
  // identity is acceptable unless refused; named or not, it ties at the lowest quality named
  const identity = qualityOf(header, 'identity') ?? star ?? 0;
  return gzip > 0 && gzip >= identity;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

function send(req: IncomingMessage, res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): void {
  const buf = typeof body === 'string' ? Buffer.from(body) : body;
  res.writeHead(status, { ...headers, 'Content-Type': type, 'Content-Length': String(buf.length) });
  res.end(req.method === 'HEAD' ? undefined : buf);
}

/** Express's 404 page (finalhandler), so a client sees the same answer as before. */
function notFound(req: IncomingMessage, res: ServerResponse): void {
  const body = `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error</title>\n</head>\n<body>\n<pre>Cannot ${escapeHtml(req.method ?? 'GET')} ${escapeHtml(req.url ?? '/')}</pre>\n</body>\n</html>\n`;
  send(req, res, 404, 'text/html; charset=utf-8', body, { 'Content-Security-Policy': "default-src 'none'", 'X-Content-Type-Options': 'nosniff' });
}

export function createApp(o: AppOptions): App {
  const metricsPath = routeOf(o.metricsPath ?? '/metrics');
  const bodies = o.bodies ?? new ScrapeBodies({
    ...(o.bpf ? { bpf: o.bpf } : {}),
    ...(o.processMetrics ? { processMetrics: o.processMetrics } : {}),
    ...(o.refresh ? { refresh: o.refresh } : {}),
  });

  const metrics = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const format = negotiate(req.headers.accept);
      const gzip = wantsGzip(req.headers['accept-encoding']);
      const snap = await o.source.snapshot();
      // The cached bytes (compressed once per collection) go out as they are: no copy, no
      // re-encoding per scrape.
      const [cached, live] = await bodies.body(snap, format, gzip ? 'gzip' : 'identity');
      res.writeHead(200, {
        'Content-Type': CONTENT_TYPE[format],
        'Content-Length': String(cached.length + live.length),
        Vary: 'Accept-Encoding',
        ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
      });
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      res.write(cached);
      res.end(live);
    } catch (e) {
      o.log.error('scrape failed', { err: e instanceof Error ? e.stack ?? e.message : String(e) });
      if (!res.headersSent) send(req, res, 500, 'text/plain; charset=utf-8', 'scrape failed; see the exporter log\n');
      else res.destroy();
    }
  };

  const index = async (req: IncomingMessage, res: ServerResponse) => {
    const snap = o.source.latest() ?? (await o.source.snapshot().catch(() => undefined));
    send(req, res, 200, 'text/html; charset=utf-8', indexPage(snap, o.metricsPath ?? '/metrics', o.refresh?.intervalSeconds));
  };

  const handler: RequestListener = (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return notFound(req, res);
    const route = routeOf(req.url);
    if (route === metricsPath) return void metrics(req, res);
    if (route === '/healthz') return send(req, res, 200, 'text/plain; charset=utf-8', 'ok\n');
    if (route === '/') {
      return void index(req, res).catch((e: unknown) => {
        o.log.error('index page failed', { err: e instanceof Error ? e.message : String(e) });
        if (!res.headersSent) send(req, res, 500, 'text/plain; charset=utf-8', 'index page failed\n');
      });
    }
    return notFound(req, res);
  };
  return Object.assign(handler, { listen: (port: number, host?: string) => createServer(handler).listen(port, host) });
}
