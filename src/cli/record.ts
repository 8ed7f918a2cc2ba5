// `hybridpoll-exporter record`: takes live snapshots (the readers `serve` uses: files and BPF) at an
// interval and writes them as a recording, for replay, report, bug reports and dashboards.
// The command's options; what it runs is in recordRun.ts.
import { Command, Option } from 'commander';
import { addHostOptions, durationArg, parsed, positiveInt } from './common.js';

/** How long to wait for the BPF loader before the first snapshot (it loads in about 0.3–2 s). */
export const BPF_START_TIMEOUT_MS = 15_000;

export function recordCommand(): Command {
  const cmd = new Command('record')
    .description('write live snapshots to a recording (JSON lines) for replay and report; stops on --count, --duration, SIGINT or SIGTERM')
    .addOption(parsed('--interval <duration>', 'time between snapshots', durationArg, '5s'))
    .addOption(new Option('--duration <duration>', 'stop after this long (default: until interrupted)').argParser(durationArg).conflicts('count'))
    .addOption(new Option('--count <n>', 'stop after this many snapshots').argParser(positiveInt))
    .option('--output <file>', 'where to write the recording; - for standard output', 'hybridpoll-recording.jsonl')
    .option('--description <text>', 'free text stored in the recording header', '');
  addHostOptions(cmd);
  // What it runs is loaded when it runs: `serve` does not carry the recorder's modules.
  cmd.action(async (raw: Record<string, unknown>, self: Command) => (await import('./recordRun.js')).runRecord(raw, self));
  return cmd;
}
