#!/usr/bin/env node
// hybridpoll-exporter: command-line entry point.
import './heapTuning.js';
import { Command } from 'commander';
import { serveCommand } from './cli/serve.js';
import { recordCommand } from './cli/record.js';
import { replayCommand } from './cli/replay.js';
import { reportCommand } from './cli/report.js';
import { VERSION } from './version.js';

export function program(): Command {
  const p = new Command('hybridpoll-exporter')
    .description('Prometheus exporter for NVMe hybrid polling: poll state, eBPF sleep/spin timings, and how far the kernel\'s sleep is from the optimum')
    .version(VERSION, '--version')
    .showHelpAfterError('(run with --help for usage)');
  p.addCommand(serveCommand(), { isDefault: true });
  p.addCommand(recordCommand());
  p.addCommand(replayCommand());
  p.addCommand(reportCommand());
  return p;
}

program()
  .parseAsync(process.argv)
  .catch((e: unknown) => {
    process.stderr.write(`hybridpoll-exporter: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
