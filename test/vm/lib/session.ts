// One guest boot, every workload: the figures all checks compare come from this single session,
// because under TCG only same-boot comparisons mean anything (run-to-run noise across boots ±40%).
// For each scenario and repetition it runs classic poll and hybrid with the exporter on the fentry
// path, and with the tracepoint fallback forced. Traced runs restart the exporter, so each run's
// model window and counters hold that run alone; the host scrapes the guest exporter before and
// after the workload. Then, with the same exporter paused, short runs alternate with its BPF
// programs detached and attached (A B B A ...): the paired baseline of "tracing does not change
// the workload", taken minutes apart from nothing else.
import type { Guest, GuestInfo, GuestImages } from './guest.js';

export type Tracing = 'untraced' | 'fentry' | 'tracepoint';
export type PollMode = 'poll' | 'hybrid';
export const TRACED: readonly Exclude<Tracing, 'untraced'>[] = ['fentry', 'tracepoint'];
export const MODES: readonly PollMode[] = ['poll', 'hybrid'];

export interface Scenario {
  id: string;
  title: string;
  /** serial of the emulated NVMe controller to use (see the boot's NvmeSpec) */
  serial: string;
  qd: number;
  bs: number;
  secs: number;
}

/** hpdrive's JSON line. */
export interface DriverResult {
  mode: string;
  flags: number;
  qd: number;
  bs: number;
  device: string;
  pid: number;
  ios: number;
  wall_s: number;
  iops: number;
  lat_us: { mean: number; p50: number; p90: number; p99: number; p999: number; max: number };
  /** exec_s: all CPU the scheduler charged; wait_s: CPU inside the waiting io_uring_enter calls (polling) */
  /** wait_calls: waiting io_uring_enter calls; empty_enter_ns: CPU of one empty io_uring_enter, timed the same way after every 16th of them */
  cpu: { exec_s: number; run_delay_s: number; timeslices: number; utime_s: number; stime_s: number; util: number; per_io_us: number; wait_s: number; wait_calls: number; empty_enter_ns: number };
  ctxsw: { voluntary: number; involuntary: number };
}

export interface ExporterStop {
  exit: { code: number | null; signal: string | null } | null;
  log: string;
  bpfPrograms: unknown;
}

export interface RunRecord {
  scenario: string;
  tracing: Tracing;
  mode: PollMode;
  rep: number;
  device: string;
  driver: DriverResult;
  /** raw exposition text of the guest exporter before and after the run (traced runs only) */
  before?: string;
  after?: string;
  exporterStartMs?: number;
  /** seconds from exporter start until hybridpoll_bpf_up was 1 */
  bpfReadySeconds?: number;
  exporterStop?: ExporterStop;
  /** an A/B run: the exporter on this path was paused, its programs detached (tracing 'untraced') or attached */
  ab?: { exporter: Exclude<Tracing, 'untraced'>; pair: number };
  /** tracepoint runs: snapshots of a second loader on the fentry path beside the exporter, same run */
  twin?: { before: LoaderSnap; after: LoaderSnap };
}

/** The loader's snapshot line (src/bpf/README.md), the parts the checks read. */
export interface LoaderSnap {
  hists: { dev: string; kind: string; count: number; sum: number; aux0: number; aux1: number }[];
  devs: { dev: string; polled_ios: number }[];
  /** per program run time (ns) while kernel.bpf_stats_enabled=1 */
  progs?: Record<string, { run_ns?: number }>;
}

/** What every guest session records about its boot, trixie's and the legacy one's. */
export interface SessionBase {
  startedAt: string;
  wallSeconds: number;
  accel: string;
  accelWhy: string;
  images: GuestImages;
  info: GuestInfo;
  bootSeconds: number;
  /** set when the session could not run every workload */
  error?: string;
}

export interface Session extends SessionBase {
  exporterArgs: Record<Exclude<Tracing, 'untraced'>, string[]>;
  scenarios: Scenario[];
  runs: RunRecord[];
}

