// The legacy-era session (issues 8 and 13): one boot of the bullseye guest (kernel 5.10, block-layer
// hybrid polling) in virtual time (QEMU icount, one vCPU) with the simulated device hpsim
// (tools/hpsim: service time defined on the guest clock). Per device profile (one like seed 001's,
// one like seed 004's) and workload (hpdrive's io_uring IOPOLL, the seeds' fio pvsync2 --hipri job)
// five settings of io_poll_delay: −1 classic, 0 adaptive (½ the poll_stat mean), ¾ of that mean
// (seed 001's patch as a fixed delay), poll_stat's min − the wake overhead (seed 004's rule) and the
// exporter's own advice fed the adaptive run (its best static sleep, applied: is it best, and does
// it save what the exporter said it wastes).
// Runs are driven by I/O count: under icount the guest clock is the instruction count, not seconds.
// The test sets io_poll_delay through the guest agent; the exporter only reads it. One exporter
// serves the session: idle guest time longer than its model window before each run makes that
// window hold the run alone (MODEL_WINDOW_SECONDS); it is scraped before and after the workload and
// paused (SIGSTOP) during it as in the trixie session.
import type { Guest } from './guest.js';
import { delta, histDelta, parseExposition, value } from './prom.js';
import type { DriverResult, ExporterStop, SessionBase } from './session.js';
import { waitBpfUp } from './session.js';
import { parsePollStat } from '../../../src/sources/pollStat.js';

export type Workload = 'hpdrive' | 'fio' | 'hpdrive4';
export type DelayMode = 'classic' | 'adaptive' | 'three_quarter' | 'min_wake' | 'best' | 'above';
/** The CI profile's workloads; the full profile adds `hpdrive4` (hpdrive at QD4: one ring, the block layer's hybrid sleep at depth). */
export const WORKLOADS: readonly Workload[] = ['hpdrive', 'fio'];
export const ALL_WORKLOADS: readonly Workload[] = [...WORKLOADS, 'hpdrive4'];
/** hpdrive's queue depth per workload (fio: one sync job, QD1). */
export const queueDepth = (w: Workload): number => (w === 'hpdrive4' ? 4 : 1);
export const isHpdrive = (w: Workload): boolean => w !== 'fio';
/**
 * The settings HPVM_LEGACY_DELAYS picks from, in this order: the three fixed delays are derived from
 * the adaptive run before them. The runs above the advice ('above': the advised setting + 1, + 2,
 * … µs, until one breaks the latency budget) follow the advised run by themselves.
 */
export const DELAY_MODES: readonly DelayMode[] = ['classic', 'adaptive', 'three_quarter', 'min_wake', 'best'];
/** The modes whose io_poll_delay is derived from the adaptive run. */
const DERIVED: readonly DelayMode[] = ['three_quarter', 'min_wake', 'best'];

/** Seed 001 (Dongjoo Seo's patch): the adaptive sleep at ¾ of the poll_stat mean, here as a fixed delay. */
export const FIXED_FRACTION_OF_MEAN = 0.75;

/** A device profile of hpsim (tools/hpsim/README.md grammar) standing for one seed's hardware. */
export interface LegacyProfile {
  id: string;
  /** hpsim profile, integer ns */
  profile: string;
  title: string;
  /** how it was scaled from the seed's hardware (docs/validation-legacy.md) */
  scale: string;
}

/**
 * One instruction = 1 ns makes the guest's CPU work 3–5× dearer than on the seeds' machines
 * (../shared/docs/testbed.md "Scale"): a sleep/wake pair and the path around the sleep cost
 * accordingly more, so the service times are scaled up by about that factor to keep service time
 * over wake-up cost in the seeds' range. Seed 001: 970 Pro / Optane 900P at 16–21 µs per job (8 and
 * 12 jobs at 491k / 582k IOPS), ×2.5–3 → a tight 50 µs (the testbed's fixed 50 µs already gave its
 * 100 / 56 / 36 % shape). Seed 004: Optane at 8.4 µs with ≈ 2 µs of wake-up (its adjust column),
 * ratio ≈ 4; the guest's wake overhead plus the path before the sleep is ≈ 7 µs, ×3.6 → 30 µs,
 * uniform so that the minimum is a hard 27 µs.
 */
