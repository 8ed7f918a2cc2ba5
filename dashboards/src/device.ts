// Device drill-down: one device of one node. The kernel's sleep against the optimum, the latency
// distribution, where a polled I/O's time goes, what every policy would cost, and the poll queue
// configuration that decides whether polling can work at all.
import * as common from '@grafana/grafana-foundation-sdk/common';
import { DashboardLinkBuilder, DashboardLinkType, RowBuilder, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as heatmap from '@grafana/grafana-foundation-sdk/heatmap';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as table from '@grafana/grafana-foundation-sdk/table';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import type { BundleConfig } from '../../deploy/prometheus/src/config.js';
import { recordNames } from '../../deploy/prometheus/src/rules.js';
import { CORES, Selectors, dashboard, lastValue, legendTable, setup, tableTransforms, valueText } from './common.js';

export function deviceDashboard(c: BundleConfig): Dashboard {
  const s = new Selectors(c);
  const r = recordNames(c);
  const D = s.device();
  const N = s.node();
  const ringKey = [c.clusterLabel, 'job', c.nodeLabel, 'ring'].join(', ');
  const rate = (m: string) => `rate(${m}${D}[$__rate_interval])`;
  const perIo = (m: string) => `${rate(`${m}_sum`)} / ${rate('hybridpoll_polled_ios_total')}`;

  const small = (title: string, description: string, unit: string, expr: string, legend?: string, width = 4) =>
    setup(new stat.PanelBuilder(), { title, description, unit, width, height: 4, queries: [{ expr, ...(legend ? { legend } : {}) }] })
      .reduceOptions(lastValue());

  return dashboard(c, 'device', 'Device drill-down',
    'One NVMe device: the kernel\'s hybrid sleep against the optimal sleep, latency, sleep/wake/spin breakdown and what-if policies.')
    .variables(s.variables({ multi: false }))
    .link(new DashboardLinkBuilder('HybridPoll').type(DashboardLinkType.Dashboards).tags(['hybridpoll'])
      .asDropdown(true).includeVars(true).keepTime(true))
    .withRow(new RowBuilder('Summary'))
    .withPanel(small('Efficiency', 'Sleep efficiency η, raw: 100% = as good as the best static sleep, 0% = no better than classic polling; it can leave 0–100% when the kernel does worse than classic or the model is off.',
      'percentunit', `hybridpoll_sleep_efficiency_ratio${D}`, undefined, 3))
    .withPanel(small('Wasted CPU', 'Cores this device\'s pollers spend beyond the best static sleep (recorded 5m rate).',
      CORES, `${r.deviceWastedCores}${D}`, undefined, 3))
    .withPanel(small('Polled IOPS', 'Polled I/Os completed per second (recorded 5m rate).', 'iops', `${r.devicePolledIops}${D}`, undefined, 3))
    .withPanel(small('Current policy', 'The sleep policy the kernel uses here, detected from the kernel era and the device settings.',
      'none', `hybridpoll_current_policy_info${D}`, '{{policy}}', 3).textMode(common.BigValueTextMode.Name))
    .withPanel(small('Model error', 'Modelled CPU per I/O at the current sleep against the CPU measured by eBPF, minus 1: near 0% means the efficiency and waste figures can be trusted.',
      'percentunit', `hybridpoll_model_cpu_error_ratio${D}`, undefined, 3))
    .withPanel(small('In flight', 'Mean polled I/Os in flight when the poller starts waiting: the queue depth the model is evaluated at (1: the exact QD1 forms; above 1.5 the poller model at that depth).',
      'short', `hybridpoll_model_in_flight_ios${D}`, undefined, 3))
    .withPanel(small('Unresolved share', 'Share of the device-time distribution the data cannot place (I/Os complete at wake-up below every exactly timed one). Above 0% the optimal sleep is an upper bound and the modelled oversleep a lower bound; `report` bounds or withholds its recommendation.',
      'percentunit', `hybridpoll_model_unresolved_ratio${D}`, undefined, 3))
    .withPanel(small('Device time identified', 'Whether the data identify the device-time distribution (1) or not (0: at depth nearly every slept I/O was complete at wake-up, or over half of it is unresolved). At 0 the efficiency, wasted CPU, optimal sleep and what-if rows can be off either way; `report` withholds its recommendation at depth and bounds or withholds it at QD1.',
      'bool', `hybridpoll_model_device_time_identified${D}`, undefined, 3))
    .withPanel(small('Oversleep share', 'Fraction of I/Os already complete when the poller woke up (model window).',
      'percentunit', `hybridpoll_oversleep_ratio${D}`, undefined, 3))

    .withRow(new RowBuilder('Sleep'))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Kernel\'s sleep vs optimal sleep',
      description: 'The sleep the kernel chooses (measured), the best static sleep under the latency budget, the mean device time the model sizes sleeps against, and the mean I/O latency for scale. The gap between the first two is what wastes CPU or adds latency.',
      unit: 's',
      queries: [
        { expr: `hybridpoll_current_sleep_seconds${D}`, legend: 'kernel\'s sleep' },
        { expr: `hybridpoll_optimal_sleep_seconds${D}`, legend: 'optimal sleep' },
        { expr: `hybridpoll_model_device_time_mean_seconds${D}`, legend: 'device time E[D] (model)' },
        { expr: `${r.deviceLatencyMean}${D}`, legend: 'mean I/O latency' },
      ],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new heatmap.PanelBuilder(), {
      title: 'I/O latency',
      description: 'Distribution of block issue → completion (polled I/O: → reaped) from hybridpoll_io_latency_seconds, I/Os per second per latency bucket.',
      unit: 'iops',
      queries: [{ expr: `sum by (le) (${rate('hybridpoll_io_latency_seconds_bucket')})`, legend: '{{le}}', format: 'heatmap' }],
    })
      .calculate(false)
      .rowsFrame(new heatmap.RowsHeatmapOptionsBuilder().layout(common.HeatmapCellLayout.Le))
      .yAxis(new heatmap.YAxisConfigBuilder().unit('s'))
      .color(new heatmap.HeatmapColorOptionsBuilder().mode(heatmap.HeatmapColorMode.Scheme).scheme('Oranges').steps(64)))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Latency percentiles',
      description: 'Median and 99th percentile of I/O latency (recorded over 5m, interpolated within histogram buckets) and the mean.',
      unit: 's',
      queries: [
        { expr: `${r.deviceLatencyP50}${D}`, legend: 'p50' },
        { expr: `${r.deviceLatencyP99}${D}`, legend: 'p99' },
        { expr: `${r.deviceLatencyMean}${D}`, legend: 'mean' },
      ],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Sleep, wake and spin per polled I/O',
      description: 'Where the time of a polled I/O goes, per I/O: the sleep the kernel requested, the wake-up overhead beyond it (off-CPU − requested), and the CPU spent spinning afterwards. Only the spin burns CPU.',
      unit: 's',
      queries: [
        { expr: perIo('hybridpoll_poll_sleep_requested_seconds'), legend: 'requested sleep' },
        { expr: perIo('hybridpoll_poll_wake_overhead_seconds'), legend: 'wake overhead' },
        { expr: perIo('hybridpoll_poll_spin_seconds'), legend: 'spin' },
      ],
    }).stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal)).fillOpacity(40).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Poller CPU',
      description: 'CPU of this device\'s pollers in cores: measured (eBPF CPU per I/O × polled IOPS), the part spent spinning, and the part wasted against the best static sleep.',
      unit: CORES,
      queries: [
        { expr: `hybridpoll_measured_cpu_seconds_per_io${D} * hybridpoll_polled_iops${D}`, legend: 'measured' },
        { expr: `${r.deviceSpinCores}${D}`, legend: 'spinning' },
        { expr: `${r.deviceWastedCores}${D}`, legend: 'wasted' },
      ],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Latency added by oversleep',
      description: 'Mean latency added per I/O by sleeping past the completion, against the latency budget the best static sleep must respect.',
      unit: 's',
      queries: [{ expr: `hybridpoll_oversleep_added_latency_seconds${D}`, legend: 'added by oversleep' }],
    }).legend(legendTable()).min(0))

    .withRow(new RowBuilder('What if'))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'What-if: every policy on this device',
      description: 'Each sleep policy evaluated on the same measured device and wake-up times: the sleep it would choose, CPU and added latency per I/O, mean latency, and the share of one core a QD1 poller spends (CPU per I/O / latency; 100% = classic polling). best_static is the target; oracle is the floor no static sleep reaches.',
      unit: 's',
      width: 24,
      queries: [
        { expr: `hybridpoll_policy_sleep_seconds${D}`, instant: true, format: 'table' },
        { expr: `hybridpoll_policy_cpu_seconds_per_io${D}`, instant: true, format: 'table' },
        { expr: `hybridpoll_policy_added_latency_seconds${D}`, instant: true, format: 'table' },
        { expr: `hybridpoll_policy_latency_seconds${D}`, instant: true, format: 'table' },
        { expr: `hybridpoll_policy_cpu_share_ratio${D}`, instant: true, format: 'table' },
      ],
    })
      .transformations(tableTransforms(
        { 'Value #A': 'Sleep', 'Value #B': 'CPU per I/O', 'Value #C': 'Added latency', 'Value #D': 'Latency', 'Value #E': 'CPU share (QD1)' },
        ['policy'],
      ))
      .overrideByName('CPU share (QD1)', [{ id: 'unit', value: 'percentunit' }])
      .sortBy([new common.TableSortByFieldStateBuilder().displayName('CPU per I/O').desc(false)]))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'CPU per I/O: measured vs policies',
      description: 'CPU per I/O measured by eBPF against the model for classic polling, the best static sleep and the oracle.',
      unit: 's',
      width: 24,
      queries: [
        { expr: `hybridpoll_measured_cpu_seconds_per_io${D}`, legend: 'measured' },
        { expr: `hybridpoll_policy_cpu_seconds_per_io${s.device('policy=~"classic|best_static|oracle"')}`, legend: '{{policy}}' },
      ],
    }).legend(legendTable()).min(0))

    .withRow(new RowBuilder('Poll queue configuration'))
    .withPanel(small('Hardware queues', 'Hardware queues of the device by type (debugfs hctx*/type). Polling needs at least one poll queue.',
      'none', `hybridpoll_device_hw_queues${D}`, '{{type}}').textMode(common.BigValueTextMode.ValueAndName))
    .withPanel(small('io_poll', 'queue/io_poll: whether the queue can poll (a capability, not usage).',
      'none', `hybridpoll_device_io_poll${D}`).mappings(valueText({ 0: 'off', 1: 'on' })))
    .withPanel(setup(new stat.PanelBuilder(), {
      title: 'io_poll_delay: current / advised',
      description: 'queue/io_poll_delay: −1 classic polling, 0 adaptive hybrid (½ mean), > 0 fixed sleep in µs; reads −1 on every kernel from 6.4. Advised: the setting that gives the best static sleep within the latency budget (4.10–5.18, where the sleep is this setting; none where classic polling is best, or where the kernel sets the sleep itself).',
      unit: 'µs',
      width: 4,
      height: 4,
      queries: [
        { expr: `hybridpoll_device_io_poll_delay${D}`, legend: 'current' },
        { expr: `hybridpoll_optimal_io_poll_delay_microseconds${D}`, legend: 'advised' },
      ],
    }).reduceOptions(lastValue()).textMode(common.BigValueTextMode.ValueAndName).mappings(valueText({ '-1': 'classic', 0: 'adaptive' })))
    .withPanel(small('nvme poll_queues', 'The nvme module parameter poll_queues of the node: poll queues requested per controller (the controller may grant fewer).',
      'none', `hybridpoll_nvme_poll_queues_param${s.node()}`))
    .withPanel(small('Hybrid ineffective', 'Yes when io_poll_delay ≥ 0 on a 5.16–6.3 kernel, where io_uring polled I/O never sleeps: hybrid is configured but does nothing.',
      'none', `hybridpoll_device_hybrid_configured_ineffective${D}`).mappings(valueText({ 0: 'no', 1: 'yes' })))
    .withPanel(small('Model window', 'Time span the efficiency model\'s histogram deltas cover (up to --model.window; shorter right after start).',
      's', `hybridpoll_model_window_seconds${s.node()}`))

    // A ring is one poller over any of the node's devices: its figures are whole where the
    // per-device ones split a multi-device ring's loops (docs/metrics.md, ring_poll_cpu_seconds_total).
    .withRow(new RowBuilder('io_uring rings of this node'))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Poller CPU per ring',
      description: 'CPU each io_uring ring\'s poller spends in its poll loops, in cores, over every device the ring polls (6.13+, fentry path). ring="other": the rings past --bpf.max-rings, together.',
      unit: CORES,
      width: 8,
      queries: [{ expr: `rate(hybridpoll_ring_poll_cpu_seconds_total${N}[$__rate_interval])`, legend: '{{ring}}' }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new timeseries.PanelBuilder(), {
      title: 'Polling CPU per I/O per ring',
      description: 'A ring\'s poller CPU per polled I/O it reaped: what a classic-polling ring spends per I/O is its device time; a hybrid ring spends less by the CPU its sleeps save.',
      unit: 's',
      width: 8,
      queries: [{ expr: `rate(hybridpoll_ring_poll_cpu_seconds_total${N}[$__rate_interval]) / rate(hybridpoll_ring_polled_ios_total${N}[$__rate_interval])`, legend: '{{ring}}' }],
    }).legend(legendTable()).min(0))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'Rings',
      description: 'The io_uring rings polling on this node: process, whether the ring is hybrid, and the sleep the kernel gives its requests (half the ring\'s hybrid_poll_time, its running minimum over every device the ring polls).',
      unit: 's',
      width: 8,
      queries: [{
        expr: `hybridpoll_ring_hybrid_poll_time_seconds${N} / 2 * on (${ringKey}) group_left (pid, comm, hybrid) hybridpoll_ring_info${N}`,
        instant: true,
        format: 'table',
      }],
    }).transformations(tableTransforms({ Value: 'Sleep (hpt/2)' }, ['ring', 'comm', 'pid', 'hybrid'])))

    .withRow(new RowBuilder('Model inputs'))
    .withPanel(setup(new table.PanelBuilder(), {
      title: 'Model inputs',
      description: 'Where the model\'s inputs came from: device time (censored_km, empirical, censored_only or rq_lat), wake overhead and switch cost (measured or default), with the switch cost c_sw it used. Defaults make the efficiency figures less certain.',
      unit: 's',
      width: 24,
      // The info metric's labels joined onto the switch cost: one row per device.
      queries: [{
        expr: `hybridpoll_model_switch_cost_seconds${D} * on (${s.deviceKey()}) group_left (device_time, wake_overhead, switch_cost, depth) hybridpoll_model_input_info${D}`,
        instant: true,
        format: 'table',
      }],
    }).transformations(tableTransforms({ Value: 'Switch cost c_sw' }, ['device', 'device_time', 'wake_overhead', 'switch_cost'])))
    .build();
}
