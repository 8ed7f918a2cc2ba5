// --web.config.file: the parser on good, bad and fuzzed files, then the real exporter over HTTPS
// (Node's https client and curl) with bcrypt basic auth, client certificates, certificate reload,
// runtime breakage, rate limiting, and startup refusal of invalid files.
import bcrypt from 'bcryptjs';
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { validateHeaderValue } from 'node:http';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseWebConfig } from '../../src/http/webConfig.js';
import { HAVE_OPENSSL, makeCa, makeLeaf } from './helpers/certs.js';
import { leaks, ROOT, runExporter, startExporter, systemState, type Exporter, type SystemState, waitForLog } from './helpers/proc.js';

const HASH = bcrypt.hashSync('secret', 10);
const FIXTURE = ['v6.1'].flatMap((f) => {
  const d = join(ROOT, 'test/fixtures', f);
  return [`--path.sysfs=${d}/sys`, `--path.debugfs=${d}/debug`, `--path.procfs=${d}/proc`, '--no-collector.bpf'];
});

describe('parseWebConfig', () => {
  const full = `
tls_server_config:
  cert_file: server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  client_allowed_sans: [scraper]
  min_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Content-Security-Policy: ""
basic_auth_users:
  alice: '${HASH}'
rate_limit:
  interval: 100ms
  burst: 5
`;

  it('reads every exporter-toolkit field', () => {
    const r = parseWebConfig(full, '/etc/hp');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const c = r.value;
    expect(c.tls).toMatchObject({
      cert: { file: '/etc/hp/server.crt' },
      key: { file: '/abs/server.key' },
      clientCa: { file: '/etc/hp/ca.crt' },
      clientAuth: 'RequireAndVerifyClientCert',
      clientAllowedSans: ['scraper'],
      minVersion: 'TLSv1.3',
      maxVersion: 'TLSv1.3',
      ecdhCurve: 'X25519:P-256',
    });
    // TLS 1.2 suites only: TLS 1.3 stays enabled, as in Go.
    expect(c.tls!.ciphers).toMatch(/^TLS_AES_256_GCM_SHA384:.*:ECDHE-RSA-AES128-GCM-SHA256$/);
    expect(c.headers).toEqual({ 'X-Frame-Options': 'deny' }); // blank = unset
    expect(c.users.get('alice')).toBe(HASH);
    expect(c.rateLimit).toEqual({ intervalMs: 100, burst: 5 });
    expect(c.http2).toBe(false);
  });

  it('treats an empty file and basic-auth-only files as plain HTTP', () => {
    for (const text of ['', '---\n', `basic_auth_users:\n  bob: '${HASH}'\n`]) {
      const r = parseWebConfig(text, '/');
      expect(r.ok, text).toBe(true);
      if (r.ok) expect(r.value.tls).toBeUndefined();
    }
  });

  const bad: [string, string, RegExp][] = [
    ['unknown top-level key', 'tls_config: {}\n', /unknown field "tls_config"/],
    ['unknown tls key', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n', /unknown field "certfile"/],
    ['cert without key', 'tls_server_config:\n  cert_file: a\n', /missing key_file/],
    ['key without cert', 'tls_server_config:\n  key_file: a\n', /missing cert_file/],
    ['inline and file', 'tls_server_config:\n  cert: x\n  cert_file: a\n  key_file: b\n', /not both/],
    ['bad client auth', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Maybe\n', /client_auth_type: unknown value "Maybe"/],
    ['CA without client auth', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n', /client_auth_type is NoClientCert/],
    ['verify without CA', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n', /needs client_ca_file/],
    ['SANs without a required cert', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  client_allowed_sans: [x]\n', /client_allowed_sans needs/],
    ['bad TLS version', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n', /unknown TLS version "SSL3"/],
    ['min above max', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n', /min_version is above max_version/],
    ['unknown cipher', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n', /unknown cipher/],
    ['unknown curve', 'tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: [CurveP999]\n', /unknown curve/],
    ['header not allowed', 'http_server_config:\n  headers:\n    Set-Cookie: a=b\n', /unknown field "Set-Cookie"/],
    ['header value not allowed', 'http_server_config:\n  headers:\n    X-Frame-Options: allowall\n', /expected one of deny, sameorigin/],
    ['header injection', 'http_server_config:\n  headers:\n    Content-Security-Policy: "a\\r\\nSet-Cookie: x=y"\n', /control characters/],
    ['http2 not a boolean', 'http_server_config:\n  http2: yes please\n', /expected true or false/],
    ['plaintext password', 'basic_auth_users:\n  alice: secret\n', /not a bcrypt hash/],
    ['hash not a string', 'basic_auth_users:\n  alice: 12\n', /expected a bcrypt hash string/],
    ['users not a mapping', 'basic_auth_users: [alice]\n', /expected a mapping/],
    ['bad rate interval', 'rate_limit:\n  interval: soon\n  burst: 1\n', /rate_limit.interval/],
    ['zero burst', 'rate_limit:\n  interval: 1s\n  burst: 0\n', /would refuse every request/],
    ['invalid YAML', 'tls_server_config: [\n', /not valid YAML/],
    ['duplicate keys', 'basic_auth_users: {}\nbasic_auth_users: {}\n', /not valid YAML/],
    ['a list at the top', '- a\n- b\n', /web config: expected a mapping/],
    ['alias bomb', ['a: &a [x,x,x,x,x,x,x,x,x]', ...'bcdefg'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefg'[i]}`).join(',')}]`)].join('\n'), /not valid YAML|resource exhaustion/],
  ];
  it.each(bad)('refuses %s with a clear message', (_name, text, want) => {
    const r = parseWebConfig(text, '/');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(want);
  });

  /** Properties every accepted config must have, whatever the input was. */
  const checkAccepted = (text: string) => {
    const r = parseWebConfig(text, '/d');
    expect(typeof r.ok).toBe('boolean');
    if (!r.ok) {
      expect(r.error.length).toBeGreaterThan(0);
      expect(r.error).not.toMatch(/\n/);
      return;
    }
    // Headers must be settable on a Node response (an invalid one would throw inside a request).
    for (const [k, v] of Object.entries(r.value.headers)) expect(() => validateHeaderValue(k, v)).not.toThrow();
    for (const h of r.value.users.values()) expect(h).toMatch(/^\$2[aby]\$\d\d\$/);
    if (r.value.rateLimit) expect(r.value.rateLimit.intervalMs).toBeGreaterThan(0);
  };

  it('never throws on arbitrary text', () => {
    fc.assert(fc.property(fc.string({ maxLength: 400, unit: 'binary' }), (t) => checkAccepted(t)), { numRuns: 2000 });
  });

  it('never throws on mutations of a valid file', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 20 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.string({ maxLength: 12, unit: 'binary' }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.constantFrom('\n', ': ', '- ', '{', '[', '&a ', '*a', '"', "'", '\r\n', '\t', '!!binary ', '~', '0x', '1e999') }),
    );
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 6 }), (ms) => {
        let t = full;
        for (const m of ms) {
          const at = m.at % (t.length + 1);
          t = m.kind === 'delete' ? t.slice(0, at) + t.slice(at + m.len) : t.slice(0, at) + m.text + t.slice(at);
        }
        checkAccepted(t);
      }),
      { numRuns: 3000 },
    );
  });

  it('never throws on arbitrary YAML trees under the known keys', () => {
    const leaf = fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 20 }), tie('node'), { maxKeys: 4 })),
    })).node;
    const key = fc.constantFrom('tls_server_config', 'http_server_config', 'basic_auth_users', 'rate_limit', 'cert_file', 'headers', 'X-Frame-Options', 'interval', 'burst');
    fc.assert(
      fc.property(fc.dictionary(key, tree, { maxKeys: 4 }), (obj) => checkAccepted(JSON.stringify(obj))),
      { numRuns: 2000 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// The real exporter.

if (!HAVE_OPENSSL) console.warn('\n*** SKIPPED web config HTTPS tests: /usr/bin/openssl missing (apt-get install openssl) ***\n');

interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  fingerprint: string;
}

/** One HTTPS request on a fresh connection (no agent), so every call performs a TLS handshake. */
function get(url: string, o: { ca: string; auth?: string; cert?: string; key?: string }): Promise<Got> {
  return new Promise((ok, fail) => {
    const req = request(
      url,
      {
        agent: false,
        ca: readFileSync(o.ca),
        ...(o.auth ? { auth: o.auth } : {}),
        ...(o.cert ? { cert: readFileSync(o.cert), key: readFileSync(o.key!) } : {}),
        timeout: 10_000,
      },
      (res) => {
        const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
        res.resume();
        res.on('end', () => ok({ status: res.statusCode!, headers: res.headers, fingerprint }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
    req.end();
  });
}

const fingerprintOf = (crtPath: string) => new X509Certificate(readFileSync(crtPath)).fingerprint256;

describe.skipIf(!HAVE_OPENSSL)('exporter with --web.config.file', () => {
  let dir: string;
  let ca: { crt: string; key: string };
  let exp: Exporter | undefined;
  let before: SystemState;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'hp-webcfg-'));
    ca = makeCa(dir);
    makeLeaf(dir, 'serverA', ca, 'IP:127.0.0.1', 'server-A');
    makeLeaf(dir, 'serverB', ca, 'IP:127.0.0.1', 'server-B');
    makeLeaf(dir, 'scraper', ca, 'DNS:scraper');
    makeLeaf(dir, 'intruder', ca, 'DNS:intruder');
    const rogueCa = makeCa(dir, 'rogue');
    makeLeaf(dir, 'rogueclient', rogueCa, 'DNS:scraper');
    copyFileSync(join(dir, 'serverA.crt'), join(dir, 'tls.crt'));
    copyFileSync(join(dir, 'serverA.key'), join(dir, 'tls.key'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    before = systemState();
  });
  afterEach(async () => {
    expect(await leaks(before, exp)).toEqual([]);
    exp = undefined;
  });

  const writeConfig = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const tlsBlock = 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n';

  it('serves HTTPS with bcrypt basic auth: 401 without or with wrong credentials, 200 with the right ones', async () => {
    const cfg = writeConfig('auth.yml', `${tlsBlock}http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\nbasic_auth_users:\n  alice: '${HASH}'\n`);
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`], { scheme: 'https' });
    await waitForLog(exp, /msg="TLS is enabled".*basic_auth=true/);
    const url = `${exp.url}/metrics`;
    const none = await get(url, { ca: ca.crt });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic');
    expect((await get(url, { ca: ca.crt, auth: 'alice:wrong' })).status).toBe(401);
    expect((await get(url, { ca: ca.crt, auth: 'mallory:secret' })).status).toBe(401);
    expect((await get(url, { ca: ca.crt, auth: 'alice:' })).status).toBe(401);
    const good = await get(url, { ca: ca.crt, auth: 'alice:secret' });
    expect(good.status).toBe(200);
    expect(good.headers['x-frame-options']).toBe('deny');
    expect(good.headers['x-content-type-options']).toBe('nosniff');
    // Every path is protected, as in exporter-toolkit, except /healthz (kubelet probes carry no
    // credentials; it answers "ok" and nothing else).
    expect((await get(`${exp.url}/`, { ca: ca.crt })).status).toBe(401);
    expect((await get(`${exp.url}/metrics?x=/healthz`, { ca: ca.crt })).status).toBe(401);
    expect((await get(`${exp.url}/healthz`, { ca: ca.crt })).status).toBe(200);
    // Plain HTTP to the TLS port gets no metrics.
    await expect(fetch(`http://127.0.0.1:${exp.port}/metrics`).then((r) => r.status)).rejects.toThrow();
  });

  it('keeps /healthz closed when metrics are served there (--web.telemetry-path=/healthz)', async () => {
    const cfg = writeConfig('hz.yml', `basic_auth_users:\n  alice: '${HASH}'\n`);
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`, '--web.telemetry-path=/healthz']);
    expect((await fetch(`${exp.url}/healthz`)).status).toBe(401);
    expect((await fetch(`${exp.url}/HEALTHZ`)).status).toBe(401);
  });

  it.skipIf(!existsSync('/usr/bin/curl'))('works with curl --cacert and refuses a client that does not trust the CA', async () => {
    const cfg = writeConfig('curl.yml', `${tlsBlock}basic_auth_users:\n  alice: '${HASH}'\n`);
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`], { scheme: 'https' });
    const curl = (...args: string[]) => spawnSync('/usr/bin/curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', ...args], { encoding: 'utf8' });
    expect(curl('--cacert', ca.crt, '-u', 'alice:secret', `${exp.url}/metrics`).stdout).toBe('200');
    expect(curl('--cacert', ca.crt, '-u', 'alice:nope', `${exp.url}/metrics`).stdout).toBe('401');
    const untrusted = curl('-u', 'alice:secret', `${exp.url}/metrics`);
    expect(untrusted.status).not.toBe(0); // curl: certificate verify failed
  });

  it('reloads the certificate when the files are replaced: the next connection sees the new one', async () => {
    copyFileSync(join(dir, 'serverA.crt'), join(dir, 'tls.crt'));
    copyFileSync(join(dir, 'serverA.key'), join(dir, 'tls.key'));
    const cfg = writeConfig('reload.yml', tlsBlock);
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`], { scheme: 'https' });
    const first = await get(`${exp.url}/metrics`, { ca: ca.crt });
    expect(first.status).toBe(200);
    expect(first.fingerprint).toBe(fingerprintOf(join(dir, 'serverA.crt')));
    // Replace both files atomically, the way a secret mount or cert-manager does.
    copyFileSync(join(dir, 'serverB.crt'), join(dir, 'tls.crt.new'));
    copyFileSync(join(dir, 'serverB.key'), join(dir, 'tls.key.new'));
    renameSync(join(dir, 'tls.key.new'), join(dir, 'tls.key'));
    renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'));
    const second = await get(`${exp.url}/metrics`, { ca: ca.crt });
    expect(second.status).toBe(200);
    expect(second.fingerprint).toBe(fingerprintOf(join(dir, 'serverB.crt')));
    await waitForLog(exp, /msg="web config reloaded"/);
  });

  it('requires a client certificate from the CA with an allowed SAN (RequireAndVerifyClientCert)', async () => {
    copyFileSync(join(dir, 'serverA.crt'), join(dir, 'tls.crt'));
    copyFileSync(join(dir, 'serverA.key'), join(dir, 'tls.key'));
    const cfg = writeConfig('mtls.yml', `${tlsBlock}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  client_allowed_sans: [scraper]\n  min_version: TLS12\n`);
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`], { scheme: 'https' });
    const url = `${exp.url}/metrics`;
    const c = (n: string) => ({ ca: ca.crt, cert: join(dir, `${n}.crt`), key: join(dir, `${n}.key`) });
    expect((await get(url, c('scraper'))).status).toBe(200);
    await expect(get(url, { ca: ca.crt })).rejects.toThrow(); // no client certificate
    await expect(get(url, c('rogueclient'))).rejects.toThrow(); // right SAN, untrusted issuer
    await expect(get(url, c('intruder'))).rejects.toThrow(); // trusted issuer, SAN not allowed
    // The refusals did not break the server.
    expect((await get(url, c('scraper'))).status).toBe(200);
  });

  it('fails closed (500) while the file is broken at runtime, and recovers when it is fixed', async () => {
    const good = `basic_auth_users:\n  alice: '${HASH}'\n`;
    const cfg = writeConfig('runtime.yml', good);
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`]);
    const auth = { Authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` };
    expect((await fetch(`${exp.url}/metrics`, { headers: auth })).status).toBe(200);
    writeFileSync(cfg, 'basic_auth_users:\n  alice: hunter2\n');
    expect((await fetch(`${exp.url}/metrics`, { headers: auth })).status).toBe(500);
    await waitForLog(exp, /level=error msg="web config reload failed.*not a bcrypt hash/);
    writeFileSync(cfg, good + '# fixed\n');
    expect((await fetch(`${exp.url}/metrics`, { headers: auth })).status).toBe(200);
  });

  it('applies rate_limit: requests beyond the burst get 429', async () => {
    const cfg = writeConfig('rate.yml', 'rate_limit:\n  interval: 1m\n  burst: 2\n');
    exp = await startExporter([...FIXTURE, `--web.config.file=${cfg}`]);
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await fetch(`${exp.url}/healthz`)).status);
    expect(codes).toEqual([200, 200, 429, 429]);
  });

  describe('refuses to start on an invalid file, with the reason', () => {
    const cases: [string, () => string, RegExp][] = [
      ['missing file', () => join(dir, 'nope.yml'), /nope\.yml.*ENOENT|no such file/i],
      ['YAML syntax error', () => writeConfig('syntax.yml', 'basic_auth_users: [\n'), /syntax\.yml: not valid YAML/],
      ['plaintext password', () => writeConfig('plain.yml', 'basic_auth_users:\n  alice: secret\n'), /plain\.yml: basic_auth_users\.alice: not a bcrypt hash/],
      ['missing key file', () => writeConfig('nokey.yml', 'tls_server_config:\n  cert_file: tls.crt\n  key_file: absent.key\n'), /absent\.key.*ENOENT|no such file/i],
      ['key of another certificate', () => writeConfig('mismatch.yml', 'tls_server_config:\n  cert_file: serverA.crt\n  key_file: serverB.key\n'), /mismatch\.yml: TLS: .*(mismatch|key values)/i],
      ['garbage PEM', () => {
        writeFileSync(join(dir, 'garbage.crt'), 'not a certificate\n');
        return writeConfig('garbage.yml', 'tls_server_config:\n  cert_file: garbage.crt\n  key_file: serverA.key\n');
      }, /garbage\.yml: TLS: /],
      ['a directory as the config', () => dir, /not a regular file|EISDIR/],
    ];
    it.each(cases)('%s', (_name, make, want) => {
      const r = runExporter([...FIXTURE, `--web.config.file=${make()}`, '--web.listen-address=127.0.0.1:0']);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(want);
      expect(r.stderr).not.toMatch(/msg=listening/);
      expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
    });
  });
});
