// The dashboards: committed JSON and ConfigMaps in step with the generator, every panel with a
// unit, a description and queries, every query on documented metrics or recorded series only.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_CONFIG } from '../../deploy/prometheus/src/config.js';
import { DASHBOARDS, dashboardFiles } from '../../dashboards/src/index.js';
import { panelsOf, type DashboardJson } from './lib/dashboards.js';
import { staleFiles } from './lib/files.js';
import { documentedSeries, ROOT } from '../helpers/metricsDoc.js';
import { isProcessMetric, metricNames, PROMETHEUS_SERIES } from './lib/promql.js';

const committed = Object.keys(DASHBOARDS).map(
  (name) => JSON.parse(readFileSync(resolve(ROOT, `dashboards/${name}.json`), 'utf8')) as DashboardJson,
);
const recorded = new Set(
  (parse(readFileSync(resolve(ROOT, 'deploy/prometheus/rules.yaml'), 'utf8')).groups as { rules: { record: string }[] }[])
    .flatMap((g) => g.rules.map((r) => r.record)),
);

describe('dashboards', () => {
  it('committed JSON and ConfigMaps match the generator (npm run dashboards)', () => {
    expect(staleFiles(dashboardFiles(DEFAULT_CONFIG))).toEqual([]);
  });

  it('cover what the issue asks for', () => {
    const titles = Object.fromEntries(committed.map((d) => [d.uid, panelsOf(d).map((p) => p.title)]));
    expect(titles['hybridpoll-fleet']).toEqual(expect.arrayContaining(['Wasted CPU by node and device', 'Efficiency distribution', 'Worst devices', 'Overslept I/Os']));
    expect(titles['hybridpoll-device']).toEqual(expect.arrayContaining(['Kernel\'s sleep vs optimal sleep', 'I/O latency', 'Sleep, wake and spin per polled I/O', 'What-if: every policy on this device', 'Hardware queues']));
    expect(titles['hybridpoll-exporter-health']).toEqual(expect.arrayContaining(['Collector success', 'BPF programs attached', 'BPF loader restarts', 'Scrape duration']));
    const heatmap = panelsOf(committed.find((d) => d.uid === 'hybridpoll-device')!).find((p) => p.type === 'heatmap')!;
    expect(heatmap.targets![0]!.expr).toContain('hybridpoll_io_latency_seconds_bucket');
  });

  for (const d of committed) {
    describe(d.title, () => {
      const panels = panelsOf(d);

      it('has datasource, node and (except health) device variables', () => {
        const vars = d.templating.list.map((v) => v.name);
        expect(vars.slice(0, 2)).toEqual(['datasource', 'node']);
        if (d.uid !== 'hybridpoll-exporter-health') expect(vars).toContain('device');
      });

      it('every panel has a title, description, unit, the datasource variable and queries', () => {
        expect(panels.length).toBeGreaterThan(5);
        for (const p of panels) {
          const where = `${d.title} / ${p.title ?? '(untitled)'}`;
          expect(p.title, where).toBeTruthy();
          expect((p.description ?? '').length, `${where}: description`).toBeGreaterThan(20);
          expect(p.fieldConfig?.defaults?.unit, `${where}: unit`).toBeTruthy();
          expect(p.datasource, where).toEqual({ type: 'prometheus', uid: '${datasource}' });
          expect(p.targets?.length, `${where}: queries`).toBeGreaterThan(0);
          for (const t of p.targets!) expect(t.expr, where).toBeTruthy();
        }
        expect(new Set(panels.map((p) => p.title)).size, 'panel titles are unique').toBe(panels.length);
      });

      it('queries only documented metrics, recorded series and Prometheus\' own series', () => {
        const exprs = [
          ...panels.flatMap((p) => p.targets!.map((t) => ({ where: p.title, expr: t.expr! }))),
          ...d.templating.list.filter((v) => typeof v.query === 'string' && v.type === 'query')
            .map((v) => ({ where: `variable ${v.name}`, expr: (v.query as string).replace(/^label_values\((.*),\s*\w+\)$/, '$1') })),
        ];
        const known = documentedSeries();
        const unknown = exprs.flatMap(({ where, expr }) =>
          metricNames(expr)
            .filter((n) => !known.has(n) && !recorded.has(n) && !PROMETHEUS_SERIES.has(n) && !isProcessMetric(n))
            .map((n) => `${where}: ${n}`));
        expect(unknown).toEqual([]);
        // Every query reads at least one series.
        for (const { where, expr } of exprs) expect(metricNames(expr).length, `${where}: ${expr}`).toBeGreaterThan(0);
      });

      it('selects the exporter\'s job and the node variable in every query', () => {
        for (const p of panels) {
          for (const t of p.targets!) {
            expect(t.expr, p.title).toContain(DEFAULT_CONFIG.selector);
            expect(t.expr, p.title).toContain('instance=~"$node"');
          }
        }
      });
    });
  }

  it('the ConfigMaps carry the sidecar label and the same dashboards', () => {
    const docs = readFileSync(resolve(ROOT, 'deploy/kubernetes/base/grafana-dashboards.yaml'), 'utf8').split(/^---$/m).map((t) => parse(t));
    expect(docs).toHaveLength(committed.length);
    for (const m of docs) {
      expect(m.metadata.labels.grafana_dashboard).toBe('1');
      const [file, json] = Object.entries(m.data as Record<string, string>)[0]!;
      expect(file).toMatch(/^hybridpoll-.*\.json$/);
      expect(committed.map((d) => d.uid)).toContain(JSON.parse(json).uid);
    }
  });
});
