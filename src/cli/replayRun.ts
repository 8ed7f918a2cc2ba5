// What `hybridpoll-exporter replay` runs (its options are in replay.ts): the recording checked,
// then served through the same snapshot engine, model stage and HTTP app as `serve`.
import type { Command } from 'commander';
import type { Express } from 'express';
import { createLogger, type Logger, type LogLevel } from '../log.js';
import type { RecordingHeader } from '../record/format.js';
import { SYNTHETIC_RECORDING } from '../record/shipped.js';
import { openRecording } from '../record/reader.js';
import { replayReader, type ReplayReader } from '../record/replay.js';
import { SnapshotEngine } from '../snapshot/engine.js';
import type { BpfExposition } from '../metrics/bpf.js';
import { bpfExpositionOf, type ListenAddress } from './common.js';

export interface ReplayAppOptions {
  file: string;
  loop: boolean;
  speed: number;
  windowSeconds: number;
  latencyBudget: number;
  log: Logger;
  metricsPath?: string;
  /** wall clock, ms; injectable for tests */
  now?: () => number;
  withProcessMetrics?: boolean;
  /** --bpf.buckets and --bpf.histograms; default: the exporter's defaults */
  bpf?: BpfExposition;
}

export interface RecordingSummary {
  header: RecordingHeader;
  frames: number;
  firstMs: number;
  lastMs: number;
}

/** Reads the whole recording once, validating every line, so a bad file fails before serving. */
export async function summarise(file: string): Promise<RecordingSummary> {
  const r = await openRecording(file);
  let frames = 0;
  let firstMs = NaN;
  let lastMs = NaN;
  for await (const f of r.frames) {
    if (frames === 0) firstMs = f.takenAtMs;
    lastMs = f.takenAtMs;
    frames += 1;
  }
  if (frames === 0) throw new Error(`${file}: the recording has a header but no frames`);
  return { header: r.header, frames, firstMs, lastMs };
}

export async function replayApp(o: ReplayAppOptions): Promise<{ app: Express; engine: SnapshotEngine; reader: ReplayReader; summary: RecordingSummary }> {
  const summary = await summarise(o.file);
  // Loaded here, not at start-up: `serve` and `--help` do not need replay's HTTP side.
  const [{ createApp }, { processRegistry }, { EfficiencyModel }] = await Promise.all([
    import('../http/server.js'),
    import('../metrics/render.js'),
    import('../model/index.js'),
  ]);
  const reader = replayReader({
    open: async () => (await openRecording(o.file)).frames,
    loop: o.loop,
    speed: o.speed,
    ...(o.now ? { now: o.now } : {}),
    onPass: (e) =>
      e.kind === 'ended'
        ? o.log.info('recording ended; serving its last frame from now on', { file: o.file })
        : o.log.debug('replay looped', { file: o.file, pass: e.pass }),
  });
  const engine = new SnapshotEngine(reader, new EfficiencyModel({ windowSeconds: o.windowSeconds, latencyBudget: o.latencyBudget }));
  // Replay takes a snapshot per scrape (single-flight), as serve with --collector.interval=0: the
  // recording paces the data (the frame due at the scrape's wall-clock time), and reading a frame
  // costs no host I/O.
  const app = createApp({
    source: engine,
    log: o.log,
    ...(o.withProcessMetrics ? { processMetrics: processRegistry() } : {}),
    ...(o.metricsPath ? { metricsPath: o.metricsPath } : {}),
    ...(o.bpf ? { bpf: o.bpf } : {}),
  });
  return { app, engine, reader, summary };
}

/** The replay command's action: check the recording, then serve it until a signal. */
export async function runReplay(given: string | undefined, raw: Record<string, unknown>, self: Command): Promise<void> {
  const file = given ?? SYNTHETIC_RECORDING;
  const log = createLogger(raw['log.level'] as LogLevel);
  const webConfigFile = raw['web.config.file'] as string | undefined;
  const { listenWeb, loadWebConfig } = await import('../http/webServer.js');
  if (webConfigFile !== undefined) loadWebConfig(webConfigFile);
  const loop = raw['once'] !== true;
  const speed = raw['speed'] as number;
  // A missing or malformed recording ends the command here, with the line that is wrong.
  const built = await replayApp({
    file,
    loop,
    speed,
    windowSeconds: raw['model.window'] as number,
    latencyBudget: raw['model.latencyBudget'] as number,
    log,
    metricsPath: raw['web.telemetryPath'] as string,
    withProcessMetrics: true,
    bpf: bpfExpositionOf(raw),
  }).catch((e: unknown) => self.error(`error: ${e instanceof Error ? e.message : String(e)}`));
  const { app, summary } = built;
  const addr = raw['web.listenAddress'] as ListenAddress;
  const server = listenWeb(app, { ...addr, metricsPath: raw['web.telemetryPath'] as string, ...(webConfigFile !== undefined ? { configFile: webConfigFile } : {}) }, log);
  server.on('listening', () => {
    const a = server.address();
    log.info('replaying', {
      address: typeof a === 'object' && a ? `${a.address}:${a.port}` : String(a),
      file,
      source: summary.header.source,
      recorded_on: summary.header.host,
      created: summary.header.created,
      frames: summary.frames,
      seconds: (summary.lastMs - summary.firstMs) / 1000,
      speed,
      mode: loop ? 'loop' : 'once',
    });
  });
  server.on('error', (e) => {
    log.error('cannot listen', { address: `${addr.host}:${addr.port}`, err: e.message });
    process.exit(1);
  });
  const stop = (signal: string) => {
    log.info('shutting down', { signal });
    server.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
