// The synthetic recording: what the exporter would record on a host with two NVMe devices, each
// polled at QD1 by one io_uring ring with IORING_SETUP_HYBRID_IOPOLL on a 6.13+ kernel. Pure and
// seeded: the same options always give the same frames, byte for byte.
//
// Device model, per I/O (all times from the block issue, ns):
//   D  device time: lognormal(median, σ), and with a small probability a slow outlier D × U(tail)
//   s  requested sleep, by the kernel's io_uring rule (io_uring/rw.c, docs/kernel.md §4.4):
//      no sleep while the ring has no estimate; otherwise s = hybrid_poll_time / 2, where
//      hybrid_poll_time is the ring's running minimum, over every poll call, of
//      (issue → end of that poll call − the sleep requested before it). For a slept I/O the first
//      poll call yields O + p, so the estimate converges to half the wake overhead, not to D.
//   O  wake overhead = timer slack U(slack) + wake latency (min + Exp(mean)); off-CPU = s + O
//   p  one poll call (one io_do_iopoll pass); the poller polls back to back after waking, and
//      finds the completion at the first call ending at or after D: at s + O + p if D ≤ s + O
//      (overslept: `found_slept`, censored), otherwise within p after D (`dev_spun`, exact)
//   c_sw  on-CPU cost of a sleep/wake pair, spent inside the iopoll pass but, as in design.md §5,
//      not on the I/O's latency path
//   think  time per I/O outside issue → reaped (reaping, the next submission)
// The poller issues back to back while its workload is active (a fraction of each step that
// varies over time), so IOPS = active time / mean(issue → reaped + think).
// To keep generation fast each step simulates `simPerStep` I/Os and weights them to the step's
// I/O count; counts stay integers and add up exactly.
import type { BpfProgramStatus, BpfSnapshot, BucketHist, HistKind, RingLoops } from '../bpf/types.js';
import { POLLER_COUNTERS } from '../bpf/protocol.js';
import { bucketOf } from '../model/buckets.js';
import { flatBuckets } from '../model/hist.js';
import type { CollectorResult, SnapshotInputs } from '../snapshot/types.js';
import { detectEra } from '../sources/era.js';
import type { DeviceReading, HostReading, KernelFeatures } from '../sources/types.js';
import { RECORDING_FORMAT, RECORDING_VERSION, frameLine, headerLine, type RecordingHeader } from './format.js';
import { rng, type Rng } from './prng.js';

export interface Phase {
  /** seconds from the first frame at which this phase starts */
  fromSeconds: number;
  /** median device time */
  medianNs: number;
  /** I/O size (rq_lat aux0 counts bytes) */
  blockBytes: number;
}

export interface DeviceProfile {
  device: string;
  /** major:minor */
  dev: string;
  ring: { comm: string; pid: number };
  /** D over time; the first phase also covers the warm-up */
  phases: Phase[];
  /** log-standard-deviation of D */
  sigma: number;
  /** probability of a slow outlier, and its factor range on D */
  tail: { probability: number; factor: [number, number] };
  /** hrtimer expiry → wakeup, uniform */
  timerSlackNs: [number, number];
  /** wakeup → on CPU: minimum plus an exponential excess of this mean */
  wakeLatency: { minNs: number; meanExcessNs: number };
  /** c_sw */
  switchCostNs: number;
  /** one poll call */
  pollCallNs: number;
  /** issue → first poll call of an I/O that does not sleep (the ring's very first I/O) */
  submitToPollNs: number;
  thinkNs: number;
  /** fraction of the time the workload issues I/O, at t seconds from the first frame */
  activity: (t: number) => number;
}

