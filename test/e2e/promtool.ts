// Lints an exposition body with the real promtool, whole (prom-client's process_* and nodejs_*
// included). The Prometheus text goes to `promtool check metrics`. promtool 2.42's linter reads
// only that format (on OpenMetrics it reports "no help text" for every counter, whose family name
// lacks `_total` there by the spec), so an OpenMetrics body is parsed by Prometheus's own
// OpenMetrics parser instead (`promtool tsdb create-blocks-from openmetrics`, which wants a
// timestamp per sample: one is appended) and must hold the same families as the linted text.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PROMTOOL = '/usr/bin/promtool';
export const HAVE_PROMTOOL = existsSync(PROMTOOL);

export interface LintResult {
  status: number | null;
  /** promtool's complaints, empty when clean */
  output: string;
}

export function checkMetrics(text: string): LintResult {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Prometheus's OpenMetrics parser over the body (it requires `# EOF` and well-formed families). */
export function parseOpenMetrics(text: string): LintResult {
  const dir = mkdtempSync(join(tmpdir(), 'hybridpoll-om-'));
  try {
    const ts = Math.floor(Date.now() / 1000);
    const stamped = text.split('\n').map((l) => (l === '' || l.startsWith('#') ? l : `${l} ${ts}`)).join('\n');
    writeFileSync(join(dir, 'body.om'), stamped);
    const r = spawnSync(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', join(dir, 'body.om'), join(dir, 'blocks')], { encoding: 'utf8' });
    return { status: r.status, output: r.status === 0 ? '' : `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * familyTypes of the families that have at least one sample. A family without samples (prom-client's
 * nodejs_active_requests when no request is in flight at that instant) may be printed with its TYPE
 * line or left out, so two scrapes may differ in it either way.
 */
export function sampledFamilyTypes(text: string): string[] {
  const sampled = new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)?.[0] ?? ''));
  // familyTypes names a counter by its _total sample; its samples may carry any of these suffixes
  const has = (n: string) => ['', '_total', '_bucket', '_count', '_sum', '_created', '_info'].some((s) => sampled.has(n + s));
  return familyTypes(text).filter((f) => has(f.split(' ')[0]!.replace(/_total$/, '')));
}

/** `name type` of each `# TYPE` line; OpenMetrics counters get back the `_total` the text format names them with. */
export function familyTypes(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, n, t]) => (t === 'counter' && !n!.endsWith('_total') ? `${n}_total ${t}` : `${n} ${t}`)).sort();
}
