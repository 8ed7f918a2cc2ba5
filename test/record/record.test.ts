// `record`: the loop (count, duration, abort, schedule) and the real command stopped by signals.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RECORDING_FORMAT } from '../../src/record/format.js';
import { openRecording } from '../../src/record/reader.js';
import { recordLoop } from '../../src/record/recorder.js';
import { bpfSettled } from '../../src/record/settle.js';
import type { BpfSource } from '../../src/bpf/source.js';
import type { BpfStatus } from '../../src/bpf/types.js';
import { RecordingWriter } from '../../src/record/writer.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';
import { CLI, fixtureArgs } from '../helpers/exporter.js';

const dir = mkdtempSync(join(tmpdir(), 'hp-record-'));
const header = { format: RECORDING_FORMAT, version: 1, created: '2026-01-01T00:00:00.000Z', host: 't', source: 'live', description: '' } as const;

function frame(ms: number): SnapshotInputs {
  return { takenAtMs: ms, bpfStatus: { mode: 'off', state: 'disabled', cause: 'disabled_by_flag', reason: 'test', loaderRestarts: 0 }, collectors: [] };
}

async function frames(file: string): Promise<SnapshotInputs[]> {
  const out: SnapshotInputs[] = [];
  for await (const f of (await openRecording(file)).frames) out.push(f);
  return out;
}

describe('record loop', () => {
  it('stops after --count frames and after --duration, on a fixed schedule', async () => {
    const file = join(dir, 'count.jsonl');
    const w = new RecordingWriter(createWriteStream(file), header);
    const taken: number[] = [];
    const end = await recordLoop({
      read: async () => (taken.push(Date.now()), frame(Date.now())),
      writer: w, intervalMs: 20, count: 4, signal: new AbortController().signal,
    });
    await w.close();
    expect(end).toBe('count');
    expect(await frames(file)).toHaveLength(4);
    // Slots at 0, 20, 40, 60 ms from the first: no drift from the time the reads take.
    expect(taken.at(-1)! - taken[0]!).toBeGreaterThanOrEqual(58);

    // --duration on a fake clock (each read lands 1 ms into its slot), so a loaded machine that
    // wakes late cannot skip a slot and change the count
    const w2 = new RecordingWriter(createWriteStream(join(dir, 'dur.jsonl')), header);
    let t = 0;
    const e2 = await recordLoop({
      read: async () => { t = 20 * w2.frames + 1; return frame(t); },
      writer: w2, intervalMs: 20, durationMs: 100, signal: new AbortController().signal, now: () => t,
    });
    await w2.close();
    expect(e2).toBe('duration');
    expect(w2.frames).toBe(6); // 0, 20, …, 100 ms
  });

  it('skips the slots a slow read missed instead of bursting to catch up', async () => {
    let t = 0;
    const w = new RecordingWriter(createWriteStream(join(dir, 'slow.jsonl')), header);
    const at: number[] = [];
    // A fake clock: each read takes 3.5 intervals.
    await recordLoop({
      read: async () => { at.push(t); t += 35; return frame(t); },
      writer: w, intervalMs: 10, count: 4, signal: new AbortController().signal, now: () => t,
    });
    await w.close();
    expect(at).toEqual([0, 35, 70, 105]);
  });

  it('an abort ends the loop after the frame in hand, or at once during the wait; everything written is readable', async () => {
    const file = join(dir, 'abort.jsonl');
    const w = new RecordingWriter(createWriteStream(file), header);
    const ac = new AbortController();
    const end = await recordLoop({
      read: async () => {
        if (w.frames === 2) ac.abort();
        return frame(Date.now());
      },
      writer: w, intervalMs: 10, signal: ac.signal,
    });
    await w.close();
    expect(end).toBe('aborted');
    expect(await frames(file)).toHaveLength(3);

    const w2 = new RecordingWriter(createWriteStream(join(dir, 'abort2.jsonl')), header);
    const ac2 = new AbortController();
    const t0 = Date.now();
    setTimeout(() => ac2.abort(), 50);
    expect(await recordLoop({ read: async () => frame(Date.now()), writer: w2, intervalMs: 60_000, signal: ac2.signal })).toBe('aborted');
    await w2.close();
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(w2.frames).toBe(1);
  });
});

