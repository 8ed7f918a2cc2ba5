// Options shared by the commands that read the host (serve, report, record).
import { Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_MAX_RINGS } from '../bpf/ringLabels.js';
import { LOG_LEVELS, type LogLevel } from '../log.js';
import { DEFAULT_FULL_HISTOGRAMS, parseHistogramList } from '../metrics/bpf.js';
import type { CollectorName } from '../snapshot/types.js';

export const TOGGLABLE: readonly CollectorName[] = ['sysfs', 'debugfs', 'era', 'bpf', 'model'];

export interface HostOptions {
  paths: { sysfs: string; debugfs: string; procfs: string };
  collectors: Record<CollectorName, boolean>;
  deviceInclude?: RegExp;
  deviceExclude?: RegExp;
  logLevel: LogLevel;
  bpf: { enable: 'auto' | 'on' | 'off'; loader?: string; timeoutMs: number; bucketsKeepEvery: number; fullHistograms: string[]; forceTracepoint: boolean; sample: number | 'auto'; cpuBudget: number; maxRings: number };
  model: { windowSeconds: number; latencyBudget: number };
}

const COLLECTOR_HELP: Record<CollectorName, string> = {
  sysfs: 'queue/io_poll, io_poll_delay and the nvme poll_queues parameter',
  debugfs: 'hctx types, poll_stat and hctx io_poll counters (needs root)',
  era: 'kernel era detection from BTF, debugfs and the release string',
  bpf: 'per-I/O sleep, wake and spin timings from eBPF (needs root and BTF)',
  model: 'efficiency model: optimal sleep, efficiency, wasted CPU',
};

export function regexArg(v: string): RegExp {
  try {
    return new RegExp(v);
  } catch (e) {
    throw new InvalidArgumentError(`not a valid regular expression: ${(e as Error).message}`);
  }
}

