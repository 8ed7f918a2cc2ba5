// Metric names a PromQL expression reads, for checking dashboards and rules against the contract.
// A small lexer, not a parser: it drops strings, matchers, ranges and grouping label lists, then
// keeps identifiers that are neither function calls, keywords nor numbers.

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

export function metricNames(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/(?<![\w:])\d+(\.\d+)?(e[+-]?\d+)?(?![\w:])/gi, ' ');
  const names = new Set<string>();
  for (const m of e.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2]) continue;
    if (KEYWORDS.has(m[1]!.toLowerCase())) continue;
    names.add(m[1]!);
  }
  return [...names];
}

/** Series Prometheus itself adds to every target; dashboards may use them. */
export const PROMETHEUS_SERIES = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);

/** prom-client's default process_* and nodejs_* metrics, listed in docs/metrics.md as a family. */
export function isProcessMetric(name: string): boolean {
  return name.startsWith('process_') || name.startsWith('nodejs_');
}
