// Fleet overview: where polling wastes CPU across nodes and devices, how efficient the kernel's
// sleep is, which devices are worst, and how much oversleep costs.
import * as common from '@grafana/grafana-foundation-sdk/common';
import { DashboardLinkBuilder, DashboardLinkType, RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as histogram from '@grafana/grafana-foundation-sdk/histogram';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as table from '@grafana/grafana-foundation-sdk/table';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import type { BundleConfig } from '../../deploy/prometheus/src/config.js';
import { identifiedOnly, recordNames } from '../../deploy/prometheus/src/rules.js';
import { CORES, Selectors, dashboard, lastValue, legendTable, setup, tableTransforms } from './common.js';

export function fleetDashboard(c: BundleConfig): Dashboard {
  const s = new Selectors(c);
  const r = recordNames(c);
  const N = s.node();
  const D = s.device();
  const node = c.nodeLabel;
  // η of devices whose device time is identified (the drill-down shows every device's, with its flag)
  const eff = `clamp(${identifiedOnly(c, `hybridpoll_sleep_efficiency_ratio${D}`, D)}, 0, 1)`;
  const stacked = new common.StackingConfigBuilder().mode(common.StackingMode.Normal);

  const bigNumber = (title: string, description: string, unit: string, expr: string) =>
    setup(new stat.PanelBuilder(), { title, description, unit, width: 6, height: 4, queries: [{ expr }] })
      .reduceOptions(lastValue())
      .graphMode(common.BigValueGraphMode.Area);

  const topDevices = `topk(10, ${r.deviceWastedCores}${D})`;
  const ofTop = (expr: string) => `${expr} and on (${s.deviceKey()}) ${topDevices}`;

  return dashboard(c, 'fleet', 'Fleet overview',
    'NVMe hybrid polling across the fleet: CPU wasted against the best static sleep, sleep efficiency, oversleep.')
    .variables(s.variables({ multi: true }))
    .link(new DashboardLinkBuilder('HybridPoll').type(DashboardLinkType.Dashboards).tags(['hybridpoll'])
      .asDropdown(true).includeVars(true).keepTime(true))
    .withRow(new RowBuilder('Fleet'))
    .withPanel(bigNumber('Wasted CPU', 'CPU the pollers of the selected nodes spend beyond what the best static sleep would need, in cores (recorded 5m rate of hybridpoll_wasted_cpu_seconds_total).',
      CORES, `sum(${r.nodeWastedCores}${N})`))
    .withPanel(bigNumber('Spin CPU', 'CPU spent spinning on completion queues, in cores: the whole cost of polling except sleeping and waking.',
      CORES, `sum(${r.nodeSpinCores}${N})`))
    .withPanel(bigNumber('Polled IOPS', 'Polled I/Os completed per second on the selected nodes.',
      'iops', `sum(${r.nodePolledIops}${N})`))
    .withPanel(bigNumber('Median efficiency', 'Median over the selected devices of the sleep efficiency η, clamped to 0–1: 100% = as good as the best static sleep, 0% = no better than classic polling. Devices whose device time is not identified (hybridpoll_model_device_time_identified 0) are left out.',
      'percentunit', `quantile(0.5, ${eff})`))

    .withRow(new RowBuilder('Wasted CPU'))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Wasted CPU by node',
      description: 'Cores each node spends polling beyond the best static sleep, stacked: the fleet-wide cost of the kernel\'s sleep estimate.',
      unit: CORES,
      queries: [{ expr: `sum by (${node}) (${r.nodeWastedCores}${N})`, legend: `{{${node}}}` }],
    }).stacking(stacked).fillOpacity(30).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Wasted CPU by node and device',
      description: 'Cores wasted per device: (measured CPU per I/O − CPU per I/O at the best static sleep) × polled IOPS.',
      unit: CORES,
      queries: [{ expr: `${r.deviceWastedCores}${D}`, legend: `{{${node}}} {{device}}` }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'Worst devices',
      description: 'The ten devices wasting the most CPU now, with their efficiency, polled IOPS and the kernel\'s sleep against the optimal sleep.',
      unit: 's',
      width: 24,
      queries: [
        { expr: topDevices, instant: true, format: 'table' },
        { expr: ofTop(`hybridpoll_sleep_efficiency_ratio${D}`), instant: true, format: 'table' },
        { expr: ofTop(`${r.devicePolledIops}${D}`), instant: true, format: 'table' },
        { expr: ofTop(`hybridpoll_current_sleep_seconds${D}`), instant: true, format: 'table' },
        { expr: ofTop(`hybridpoll_optimal_sleep_seconds${D}`), instant: true, format: 'table' },
      ],
    })
      .transformations(tableTransforms(
        { 'Value #A': 'Wasted CPU', 'Value #B': 'Efficiency', 'Value #C': 'Polled IOPS', 'Value #D': 'Kernel\'s sleep', 'Value #E': 'Optimal sleep' },
        [node, 'device'],
      ))
      .overrideByName('Wasted CPU', [{ id: 'unit', value: CORES }])
      .overrideByName('Efficiency', [{ id: 'unit', value: 'percentunit' }])
      .overrideByName('Polled IOPS', [{ id: 'unit', value: 'iops' }])
      .sortBy([new common.TableSortByFieldStateBuilder().displayName('Wasted CPU').desc(true)]))

    .withRow(new RowBuilder('Efficiency'))
    .withPanel(setup(new histogram.PanelBuilder(), {
      title: 'Efficiency distribution',
      description: 'How many devices sit at each sleep efficiency now (η clamped to 0–1, buckets of 10%; devices whose device time is identified). A pile at 0% means the kernel\'s sleep saves nothing over classic polling.',
      unit: 'percentunit',
      queries: [{ expr: eff, instant: true, legend: `{{${node}}} {{device}}` }],
    }).bucketSize(0.1).bucketOffset(0).combine(true))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Efficiency percentiles across devices',
      description: '10th, 50th and 90th percentile of η over the selected devices whose device time is identified (clamped to 0–1).',
      unit: 'percentunit',
      queries: [0.1, 0.5, 0.9].map((q) => ({ expr: `quantile(${q}, ${eff})`, legend: `p${q * 100}` })),
    }).legend(legendTable()).min(0).max(1))

    .withRow(new RowBuilder('Oversleep'))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Overslept I/Os',
      description: 'Of the I/Os that slept, the share already complete at wake-up: the sleep was longer than the device needed.',
      unit: 'percentunit',
      queries: [{ expr: `${r.deviceOversleptRatio}${D}`, legend: `{{${node}}} {{device}}` }],
    }).legend(legendTable()).min(0).max(1))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Latency added by oversleep',
      description: 'Mean latency added per I/O by sleeping past the completion (model over its window).',
      unit: 's',
      queries: [{ expr: `hybridpoll_oversleep_added_latency_seconds${D}`, legend: `{{${node}}} {{device}}` }],
    }).legend(legendTable()).min(0))

    .withRow(new RowBuilder('Kernels'))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'Kernel era by node',
      description: 'The hybrid-polling era of each node\'s kernel and how it was detected (btf, debugfs or release hint): it decides which policy the kernel can use.',
      unit: 'none',
      width: 24,
      queries: [{ expr: `hybridpoll_kernel_era_info${N}`, instant: true, format: 'table' }],
    }).transformations(tableTransforms({}, [node, 'era', 'evidence', 'release'])))
    .build();
}