/** The two devices of the shipped recording; the parameters are the ones documented in recordings/README.md. */
export const SYNTHETIC_DEVICES: readonly DeviceProfile[] = [
  {
    // D ~ 10 µs tight, O ≈ 1 µs, c_sw = 1.5 µs: design.md §5's sanity anchor. After 10 min the
    // workload moves from 4 KiB to 16 KiB reads: the optimum moves, the kernel's minimum cannot.
    device: 'nvme0n1',
    dev: '259:0',
    ring: { comm: 'fio', pid: 3131 },
    phases: [
      { fromSeconds: -Infinity, medianNs: 10_000, blockBytes: 4096 },
      { fromSeconds: 600, medianNs: 14_000, blockBytes: 16384 },
    ],
    sigma: 0.06,
    tail: { probability: 0.005, factor: [1.5, 3] },
    timerSlackNs: [200, 400],
    wakeLatency: { minNs: 500, meanExcessNs: 200 },
    // with the wake latency, which the scheduler charges to the poller, c_sw = 1.5 µs
    switchCostNs: 800,
    pollCallNs: 250,
    submitToPollNs: 600,
    thinkNs: 1000,
    activity: (t) => 0.85 + 0.15 * Math.sin((2 * Math.PI * t) / 300),
  },
  {
    // A faster device (D ~ 4.3 µs tight) whose poller's timers fire late (O ≈ 3.0 µs): the kernel's sleep
    // now oversleeps over a third of the I/Os, so found_slept and the censored estimator have data.
    // Its application submits, then reaps later: the ring's first I/O set a high estimate that
    // the first slept I/Os lowered at once. Load dips for two minutes in the middle.
    device: 'nvme1n1',
    dev: '259:1',
    ring: { comm: 'kvstore', pid: 4242 },
    phases: [{ fromSeconds: -Infinity, medianNs: 4_300, blockBytes: 4096 }],
    sigma: 0.05,
    tail: { probability: 0.005, factor: [1.5, 3] },
    timerSlackNs: [1_600, 2_000],
    wakeLatency: { minNs: 900, meanExcessNs: 300 },
    switchCostNs: 1500,
    pollCallNs: 200,
    submitToPollNs: 4_000,
    thinkNs: 1500,
    activity: (t) => (t >= 360 && t < 480 ? 0.25 : 0.65 + 0.3 * Math.sin((2 * Math.PI * t) / 420 + 1)),
  },
];

export interface SyntheticOptions {
  seed: number;
  /** frames cover [0, minutes·60] s */
  minutes: number;
  stepSeconds: number;
  /** the ring starts this long before the first frame, so counters are warm */
  warmupSeconds: number;
  /** I/Os simulated per device and step */
  simPerStep: number;
  /** wall clock of the first frame, ms since the epoch */
  startMs: number;
  devices: readonly DeviceProfile[];
}

export const SYNTHETIC_DEFAULTS: SyntheticOptions = {
  seed: 20260105,
  minutes: 15,
  stepSeconds: 5,
  warmupSeconds: 60,
  simPerStep: 1500,
  startMs: Date.UTC(2026, 0, 5, 9, 0, 0),
  devices: SYNTHETIC_DEVICES,
};

/** The loader's programs on the fentry path (src/bpf/loader.c) and their cost per run here (kernel.bpf_stats_enabled=1). */
const PROGRAM_COST_NS: Record<string, number> = {
  rq_issue: 60,
  rq_complete: 85,
  hrtimer_start: 70,
  sched_switch: 55,
  sched_wakeup: 50,
  task_exit: 0,
  iopoll_enter: 35,
  iopoll_exit: 45,
  classic_poll_enter: 30,
  classic_poll_exit: 40,
};

/** The loader's global counters that do not follow from the per-device ones: drops (none but a few missed issues at start-up). */
const LOADER_COUNTERS: Record<string, number> = { start_map_full: 0, issue_missed: 3, task_map_full: 0, hist_map_full: 0, ts_from_map: 0, recursion_misses: 0 };

const DEVICE_COUNTERS = ['polled_ios', 'classified_exact', 'classified_calibrated', 'sleeps_unmatched', 'waits', 'inflight_sum', 'shared_polls', ...POLLER_COUNTERS, 'sleeps', 'sleep_ns', 'spin_ns', 'overslept', 'spun'];

