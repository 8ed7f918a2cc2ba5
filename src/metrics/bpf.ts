// eBPF per-I/O timings (docs/metrics.md "eBPF per-I/O timings"): histograms on the log-linear grid
// converted to Prometheus histograms, per-device counters, rings, and the collector's self-metrics.
import { OTHER_RING } from '../bpf/ringLabels.js';
import { ringPollCpuNs, type BpfRing, type BpfSnapshot, type BucketHist, type HistKind, type RingLoops } from '../bpf/types.js';
import { OVERFLOW, upperNs } from '../model/buckets.js';
import type { Snapshot } from '../snapshot/types.js';
import { family, PREFIX, type Labels, type MetricFamily, type Sample } from './family.js';

export interface BpfExposition {
  /** keep every bucket boundary (1), every second (2) or only powers of two (4): --bpf.buckets */
  keepEvery: number;
  /**
   * Histograms exposed with all their buckets (short names, HISTOGRAM_NAMES: --bpf.histograms);
   * the others expose only le="+Inf" with _sum and _count. Default DEFAULT_FULL_HISTOGRAMS.
   */
  fullHistograms?: readonly string[];
}

/**
 * Histograms with full buckets by default: the only one a dashboard or rule takes quantiles of.
 * Every other kind costs ~33 series per device in buckets that nothing reads (--bpf.histograms).
 */
export const DEFAULT_FULL_HISTOGRAMS: readonly string[] = ['io_latency'];

export const DEFAULT_EXPOSITION: BpfExposition = { keepEvery: 4, fullHistograms: DEFAULT_FULL_HISTOGRAMS };

/**
 * Boundaries below this are not exposed: nothing the kernel does in a poll loop is shorter, and
 * dropping a boundary of a cumulative histogram moves its count into the next one, losing nothing.
 */
export const MIN_EXPOSED_NS = 128;

/** Whether bucket i's upper bound is exposed: sub-bucket (i−1) mod 4 = 3 is a power of two. */
function exposed(i: number, keepEvery: number): boolean {
  if (i >= OVERFLOW || upperNs(i) < MIN_EXPOSED_NS) return false;
  return ((i - 1) % 4) % keepEvery === keepEvery - 1;
}

export interface PromBucket {
  /** upper bound in seconds; Infinity for +Inf */
  le: number;
  /** cumulative count */
  count: number;
}

/** Cumulative Prometheus buckets (seconds) of a sparse grid histogram, ending with +Inf = count. */
export function promBuckets(h: BucketHist, keepEvery: number): PromBucket[] {
  const { index } = boundariesOf(keepEvery);
  const { atBoundary, inf } = cumulativeCounts(h, index);
  const out: PromBucket[] = index.map((i, j) => ({ le: upperNs(i) / 1e9, count: atBoundary[j]! }));
  out.push({ le: Infinity, count: inf });
  checkPromBuckets(out, h.count);
  return out;
}

/** Exposed bucket indices and their `le` strings for a keepEvery, computed once. */
const boundaries = new Map<number, { index: number[]; le: string[] }>();
function boundariesOf(keepEvery: number): { index: number[]; le: string[] } {
  let b = boundaries.get(keepEvery);
  if (!b) {
    b = { index: [], le: [] };
    for (let i = 0; i < OVERFLOW; i++) {
      if (exposed(i, keepEvery)) {
        b.index.push(i);
        b.le.push(String(upperNs(i) / 1e9));
      }
    }
    boundaries.set(keepEvery, b);
  }
  return b;
}

const scratch = new Float64Array(OVERFLOW + 1);

/**
 * The cumulative count at each of `index` (exposed boundaries, ascending) and at +Inf (every
 * bucket, overflow included). An index off the grid counts nowhere, so +Inf then differs from
 * _count and the callers' check throws. No allocation per bucket: the scrape's hot path.
 */
