// `hybridpoll-exporter serve`: the exporter itself.
import { Command } from 'commander';
import { BpfCollector } from '../bpf/collector.js';
import { disabledBpf, type BpfSource } from '../bpf/source.js';
import { createLogger, type Logger } from '../log.js';
import { SnapshotEngine } from '../snapshot/engine.js';
import { liveReader } from '../snapshot/live.js';
import { Refresher, type SnapshotSource } from '../snapshot/refresher.js';
import { HostReader } from '../sources/reader.js';
import { VERSION } from '../version.js';
import { addHostOptions, addWebOptions, durationOrZeroArg, hostOptionsOf, parsed, type HostOptions, type ListenAddress } from './common.js';

/** Default --collector.interval: collection every 15 s, scrapes serve the latest (Prometheus' usual scrape interval). */
export const DEFAULT_COLLECTOR_INTERVAL = '15s';

export function hostReaderOf(o: HostOptions): HostReader {
  return new HostReader({
    paths: o.paths,
    filter: { ...(o.deviceInclude ? { include: o.deviceInclude } : {}), ...(o.deviceExclude ? { exclude: o.deviceExclude } : {}) },
    collectors: { sysfs: o.collectors.sysfs, debugfs: o.collectors.debugfs, era: o.collectors.era },
  });
}

/** The BPF collector per --bpf.enable and --no-collector.bpf. */
export async function bpfSourceOf(o: HostOptions, log: Logger, onRunning?: () => void): Promise<BpfSource> {
  if (!o.collectors.bpf || o.bpf.enable === 'off') return disabledBpf('disabled by flag');
  return BpfCollector.create({
    ...(onRunning ? { onRunning } : {}),
    mode: o.bpf.enable,
    ...(o.bpf.loader ? { loader: o.bpf.loader } : {}),
    timeoutMs: o.bpf.timeoutMs,
    forceTracepoint: o.bpf.forceTracepoint,
    sample: o.bpf.sample,
    cpuBudget: o.bpf.cpuBudget,
    maxRings: o.bpf.maxRings,
    paths: { sysfs: o.paths.sysfs },
    filter: { ...(o.deviceInclude ? { include: o.deviceInclude } : {}), ...(o.deviceExclude ? { exclude: o.deviceExclude } : {}) },
    log,
  });
}

export function serveCommand(): Command {
  const cmd = new Command('serve')
    .description('serve Prometheus metrics of this host (the default command)');
  addWebOptions(cmd);
  cmd.addOption(parsed('--collector.interval <duration>',
    'collect (read the host, the BPF maps, run the model, render) every this long; scrapes serve the latest collection and its age (hybridpoll_snapshot_age_seconds); 0 collects on every scrape, concurrent scrapes sharing one collection',
    durationOrZeroArg, DEFAULT_COLLECTOR_INTERVAL));
  addHostOptions(cmd);
  cmd.action(async (raw: Record<string, unknown>, self: Command) => {
    const o = hostOptionsOf(raw, self);
    const log = createLogger(o.logLevel);
    const webConfigFile = raw['web.config.file'] as string | undefined;
    // An invalid web config ends the command (exit 1, reason on stderr) before anything starts.
    const web = webConfigFile !== undefined ? await import('../http/webServer.js') : undefined;
    if (webConfigFile !== undefined) web!.loadWebConfig(webConfigFile);
    // Loaded here so that --help, --version and the other commands do not load them. The loader
    // starts after them: started first, to overlap its program load with module loading, it made
    // startup to BPF data slower on a busy 2-core machine (paired runs, bench/README.md).
    const [{ createApp }, { ScrapeBodies }, { listenWeb }, { processRegistry }, { EfficiencyModel }] = await Promise.all([
      import('../http/server.js'),
      import('../http/bodies.js'),
      web ?? import('../http/webServer.js'),
      import('../metrics/render.js'),
      import('../model/index.js'),
    ]);
    const intervalSeconds = raw['collector.interval'] as number;
    // A loader that has just come up (at start, or after a restart) is read at once, not at the
    // next tick: the first collection runs before the loader's programs are loaded.
    let refresher: Refresher | undefined;
    const bpf = await bpfSourceOf(o, log, () => refresher?.requestNow());
    const model = o.collectors.model ? new EfficiencyModel({ windowSeconds: o.model.windowSeconds, latencyBudget: o.model.latencyBudget }) : undefined;
    const engine = new SnapshotEngine(liveReader(hostReaderOf(o), bpf, log, o.collectors.bpf), model, log);
    const exposition = { keepEvery: o.bpf.bucketsKeepEvery, fullHistograms: o.bpf.fullHistograms };
    const refresh = intervalSeconds > 0 ? { intervalSeconds, skippedTicks: () => refresher?.skippedTicks ?? 0 } : undefined;
    const bodies = new ScrapeBodies({ bpf: exposition, processMetrics: processRegistry(), ...(refresh ? { refresh } : {}) });
    let source: SnapshotSource = engine;
    if (refresh) {
      // Each collection renders (and deflates) its Prometheus text before it is served; OpenMetrics on first request.
      refresher = new Refresher({ take: () => engine.snapshot(), intervalMs: intervalSeconds * 1000, prepare: (s) => bodies.prepare(s), log });
      refresher.start();
      source = refresher;
    }
    const app = createApp({ source, log, bodies, metricsPath: raw['web.telemetryPath'] as string, ...(refresh ? { refresh } : {}) });
    const addr = raw['web.listenAddress'] as ListenAddress;
    const server = listenWeb(app, { ...addr, metricsPath: raw['web.telemetryPath'] as string, ...(webConfigFile !== undefined ? { configFile: webConfigFile } : {}) }, log);
    server.on('listening', () => {
      const a = server.address();
      const where = typeof a === 'object' && a ? `${a.address}:${a.port}` : String(a);
      log.info('listening', { address: where, version: VERSION, bpf: bpf.status().state, bpf_reason: bpf.status().reason });
    });
    server.on('error', (e) => {
      log.error('cannot listen', { address: `${addr.host}:${addr.port}`, err: e.message });
      process.exit(1);
    });
    const stop = async (signal: string) => {
      log.info('shutting down', { signal });
      refresher?.stop();
      server.close();
      await bpf.stop();
      process.exit(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
  });
  return cmd;
}