/** One simulated I/O. */
interface Io {
  deviceNs: number;
  slept: boolean;
  sleepNs: number;
  wakeOverheadNs: number;
  wakeLatencyNs: number;
  /** issue → reaped */
  foundNs: number;
  overslept: boolean;
  pollCalls: number;
}

interface Hist {
  buckets: Map<number, number>;
  count: number;
  sumNs: number;
  aux0: number;
  aux1: number;
}

interface DeviceState {
  profile: DeviceProfile;
  ringId: string;
  /** ctx->hybrid_poll_time; null = LLONG_MAX, no estimate yet */
  hybridPollTimeNs: number | null;
  /** smallest dev_spun so far, for the oversleep upper bound */
  minDevSpunNs: number;
  hists: Map<HistKind, Hist>;
  counters: Record<string, number>;
  ringSleeps: number;
  iopollPasses: number;
  /** the ring's poll loops (one ring per device here, one loop per I/O at QD1) */
  ringLoops: RingLoops;
  runs: Record<string, number>;
}

function phaseAt(p: DeviceProfile, t: number): Phase {
  let cur = p.phases[0]!;
  for (const ph of p.phases) if (t >= ph.fromSeconds) cur = ph;
  return cur;
}

/** One I/O under the kernel's io_uring hybrid rule; updates the ring's running minimum. */
function simulateIo(st: DeviceState, phase: Phase, r: Rng): Io {
  const p = st.profile;
  let d = r.lognormal(phase.medianNs, p.sigma);
  if (r.next() < p.tail.probability) d *= r.uniform(p.tail.factor[0], p.tail.factor[1]);
  const deviceNs = Math.round(d);
  const pc = p.pollCallNs;
  if (st.hybridPollTimeNs === null) {
    // No estimate: poll from submission on; the first call's runtime becomes the estimate.
    const start = p.submitToPollNs;
    const calls = Math.max(1, Math.ceil((deviceNs - start) / pc));
    st.hybridPollTimeNs = start + pc;
    return { deviceNs, slept: false, sleepNs: 0, wakeOverheadNs: 0, wakeLatencyNs: 0, foundNs: start + calls * pc, overslept: false, pollCalls: calls };
  }
  const sleepNs = Math.floor(st.hybridPollTimeNs / 2);
  const wakeLatencyNs = Math.round(p.wakeLatency.minNs + r.exponential(p.wakeLatency.meanExcessNs));
  const wakeOverheadNs = Math.round(r.uniform(p.timerSlackNs[0], p.timerSlackNs[1])) + wakeLatencyNs;
  const awake = sleepNs + wakeOverheadNs;
  const calls = Math.max(1, Math.ceil((deviceNs - awake) / pc));
  // Later calls of this I/O run with sleep_time 0 and so report more: only the first one can lower the minimum.
  st.hybridPollTimeNs = Math.min(st.hybridPollTimeNs, awake + pc - sleepNs);
  return { deviceNs, slept: true, sleepNs, wakeOverheadNs, wakeLatencyNs, foundNs: awake + calls * pc, overslept: deviceNs <= awake, pollCalls: calls };
}

function add(st: DeviceState, kind: HistKind, valueNs: number, w: number, aux0 = 0, aux1 = 0): void {
  let h = st.hists.get(kind);
  if (!h) st.hists.set(kind, (h = { buckets: new Map(), count: 0, sumNs: 0, aux0: 0, aux1: 0 }));
  const v = Math.max(0, Math.round(valueNs));
  const i = bucketOf(v);
  h.buckets.set(i, (h.buckets.get(i) ?? 0) + w);
  h.count += w;
  h.sumNs += v * w;
  h.aux0 += aux0 * w;
  h.aux1 += aux1 * w;
}

function count(st: DeviceState, name: string, v: number): void {
  st.counters[name] = (st.counters[name] ?? 0) + v;
}

