// `npm run rules [-- --flag value ...]`: writes the recording and alerting rule files and the
// PrometheusRule from one source. Every threshold is a flag; defaults are in config.ts.
import { Command, InvalidArgumentError } from 'commander';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ruleFiles } from './bundle.js';
import { DEFAULT_CONFIG, type BundleConfig, type Thresholds } from './config.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

function num(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a non-negative number');
  return n;
}

function dur(v: string): string {
  if (!/^(\d+(ms|s|m|h|d|w|y))+$/.test(v)) throw new InvalidArgumentError('expected a Prometheus duration such as 30s, 15m or 1h');
  return v;
}

/** Flag, threshold key, help: the documented interface of the generator (see docs/deploy.md). */
export const THRESHOLD_FLAGS: [string, keyof Thresholds, string, (v: string) => number | string][] = [
  ['--wasted-cpu-cores', 'wastedCpuCores', 'HybridPollWastedCPUHigh: wasted cores per node', num],
  ['--wasted-cpu-for', 'wastedCpuFor', 'HybridPollWastedCPUHigh: for', dur],
  ['--oversleep-latency-ratio', 'oversleepLatencyRatio', 'HybridPollOversleepAddsLatency: added latency / mean latency', num],
  ['--oversleep-for', 'oversleepFor', 'HybridPollOversleepAddsLatency: for', dur],
  ['--efficiency-min', 'efficiencyMin', 'HybridPollEfficiencyLow: efficiency below this', num],
  ['--efficiency-busy-iops', 'efficiencyBusyIops', 'HybridPollEfficiencyLow: only above this many polled I/Os per second', num],
  ['--efficiency-for', 'efficiencyFor', 'HybridPollEfficiencyLow: for', dur],
  ['--poll-queues-missing-for', 'noPollQueuesFor', 'HybridPollNoPollQueues: for', dur],
  ['--hybrid-ineffective-for', 'hybridIneffectiveFor', 'HybridPollHybridIneffective: for', dur],
  ['--bpf-down-for', 'bpfDownFor', 'HybridPollBPFCollectorDown and HybridPollBPFProgramDetached: for', dur],
  ['--loader-restarts-for', 'loaderRestartsFor', 'HybridPollBPFLoaderRestarting: for', dur],
  ['--bpf-cpu-for', 'bpfCpuFor', 'HybridPollBPFCPUOverBudget: for', dur],
  ['--exporter-down-for', 'exporterDownFor', 'HybridPollExporterDown: for', dur],
  ['--snapshot-stale-for', 'snapshotStaleFor', 'HybridPollSnapshotStale: for', dur],
];

export function configCommand(name: string, description: string): Command {
  const cmd = new Command(name)
    .description(description)
    .option('--selector <matchers>', 'label matchers selecting the exporter\'s series', DEFAULT_CONFIG.selector)
    .option('--node-label <label>', 'label naming the node', DEFAULT_CONFIG.nodeLabel)
    .option('--cluster-label <label>', 'label naming the cluster', DEFAULT_CONFIG.clusterLabel)
    .option('--multi-cluster', 'add a cluster variable to the dashboards', DEFAULT_CONFIG.multiCluster)
    .option('--rate-window <duration>', 'rate() window of the recording rules', dur, DEFAULT_CONFIG.rateWindow)
    .option('--bpf-optional-programs <regexp>', 'BPF programs that may be detached without an alert (the fentry poll path)', DEFAULT_CONFIG.bpfOptionalPrograms)
    .option('--runbook-url-pattern <url>', 'runbook_url of each alert; %s = lower-cased alert name', DEFAULT_CONFIG.runbookUrlPattern)
    .option('--out <dir>', 'repository root to write into', REPO_ROOT);
  for (const [flag, key, help, parse] of THRESHOLD_FLAGS) {
    cmd.option(`${flag} <value>`, help, parse, DEFAULT_CONFIG.thresholds[key]);
  }
  return cmd;
}

export function configOf(o: Record<string, unknown>): BundleConfig {
  const thresholds = { ...DEFAULT_CONFIG.thresholds };
  for (const [flag, key] of THRESHOLD_FLAGS) {
    const camel = flag.slice(2).replace(/-([a-z])/g, (_m, ch: string) => ch.toUpperCase());
    (thresholds as Record<string, unknown>)[key] = o[camel];
  }
  return {
    ...DEFAULT_CONFIG,
    selector: o['selector'] as string,
    nodeLabel: o['nodeLabel'] as string,
    clusterLabel: o['clusterLabel'] as string,
    multiCluster: o['multiCluster'] as boolean,
    rateWindow: o['rateWindow'] as string,
    bpfOptionalPrograms: o['bpfOptionalPrograms'] as string,
    runbookUrlPattern: o['runbookUrlPattern'] as string,
    thresholds,
  };
}

export async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, text] of Object.entries(files)) {
    const path = join(root, rel);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
    process.stdout.write(`wrote ${rel}\n`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cmd = configCommand('rules', 'generate the Prometheus recording and alerting rules and the PrometheusRule');
  cmd.action(async (o: Record<string, unknown>) => writeFiles(o['out'] as string, ruleFiles(configOf(o))));
  await cmd.parseAsync(process.argv);
}