export const PROFILES: readonly LegacyProfile[] = [
  { id: 'seed001', profile: 'normal:50000:1000', title: 'tight 50 µs (seed 001: 970 Pro / Optane 900P, ½ vs ¾ mean)', scale: 'per-job latency 16–21 µs on the seed hardware, ×2.5–3' },
  { id: 'seed004', profile: 'uniform:27000:33000', title: 'Optane-like 27–33 µs, hard minimum (seed 004: min − wake)', scale: 'Optane 8.4 µs on the seed hardware, ×3.6 (service time / (wake + pre-sleep path) ≈ 4 as there)' },
];

/** Mean of an hpsim profile (ns), for sizing warm-ups. */
export function profileMeanNs(p: string): number {
  const [kind, ...a] = p.split(':');
  const n = a.map(Number);
  if (n.some((x) => !Number.isInteger(x) || x < 0)) throw new Error(`hpsim profile ${p}: times must be integer ns`);
  switch (kind) {
    case 'fixed':
    case 'normal':
      return n[0]!;
    case 'uniform':
      return (n[0]! + n[1]!) / 2;
    case 'twopoint':
      return (n[0]! * n[2]! + n[1]! * (1000 - n[2]!)) / 1000;
    case 'tail':
      return n[0]! + ((n[1]! - n[0]!) / 2) * (n[2]! / 1000);
    default:
      throw new Error(`hpsim profile ${p}: unknown kind ${kind}`);
  }
}

/** What the poller reported, in one shape for both workloads. */
export interface PollerResult {
  ios: number;
  iops: number;
  wallSeconds: number;
  /** all CPU the poller's thread was charged */
  cpuSeconds: number;
  /** CPU inside the waiting io_uring_enter calls (hpdrive only: a pvsync2 read submits and polls in one call) */
  waitCpuSeconds?: number;
  /** hpdrive: its waiting io_uring_enter calls × the CPU of an empty one (the syscall around the poll loop) */
  syscallResidueSeconds?: number;
  voluntarySwitches: number;
  latUs: { mean: number; p50: number; p99: number };
}

/** /sys/block/hpsimN/hpsim/stats: the device's own account of its time, cumulative since load. */
export interface HpsimStats {
  issued: number;
  completed_irq: number;
  completed_poll: number;
  service_ns_sum: number;
  service_ns_min: number;
  service_ns_max: number;
}

export function parseHpsimStats(text: string | null | undefined): HpsimStats | undefined {
  if (!text) return undefined;
  const kv = Object.fromEntries(text.trim().split(/\s+/).map((x) => x.split('=') as [string, string]));
  const keys = ['issued', 'completed_irq', 'completed_poll', 'service_ns_sum', 'service_ns_min', 'service_ns_max'] as const;
  const out = {} as HpsimStats;
  for (const k of keys) {
    const v = Number(kv[k]);
    if (kv[k] === undefined || !Number.isFinite(v)) throw new Error(`hpsim stats: no ${k} in "${text}"`);
    out[k] = v;
  }
  return out;
}

/** The device's mean service time (s) and completions between two readings. */
export function hpsimOverRun(b: HpsimStats | undefined, a: HpsimStats | undefined): { completed: number; polled: number; meanSeconds: number | undefined; minSeconds: number | undefined } | undefined {
  if (!b || !a) return undefined;
  const completed = a.completed_irq + a.completed_poll - b.completed_irq - b.completed_poll;
  return {
    completed,
    polled: a.completed_poll - b.completed_poll,
    meanSeconds: completed > 0 ? (a.service_ns_sum - b.service_ns_sum) / completed / 1e9 : undefined,
    minSeconds: a.service_ns_min > 0 ? a.service_ns_min / 1e9 : undefined,
  };
}

