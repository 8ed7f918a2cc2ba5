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

/**
 * The body's UTF-8 bytes, written a line at a time into a growing buffer. Each line's string dies
 * as soon as it is written: kept in an array to be joined at the end, the lines of a 64-device
 * body (1.1 MB) outlived V8's young-generation collections and were copied and promoted by each,
 * and the joined string was copied once more into a Buffer (bench/README.md, "Collection CPU at
 * 64 devices").
 */
class LineWriter {
  private buf: Buffer;
  private len = 0;

  /** expectedBytes: about the body's size (the last one's, for a collection), so that it is allocated once, not doubled up to */
  constructor(expectedBytes: number) {
    this.buf = Buffer.allocUnsafe(Math.ceil(expectedBytes * 1.05) + 4096);
  }

  line(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit, plus the newline
    const need = this.len + 3 * text.length + 1;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, need));
      this.buf.copy(grown, 0, 0, this.len);
      this.buf = grown;
    }
    this.len += this.buf.write(text, this.len);
    this.buf[this.len++] = 0x0a;
  }

  /** The bytes written; copied to a buffer of their own size when the slack is large. */
  bytes(): Buffer {
    const used = this.buf.subarray(0, this.len);
    return this.len >= 0.875 * this.buf.length ? used : Buffer.from(used);
  }
}

/** Writes a family's lines. */
function familyLines(f: ExposedFamily, openMetrics: boolean, out: LineWriter, pairs: PairCache): void {
  // OpenMetrics names a counter family without `_total` and its samples with it.
  const counter = openMetrics && f.type === 'counter';
  const name = escapeString(counter ? f.name.replace(/_total$/, '') : f.name);
  out.line(`# HELP ${name} ${escapeString(f.help)}`);
  out.line(`# TYPE ${name} ${f.type}`);
  const plain = counter ? `${name}_total` : name;
  for (const s of f.samples) {
    out.line(`${s.suffix ? f.name + s.suffix : plain}${labelString(s.labels, pairs)} ${valueString(s.value)}`);
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
  return runSteps(serializeSteps(families, format)).toString('utf8');
}

/**
 * serialize() one family at a time, as UTF-8 bytes: yields after each family, so the refresh loop
 * can let a scrape in between them (src/steps.ts). expectedBytes: about the body's size, if known.
 */
export function* serializeSteps(families: readonly ExposedFamily[], format: Format, expectedBytes = 0): Generator<void, Buffer> {
  const openMetrics = format === 'openmetrics';
  const seen = new Set<string>();
  const out = new LineWriter(expectedBytes);
  const pairs = new PairCache();
  for (const f of families) {
    if (f.samples.length === 0) continue;
    if (seen.has(f.name)) throw new Error(`metric family ${f.name} exposed twice`);
    // Prometheus text separates families with a blank line, as prom-client did.
    if (seen.size > 0 && !openMetrics) out.line('');
    seen.add(f.name);
    familyLines(f, openMetrics, out, pairs);
    yield;
  }
  // With no family at all prom-client still wrote the separator: an empty line before the end.
  if (seen.size === 0) out.line('');
  if (openMetrics) out.line('# EOF');
  return out.bytes();
}