/** Accounts one simulated I/O with weight w (it stands for w real ones). */
function account(st: DeviceState, io: Io, w: number, phase: Phase): void {
  const p = st.profile;
  const spinNs = io.pollCalls * p.pollCallNs;
  add(st, 'rq_lat', io.foundNs, w, phase.blockBytes, 0);
  add(st, 'spin', spinNs, w);
  count(st, 'polled_ios', w);
  // QD1: one waiting call (poll loop) per I/O, which starts with that I/O alone in flight
  count(st, 'waits', w);
  count(st, 'inflight_sum', w);
  // the fentry path's gap between loops (one completion each): the think time and the submission
  // up to the next loop, of which the lead (issue → first poll) is submitToPollNs; the generator's
  // spin holds all of the loop's time, so no completion work is apart from it
  const gapNs = p.thinkNs + p.submitToPollNs;
  count(st, 'gaps', w);
  count(st, 'gap_ns', gapNs * w);
  count(st, 'gap_k', w);
  count(st, 'gap_kk', w);
  count(st, 'gap_kns', gapNs * w);
  count(st, 'lead_ns', p.submitToPollNs * w);
  count(st, 'leads', w);
  count(st, 'reap_ns', 0);
  count(st, 'reaped', w);
  count(st, 'spin_ns', spinNs * w);
  st.runs['rq_issue']! += w;
  st.runs['rq_complete']! += w;
  st.runs['classic_poll_enter']! += io.pollCalls * w;
  st.runs['classic_poll_exit']! += io.pollCalls * w;
  st.runs['iopoll_enter']! += io.pollCalls * w;
  st.runs['iopoll_exit']! += io.pollCalls * w;
  st.iopollPasses += io.pollCalls * w;
  const loop = st.ringLoops;
  loop.polledIos += w;
  loop.count += w;
  loop.spinNs += spinNs * w;
  if (!io.slept) {
    loop.wallNs += p.pollCallNs * io.pollCalls * w;
    add(st, 'dev_spun', io.foundNs, w);
    add(st, 'iopoll', p.pollCallNs, w * io.pollCalls);
    count(st, 'spun', w);
    st.minDevSpunNs = Math.min(st.minDevSpunNs, io.foundNs);
    return;
  }
  const offcpuNs = io.sleepNs + io.wakeOverheadNs;
  // aux of sleep_req: Σ hybrid_poll_time/2 and its samples, the kernel's own value of the sleep.
  add(st, 'sleep_req', io.sleepNs, w, io.sleepNs, 1);
  add(st, 'offcpu', offcpuNs, w);
  add(st, 'wake_ovh', io.wakeOverheadNs, w);
  add(st, 'wake_lat', io.wakeLatencyNs, w);
  // The pass that sleeps holds c_sw, the sleep and its first poll call; the others one call each.
  loop.wallNs += (p.switchCostNs + offcpuNs + p.pollCallNs * io.pollCalls) * w;
  loop.offcpuNs += offcpuNs * w;
  loop.wakeLatencyNs += io.wakeLatencyNs * w;
  add(st, 'iopoll', p.switchCostNs + offcpuNs + p.pollCallNs, w);
  if (io.pollCalls > 1) add(st, 'iopoll', p.pollCallNs, w * (io.pollCalls - 1));
  count(st, 'sleeps', w);
  count(st, 'sleep_ns', io.sleepNs * w);
  // fentry counts poll calls, so every slept I/O is classified exactly.
  count(st, 'classified_exact', w);
  st.ringSleeps += w;
  st.runs['hrtimer_start']! += w;
  st.runs['sched_switch']! += 2 * w;
  st.runs['sched_wakeup']! += w;
  if (io.overslept) {
    add(st, 'found_slept', io.foundNs, w);
    if (Number.isFinite(st.minDevSpunNs)) add(st, 'oversleep_ub', offcpuNs - st.minDevSpunNs, w);
    count(st, 'overslept', w);
  } else {
    add(st, 'dev_spun', io.foundNs, w);
    count(st, 'spun', w);
    st.minDevSpunNs = Math.min(st.minDevSpunNs, io.foundNs);
  }
}

