// The HTTP(S) listener with --web.config.file applied: TLS whose certificates reload on change,
// bcrypt basic auth, extra headers and a rate limit, all re-checked on every connection/request
// like exporter-toolkit. Without a config file: plain HTTP, nothing else.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer as createHttpServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server } from 'node:net';
import { dirname } from 'node:path';
import { createSecureContext, type SecureContextOptions, type TLSSocket } from 'node:tls';
import type { Logger } from '../log.js';
import { filesOf, parseWebConfig, type Pem, type WebConfig } from './webConfig.js';

// bcryptjs only when basic auth is configured (loaded at the first check), as yaml in webConfig.ts
const requireLazy = createRequire(import.meta.url);
let bcryptjs: typeof import('bcryptjs') | undefined;
const bcrypt = { compare: (pass: string, hash: string) => (bcryptjs ??= requireLazy('bcryptjs') as typeof import('bcryptjs')).compare(pass, hash) };

/** Config, certificates and keys are small; anything bigger is a mistake, not something to buffer. */
const MAX_FILE_BYTES = 1024 * 1024;

/**
 * Stands in for a missing user's hash, so an unknown user costs the same bcrypt time as a known
 * one (no user enumeration by timing). A bcrypt hash of a random string, cost 10.
 */
const DECOY_HASH = '$2b$10$tOjivQkTp9FD49DRbZzC0.nYKVfQss0xfHptbZzd93Ld7dDnVYRie';
const AUTH_CACHE_MAX = 1024;

