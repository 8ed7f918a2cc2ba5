// Imported first by the CLI entry point, before any module allocates much. Read by V8 when it
// next sizes new space or starts a scavenge, so setting them at run time takes effect.
// - Growth factor 1: V8 grows the young generation's semi-spaces (to 16 MiB each on 64-bit) when a
//   scavenge sees many survivors, which a collection's short-lived data (histograms, families, the
//   rendered body) makes it do; the grown spaces stay, as RSS. Factor 1 keeps them at their
//   initial size: more scavenges, each of a smaller space (bench/README.md, "The lean exporter").
//   Left as V8 has it when the user sizes the young generation (NODE_OPTIONS or node's command
//   line): `--max-semi-space-size=8` trades about 15 MiB of RSS for a fifth less CPU per
//   collection at 64 devices (bench/README.md, "Young generation size").
// - No parallel scavenge: a scavenge of that small space is over before helper threads pay off;
//   starting them cost a collection at 64 devices about 6 % of its CPU (bench/README.md, "Flat
//   histogram buckets").
import { setFlagsFromString } from 'node:v8';

/** Whether node's own flags (command line or NODE_OPTIONS) size the young generation. */
export function youngGenerationSized(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((a) => /^--(max|min)[-_]semi[-_]space[-_]size\b/.test(a));
}

if (!youngGenerationSized(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString('--semi-space-growth-factor=1');
setFlagsFromString('--no-parallel-scavenge');
