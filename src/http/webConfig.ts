// --web.config.file: the YAML format of prometheus/exporter-toolkit (docs/web-configuration.md there),
// parsed into plain data. Pure: text and the config file's directory in, a WebConfig or a one-line
// error out. Reading the referenced files and serving live in webServer.ts.
import { isAbsolute, join } from 'node:path';
import type { SecureVersion } from 'node:tls';
import { createRequire } from 'node:module';
import { fail, ok, quote, type Parsed } from '../sources/result.js';

// yaml is loaded on the first --web.config.file, not at start: most exporters run without one,
// and the module is ~5 MiB of the process's RSS (bench/README.md, "The cost table").
const requireLazy = createRequire(import.meta.url);
let yaml: typeof import('yaml') | undefined;
const loadYaml = (): typeof import('yaml') => (yaml ??= requireLazy('yaml') as typeof import('yaml'));

/** A PEM given inline in the YAML or as a file (relative paths are relative to the config file). */
export type Pem = { file: string } | { inline: string };

/** Go crypto/tls ClientAuthType names, as exporter-toolkit accepts them. */
export const CLIENT_AUTH_TYPES = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

export interface TlsSettings {
  cert: Pem;
  key: Pem;
  clientCa?: Pem;
  clientAuth: ClientAuthType;
  /** a client certificate must carry one of these SANs (DNS, IP, e-mail or URI), exact match */
  clientAllowedSans: string[];
  minVersion: SecureVersion;
  maxVersion: SecureVersion;
  /** OpenSSL cipher list (TLS 1.2 suites from cipher_suites, TLS 1.3 suites kept at Node's default) */
  ciphers?: string;
  honorCipherOrder: boolean;
  /** OpenSSL curve list from curve_preferences */
  ecdhCurve?: string;
}

export interface WebConfig {
  /** undefined: plain HTTP */
  tls?: TlsSettings;
  /** accepted for compatibility; this exporter serves HTTP/1.1 only */
  http2: boolean;
  headers: Record<string, string>;
  /** user → bcrypt hash; empty: no authentication */
  users: Map<string, string>;
  /** token bucket: one request per intervalMs, bursts of `burst` */
  rateLimit?: { intervalMs: number; burst: number };
}

const TLS_VERSIONS: Record<string, SecureVersion> = {
  TLS10: 'TLSv1',
  TLS11: 'TLSv1.1',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
};
const VERSION_ORDER: SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/** Go's tls.CipherSuites() (the secure list exporter-toolkit accepts) → OpenSSL names. */
const CIPHERS: Record<string, string> = {
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
};
/** In Go, cipher_suites never restricts TLS 1.3; in OpenSSL a list without 1.3 suites disables 1.3. */
const TLS13_DEFAULT = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';

const CURVES: Record<string, string> = { CurveP256: 'P-256', CurveP384: 'P-384', CurveP521: 'P-521', X25519: 'X25519' };

/** Headers exporter-toolkit lets a config set, with the values it allows (empty: any). */
const HEADERS: Record<string, readonly string[]> = {
  'Strict-Transport-Security': [],
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': [],
  'Content-Security-Policy': [],
};

/** $2a$/$2b$/$2y$, two-digit cost, 22 salt + 31 hash characters of bcrypt's base64. */
const BCRYPT_RE = /^\$2[aby]\$(\d{2})\$[./A-Za-z0-9]{53}$/;

/** A header value Node will accept: visible ASCII, spaces and tabs (no CR/LF: no header injection). */
const HEADER_VALUE_RE = /^[\t\x20-\x7e]*$/;

/** Go time.ParseDuration subset: "500ms", "1s", "1m30s". */
export function parseGoDuration(v: string): number | undefined {
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (v === '0') return 0;
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(v)) return undefined;
  let ms = 0;
  for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * unit[m[2]!]!;
  return Number.isFinite(ms) ? ms : undefined;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

class ConfigError extends Error {}
const bad = (msg: string): never => {
  throw new ConfigError(msg);
};

/** Like yaml.v2 UnmarshalStrict: an unknown key is an error, not silently ignored. */
function section(v: unknown, where: string, keys: readonly string[]): Obj {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) return bad(`${where}: expected a mapping`);
  for (const k of Object.keys(v)) if (!keys.includes(k)) bad(`${where}: unknown field ${quote(k)}`);
  return v;
}

