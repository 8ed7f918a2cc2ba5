// What `hybridpoll-exporter record` runs (its options are in record.ts): live snapshots at an
// interval, written as a recording until a count, a duration or a signal ends it.
import type { Command } from 'commander';
import { createWriteStream } from 'node:fs';
import { hostname } from 'node:os';
import type { Writable } from 'node:stream';
import { createLogger } from '../log.js';
import { RECORDING_FORMAT, RECORDING_VERSION } from '../record/format.js';
import { recordLoop } from '../record/recorder.js';
import { bpfSettled } from '../record/settle.js';
import { RecordingWriter } from '../record/writer.js';
import { liveReader } from '../snapshot/live.js';
import { hostOptionsOf } from './common.js';
import { BPF_START_TIMEOUT_MS } from './record.js';
import { bpfSourceOf, hostReaderOf } from './serve.js';

const kib = (n: number) => `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} KiB`;

/** The record command's action: snapshots until told to stop, then flush and exit. */
export async function runRecord(raw: Record<string, unknown>, self: Command): Promise<void> {
  const o = hostOptionsOf(raw, self);
  const log = createLogger(o.logLevel);
  const output = raw['output'] as string;
  const intervalMs = (raw['interval'] as number) * 1000;
  const durationMs = raw['duration'] === undefined ? undefined : (raw['duration'] as number) * 1000;
  const count = raw['count'] as number | undefined;

  const out: Writable = output === '-' ? process.stdout : createWriteStream(output);
  // A path that cannot be written ends the command before anything is loaded.
  if (output !== '-') {
    await new Promise<void>((resolve) => {
      out.once('ready', () => resolve());
      out.once('error', (e) => self.error(`error: cannot write ${output}: ${e.message}`));
    });
  }
  const bpf = await bpfSourceOf(o, log);
  const settled = await bpfSettled(bpf, BPF_START_TIMEOUT_MS);
  if (settled.state === 'starting') log.warn('BPF loader not up yet; recording without it until it is', { reason: settled.reason });
  const read = liveReader(hostReaderOf(o), bpf, log, o.collectors.bpf);
  const writer = new RecordingWriter(out, {
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    created: new Date().toISOString(),
    host: hostname(),
    source: 'live',
    description: raw['description'] as string,
  });

  // First signal: finish the frame in hand, flush, close. A second one: leave at once.
  const abort = new AbortController();
  const onSignal = (signal: string) => {
    if (abort.signal.aborted) process.exit(130);
    log.info('stopping', { signal });
    abort.abort();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  const tty = process.stderr.isTTY;
  const where = output === '-' ? 'standard output' : output;
  const progress = (frames: number, bytes: number, final = false) => {
    const text = `recorded ${frames} snapshot${frames === 1 ? '' : 's'} (${kib(bytes)}) to ${where}`;
    if (tty) process.stderr.write(`\r${text}${final ? '\n' : ''}`);
    else if (final || frames === 1 || frames % 12 === 0) process.stderr.write(`${text}\n`);
  };
  log.info('recording', { output: where, interval_s: intervalMs / 1000, count, duration_s: durationMs === undefined ? undefined : durationMs / 1000, bpf: bpf.status().state });

  let code = 0;
  try {
    const end = await recordLoop({
      read,
      writer,
      intervalMs,
      ...(count !== undefined ? { count } : {}),
      ...(durationMs !== undefined ? { durationMs } : {}),
      signal: abort.signal,
      onFrame: (n, b) => progress(n, b),
    });
    log.debug('recording ended', { reason: end });
  } catch (e) {
    // A closed pipe (record -o - | head) is the reader's way of saying "enough".
    const err = e as NodeJS.ErrnoException;
    if (err.code !== 'EPIPE') {
      log.error('recording failed', { err: err.message });
      code = 1;
    }
  }
  await writer.close();
  progress(writer.frames, writer.bytes, true);
  await bpf.stop();
  process.exit(code);
}
