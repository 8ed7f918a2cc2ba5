// Prometheus text exposition → samples, and the lookups the VM checks need (deltas between scrapes).
// Pure: no I/O.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export type Scrape = Sample[];

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;

function parseValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

function parseLabels(s: string, line: string): Record<string, string> {
  const inner = s.slice(1, -1);
  const out: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < inner.length) {
    const m = LABEL.exec(inner);
    if (!m) throw new Error(`bad labels in line: ${line}`);
    out[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return out;
}

export function parseExposition(text: string): Scrape {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`bad exposition line: ${line}`);
    out.push({ name: m[1]!, labels: m[2] ? parseLabels(m[2], line) : {}, value: parseValue(m[3]!) });
  }
  return out;
}

function matches(s: Sample, name: string, labels: Record<string, string>): boolean {
  if (s.name !== name) return false;
  for (const [k, v] of Object.entries(labels)) if (s.labels[k] !== v) return false;
  return true;
}

/** All samples of `name` whose labels include `labels`. */
export function select(scrape: Scrape, name: string, labels: Record<string, string> = {}): Sample[] {
  return scrape.filter((s) => matches(s, name, labels));
}

/** The one value of `name`+`labels`; undefined if absent, an error if ambiguous. */
export function value(scrape: Scrape, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = select(scrape, name, labels);
  if (found.length > 1) throw new Error(`${name}${JSON.stringify(labels)} matches ${found.length} series`);
  return found[0]?.value;
}

/** after − before of a counter (absent before = 0: the series appears with the first event). */
export function delta(before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}): number | undefined {
  const a = value(after, name, labels);
  if (a === undefined) return undefined;
  return a - (value(before, name, labels) ?? 0);
}

export interface HistDelta {
  count: number;
  sum: number;
  mean: number;
}

/** Delta of a histogram's _count and _sum between two scrapes. */
export function histDelta(before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}): HistDelta | undefined {
  const count = delta(before, after, `${name}_count`, labels);
  const sum = delta(before, after, `${name}_sum`, labels);
  if (count === undefined || sum === undefined) return undefined;
  return { count, sum, mean: count > 0 ? sum / count : NaN };
}
