// Imported first by the CLI entry point, before any module allocates much. Read by V8 when it
// next sizes new space or starts a scavenge, so setting them at run time takes effect.
// - Growth factor 1: V8 grows the young generation's semi-spaces (to 16 MiB each on 64-bit) when a
//   scavenge sees many survivors, which a collection's short-lived data (histograms, families, the
//   rendered body) makes it do; the grown spaces stay, as RSS. Factor 1 keeps them at their
//   initial size: more scavenges, each of a smaller space (bench/README.md, "The lean exporter").
// - No parallel scavenge: a scavenge of that small space is over before helper threads pay off;
//   starting them cost a collection at 64 devices about 6 % of its CPU (bench/README.md, "Flat
//   histogram buckets").
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--semi-space-growth-factor=1');
setFlagsFromString('--no-parallel-scavenge');