function cumulativeCounts(h: BucketHist, index: readonly number[]): { atBoundary: number[]; inf: number } {
  if (index.length > 0) scratch.fill(0);
  let inf = 0;
  const b = h.buckets;
  for (let j = 0; j < b.length; j += 2) {
    const i = b[j]!;
    const c = b[j + 1]!;
    if (i >= 0 && i <= OVERFLOW) {
      if (index.length > 0) scratch[i] = scratch[i]! + c;
      inf += c;
    }
  }
  const atBoundary: number[] = [];
  let cum = 0;
  let k = 0;
  for (const i of index) {
    for (; k <= i; k++) cum += scratch[k]!;
    atBoundary.push(cum);
  }
  return { atBoundary, inf };
}

/** The Prometheus histogram invariants; a violation is a bug, reported with the offending bucket. */
export function checkPromBuckets(b: PromBucket[], count: number): void {
  const last = b[b.length - 1];
  if (!last || last.le !== Infinity) throw new Error('histogram has no +Inf bucket');
  if (last.count !== count) throw new Error(`histogram +Inf bucket ${last.count} differs from _count ${count}`);
  for (let k = 1; k < b.length; k++) {
    const p = b[k - 1]!;
    const q = b[k]!;
    if (!(q.le > p.le)) throw new Error(`histogram boundaries not increasing at le=${q.le}`);
    if (q.count < p.count) throw new Error(`histogram not cumulative at le=${q.le}`);
  }
}

const HISTOGRAMS: [HistKind, string, string][] = [
  ['rq_lat', 'io_latency_seconds', 'Block I/O issue to completion (polled I/O: to reaped), from eBPF.'],
  ['sleep_req', 'poll_sleep_requested_seconds', 'Hybrid-poll sleep the kernel requested (hrtimer expiry minus arming time).'],
  ['offcpu', 'poll_offcpu_seconds', 'Real off-CPU time of hybrid-poll sleeps.'],
  ['wake_ovh', 'poll_wake_overhead_seconds', 'Time from the sleep timer expiring to the poller running again.'],
  ['wake_lat', 'poll_wake_latency_seconds', 'Wakeup to on-CPU of hybrid-poll sleepers (run-queue latency).'],
  ['spin', 'poll_spin_seconds', 'On-CPU time after the last wake-up (all of it when nothing slept) of each poll loop (fentry path) or of the poller between polled completions (tracepoint path); _sum is the total spin CPU time.'],
  ['dev_spun', 'poll_device_time_seconds', 'Issue to found for polled I/Os still pending after the sleep: the device time.'],
  ['found_slept', 'poll_found_after_sleep_seconds', 'Issue to found for polled I/Os already complete at wake-up: device time plus oversleep (censored).'],
  ['oversleep_ub', 'poll_oversleep_upper_bound_seconds', 'Upper bound of the oversleep of each overslept polled I/O.'],
  ['iopoll', 'iopoll_pass_seconds', 'Wall time of one poll loop: io_do_iopoll passes from the first until one finds completions (fentry path); tracepoint path: the poller\'s on-CPU time between polled completions plus the off-CPU time of its hybrid sleeps.'],
];

const DEVICE_COUNTERS: [string, string, string][] = [
  ['ios', 'ios_total', 'Block I/Os completed, every one whatever --bpf.sample (io_latency_seconds_count estimates it when sampling).'],
  ['polled_ios', 'polled_ios_total', 'Polled I/Os completed.'],
  ['sleeps', 'poll_sleeps_total', 'Hybrid-poll sleeps.'],
  ['overslept', 'poll_overslept_ios_total', 'Polled I/Os found complete on the first poll after the sleep.'],
  ['spun', 'poll_spun_ios_total', 'Polled I/Os that needed polling after the sleep.'],
  ['sleeps_unmatched', 'poll_sleeps_unmatched_total', 'Hybrid-poll sleeps that met no polled completion in the same task (attributed to the task\'s last device, not classified).'],
  ['waits', 'poll_waits_total', 'Waiting calls of pollers at whose start the poller task\'s polled I/Os in flight were sampled: the first io_do_iopoll pass of each poll loop (fentry path), the first polled completion in the task after its latest polled issue (tracepoint path).'],
  ['shared_polls', 'poll_shared_ring_polls_total', 'Poll calls on this device in io_do_iopoll passes that also polled another device\'s requests (fentry path): the device is polled by a ring over several devices, one poller for all of them, whose per-device figures split the ring\'s loops (the model leaves them out; see the ring_* series).'],
  ['inflight_sum', 'poll_inflight_ios_total', 'The poller task\'s polled I/Os in flight at the start of each waiting call counted in poll_waits_total, summed: rate(this) / rate(poll_waits_total) is the mean polled I/Os in flight at the start of a waiting call.'],
];

