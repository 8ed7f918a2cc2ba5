// `hybridpoll-exporter report`: one-shot analysis per device. Live: a snapshot, a wait, another
// snapshot; or the window at the end of a recording. Rendered as text, JSON or one HTML file.
// The command's options; what it runs is in reportRun.ts.
import { Command, Option } from 'commander';
import { addHostOptions, durationArg } from './common.js';

export const DEFAULT_LIVE_SECONDS = 10;

export function reportCommand(): Command {
  const cmd = new Command('report')
    .description('one-shot analysis per device: current vs optimal sleep, efficiency, wasted CPU, oversleep, what-if table, recommendation')
    .addOption(new Option('--duration <duration>', `live: how long to measure (default ${DEFAULT_LIVE_SECONDS}s); with --from-recording: analyse the last part this long (default: all of it)`).argParser(durationArg))
    .addOption(new Option('--format <format>', 'text table, JSON for machines, or one self-contained HTML file with charts').choices(['text', 'json', 'html']).default('text'))
    .option('--output <file>', 'write the report to this file instead of standard output')
    .option('--from-recording <file>', 'analyse a recording made by `record` instead of this host');
  addHostOptions(cmd);
  // What it runs is loaded when it runs: `serve` does not carry the report's modules.
  cmd.action(async (raw: Record<string, unknown>, self: Command) => (await import('./reportRun.js')).runReport(raw, self));
  return cmd;
}