function readSmallFile(path: string): string {
  const fd = openSync(path, 'r');
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${path}: not a regular file`);
    const buf = Buffer.alloc(MAX_FILE_BYTES + 1);
    let n = 0;
    for (let r; (r = readSync(fd, buf, n, buf.length - n, null)) > 0; ) {
      n += r;
      if (n > MAX_FILE_BYTES) throw new Error(`${path}: larger than ${MAX_FILE_BYTES} bytes`);
    }
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}

/** A config with its files read and its TLS context built: everything a connection needs. */
export interface LoadedWebConfig {
  config: WebConfig;
  secure?: SecureContextOptions;
}

function readOrExplain(path: string, what: string): string {
  try {
    return readSmallFile(path);
  } catch (e) {
    throw new Error(`cannot read ${what} ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

const pemText = (p: Pem, what: string): string => ('inline' in p ? p.inline : readOrExplain(p.file, what));

/** Read and validate a web config file and every file it names. Throws with a one-line reason. */
export function loadWebConfig(path: string): LoadedWebConfig {
  const parsed = parseWebConfig(readOrExplain(path, 'web config'), dirname(path));
  if (!parsed.ok) throw new Error(`${path}: ${parsed.error}`);
  const config = parsed.value;
  const t = config.tls;
  if (!t) return { config };
  const secure: SecureContextOptions = {
    cert: pemText(t.cert, 'certificate'),
    key: pemText(t.key, 'key'),
    ...(t.clientCa ? { ca: pemText(t.clientCa, 'client CA') } : {}),
    minVersion: t.minVersion,
    maxVersion: t.maxVersion,
    honorCipherOrder: t.honorCipherOrder,
    ...(t.ciphers ? { ciphers: t.ciphers } : {}),
    ...(t.ecdhCurve ? { ecdhCurve: t.ecdhCurve } : {}),
  };
  try {
    createSecureContext(secure); // bad PEM, a key that does not match the certificate, unknown cipher…
  } catch (e) {
    throw new Error(`${path}: TLS: ${e instanceof Error ? e.message : String(e)}`);
  }
  return { config, secure };
}

/** Identity of a file's content as stat sees it; a replaced or rewritten file changes it. */
function stamp(path: string): string {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch (e) {
    return `error:${(e as NodeJS.ErrnoException).code ?? ''}`;
  }
}

/**
 * The current web config, re-read when the config file or a file it names changes. A change that
 * does not load leaves `current` undefined: requests then fail closed (500) until it is fixed,
 * as in exporter-toolkit, while TLS keeps the last good certificate so the 500 can be delivered.
 */
export class WebConfigSource {
  current: LoadedWebConfig | undefined;
  lastGoodSecure: SecureContextOptions | undefined;
  /** bumped on every successful reload, so the TLS context is rebuilt only when needed */
  generation = 0;
  /** the files of the last config that loaded: still watched while the current one is invalid */
  private watched: WebConfig;
  private stamps: string;

  constructor(
    readonly path: string,
    private readonly log: Logger,
  ) {
    // Startup: an invalid file is fatal (throws), so a typo never starts an open exporter.
    this.current = loadWebConfig(path);
    this.lastGoodSecure = this.current.secure;
    this.watched = this.current.config;
    this.stamps = this.stampAll();
  }

  private stampAll(): string {
    return [this.path, ...filesOf(this.watched)].map(stamp).join('|');
  }

  /** Cheap when nothing changed: a few stat calls. */
  refresh(): LoadedWebConfig | undefined {
    const now = this.stampAll();
    if (now === this.stamps) return this.current;
    this.stamps = now;
    try {
      const next = loadWebConfig(this.path);
      if (Boolean(next.secure) !== Boolean(this.lastGoodSecure)) {
        this.log.warn('web config: switching between HTTP and HTTPS needs a restart; keeping the current mode', { file: this.path });
      }
      this.current = next;
      this.watched = next.config;
      this.stamps = this.stampAll(); // the new config may name other files
      if (next.secure) this.lastGoodSecure = next.secure;
      this.generation += 1;
      this.log.info('web config reloaded', { file: this.path, tls: Boolean(next.secure), users: next.config.users.size });
    } catch (e) {
      this.current = undefined;
      this.log.error('web config reload failed; refusing requests until it is fixed', { err: e instanceof Error ? e.message : String(e) });
    }
    return this.current;
  }
}

/** Token bucket as in golang.org/x/time/rate: one token per interval, at most `burst` saved. */
class TokenBucket {
  private tokens: number;
  private at = performance.now();
  constructor(
    private intervalMs: number,
    private burst: number,
  ) {
    this.tokens = burst;
  }
  configure(intervalMs: number, burst: number): void {
    if (intervalMs === this.intervalMs && burst === this.burst) return;
    this.intervalMs = intervalMs;
    this.burst = burst;
    this.tokens = Math.min(this.tokens, burst);
  }
  take(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + (now - this.at) / this.intervalMs);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** "Basic base64(user:pass)" → [user, pass]; undefined when absent or malformed. */
export function basicCredentials(header: string | undefined): [string, string] | undefined {
  const m = header ? /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header) : null;
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : [decoded.slice(0, colon), decoded.slice(colon + 1)];
}

/** Checks user/password pairs with bcrypt, one comparison at a time (CPU-bound), results cached. */
export class BasicAuth {
  private cache = new Map<string, boolean>();
  private queue: Promise<unknown> = Promise.resolve();

  async check(users: Map<string, string>, user: string, pass: string): Promise<boolean> {
    const known = users.get(user);
    const hash = known ?? DECOY_HASH;
    // Keyed by a digest, so plaintext passwords are not kept in memory as map keys.
    const key = createHash('sha256').update(user).update('\0').update(hash).update('\0').update(pass).digest('base64');
    let good = this.cache.get(key);
    if (good === undefined) {
      const run = this.queue.then(() => bcrypt.compare(pass, hash));
      this.queue = run.catch(() => false);
      good = (await run.catch(() => false)) && known !== undefined;
      if (this.cache.size >= AUTH_CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, good);
    }
    return good && known !== undefined;
  }
}

/**
 * Wraps the app: config refresh, rate limit, headers, then basic auth, on every request.
 * `openHealthz`: /healthz says only "ok" and is exempt from basic auth (unlike exporter-toolkit),
 * so kubelet probes work without credentials in the manifest; TLS and the rate limit still apply.
 */
function guard(source: WebConfigSource, app: RequestListener, openHealthz: boolean): RequestListener {
  const auth = new BasicAuth();
  let limiter: TokenBucket | undefined;
  return (req: IncomingMessage, res: ServerResponse) => {
    const loaded = source.refresh();
    if (!loaded) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('web config file is invalid; see the exporter log\n');
      return;
    }
    const c = loaded.config;
    if (c.rateLimit) {
      limiter ??= new TokenBucket(c.rateLimit.intervalMs, c.rateLimit.burst);
      limiter.configure(c.rateLimit.intervalMs, c.rateLimit.burst);
      if (!limiter.take()) {
        res.writeHead(429, { 'content-type': 'text/plain' }).end('Too Many Requests\n');
        return;
      }
    } else limiter = undefined;
    for (const [k, v] of Object.entries(c.headers)) res.setHeader(k, v);
    if (c.users.size === 0 || (openHealthz && req.method === 'GET' && req.url?.split('?')[0] === '/healthz')) {
      app(req, res);
      return;
    }
    const cred = basicCredentials(req.headers.authorization);
    const denied = () => {
      res.writeHead(401, { 'www-authenticate': 'Basic', 'content-type': 'text/plain' }).end('Unauthorized\n');
    };
    if (!cred) {
      denied();
      return;
    }
    auth.check(c.users, cred[0], cred[1]).then(
      (good) => (good ? app(req, res) : denied()),
      () => denied(),
    );
  };
}