function str(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') return bad(`${where}: expected a string`);
  return v;
}

function strList(v: unknown, where: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return bad(`${where}: expected a list of strings`);
  return v as string[];
}

function bool(v: unknown, where: string, dflt: boolean): boolean {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') return bad(`${where}: expected true or false`);
  return v;
}

function pem(inline: unknown, file: unknown, name: string, dir: string): Pem | undefined {
  const i = str(inline, `tls_server_config.${name}`);
  const f = str(file, `tls_server_config.${name}_file`);
  if (i && f) bad(`tls_server_config: give ${name} or ${name}_file, not both`);
  if (i) return { inline: i };
  if (f) return { file: isAbsolute(f) ? f : join(dir, f) };
  return undefined;
}

function tlsVersion(v: unknown, where: string, dflt: SecureVersion): SecureVersion {
  const s = str(v, where);
  if (s === undefined) return dflt;
  return TLS_VERSIONS[s] ?? bad(`${where}: unknown TLS version ${quote(s)} (expected TLS10, TLS11, TLS12 or TLS13)`);
}

function parseTls(v: unknown, dir: string): TlsSettings | undefined {
  const t = section(v, 'tls_server_config', [
    'cert', 'key', 'client_ca', 'cert_file', 'key_file', 'client_auth_type', 'client_ca_file',
    'client_allowed_sans', 'min_version', 'max_version', 'cipher_suites', 'prefer_server_cipher_suites', 'curve_preferences',
  ]);
  const cert = pem(t['cert'], t['cert_file'], 'cert', dir);
  const key = pem(t['key'], t['key_file'], 'key', dir);
  const clientCa = pem(t['client_ca'], t['client_ca_file'], 'client_ca', dir);
  const authName = str(t['client_auth_type'], 'tls_server_config.client_auth_type');
  // Same rule as exporter-toolkit: no certificate, key, client auth or CA means plain HTTP.
  if (!cert && !key && !clientCa && !authName) {
    if (Object.keys(t).length > 0) bad('tls_server_config: set but has no cert_file/key_file');
    return undefined;
  }
  if (!cert) return bad('tls_server_config: missing cert_file');
  if (!key) return bad('tls_server_config: missing key_file');
  // "RequireClientCert" is exporter-toolkit's older spelling of RequireAnyClientCert.
  const auth = (authName === 'RequireClientCert' ? 'RequireAnyClientCert' : authName ?? 'NoClientCert') as ClientAuthType;
  if (!CLIENT_AUTH_TYPES.includes(auth)) bad(`tls_server_config.client_auth_type: unknown value ${quote(authName ?? '')}`);
  if (clientCa && auth === 'NoClientCert') bad('tls_server_config: client_ca_file is set but client_auth_type is NoClientCert');
  if (!clientCa && (auth === 'VerifyClientCertIfGiven' || auth === 'RequireAndVerifyClientCert')) {
    bad(`tls_server_config: client_auth_type ${auth} needs client_ca_file`);
  }
  const sans = strList(t['client_allowed_sans'], 'tls_server_config.client_allowed_sans');
  if (sans.length > 0 && auth !== 'RequireAnyClientCert' && auth !== 'RequireAndVerifyClientCert') {
    bad('tls_server_config: client_allowed_sans needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert');
  }
  const minVersion = tlsVersion(t['min_version'], 'tls_server_config.min_version', 'TLSv1.2');
  const maxVersion = tlsVersion(t['max_version'], 'tls_server_config.max_version', 'TLSv1.3');
  if (VERSION_ORDER.indexOf(minVersion) > VERSION_ORDER.indexOf(maxVersion)) bad('tls_server_config: min_version is above max_version');
  const suites = strList(t['cipher_suites'], 'tls_server_config.cipher_suites').map(
    (s) => CIPHERS[s] ?? bad(`tls_server_config.cipher_suites: unknown cipher ${quote(s)}`),
  );
  const curves = strList(t['curve_preferences'], 'tls_server_config.curve_preferences').map(
    (c) => CURVES[c] ?? bad(`tls_server_config.curve_preferences: unknown curve ${quote(c)}`),
  );
  const ciphers = suites.length === 0 ? undefined : suites.some((s) => s.startsWith('TLS_')) ? suites.join(':') : `${TLS13_DEFAULT}:${suites.join(':')}`;
  return {
    cert,
    key,
    ...(clientCa ? { clientCa } : {}),
    clientAuth: auth,
    clientAllowedSans: sans,
    minVersion,
    maxVersion,
    ...(ciphers ? { ciphers } : {}),
    honorCipherOrder: bool(t['prefer_server_cipher_suites'], 'tls_server_config.prefer_server_cipher_suites', true),
    ...(curves.length > 0 ? { ecdhCurve: curves.join(':') } : {}),
  };
}

