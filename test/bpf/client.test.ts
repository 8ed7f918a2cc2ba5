// The loader client and the collector against a fake loader (test/bpf/fixtures/fake-loader.mjs):
// handshake, requests, a hung loader killed and restarted, a dead one restarted, bad lines, fatal errors.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LoaderClient } from '../../src/bpf/client.js';
import { BpfCollector, capsAllowBpf, preflight } from '../../src/bpf/collector.js';
import { createLogger } from '../../src/log.js';

const FAKE = resolve(import.meta.dirname, 'fixtures/fake-loader.mjs');
const logs: string[] = [];
const log = createLogger('debug', (l) => logs.push(l));

let dir: string;
let clients: LoaderClient[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hp-client-'));
  logs.length = 0;
});
afterEach(async () => {
  await Promise.all(clients.map((c) => c.stop()));
  clients = [];
  rmSync(dir, { recursive: true, force: true });
});

function client(mode: string, timeoutMs = 500): LoaderClient {
  const c = new LoaderClient({
    file: process.execPath,
    args: [FAKE, mode, join(dir, 'starts')],
    timeoutMs,
    log,
    backoff: { initialMs: 50, maxMs: 200 },
  });
  clients.push(c);
  c.start();
  return c;
}

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms; logs:\n${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('LoaderClient', () => {
  it('handshakes and answers requests in order', async () => {
    const c = client('ok');
    await until(() => c.state === 'running');
    expect(c.hello?.pollPath).toBe('tracepoint');
    const [a, b] = await Promise.all([c.request(), c.request()]);
    expect(a.snap.hists[0]!.hist.count).toBe(1);
    expect(b.snap.hists[0]!.hist.count).toBe(2);
    expect(c.restarts).toBe(0);
  });

  it('kills a loader that does not answer in time and restarts it', async () => {
    const c = client('hang-first', 300);
    await until(() => c.state === 'running');
    await expect(c.request()).rejects.toThrow(/did not answer within 300 ms/);
    await until(() => c.state === 'running' && c.restarts === 1);
    const r = await c.request();
    expect(r.snap.hists[0]!.hist.count).toBe(1);
    expect(logs.join('')).toMatch(/bpf loader hung; killing it/);
  });

  it('restarts a loader that exits', async () => {
    const c = client('die-first');
    await until(() => c.restarts === 1 && c.state === 'running');
    expect((await c.request()).snap.id).toBeTruthy();
    expect(logs.join('')).toMatch(/bpf loader stopped; restarting.*exit code 3/);
  });

  it('fails the request a malformed line answered, and keeps the loader', async () => {
    const c = client('garbage');
    await until(() => c.state === 'running');
    await expect(c.request()).rejects.toThrow(/not JSON/);
    expect((await c.request()).snap.hists[0]!.hist.count).toBe(1);
    expect(c.restarts).toBe(0);
  });

  it('reports a fatal loader error as the reason and retries with backoff', async () => {
    const c = client('fatal');
    await until(() => c.restarts >= 2);
    expect(c.state === 'backoff' || c.state === 'starting').toBe(true);
    expect(c.lastError).toMatch(/no kernel BTF/);
    await expect(c.request()).rejects.toThrow(/not running/);
  });
});

describe('BpfCollector', () => {
  it('keeps counts monotonic when the loader is killed', async () => {
    const col = await BpfCollector.create({
      mode: 'on',
      loader: process.execPath,
      extraArgs: [FAKE, 'ok', join(dir, 'starts')],
      timeoutMs: 1000,
      log,
      client: { backoff: { initialMs: 50, maxMs: 200 } },
    });
    try {
      await until(() => col.status().state === 'running');
      await col.snapshot();
      const before = (await col.snapshot())!.devices[0]!.hists.rq_lat!.count; // 2
      const pid = Number(/pid=(\d+)/.exec(logs.join(''))![1]);
      process.kill(pid, 'SIGKILL');
      await until(() => col.status().loaderRestarts === 1 && col.status().state === 'running');
      const after = (await col.snapshot())!.devices[0]!.hists.rq_lat!.count; // 2 + 1
      expect(before).toBe(2);
      expect(after).toBe(3);
    } finally {
      await col.stop();
    }
  });

  it('drops the series of devices --collector.device-include/-exclude do not select (names from sysfs)', async () => {
    const { mkdirSync, symlinkSync } = await import('node:fs');
    const sysfs = join(dir, 'sys');
    mkdirSync(join(sysfs, 'dev/block'), { recursive: true });
    symlinkSync('../../devices/virtual/block/loop0', join(sysfs, 'dev/block/7:0'));
    const devicesWith = async (filter: { include?: RegExp; exclude?: RegExp }) => {
      const col = await BpfCollector.create({ mode: 'on', loader: process.execPath, extraArgs: [FAKE, 'ok', join(dir, 'starts')], timeoutMs: 1000, log, paths: { sysfs }, filter });
      try {
        await until(() => col.status().state === 'running');
        return (await col.snapshot())!.devices.map((d) => d.dev);
      } finally {
        await col.stop();
      }
    };
    expect(await devicesWith({ include: /^loop/ })).toEqual(['7:0']);
    expect(await devicesWith({ include: /^nvme/ })).toEqual([]);
    expect(await devicesWith({ exclude: /^loop/ })).toEqual([]);
    expect(await devicesWith({})).toEqual(['7:0']);
  });

  it('gives up in auto mode when the loader fails to start three times', async () => {
    const col = await BpfCollector.create({
      mode: 'auto',
      loader: process.execPath,
      extraArgs: [FAKE, 'fatal', join(dir, 'starts')],
      timeoutMs: 1000,
      log,
      client: { backoff: { initialMs: 20, maxMs: 50 } },
    });
    await until(() => col.status().state === 'disabled');
    expect(col.status()).toMatchObject({ mode: 'auto', reason: expect.stringMatching(/cannot run here: no kernel BTF/), loaderRestarts: 2 });
    expect(logs.filter((l) => l.includes('msg="BPF collector disabled"'))).toHaveLength(1);
    await col.stop();
  });

  it('stays disabled with a reason when it cannot run (auto), or failed (on)', async () => {
    const auto = await BpfCollector.create({ mode: 'auto', loader: '/nonexistent/hybridpoll-bpf', timeoutMs: 1000, log });
    expect(auto.status()).toMatchObject({ state: 'disabled' });
    expect(await auto.snapshot()).toBeUndefined();
    const on = await BpfCollector.create({ mode: 'on', loader: '/nonexistent/hybridpoll-bpf', timeoutMs: 1000, log, paths: { btf: '/nonexistent/btf' } });
    expect(on.status()).toMatchObject({ state: 'failed', reason: expect.stringMatching(/no BTF|not privileged/) });
    expect(logs.join('')).toMatch(/level=error msg="BPF collector cannot run/);
  });
});

describe('preflight', () => {
  it('reads privileges from CapEff', () => {
    expect(capsAllowBpf('000001ffffffffff')).toBe(true); // root
    expect(capsAllowBpf('0000000000200000')).toBe(true); // CAP_SYS_ADMIN only
    expect(capsAllowBpf('000000c000000000')).toBe(true); // CAP_BPF + CAP_PERFMON
    expect(capsAllowBpf('0000008000000000')).toBe(false); // CAP_BPF alone
    expect(capsAllowBpf('0000000000000000')).toBe(false);
  });

  it('names what is missing', async () => {
    const status = join(dir, 'status');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(status, 'Name:\tnode\nCapEff:\t0000000000000000\n');
    expect(await preflight(process.execPath, { procStatus: status })).toMatchObject({ cause: 'not_privileged', reason: expect.stringMatching(/not privileged/) });
    writeFileSync(status, 'CapEff:\t000000c000000000\n');
    expect(await preflight(process.execPath, { procStatus: status, btf: join(dir, 'none') })).toMatchObject({ cause: 'no_btf', reason: expect.stringMatching(/kernel has no BTF/) });
    expect(await preflight(join(dir, 'none'), { procStatus: status, btf: status })).toMatchObject({ cause: 'no_loader', reason: expect.stringMatching(/run npm run build:bpf/) });
    expect(await preflight(process.execPath, { procStatus: status, btf: status })).toBeUndefined();
  });
});
