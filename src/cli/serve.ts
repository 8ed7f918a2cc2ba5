// `hybridpoll-exporter serve`: the exporter itself.
import { Command } from 'commander';
import { BpfCollector } from '../bpf/collector.js';
import { disabledBpf, type BpfSource } from '../bpf/source.js';
import { createLogger, type Logger } from '../log.js';
import { SnapshotEngine } from '../snapshot/engine.js';
import { liveReader } from '../snapshot/live.js';
import { HostReader } from '../sources/reader.js';
import { VERSION } from '../version.js';
import { addHostOptions, addWebOptions, hostOptionsOf, type HostOptions, type ListenAddress } from './common.js';

export function hostReaderOf(o: HostOptions): HostReader {
  return new HostReader({
    paths: o.paths,
    filter: { ...(o.deviceInclude ? { include: o.deviceInclude } : {}), ...(o.deviceExclude ? { exclude: o.deviceExclude } : {}) },
    collectors: { sysfs: o.collectors.sysfs, debugfs: o.collectors.debugfs, era: o.collectors.era },
  });
}

/** The BPF collector per --bpf.enable and --no-collector.bpf. */
export async function bpfSourceOf(o: HostOptions, log: Logger): Promise<BpfSource> {
  if (!o.collectors.bpf || o.bpf.enable === 'off') return disabledBpf('disabled by flag');
  return BpfCollector.create({
    mode: o.bpf.enable,
    ...(o.bpf.loader ? { loader: o.bpf.loader } : {}),
    timeoutMs: o.bpf.timeoutMs,
    forceTracepoint: o.bpf.forceTracepoint,
    paths: { sysfs: o.paths.sysfs },
    filter: { ...(o.deviceInclude ? { include: o.deviceInclude } : {}), ...(o.deviceExclude ? { exclude: o.deviceExclude } : {}) },
    log,
  });
}

export function serveCommand(): Command {
  const cmd = new Command('serve')
    .description('serve Prometheus metrics of this host (the default command)');
  addWebOptions(cmd);
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
    const [{ createApp }, { listenWeb }, { processRegistry }, { EfficiencyModel }] = await Promise.all([
      import('../http/server.js'),
      web ?? import('../http/webServer.js'),
      import('../metrics/render.js'),
      import('../model/index.js'),
    ]);
    const bpf = await bpfSourceOf(o, log);
    const model = o.collectors.model ? new EfficiencyModel({ windowSeconds: o.model.windowSeconds, latencyBudget: o.model.latencyBudget }) : undefined;
    const engine = new SnapshotEngine(liveReader(hostReaderOf(o), bpf, log, o.collectors.bpf), model, log);
    const app = createApp({ engine, log, processMetrics: processRegistry(), metricsPath: raw['web.telemetryPath'] as string, bpf: { keepEvery: o.bpf.bucketsKeepEvery } });
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
      server.close();
      await bpf.stop();
      process.exit(0);
    };
    process.once('SIGTERM', () => void stop('SIGTERM'));
    process.once('SIGINT', () => void stop('SIGINT'));
  });
  return cmd;
}