/** "major:minor" → device name from sysfs, when the host reading knows it. */
function deviceNames(s: Snapshot): Map<string, string> {
  const m = new Map<string, string>();
  for (const d of s.host?.devices ?? []) if (d.devNum) m.set(d.devNum, d.device);
  return m;
}

/** The --bpf.histograms name of a histogram: its metric name without the prefix and `_seconds`. */
const shortName = (metric: string): string => metric.replace(/_seconds$/, '');

/** Valid --bpf.histograms names, in exposition order. */
export const HISTOGRAM_NAMES: readonly string[] = HISTOGRAMS.map(([, name]) => shortName(name));

/**
 * A --bpf.histograms value: comma-separated HISTOGRAM_NAMES, `all` or `none`, → the names with full
 * buckets. Throws with the valid names on anything else.
 */
export function parseHistogramList(v: string): string[] {
  const items = v.split(',').map((x) => x.trim()).filter((x) => x !== '');
  if (items.length === 1 && items[0] === 'all') return [...HISTOGRAM_NAMES];
  if (items.length === 1 && items[0] === 'none') return [];
  const unknown = items.filter((x) => !HISTOGRAM_NAMES.includes(x));
  if (items.length === 0 || unknown.length > 0) {
    const what = items.length === 0 ? 'no histogram named' : `unknown histogram ${unknown.map((x) => `"${x}"`).join(', ')}`;
    throw new Error(`${what}; expected all, none or a comma-separated list of: ${HISTOGRAM_NAMES.join(', ')}`);
  }
  return HISTOGRAM_NAMES.filter((x) => items.includes(x));
}

/**
 * One histogram family. With `full`, the buckets of promBuckets (the same cumulativeCounts, with
 * `le` strings made once and no PromBucket per sample); without, only le="+Inf" (= _count)
 * with _sum and _count: still a valid histogram, ~33 fewer series per device at pow2.
 */
function histogramFamily(name: string, help: string, series: { device: string; h: BucketHist }[], keepEvery: number, full: boolean): MetricFamily {
  const samples: Sample[] = [];
  const { index, le } = boundariesOf(keepEvery);
  for (const { device, h } of series) {
    const { atBoundary, inf } = cumulativeCounts(h, full ? index : []);
    atBoundary.forEach((value, j) => samples.push({ labels: { device, le: le[j]! }, value, suffix: '_bucket' }));
    // +Inf must equal _count (checkPromBuckets' invariant).
    if (inf !== h.count) checkPromBuckets([{ le: Infinity, count: inf }], h.count);
    samples.push({ labels: { device, le: '+Inf' }, value: inf, suffix: '_bucket' });
    const labels: Labels = { device };
    samples.push({ labels, value: h.sumNs / 1e9, suffix: '_sum' });
    samples.push({ labels, value: h.count, suffix: '_count' });
  }
  return { name: PREFIX + name, type: 'histogram', help, samples };
}