export interface LegacyRun {
  profile: string;
  workload: Workload;
  delay: DelayMode;
  /** false: the exporter's BPF programs were detached (the baseline of "tracing does not change the workload") */
  traced?: boolean;
  /** false: kernel.bpf_stats_enabled was 0, the exporter as deployed (L8's traced side); else 1, for every program's run time */
  bpfStats?: boolean;
  /** the io_poll_delay the test set for this run (µs; −1 classic, 0 adaptive) */
  ioPollDelay: number;
  /** how a fixed delay was derived from the adaptive run */
  derivation?: string;
  device: string;
  poller: PollerResult;
  /** raw output of the workload tool */
  raw: unknown;
  before: string;
  after: string;
  /** the device's own stats around the measured run (hpsim only) */
  hpsimBefore?: string | null;
  hpsimAfter?: string | null;
  /** debugfs poll_stat of the device read by the guest agent every 50 ms during the measured run */
  pollStatWatch: PollStatWatch;
  /** the session's exporter: listening after (guest ms), BPF up after (host s) */
  exporterStartMs: number;
  bpfReadySeconds: number;
  /** host wall time of the run, idle gap to after-scrape (s) */
  hostSeconds?: number;
}

export interface LegacySession extends SessionBase {
  suite: string;
  /** virtual time (QEMU icount) */
  icount: boolean;
  profiles: LegacyProfile[];
  ios: number;
  warmupIos: number;
  exporterArgs: string[];
  runs: LegacyRun[];
  /** the one exporter of the session, stopped at its end */
  exporterStop?: ExporterStop;
}

export interface LegacyOptions {
  profiles: readonly LegacyProfile[];
  workloads: readonly Workload[];
  delays: readonly DelayMode[];
  /** an adaptive run with the BPF programs detached after the traced ones */
  untraced: boolean;
  /** I/Os of each measured run */
  ios: number;
  /** I/Os of each adaptive run's warm-up (0: derived from the profile, see warmupIos) */
  warmupIos: number;
  exporterArgs: string[];
  log: (msg: string) => void;
}

/**
 * The warm-up of an adaptive run: at least 0.15 s of guest time at the profile's mean. Adaptive
 * stats start at the first hybrid poll and poll_stat fills only when the first 100 ms window
 * closes (until then nothing sleeps); with a steady device one window is the steady state.
 */
export function warmupIos(o: Pick<LegacyOptions, 'warmupIos'>, p: LegacyProfile): number {
  return o.warmupIos > 0 ? o.warmupIos : Math.ceil(0.15e9 / profileMeanNs(p.profile));
}

/** The distinct contents of poll_stat during a run, with the guest's clock (ms). */
export interface PollStatWatch {
  samples: { t: number; text: string | null }[];
  end: number;
  /** the threads that ran most from the watch's start to its stop, the workload's included ("comm tid: x ms") */
  threads?: string[];
}

/** The read 4 KiB line of one poll_stat content. */
function read4k(text: string | null): { samples: number; meanNs?: number; minNs?: number } | undefined {
  const p = text === null ? undefined : parsePollStat(text);
  return p?.ok && p.value.kind === 'buckets' ? p.value.buckets.find((x) => x.op === 'read' && x.sizeBytes === 4096) : undefined;
}

/**
 * The mean (and min) a run's adaptive sleeps were computed from (seconds), weighted per I/O. Each
 * content of poll_stat is current while the next 100 ms window collects its samples, and every I/O
 * of that window slept ½ the current mean: so each content's mean is weighted by the next
 * content's sample count. `ios` is how many completions those windows saw (the run's I/O count
 * when no window was missed).
 */
