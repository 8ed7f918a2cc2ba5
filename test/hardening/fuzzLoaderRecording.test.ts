// Property-based fuzzing of the two JSON-lines inputs: the BPF loader's protocol (src/bpf/protocol.ts)
// and recording files (src/record/). Arbitrary text, mutated valid lines and structurally mutated
// valid objects: only the module's own error type escapes (ProtocolError, RecordingError), and
// whatever is accepted goes through the restart accumulator, the engine with the model, the
// metric families and the renderer without an exception, into a well-formed exposition.
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { RestartAccumulator } from '../../src/bpf/accumulate.js';
import { parseLine, ProtocolError, toBpfSnapshot, type LoaderHello, type LoaderSnap } from '../../src/bpf/protocol.js';
import { HIST_KINDS } from '../../src/bpf/types.js';
import { familiesOf } from '../../src/metrics/index.js';
import { render } from '../../src/metrics/render.js';
import { NB } from '../../src/model/buckets.js';
import { EfficiencyModel } from '../../src/model/index.js';
import { RecordingError } from '../../src/record/format.js';
import { readRecording } from '../../src/record/reader.js';
import { SnapshotEngine } from '../../src/snapshot/engine.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';
import { textInput } from './helpers/mutate.js';
import { parseProm, ROOT } from './helpers/proc.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path into a JSON value (object keys and array indexes), the root excluded. */
function pathsOf(v: Json, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => [[...at, i], ...pathsOf(x, [...at, i])]);
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => [[...at, k], ...pathsOf(x, [...at, k])]);
  return [];
}

/** Values that break naive code: negatives, beyond 2^53, huge, wrong types, proto keys. */
const NASTY: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(-1, 0, 1.5, 2 ** 53 + 2, 1e308, -1e308, NB, NB - 1, '', 'x', '259:0', '9999:99999999', '__proto__', null, true, [], {}, [[0, 1]], [[NB, 1]], { __proto__: 1 } as Json),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

interface Edit {
  pick: number;
  value: Json;
  kind: 'set' | 'delete' | 'addKey';
  key: string;
}
const edit: fc.Arbitrary<Edit> = fc.record({
  pick: fc.nat(),
  value: NASTY,
  kind: fc.constantFrom('set', 'set', 'set', 'delete', 'addKey'),
  key: fc.constantFrom('__proto__', 'constructor', 'extra', 'count', 'b', 'dev', 'kind', 'type'),
});