function timingFamilies(bpf: BpfSnapshot, names: Map<string, string>, o: BpfExposition): MetricFamily[] {
  const label = (dev: string) => names.get(dev) ?? dev;
  const full = o.fullHistograms ?? DEFAULT_FULL_HISTOGRAMS;
  const out = HISTOGRAMS.map(([kind, name, help]) =>
    histogramFamily(
      name,
      help,
      bpf.devices.flatMap((d) => (d.hists[kind] ? [{ device: label(d.dev), h: d.hists[kind]! }] : [])),
      o.keepEvery,
      full.includes(shortName(name)),
    ),
  );
  // recordings made before sampling have no `ios`: every completion was in rq_lat then
  const rqLat = new Map(bpf.devices.map((d) => [d.dev, d.hists.rq_lat?.count]));
  const devs = Object.entries(bpf.deviceCounters).map(([dev, c]): [string, Record<string, number>] =>
    [dev, c['ios'] !== undefined || rqLat.get(dev) === undefined ? c : { ...c, ios: rqLat.get(dev)! }]);
  for (const [key, name, help] of DEVICE_COUNTERS) {
    out.push(family(name, 'counter', help, devs, ([dev, c]) => (c[key] !== undefined ? { labels: { device: label(dev) }, value: c[key]! } : undefined)));
  }
  // Spin of loops that slept (aux0 ns, aux1 loops of the spin histogram): what both poll paths
  // measure alike, wake-up → completion (the spin histogram's definitions differ per path).
  const spins = bpf.devices.flatMap((d) => (d.hists.spin ? [{ dev: d.dev, h: d.hists.spin }] : []));
  const wakes = bpf.devices.flatMap((d) => (d.hists.wake_ovh ? [{ dev: d.dev, h: d.hists.wake_ovh }] : []));
  const loopStarts = bpf.devices.flatMap((d) => (d.hists.iopoll ? [{ dev: d.dev, h: d.hists.iopoll }] : []));
  const looks = bpf.devices.flatMap((d) => (d.hists.found_slept ? [{ dev: d.dev, h: d.hists.found_slept }] : []));
  out.push(
    family('poll_spin_after_sleep_seconds_total', 'counter', 'Spin of poll loops that slept, from the wake-up to the poll that found the completion (the tracepoint path: to the completion event).',
      spins, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux0 / 1e9 })),
    family('poll_spin_after_sleep_total', 'counter', 'Poll loops that slept, whose spin is in poll_spin_after_sleep_seconds_total.',
      spins, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux1 })),
    // The stretch from a slept I/O's issue to its sleep's start (aux0 ns, aux1 sleeps of wake_ovh):
    // the model times the wake-up from the issue, wake_ovh + this.
    family('poll_sleep_start_offset_seconds_total', 'counter', "Time from a slept I/O's issue (its device time's origin) to the start of its hybrid-poll sleep, summed.",
      wakes, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux0 / 1e9 })),
    family('poll_sleep_start_offset_total', 'counter', 'Hybrid-poll sleeps whose offset from their I/O\'s issue is in poll_sleep_start_offset_seconds_total.',
      wakes, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux1 })),
    // The stretch from a slept I/O's issue to the start of the poll loop that slept (aux0 ns, aux1
    // loops of iopoll): the model's L, where a classic loop would have started polling.
    family('poll_loop_start_offset_seconds_total', 'counter', "Time from a slept I/O's issue (its device time's origin) to the start of its poll loop, summed (fentry path; 0 on the tracepoint path).",
      loopStarts, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux0 / 1e9 })),
    family('poll_loop_start_offset_total', 'counter', "Poll loops that slept whose offset from their I/O's issue is in poll_loop_start_offset_seconds_total.",
      loopStarts, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux1 })),
    // The look after a sleep (aux0 ns, aux1 I/Os of found_slept): the model's λ, where the latency
    // of an I/O complete at wake-up ends.
    family('poll_look_after_sleep_seconds_total', 'counter', 'Time from the woken poller\'s switch-in to the completion found, for slept polled I/Os already complete at wake-up, summed.',
      looks, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux0 / 1e9 })),
    family('poll_look_after_sleep_total', 'counter', 'Slept polled I/Os complete at wake-up whose look is in poll_look_after_sleep_seconds_total.',
      looks, (x) => ({ labels: { device: label(x.dev) }, value: x.h.aux1 })),
    family('poll_classified_ios_total', 'counter',
      'Slept polled I/Os classified found_slept/dev_spun, by method: exact (poll calls counted, fentry path) or calibrated (threshold from the shortest found time, plus per completion the call found on the fentry path).',
      devs.flatMap(([dev, c]) => [
        { labels: { device: label(dev), method: 'exact' }, value: c['classified_exact'] },
        { labels: { device: label(dev), method: 'calibrated' }, value: c['classified_calibrated'] },
      ]),
      (x) => (x.value !== undefined ? { labels: x.labels, value: x.value } : undefined)),
    family('ring_info', 'gauge', 'An io_uring ring seen polling (6.13+, fentry path). Always 1.',
      bpf.rings, (r) => (r.ring === OTHER_RING ? undefined : { labels: { ring: r.ring, pid: String(r.pid), comm: r.comm, hybrid: r.hybrid ? '1' : '0' }, value: 1 })),
    family('ring_other_rings', 'gauge', 'Live io_uring rings counted together under ring="other" (past --bpf.max-rings).',
      [bpf.ringsOther ?? 0], (n) => ({ labels: {}, value: n })),
    family('ring_hybrid_poll_time_seconds', 'gauge', "The ring's ctx->hybrid_poll_time (running minimum); the kernel sleeps half of it.",
      bpf.rings, (r) => (r.hybridPollTimeNs === null ? undefined : { labels: { ring: r.ring }, value: r.hybridPollTimeNs / 1e9 })),
    ...ringFamilies(bpf.rings),
  );
  return out;
}