export function positiveNumber(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

export function positiveInt(v: string): number {
  const n = positiveNumber(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

export function nonNegativeInt(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a non-negative integer');
  return n;
}

/** "60s", "5m", "500ms" or plain seconds → seconds. */
/** --bpf.sample: 1..65536, or auto */
export function sampleArg(v: string): number | 'auto' {
  if (v === 'auto') return 'auto';
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65536) throw new InvalidArgumentError('expected an integer in 1..65536, or auto');
  return n;
}

/** --bpf.cpu-budget: a percentage of one CPU ("0.5%" or "0.5"), as a fraction */
export function budgetArg(v: string): number {
  const n = Number(v.trim().replace(/%$/, ''));
  if (!Number.isFinite(n) || n <= 0 || n > 100) throw new InvalidArgumentError('expected a percentage of one CPU in (0, 100], such as 0.5%');
  return n / 100;
}

export function durationArg(v: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 500ms, 30s, 5m or 1h');
  const n = Number(m[1]);
  const mult = { ms: 0.001, s: 1, m: 60, h: 3600 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  if (n <= 0) throw new InvalidArgumentError('must be longer than zero');
  return n * mult;
}

/** A duration, or 0 (the interval flags' "off"). */
export function durationOrZeroArg(v: string): number {
  return /^0+(\.0+)?(ms|s|m|h)?$/.test(v.trim()) ? 0 : durationArg(v);
}

/** --bpf.histograms: the histograms exposed with all their buckets (see src/metrics/bpf.ts). */
export function histogramListArg(v: string): string[] {
  try {
    return parseHistogramList(v);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

export const DEFAULT_LISTEN = ':9742';

export interface ListenAddress {
  host: string;
  port: number;
}

/** ":9742", "127.0.0.1:9742", "[::1]:9742" → host and port (empty host = all interfaces). */
export function parseListenAddress(v: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new InvalidArgumentError('expected [host]:port, e.g. :9742 or 127.0.0.1:9742');
  return { host: m[1] ?? m[2] ?? '', port };
}

/** An option whose default is written as the user would type it, and parsed like user input. */
export function parsed<T>(flags: string, description: string, parse: (v: string) => T, defaultText: string): Option {
  return new Option(flags, description).argParser(parse).default(parse(defaultText), defaultText);
}

/** The HTTP side of commands that serve metrics (serve, replay). */
export function addWebOptions(cmd: Command): Command {
  return cmd
    .addOption(parsed('--web.listen-address <[host]:port>', 'address to listen on; the default listens on all interfaces', parseListenAddress, DEFAULT_LISTEN))
    .option('--web.telemetry-path <path>', 'path under which to expose metrics', '/metrics')
    .option('--web.config.file <path>', 'exporter-toolkit web config (YAML): TLS, bcrypt basic auth, headers, rate limit; re-read on change');
}

export function addModelOptions(cmd: Command): Command {
  return cmd
    .addOption(parsed('--model.window <duration>', 'sliding window the efficiency model computes over', durationArg, '60s'))
    .addOption(parsed('--model.latency-budget <ratio>', 'added latency allowed for best_static, as a fraction of the mean device time', positiveNumber, '0.01'));
}

export function addLogOption(cmd: Command): Command {
  return cmd.addOption(new Option('--log.level <level>', 'least severe log level to print').choices([...LOG_LEVELS]).default('info'));
}

export function addHostOptions(cmd: Command): Command {
  cmd
    .option('--path.sysfs <dir>', 'sysfs mount point', '/sys')
    .option('--path.debugfs <dir>', 'debugfs mount point', '/sys/kernel/debug')
    .option('--path.procfs <dir>', 'procfs mount point', '/proc')
    .option('--collector.device-include <regexp>', 'only report block devices whose name matches', regexArg)
    .addOption(parsed('--collector.device-exclude <regexp>', 'do not report block devices whose name matches', regexArg, '^(ram|zram|fd)\\d+$'))
    .option('--collector.disable-defaults', 'disable every collector not enabled explicitly with --collector.<name>');
  for (const c of TOGGLABLE) {
    cmd.option(`--collector.${c}`, `enable the ${c} collector: ${COLLECTOR_HELP[c]} (default: on)`);
    cmd.option(`--no-collector.${c}`, `disable the ${c} collector`);
  }
  cmd
    .addOption(new Option('--bpf.enable <mode>', 'eBPF collector: auto uses it when root and BTF allow, on fails loudly if it cannot run, off never loads it')
      .choices(['auto', 'on', 'off']).default('auto'))
    .option('--bpf.loader <path>', 'path of the BPF loader binary (default: the one built with the package)')
    .option('--bpf.force-tracepoint', 'never use fentry/fexit: measure hybrid polling with the tracepoint-only path (see src/bpf/README.md)')
    .addOption(parsed('--bpf.timeout <duration>', 'how long one scrape waits for the BPF loader', durationArg, '1s'))
    .addOption(parsed('--bpf.sample <N|auto>',
      'time 1 in N block completions (I/O, byte, sleep and classification counts stay exact; io_latency is scaled back); auto picks N per collection to keep the programs under --bpf.cpu-budget',
      sampleArg, '1'))
    .addOption(parsed('--bpf.cpu-budget <percent>', 'CPU the BPF programs may use, in % of one CPU: --bpf.sample=auto stays under it, the HybridPollBPFCPUOverBudget alert fires above it', budgetArg, '0.5%'))
    .addOption(parsed('--bpf.max-rings <N>', 'io_uring rings with a ring label of their own (the first seen, while they live); the others are counted together under ring="other"', nonNegativeInt, String(DEFAULT_MAX_RINGS)));
  return addLogOption(addModelOptions(addBpfExpositionOptions(cmd)));
}

/** How /metrics exposes the eBPF histograms: the host commands and replay take these. */
export function addBpfExpositionOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--bpf.buckets <keep>', 'histogram bucket boundaries to expose: all (4 per power of two), half, or pow2 (1 per power of two)')
      .choices(['all', 'half', 'pow2']).default('pow2'))
    .addOption(parsed('--bpf.histograms <list>',
      'histograms exposed with all their buckets: comma-separated names (io_latency, poll_spin, …; the metric name without hybridpoll_ and _seconds), all or none; the others expose only le="+Inf" with _sum and _count, to keep series per device low',
      histogramListArg, DEFAULT_FULL_HISTOGRAMS.join(',')));
}

export function bpfExpositionOf(raw: Raw): { keepEvery: number; fullHistograms: string[] } {
  const keep = raw['bpf.buckets'] as 'all' | 'half' | 'pow2';
  return { keepEvery: { all: 1, half: 2, pow2: 4 }[keep], fullHistograms: raw['bpf.histograms'] as string[] };
}

type Raw = Record<string, unknown>;

/** The host options of a command; exits with a one-line error on a conflicting device filter. */
export function hostOptionsOf(raw: Raw, cmd: Command): HostOptions {
  if (raw['collector.deviceInclude'] && cmd.getOptionValueSource('collector.deviceExclude') === 'cli') {
    cmd.error('error: --collector.device-include and --collector.device-exclude are mutually exclusive');
  }
  const include = raw['collector.deviceInclude'] as RegExp | undefined;
  const excludeSet = raw['collector.deviceExclude'] as RegExp | undefined;
  const onlyExplicit = raw['collector.disableDefaults'] === true;
  const collectors = Object.fromEntries(
    TOGGLABLE.map((c) => {
      const v = raw[`collector.${c}`] as boolean | undefined;
      return [c, v ?? !onlyExplicit];
    }),
  ) as Record<CollectorName, boolean>;
  const exposition = bpfExpositionOf(raw);
  return {
    paths: {
      sysfs: raw['path.sysfs'] as string,
      debugfs: raw['path.debugfs'] as string,
      procfs: raw['path.procfs'] as string,
    },
    collectors,
    // An explicit include list replaces the default exclude list (as node_exporter does).
    ...(include ? { deviceInclude: include } : excludeSet ? { deviceExclude: excludeSet } : {}),
    logLevel: raw['log.level'] as LogLevel,
    bpf: {
      enable: raw['bpf.enable'] as 'auto' | 'on' | 'off',
      ...(raw['bpf.loader'] ? { loader: raw['bpf.loader'] as string } : {}),
      timeoutMs: (raw['bpf.timeout'] as number) * 1000,
      bucketsKeepEvery: exposition.keepEvery,
      fullHistograms: exposition.fullHistograms,
      forceTracepoint: raw['bpf.forceTracepoint'] === true,
      sample: raw['bpf.sample'] as number | 'auto',
      cpuBudget: raw['bpf.cpuBudget'] as number,
      maxRings: raw['bpf.maxRings'] as number,
    },
    model: { windowSeconds: raw['model.window'] as number, latencyBudget: raw['model.latencyBudget'] as number },
  };
}