export interface SessionOptions {
  scenarios: Scenario[];
  reps: number;
  /** A/B pairs per mode and path, and the seconds of each of their runs */
  abPairs: number;
  abSecs: number;
  exporterArgs: Record<Exclude<Tracing, 'untraced'>, string[]>;
  log: (msg: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function deviceOf(info: GuestInfo, serial: string): string {
  const d = info.devices.find((x) => x.serial === serial);
  if (!d) throw new Error(`no NVMe namespace with serial ${serial} in the guest: ${JSON.stringify(info.devices)}`);
  return d.name;
}

/** I/Os of the warm-up run before each measured run. */
const WARMUP_IOS = 200;

interface DriveOptions {
  /** keep the ring open (idle) after the run until /drive/release */
  hold?: boolean;
  /** called between the warm-up and the measured run (the before-scrape) */
  beforeRun?: () => Promise<void>;
}

/**
 * Runs hpdrive after a short warm-up of the same mode: the device then already has its BPF series
 * in the before-scrape (a series appears with its first event, and the model diffs two snapshots
 * in which the device exists). Untraced runs get the same warm-up, so every run is alike.
 */
async function runDriver(g: Guest, s: Scenario, device: string, mode: PollMode, o: DriveOptions = {}): Promise<DriverResult> {
  const call = async (body: Record<string, unknown>, what: string) => {
    await g.agent('POST', '/drive', { device: `/dev/${device}`, mode, qd: s.qd, bs: s.bs, ...body });
    const r = await g.agent<{ exit: { code: number | null } | null; result: (DriverResult & { error?: string }) | null; stdout: string; stderr: string }>(
      'POST', '/drive/wait', {}, (s.secs + 120) * 1000);
    if (!r.result || r.result.error || (r.exit && r.exit.code !== 0)) {
      throw new Error(`hpdrive ${what} ${mode} on ${device} failed (exit ${r.exit?.code}): ${r.result?.error ?? r.stdout + r.stderr}`);
    }
    return r.result;
  };
  await call({ ios: WARMUP_IOS }, 'warm-up');
  await o.beforeRun?.();
  return call({ secs: s.secs, hold: o.hold ?? false }, 'run');
}

/** Scrapes until the exporter reports the BPF loader up (it may attach after the HTTP port opens). */
export async function waitBpfUp(g: Guest, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  let last = '';
  while (Date.now() - t0 < timeoutMs) {
    try {
      last = await g.scrape();
      if (/^hybridpoll_bpf_up(\{[^}]*\})? 1$/m.test(last)) return (Date.now() - t0) / 1000;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(500);
  }
  const up = /^hybridpoll_bpf_up.*$/m.exec(last)?.[0] ?? 'hybridpoll_bpf_up absent';
  throw new Error(`guest exporter: BPF not up after ${timeoutMs / 1000} s (${up})`);
}

/**
 * One workload with scrapes of the running exporter before and after. During the run the
 * exporter's Node process is stopped (SIGSTOP; its BPF programs stay attached and count): under
 * TCG, Node's own background work (JIT, GC, timers) costs seconds of emulated CPU on the guest's two
 * vCPUs, which on hardware is noise; the check "tracing does not change the workload" is about
 * what the BPF programs do to it. The driver holds its idle ring open until the after-scrape, so
 * the ring's own gauges (hybrid_poll_time) are still exported then.
 */
async function scrapedRun(g: Guest, s: Scenario, device: string, mode: PollMode, withTwin: boolean): Promise<Pick<RunRecord, 'driver' | 'before' | 'after' | 'twin'>> {
  let before = '';
  let twinBefore: LoaderSnap | undefined;
  let paused = false;
  try {
    const driver = await runDriver(g, s, device, mode, {
      hold: true,
      beforeRun: async () => {
        before = await g.scrape();
        if (withTwin) twinBefore = await g.agent<LoaderSnap>('POST', '/twin/snap', {});
        await g.agent('POST', '/exporter/pause', {});
        paused = true;
      },
    });
    const twinAfter = withTwin ? await g.agent<LoaderSnap>('POST', '/twin/snap', {}) : undefined;
    await g.agent('POST', '/exporter/resume', {});
    paused = false;
    const after = await g.scrape();
    return { driver, before, after, ...(twinBefore && twinAfter ? { twin: { before: twinBefore, after: twinAfter } } : {}) };
  } finally {
    if (paused) await g.agent('POST', '/exporter/resume', {}).catch(() => undefined);
    await g.agent('POST', '/drive/release', {}).catch(() => undefined);
  }
}

/**
 * Traced against untraced, paired: the running exporter is paused and its loader's programs are
 * detached (SIGUSR1) or attached (SIGUSR2) between short runs, in the order A B B A A B ..., so a
 * drift of the host's speed over the minute hits both sides alike. Per mode, `pairs` pairs.
 */
async function abRuns(g: Guest, s: Scenario, device: string, tracing: Exclude<Tracing, 'untraced'>, rep: number, pairs: number,
  done: (r: RunRecord, t1: number) => void): Promise<void> {
  if (pairs < 1) return;
  await g.agent('POST', '/exporter/pause', {});
  try {
    for (const mode of ['hybrid', 'poll'] as const) {
      for (let pair = 0; pair < pairs; pair++) {
        const sides: boolean[] = pair % 2 ? [true, false] : [false, true];
        for (const attached of sides) {
          const t1 = Date.now();
          await g.agent('POST', '/bpf/attach', { attached }, 60_000);
          const driver = await runDriver(g, s, device, mode);
          done({ scenario: s.id, tracing: attached ? tracing : 'untraced', mode, rep, device, driver, ab: { exporter: tracing, pair } }, t1);
        }
      }
    }
  } finally {
    await g.agent('POST', '/bpf/attach', { attached: true }, 60_000).catch(() => undefined);
    await g.agent('POST', '/exporter/resume', {}).catch(() => undefined);
  }
}

async function stopExporter(g: Guest): Promise<ExporterStop> {
  return g.agent<ExporterStop>('POST', '/exporter/stop', {}, 60_000);
}

/**
 * Runs every scenario × repetition × tracing, hybrid first then classic poll. A traced pair gets a
 * freshly started exporter, so the model window after the hybrid run holds that run alone (the
 * classic run after it is only compared through counter deltas). Keeps what it got if one fails.
 */
export async function runSession(g: Guest, base: Omit<Session, 'runs' | 'wallSeconds' | 'scenarios' | 'exporterArgs'>, o: SessionOptions): Promise<Session> {
  const t0 = Date.now();
  const session: Session = { ...base, wallSeconds: 0, scenarios: o.scenarios, exporterArgs: o.exporterArgs, runs: [] };
  const total = o.scenarios.length * o.reps * TRACED.length * MODES.length * (1 + 2 * o.abPairs);
  const order: PollMode[] = ['hybrid', 'poll'];
  const logRun = (r: RunRecord, t1: number) => {
    const d = r.driver;
    const what = r.ab ? `${r.ab.exporter} A/B pair ${r.ab.pair} ${r.tracing === 'untraced' ? 'detached' : 'attached'}` : r.tracing;
    o.log(`run ${session.runs.length}/${total} ${r.scenario} rep ${r.rep} ${what} ${r.mode}: ${d.ios} I/Os, ${Math.round(d.iops)} IOPS, ` +
      `CPU ${(d.cpu.util * 100).toFixed(0)}%, ${(d.ctxsw.voluntary / Math.max(1, d.ios)).toFixed(2)} vcsw/IO, ` +
      `p50 ${d.lat_us.p50.toFixed(0)} µs (${((Date.now() - t1) / 1000).toFixed(0)} s; ${((Date.now() - t0) / 1000).toFixed(0)} s total)`);
  };
  try {
    // The checked runs count every BPF program's run time: the programs' own CPU per I/O, and
    // the part of it the poll-loop window cannot contain (check 2, 3).
    await g.agent('POST', '/bpf/stats', { enable: true });
    for (const s of o.scenarios) {
      const device = deviceOf(g.info, s.serial);
      for (let rep = 0; rep < o.reps; rep++) {
        for (const tracing of TRACED) {
          let startInfo: Pick<RunRecord, 'exporterStartMs' | 'bpfReadySeconds'> = {};
          {
            const t1 = Date.now();
            const st = await g.agent<{ startMs: number }>('POST', '/exporter/start', { args: o.exporterArgs[tracing], timeoutMs: 120_000 }, 150_000);
            const ready = await waitBpfUp(g, 120_000).catch(async (e: Error) => {
              const progs = await g.agent<unknown>('GET', '/bpf/progs').catch((x: Error) => x.message);
              const stop = await stopExporter(g).catch((x: Error) => ({ log: `(stop failed: ${x.message})`, exit: null }));
              throw new Error(`${e.message}\nexporter exit ${JSON.stringify(stop.exit)}; BPF programs loaded: ${JSON.stringify(progs)}\n--- guest exporter log ---\n${stop.log.slice(-3000)}`);
            });
            startInfo = { exporterStartMs: st.startMs, bpfReadySeconds: ready };
            o.log(`${s.id} rep ${rep}: exporter (${tracing}) listening after ${(st.startMs / 1000).toFixed(1)} s, BPF up ${ready.toFixed(1)} s later (${((Date.now() - t1) / 1000).toFixed(0)} s)`);
          }
          const recs: RunRecord[] = [];
          // The tracepoint exporter gets a fentry twin: both paths measure the same runs. (Not the
          // other way round: the fentry runs' CPU accounting must not pay for a second tracer.)
          const withTwin = tracing === 'tracepoint';
          try {
            if (withTwin) await g.agent('POST', '/twin/start', {}, 200_000);
            for (const mode of order) {
              const t1 = Date.now();
              const rec: RunRecord = { scenario: s.id, tracing, mode, rep, device, ...startInfo, ...(await scrapedRun(g, s, device, mode, withTwin)) };
              recs.push(rec);
              session.runs.push(rec);
              logRun(rec, t1);
            }
            if (withTwin) await g.agent('POST', '/twin/stop', {}, 30_000);
            // bpf_stats adds two clock reads per program run: off while traced and untraced are compared
            await g.agent('POST', '/bpf/stats', { enable: false });
            await abRuns(g, { ...s, secs: o.abSecs }, device, tracing, rep, o.abPairs, (rec, t1) => {
              session.runs.push(rec);
              logRun(rec, t1);
            });
            await g.agent('POST', '/bpf/stats', { enable: true });
          } finally {
            if (withTwin) await g.agent('POST', '/twin/stop', {}, 30_000).catch(() => undefined);
            const stop = await stopExporter(g);
            for (const r of recs) r.exporterStop = stop;
          }
        }
      }
    }
  } catch (e) {
    session.error = (e as Error).message;
    o.log(`session stopped: ${session.error}`);
  }
  session.wallSeconds = (Date.now() - t0) / 1000;
  return session;
}