export function pollStatMeanOverRun(w: PollStatWatch): { meanSeconds: number | undefined; minSeconds: number | undefined; ios: number } {
  let weighted = 0;
  let weightedMin = 0;
  let minIos = 0;
  let ios = 0;
  for (let i = 0; i + 1 < w.samples.length; i++) {
    const cur = read4k(w.samples[i]!.text);
    const next = read4k(w.samples[i + 1]!.text);
    if (cur?.meanNs === undefined || !next) continue;
    weighted += (cur.meanNs / 1e9) * next.samples;
    ios += next.samples;
    if (cur.minNs !== undefined) {
      weightedMin += (cur.minNs / 1e9) * next.samples;
      minIos += next.samples;
    }
  }
  return { meanSeconds: ios > 0 ? weighted / ios : undefined, minSeconds: minIos > 0 ? weightedMin / minIos : undefined, ios };
}

/** hpdrive's JSON line in the common shape. */
export function fromHpdrive(d: DriverResult): PollerResult {
  return {
    ios: d.ios,
    iops: d.iops,
    wallSeconds: d.wall_s,
    cpuSeconds: d.cpu.exec_s,
    waitCpuSeconds: d.cpu.wait_s,
    syscallResidueSeconds: (d.cpu.wait_calls * d.cpu.empty_enter_ns) / 1e9,
    voluntarySwitches: d.ctxsw.voluntary,
    latUs: { mean: d.lat_us.mean, p50: d.lat_us.p50, p99: d.lat_us.p99 },
  };
}

interface FioJob {
  job_runtime: number;
  usr_cpu: number;
  sys_cpu: number;
  ctx: number;
  error: number;
  read: { total_ios: number; iops: number; clat_ns: { mean: number; percentile?: Record<string, number> } };
}

/**
 * fio's JSON (one job) in the common shape. fio's CPU is usr+sys of the job over its runtime (its
 * getrusage); `ctx` counts voluntary and involuntary switches together.
 */
export function fromFio(j: { jobs: FioJob[] }): PollerResult {
  const job = j.jobs[0];
  if (!job) throw new Error('fio: no job in the output');
  if (job.error) throw new Error(`fio: job error ${job.error}`);
  const secs = job.job_runtime / 1000;
  const p = job.read.clat_ns.percentile ?? {};
  return {
    ios: job.read.total_ios,
    iops: job.read.iops,
    wallSeconds: secs,
    cpuSeconds: ((job.usr_cpu + job.sys_cpu) / 100) * secs,
    voluntarySwitches: job.ctx,
    latUs: { mean: job.read.clat_ns.mean / 1000, p50: (p['50.000000'] ?? NaN) / 1000, p99: (p['99.000000'] ?? NaN) / 1000 },
  };
}

/** Host-side timeout of one workload call: runs are counted in I/Os, so allow generously per I/O. */
const timeoutFor = (ios: number) => 180_000 + ios * 5;

async function runHpdrive(g: Guest, device: string, ios: number, qd: number): Promise<DriverResult> {
  // one request for start and result, as session.ts runs it (agent.mjs: a second one lands mid-run)
  const r = await g.agent<{ exit: { code: number | null } | null; result: (DriverResult & { error?: string }) | null; stdout: string; stderr: string }>(
    'POST', '/drive', { device: `/dev/${device}`, mode: 'poll', qd, bs: 4096, ios, wait: true }, timeoutFor(ios));
  if (!r.result || r.result.error || (r.exit && r.exit.code !== 0)) throw new Error(`hpdrive failed (exit ${r.exit?.code}): ${r.result?.error ?? r.stdout + r.stderr}`);
  return r.result;
}

async function runFio(g: Guest, device: string, ios: number): Promise<{ jobs: FioJob[] }> {
  const r = await g.agent<{ exit: { code: number | null } | null; result: { jobs: FioJob[] } | null; stdout: string; stderr: string }>(
    'POST', '/fio', { device: `/dev/${device}`, ios }, timeoutFor(ios));
  if (!r.result || r.exit?.code !== 0) throw new Error(`fio failed (exit ${r.exit?.code}): ${r.stdout}${r.stderr}`);
  return r.result;
}