function parseHeaders(v: unknown): Record<string, string> {
  const h = section(v, 'http_server_config.headers', Object.keys(HEADERS));
  const out: Record<string, string> = {};
  for (const [k, raw] of Object.entries(h)) {
    const value = str(raw, `http_server_config.headers.${k}`) ?? '';
    if (!HEADER_VALUE_RE.test(value)) bad(`http_server_config.headers.${k}: value has control characters`);
    const allowed = HEADERS[k]!;
    if (allowed.length > 0 && value !== '' && !allowed.includes(value)) {
      bad(`http_server_config.headers.${k}: expected one of ${allowed.join(', ')}, got ${quote(value)}`);
    }
    if (value !== '') out[k] = value; // blank means unset, as in exporter-toolkit
  }
  return out;
}

function parseUsers(v: unknown): Map<string, string> {
  if (v === undefined || v === null) return new Map();
  if (!isObj(v)) return bad('basic_auth_users: expected a mapping of user names to bcrypt hashes');
  return new Map(Object.entries(v).map(([name, hash]) => {
    if (typeof hash !== 'string') return bad(`basic_auth_users.${name}: expected a bcrypt hash string`);
    const m = BCRYPT_RE.exec(hash);
    if (!m) return bad(`basic_auth_users.${name}: not a bcrypt hash (expected $2y$10$… as made by htpasswd -nBC 10)`);
    const cost = Number(m[1]);
    if (cost < 4 || cost > 31) bad(`basic_auth_users.${name}: bcrypt cost ${cost} out of range 4–31`);
    return [name, hash] as [string, string];
  }));
}

function parseRateLimit(v: unknown): WebConfig['rateLimit'] {
  const r = section(v, 'rate_limit', ['interval', 'burst']);
  if (Object.keys(r).length === 0) return undefined;
  const iv = r['interval'];
  const intervalMs = iv === 0 ? 0 : typeof iv === 'string' ? parseGoDuration(iv) : undefined;
  if (intervalMs === undefined) return bad('rate_limit.interval: expected a duration such as 100ms or 1s');
  const burst = r['burst'] ?? 0;
  if (typeof burst !== 'number' || !Number.isSafeInteger(burst) || burst < 0) return bad('rate_limit.burst: expected a non-negative integer');
  if (intervalMs === 0) return undefined; // 0 disables the limiter
  if (burst === 0) return bad('rate_limit.burst: 0 would refuse every request');
  return { intervalMs, burst };
}

/** Parse a web config file's text. `dir` is the file's directory, for relative file names. */
export function parseWebConfig(text: string, dir: string): Parsed<WebConfig> {
  try {
    const doc = loadYaml().parseDocument(text, { uniqueKeys: true, prettyErrors: false });
    if (doc.errors.length > 0) return fail(`not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
    const root = section(doc.toJS({ maxAliasCount: 100 }), 'web config', ['tls_server_config', 'http_server_config', 'basic_auth_users', 'rate_limit']);
    const http = section(root['http_server_config'], 'http_server_config', ['http2', 'headers']);
    const tls = parseTls(root['tls_server_config'], dir);
    const rateLimit = parseRateLimit(root['rate_limit']);
    return ok({
      ...(tls ? { tls } : {}),
      http2: bool(http['http2'], 'http_server_config.http2', true),
      headers: parseHeaders(http['headers']),
      users: parseUsers(root['basic_auth_users']),
      ...(rateLimit ? { rateLimit } : {}),
    });
  } catch (e) {
    // ConfigError is ours; anything else (the yaml library on hostile input) is reported the same way.
    return fail(e instanceof ConfigError ? e.message : `not valid YAML: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
}

/** The files a config refers to, for change detection. */
export function filesOf(c: WebConfig): string[] {
  const t = c.tls;
  if (!t) return [];
  return [t.cert, t.key, t.clientCa].flatMap((p) => (p && 'file' in p ? [p.file] : []));
}
