// The legacy-era session (issue 8): one boot of the bullseye guest (kernel 5.10, block-layer hybrid
// polling), two workloads (hpdrive's io_uring IOPOLL and the seeds' fio pvsync2+hipri job), each with
// io_poll_delay = −1 (classic), 0 (adaptive, ½ the poll_stat mean) and a fixed value. The test sets
// io_poll_delay through the guest agent; the exporter only reads it. Every run gets a freshly started
// exporter (its model window then holds that run alone), scraped before and after the workload; the
// exporter is paused during the measured run as in the trixie session (see session.ts scrapedRun).
import type { Guest } from './guest.js';
import type { DriverResult, ExporterStop, SessionBase } from './session.js';
import { waitBpfUp } from './session.js';
import { parsePollStat } from '../../../src/sources/pollStat.js';

export type Workload = 'hpdrive' | 'fio';
export type DelayMode = 'classic' | 'adaptive' | 'fixed';
export const WORKLOADS: readonly Workload[] = ['hpdrive', 'fio'];
export const DELAY_MODES: readonly DelayMode[] = ['classic', 'adaptive', 'fixed'];

/**
 * The fixed io_poll_delay, as a fraction of the adaptive run's poll_stat mean: ¾, the sleep of
 * Dongjoo Seo's 2020 patch (seed 001), which a fixed delay reproduces for a steady device time.
 */
export const FIXED_FRACTION_OF_MEAN = 0.75;

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

export interface LegacyRun {
  workload: Workload;
  delay: DelayMode;
  /** the io_poll_delay the test set for this run (µs; −1 classic, 0 adaptive) */
  ioPollDelay: number;
  device: string;
  poller: PollerResult;
  /** raw output of the workload tool */
  raw: unknown;
  before: string;
  after: string;
  /** debugfs poll_stat of the device read by the guest agent every 50 ms during the measured run */
  pollStatWatch: PollStatWatch;
  exporterStartMs: number;
  bpfReadySeconds: number;
  exporterStop?: ExporterStop;
}

export interface LegacySession extends SessionBase {
  suite: string;
  serial: string;
  secs: number;
  exporterArgs: string[];
  runs: LegacyRun[];
}

export interface LegacyOptions {
  secs: number;
  serial: string;
  exporterArgs: string[];
  workloads: readonly Workload[];
  log: (msg: string) => void;
}

const WARMUP_IOS = 200;

/** The distinct contents of poll_stat during a run, with the guest's clock (ms). */
export interface PollStatWatch {
  samples: { t: number; text: string | null }[];
  end: number;
}

/** The read 4 KiB line of one poll_stat content. */
function read4k(text: string | null): { samples: number; meanNs?: number } | undefined {
  const p = text === null ? undefined : parsePollStat(text);
  return p?.ok && p.value.kind === 'buckets' ? p.value.buckets.find((x) => x.op === 'read' && x.sizeBytes === 4096) : undefined;
}

/**
 * The mean a run's adaptive sleeps were computed from (seconds), weighted per I/O. Each content of
 * poll_stat is current while the next 100 ms window collects its samples, and every I/O of that
 * window slept ½ the current mean: so each content's mean is weighted by the next content's sample
 * count. `ios` is how many completions those windows saw (the run's I/O count when no window was
 * missed). Under TCG the window means vary 10× within a run, so a time-weighted mean is biased.
 */
