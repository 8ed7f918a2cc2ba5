// One guest boot, every workload, in virtual time (QEMU icount: one instruction = 1 ns, idle
// skipped; see docs/validation.md). Runs are sized by I/O count, not seconds. Per repetition: an
// interrupt-driven run of every scenario with no exporter at all; then, for each BPF path (fentry,
// then the tracepoint fallback with a fentry twin loader beside it), ONE exporter start for all
// scenarios (Node under TCG costs real seconds to start): each scenario has its own device, so
// the model's window of that device after its hybrid run holds that run alone. Each scenario runs
// hybrid then classic poll, scraped before and after; then, with the exporter paused and
// bpf_stats off, A/B runs alternate its programs detached and attached: the baseline of "tracing
// does not change the workload". A simulated device (hpsim) gets its profile and seed written
// before every run, so every run of a scenario sees the same sequence of service times. Last, the
// sampling check's runs (sampling-session.ts): one exporter per --bpf.sample rate in turn.
import type { Guest, GuestInfo, GuestImages } from './guest.js';
import type { SamplingScenario, SamplingSession } from './sampling.js';
import { mergeDrivers } from './drivers.js';
import { samplingRuns } from './sampling-session.js';

export type Tracing = 'untraced' | 'fentry' | 'tracepoint';
export type PollMode = 'poll' | 'hybrid' | 'irq';
export const TRACED: readonly Exclude<Tracing, 'untraced'>[] = ['fentry', 'tracepoint'];
export const MODES: readonly PollMode[] = ['poll', 'hybrid'];
/** Modes of the polling runs (scraped and A/B): hybrid first, then classic poll. */
const POLLED: readonly PollMode[] = ['hybrid', 'poll'];

export interface Scenario {
  id: string;
  title: string;
  /** the device: an hpsim device's name (hpsimN), or the serial of a QEMU NVMe controller */
  serial: string;
  /** hpsim profile (tools/hpsim grammar), written with HPSIM_SEED before every run; absent for NVMe */
  profile?: string;
  qd: number;
  bs: number;
  /** I/Os per measured run */
  ios: number;
  /** the device's time is defined on the guest clock (hpsim): the model checks apply */
  model: boolean;
  /**
   * hpdrive processes side by side on the device, each its own ring on its own vCPU (default 1);
   * their results are merged into one run (drivers.ts), and such a scenario has no A/B runs
   */
  procs?: number;
  /**
   * one ring over several devices: every device the ring polls, in hpdrive's slot order (slot i
   * reads device i mod n, or with `roundRobin` the first read), the first being `serial` and `profile`
   */
  ring?: { serial: string; profile: string }[];
  /**
   * with `ring`: each new read goes to the next device in turn, whichever slot it refills (hpdrive
   * -R, fio's file_service_type=roundrobin), instead of slot i always reading device i mod n
   */
  roundRobin?: boolean;
}

/** The seed written to a simulated device before every run: each run draws the same service times. */
export const HPSIM_SEED = 1;

/** The exporter's --model.window in the lab (exporterArgs), s. */
export const MODEL_WINDOW_S = 60;
/**
 * Guest idle before a classic run's first scrape on a simulated device or ring: longer than the model
 * window (and its 2 % edge slack), so the window after that run holds it alone and not also the same
 * devices' hybrid run just before. Which it held followed the guest time the scrapes took (under icount the guest clock
 * jumps over idle, host-side waits included): a ring's classic self-check read -14.6 % and -33 %
 * with both runs in it, -2.2 ... -2.9 % with its own. Idle costs no host time under icount.
 */
const WINDOW_IDLE_MS = Math.ceil(MODEL_WINDOW_S * 1000 * 1.08);

