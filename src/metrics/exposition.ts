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

/**
 * The body's UTF-8 bytes, written a part at a time into a growing buffer. A sample's line is never
 * built as a string: its name, cached label pairs and value are copied in as they are, ASCII by a
 * plain loop. Kept in an array to be joined at the end, the lines of a 64-device body (1.1 MB)
 * outlived V8's young-generation collections and were copied and promoted by each; built one at a
 * time, each line and its label string were still a quarter of a collection's allocation, and
 * every scavenge that allocation triggers copies whatever else of the collection is live
 * (bench/README.md, "Collection CPU at 64 devices", "Exposition without line strings").
 */
class LineWriter {
  private buf: Buffer;
  private len = 0;

  /** expectedBytes: about the body's size (the last one's, for a collection), so that it is allocated once, not doubled up to */
  constructor(expectedBytes: number) {
    this.buf = Buffer.allocUnsafe(Math.ceil(expectedBytes * 1.05) + 4096);
  }

  /** Room for n more bytes. */
  private room(n: number): void {
    const need = this.len + n;
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, need));
      this.buf.copy(grown, 0, 0, this.len);
      this.buf = grown;
    }
  }

  /** Appends text as UTF-8: byte by byte while it is ASCII, the rest by Buffer.write. */
  text(t: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit
    this.room(3 * t.length);
    const buf = this.buf;
    let len = this.len;
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c > 0x7f) {
        len += buf.write(t.slice(i), len);
        break;
      }
      buf[len++] = c;
    }
    this.len = len;
  }

  /** Appends one ASCII character. */
  char(code: number): void {
    this.room(1);
    this.buf[this.len++] = code;
  }

  line(text: string): void {
    this.text(text);
    this.char(0x0a);
  }

  /** The bytes written; copied to a buffer of their own size when the slack is large. */
  bytes(): Buffer {
    const used = this.buf.subarray(0, this.len);
    return this.len >= 0.875 * this.buf.length ? used : Buffer.from(used);
  }
}

const OPEN_BRACE = 0x7b;
const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;
const SPACE = 0x20;
const NEWLINE = 0x0a;

/** Writes a family's lines. */
function familyLines(f: ExposedFamily, openMetrics: boolean, out: LineWriter, pairs: PairCache): void {
  // OpenMetrics names a counter family without `_total` and its samples with it.
  const counter = openMetrics && f.type === 'counter';
  const name = escapeString(counter ? f.name.replace(/_total$/, '') : f.name);
  out.line(`# HELP ${name} ${escapeString(f.help)}`);
  out.line(`# TYPE ${name} ${f.type}`);
  for (const s of f.samples) {
    if (s.suffix) {
      out.text(f.name);
      out.text(s.suffix);
    } else {
      out.text(name);
      if (counter) out.text('_total');
    }
    let sep = OPEN_BRACE;
    const labels = s.labels;
    for (const k in labels) {
      out.char(sep);
      out.text(pairs.pair(k, labels[k]));
      sep = COMMA;
    }
    if (sep === COMMA) out.char(CLOSE_BRACE);
    out.char(SPACE);
    out.text(valueString(s.value));
    out.char(NEWLINE);
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
export function* serializeSteps(families: Iterable<ExposedFamily>, format: Format, expectedBytes = 0): Generator<void, Buffer> {
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
