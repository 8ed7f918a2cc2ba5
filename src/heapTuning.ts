// Imported first by the CLI entry point, before any module allocates much. V8 grows the young
// generation's semi-spaces (to 16 MiB each on 64-bit) when a scavenge sees many survivors, which a
// collection's short-lived data (histograms, families, the rendered body) makes it do; the grown
// spaces stay, as RSS. Growth factor 1 keeps them at their initial size: more scavenges, each of a
// smaller space (bench/README.md, "The lean exporter": RSS and collection CPU, paired).
// Read by V8 when it next sizes new space, so setting it at run time takes effect.
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--semi-space-growth-factor=1');
