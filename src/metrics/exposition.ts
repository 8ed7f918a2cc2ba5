// Direct text exposition of plain metric families: Prometheus text 0.0.4 and OpenMetrics 1.0.
// Byte for byte what prom-client's Registry writes for the same families (test/unit/exposition
// checks that against prom-client itself), at a fraction of its cost: prom-client builds several
// arrays and strings per sample (~4 µs each), which at 30 k series was a third of a scrape.
import { runSteps } from '../steps.js';

export type Format = 'prometheus' | 'openmetrics';

/**
 * What the serializer needs of a family. MetricFamily is one; prom-client's process metrics are
 * converted to it (their label values may be numbers, e.g. `le`, and their type any string).
 */
export interface ExposedFamily {
  name: string;
  help: string;
  type: string;
  samples: readonly { labels?: Partial<Record<string, string | number>>; value: number; suffix?: string }[];
}

/** A family as prom-client's getMetricsAsJSON returns it. */
export interface PromClientFamily {
  name: string;
  help: string;
  type: unknown;
  values: { labels?: Partial<Record<string, string | number>>; value: number; metricName?: string }[];
}

const ESCAPE = /[\\\n]/;
const ESCAPE_LABEL = /[\\\n"]/;

function escapeString(s: string): string {
  return ESCAPE.test(s) ? s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : s;
}

function escapeLabelValue(v: string | number | undefined): string {
  if (typeof v !== 'string') return String(v);
  return ESCAPE_LABEL.test(v) ? escapeString(v).replace(/"/g, '\\"') : v;
}

/** As prom-client: NaN is written `Nan` (Prometheus parses it case-insensitively). */
function valueString(v: number): string {
  if (Number.isNaN(v)) return 'Nan';
  if (!Number.isFinite(v)) return v < 0 ? '-Inf' : '+Inf';
  return `${v}`;
}

/**
 * `name="value"` pairs, formatted once per serialize() call: the same device names and `le`
 * boundaries recur on thousands of samples, and a flat cached string is cheaper than a new one.
 */
class PairCache {
  private readonly byName = new Map<string, Map<string | number | undefined, string>>();

  pair(name: string, value: string | number | undefined): string {
    let values = this.byName.get(name);
    if (!values) this.byName.set(name, (values = new Map()));
    let p = values.get(value);
    if (p === undefined) values.set(value, (p = `${name}="${escapeLabelValue(value)}"`));
    return p;
  }
}

function labelString(labels: Partial<Record<string, string | number>> | undefined, pairs: PairCache): string {
  let out = '';
  for (const k in labels) out = out === '' ? '{' + pairs.pair(k, labels[k]) : out + ',' + pairs.pair(k, labels[k]);
  return out === '' ? '' : out + '}';
}

/** Appends a family's lines. One flat array joined once: appending to a string instead built
 * ropes tens of thousands deep whose flattening and garbage cost more than the formatting. */
function familyLines(f: ExposedFamily, openMetrics: boolean, lines: string[], pairs: PairCache): void {
  // OpenMetrics names a counter family without `_total` and its samples with it.
  const counter = openMetrics && f.type === 'counter';
  const name = escapeString(counter ? f.name.replace(/_total$/, '') : f.name);
  lines.push(`# HELP ${name} ${escapeString(f.help)}`, `# TYPE ${name} ${f.type}`);
  const plain = counter ? `${name}_total` : name;
  for (const s of f.samples) {
    lines.push(`${s.suffix ? f.name + s.suffix : plain}${labelString(s.labels, pairs)} ${valueString(s.value)}`);
  }
}

/** prom-client's JSON shape to ours: a histogram sample's full series name becomes its suffix. */
export function fromPromClient(m: PromClientFamily): ExposedFamily {
  return {
    name: m.name,
    help: m.help,
    type: String(m.type),
    samples: m.values.map((v) => ({
      value: v.value,
      ...(v.labels ? { labels: v.labels } : {}),
      ...(v.metricName?.startsWith(m.name) && v.metricName !== m.name ? { suffix: v.metricName.slice(m.name.length) } : {}),
    })),
  };
}

/**
 * The exposition body. Families without samples are left out; two families of one name are a
 * bug (prom-client refused the second registration), so they throw and the scrape answers 500.
 */
export function serialize(families: readonly ExposedFamily[], format: Format): string {
  return runSteps(serializeSteps(families, format));
}

/**
 * serialize() one family at a time: yields after each family, so the refresh loop can let a scrape
 * in between them (src/steps.ts).
 */
export function* serializeSteps(families: readonly ExposedFamily[], format: Format): Generator<void, string> {
  const openMetrics = format === 'openmetrics';
  const seen = new Set<string>();
  const lines: string[] = [];
  const pairs = new PairCache();
  for (const f of families) {
    if (f.samples.length === 0) continue;
    if (seen.has(f.name)) throw new Error(`metric family ${f.name} exposed twice`);
    // Prometheus text separates families with a blank line, as prom-client did.
    if (seen.size > 0 && !openMetrics) lines.push('');
    seen.add(f.name);
    familyLines(f, openMetrics, lines, pairs);
    yield;
  }
  // With no family at all prom-client still wrote the separator: an empty line before the end.
  return `${lines.join('\n')}\n${openMetrics ? '# EOF\n' : ''}`;
}