/** Simulates one step of one device: `simPerStep` I/Os weighted to the step's I/O count. */
function step(st: DeviceState, t: number, stepSeconds: number, simPerStep: number, r: Rng): void {
  const phase = phaseAt(st.profile, t);
  const ios = Array.from({ length: simPerStep }, () => simulateIo(st, phase, r));
  const meanCycleNs = ios.reduce((a, io) => a + io.foundNs, 0) / ios.length + st.profile.thinkNs;
  const activity = Math.min(1, Math.max(0, st.profile.activity(t)));
  // The ring's very first I/O (no estimate, no sleep) happens once, so it stands for itself only.
  const first = ios.filter((io) => !io.slept);
  const rest = ios.filter((io) => io.slept);
  for (const io of first) account(st, io, 1, phase);
  const total = Math.max(0, Math.round((activity * stepSeconds * 1e9) / meanCycleNs) - first.length);
  const base = Math.floor(total / rest.length);
  const extra = total - base * rest.length;
  rest.forEach((io, i) => {
    const w = base + (i < extra ? 1 : 0);
    if (w > 0) account(st, io, w, phase);
  });
}

const sparse = (h: Hist): BucketHist => ({
  buckets: flatBuckets([...h.buckets].filter(([, c]) => c > 0).sort((a, b) => a[0] - b[0])),
  count: h.count,
  sumNs: h.sumNs,
  aux0: h.aux0,
  aux1: h.aux1,
});

function hostReading(devices: readonly DeviceProfile[]): HostReading {
  const features: KernelFeatures = {
    debugfsHctxIoPoll: false,
    debugfsPollStatLines: false,
    release: '6.14.0-synthetic',
    iouringHybrid: true,
    legacyHybrid: false,
    hctxPollCounters: false,
  };
  const devs: DeviceReading[] = devices.map((p) => ({
    device: p.device,
    devNum: p.dev,
    ioPoll: 1,
    // Constant -1 from 6.4: io_uring hybrid polling is per ring and invisible in sysfs.
    ioPollDelay: -1,
    hctxByType: { default: 2, poll: 2 },
    pollStat: { kind: 'empty' },
    errors: [],
  }));
  return { nvmePollQueues: 2, features, era: detectEra(features), devices: devs };
}

function bpfSnapshot(states: DeviceState[], takenAtNs: number): BpfSnapshot {
  const programs: Record<string, BpfProgramStatus> = {};
  for (const [name, cost] of Object.entries(PROGRAM_COST_NS)) {
    const runCount = states.reduce((a, s) => a + s.runs[name]!, 0);
    programs[name] = { attached: true, runTimeNs: runCount * cost, runCount };
  }
  const counters: Record<string, number> = { ...LOADER_COUNTERS };
  for (const s of states) for (const [k, v] of Object.entries(s.counters)) counters[k] = (counters[k] ?? 0) + v;
  const sleeps = states.reduce((a, s) => a + s.ringSleeps, 0);
  Object.assign(counters, {
    sleeps_detected: sleeps,
    sched_out: sleeps,
    sched_in: sleeps,
    wakeups: sleeps,
    iopoll_passes: states.reduce((a, s) => a + s.iopollPasses, 0),
    classic_polls: states.reduce((a, s) => a + s.iopollPasses, 0),
  });
  return {
    takenAtNs,
    pollPath: 'fentry',
    programs,
    devices: states.map((s) => ({
      dev: s.profile.dev,
      device: s.profile.device,
      hists: Object.fromEntries([...s.hists].map(([k, h]) => [k, sparse(h)])) as Partial<Record<HistKind, BucketHist>>,
    })),
    rings: states.map((s) => ({
      ring: s.ringId,
      pid: s.profile.ring.pid,
      comm: s.profile.ring.comm,
      // IORING_SETUP_IOPOLL | IORING_SETUP_HYBRID_IOPOLL
      flags: (1 << 0) | (1 << 17),
      hybrid: true,
      hybridPollTimeNs: s.hybridPollTimeNs,
      sleeps: s.ringSleeps,
      iopollPasses: s.iopollPasses,
      loops: { ...s.ringLoops },
    })),
    counters,
    deviceCounters: Object.fromEntries(states.map((s) => [s.profile.dev, { ...s.counters }])),
  };
}

