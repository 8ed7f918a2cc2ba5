// Replay: frames advance on the (injected) wall clock, timestamps are rebased, and looping keeps
// every counter and histogram going up, checked through the real HTTP server.
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { replayApp } from '../../src/cli/replayRun.js';
import { createLogger } from '../../src/log.js';
import { RECORDING_FORMAT } from '../../src/record/format.js';
import { replayReader } from '../../src/record/replay.js';
import { SYNTHETIC_RECORDING } from '../../src/record/shipped.js';
import { SYNTHETIC_DEFAULTS, syntheticFrames } from '../../src/record/synthetic.js';
import { RecordingWriter } from '../../src/record/writer.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';
import { bucketTotal } from '../../src/model/hist.js';

const dir = mkdtempSync(join(tmpdir(), 'hp-replay-'));
const quiet = createLogger('error', () => {});

/** 2 minutes of the synthetic model (25 frames, 5 s apart), plus ≤5.15-style hctx counters that grow. */
function frames(): SnapshotInputs[] {
  return [...syntheticFrames({ ...SYNTHETIC_DEFAULTS, minutes: 2, simPerStep: 100 })].map((f, i) => ({
    ...f,
    host: {
      ...f.host!,
      devices: f.host!.devices.map((d) => ({ ...d, hctxIoPoll: [{ hctx: 'hctx2', considered: 1000 + 90 * i, invoked: 2000 + 170 * i, success: 500 + 40 * i }] })),
    },
  }));
}

function sources(list: SnapshotInputs[]) {
  let opened = 0;
  const open = async () => {
    opened += 1;
    return (async function* () {
      yield* list;
    })();
  };
  return { open, opened: () => opened };
}

const counter = (f: SnapshotInputs, k: string) => f.bpf!.counters[k]!;

describe('replay reader', () => {
  const list = frames();
  const t0 = list[0]!.takenAtMs;

  it('serves the frame due at the scaled wall time, with timestamps rebased to it', async () => {
    let now = 1_000_000;
    const r = replayReader({ ...sources(list), loop: false, speed: 2, now: () => now });
    const a = await r();
    expect(counter(a, 'polled_ios')).toBe(counter(list[0]!, 'polled_ios'));
    expect(a.takenAtMs).toBe(1_000_000);
    now += 7_400; // 14.8 recording seconds: frame 2 (10 s) is due, frame 3 (15 s) not yet
    const b = await r();
    expect(counter(b, 'polled_ios')).toBe(counter(list[2]!, 'polled_ios'));
    expect(b.takenAtMs).toBe(1_000_000 + 5_000);
    expect(b.bpf!.takenAtNs - a.bpf!.takenAtNs).toBe(5_000 * 1e6);
  });

  it('plays once, then keeps serving the last frame', async () => {
    let now = 0;
    const events: string[] = [];
    const r = replayReader({ ...sources(list), loop: false, speed: 1, now: () => now, onPass: (e) => events.push(e.kind) });
    await r();
    now = 10 * 60_000;
    const last = await r();
    expect(last).toMatchObject({ takenAtMs: list.at(-1)!.takenAtMs - t0 });
    expect(counter(last, 'polled_ios')).toBe(counter(list.at(-1)!, 'polled_ios'));
    now += 60_000;
    expect(counter(await r(), 'polled_ios')).toBe(counter(list.at(-1)!, 'polled_ios'));
    expect(events).toEqual(['ended']);
  });

  it('loops with a seam step equal to the first step and counters offset by one pass', async () => {
    let now = 0;
    const src = sources(list);
    const r = replayReader({ ...src, loop: true, speed: 1, now: () => now });
    const n = list.length; // 25 frames: 0 … 120 s; the pass lasts 125 s
    const first = counter(list[0]!, 'polled_ios');
    const step = counter(list[1]!, 'polled_ios') - first;
    const pass = counter(list[n - 1]!, 'polled_ios') - first + step;
    await r();
    now = 120_000;
    expect(counter(await r(), 'polled_ios')).toBe(counter(list[n - 1]!, 'polled_ios'));
    now = 125_000;
    const seam = await r();
    expect(counter(seam, 'polled_ios')).toBe(first + pass);
    expect(seam.takenAtMs).toBe(125_000);
    expect(r.passes()).toBe(2);
    // After a long silence whole passes are skipped at once (one reopen, not one per pass).
    now = 125_000 * 10 + 5_000;
    const later = await r();
    expect(counter(later, 'polled_ios')).toBe(counter(list[1]!, 'polled_ios') + 10 * pass);
    expect(r.passes()).toBe(11);
    expect(src.opened()).toBe(3);
    // Histograms keep bucket counts and _count consistent after the shift.
    for (const d of later.bpf!.devices) {
      for (const h of Object.values(d.hists)) expect(bucketTotal(h)).toBe(h.count);
    }
  });
});

