// Shared pieces of the dashboards: label selectors from the bundle config (mixin style), template
// variables, Prometheus targets and the few panel settings every panel must carry.
import * as common from '@grafana/grafana-foundation-sdk/common';
import {
  DashboardBuilder,
  DatasourceVariableBuilder,
  QueryVariableBuilder,
  VariableRefresh,
  VariableSort,
  type DataTransformerConfig,
  type ValueMapping,
  MappingType,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { DataqueryBuilder, PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus';
import type { BundleConfig } from '../../deploy/prometheus/src/config.js';

export const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** Grafana has no unit for CPU cores; a custom suffix keeps the axis honest. */
export const CORES = 'suffix: cores';

/** Label matchers of the exporter's series on the selected nodes (and devices). */
export class Selectors {
  constructor(readonly c: BundleConfig) {}

  private base(): string[] {
    const m = [this.c.selector];
    if (this.c.multiCluster) m.push(`${this.c.clusterLabel}=~"$cluster"`);
    return m;
  }

  /** {selector, node=~"$node", ...extra} */
  node(...extra: string[]): string {
    return `{${[...this.base(), `${this.c.nodeLabel}=~"$node"`, ...extra].join(', ')}}`;
  }

  /** {selector, node=~"$node", device=~"$device", ...extra} */
  device(...extra: string[]): string {
    return this.node('device=~"$device"', ...extra);
  }

  /** The labels that identify one device series after aggregation, for `on (...)` joins. */
  deviceKey(): string {
    return [this.c.clusterLabel, 'job', this.c.nodeLabel, 'device'].join(', ');
  }

  variables(opts: { multi: boolean; device?: boolean }): (DatasourceVariableBuilder | QueryVariableBuilder)[] {
    const c = this.c;
    const vars: (DatasourceVariableBuilder | QueryVariableBuilder)[] = [
      new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'),
    ];
    const labelValues = (name: string, label: string, query: string, help: string, multi: boolean) =>
      new QueryVariableBuilder(name)
        .label(label)
        .description(help)
        .datasource(DATASOURCE)
        .query(query)
        .definition(query)
        .refresh(VariableRefresh.OnTimeRangeChanged)
        .sort(VariableSort.AlphabeticalAsc)
        .multi(multi)
        .includeAll(multi);
    if (c.multiCluster) {
      const q = `label_values(hybridpoll_build_info{${c.selector}}, ${c.clusterLabel})`;
      vars.push(labelValues('cluster', 'Cluster', q, `Value of the ${c.clusterLabel} label`, false));
    }
    const clusterMatch = c.multiCluster ? `, ${c.clusterLabel}=~"$cluster"` : '';
    vars.push(labelValues('node', 'Node', `label_values(hybridpoll_build_info{${c.selector}${clusterMatch}}, ${c.nodeLabel})`,
      `Nodes running the exporter (label ${c.nodeLabel})`, opts.multi));
    if (opts.device !== false) {
      vars.push(labelValues('device', 'Device', `label_values(hybridpoll_device_info{${c.selector}${clusterMatch}, ${c.nodeLabel}=~"$node"}, device)`,
        'Block devices of the selected nodes', opts.multi));
    }
    return vars;
  }
}

export interface Query {
  expr: string;
  legend?: string;
  /** Instant query: tables and current-value panels. */
  instant?: boolean;
  format?: 'table' | 'heatmap';
}

export function targets(qs: Query[]): DataqueryBuilder[] {
  return qs.map((q, i) => {
    const t = new DataqueryBuilder().refId(String.fromCharCode(65 + i)).expr(q.expr).datasource(DATASOURCE);
    if (q.legend !== undefined) t.legendFormat(q.legend);
    if (q.instant) t.instant();
    else t.range();
    if (q.format === 'table') t.format(PromQueryFormat.Table);
    if (q.format === 'heatmap') t.format(PromQueryFormat.Heatmap);
    return t;
  });
}

/** What every panel carries: title, description, unit, datasource, size. */
export interface PanelSpec {
  title: string;
  description: string;
  unit: string;
  queries: Query[];
  width?: number;
  height?: number;
}

interface PanelLike {
  title(t: string): unknown;
  description(d: string): unknown;
  unit(u: string): unknown;
  datasource(d: { type: string; uid: string }): unknown;
  span(w: number): unknown;
  height(h: number): unknown;
  targets(t: DataqueryBuilder[]): unknown;
}

export function setup<P extends PanelLike>(p: P, s: PanelSpec): P {
  p.title(s.title);
  p.description(s.description);
  p.unit(s.unit);
  p.datasource(DATASOURCE);
  p.span(s.width ?? 12);
  p.height(s.height ?? 8);
  p.targets(targets(s.queries));
  return p;
}

export function legendTable(): common.VizLegendOptionsBuilder {
  return new common.VizLegendOptionsBuilder()
    .showLegend(true)
    .displayMode(common.LegendDisplayMode.Table)
    .placement(common.LegendPlacement.Bottom)
    .calcs(['mean', 'lastNotNull', 'max']);
}

export function lastValue(): common.ReduceDataOptionsBuilder {
  return new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false);
}

export function valueText(map: Record<string, string>): ValueMapping[] {
  const options: Record<string, { text: string; index: number }> = {};
  Object.entries(map).forEach(([k, text], index) => (options[k] = { text, index }));
  return [{ type: MappingType.ValueToText, options }];
}

/** Instant table queries to one row per series: keep the identifying labels and the values (so
 *  __name__, Time and job cannot stop rows of different queries from joining), merge, rename. */
export function tableTransforms(rename: Record<string, string>, keep: string[]): DataTransformerConfig[] {
  const order: Record<string, number> = {};
  [...keep, ...Object.keys(rename)].forEach((k, i) => (order[k] = i));
  return [
    { id: 'filterFieldsByName', options: { include: { names: [...keep, ...Object.keys(rename)] } } },
    { id: 'merge', options: {} },
    { id: 'organize', options: { renameByName: rename, indexByName: order, excludeByName: {} } },
  ];
}

export function dashboard(c: BundleConfig, key: string, title: string, description: string): DashboardBuilder {
  return new DashboardBuilder(`${c.dashboardTitlePrefix}${title}`)
    .uid(`${c.dashboardUidPrefix}${key}`)
    .description(description)
    .tags(['hybridpoll', 'nvme', 'generated'])
    .editable()
    .timezone('browser')
    .refresh('30s')
    .time({ from: 'now-1h', to: 'now' });
}
