// The VM lab end to end: build (exporter, BPF loader, guest images), boot, run the session, save it,
// power off. Used by the vitest global setup (npm run test:vm) and by test/vm/lab.ts.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { accelFacts, chooseAccel, type Accel } from './accel.js';
import { Guest, usesIcount, type BootOptions, type GuestImages, type NvmeSpec } from './guest.js';
import { recordRun } from './recordings.js';
import { samplingScenarios } from './sampling.js';
import { MODEL_WINDOW_S, runSession, type Scenario, type Session, type Tracing } from './session.js';

export const ROOT = resolve(import.meta.dirname, '../../..');
export const CACHE = process.env.HPVM_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'hybridpoll-vm');
export const RESULTS = join(CACHE, 'results');

const log = (msg: string) => process.stderr.write(`[vm ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/**
 * The QEMU NVMe controller of the trixie guest (null-co, no added latency): the second device class,
 * the nvme driver's own poll path. Under icount null-co times its latency on the host's clock, so
 * its device time is not controlled and the model checks do not apply to it.
 */
export const NVME: NvmeSpec[] = [{ serial: 'hpfast', latencyNs: 0 }];

/**
 * The simulated devices, one per hpsim scenario (the model's window of a device then holds that
 * scenario's runs alone). Service times are on the guest clock, scaled to the seeds' ratio of
 * service time to wake-up cost: one guest instruction costs 1 ns, 3-5x a server core's, so an
 * Optane-like 10 µs device becomes 50 µs here (docs/validation.md, "Scale").
 */
export const HPSIM_PROFILES = {
  hpsim0: 'fixed:50000',
  hpsim1: 'twopoint:20000:100000:500',
  hpsim2: 'fixed:50000',
  hpsim3: 'fixed:50000',
  hpsim4: 'fixed:50000',
  hpsim5: 'twopoint:20000:100000:500',
  hpsim6: 'fixed:50000',
  hpsim7: 'fixed:20000',
  hpsim8: 'fixed:100000',
  hpsim9: 'fixed:20000',
  hpsim10: 'fixed:100000',
  hpsim11: 'fixed:50000',
  hpsim12: 'fixed:400000',
  hpsim13: 'normal:400000:40000',
} as const;

/** insmod parameters of the trixie guest's hpsim module: one poll queue per device, as nvme's per CPU set. */
export function hpsimParams(): string {
  const p = Object.values(HPSIM_PROFILES);
  return `nr_devices=${p.length} poll_queues=1 queue_depth=256 profiles=${p.join(';')} seed=1`;
}

export function scenarios(ios: number): Scenario[] {
  const sim = (id: string, title: string, dev: keyof typeof HPSIM_PROFILES, qd: number, procs = 1): Scenario =>
    ({ id, title: `${title} (${dev} ${HPSIM_PROFILES[dev]})`, serial: dev, profile: HPSIM_PROFILES[dev], qd, bs: 4096, ios, model: true, ...(procs > 1 ? { procs } : {}) });
  return [
    sim('qd1-fixed50', 'QD1 4k randread, simulated device, fixed 50 µs', 'hpsim0', 1),
    sim('qd1-twopoint', 'QD1 4k randread, simulated device, 20 µs or 100 µs (½ each)', 'hpsim1', 1),
    sim('qd4-fixed50', 'QD4 4k randread, simulated device, fixed 50 µs', 'hpsim2', 4),
    sim('qd16-fixed50', 'QD16 4k randread, simulated device, fixed 50 µs', 'hpsim3', 16),
    sim('qd32-fixed50', 'QD32 4k randread, simulated device, fixed 50 µs', 'hpsim11', 32),
    sim('qd32-fixed400', 'QD32 4k randread, simulated device, fixed 400 µs (a NAND-like 80 µs device, scaled as the others): the device is the bottleneck, not the poller', 'hpsim12', 32),
    sim('qd32-normal400', 'QD32 4k randread, simulated device, 400 ± 40 µs (normal): the device-bound case with a spread in its service time, as NAND reads have', 'hpsim13', 32),
    sim('qd64-fixed50', 'QD64 4k randread, simulated device, fixed 50 µs', 'hpsim4', 64),
    sim('qd4-twopoint', 'QD4 4k randread, simulated device, 20 µs or 100 µs (½ each)', 'hpsim5', 4),
    {
      ...sim('ring-2dev', 'one ring over two simulated devices, one 4k randread in flight on each: fixed 20 µs and fixed 100 µs', 'hpsim7', 2),
      ring: (['hpsim7', 'hpsim8'] as const).map((d) => ({ serial: d, profile: HPSIM_PROFILES[d] })),
    },
    {
      ...sim('ring-2dev-qd16', 'one ring over two simulated devices at depth, 16 4k randreads in flight, each new one on the next device in turn (fio\'s file_service_type=roundrobin): fixed 20 µs and fixed 100 µs', 'hpsim9', 16),
      ring: (['hpsim9', 'hpsim10'] as const).map((d) => ({ serial: d, profile: HPSIM_PROFILES[d] })),
      roundRobin: true,
    },
    sim('rings2-qd1-fixed50', 'two processes side by side, each its own ring at QD1, 4k randread, simulated device, fixed 50 µs', 'hpsim6', 1, 2),
    { id: 'qd1-nvme', title: 'QD1 4k randread, QEMU NVMe (null-co, no added latency; host-clock device: no model checks)', serial: 'hpfast', qd: 1, bs: 4096, ios, model: false },
  ];
}

/** Flag that forces the BPF collector's tracepoint fallback (overridable while the loader's flag settles). */
const FORCE_TP = process.env.HPVM_TRACEPOINT_FLAG ?? '--bpf.force-tracepoint';

export function exporterArgs(): Record<Exclude<Tracing, 'untraced'>, string[]> {
  // The lab scrapes at the edges of each run and compares the two: each scrape must collect then,
  // not serve the refresh loop's last collection (up to an interval old). The model window is set
  // (the default's value): the runs are spaced by it (session.ts, WINDOW_IDLE_MS).
  const common = ['--bpf.enable=on', '--bpf.timeout=10s', '--log.level=info', '--collector.interval=0', `--model.window=${MODEL_WINDOW_S}s`];
  return { fentry: common, tracepoint: [...common, FORCE_TP] };
}

/** Host tools the lab needs; empty when it can run. */
export function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push('root (debootstrap, chroot)');
  for (const bin of ['qemu-system-x86_64', 'debootstrap', 'mkfs.ext4', 'gcc', 'make']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) missing.push(bin);
  }
  return missing;
}

function step(what: string, cmd: string, args: string[]): void {
  const t0 = Date.now();
  log(`${what}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${cmd} ${args.join(' ')}`);
  log(`${what} done in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

/** Builds the exporter and the BPF loader of this checkout, then the guest images (cached). */
export function buildAll(suite = 'trixie'): GuestImages {
  step('exporter (tsc)', 'npx', ['tsc', '-p', 'tsconfig.json']);
  if (existsSync(join(ROOT, 'scripts/build-bpf.sh'))) step('BPF loader', 'bash', ['scripts/build-bpf.sh']);
  else log('scripts/build-bpf.sh not present: no BPF loader to put into the guest');
  const t0 = Date.now();
  const r = spawnSync('bash', [join(ROOT, 'test/vm/build-guest.sh'), suite], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`test/vm/build-guest.sh failed (exit ${r.status})`);
  const last = r.stdout.trim().split('\n').pop() ?? '';
  log(`guest images ready in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return JSON.parse(last) as GuestImages;
}

export interface LabOptions {
  /** 'ci': the CI gate's profile (fewer I/Os, one BPF path on trixie, no sweep or sampling); 'full': npm run test:vm */
  profile: 'full' | 'ci';
  /** I/Os per measured run */
  ios: number;
  reps: number;
  /**
   * A/B pairs (BPF detached/attached) per scenario, mode and path; two give the untraced runs' own
   * spread, three a median pair that one odd run does not move (docs/validation.md, HPVM_AB_PAIRS)
   */
  abPairs: number;
  /** scenario ids to run (default all of the profile) */
  only?: string[];
  /** run the io_uring hybrid convergence sweep (SWEEP profiles; default: the full profile with every scenario) */
  sweep: boolean;
  /** BPF paths: both, or fentry only (the CI profile: the tracepoint path is bullseye's, which the gate runs too) */
  paths: Exclude<Tracing, 'untraced'>[];
  /** the sampling check (sampling.ts): 'on' after the other runs, 'only' without them, 'off' (HPVM_SAMPLING) */
  sampling: 'on' | 'only' | 'off';
}

/**
 * Device profiles of the io_uring hybrid convergence sweep (full profile only): tight, spread,
 * two-mode and long-tailed service times around the 50 µs scale.
 */
export const SWEEP = ['fixed:20000', 'fixed:100000', 'uniform:40000:60000', 'normal:50000:10000', 'twopoint:40000:60000:500', 'tail:50000:200000:20'];

/** The CI profile's scenarios (HPVM_PROFILE=ci). */
export const CI_SCENARIOS = ['qd1-fixed50', 'qd4-fixed50', 'qd16-fixed50', 'qd64-fixed50', 'ring-2dev', 'rings2-qd1-fixed50', 'qd1-nvme'];

export function labOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LabOptions {
  const profile = env.HPVM_PROFILE ?? 'full';
  if (profile !== 'full' && profile !== 'ci') throw new Error(`HPVM_PROFILE must be full or ci, not ${profile}`);
  const ci = profile === 'ci';
  const ios = Number(env.HPVM_IOS ?? (ci ? 4000 : 20_000));
  const reps = Number(env.HPVM_REPS ?? 1);
  const abPairs = Number(env.HPVM_AB_PAIRS ?? 3);
  if (!Number.isInteger(ios) || ios < 1000 || !Number.isInteger(reps) || reps < 1 || !Number.isInteger(abPairs) || abPairs < 1) {
    throw new Error('HPVM_IOS must be an integer ≥ 1000, HPVM_REPS and HPVM_AB_PAIRS positive integers');
  }
  const only = env.HPVM_SCENARIOS ? env.HPVM_SCENARIOS.split(',') : ci ? CI_SCENARIOS : undefined;
  const known = scenarios(ios).map((s) => s.id);
  for (const id of only ?? []) if (!known.includes(id)) throw new Error(`HPVM_SCENARIOS: unknown scenario ${id} (${known.join(', ')})`);
  const paths = (env.HPVM_PATHS ?? (ci ? 'fentry' : 'fentry,tracepoint')).split(',');
  for (const p of paths) if (p !== 'fentry' && p !== 'tracepoint') throw new Error(`HPVM_PATHS: unknown path ${p} (fentry, tracepoint)`);
  const sweep = env.HPVM_SWEEP !== undefined ? env.HPVM_SWEEP === '1' : !ci && !only;
  // Off in the CI profile: three more exporter starts (1–4 min) for a check measured on one boot so far.
  const sampling = env.HPVM_SAMPLING ?? (ci ? 'off' : 'on');
  if (sampling !== 'on' && sampling !== 'only' && sampling !== 'off') throw new Error(`HPVM_SAMPLING must be on, only or off, not ${sampling}`);
  return { profile, ios, reps, abPairs, sweep, paths: paths as LabOptions['paths'], sampling, ...(only ? { only } : {}) };
}

/** What a lab may choose of a boot; the rest (images, accelerator, log, console file) the lab fills in. */
export type BootTuning = Partial<Omit<BootOptions, 'images' | 'accel' | 'log' | 'failedConsoleFile'>>;

/** The trixie guest's defaults: 2 vCPUs, 2 GiB, nvme.poll_queues=2, the NVMe controller and hpsim devices above. */
export const TRIXIE_BOOT = { smp: 2, memMiB: 2048, pollQueues: 2, nvme: NVME, hpsim: hpsimParams(), bootTimeoutMs: 600_000 } satisfies BootTuning;

/** The boot of `lab.ts exec` per suite: bullseye's 5.10 hangs bringing up a second vCPU under icount. */
export function bootTuning(suite: string): typeof TRIXIE_BOOT {
  return suite === 'trixie' ? TRIXIE_BOOT : { ...TRIXIE_BOOT, smp: 1 };
}

/**
 * Boots the guest; one retry when the boot itself fails. Emulated boots are not perfectly
 * deterministic (a TCG guest once panicked in its first 3 s in ktime_get_real_ts64), and a failed
 * boot says nothing about the product. Both consoles are kept in RESULTS. `tuning` overrides the
 * trixie defaults (the legacy lab: -smp 1, its own NVMe list and hpsim parameters).
 */
export async function bootWithRetry(images: GuestImages, accel: Accel, tuning: BootTuning = {}): Promise<Guest> {
  mkdirSync(RESULTS, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    const failedConsoleFile = join(RESULTS, `console-boot-failure-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
    try {
      return await Guest.boot({ ...TRIXIE_BOOT, ...tuning, images, accel, log, failedConsoleFile });
    } catch (e) {
      if (attempt >= 2) throw e;
      log(`*** boot failed, retrying once: ${(e as Error).message.split('\n')[0]}`);
    }
  }
}

/** Builds, boots, runs every workload, powers off; returns the saved session's path. */
export async function runLab(o: LabOptions): Promise<string> {
  const t0 = Date.now();
  const images = buildAll('trixie');
  const { accel, why } = chooseAccel(accelFacts());
  log(`accelerator: ${accel} (${why})`);
  const guest = await bootWithRetry(images, accel);
  let session: Session;
  try {
    const sc = o.sampling === 'only' ? [] : scenarios(o.ios).filter((s) => !o.only || o.only.includes(s.id));
    log(`profile ${o.profile}: ${sc.map((s) => s.id).join(', ')}; paths ${o.paths.join(', ')}; ${o.ios} I/Os per run, ${o.reps} rep(s), ${o.abPairs} A/B pair(s); sampling check ${o.sampling}`);
    session = await runSession(guest, {
      startedAt: new Date(t0).toISOString(), accel, accelWhy: why, images, info: guest.info, bootSeconds: guest.bootSeconds, profile: o.profile,
    }, {
      scenarios: sc, paths: o.sampling === 'only' ? [] : o.paths, reps: o.reps, abPairs: o.abPairs, exporterArgs: exporterArgs(),
      ...(o.sweep && o.sampling !== 'only' ? { sweep: SWEEP } : {}), ...(o.sampling !== 'off' ? { sampling: samplingScenarios(o.ios) } : {}), log,
    });
  } finally {
    const off = await guest.shutdown();
    log(`guest ${off.clean ? 'powered off' : 'killed (no clean power-off)'}`);
    mkdirSync(RESULTS, { recursive: true });
    const con = join(RESULTS, `console-${new Date(t0).toISOString().replace(/[:.]/g, '-')}.log`);
    writeFileSync(con, off.console);
    log(`guest console: ${con}`);
  }
  const file = join(RESULTS, `session-${session.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(session));
  const latest = join(RESULTS, 'latest.json');
  if (existsSync(latest)) unlinkSync(latest);
  symlinkSync(file, latest);
  log(`session saved: ${file} (lab total ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  return file;
}

export function loadSession(file: string): Session {
  return JSON.parse(readFileSync(file, 'utf8')) as Session;
}

/**
 * recordings/vm-hybrid.jsonl and vm-classic.jsonl: QD1 4k on the simulated fixed-50 µs device
 * (hpsim0), virtual time, one boot, hybrid then classic.
 */
export async function recordAll(ios: number): Promise<void> {
  const images = buildAll('trixie');
  const { accel, why } = chooseAccel(accelFacts());
  log(`accelerator: ${accel} (${why})`);
  const guest = await bootWithRetry(images, accel);
  try {
    const scenario = scenarios(ios).find((s) => s.id === 'qd1-fixed50')!;
    const clock = usesIcount({ accel }) ? `QEMU TCG guest in virtual time (icount shift=0: 1 instruction = 1 ns of guest time, idle skipped; ${guest.info.nproc} vCPUs)` : `QEMU ${accel.toUpperCase()} guest`;
    const where = `QD1 4k random O_DIRECT reads (hpdrive, raw io_uring) on the simulated poll-queue device hpsim0 (tools/hpsim: service time ${scenario.profile} ns on the guest clock, seed 1, 1 poll queue) in a ${clock}, kernel ${guest.info.release}`;
    const caveat = '; guest CPU work costs 3-5x a server core (1 ns per instruction), so the device is scaled up: an Optane-like 10 µs device is 50 µs here';
    for (const mode of ['hybrid', 'poll'] as const) {
      const what = mode === 'hybrid' ? 'io_uring hybrid IOPOLL (IORING_SETUP_IOPOLL|IORING_SETUP_HYBRID_IOPOLL)' : 'io_uring classic IOPOLL (IORING_SETUP_IOPOLL)';
      await recordRun(guest, { file: join(ROOT, 'recordings', `vm-${mode === 'poll' ? 'classic' : 'hybrid'}.jsonl`), mode, scenario, interval: '500ms', description: `Real ${what}: ${where}${caveat}` }, log);
    }
  } finally {
    const off = await guest.shutdown();
    log(`guest ${off.clean ? 'powered off' : 'killed (no clean power-off)'}`);
  }
}