describe('waiting for the BPF loader', () => {
  const source = (upAfterMs: number): BpfSource => {
    const t0 = Date.now();
    const status = (): BpfStatus =>
      Date.now() - t0 >= upAfterMs
        ? { mode: 'auto', state: 'running', cause: 'ok', reason: '', loaderRestarts: 0 }
        : { mode: 'auto', state: 'starting', cause: 'loading', reason: '', loaderRestarts: 0 };
    return { status, snapshot: async () => undefined, stop: async () => {} };
  };

  it('returns once the loader runs, or gives up after the timeout', async () => {
    const t0 = Date.now();
    expect((await bpfSettled(source(150), 5_000, 10)).state).toBe('running');
    expect(Date.now() - t0).toBeLessThan(2_000);
    const t1 = Date.now();
    expect((await bpfSettled(source(60_000), 200, 10)).state).toBe('starting');
    expect(Date.now() - t1).toBeGreaterThanOrEqual(190);
  });
});

describe('record command', () => {
  const built = existsSync(CLI);
  if (!built) console.warn(`*** ${CLI} missing (the test setup builds it): skipping the record command tests ***`);

  it.skipIf(!built).each(['SIGINT', 'SIGTERM'] as const)('records live fixture snapshots until %s, then flushes and exits 0', async (signal) => {
    const file = join(dir, `live-${signal}.jsonl`);
    const proc = spawn(process.execPath, [CLI, 'record', ...fixtureArgs('v6.13'), '--no-collector.bpf', '--interval', '100ms', '--output', file, '--description', 'test run'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
    // Wait for three frames on disk, then signal.
    for (let i = 0; i < 100 && (!existsSync(file) || readFileSync(file, 'utf8').split('\n').length < 5); i++) await new Promise((r) => setTimeout(r, 50));
    proc.kill(signal);
    expect(await exited).toBe(0);
    expect(stderr).toContain(`msg=stopping signal=${signal}`);
    expect(stderr).toMatch(/recorded \d+ snapshots \([\d.]+ KiB\) to /);
    const r = await openRecording(file);
    expect(r.header).toMatchObject({ source: 'live', description: 'test run' });
    const got: SnapshotInputs[] = [];
    for await (const f of r.frames) got.push(f);
    expect(got.length).toBeGreaterThanOrEqual(3);
    expect(got[0]!.host!.era.era).toBe('iouring_hybrid');
    expect(got[0]!.host!.devices.map((d) => d.device)).toContain('nvme0n1');
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
  });

  it.skipIf(!built)('stops by itself after --count, and refuses an unwritable output with a clear error', () => {
    const file = join(dir, 'count3.jsonl');
    const r = spawnSync(process.execPath, [CLI, 'record', ...fixtureArgs('v6.13'), '--no-collector.bpf', '--interval', '50ms', '--count', '3', '--output', file], { encoding: 'utf8', timeout: 15000 });
    expect(r.status).toBe(0);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(4);
    const bad = spawnSync(process.execPath, [CLI, 'record', '--no-collector.bpf', '--output', join(dir, 'no/such/dir/x.jsonl')], { encoding: 'utf8', timeout: 15000 });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/error: cannot write .*x\.jsonl: ENOENT/);
    const both = spawnSync(process.execPath, [CLI, 'record', '--count', '2', '--duration', '1m'], { encoding: 'utf8', timeout: 15000 });
    expect(both.status).not.toBe(0);
    expect(both.stderr).toMatch(/cannot be used with/);
  });
});