/** The peer certificate's subjectAltName entries, without their "DNS:"/"IP Address:" prefixes. */
function sansOf(socket: TLSSocket): string[] {
  const alt = socket.getPeerCertificate().subjectaltname ?? '';
  return alt.split(', ').map((s) => s.slice(s.indexOf(':') + 1)).filter(Boolean);
}

/**
 * Node fixes requestCert/rejectUnauthorized per server, not per context: set them from the
 * current config just before the TLS socket is built (the 'connection' hook below), and enforce
 * the client-auth modes Node has no switch for once the handshake is done.
 */
function attachTls(server: Server & { requestCert?: boolean; rejectUnauthorized?: boolean; setSecureContext(o: SecureContextOptions): void }, source: WebConfigSource, log: Logger): void {
  let built = source.generation;
  server.prependListener('connection', () => {
    const loaded = source.refresh();
    if (source.generation !== built && source.lastGoodSecure) {
      server.setSecureContext(source.lastGoodSecure);
      built = source.generation;
    }
    const mode = loaded?.config.tls?.clientAuth ?? 'NoClientCert';
    server.requestCert = mode !== 'NoClientCert';
    server.rejectUnauthorized = mode === 'RequireAndVerifyClientCert';
  });
  server.prependListener('secureConnection', (socket: TLSSocket) => {
    const t = source.current?.config.tls;
    if (!t) return;
    const hasCert = Object.keys(socket.getPeerCertificate()).length > 0;
    const refuse = (why: string) => {
      log.debug('TLS client refused', { remote: socket.remoteAddress, why });
      socket.destroy();
    };
    if (t.clientAuth === 'RequireAnyClientCert' && !hasCert) return refuse('no client certificate');
    if (t.clientAuth === 'VerifyClientCertIfGiven' && hasCert && !socket.authorized) return refuse(`client certificate not trusted: ${socket.authorizationError}`);
    if (t.clientAllowedSans.length > 0 && !sansOf(socket).some((s) => t.clientAllowedSans.includes(s))) return refuse('client certificate SAN not allowed');
  });
}

export interface ListenOptions {
  host: string;
  port: number;
  /** --web.config.file; undefined: plain HTTP with no auth */
  configFile?: string;
  /** --web.telemetry-path: /healthz stays open to probes only if metrics are not served there */
  metricsPath: string;
}

/**
 * Create the server and start listening. An invalid config file throws here, before anything
 * else starts, so the exporter exits non-zero with the reason.
 */
export function listenWeb(app: RequestListener, o: ListenOptions, log: Logger): Server {
  let server: Server;
  if (o.configFile === undefined) {
    server = createHttpServer(app);
  } else {
    const source = new WebConfigSource(o.configFile, log);
    // Express matches routes case-insensitively: compare the same way.
    const handler = guard(source, app, o.metricsPath.toLowerCase().replace(/\/+$/, '') !== '/healthz');
    const secure = source.current?.secure;
    if (secure) {
      const https = createHttpsServer({ ...secure }, handler);
      attachTls(https as never, source, log);
      server = https;
    } else {
      server = createHttpServer(handler);
    }
    const c = source.current!.config;
    log.info(secure ? 'TLS is enabled' : 'TLS is disabled', {
      http2: false,
      basic_auth: c.users.size > 0,
      ...(secure ? { client_auth: c.tls!.clientAuth } : {}),
      ...(c.http2 && secure ? { note: 'http2 is not served; HTTP/1.1 only' } : {}),
    });
  }
  if (o.host) server.listen(o.port, o.host);
  else server.listen(o.port);
  return server;
}