export function pollStatMeanOverRun(w: PollStatWatch): { meanSeconds: number | undefined; ios: number } {
  let weighted = 0;
  let ios = 0;
  for (let i = 0; i + 1 < w.samples.length; i++) {
    const cur = read4k(w.samples[i]!.text);
    const next = read4k(w.samples[i + 1]!.text);
    if (cur?.meanNs === undefined || !next) continue;
    weighted += (cur.meanNs / 1e9) * next.samples;
    ios += next.samples;
  }
  return { meanSeconds: ios > 0 ? weighted / ios : undefined, ios };
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

async function runHpdrive(g: Guest, device: string, body: Record<string, unknown>, timeoutMs: number): Promise<DriverResult> {
  await g.agent('POST', '/drive', { device: `/dev/${device}`, mode: 'poll', qd: 1, bs: 4096, ...body });
  const r = await g.agent<{ exit: { code: number | null } | null; result: (DriverResult & { error?: string }) | null; stdout: string; stderr: string }>(
    'POST', '/drive/wait', {}, timeoutMs);
  if (!r.result || r.result.error || (r.exit && r.exit.code !== 0)) throw new Error(`hpdrive failed (exit ${r.exit?.code}): ${r.result?.error ?? r.stdout + r.stderr}`);
  return r.result;
}

async function runFio(g: Guest, device: string, body: Record<string, unknown>, timeoutMs: number): Promise<{ jobs: FioJob[] }> {
  const r = await g.agent<{ exit: { code: number | null } | null; result: { jobs: FioJob[] } | null; stdout: string; stderr: string }>(
    'POST', '/fio', { device: `/dev/${device}`, ...body }, timeoutMs);
  if (!r.result || r.exit?.code !== 0) throw new Error(`fio failed (exit ${r.exit?.code}): ${r.stdout}${r.stderr}`);
  return r.result;
}

/** One workload run: warm-up, before-scrape, exporter paused, measured run, resumed, after-scrape. */
async function measuredRun(g: Guest, w: Workload, device: string, secs: number): Promise<{ poller: PollerResult; raw: unknown; before: string; after: string; pollStatWatch: PollStatWatch }> {
  const timeoutMs = (secs + 120) * 1000;
  if (w === 'hpdrive') await runHpdrive(g, device, { ios: WARMUP_IOS }, timeoutMs);
  else await runFio(g, device, { ios: WARMUP_IOS }, timeoutMs);
  const before = await g.scrape();
  await g.agent('POST', '/exporter/pause', {});
  let raw: unknown;
  let poller: PollerResult;
  let pollStatWatch: PollStatWatch;
  await g.agent('POST', '/watch/start', { device });
  try {
    if (w === 'hpdrive') {
      const d = await runHpdrive(g, device, { secs }, timeoutMs);
      raw = d;
      poller = fromHpdrive(d);
    } else {
      const j = await runFio(g, device, { secs }, timeoutMs);
      raw = j.jobs[0];
      poller = fromFio(j);
    }
  } finally {
    pollStatWatch = await g.agent<PollStatWatch>('POST', '/watch/stop', {});
    await g.agent('POST', '/exporter/resume', {});
  }
  const after = await g.scrape();
  return { poller, raw, before, after, pollStatWatch };
}

/**
 * The fixed delay (µs) for a workload: ¾ of the poll_stat mean its adaptive run slept on (per I/O
 * over the run, see pollStatMeanOverRun), at least 1 µs.
 */
export function fixedDelayUs(adaptiveMeanSeconds: number | undefined): number {
  if (adaptiveMeanSeconds === undefined || !(adaptiveMeanSeconds > 0)) throw new Error('adaptive run left no read 4k poll_stat mean to derive the fixed delay from');
  return Math.max(1, Math.round(adaptiveMeanSeconds * 1e6 * FIXED_FRACTION_OF_MEAN));
}

export async function runLegacySession(g: Guest, base: Omit<LegacySession, 'runs' | 'wallSeconds' | 'serial' | 'secs' | 'exporterArgs'>, o: LegacyOptions): Promise<LegacySession> {
  const t0 = Date.now();
  const session: LegacySession = { ...base, wallSeconds: 0, serial: o.serial, secs: o.secs, exporterArgs: o.exporterArgs, runs: [] };
  const device = g.info.devices.find((d) => d.serial === o.serial)?.name;
  try {
    if (!device) throw new Error(`no NVMe namespace with serial ${o.serial} in the guest: ${JSON.stringify(g.info.devices)}`);
    // Every BPF program's run time over each run (the programs' own CPU per I/O, legacyBpfCost).
    await g.agent('POST', '/bpf/stats', { enable: true });
    for (const w of o.workloads) {
      let adaptiveMean: number | undefined;
      for (const delay of DELAY_MODES) {
        const ioPollDelay = delay === 'classic' ? -1 : delay === 'adaptive' ? 0 : fixedDelayUs(adaptiveMean);
        const set = await g.agent<{ value: string }>('POST', '/io_poll_delay', { device, value: ioPollDelay });
        if (Number(set.value) !== ioPollDelay) throw new Error(`io_poll_delay of ${device} reads ${set.value} after writing ${ioPollDelay}`);
        const t1 = Date.now();
        const st = await g.agent<{ startMs: number }>('POST', '/exporter/start', { args: o.exporterArgs, timeoutMs: 120_000 }, 150_000);
        let stop: ExporterStop | undefined;
        try {
          const ready = await waitBpfUp(g, 120_000);
          const m = await measuredRun(g, w, device, o.secs);
          stop = await g.agent<ExporterStop>('POST', '/exporter/stop', {}, 60_000);
          const run: LegacyRun = { workload: w, delay, ioPollDelay, device, ...m, exporterStartMs: st.startMs, bpfReadySeconds: ready, exporterStop: stop };
          session.runs.push(run);
          if (delay === 'adaptive') adaptiveMean = pollStatMeanOverRun(m.pollStatWatch).meanSeconds;
          const p = m.poller;
          o.log(`legacy ${w} io_poll_delay=${ioPollDelay} (${delay}): ${p.ios} I/Os, ${Math.round(p.iops)} IOPS, CPU ${((p.cpuSeconds / p.wallSeconds) * 100).toFixed(0)}%, ` +
            `${(p.voluntarySwitches / Math.max(1, p.ios)).toFixed(2)} csw/IO, mean ${p.latUs.mean.toFixed(0)} µs (${((Date.now() - t1) / 1000).toFixed(0)} s; ${((Date.now() - t0) / 1000).toFixed(0)} s total)`);
        } finally {
          if (!stop) await g.agent('POST', '/exporter/stop', {}, 60_000).catch(() => undefined);
        }
      }
    }
  } catch (e) {
    session.error = (e as Error).message;
    o.log(`legacy session stopped: ${session.error}`);
  } finally {
    if (device) await g.agent('POST', '/io_poll_delay', { device, value: -1 }).catch(() => undefined);
    await g.agent('POST', '/bpf/stats', { enable: false }).catch(() => undefined);
  }
  session.wallSeconds = (Date.now() - t0) / 1000;
  return session;
}