const runWorkload = (g: Guest, w: Workload, device: string, ios: number) => (isHpdrive(w) ? runHpdrive(g, device, ios, queueDepth(w)) : runFio(g, device, ios));

async function hpsimStats(g: Guest, device: string): Promise<string | null> {
  if (!device.startsWith('hpsim')) return null;
  return (await g.agent<{ stats: string | null }>('GET', `/hpsim/stats?device=${device}`)).stats;
}

/** The measured part of one run: before-scrape, exporter paused, measured run, resumed, after-scrape. */
async function measuredRun(g: Guest, w: Workload, device: string, ios: number, traced: boolean) {
  if (!traced) await g.agent('POST', '/bpf/attach', { attached: false }, 60_000);
  const before = await g.scrape();
  const hpsimBefore = await hpsimStats(g, device);
  await g.agent('POST', '/exporter/pause', {});
  let raw: unknown;
  let poller: PollerResult;
  let pollStatWatch: PollStatWatch;
  let hpsimAfter: string | null;
  await g.agent('POST', '/watch/start', { device });
  try {
    if (isHpdrive(w)) {
      const d = await runHpdrive(g, device, ios, queueDepth(w));
      raw = d;
      poller = fromHpdrive(d);
    } else {
      const j = await runFio(g, device, ios);
      raw = j.jobs[0];
      poller = fromFio(j);
    }
  } finally {
    pollStatWatch = await g.agent<PollStatWatch>('POST', '/watch/stop', {});
    hpsimAfter = await hpsimStats(g, device);
    await g.agent('POST', '/exporter/resume', {});
  }
  const after = await g.scrape();
  if (!traced) await g.agent('POST', '/bpf/attach', { attached: true }, 60_000);
  return { poller, raw, before, after, pollStatWatch, hpsimBefore, hpsimAfter };
}

/** Mean wake overhead of a run (timer expiry → back on CPU, the exporter's histogram), seconds. */
export function wakeOverheadSeconds(r: Pick<LegacyRun, 'before' | 'after' | 'device'>): number | undefined {
  const h = histDelta(parseExposition(r.before), parseExposition(r.after), 'hybridpoll_poll_wake_overhead_seconds', { device: r.device });
  return h && h.count > 0 ? h.mean : undefined;
}

/** ¾ of the poll_stat mean the adaptive run slept on (per I/O over the run), in whole µs, at least 1. */
export function threeQuarterDelayUs(adaptive: Pick<LegacyRun, 'pollStatWatch'>): { us: number; derivation: string } {
  const m = pollStatMeanOverRun(adaptive.pollStatWatch).meanSeconds;
  if (m === undefined || !(m > 0)) throw new Error('adaptive run left no read 4k poll_stat mean to derive the ¾-mean delay from');
  const us = Math.max(1, Math.round(m * 1e6 * FIXED_FRACTION_OF_MEAN));
  return { us, derivation: `¾ × poll_stat mean ${(m * 1e6).toFixed(2)} µs` };
}

/**
 * Seed 004's rule: the poll_stat minimum the adaptive run saw (per I/O over the run) minus the
 * wake overhead the exporter measured in it (Stephen Bates' "OS wake time"), whole µs, at least 1.
 */
export function minMinusWakeDelayUs(adaptive: Pick<LegacyRun, 'pollStatWatch' | 'before' | 'after' | 'device'>): { us: number; derivation: string } {
  const min = pollStatMeanOverRun(adaptive.pollStatWatch).minSeconds;
  const wake = wakeOverheadSeconds(adaptive);
  if (min === undefined || !(min > 0)) throw new Error('adaptive run left no read 4k poll_stat min to derive the min − wake delay from');
  if (wake === undefined) throw new Error('adaptive run has no measured wake overhead (hybridpoll_poll_wake_overhead_seconds) to derive the min − wake delay from');
  const us = Math.max(1, Math.round((min - wake) * 1e6));
  return { us, derivation: `poll_stat min ${(min * 1e6).toFixed(2)} µs − wake overhead ${(wake * 1e6).toFixed(2)} µs` };
}

