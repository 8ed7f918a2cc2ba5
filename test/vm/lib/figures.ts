// What one run shows, read from the scrapes around it (deltas) and the driver's own report.
// Pure: turns a RunRecord into numbers; the checks compare these numbers.
import { delta, histDelta, parseExposition, select, value, type HistDelta, type Scrape } from './prom.js';
import { besideText, type LoaderSnap, type RunRecord } from './session.js';

export interface RingFigures {
  ring: string;
  hybrid: string;
  comm: string;
  hybridPollTimeSeconds: number | undefined;
  /** over the run: the ring's reaped completions, poll loops and poller CPU in its loops (hybridpoll_ring_*) */
  polledIos: number | undefined;
  loops: number | undefined;
  cpuSeconds: number | undefined;
}

export interface ExporterFigures {
  polledIos: number | undefined;
  sleeps: number | undefined;
  spin: HistDelta | undefined;
  /** spin of poll loops that slept (wake-up → completion): the quantity both poll paths measure alike */
  spinAfterSleep: { sum: number; count: number } | undefined;
  /** slept I/Os found complete at the first poll (censored) and those that needed polling */
  overslept: number | undefined;
  spun: number | undefined;
  /** wall time of poll loops (fentry path): first io_do_iopoll pass to the one that found completions */
  iopollPass: HistDelta | undefined;
  sleepRequested: HistDelta | undefined;
  offcpu: HistDelta | undefined;
  wakeOverhead: HistDelta | undefined;
  wakeLatency: HistDelta | undefined;
  ioLatency: HistDelta | undefined;
  /** model gauges after the run (window = this run: the exporter was started for it) */
  measuredCpuPerIo: number | undefined;
  modelClassicCpuPerIo: number | undefined;
  /** the model's CPU per I/O at the best static sleep */
  modelBestCpuPerIo: number | undefined;
  efficiency: number | undefined;
  wastedCores: number | undefined;
  /** the sleep the model's iouring_half_min policy predicts for the kernel */
  modelIouringSleep: number | undefined;
  /** the model's E[D] (hybridpoll_model_device_time_mean_seconds) */
  modelMeanDeviceTime: number | undefined;
  /** the exporter's hybridpoll_model_device_time_identified (0: E[D] and the other sleeps' rows not identified) */
  modelIdentified: number | undefined;
  /** the model's self-check: modelled cpu(current) / measured CPU per I/O − 1 */
  modelSelfError: number | undefined;
  /** hybridpoll_model_ring_shared after the run: 1 when a ring over several devices polls the device (its model figures withheld) */
  ringShared: number | undefined;
  /** mean polled I/Os in flight at the start of a waiting call, as the model read it */
  inFlight: number | undefined;
  /** how the model was evaluated: qd1 (closed forms) or simulation (the poller model at depth) */
  depthMethod: string | undefined;
  /** the model's F_D source (hybridpoll_model_input_info device_time) after the run; absent: no model figures for the device */
  deviceTimeSource: string | undefined;
  /** the same in the scrape before the run (the window then holds the exporter's previous run on the device and the warm-up) */
  deviceTimeSourceBefore: string | undefined;
  currentSleep: number | undefined;
  optimalSleep: number | undefined;
  /** run time of BPF programs (kernel.bpf_stats_enabled) over the run, by program label */
  programSeconds: Record<string, number>;
  /** runs of BPF programs over the run, by program label (kernel.bpf_stats_enabled) */
  programRuns: Record<string, number>;
  /** host state */
  era: string | undefined;
  pollPath: string | undefined;
  pollHctx: number | undefined;
  ioPoll: number | undefined;
  /** the driver's ring, from the after-scrape (hpdrive holds the idle ring open for it) */
  ring: RingFigures | undefined;
  /** every process's ring, in the order of the run's processes (one, or several side by side) */
  rings: { pid: number; ring: RingFigures | undefined }[];
}

export interface DriverFigures {
  ios: number;
  iops: number;
  /** all CPU of the poller */
  cpuSeconds: number;
  cpuUtil: number;
  cpuPerIo: number;
  /** CPU of the poller's wait phase (the io_uring_enter calls that poll, sleep and spin) */
  waitCpuSeconds: number;
  waitCpuPerIo: number;
  /** CPU of the syscall around the poll loop: waiting calls × one empty io_uring_enter (timed by the driver) */
  syscallResidueSeconds: number;
  sleepsPerIo: number;
  p50us: number;
  p99us: number;
  /** "x ms (y % of the run)": task run time on the other vCPUs during the run (session.besideText) */
  beside: string;
}

/** What the fentry twin loader saw of the same run (tracepoint runs). */
export interface TwinFigures {
  polledIos: number;
  sleeps: number;
  offcpu: { sum: number; count: number };
  spinAfterSleep: { sum: number; count: number };
  /** run time of the twin's BPF programs over the run (bpf_stats), seconds by program label */
  programSeconds: Record<string, number>;
}