/**
 * What the poller spent on each ring, over every device the ring polls (fentry path): a ring over
 * several devices is one poller, whose loops the per-device series split by the device of a
 * pass's last poll and of each sleep's request.
 */
function ringFamilies(rings: readonly BpfRing[]): MetricFamily[] {
  const withLoops = rings.filter((r): r is BpfRing & { loops: RingLoops } => r.loops !== undefined);
  const counter = (name: string, help: string, value: (l: RingLoops) => number) =>
    family(name, 'counter', help, withLoops, (r) => ({ labels: { ring: r.ring }, value: value(r.loops) }));
  return [
    family('ring_poll_sleeps_total', 'counter', "Hybrid-poll sleeps of the ring's requests.", rings, (r) => ({ labels: { ring: r.ring }, value: r.sleeps })),
    counter('ring_polled_ios_total', "Completions the ring's poll passes reaped.", (l) => l.polledIos),
    counter('ring_poll_loops_total', "The ring's poll loops: from a waiting call's first io_do_iopoll pass to the pass that found completions.", (l) => l.count),
    // on io_uring hybrid kernels (the only ones with rings) the scheduler charges the wake latency
    // to the woken poller (src/model/analyse.ts switchCost): on-CPU is wall − off-CPU + it
    counter('ring_poll_cpu_seconds_total', "The poller's CPU in the ring's poll loops: their wall time less their sleeps' off-CPU time, the wake-up latency counted as on-CPU (the 6.13+ scheduler charges it).",
      (l) => ringPollCpuNs(l) / 1e9),
    counter('ring_poll_spin_seconds_total', "The ring's poll loops' on-CPU time after their last wake-up (all of it for a loop that did not sleep).", (l) => l.spinNs / 1e9),
  ];
}

const DROPS: [string, string][] = [
  ['start_map_full', 'start_map_full'],
  ['issue_missed', 'issue_missed'],
  ['task_map_full', 'task_map_full'],
  ['hist_map_full', 'hist_map_full'],
  ['recursion_misses', 'recursion'],
];

/** --bpf.cpu-budget's default, for recordings made before the budget was recorded */
const DEFAULT_CPU_BUDGET = 0.005;

/** The programs' CPU: the collector's meter, or (recordings before it) their measured run time. */
function cpuOf(bpf: BpfSnapshot | undefined): BpfSnapshot['cpu'] {
  if (!bpf) return undefined;
  if (bpf.cpu) return bpf.cpu;
  const runs = Object.values(bpf.programs).filter((p) => p.runTimeNs !== undefined);
  return runs.length ? { seconds: runs.reduce((a, p) => a + p.runTimeNs!, 0) / 1e9, source: 'bpf_stats', budget: DEFAULT_CPU_BUDGET } : undefined;
}

