// The Prometheus rules: generated files in step with the source, valid for promtool, every alert
// tested both ways by promtool, mixin conventions, runbook sections, and metric names that exist.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { prometheusRule, ruleFiles, ruleGroups } from '../../deploy/prometheus/src/bundle.js';
import { DEFAULT_CONFIG } from '../../deploy/prometheus/src/config.js';
import { runbookAnchor } from '../../deploy/prometheus/src/runbook.js';
import { staleFiles } from './lib/files.js';
import { documentedSeries, ROOT } from '../helpers/metricsDoc.js';
import { metricNames, PROMETHEUS_SERIES } from './lib/promql.js';
import { requireBinary } from './lib/tools.js';

const promtool = requireBinary('promtool', 'promtool rule checks and unit tests');
const RULE_FILES = ['deploy/prometheus/rules.yaml', 'deploy/prometheus/alerts.yaml'];
const TESTS = 'deploy/prometheus/tests/alerts.test.yaml';

function run(cmd: string, args: string[], cwd = ROOT) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
function anchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')),
  );
}

describe('prometheus rules', () => {
  const groups = ruleGroups(DEFAULT_CONFIG);

  it('committed rule files and PrometheusRule match the generator (npm run rules)', () => {
    expect(staleFiles(ruleFiles(DEFAULT_CONFIG))).toEqual([]);
  });

  it('the PrometheusRule carries exactly the groups of the rule files', () => {
    const fromFiles = RULE_FILES.flatMap((f) => parse(readFileSync(resolve(ROOT, f), 'utf8')).groups);
    expect(prometheusRule(DEFAULT_CONFIG).spec.groups).toEqual(fromFiles);
  });

  it.skipIf(!promtool)('promtool check rules accepts them', () => {
    const r = run(promtool!, ['check', 'rules', ...RULE_FILES]);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain(`SUCCESS: ${groups.recording.rules.length} rules found`);
    expect(r.out).toContain(`SUCCESS: ${groups.alerting.rules.length} rules found`);
  });

  it.skipIf(!promtool)('promtool test rules passes', () => {
    const r = run(promtool!, ['test', 'rules', TESTS]);
    expect(r.status, r.out).toBe(0);
  });

  it('the promtool tests have a firing and a silent case for every alert', () => {
    const tests = parse(readFileSync(resolve(ROOT, TESTS), 'utf8')).tests as { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
    const cases = tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const { alert } of groups.alerting.rules) {
      const mine = cases.filter((c) => c.alertname === alert);
      expect(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${alert} fires somewhere`).toBe(true);
      expect(mine.some((c) => (c.exp_alerts ?? []).length === 0), `${alert} stays silent somewhere`).toBe(true);
    }
  });

  it.skipIf(!promtool)('the promtool tests notice a changed threshold (they can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hybridpoll-rules-'));
    try {
      const cfg = { ...DEFAULT_CONFIG, thresholds: { ...DEFAULT_CONFIG.thresholds, wastedCpuCores: 0.7, efficiencyBusyIops: 3000 } };
      const files = ruleFiles(cfg);
      // The mutated rules with the committed tests.
      for (const f of RULE_FILES) {
        mkdirSync(dirname(join(dir, f)), { recursive: true });
        writeFileSync(join(dir, f), files[f]!);
      }
      cpSync(resolve(ROOT, TESTS), join(dir, TESTS));
      const r = run(promtool!, ['test', 'rules', TESTS], dir);
      expect(r.status).not.toBe(0);
      expect(r.out).toContain('HybridPollWastedCPUHigh');
      expect(r.out).toContain('HybridPollEfficiencyLow');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('alerts follow the mixin conventions', () => {
    for (const r of groups.alerting.rules) {
      expect(r.alert).toMatch(/^HybridPoll[A-Z][A-Za-z]+$/);
      expect(['critical', 'warning', 'info']).toContain(r.labels['severity']);
      expect(r.annotations['summary'], r.alert).toMatch(/\.$/);
      expect(r.annotations['summary'], r.alert).not.toContain('{{');
      expect(r.annotations['description'], r.alert).toContain('{{');
    }
  });

  it('every runbook_url points at a section of docs/runbook.md', () => {
    const have = anchors(readFileSync(resolve(ROOT, 'docs/runbook.md'), 'utf8'));
    for (const r of groups.alerting.rules) {
      expect(r.annotations['runbook_url']).toBe(`docs/runbook.md#${runbookAnchor(r.alert)}`);
      expect(have.has(runbookAnchor(r.alert)), `docs/runbook.md has a heading for ${r.alert}`).toBe(true);
    }
  });

  it('rules read only documented metrics and recorded series', () => {
    const known = documentedSeries();
    const recorded = new Set(groups.recording.rules.map((r) => r.record));
    const all = [...groups.recording.rules, ...groups.alerting.rules];
    const unknown = all.flatMap((r) => metricNames(r.expr).filter((n) => !known.has(n) && !recorded.has(n) && !PROMETHEUS_SERIES.has(n)));
    expect(unknown).toEqual([]);
    // The lexer itself: it finds what is there.
    expect(metricNames('sum by (le) (rate(a_bucket{x="y"}[5m])) / on (d) b * 1e9 and c:d:e')).toEqual(['a_bucket', 'b', 'c:d:e']);
  });
});