/** Apply structural edits to a deep copy of a valid object. */
function mutate(valid: Json, edits: Edit[]): Json {
  const root = JSON.parse(JSON.stringify(valid)) as Json;
  for (const e of edits) {
    const paths = pathsOf(root);
    if (paths.length === 0) break;
    const path = paths[e.pick % paths.length]!;
    let parent = root as Record<string | number, Json>;
    for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, Json>;
    const last = path.at(-1)!;
    // Copies: fast-check hands the same value objects to later runs; the tree must not alias them.
    const value = JSON.parse(JSON.stringify(e.value)) as Json;
    if (e.kind === 'set') parent[last] = value;
    else if (e.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else {
      const target = parent[last];
      // defineProperty, so "__proto__" becomes a real own key as JSON.parse would make it
      if (target && typeof target === 'object' && !Array.isArray(target)) Object.defineProperty(target, e.key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  return root;
}

/** Every histogram in an exposition has non-decreasing cumulative buckets ending at _count. */
function checkExposition(text: string): void {
  const samples = parseProm(text);
  const series = new Map<string, number[]>();
  for (const s of samples) {
    if (!s.name.endsWith('_bucket')) continue;
    const { le, ...rest } = s.labels;
    const key = s.name + JSON.stringify(rest);
    series.set(key, [...(series.get(key) ?? []), s.value]);
    expect(le, s.name).toBeDefined();
  }
  for (const [key, counts] of series) {
    for (let i = 1; i < counts.length; i++) expect(counts[i]!, key).toBeGreaterThanOrEqual(counts[i - 1]!);
  }
}

// ------------------------------------------------------------------------------------------- loader

const HELLO = {
  type: 'hello', proto: 2, version: 'fuzz', pid: 42, ncpu: 2, nb: NB, kernel: '6.1.0', poll_path: 'tracepoint',
  programs: { rq_issue: { state: 'attached', via: 'tp_btf' }, hybrid_sleep: { state: 'failed', reason: 'fentry refused' } },
  polled_flag: '__REQ_POLLED=22', hybrid_poll_time: false, test_tgid: 0, calib_pct: 200, load_us: 1000,
};
const SNAP = {
  type: 'snap', id: '1', t: 123456789,
  hists: HIST_KINDS.slice(0, 4).map((kind, k) => ({ dev: '259:0', kind, b: [40 + k, 3, 41 + k, 5], count: 8, sum: 80_000, aux0: 0, aux1: 0 })),
  devs: [{ dev: '259:0', polled_ios: 8, classified_exact: 5, classified_calibrated: 3, sleeps_unmatched: 0, min_found_ns: 8000, found_threshold_ns: 9000, min_dev_ns: 7000 }],
  rings: [{ ring: 'abc123', pid: 7, comm: 'fio', flags: 131072, hpt: 9000, sleeps: 4, passes: 9 }],
  counters: { start_map_full: 0, issue_missed: 1 }, gates: { g: 1 }, bpf_stats: 1,
  progs: { rq_issue: { run_ns: 100, run_cnt: 10, recursion_misses: 0 } },
};

const inputsOf = (bpf: ReturnType<RestartAccumulator['apply']> | undefined, t: number): SnapshotInputs => ({
  takenAtMs: t,
  ...(bpf ? { bpf } : {}),
  bpfStatus: { mode: 'on', state: 'running', cause: 'ok', reason: 'fuzz', loaderRestarts: 0 },
  collectors: [{ name: 'bpf', success: true, durationSeconds: 0.001 }],
});

/** A parsed hello + snap through everything the exporter does with them. */
async function throughExporter(hello: LoaderHello, snaps: LoaderSnap[]): Promise<void> {
  const acc = new RestartAccumulator();
  const frames = snaps.map((s, i) => inputsOf(acc.apply(toBpfSnapshot(hello, s)), 1_000_000 + i * 15_000));
  let i = 0;
  const engine = new SnapshotEngine(async () => frames[Math.min(i++, frames.length - 1)]!, new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 }));
  for (let k = 0; k < frames.length; k++) {
    const snap = await engine.snapshot();
    checkExposition(await render(familiesOf(snap), 'prometheus'));
  }
}

function parseOrProtocolError(line: string): ReturnType<typeof parseLine> | undefined {
  try {
    return parseLine(line);
  } catch (e) {
    expect(e, String(e)).toBeInstanceOf(ProtocolError);
    expect((e as Error).message.length).toBeLessThan(400);
    return undefined;
  }
}

describe('loader protocol', () => {
  it('the valid lines go through', async () => {
    const h = parseLine(JSON.stringify(HELLO));
    const s = parseLine(JSON.stringify(SNAP));
    expect(h.type).toBe('hello');
    expect(s.type).toBe('snap');
    await throughExporter(h as LoaderHello, [s as LoaderSnap]);
  });

  it('text mutations of valid lines: only ProtocolError, and what parses is exportable', async () => {
    const hello = parseLine(JSON.stringify(HELLO)) as LoaderHello;
    await fc.assert(
      fc.asyncProperty(textInput([JSON.stringify(HELLO), JSON.stringify(SNAP)]), async (line) => {
        const m = parseOrProtocolError(line);
        if (m?.type === 'snap') await throughExporter(hello, [m]);
        if (m?.type === 'hello') await throughExporter(m, [parseLine(JSON.stringify(SNAP)) as LoaderSnap]);
      }),
      { numRuns: 1500 },
    );
  });

  it('structural mutations of valid messages: only ProtocolError, and what parses is exportable', async () => {
    const hello = parseLine(JSON.stringify(HELLO)) as LoaderHello;
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(edit, { minLength: 1, maxLength: 4 }), fc.array(edit, { maxLength: 3 }), async (isHello, edits, later) => {
        const m = parseOrProtocolError(JSON.stringify(mutate((isHello ? HELLO : SNAP) as Json, edits)));
        if (m?.type === 'hello') await throughExporter(m, [parseLine(JSON.stringify(SNAP)) as LoaderSnap]);
        if (m?.type === 'snap') {
          // A second, differently damaged snapshot after it: the accumulator's delta logic sees both.
          const next = parseOrProtocolError(JSON.stringify(mutate(SNAP as Json, later)));
          await throughExporter(hello, next?.type === 'snap' ? [m, next] : [m]);
        }
      }),
      { numRuns: 1500 },
    );
  });
});