/** The exporter's --model.latency-budget default (src/cli/common.ts): a share of the mean device time. */
export const ADVICE_BUDGET = 0.01;
/** Mean latency of two runs in virtual time: what is not the sleep's (the loop's edges). */
export const LATENCY_SLACK_S = 0.1e-6;
/** Settings above the advice tried at most. */
const MAX_ABOVE = 4;

/** The latency budget of the advice: ADVICE_BUDGET of the device's own mean over the classic run. */
export function adviceBudgetSeconds(classic: Pick<LegacyRun, 'hpsimBefore' | 'hpsimAfter'>): number {
  return (hpsimOverRun(parseHpsimStats(classic.hpsimBefore), parseHpsimStats(classic.hpsimAfter))?.meanSeconds ?? NaN) * ADVICE_BUDGET;
}

/** What a run's added latency is computed from: its mean latency and the rq_complete program's run time over it (bpf_stats; 0 without). */
export interface RunLatency {
  meanUs: number;
  ios: number;
  rqCompleteSeconds: number;
}

/** rq_complete's run time per I/O, seconds; undefined without bpf_stats. */
export const completionEdgePerIo = (r: RunLatency): number | undefined => (r.rqCompleteSeconds > 0 && r.ios > 0 ? r.rqCompleteSeconds / r.ios : undefined);

/**
 * The latency a sleep adds, as the exporter's budget counts it (against classic polling): a run's
 * mean latency above the classic run's, less the extra run time per I/O of the rq_complete program,
 * which a slept I/O's completion runs more of (1.54–1.59 against 0.84 µs per I/O on the 5.10
 * guest, bpf_stats on) before the poller sees it — the exporter's own cost, the same at every
 * sleep. NaN without bpf_stats in either run.
 */
export function addedLatencySeconds(r: RunLatency, classic: RunLatency): number {
  const e = completionEdgePerIo(r);
  const ec = completionEdgePerIo(classic);
  if (e === undefined || ec === undefined) return NaN;
  return (r.meanUs - classic.meanUs) * 1e-6 - (e - ec);
}

/** A measured run's RunLatency from its scrapes (the lab's stop rule; the checks take theirs from their figures). */
function runLatency(r: LegacyRun): RunLatency {
  const s = delta(parseExposition(r.before), parseExposition(r.after), 'hybridpoll_bpf_program_run_seconds_total', { program: 'rq_complete' });
  return { meanUs: r.poller.latUs.mean, ios: r.poller.ios, rqCompleteSeconds: s ?? 0 };
}

/**
 * The exporter's advice fed the adaptive run, applied: the io_poll_delay it names for its best
 * static sleep (hybridpoll_optimal_io_poll_delay_microseconds; hybridpoll_optimal_sleep_seconds is
 * the sleep that setting gives). Undefined where the best is classic polling (a sleep of 0): there
 * is no sleep to apply.
 */
export function bestDelayUs(adaptive: Pick<LegacyRun, 'after' | 'device'>): { us: number; derivation: string } | undefined {
  const a = parseExposition(adaptive.after);
  const dev = { device: adaptive.device };
  const best = value(a, 'hybridpoll_optimal_sleep_seconds', dev);
  if (best === undefined) throw new Error('adaptive run left no hybridpoll_optimal_sleep_seconds to apply');
  if (!(best > 0)) return undefined;
  const us = value(a, 'hybridpoll_optimal_io_poll_delay_microseconds', dev);
  if (us === undefined || !Number.isInteger(us) || us < 1) throw new Error(`the exporter's optimal sleep ${(best * 1e6).toFixed(2)} µs came without an io_poll_delay setting (hybridpoll_optimal_io_poll_delay_microseconds ${us})`);
  return { us, derivation: `the exporter's advice: io_poll_delay ${us} for its optimal sleep ${(best * 1e6).toFixed(2)} µs` };
}

