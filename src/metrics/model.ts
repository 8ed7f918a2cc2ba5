// Families of the efficiency model (docs/metrics.md "Efficiency model"): one snapshot's ModelResult
// → plain metric families. Times in the model are ns; here they become seconds.
import { withheld } from '../model/ring.js';
import type { ModelTarget } from '../model/types.js';
import type { Snapshot } from '../snapshot/types.js';
import { family, type MetricFamily, type Sample } from './family.js';

const s = (ns: number) => ns / 1e9;

/** hybridpoll_model_poller_overhead_seconds: each part label and the PollerCosts field it shows */
const POLLER_PART_FIELD = { call: 'callNs', submit: 'submitNs', lead: 'leadNs', loop_reap: 'loopReapNs', look: 'lookNs', look_io: 'lookPerIoNs', empty_look: 'emptyLookNs', wake_look: 'wakeToLookNs' } as const;
const POLLER_PARTS = Object.keys(POLLER_PART_FIELD) as (keyof typeof POLLER_PART_FIELD)[];

export function modelFamilies(snap: Snapshot): MetricFamily[] {
  const r = snap.model;
  if (!r) return [];
  const ts = r.targets;
  // every modelled figure of a device polled by a ring over several devices that could not be
  // modelled whole is withheld (src/model/ring.ts withheld); what was measured of it, and why, stays
  const modelled = ts.filter((t) => !withheld(t));
  const perDevice = (t: ModelTarget, v: number | undefined): Sample | undefined =>
    v === undefined || !Number.isFinite(v) ? undefined : { labels: { device: t.device }, value: v };
  const rows = modelled.flatMap((t) => t.policies.map((p) => ({ t, p })));
  const perPolicy = (name: string, help: string, v: (x: (typeof rows)[number]) => number) =>
    family(name, 'gauge', help, rows, (x) => ({ labels: { device: x.t.device, policy: x.p.policy }, value: v(x) }));

  return [
    family('sleep_efficiency_ratio', 'gauge',
      'How much of the CPU that the best static sleep would save (against classic polling) the kernel\'s current sleep saves: 1 = as good as the best static sleep, 0 = no better than classic polling. Raw model value, can leave [0, 1]; absent when no sleep can save CPU within the latency budget.',
      ts, (t) => perDevice(t, t.efficiency)),
    family('current_sleep_seconds', 'gauge',
      'Mean hybrid-poll sleep the kernel currently requests per I/O that sleeps (measured by eBPF; 0 for classic polling).',
      ts, (t) => perDevice(t, s(t.current.sleepNs))),
    family('optimal_sleep_seconds', 'gauge',
      'Best static sleep: the one using the least CPU per I/O while adding at most the latency budget (--model.latency-budget of the mean device time). 0 means classic polling is best. An upper bound when hybridpoll_model_unresolved_ratio > 0.',
      modelled, (t) => perDevice(t, s(t.best.sleepNs))),
    family('optimal_io_poll_delay_microseconds', 'gauge',
      'Where the sleep is set as io_poll_delay (block-layer hybrid polling, kernels 4.10-5.18): the setting, in whole microseconds, that gives the best static sleep (hybridpoll_optimal_sleep_seconds is the sleep it gives, the setting less the measured timer lag). Absent on other kernels and where classic polling is best.',
      modelled, (t) => perDevice(t, t.optimalSetting)),
    family('current_policy_info', 'gauge',
      'Sleep policy the kernel is running on this device, detected from the kernel era, io_poll_delay and the measured sleeps (unknown when sleeps are seen that neither explains). Always 1.',
      ts, (t) => ({ labels: { device: t.device, policy: t.current.policy }, value: 1 })),
    family('wasted_cpu_cores', 'gauge',
      'CPU the poller spends above what the best static sleep would need for the same I/Os, in cores: (measured CPU per I/O - modelled CPU at the best static sleep) x polled IOPS, over the model window; 0 where the device polls classically and the best static sleep is 0 (it runs the best policy). Negative values mean the model under-estimates (see hybridpoll_model_cpu_error_ratio).',
      ts, (t) => perDevice(t, t.wastedCpuCores)),
    family('wasted_cpu_seconds_total', 'counter',
      'CPU-seconds wasted against the best static sleep, accumulated scrape by scrape (never decreasing): rate() of it is the wasted cores.',
      r.wastedCpuSecondsTotal, (w) => ({ labels: { device: w.device }, value: w.seconds })),
    family('measured_cpu_seconds_per_io', 'gauge',
      'Poller CPU per polled I/O measured by eBPF over the model window: spinning time plus one sleep/wake cost per sleep.',
      modelled, (t) => perDevice(t, t.measured && s(t.measured.cpuPerIoNs))),
    family('polled_iops', 'gauge', 'Polled I/Os completed per second over the model window.',
      ts, (t) => perDevice(t, t.measured?.iops)),
    family('oversleep_ratio', 'gauge',
      'Fraction of the I/Os that slept which were already complete when the poller woke up (it slept too long), measured over the model window.',
      ts, (t) => perDevice(t, t.measured?.oversleepRatio)),
    family('oversleep_added_latency_seconds', 'gauge',
      'Mean latency per I/O added by sleeping past the completion under the current sleep (modelled from the measured distributions).',
      modelled, (t) => perDevice(t, s(t.current.outcome.lateNs))),
    perPolicy('policy_sleep_seconds',
      'Sleep each policy would choose on this device\'s measured device-time distribution (oracle: mean of its per-I/O sleeps).',
      (x) => s(x.p.sleepNs)),
    perPolicy('policy_cpu_seconds_per_io',
      'Modelled poller CPU per I/O under each policy: spinning after the sleep plus the cost of one sleep/wake pair.',
      (x) => s(x.p.cpuNs)),
    perPolicy('policy_added_latency_seconds',
      'Modelled mean latency per I/O added by oversleep under each policy.',
      (x) => s(x.p.lateNs)),
    perPolicy('policy_latency_seconds',
      'Modelled mean completion latency (issue to reaped) per I/O under each policy.',
      (x) => s(x.p.latencyNs)),
    perPolicy('policy_cpu_share_ratio',
      'Share of one core the poller would spend under each policy (poll-loop CPU over the poller\'s wall time) at its measured queue depth (hybridpoll_model_in_flight_ios); 1 for classic polling from the issue on, less where the loop starts later (fentry path). The figure the hybrid-polling patch discussions compare.',
      (x) => x.p.cpuShare),
    family('model_cpu_error_ratio', 'gauge',
      'Self-check of the model: modelled CPU per I/O at the current sleep / measured CPU per I/O - 1. Near 0 is good; large values mean the model\'s assumptions do not hold here (src/model/README.md: one poller per device, independent device times, a closed loop at the measured depth).',
      ts, (t) => perDevice(t, t.modelCpuErrorRatio)),
    family('model_unresolved_ratio', 'gauge',
      'Share of the device-time distribution the data cannot place: I/Os already complete at wake-up with no exact (spun) sample below them, so their device time is only known to be at most their found time. The model puts them there, the most the data allow: above 0, the optimal sleep is an upper bound, the modelled oversleep and added latency are lower bounds, and the report bounds or withholds its recommendation. 1 when every slept I/O overslept.',
      modelled, (t) => perDevice(t, t.deviceTime.unresolved)),
    family('model_device_time_identified', 'gauge',
      'Whether the data identify the device-time distribution the model rests on (1) or not (0). Not at QD1 when over half of it is unresolved (hybridpoll_model_unresolved_ratio > 0.5); not at depth (hybridpoll_model_input_info depth="simulation") when under 1% of the slept I/Os, fewer than 20, or no more than twice the in-flight depth (what a poller\'s first fill can give before its loop settles) were still pending at wake-up: no device time was then timed, and the I/Os\' latency barely depends on it. At 0, E[D] and every figure that extrapolates to another sleep (the policy rows, the optimal sleep, efficiency, wasted CPU) can be off either way, and `report` withholds its recommendation at depth (bounds or withholds it at QD1, as for any unresolved share); the self-check at the current sleep still holds.',
      modelled, (t) => perDevice(t, t.deviceTime.identified ? 1 : 0)),
    family('model_device_time_mean_seconds', 'gauge',
      'Mean device time E[D] (driver issue to complete) the model sizes sleeps against: from the measured device-time distribution, at depth after removing the poller\'s own queueing (hybridpoll_model_input_info depth="simulation"). With hybridpoll_model_unresolved_ratio > 0 the data bound D only from above (I/Os already complete at wake-up) and it can read high; with hybridpoll_model_device_time_identified 0 it is not identified and can read high or low.',
      modelled, (t) => perDevice(t, s(t.depth?.meanDeviceNs ?? t.deviceTime.meanNs))),
    family('model_switch_cost_seconds', 'gauge',
      'On-CPU cost of one hybrid sleep/wake pair used by the model: measured from eBPF poll passes when possible, else the documented default (see hybridpoll_model_input_info).',
      modelled, (t) => perDevice(t, s(t.switchCostNs))),
    family('model_in_flight_ios', 'gauge',
      'Mean polled I/Os in flight at the start of a waiting call over the model window (eBPF: hybridpoll_poll_inflight_ios_total / hybridpoll_poll_waits_total): the queue depth the model is evaluated at. Absent when the loader does not count it.',
      ts, (t) => perDevice(t, t.inFlight)),
    family('model_poller_overhead_seconds', 'gauge',
      'The poller\'s time around its polling over the model window (fentry path), the inputs of the model at depth: part="call" per waiting call and part="submit" per I/O outside the poll loop before the issue (reaping CQEs, user space, the submission), part="lead" per waiting call from the last issue to the first poll, part="loop_reap" per completion inside the loop after the poll that found it, part="look" per poll call that found completions already there, part="look_io" per completion it found, part="empty_look" per one-look poll call that found nothing (a classic ring over several devices), part="wake_look" per sleep from the switch-in to that call.',
      modelled.flatMap((t) => (t.pollerCosts ? POLLER_PARTS.map((part) => ({ t, part })) : [])),
      ({ t, part }) => ({ labels: { device: t.device, part }, value: s(t.pollerCosts![POLLER_PART_FIELD[part]]) })),
    family('model_input_info', 'gauge',
      'Where the model\'s inputs came from: device_time (censored_km, empirical, censored_only, rq_lat), wake_overhead and switch_cost (measured or default), and depth: qd1 (one I/O in flight: the closed forms) or simulation (the poller model at the measured depth). Always 1.',
      ts, (t) => ({
        labels: { device: t.device, device_time: t.deviceTime.source, wake_overhead: t.wakeOverhead.source, switch_cost: t.switchCostSource, depth: t.depth?.method ?? 'qd1' },
        value: 1,
      })),
    family('model_ring_shared', 'gauge',
      'The device is polled by an io_uring ring that also polls other devices (1) or not (0). One poller serves them all with one sleep: the model runs that ring whole over its devices (a ring\'s devices are linked by eBPF), and the device\'s figures are its part of the ring\'s: its I/Os\' modelled CPU and latency, the ring\'s measured CPU split as the model splits it (so the self-check is the ring\'s), the ring\'s one optimal sleep. Where the ring\'s devices cannot be grouped or analysed (an older loader, too few samples on one of them) the modelled figures are withheld; the ring\'s own CPU is hybridpoll_ring_poll_cpu_seconds_total.',
      ts, (t) => ({ labels: { device: t.device }, value: t.sharedRing ? 1 : 0 })),
    family('model_window_seconds', 'gauge',
      'Time span the model\'s histogram deltas cover (up to --model.window; shorter right after start).',
      // only once the model has something to show (no BPF data: nothing to window)
      r.targets.length || r.wastedCpuSecondsTotal.length ? [r.windowSeconds] : [], (w) => ({ labels: {}, value: w })),
  ];
}