function collectors(r: Rng, bpfSeconds: number): CollectorResult[] {
  const ms = (lo: number, hi: number) => Math.round(r.uniform(lo, hi) * 1000) / 1e6;
  return [
    { name: 'sysfs', success: true, durationSeconds: ms(0.3, 0.9) },
    { name: 'debugfs', success: true, durationSeconds: ms(0.5, 1.5) },
    { name: 'era', success: true, durationSeconds: ms(0.05, 0.2) },
    { name: 'bpf', success: true, durationSeconds: bpfSeconds },
  ];
}

export function syntheticHeader(o: SyntheticOptions): RecordingHeader {
  return {
    format: RECORDING_FORMAT,
    version: RECORDING_VERSION,
    created: new Date(o.startMs).toISOString(),
    host: 'synthetic-nvme-host',
    source: 'synthetic',
    description:
      `Synthetic QD1 io_uring hybrid polling on a 6.13+ kernel (src/record/synthetic.ts, seed ${o.seed}): ` +
      o.devices
        .map((d) => `${d.device} D~${d.phases.map((p) => `${p.medianNs / 1000}us`).join('->')} sigma ${d.sigma}, ` +
          `O~${(avg(d.timerSlackNs) + d.wakeLatency.minNs + d.wakeLatency.meanExcessNs) / 1000}us, c_sw ${d.switchCostNs / 1000}us`)
        .join('; ') +
      '; kernel sleep = half the ring\'s running minimum. See recordings/README.md.',
  };
}

const avg = ([a, b]: [number, number]) => (a + b) / 2;

/** Every frame of the synthetic recording, in order. */
export function* syntheticFrames(o: SyntheticOptions = SYNTHETIC_DEFAULTS): Generator<SnapshotInputs> {
  const r = rng(o.seed);
  const hex = () => Math.floor(r.next() * 2 ** 32).toString(16).padStart(8, '0');
  const states: DeviceState[] = o.devices.map((profile) => ({
    profile,
    ringId: hex(),
    hybridPollTimeNs: null,
    minDevSpunNs: Infinity,
    hists: new Map(),
    // The per-device counters the collector always reports (src/bpf/protocol.ts), from 0.
    counters: Object.fromEntries(DEVICE_COUNTERS.map((k) => [k, 0])),
    ringSleeps: 0,
    iopollPasses: 0,
    ringLoops: { polledIos: 0, count: 0, wallNs: 0, spinNs: 0, offcpuNs: 0, wakeLatencyNs: 0 },
    runs: Object.fromEntries(Object.keys(PROGRAM_COST_NS).map((k) => [k, 0])),
  }));
  const host = hostReading(o.devices);
  // CLOCK_MONOTONIC of the loader: the host has been up for three days.
  const bootNs = 3 * 86400e9;
  const frames = Math.round((o.minutes * 60) / o.stepSeconds);
  const warmup = Math.round(o.warmupSeconds / o.stepSeconds);
  for (let k = -warmup; k <= frames; k++) {
    const t = k * o.stepSeconds;
    // The step ending at t: the first frame has the warm-up behind it.
    if (k > -warmup) for (const st of states) step(st, t - o.stepSeconds, o.stepSeconds, o.simPerStep, r);
    if (k < 0) continue;
    yield {
      takenAtMs: o.startMs + t * 1000,
      host,
      bpf: bpfSnapshot(states, bootNs + t * 1e9),
      bpfStatus: { mode: 'auto', state: 'running', cause: 'ok', reason: 'loader running (fentry path)', loaderRestarts: 0 },
      collectors: collectors(r, Math.round(r.uniform(0.2, 0.6) * 1000) / 1e6),
    };
  }
}

/** The whole recording as JSON lines: what `npm run recording:synthetic` writes. */
export function syntheticRecordingText(o: SyntheticOptions = SYNTHETIC_DEFAULTS): string {
  let out = headerLine(syntheticHeader(o));
  for (const f of syntheticFrames(o)) out += frameLine(f);
  return out;
}