function selfFamilies(s: Snapshot): MetricFamily[] {
  const bpf = s.bpf;
  const st = s.bpfStatus;
  const programs = Object.entries(bpf?.programs ?? {});
  const cpu = cpuOf(bpf);
  return [
    family('bpf_up', 'gauge', '1 while the BPF loader runs and answers.', [bpf !== undefined && st.state === 'running'], (up) => ({ labels: {}, value: up ? 1 : 0 })),
    family('bpf_status_info', 'gauge', 'State of the BPF collector (running, starting, disabled, failed) and why, as a fixed code (the words are in the log). Always 1.',
      [st], (x) => ({ labels: { state: x.state, reason: x.cause }, value: 1 })),
    family('bpf_program_attached', 'gauge', '1 if that BPF program is attached.', programs, ([p, v]) => ({ labels: { program: p }, value: v.attached ? 1 : 0 })),
    family('bpf_poll_path_info', 'gauge', 'Poll path in use: fentry, tracepoint or none. Always 1.', bpf ? [bpf.pollPath] : [], (p) => ({ labels: { path: p }, value: 1 })),
    family('bpf_loader_restarts_total', 'counter', 'BPF loader restarts after it died or hung.', [st.loaderRestarts], (n) => ({ labels: {}, value: n })),
    family('bpf_events_dropped_total', 'counter', 'BPF events lost, by reason.', bpf ? DROPS : [],
      ([key, reason]) => (bpf?.counters[key] !== undefined ? { labels: { reason }, value: bpf.counters[key]! } : undefined)),
    family('bpf_program_run_seconds_total', 'counter', 'CPU time spent in each BPF program (needs kernel.bpf_stats_enabled=1).', programs,
      ([p, v]) => (v.runTimeNs !== undefined ? { labels: { program: p }, value: v.runTimeNs / 1e9 } : undefined)),
    family('bpf_program_runs_total', 'counter', 'Runs of each BPF program (needs kernel.bpf_stats_enabled=1).', programs,
      ([p, v]) => (v.runCount !== undefined ? { labels: { program: p }, value: v.runCount } : undefined)),
    family('bpf_sample_rate', 'gauge', 'The BPF programs time 1 in this many block completions (--bpf.sample); counts stay exact, io_latency_seconds is scaled back.',
      bpf ? [bpf.sampleRate ?? 1] : [], (n) => ({ labels: {}, value: n })),
    family('bpf_cpu_seconds_total', 'counter', 'CPU time of the exporter\'s BPF programs in the kernel: measured (kernel.bpf_stats_enabled=1) or estimated from the block completions, see hybridpoll_bpf_cpu_source_info.',
      cpu ? [cpu] : [], (c) => ({ labels: {}, value: c.seconds })),
    family('bpf_cpu_source_info', 'gauge', 'How hybridpoll_bpf_cpu_seconds_total is obtained: bpf_stats (every program, measured) or estimate (block programs only, completions times their cost measured by bench/bpf-cost). Always 1.',
      cpu ? [cpu] : [], (c) => ({ labels: { source: c.source }, value: 1 })),
    family('bpf_cpu_budget_ratio', 'gauge', 'CPU the BPF programs may use, as a fraction of one CPU (--bpf.cpu-budget).',
      cpu ? [cpu] : [], (c) => ({ labels: {}, value: c.budget })),
  ];
}

/**
 * Every BPF family of a scrape: none when the collector is switched off (--no-collector.bpf,
 * --bpf.enable=off); timing families only when the collector delivered a snapshot.
 */
export function bpfFamilies(s: Snapshot, o: BpfExposition = DEFAULT_EXPOSITION): MetricFamily[] {
  if (s.bpfStatus.mode === 'off' && !s.bpf) return [];
  return [...selfFamilies(s), ...(s.bpf ? timingFamilies(s.bpf, deviceNames(s), o) : [])];
}
