// The recording format: round trip through writer and reader, and clear errors on bad input.
import { mkdtempSync, writeFileSync, createWriteStream, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { frameLine, RecordingError, RECORDING_FORMAT, type RecordingHeader } from '../../src/record/format.js';
import { openRecording, readRecording } from '../../src/record/reader.js';
import { RecordingWriter } from '../../src/record/writer.js';
import { SYNTHETIC_DEFAULTS, syntheticFrames } from '../../src/record/synthetic.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';

const dir = mkdtempSync(join(tmpdir(), 'hp-rec-'));
const header: RecordingHeader = {
  format: RECORDING_FORMAT,
  version: 1,
  created: '2026-01-05T09:00:00.000Z',
  host: 'test',
  source: 'live',
  description: 'round trip',
};

/** A few real-looking frames: the synthetic model's first ones. */
const sample = (n: number): SnapshotInputs[] => {
  const out: SnapshotInputs[] = [];
  for (const f of syntheticFrames({ ...SYNTHETIC_DEFAULTS, minutes: 1, simPerStep: 50 })) {
    out.push(f);
    if (out.length === n) break;
  }
  return out;
};

async function collect(it: AsyncIterable<SnapshotInputs>): Promise<SnapshotInputs[]> {
  const out: SnapshotInputs[] = [];
  for await (const f of it) out.push(f);
  return out;
}

async function errorOf(text: string, maxLineChars?: number): Promise<RecordingError> {
  try {
    const r = await readRecording(Readable.from([text]), 'bad.jsonl', maxLineChars ? { maxLineChars } : {});
    await collect(r.frames);
  } catch (e) {
    expect(e).toBeInstanceOf(RecordingError);
    return e as RecordingError;
  }
  throw new Error('expected the recording to be refused');
}

/** A header as JSON, a frame as the writer writes it (frameLine: histogram buckets as pairs). */
const line = (v: unknown) => (typeof v === 'object' && v !== null && 'takenAtMs' in v ? frameLine(v as SnapshotInputs) : JSON.stringify(v) + '\n');

describe('recording round trip', () => {
  it('reads back exactly what the writer wrote, frame by frame', async () => {
    const frames = sample(6);
    const file = join(dir, 'rt.jsonl');
    const w = new RecordingWriter(createWriteStream(file), header);
    for (const f of frames) await w.write(f);
    await w.close();
    expect(w.frames).toBe(6);
    expect(w.bytes).toBe(readFileSync(file).length);
    const r = await openRecording(file);
    expect(r.header).toEqual(header);
    expect(await collect(r.frames)).toEqual(frames);
  });

  it('streams: lines split across chunks at any point, CRLF endings, no trailing newline', async () => {
    const frames = sample(3);
    const text = (line(header) + frames.map(line).join('')).replace(/\n/g, '\r\n').replace(/\r\n$/, '');
    // 7-character chunks split lines, and the CRLF pairs, everywhere.
    const chunks = text.match(/[\s\S]{1,7}/g)!;
    const r = await readRecording(Readable.from(chunks), 'chunks');
    expect(await collect(r.frames)).toEqual(frames);
  });

  it("carries dev_spun's per-bucket sums and the device's shortest look where the frame has them", async () => {
    const [f] = sample(1);
    const d = f!.bpf!.devices.find((x) => x.hists.dev_spun)!;
    const spun = d.hists.dev_spun!;
    // each bucket's sum at its count × 1000 ns: any values on the buckets' own indices
    const withSums = { ...spun, bucketSumsNs: spun.buckets.map((v, j) => (j % 2 ? v * 1000 : v)) };
    const g: SnapshotInputs = { ...f!, bpf: { ...f!.bpf!, devices: f!.bpf!.devices.map((x) => (x === d ? { ...x, lookMinNs: 1190, hists: { ...x.hists, dev_spun: withSums } } : x)) } };
    const r = await readRecording(Readable.from([line(header) + line(g)]), 'x');
    const [back] = await collect(r.frames);
    expect(back).toEqual(g);
    expect(back!.bpf!.devices.find((x) => x.dev === d.dev)!.hists.dev_spun!.bucketSumsNs).toEqual(withSums.bucketSumsNs);
    expect(back!.bpf!.devices.find((x) => x.dev === d.dev)!.lookMinNs).toBe(1190);
  });

  it('drops fields it does not know, keeps the ones it does', async () => {
    const [f] = sample(1);
    const r = await readRecording(Readable.from([line(header) + line({ ...f, extra: 1, bpfStatus: { ...f!.bpfStatus, future: true } })]), 'x');
    const [back] = await collect(r.frames);
    expect(back).toEqual(f);
  });

  it('reads recordings from before the BPF status code: the code follows from the state', async () => {
    const [f] = sample(1);
    const states = [['running', 'ok'], ['starting', 'loading'], ['failed', 'loader_down'], ['disabled', 'disabled_by_flag']] as const;
    const frames = states.map(([state], i) => {
      const { cause: _, ...old } = f!.bpfStatus;
      return { ...f!, takenAtMs: f!.takenAtMs + i, bpfStatus: { ...old, state } };
    });
    const r = await readRecording(Readable.from([line(header) + frames.map(line).join('')]), 'old.jsonl');
    expect((await collect(r.frames)).map((x) => [x.bpfStatus.state, x.bpfStatus.cause])).toEqual(states);
    const bad = { ...f!, bpfStatus: { ...f!.bpfStatus, cause: 'because' } };
    expect((await errorOf(line(header) + line(bad))).message).toMatch(/bpfStatus\.cause: expected one of ok, loading/);
  });
});

describe('malformed recordings', () => {
  const [f] = sample(1);
  const ok = line(header) + line(f);

  it('names the line of invalid JSON', async () => {
    const e = await errorOf(ok + ok.split('\n')[1] + '\n{"takenAtMs": 1,\n');
    expect(e.line).toBe(4);
    expect(e.message).toMatch(/^bad\.jsonl:4: frame: not valid JSON/);
  });

  it('names the line and the field of a wrong type', async () => {
    const bad = structuredClone(f!);
    bad.bpf!.devices[0]!.hists.rq_lat!.buckets[0] = 999; // the first bucket's index
    const e = await errorOf(ok + line(bad));
    expect(e.line).toBe(3);
    expect(e.message).toContain('bpf.devices[0].hists.rq_lat.buckets[0][0]: expected an integer in [0, 143], got 999');
  });

  it('refuses negative counters, unknown histogram kinds and unknown collectors', async () => {
    const neg = structuredClone(f!);
    neg.bpf!.counters['polled_ios'] = -1;
    expect((await errorOf(ok + line(neg))).message).toContain('bpf.counters.polled_ios: expected a number ≥ 0');
    const kind = structuredClone(f!) as unknown as { bpf: { devices: { hists: Record<string, unknown> }[] } };
    kind.bpf.devices[0]!.hists['nonsense'] = kind.bpf.devices[0]!.hists['spin'];
    expect((await errorOf(ok + line(kind))).message).toContain('hists.nonsense: unknown key');
    const coll = structuredClone(f!) as unknown as { collectors: { name: string }[] };
    coll.collectors[0]!.name = 'disk';
    expect((await errorOf(ok + line(coll))).message).toMatch(/:3: frame: collectors\[0\]\.name: expected one of sysfs, debugfs/);
  });

  it('refuses a device or ring that appears twice in a frame (it would repeat its series)', async () => {
    const twice = structuredClone(f!);
    expect(twice.bpf!.devices.length).toBeGreaterThan(1);
    twice.bpf!.devices[1]!.dev = twice.bpf!.devices[0]!.dev;
    expect((await errorOf(ok + line(twice))).message).toMatch(/:3: frame: bpf\.devices\[1\]: dev "[0-9:]+" appears twice/);
    const host = structuredClone(f!);
    host.host!.devices.push(structuredClone(host.host!.devices[0]!));
    expect((await errorOf(ok + line(host))).message).toMatch(/host\.devices\[\d+\]: device "\w+" appears twice/);
  });

  it('refuses an unknown version, another format, a missing header and an empty file', async () => {
    const v2 = await errorOf(line({ ...header, version: 2 }) + line(f));
    expect(v2.line).toBe(1);
    expect(v2.message).toContain('recording format version 2 is not supported; this exporter reads version 1');
    expect((await errorOf(line({ ...header, format: 'something-else' }))).message).toContain('not a hybridpoll recording');
    expect((await errorOf(line(f))).message).toMatch(/:1: header: format: expected a string, got undefined/);
    expect((await errorOf('')).message).toBe('bad.jsonl:1: empty file: a recording starts with a header line');
  });

  it('refuses a blank line in the middle and time going backwards', async () => {
    expect((await errorOf(line(header) + '\n' + line(f))).message).toBe('bad.jsonl:2: frame: empty line');
    const earlier = { ...f!, takenAtMs: f!.takenAtMs - 1 };
    const e = await errorOf(ok + line(earlier));
    expect(e.line).toBe(3);
    expect(e.message).toContain('earlier than the previous frame');
  });

  it('bounds the line length without reading the line whole', async () => {
    const huge = '{"takenAtMs":' + ' '.repeat(5000) + '1}';
    // Fed in small chunks: the reader must give up once it holds more than the bound.
    let fed = 0;
    const stream = Readable.from((function* () {
      yield line(header);
      for (let i = 0; i < huge.length; i += 100) {
        fed += 100;
        yield huge.slice(i, i + 100);
      }
    })());
    await expect(collect((await readRecording(stream, 'big', { maxLineChars: 1000 })).frames)).rejects.toThrow(
      'big:2: line longer than 1000 characters',
    );
    expect(fed).toBeLessThan(2000);
  });

  it('reports a missing file by name', async () => {
    await expect(openRecording(join(dir, 'nope.jsonl'))).rejects.toThrow(/cannot open recording .*nope\.jsonl: ENOENT/);
  });

  it('reads a real file lazily: a bad line late in the file only fails when reached', async () => {
    const file = join(dir, 'late.jsonl');
    writeFileSync(file, ok + ok.split('\n')[1] + '\nnot json\n');
    const r = await openRecording(file);
    const it = r.frames[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    expect((await it.next()).done).toBe(false);
    await expect(it.next()).rejects.toThrow(/late\.jsonl:4: frame: not valid JSON/);
  });
});
