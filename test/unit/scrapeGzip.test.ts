// The scrape body in gzip: the cached part is deflated once per collection and each scrape closes
// the stream with its live lines. It must be ONE gzip member (curl and some other readers stop
// after the first of several), decode to the identity body, and carry a CRC and size gzip checks.
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { constants, crc32, deflateRawSync, gunzipSync, inflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closingGzip, ScrapeBodies } from '../../src/http/bodies.js';
import { createApp } from '../../src/http/server.js';
import { listenWeb } from '../../src/http/webServer.js';
import { createLogger } from '../../src/log.js';
import { SYNTHETIC_DEFAULTS, syntheticFrames } from '../../src/record/synthetic.js';
import { derive, emptyDeriveState } from '../../src/snapshot/derive.js';
import type { Snapshot } from '../../src/snapshot/types.js';

function snapshot(): Snapshot {
  const [inputs] = syntheticFrames({ ...SYNTHETIC_DEFAULTS, minutes: 1, simPerStep: 50 });
  return { ...inputs!, ...derive(emptyDeriveState(), inputs!).derived };
}

/** The members of a gzip file: the header is 10 bytes here (no optional fields, as we write it). */
function singleMember(gz: Buffer): Buffer {
  expect([...gz.subarray(0, 4)]).toEqual([0x1f, 0x8b, 8, 0]);
  const text = inflateRawSync(gz.subarray(10, gz.length - 8));
  expect(gz.readUInt32LE(gz.length - 8)).toBe(crc32(text) >>> 0);
  expect(gz.readUInt32LE(gz.length - 4)).toBe(text.length);
  return text;
}

describe('closingGzip', () => {
  it('closes an open deflate stream with any live text: one member that decodes to both parts', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3000 }), fc.string({ maxLength: 2000 }), (head, tail) => {
        const a = Buffer.from(head);
        const b = Buffer.from(tail);
        const open = deflateRawSync(a, { finishFlush: constants.Z_SYNC_FLUSH });
        const gz = Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]), open, closingGzip(b, crc32(a), a.length)]);
        expect(singleMember(gz).toString()).toBe(head + tail);
        expect(gunzipSync(gz).toString()).toBe(head + tail);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses live text beyond one stored block', () => {
    expect(() => closingGzip(Buffer.alloc(0x10000), 0, 0)).toThrow(/stored block/);
  });
});

describe('/metrics with Accept-Encoding: gzip', () => {
  const snap = snapshot();
  const app = createApp({ source: { snapshot: async () => snap, latest: () => snap }, log: createLogger('error', () => {}), bodies: new ScrapeBodies({ now: () => snap.takenAtMs + 2500 }) });
  let url = '';
  let close: () => void = () => {};

  beforeAll(async () => {
    const server = listenWeb(app, { host: '127.0.0.1', port: 0, metricsPath: '/metrics' }, createLogger('error', () => {}));
    await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    close = () => server.close();
  });
  afterAll(() => close());

  const get = async (headers: Record<string, string>) => {
    const res = await fetch(url, { headers: { 'accept-encoding': 'identity', ...headers } });
    return { res, raw: Buffer.from(await res.arrayBuffer()) };
  };

  it('serves one gzip member that decodes to the identity body, live lines included, in both formats', async () => {
    for (const accept of ['text/plain', 'application/openmetrics-text; version=1.0.0']) {
      const plain = await get({ accept });
      expect(plain.res.headers.get('content-encoding')).toBeNull();
      // the raw bytes through node:http (fetch would decode them)
      const gz = await rawGzip(url, accept);
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.headers['vary']).toMatch(/accept-encoding/i);
      expect(Number(gz.headers['content-length'])).toBe(gz.body.length);
      expect(singleMember(gz.body).toString()).toBe(plain.raw.toString());
      expect(plain.raw.toString()).toMatch(/hybridpoll_snapshot_age_seconds 2\.5\n/);
      expect(gz.body.length).toBeLessThan(plain.raw.length / 4);
    }
  });

  it('serves identity when gzip is refused (q=0) or not offered', async () => {
    const gz = await rawGzip(url, 'text/plain', 'gzip;q=0, identity');
    expect(gz.headers['content-encoding']).toBeUndefined();
    expect(gz.body.toString()).toMatch(/hybridpoll_snapshot_age_seconds/);
  });

  const curl = spawnSync('curl', ['--version']).status === 0;
  if (!curl) console.warn('\n*** SKIPPING the curl --compressed check: curl is not installed ***\n');
  it.skipIf(!curl)('curl --compressed gets the whole body, live lines at the end', async () => {
    // not execFileSync: the server answering curl runs in this process
    const { stdout: out } = await promisify(execFile)('curl', ['-sS', '--compressed', url], { encoding: 'utf8' });
    expect(out.trimEnd().split('\n').at(-1)).toBe('hybridpoll_snapshot_age_seconds 2.5');
  });
});

async function rawGzip(url: string, accept: string, acceptEncoding = 'gzip'): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const { get } = await import('node:http');
  return new Promise((resolve, reject) => {
    get(url, { headers: { accept, 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}