/**
 * The model window of the session's exporter (guest seconds) and the idle guest time before each
 * run, which is longer: the window at a run's after-scrape then reaches back to that run's
 * before-scrape and no further, so one exporter serves every run and its model is fed that run
 * alone (an exporter start costs seconds of guest CPU under emulation, a run a fraction of one).
 * Generous: while the host is between requests the idle guest's clock jumps from timer to timer
 * (icount sleep=off), and with a 5 s window one run's before-scrape fell out of it on a loaded host
 * (a 5,000-I/O fio run, 0.18 s of I/O, spanned more than 5 guest seconds between its scrapes).
 */
export const MODEL_WINDOW_SECONDS = 120;
const IDLE_MS = MODEL_WINDOW_SECONDS * 1000 * 1.2;

/** Warm-up I/Os of every non-adaptive run (a fresh process and ring; poll_stat persists per queue). */
const WARMUP_IOS = 200;

export async function runLegacySession(g: Guest, base: Omit<LegacySession, 'runs' | 'wallSeconds' | 'profiles' | 'ios' | 'warmupIos' | 'exporterArgs'>, o: LegacyOptions): Promise<LegacySession> {
  const t0 = Date.now();
  const session: LegacySession = { ...base, wallSeconds: 0, profiles: [...o.profiles], ios: o.ios, warmupIos: o.warmupIos, exporterArgs: o.exporterArgs, runs: [] };
  const sims = g.info.devices.filter((d) => d.name.startsWith('hpsim')).map((d) => d.name).sort();
  let started = false;
  try {
    if (sims.length < o.profiles.length) throw new Error(`${o.profiles.length} profiles need as many hpsim devices, the guest has ${JSON.stringify(g.info.devices.map((d) => d.name))}`);
    // Every BPF program's run time over each run (the completion edge of L5, legacyBpfCost).
    await g.agent('POST', '/bpf/stats', { enable: true });
    const st = await g.agent<{ startMs: number }>('POST', '/exporter/start', { args: o.exporterArgs, timeoutMs: 300_000 }, 400_000);
    started = true;
    const ready = await waitBpfUp(g, 400_000);
    o.log(`exporter listening after ${(st.startMs / 1000).toFixed(1)} s (guest clock), BPF up ${ready.toFixed(1)} s later (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    for (const [i, p] of o.profiles.entries()) {
      const device = sims[i]!;
      const set = await g.agent<{ profile: string | null }>('POST', '/hpsim/profile', { device, profile: p.profile, seed: i + 1 });
      if (set.profile !== p.profile) throw new Error(`${device} profile reads ${set.profile} after writing ${p.profile}`);
      for (const w of o.workloads) {
        let adaptive: LegacyRun | undefined;
        // the traced settings, then the adaptive one again with the BPF programs detached and once
        // more attached without bpf_stats (its clock reads around every program run are the lab's
        // instrument, not the exporter's cost: L8 compares these two)
        const again = o.untraced && o.delays.includes('adaptive');
        const plan = [
          ...o.delays.map((delay) => ({ delay, traced: true, stats: true })),
          ...(again ? [{ delay: 'adaptive' as const, traced: false, stats: true }, { delay: 'adaptive' as const, traced: true, stats: false }] : []),
        ];
        const measure = async (delay: DelayMode, ioPollDelay: number, derivation: string | undefined, traced: boolean, stats: boolean): Promise<LegacyRun> => {
          const r = await g.agent<{ value: string }>('POST', '/io_poll_delay', { device, value: ioPollDelay });
          if (Number(r.value) !== ioPollDelay) throw new Error(`io_poll_delay of ${device} reads ${r.value} after writing ${ioPollDelay}`);
          const t1 = Date.now();
          await g.agent('POST', '/idle', { ms: IDLE_MS }, 300_000);
          await runWorkload(g, w, device, delay === 'adaptive' ? warmupIos(o, p) : WARMUP_IOS);
          if (!stats) await g.agent('POST', '/bpf/stats', { enable: false });
          let m: Awaited<ReturnType<typeof measuredRun>>;
          try {
            m = await measuredRun(g, w, device, o.ios, traced);
          } finally {
            // the runs after it time every program again, even when this one failed
            if (!stats) await g.agent('POST', '/bpf/stats', { enable: true });
          }
          const run: LegacyRun = { profile: p.id, workload: w, delay, ...(traced ? {} : { traced }), ...(stats ? {} : { bpfStats: false }), ioPollDelay, ...(derivation ? { derivation } : {}), device, ...m, exporterStartMs: st.startMs, bpfReadySeconds: ready, hostSeconds: (Date.now() - t1) / 1000 };
          session.runs.push(run);
          const q = m.poller;
          o.log(`legacy ${p.id} ${w}${traced ? '' : ' UNTRACED'}${stats ? '' : ' (bpf_stats off)'} io_poll_delay=${ioPollDelay} (${delay}${derivation ? `: ${derivation}` : ''}): ${q.ios} I/Os, ${Math.round(q.iops)} IOPS, CPU ${((q.cpuSeconds / q.wallSeconds) * 100).toFixed(1)}%, ` +
            `${(q.voluntarySwitches / Math.max(1, q.ios)).toFixed(2)} csw/IO, mean ${q.latUs.mean.toFixed(2)} µs (${run.hostSeconds!.toFixed(0)} s; ${((Date.now() - t0) / 1000).toFixed(0)} s total); threads: ${m.pollStatWatch.threads?.join(', ')}`);
          return run;
        };
        let classic: LegacyRun | undefined;
        for (const { delay, traced, stats } of plan) {
          let ioPollDelay = delay === 'classic' ? -1 : 0;
          let derivation: string | undefined;
          if (DERIVED.includes(delay)) {
            if (!adaptive) throw new Error(`${delay} needs the adaptive run of ${p.id}/${w} before it`);
            const d = delay === 'three_quarter' ? threeQuarterDelayUs(adaptive) : delay === 'min_wake' ? minMinusWakeDelayUs(adaptive) : bestDelayUs(adaptive);
            if (!d) {
              o.log(`legacy ${p.id} ${w}: the exporter's best static sleep is classic polling (0): no best run (the classic run stands for it)`);
              continue;
            }
            ({ us: ioPollDelay, derivation } = d);
          }
          const run = await measure(delay, ioPollDelay, derivation, traced, stats);
          if (delay === 'adaptive' && traced && stats) adaptive = run;
          if (delay === 'classic' && traced && stats) classic = run;
          // Above the advice, one µs at a time, until a setting breaks the latency budget: the
          // measured best setting, against which the advice is judged (L9 best is best).
          if (delay === 'best' && adaptive && classic) {
            const budget = adviceBudgetSeconds(classic);
            for (let k = 1; k <= MAX_ABOVE; k++) {
              const above = await measure('above', ioPollDelay + k, `the advice + ${k} µs`, true, true);
              if (!(addedLatencySeconds(runLatency(above), runLatency(classic)) <= budget + LATENCY_SLACK_S)) break;
            }
          }
        }
      }
      await g.agent('POST', '/io_poll_delay', { device, value: -1 }).catch(() => undefined);
    }
  } catch (e) {
    session.error = (e as Error).message;
    o.log(`legacy session stopped: ${session.error}`);
  } finally {
    if (started) session.exporterStop = await g.agent<ExporterStop>('POST', '/exporter/stop', {}, 60_000).catch((e: Error) => ({ exit: null, log: `stop failed: ${e.message}`, bpfPrograms: [] }));
    await g.agent('POST', '/bpf/stats', { enable: false }).catch(() => undefined);
  }
  session.wallSeconds = (Date.now() - t0) / 1000;
  return session;
}
