// What `hybridpoll-exporter report` runs (its options are in report.ts): the window of a recording
// or a live measurement, analysed and rendered as text, JSON or HTML.
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createLogger } from '../log.js';
import { openRecording } from '../record/reader.js';
import { bpfSettled } from '../record/settle.js';
import { buildReport, type Report } from '../report/data.js';
import { renderHtml } from '../report/html.js';
import { renderJson } from '../report/json.js';
import { renderText } from '../report/text.js';
import type { SnapshotInputs } from '../snapshot/types.js';
import { liveReader } from '../snapshot/live.js';
import { hostOptionsOf, type HostOptions } from './common.js';
import { BPF_START_TIMEOUT_MS } from './record.js';
import { DEFAULT_LIVE_SECONDS } from './report.js';
import { bpfSourceOf, hostReaderOf } from './serve.js';

const RENDER = { text: renderText, json: renderJson, html: renderHtml } as const;
type Format = keyof typeof RENDER;

/**
 * The window at the end of a recording: its last frame, and the last frame at least `seconds`
 * before it (the whole recording when seconds is undefined or longer). Streams the file.
 */
export async function recordingWindow(file: string, seconds: number | undefined): Promise<{ from: SnapshotInputs; to: SnapshotInputs; report: Pick<Report, 'source' | 'host'> }> {
  const r = await openRecording(file);
  // Frames still within `seconds` of the newest one, plus the one just before them.
  const kept: SnapshotInputs[] = [];
  for await (const f of r.frames) {
    kept.push(f);
    if (seconds === undefined) {
      if (kept.length > 2) kept.splice(1, 1);
      continue;
    }
    while (kept.length > 1 && kept[1]!.takenAtMs <= f.takenAtMs - seconds * 1000) kept.shift();
  }
  if (kept.length < 2) throw new Error(`${file}: a report needs at least two frames, the recording has ${kept.length}`);
  return { from: kept[0]!, to: kept.at(-1)!, report: { source: { kind: 'recording', file, header: r.header }, host: r.header.host } };
}

/** Waits `seconds`, showing the time left on stderr. Rejects when aborted. */
function wait(seconds: number, signal: AbortSignal): Promise<void> {
  const tty = process.stderr.isTTY;
  const end = Date.now() + seconds * 1000;
  process.stderr.write(`measuring for ${seconds} s (Ctrl-C to abort)${tty ? '' : '\n'}`);
  return new Promise((resolve, reject) => {
    const tick = setInterval(() => {
      if (tty) process.stderr.write(`\rmeasuring: ${Math.max(0, Math.ceil((end - Date.now()) / 1000))} s left   `);
    }, 1000);
    const done = () => {
      clearInterval(tick);
      clearTimeout(timer);
      if (tty) process.stderr.write('\r\x1b[K');
    };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, seconds * 1000);
    signal.addEventListener('abort', () => {
      done();
      reject(new Error('interrupted'));
    });
  });
}

async function liveWindow(o: HostOptions, seconds: number, signal: AbortSignal): Promise<{ from: SnapshotInputs; to: SnapshotInputs }> {
  const log = createLogger(o.logLevel);
  const bpf = await bpfSourceOf(o, log);
  try {
    const settled = await bpfSettled(bpf, BPF_START_TIMEOUT_MS);
    if (settled.state === 'starting') log.warn('BPF loader not up yet; the report will have no per-I/O timings', { reason: settled.reason });
    const read = liveReader(hostReaderOf(o), bpf, log, o.collectors.bpf);
    const from = await read();
    await wait(seconds, signal);
    return { from, to: await read() };
  } finally {
    await bpf.stop();
  }
}

/** The report command's action: analyse, render, write. */
export async function runReport(raw: Record<string, unknown>, self: Command): Promise<void> {
  const o = hostOptionsOf(raw, self);
  const seconds = raw['duration'] as number | undefined;
  const file = raw['fromRecording'] as string | undefined;
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  try {
    const w = file
      ? await recordingWindow(file, seconds)
      : { ...(await liveWindow(o, seconds ?? DEFAULT_LIVE_SECONDS, abort.signal)), report: { source: { kind: 'live' as const }, host: hostname() } };
    const report = buildReport(w.from, w.to, { latencyBudget: o.model.latencyBudget, source: w.report.source, host: w.report.host, generatedAtMs: Date.now() });
    const text = RENDER[raw['format'] as Format](report);
    const output = raw['output'] as string | undefined;
    if (output) {
      writeFileSync(output, text);
      process.stderr.write(`wrote ${output} (${report.devices.length} device${report.devices.length === 1 ? '' : 's'} analysed)\n`);
    } else {
      process.stdout.write(text);
    }
  } catch (e) {
    self.error(`error: ${e instanceof Error ? e.message : String(e)}`, { exitCode: abort.signal.aborted ? 130 : 1 });
  }
}