/** hpdrive's JSON line. */
export interface DriverResult {
  mode: string;
  flags: number;
  qd: number;
  bs: number;
  device: string;
  pid: number;
  ios: number;
  /** I/Os per device, in the order of `device` (comma-separated when one ring polls several) */
  device_ios?: number[];
  wall_s: number;
  iops: number;
  lat_us: { mean: number; p50: number; p90: number; p99: number; p999: number; max: number };
  /** exec_s: all CPU the scheduler charged; wait_s: CPU inside the waiting io_uring_enter calls (polling) */
  /** wait_calls: waiting io_uring_enter calls; empty_enter_ns: CPU of one empty io_uring_enter, timed the same way after every 16th of them */
  cpu: { exec_s: number; run_delay_s: number; timeslices: number; utime_s: number; stime_s: number; util: number; per_io_us: number; wait_s: number; wait_calls: number; empty_enter_ns: number };
  ctxsw: { voluntary: number; involuntary: number };
  /** the CPU hpdrive was on at the start and end of the measured phase; every CPU's task run time over it */
  /** quiet_wait_s: how long hpdrive waited for the other CPUs to go quiet before its measured phase (absent before it did) */
  cpus?: { on: [number, number]; task_s: number[]; quiet_wait_s?: number };
  /** the agent's list of the threads that ran most during the run, besides hpdrive ("comm tid: x ms") */
  besideThreads?: string[];
  /** set when this is the second try of a run: what ran beside the first (BESIDE_RETRY) */
  retried?: string;
  /** a merged run of several processes side by side (drivers.ts): each one's own result */
  procs?: DriverResult[];
}

/** Other tasks' run time beside a run above this share of it: the run is repeated once (a scraped one with its scrapes). */
export const BESIDE_RETRY = 0.02;

/** "1.23 ms (0.5 % of the run)" of besideSeconds, or why it is not known. */
export function besideText(d: DriverResult): string {
  const b = besideSeconds(d);
  if (b === undefined) return d.cpus ? `? (moved from CPU ${d.cpus.on[0]} to ${d.cpus.on[1]})` : '?';
  const who = b > 0.01 * d.wall_s && d.besideThreads?.length ? `: ${d.besideThreads.join(', ')}` : '';
  const q = d.cpus?.quiet_wait_s ?? 0;
  const waited = q > 0.01 ? `, quiet after ${(q * 1000).toFixed(0)} ms` : '';
  return `${(b * 1000).toFixed(2)} ms (${((100 * b) / d.wall_s).toFixed(1)} % of the run${who}${waited})`;
}

/** Whether other tasks used more than BESIDE_RETRY of the run's time beside it: the run is done once more. */
function busyBeside(d: DriverResult): boolean {
  const b = besideSeconds(d);
  return b !== undefined && b > BESIDE_RETRY * d.wall_s;
}

/** Task run time on the CPUs other than the poller's during the run (undefined if it moved or is unknown). */
export function besideSeconds(d: DriverResult): number | undefined {
  if (!d.cpus || d.cpus.on[0] !== d.cpus.on[1]) return undefined;
  return d.cpus.task_s.reduce((a, t, i) => (i === d.cpus!.on[0] ? a : a + t), 0);
}

export interface ExporterStop {
  exit: { code: number | null; signal: string | null } | null;
  log: string;
  bpfPrograms: unknown;
  /** listed again 2 s (guest) later when programs were left right after the exit */
  bpfProgramsLater?: unknown;
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
  /** hpsim devices: the device's own stats line (tools/hpsim) before and after the measured run */
  hpsim?: { before: string; after: string };
  /** the guest idled a model window before the run's first scrape: its window holds this run alone (and was empty before it) */
  windowIdle?: boolean;
  /** one ring over several devices (Scenario.ring): each device's name and stats lines, in slot order */
  ringDevices?: { device: string; hpsim: { before: string; after: string } }[];
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
  /** the lab profile that ran (HPVM_PROFILE) */
  profile?: string;
  /** the BPF paths that ran (default both) */
  paths?: Exclude<Tracing, 'untraced'>[];
  exporterArgs: Record<Exclude<Tracing, 'untraced'>, string[]>;
  scenarios: Scenario[];
  runs: RunRecord[];
  /** the sampling check's runs (sampling.ts), after every other run */
  sampling?: SamplingSession;
}

