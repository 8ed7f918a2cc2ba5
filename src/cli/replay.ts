// `hybridpoll-exporter replay [FILE]`: serves /metrics, / and /healthz from a recording as if it
// were live, through the same snapshot engine, model stage and HTTP app as `serve`.
// The command's options; what it runs is in replayRun.ts.
import { Command, Option } from 'commander';
import { SYNTHETIC_RECORDING } from '../record/shipped.js';
import { addBpfExpositionOptions, addLogOption, addModelOptions, addWebOptions, parsed, positiveNumber } from './common.js';

export function replayCommand(): Command {
  const cmd = new Command('replay')
    .description('serve /metrics from a recording as if it were live (default: the shipped synthetic recording)')
    .argument('[file]', `recording made by \`record\` (JSON lines); default: the shipped synthetic one, ${SYNTHETIC_RECORDING}`)
    .addOption(new Option('--loop', 'start over at the end, with counters continuing upwards (default)'))
    .addOption(new Option('--once', 'play the recording once, then keep serving its last frame').conflicts('loop'))
    .addOption(parsed('--speed <factor>', 'recording seconds per wall-clock second; rates (and the model\'s IOPS and cores) scale with it', positiveNumber, '1'));
  addLogOption(addModelOptions(addBpfExpositionOptions(addWebOptions(cmd))));
  // What it runs is loaded when it runs: `serve` does not carry the replayer's modules.
  cmd.action(async (given: string | undefined, raw: Record<string, unknown>, self: Command) => (await import('./replayRun.js')).runReplay(given, raw, self));
  return cmd;
}
