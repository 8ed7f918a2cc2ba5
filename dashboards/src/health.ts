// Exporter health: is the exporter scraped, do its collectors succeed, is the BPF side attached and
// stable, and what does it cost.
import * as common from '@grafana/grafana-foundation-sdk/common';
import { DashboardLinkBuilder, DashboardLinkType, RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as statetimeline from '@grafana/grafana-foundation-sdk/statetimeline';
import * as table from '@grafana/grafana-foundation-sdk/table';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import type { BundleConfig } from '../../deploy/prometheus/src/config.js';
import { CORES, Selectors, dashboard, lastValue, legendTable, setup, tableTransforms, valueText } from './common.js';

export function healthDashboard(c: BundleConfig): Dashboard {
  const s = new Selectors(c);
  const N = s.node();
  const node = c.nodeLabel;

  const big = (title: string, description: string, expr: string) =>
    setup(new stat.PanelBuilder(), { title, description, unit: 'none', width: 6, height: 4, queries: [{ expr }] })
      .reduceOptions(lastValue());
  const timeline = (title: string, description: string, expr: string, legend: string, map: Record<string, string>) =>
    setup(new statetimeline.PanelBuilder(), { title, description, unit: 'none', queries: [{ expr, legend }] })
      .mappings(valueText(map))
      .showValue(common.VisibilityMode.Never)
      .mergeValues(true);

  return dashboard(c, 'exporter-health', 'Exporter health',
    'hybridpoll-exporter itself: scrapes, collectors, BPF programs and loader, cost.')
    .variables(s.variables({ multi: true, device: false }))
    .link(new DashboardLinkBuilder('HybridPoll').type(DashboardLinkType.Dashboards).tags(['hybridpoll'])
      .asDropdown(true).includeVars(true).keepTime(true))
    .withRow(new RowBuilder('Targets'))
    .withPanel(big('Exporters up', 'Exporter targets Prometheus scraped successfully in its last scrape.', `sum(up${N})`))
    .withPanel(big('Exporters down', 'Exporter targets whose last scrape failed (HybridPollExporterDown fires after 5m).', `sum(1 - up${N})`))
    .withPanel(big('Failing collectors', 'Collector runs that failed in the last collection, summed over nodes and collectors (sysfs, debugfs, era, bpf, model).',
      `sum(1 - hybridpoll_scrape_collector_success${N})`))
    .withPanel(big('Required BPF programs detached', `BPF programs the loader reports as not attached, over all selected nodes, except the optional fentry poll path (${c.bpfOptionalPrograms}).`,
      `sum(1 - hybridpoll_bpf_program_attached${s.node(`program!~"${c.bpfOptionalPrograms}"`)})`))

    .withRow(new RowBuilder('Collectors'))
    .withPanel(timeline('Collector success', 'Per node and collector: ok when the collector succeeded in the scrape, failed otherwise. The exporter logs the reason of each failure.',
      `hybridpoll_scrape_collector_success${N}`, `{{${node}}} {{collector}}`, { 0: 'failed', 1: 'ok' }))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Scrape duration',
      description: 'How long Prometheus took to scrape each exporter (scrape_duration_seconds, added by Prometheus), and the slowest collector inside the scrape.',
      unit: 's',
      queries: [
        { expr: `scrape_duration_seconds${N}`, legend: `{{${node}}} scrape` },
        { expr: `max by (${node}) (hybridpoll_scrape_collector_duration_seconds${N})`, legend: `{{${node}}} slowest collector` },
      ],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Collector duration',
      description: 'Time each collector took in the last collection (every --collector.interval; per scrape with --collector.interval=0).',
      unit: 's',
      queries: [{ expr: `hybridpoll_scrape_collector_duration_seconds${N}`, legend: `{{${node}}} {{collector}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Collection age',
      description: 'How old the data each scrape served was: collections run every --collector.interval (hybridpoll_snapshot_refresh_interval_seconds, default 15 s) and scrapes serve the latest, so the age saws between 0 and the interval. Well above it, collections stall or outlive the interval (HybridPollSnapshotStale; hybridpoll_snapshot_refresh_skipped_total counts the ticks lost).',
      unit: 's',
      queries: [{ expr: `hybridpoll_snapshot_age_seconds${N}`, legend: `{{${node}}}` }],
    }).legend(legendTable()).min(0))

    .withRow(new RowBuilder('BPF'))
    .withPanel(timeline('BPF programs attached', 'Per node and BPF program: attached or not. A detached program leaves its timings missing (HybridPollBPFProgramDetached); the four fentry poll-path programs are optional: without them the loader uses the tracepoint path.',
      `hybridpoll_bpf_program_attached${N}`, `{{${node}}} {{program}}`, { 0: 'detached', 1: 'attached' }))
    .withPanel(timeline('BPF loader', 'Whether the BPF loader runs and answers on each node.',
      `hybridpoll_bpf_up${N}`, `{{${node}}}`, { 0: 'down', 1: 'up' }))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'BPF loader restarts',
      description: 'Restarts of the BPF loader after it died or hung, per node, in each interval. Repeated restarts fire HybridPollBPFLoaderRestarting.',
      unit: 'none',
      queries: [{ expr: `increase(hybridpoll_bpf_loader_restarts_total${N}[$__rate_interval])`, legend: `{{${node}}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'BPF events dropped',
      description: 'Events the BPF programs lost per second, by reason (e.g. a full start map): timings are then undercounted.',
      unit: 'cps',
      queries: [{ expr: `rate(hybridpoll_bpf_events_dropped_total${N}[$__rate_interval])`, legend: `{{${node}}} {{reason}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'BPF poll path',
      description: 'Which hooks the loader uses on each node: fentry (io_uring internals, 6.13+ ring data), tracepoint (block layer and scheduler only) or none.',
      unit: 'none',
      queries: [{ expr: `hybridpoll_bpf_poll_path_info${N}`, instant: true, format: 'table' }],
    }).transformations(tableTransforms({}, [node, 'path'])))

    .withRow(new RowBuilder('Cost'))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Exporter CPU',
      description: 'CPU used by the exporter process (Node.js; the BPF loader and the in-kernel programs are not included).',
      unit: CORES,
      queries: [{ expr: `rate(process_cpu_seconds_total${N}[$__rate_interval])`, legend: `{{${node}}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'BPF CPU against budget',
      description: 'CPU of the exporter\'s in-kernel BPF programs on each node (hybridpoll_bpf_cpu_seconds_total: measured with kernel.bpf_stats_enabled=1, otherwise estimated from the block completions; the legend says which) and the node\'s --bpf.cpu-budget. Above the budget for 15m fires HybridPollBPFCPUOverBudget; --bpf.sample=auto keeps it under.',
      unit: CORES,
      queries: [
        { expr: `rate(hybridpoll_bpf_cpu_seconds_total${N}[$__rate_interval]) * on (${node}) group_left (source) hybridpoll_bpf_cpu_source_info${N}`, legend: `{{${node}}} ({{source}})` },
        { expr: `hybridpoll_bpf_cpu_budget_ratio${N}`, legend: `{{${node}}} budget` },
      ],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'BPF sampling rate',
      description: 'The BPF programs time 1 in this many block completions on each node (--bpf.sample; with auto, the rate chosen to stay under the CPU budget). Counts stay exact; latency histograms are scaled back.',
      unit: 'none',
      queries: [{ expr: `hybridpoll_bpf_sample_rate${N}`, legend: `{{${node}}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'BPF programs CPU',
      description: 'CPU the in-kernel BPF programs spend, by program, summed over the selected nodes. Only reported while kernel.bpf_stats_enabled=1 on the node (the kernel does not count otherwise).',
      unit: CORES,
      queries: [{ expr: `sum by (program) (rate(hybridpoll_bpf_program_run_seconds_total${N}[$__rate_interval]))`, legend: '{{program}}' }],
    }).stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal)).fillOpacity(30).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'BPF cost per run',
      description: 'Mean CPU time of one run of each BPF program (kernel.bpf_stats_enabled=1 only): the per-event overhead the exporter adds to I/O and scheduling paths.',
      unit: 's',
      queries: [{
        expr: `sum by (program) (rate(hybridpoll_bpf_program_run_seconds_total${N}[$__rate_interval])) / sum by (program) (rate(hybridpoll_bpf_program_runs_total${N}[$__rate_interval]))`,
        legend: '{{program}}',
      }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Exporter memory',
      description: 'Resident memory of the exporter process.',
      unit: 'bytes',
      queries: [{ expr: `process_resident_memory_bytes${N}`, legend: `{{${node}}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'Versions',
      description: 'Exporter and Node.js version on each node.',
      unit: 'none',
      width: 24,
      queries: [{ expr: `hybridpoll_build_info${N}`, instant: true, format: 'table' }],
    }).transformations(tableTransforms({}, [node, 'version', 'nodejs_version'])))
    .build();
}