export interface SessionOptions {
  scenarios: Scenario[];
  /** BPF paths to run, in order (the CI profile: fentry only) */
  paths: readonly Exclude<Tracing, 'untraced'>[];
  reps: number;
  /** A/B pairs (detached, attached) per scenario, mode and path */
  abPairs: number;
  exporterArgs: Record<Exclude<Tracing, 'untraced'>, string[]>;
  /**
   * hpsim profiles for the io_uring hybrid convergence sweep (src/model/README.md, iouring_half_min):
   * QD1 hybrid runs on the first QD1 simulated scenario's device, fentry exporter, after the checked runs
   */
  sweep?: string[];
  /** the sampling check's workloads, run last, once per sample rate with one exporter at a time (sampling.ts) */
  sampling?: SamplingScenario[];
  log: (msg: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function deviceOf(info: GuestInfo, serial: string): string {
  const d = info.devices.find((x) => x.serial === serial);
  if (!d) throw new Error(`no device ${serial} in the guest (hpsim loaded? NVMe attached?): ${JSON.stringify(info.devices.map((x) => x.name))}`);
  return d.name;
}

/** Guest milliseconds of idle before every measured run (see runDriver). */
const QUIET_MS = 200;

/** I/Os of the warm-up run before each measured run. */
const WARMUP_IOS = 200;

/**
 * Wall time allowed for one hpdrive run: generous, since the guest's speed (instructions per host
 * second) depends on the host; a run of 10,000 QD1 I/Os takes a few seconds here.
 */
const driveTimeoutMs = (ios: number) => 120_000 + ios * 20;

interface DriveOptions {
  /** keep the ring open (idle) after the run until /drive/release */
  hold?: boolean;
  /** called between the warm-up and the measured run (the before-scrape) */
  beforeRun?: () => Promise<void>;
}

/** The simulated devices a scenario's run uses: its own, or every device of its one ring. */
function simDevices(g: Guest, s: Scenario, device: string): { device: string; profile: string }[] {
  if (s.ring) return s.ring.map((x) => ({ device: deviceOf(g.info, x.serial), profile: x.profile }));
  return s.profile ? [{ device, profile: s.profile }] : [];
}

/** Writes the simulated devices' profile and seed: the next request of each draws the seed's first service time. */
async function resetDevices(g: Guest, devs: { device: string; profile: string }[]): Promise<void> {
  for (const { device, profile } of devs) await g.agent('POST', '/hpsim/profile', { device, profile, seed: HPSIM_SEED });
}

async function deviceStats(g: Guest, devs: { device: string }[]): Promise<string[]> {
  const out: string[] = [];
  for (const { device } of devs) out.push((await g.agent<{ stats: string }>('GET', `/hpsim/stats?device=${device}`)).stats);
  return out;
}

/**
 * Runs hpdrive; a scraped run (beforeRun given) after a short warm-up of the same mode: the device
 * then already has its BPF series in the before-scrape (a series appears with its first event, and
 * the model diffs two snapshots in which the device exists). The simulated device is reset
 * (profile, seed) before the warm-up and again before the measured run.
 */
export async function runDriver(g: Guest, s: Scenario, device: string, mode: PollMode, o: DriveOptions = {}): Promise<Pick<RunRecord, 'driver' | 'hpsim' | 'ringDevices'>> {
  const sims = simDevices(g, s, device);
  type Answer = { exit: { code: number | null } | null; result: (DriverResult & { error?: string }) | null; beside?: string[]; stdout: string; stderr: string };
  const call = async (body: Record<string, unknown>, what: string, ios: number): Promise<DriverResult> => {
    const one = (r: Answer): DriverResult => {
      if (!r.result || r.result.error || (r.exit && r.exit.code !== 0)) {
        throw new Error(`hpdrive ${what} ${mode} on ${device} failed (exit ${r.exit?.code}): ${r.result?.error ?? r.stdout + r.stderr}`);
      }
      return { ...r.result, ...(r.beside ? { besideThreads: r.beside } : {}) };
    };
    // one request for start and result: a second one would reach the guest during the run (agent.mjs)
    const req = {
      ...(s.ring ? { devices: sims.map((x) => `/dev/${x.device}`), ...(s.roundRobin ? { roundRobin: true } : {}) } : { device: `/dev/${device}` }),
      mode, qd: s.qd, bs: s.bs, ...body, wait: true,
    };
    if ((s.procs ?? 1) === 1) return one(await g.agent<Answer>('POST', '/drive', req, driveTimeoutMs(ios)));
    // side by side, every process runs the scenario's I/O count
    const r = await g.agent<{ procs: Answer[] }>('POST', '/drive', { ...req, procs: s.procs, seed: HPSIM_SEED }, driveTimeoutMs(ios));
    return mergeDrivers(r.procs.map(one));
  };
  // Only a scraped run needs the warm-up (its before-scrape must hold the device's series); the
  // A/B and irq runs compare like with like without it, and each agent call costs guest CPU.
  if (o.beforeRun) {
    await resetDevices(g, sims);
    await call({ ios: WARMUP_IOS }, 'warm-up', WARMUP_IOS);
    await o.beforeRun();
  }
  await resetDevices(g, sims);
  let before = await deviceStats(g, sims);
  // Both vCPUs advance one instruction counter (icount): work left on the other vCPU (the last
  // run's ring teardown, a BPF re-attach's deferred frees, the agent's reply) would slow the
  // poller's virtual time. Wait for the teardown, then idle, which costs no host time under icount.
  const quiet = async () => {
    const settled = await g.agent<{ waitedMs: number; busy: number }>('POST', '/settle', { timeoutMs: 10_000 }, 30_000);
    if (settled.busy > 0) throw new Error(`a previous io_uring ring was still being torn down after ${settled.waitedMs} ms of guest time`);
    await g.agent('POST', '/idle', { ms: QUIET_MS });
  };
  await quiet();
  let driver = await call({ ios: s.ios, hold: o.hold ?? false }, 'run', s.ios);
  // A run with other tasks busy beside it measured them too (one vCPU's work slows the other's
  // virtual clock): an unscraped run (A/B, irq; nothing counted it) is run again once. Seen once
  // in ~20 CI boots: the guest's Node processes ran 29 % of a QD4 A/B run, −35 % IOPS.
  if (!o.beforeRun && busyBeside(driver)) {
    await resetDevices(g, sims);
    before = await deviceStats(g, sims);
    await quiet();
    driver = { ...(await call({ ios: s.ios, hold: o.hold ?? false }, 'run', s.ios)), retried: besideText(driver) };
  }
  const after = await deviceStats(g, sims);
  const stats = sims.map((x, i) => ({ device: x.device, hpsim: { before: before[i]!, after: after[i]! } }));
  return { driver, ...(stats[0] ? { hpsim: stats[0].hpsim } : {}), ...(s.ring ? { ringDevices: stats } : {}) };
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
async function scrapedRun(g: Guest, s: Scenario, device: string, mode: PollMode, withTwin: boolean): Promise<Pick<RunRecord, 'driver' | 'hpsim' | 'ringDevices' | 'before' | 'after' | 'twin' | 'windowIdle'>> {
  // as runDriver does for an unscraped run, once: a run with other tasks busy beside it is done
  // again, scrapes and all (the exporter's figures are the difference of the two scrapes)
  const first = await scrapedOnce(g, s, device, mode, withTwin);
  if (!busyBeside(first.driver)) return first;
  const again = await scrapedOnce(g, s, device, mode, withTwin);
  return { ...again, driver: { ...again.driver, retried: besideText(first.driver) } };
}

async function scrapedOnce(g: Guest, s: Scenario, device: string, mode: PollMode, withTwin: boolean): Promise<Pick<RunRecord, 'driver' | 'hpsim' | 'ringDevices' | 'before' | 'after' | 'twin' | 'windowIdle'>> {
  let before = '';
  let twinBefore: LoaderSnap | undefined;
  let paused = false;
  // the hybrid run came first on its devices (POLLED): let it leave the model window, so that the
  // model fed the classic run sees that run alone (its before-scrape then has an empty window)
  const windowIdle = mode === 'poll' && (s.ring !== undefined || s.model);
  if (windowIdle) await g.agent('POST', '/idle', { ms: WINDOW_IDLE_MS }, WINDOW_IDLE_MS + 60_000);
  try {
    const run = await runDriver(g, s, device, mode, {
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
    return { ...run, before, after, ...(windowIdle ? { windowIdle } : {}), ...(twinBefore && twinAfter ? { twin: { before: twinBefore, after: twinAfter } } : {}) };
  } finally {
    if (paused) await g.agent('POST', '/exporter/resume', {}).catch(() => undefined);
    await g.agent('POST', '/drive/release', {}).catch(() => undefined);
  }
}

/**
 * Traced against untraced, paired: the running exporter is paused and its loader's programs are
 * detached (SIGUSR1) or attached (SIGUSR2) between runs, in the order A B B A ..., per scenario and
 * mode. bpf_stats is off here: its two clock reads per program run are not part of the product.
 */
async function abRuns(g: Guest, scenarios: Scenario[], tracing: Exclude<Tracing, 'untraced'>, rep: number, pairs: number,
  done: (r: RunRecord, t1: number) => void): Promise<void> {
  if (pairs < 1) return;
  await g.agent('POST', '/exporter/pause', {});
  try {
    // what tracing costs is measured on one ring polling one device (check 4)
    for (const s of scenarios.filter(oneRingOneDevice)) {
      const device = deviceOf(g.info, s.serial);
      for (const mode of POLLED) {
        for (let pair = 0; pair < pairs; pair++) {
          const sides: boolean[] = pair % 2 ? [true, false] : [false, true];
          for (const attached of sides) {
            const t1 = Date.now();
            await g.agent('POST', '/bpf/attach', { attached }, 60_000);
            const run = await runDriver(g, s, device, mode);
            done({ scenario: s.id, tracing: attached ? tracing : 'untraced', mode, rep, device, ...run, ab: { exporter: tracing, pair } }, t1);
          }
        }
      }
    }
  } finally {
    await g.agent('POST', '/bpf/attach', { attached: true }, 60_000).catch(() => undefined);
    await g.agent('POST', '/exporter/resume', {}).catch(() => undefined);
  }
}

/**
 * Stops the exporter; if BPF programs are still loaded right after its exit, lists them again
 * after 2 s of guest time: a program whose last link went with the process is freed
 * asynchronously, a leaked one stays (checkCleanup judges the second list and shows both).
 */
async function stopExporter(g: Guest): Promise<ExporterStop> {
  const stop = await g.agent<ExporterStop>('POST', '/exporter/stop', {}, 60_000);
  if (Array.isArray(stop.bpfPrograms) && stop.bpfPrograms.length > 0) {
    await g.agent('POST', '/idle', { ms: 2000 });
    stop.bpfProgramsLater = await g.agent<unknown>('GET', '/bpf/progs').catch((e: Error) => ({ error: e.message }));
  }
  return stop;
}

async function startExporter(g: Guest, args: string[], log: (m: string) => void, what: string): Promise<Pick<RunRecord, 'exporterStartMs' | 'bpfReadySeconds'>> {
  const t1 = Date.now();
  const st = await g.agent<{ startMs: number }>('POST', '/exporter/start', { args, timeoutMs: 300_000 }, 320_000);
  const ready = await waitBpfUp(g, 300_000).catch(async (e: Error) => {
    const progs = await g.agent<unknown>('GET', '/bpf/progs').catch((x: Error) => x.message);
    const stop = await stopExporter(g).catch((x: Error) => ({ log: `(stop failed: ${x.message})`, exit: null }));
    throw new Error(`${e.message}\nexporter exit ${JSON.stringify(stop.exit)}; BPF programs loaded: ${JSON.stringify(progs)}\n--- guest exporter log ---\n${stop.log.slice(-3000)}`);
  });
  // What the start leaves running (the attach's deferred kernel work, Node settling) must not land
  // in the first run: under icount it would slow the poller's clock (7 ms beside the first hybrid
  // run seen with a 200 ms quiet only). Guest idle is free.
  await g.agent('POST', '/idle', { ms: 2000 });
  log(`${what}: exporter listening after ${(st.startMs / 1000).toFixed(1)} s, BPF up ${ready.toFixed(1)} s later (${((Date.now() - t1) / 1000).toFixed(0)} s)`);
  return { exporterStartMs: st.startMs, bpfReadySeconds: ready };
}

/** One poller, one ring, one device: the scenarios with A/B runs (check 4). */
export const oneRingOneDevice = (s: Scenario): boolean => (s.procs ?? 1) === 1 && !s.ring;

/** Runs per repetition: irq per scenario, then per path and scenario 2 scraped runs and the A/B runs (one-ring scenarios). */
export function runsPerRep(scenarios: readonly Scenario[], paths: number, abPairs: number): number {
  const single = scenarios.filter(oneRingOneDevice).length;
  return scenarios.length * (1 + paths * POLLED.length) + single * paths * POLLED.length * 2 * abPairs;
}

/**
 * Runs every repetition: the interrupt-driven runs (no exporter), then per path one exporter for
 * every scenario (hybrid then classic poll, scraped), then that exporter's A/B runs. Keeps what it
 * got if one fails.
 */
export async function runSession(g: Guest, base: Omit<Session, 'runs' | 'wallSeconds' | 'scenarios' | 'exporterArgs' | 'paths'>, o: SessionOptions): Promise<Session> {
  const t0 = Date.now();
  const session: Session = { ...base, wallSeconds: 0, scenarios: o.scenarios, paths: [...o.paths], exporterArgs: o.exporterArgs, runs: [] };
  const total = o.reps * (runsPerRep(o.scenarios, o.paths.length, o.abPairs) + (o.sweep?.length ?? 0));
  const done = (r: RunRecord, t1: number) => {
    session.runs.push(r);
    const d = r.driver;
    const what = r.ab ? `${r.ab.exporter} A/B pair ${r.ab.pair} ${r.tracing === 'untraced' ? 'detached' : 'attached'}` : r.tracing;
    o.log(`run ${session.runs.length}/${total} ${r.scenario} rep ${r.rep} ${what} ${r.mode}: ${d.ios} I/Os, ${Math.round(d.iops)} IOPS, ` +
      `CPU ${(d.cpu.util * 100).toFixed(1)}% ${d.cpu.per_io_us.toFixed(2)} µs/IO, ${(d.ctxsw.voluntary / Math.max(1, d.ios)).toFixed(3)} vcsw/IO, ` +
      `p50 ${d.lat_us.p50.toFixed(2)} µs, beside it ${besideText(d)}${d.retried ? ` [second try: beside the first ${d.retried}]` : ''} (${((Date.now() - t1) / 1000).toFixed(1)} s; ${((Date.now() - t0) / 1000).toFixed(0)} s total)`);
  };
  try {
    await g.agent('POST', '/bpf/stats', { enable: false });
    // The boot's first run executes colder kernel paths (first allocations, page-table and slab
    // refills): in virtual time that is more instructions, and the first irq run of a boot read
    // 19% more CPU per I/O than the same run of the next boot. One unrecorded run first.
    const first = o.scenarios.find((s) => s.profile) ?? o.scenarios[0];
    if (first) await runDriver(g, { ...first, ios: 2000 }, deviceOf(g.info, first.serial), 'irq');
    for (let rep = 0; rep < o.reps; rep++) {
      // Interrupt-driven completions, nothing traced: the third mode of the determinism figures.
      for (const s of o.scenarios) {
        const device = deviceOf(g.info, s.serial);
        const t1 = Date.now();
        done({ scenario: s.id, tracing: 'untraced', mode: 'irq', rep, device, ...(await runDriver(g, s, device, 'irq')) }, t1);
      }
      for (const tracing of o.paths) {
        const startInfo = await startExporter(g, o.exporterArgs[tracing], o.log, `rep ${rep} ${tracing}`);
        const recs: RunRecord[] = [];
        // The tracepoint exporter gets a fentry twin: both paths measure the same runs. (Not the
        // other way round: the fentry runs' CPU accounting must not pay for a second tracer.)
        const withTwin = tracing === 'tracepoint';
        try {
          if (withTwin) await g.agent('POST', '/twin/start', {}, 300_000);
          // The checked runs count every BPF program's run time: the programs' own CPU per I/O, and
          // the part of it the poll-loop window cannot contain (check 2, 3).
          await g.agent('POST', '/bpf/stats', { enable: true });
          for (const s of o.scenarios) {
            const device = deviceOf(g.info, s.serial);
            for (const mode of POLLED) {
              const t1 = Date.now();
              const rec: RunRecord = { scenario: s.id, tracing, mode, rep, device, ...startInfo, ...(await scrapedRun(g, s, device, mode, withTwin)) };
              recs.push(rec);
              done(rec, t1);
            }
          }
          const base = o.scenarios.find((s) => s.profile && s.qd === 1);
          if (tracing === 'fentry' && base && o.sweep?.length) {
            const device = deviceOf(g.info, base.serial);
            for (const profile of o.sweep) {
              const s: Scenario = { ...base, id: `sweep ${profile}`, title: `QD1 hybrid convergence, ${profile}`, profile, ios: Math.min(base.ios, 5000) };
              const t1 = Date.now();
              const rec: RunRecord = { scenario: s.id, tracing, mode: 'hybrid', rep, device, ...startInfo, ...(await scrapedRun(g, s, device, 'hybrid', false)) };
              recs.push(rec);
              done(rec, t1);
            }
          }
          await g.agent('POST', '/bpf/stats', { enable: false });
          if (withTwin) await g.agent('POST', '/twin/stop', {}, 30_000);
          await abRuns(g, o.scenarios, tracing, rep, o.abPairs, done);
        } finally {
          if (withTwin) await g.agent('POST', '/twin/stop', {}, 30_000).catch(() => undefined);
          await g.agent('POST', '/bpf/stats', { enable: false }).catch(() => undefined);
          const stop = await stopExporter(g);
          for (const r of recs) r.exporterStop = stop;
        }
      }
    }
    if (o.sampling?.length) session.sampling = await samplingRuns(g, o.sampling, o.exporterArgs.fentry, o.log);
  } catch (e) {
    session.error = (e as Error).message;
    o.log(`session stopped: ${session.error}`);
  }
  session.wallSeconds = (Date.now() - t0) / 1000;
  return session;
}