/** Prometheus text → { "name{labels}" → value } for counters and histogram series. */
function cumulativeSeries(text: string): Map<string, number> {
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m) continue;
    const name = m[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const type = types.get(family);
    if (type === 'counter' || (type === 'histogram' && family !== name)) out.set(name + (m[2] ?? ''), Number(m[3]));
  }
  return out;
}

describe('replay over HTTP', () => {
  const servers: Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  async function serve(file: string, loop: boolean, now: () => number) {
    const { app, reader } = await replayApp({ file, loop, speed: 1, windowSeconds: 60, latencyBudget: 0.01, log: quiet, now });
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((r) => server.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { base, reader };
  }

  async function record(name: string, list: SnapshotInputs[]): Promise<string> {
    const file = join(dir, name);
    const w = new RecordingWriter(createWriteStream(file), {
      format: RECORDING_FORMAT, version: 1, created: new Date(list[0]!.takenAtMs).toISOString(), host: 'test', source: 'synthetic', description: 'replay test',
    });
    for (const f of list) await w.write(f);
    await w.close();
    return file;
  }

  it('serves /metrics, / and /healthz; no counter or histogram series goes down across two loops', async () => {
    const file = await record('loop.jsonl', frames());
    let now = 5_000_000;
    const { base, reader } = await serve(file, true, () => now);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    let prev = new Map<string, number>();
    let checked = 0;
    let seams = 0;
    // 2.5 passes of 125 s, scraped every 15 s as Prometheus would.
    for (let t = 0; t <= 312_000; t += 15_000) {
      now = 5_000_000 + t;
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      const cur = cumulativeSeries(await res.text());
      for (const [k, v] of cur) {
        const p = prev.get(k);
        if (p === undefined) continue;
        checked += 1;
        expect(v, `${k} at t=${t / 1000}s`).toBeGreaterThanOrEqual(p);
      }
      if (reader.passes() > seams + 1) seams = reader.passes() - 1;
      prev = cur;
    }
    expect(seams).toBe(2);
    // Counters from the hctx io_poll files, plus whatever BPF and model families the exporter has.
    expect([...prev.keys()].some((k) => k.startsWith('hybridpoll_hctx_poll_invoked_total'))).toBe(true);
    expect(checked).toBeGreaterThan(100);
    const index = await (await fetch(`${base}/`)).text();
    expect(index).toContain('iouring_hybrid');
    expect(index).toContain('nvme1n1');
  });

  it('exposes the eBPF histograms as --bpf.histograms says: full buckets only for the listed ones', async () => {
    const bodies: string[] = [];
    for (const bpf of [undefined, { keepEvery: 4, fullHistograms: ['poll_spin'] }]) {
      const { app } = await replayApp({ file: SYNTHETIC_RECORDING, loop: true, speed: 1, windowSeconds: 60, latencyBudget: 0.01, log: quiet, now: () => 0, ...(bpf ? { bpf } : {}) });
      const server = app.listen(0, '127.0.0.1');
      servers.push(server);
      await new Promise((r) => server.once('listening', r));
      bodies.push(await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)).text());
    }
    const buckets = (body: string, name: string) => body.split('\n').filter((l) => l.startsWith(`hybridpoll_${name}_seconds_bucket{`)).map((l) => /le="([^"]+)"/.exec(l)![1]);
    const [byDefault, spinFull] = bodies as [string, string];
    expect(new Set(buckets(byDefault, 'poll_spin'))).toEqual(new Set(['+Inf']));
    expect(buckets(spinFull, 'poll_spin').length).toBeGreaterThan(10);
    expect(buckets(byDefault, 'io_latency').length).toBeGreaterThan(10);
    expect(new Set(buckets(spinFull, 'io_latency'))).toEqual(new Set(['+Inf']));
  });

  it('replay takes --bpf.histograms and refuses an unknown name with one error line', () => {
    const r = spawnSync(process.execPath, ['dist/cli.js', 'replay', '--bpf.histograms', 'poll_spin,nonsense'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: .*nonsense/);
  });

  it('the hctx counter resets absorbed stay at 0 across a loop (the shift hides the seam)', async () => {
    const file = await record('resets.jsonl', frames());
    let now = 0;
    const { base } = await serve(file, true, () => now);
    for (const t of [0, 120_000, 125_000, 130_000]) {
      now = t;
      const text = await (await fetch(`${base}/metrics`)).text();
      expect(text).toMatch(/hybridpoll_hctx_poll_resets_total\{device="nvme0n1",hctx="hctx2"\} 0/);
    }
  });

  it('the shipped recording yields every documented family a 6.13+ NVMe host can have, and passes promtool', async () => {
    let now = 0;
    const { base } = await serve(SYNTHETIC_RECORDING, true, () => now);
    // Two scrapes a window apart: the model needs deltas.
    await fetch(`${base}/metrics`);
    now = 60_000;
    const text = await (await fetch(`${base}/metrics`)).text();
    const emitted = new Set([...text.matchAll(/^# TYPE (hybridpoll_\w+) /gm)].map((m) => m[1]!));
    const doc = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
    const documented = doc.split('\n').filter((l) => l.startsWith('| `')).flatMap((l) => [...(l.split('|')[1] ?? '').matchAll(/`(hybridpoll_\w+)`/g)].map((m) => m[1]!));
    // poll_stat (4.12–6.3), hctx io_poll (≤5.15) and the io_poll_delay setting (4.10–5.18) cannot exist on the recording's 6.14 host;
    // replay takes a snapshot per scrape, so the refresh loop's own metrics are absent (as with
    // serve --collector.interval=0).
    const possible = documented.filter((n) => !/^hybridpoll_(poll_stat_|hctx_poll_|snapshot_refresh_|optimal_io_poll_delay_)/.test(n));
    expect(possible.length).toBeGreaterThan(40);
    expect(possible.filter((n) => !emitted.has(n)), 'documented families missing from replay').toEqual([]);
    // Every model family has a series for both devices.
    for (const f of ['sleep_efficiency_ratio', 'optimal_sleep_seconds', 'current_sleep_seconds', 'wasted_cpu_seconds_total', 'oversleep_ratio']) {
      for (const d of ['nvme0n1', 'nvme1n1']) expect(text, `${f} ${d}`).toMatch(new RegExp(`^hybridpoll_${f}\\{device="${d}"\\} `, 'm'));
    }
    if (!existsSync('/usr/bin/promtool')) {
      console.warn('*** /usr/bin/promtool not found (apt-get install prometheus): skipping promtool check metrics on replay output ***');
      return;
    }
    const r = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('refuses a malformed recording before serving, naming the line', async () => {
    const list = frames().slice(0, 3);
    const file = await record('bad.jsonl', list);
    const { appendFileSync } = await import('node:fs');
    appendFileSync(file, '{"takenAtMs":"soon"}\n');
    await expect(replayApp({ file, loop: true, speed: 1, windowSeconds: 60, latencyBudget: 0.01, log: quiet })).rejects.toThrow(
      /bad\.jsonl:5: frame: takenAtMs: expected a finite number, got string/,
    );
  });
});