// ---------------------------------------------------------------------------------------- recordings

const SYNTHETIC = readFileSync(resolve(ROOT, 'recordings/synthetic.jsonl'), 'utf8').split('\n').slice(0, 4);
const [HEADER, ...FRAMES] = SYNTHETIC as [string, ...string[]];

/** Read a recording from text split into the given chunks; RecordingError or the frames. */
async function readAll(chunks: string[], maxLineChars?: number): Promise<SnapshotInputs[] | RecordingError> {
  try {
    const rec = await readRecording(Readable.from(chunks), 'fuzz.jsonl', maxLineChars ? { maxLineChars } : {});
    const out: SnapshotInputs[] = [];
    for await (const f of rec.frames) out.push(f);
    return out;
  } catch (e) {
    expect(e, String(e)).toBeInstanceOf(RecordingError);
    return e as RecordingError;
  }
}

/** Frames through the engine with the model, families and renderer, as replay serves them. */
async function serveFrames(frames: SnapshotInputs[]): Promise<void> {
  let i = 0;
  const engine = new SnapshotEngine(async () => frames[Math.min(i++, frames.length - 1)]!, new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 }));
  for (let k = 0; k < frames.length; k++) checkExposition(await render(familiesOf(await engine.snapshot()), 'prometheus'));
}

/** Cut text into pieces at the given fractions. */
const chunked = (text: string, cuts: number[]) => {
  const at = [...new Set(cuts.map((c) => Math.floor(c * text.length)))].sort((a, b) => a - b);
  return [0, ...at].map((a, i) => text.slice(a, at[i] ?? text.length)).filter((s) => s.length > 0);
};

describe('recording files', () => {
  it('the valid recording reads and serves', async () => {
    const r = await readAll([SYNTHETIC.join('\n') + '\n']);
    expect(Array.isArray(r) && r.length).toBe(3);
    await serveFrames(r as SnapshotInputs[]);
  });

  it('text mutations, any chunking: only RecordingError, and accepted frames serve', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: 3 }), textInput(SYNTHETIC), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 5 }), async (which, line, cuts) => {
        const lines = [...SYNTHETIC];
        lines[which] = line;
        const r = await readAll(chunked(lines.join('\n') + '\n', cuts));
        if (Array.isArray(r)) await serveFrames(r);
      }),
      { numRuns: 300 },
    );
  }, 180_000);

  it('structural mutations of a frame: only RecordingError, and accepted frames serve', async () => {
    const frame = JSON.parse(FRAMES[1]!) as Json;
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 4 }), async (edits) => {
        const r = await readAll([HEADER, '\n', FRAMES[0]!, '\n', JSON.stringify(mutate(frame, edits)), '\n']);
        if (Array.isArray(r)) await serveFrames(r);
      }),
      { numRuns: 400 },
    );
  }, 180_000);

  it('a never-ending line is refused after the limit without being read whole', async () => {
    let pulled = 0;
    const endless = Readable.from((function* () {
      yield `${HEADER}\n{"takenAtMs":`;
      for (;;) {
        pulled += 1;
        yield '1'.repeat(64 * 1024);
      }
    })());
    await expect(readRecording(endless, 'endless.jsonl', { maxLineChars: 1 << 20 }).then(async (r) => {
      for await (const _ of r.frames) void _;
    })).rejects.toThrow(/line longer than 1048576 characters/);
    // 1 MiB of 64 KiB chunks: the reader stopped right after the limit.
    expect(pulled).toBeLessThanOrEqual(20);
  });
});