/** What a simulated device (tools/hpsim) itself counted over the measured run: the truth of its time. */
export interface DeviceTruth {
  issued: number;
  completedPoll: number;
  completedIrq: number;
  /** mean service time the device drew (service_ns_sum / issued), seconds */
  serviceMean: number;
}

/** hpsim's stats line, `issued=… completed_irq=… …`, as numbers. */
export function parseHpsimStats(line: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of line.matchAll(/(\w+)=(-?\d+)/g)) out[m[1]!] = Number(m[2]);
  return out;
}

export function deviceTruth(h: { before: string; after: string }): DeviceTruth {
  const b = parseHpsimStats(h.before);
  const a = parseHpsimStats(h.after);
  const d = (k: string) => (a[k] ?? NaN) - (b[k] ?? NaN);
  const issued = d('issued');
  return { issued, completedPoll: d('completed_poll'), completedIrq: d('completed_irq'), serviceMean: issued > 0 ? d('service_ns_sum') / issued / 1e9 : NaN };
}

export interface RunFigures {
  run: RunRecord;
  driver: DriverFigures;
  /** simulated devices only */
  device: DeviceTruth | undefined;
  exporter: ExporterFigures | undefined;
  twin: TwinFigures | undefined;
}

/** Seconds of a loader snapshot's histogram sums (ns), differenced. */
export function twinFigures(before: LoaderSnap, after: LoaderSnap, dev: string): TwinFigures {
  const h = (s: LoaderSnap, kind: string) => s.hists.find((x) => x.dev === dev && x.kind === kind);
  const d = (kind: string, f: 'count' | 'sum' | 'aux0' | 'aux1') => (h(after, kind)?.[f] ?? 0) - (h(before, kind)?.[f] ?? 0);
  const polled = (s: LoaderSnap) => s.devs.find((x) => x.dev === dev)?.polled_ios ?? 0;
  return {
    polledIos: polled(after) - polled(before),
    sleeps: d('sleep_req', 'count'),
    offcpu: { sum: d('offcpu', 'sum') / 1e9, count: d('offcpu', 'count') },
    spinAfterSleep: { sum: d('spin', 'aux0') / 1e9, count: d('spin', 'aux1') },
    programSeconds: Object.fromEntries(Object.entries(after.progs ?? {}).map(([p, x]) => [p, ((x.run_ns ?? 0) - (before.progs?.[p]?.run_ns ?? 0)) / 1e9])),
  };
}

function ringOf(before: Scrape, after: Scrape, pid: number): RingFigures | undefined {
  const info = select(after, 'hybridpoll_ring_info', { pid: String(pid) });
  const r = info[0];
  if (!r) return undefined;
  const ring = r.labels.ring ?? '';
  // a ring created by the run's warm-up is in the before-scrape; one that is not counts from 0
  const d = (name: string) => {
    const a = value(after, name, { ring });
    return a === undefined ? undefined : a - (value(before, name, { ring }) ?? 0);
  };
  return {
    ring,
    hybrid: r.labels.hybrid ?? '',
    comm: r.labels.comm ?? '',
    hybridPollTimeSeconds: value(after, 'hybridpoll_ring_hybrid_poll_time_seconds', { ring }),
    polledIos: d('hybridpoll_ring_polled_ios_total'),
    loops: d('hybridpoll_ring_poll_loops_total'),
    cpuSeconds: d('hybridpoll_ring_poll_cpu_seconds_total'),
  };
}

/** A per-program counter over the run, by program label. */
function perProgram(b: Scrape, a: Scrape, name: string): Record<string, number> {
  return Object.fromEntries(select(a, name).map((x) => {
    const program = x.labels.program ?? '?';
    return [program, delta(b, a, name, { program }) ?? 0];
  }));
}

export function driverFigures(r: RunRecord): DriverFigures {
  const d = r.driver;
  return {
    ios: d.ios,
    iops: d.iops,
    cpuSeconds: d.cpu.exec_s,
    cpuUtil: d.cpu.util,
    cpuPerIo: d.ios > 0 ? d.cpu.exec_s / d.ios : NaN,
    waitCpuSeconds: d.cpu.wait_s,
    waitCpuPerIo: d.ios > 0 ? d.cpu.wait_s / d.ios : NaN,
    syscallResidueSeconds: (d.cpu.wait_calls ?? NaN) * (d.cpu.empty_enter_ns ?? NaN) / 1e9,
    // Each hybrid sleep that really switches the task out is one voluntary context switch.
    sleepsPerIo: d.ios > 0 ? d.ctxsw.voluntary / d.ios : NaN,
    p50us: d.lat_us.p50,
    p99us: d.lat_us.p99,
    beside: besideText(d),
  };
}

export function exporterFigures(r: RunRecord, majmin?: string): ExporterFigures | undefined {
  if (r.before === undefined || r.after === undefined) return undefined;
  const b = parseExposition(r.before);
  const a = parseExposition(r.after);
  // The exporter labels a device it cannot name (its sysfs reading failed) by "major:minor": the
  // BPF figures are still the device's; check 1 reports the failed host reading.
  const named = select(a, 'hybridpoll_polled_ios_total', { device: r.device }).length > 0;
  const dev = { device: !named && majmin && select(a, 'hybridpoll_polled_ios_total', { device: majmin }).length > 0 ? majmin : r.device };
  const era = select(a, 'hybridpoll_kernel_era_info')[0]?.labels.era;
  const pollPath = select(a, 'hybridpoll_bpf_poll_path_info').find((s) => s.value === 1)?.labels.path;
  const inputs = select(a, 'hybridpoll_model_input_info', dev)[0]?.labels;
  return {
    polledIos: delta(b, a, 'hybridpoll_polled_ios_total', dev),
    sleeps: delta(b, a, 'hybridpoll_poll_sleeps_total', dev),
    spin: histDelta(b, a, 'hybridpoll_poll_spin_seconds', dev),
    spinAfterSleep: ((sum, count) => (sum !== undefined && count !== undefined ? { sum, count } : undefined))(
      delta(b, a, 'hybridpoll_poll_spin_after_sleep_seconds_total', dev), delta(b, a, 'hybridpoll_poll_spin_after_sleep_total', dev)),
    overslept: delta(b, a, 'hybridpoll_poll_overslept_ios_total', dev),
    spun: delta(b, a, 'hybridpoll_poll_spun_ios_total', dev),
    iopollPass: histDelta(b, a, 'hybridpoll_iopoll_pass_seconds', dev),
    sleepRequested: histDelta(b, a, 'hybridpoll_poll_sleep_requested_seconds', dev),
    offcpu: histDelta(b, a, 'hybridpoll_poll_offcpu_seconds', dev),
    wakeOverhead: histDelta(b, a, 'hybridpoll_poll_wake_overhead_seconds', dev),
    wakeLatency: histDelta(b, a, 'hybridpoll_poll_wake_latency_seconds', dev),
    ioLatency: histDelta(b, a, 'hybridpoll_io_latency_seconds', dev),
    measuredCpuPerIo: value(a, 'hybridpoll_measured_cpu_seconds_per_io', dev),
    modelClassicCpuPerIo: value(a, 'hybridpoll_policy_cpu_seconds_per_io', { ...dev, policy: 'classic' }),
    modelBestCpuPerIo: value(a, 'hybridpoll_policy_cpu_seconds_per_io', { ...dev, policy: 'best_static' }),
    efficiency: value(a, 'hybridpoll_sleep_efficiency_ratio', dev),
    wastedCores: value(a, 'hybridpoll_wasted_cpu_cores', dev),
    modelSelfError: value(a, 'hybridpoll_model_cpu_error_ratio', dev),
    ringShared: value(a, 'hybridpoll_model_ring_shared', dev),
    inFlight: value(a, 'hybridpoll_model_in_flight_ios', dev),
    depthMethod: inputs?.depth,
    deviceTimeSource: inputs?.device_time,
    deviceTimeSourceBefore: select(b, 'hybridpoll_model_input_info', dev)[0]?.labels.device_time,
    modelIouringSleep: value(a, 'hybridpoll_policy_sleep_seconds', { ...dev, policy: 'iouring_half_min' }),
    modelMeanDeviceTime: value(a, 'hybridpoll_model_device_time_mean_seconds', dev),
    modelIdentified: value(a, 'hybridpoll_model_device_time_identified', dev),
    currentSleep: value(a, 'hybridpoll_current_sleep_seconds', dev),
    optimalSleep: value(a, 'hybridpoll_optimal_sleep_seconds', dev),
    programSeconds: perProgram(b, a, 'hybridpoll_bpf_program_run_seconds_total'),
    programRuns: perProgram(b, a, 'hybridpoll_bpf_program_runs_total'),
    era,
    pollPath,
    pollHctx: value(a, 'hybridpoll_device_hw_queues', { ...dev, type: 'poll' }),
    ioPoll: value(a, 'hybridpoll_device_io_poll', dev),
    ring: ringOf(b, a, r.driver.pid),
    rings: (r.driver.procs ?? [r.driver]).map((d) => ({ pid: d.pid, ring: ringOf(b, a, d.pid) })),
  };
}

/** majmin: the run's device as "major:minor" (the loader's key), for the twin's figures. */
export function runFigures(r: RunRecord, majmin?: string): RunFigures {
  return { run: r, driver: driverFigures(r), device: r.hpsim ? deviceTruth(r.hpsim) : undefined, exporter: exporterFigures(r, majmin), twin: r.twin && majmin ? twinFigures(r.twin.before, r.twin.after, majmin) : undefined };
}
