// The VM lab end to end: build (exporter, BPF loader, guest images), boot, run the session, save it,
// power off. Used by the vitest global setup (npm run test:vm) and by test/vm/lab.ts.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { accelFacts, chooseAccel, type Accel } from './accel.js';
import { Guest, type BootOptions, type GuestImages, type NvmeSpec } from './guest.js';
import { recordRun } from './recordings.js';
import { runSession, type Scenario, type Session, type Tracing } from './session.js';

export const ROOT = resolve(import.meta.dirname, '../../..');
export const CACHE = process.env.HPVM_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'hybridpoll-vm');
export const RESULTS = join(CACHE, 'results');

const log = (msg: string) => process.stderr.write(`[vm ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Emulated NVMe controllers of the trixie guest: no added latency, and 20 µs (null-co latency-ns). */
export const NVME: NvmeSpec[] = [
  { serial: 'hpfast', latencyNs: 0 },
  { serial: 'hpslow', latencyNs: 20_000 },
];

export function scenarios(secs: number): Scenario[] {
  return [
    { id: 'qd1', title: 'QD1 4k randread, null-co no added latency', serial: 'hpfast', qd: 1, bs: 4096, secs },
    { id: 'qd1-lat20us', title: 'QD1 4k randread, null-co latency-ns=20000', serial: 'hpslow', qd: 1, bs: 4096, secs },
    { id: 'qd4', title: 'QD4 4k randread, null-co no added latency', serial: 'hpfast', qd: 4, bs: 4096, secs },
  ];
}

/** Flag that forces the BPF collector's tracepoint fallback (overridable while the loader's flag settles). */
const FORCE_TP = process.env.HPVM_TRACEPOINT_FLAG ?? '--bpf.force-tracepoint';

export function exporterArgs(): Record<Exclude<Tracing, 'untraced'>, string[]> {
  // The lab scrapes at the edges of each run and compares the two: each scrape must collect then,
  // not serve the refresh loop's last collection (up to an interval old).
  const common = ['--bpf.enable=on', '--bpf.timeout=10s', '--log.level=info', '--collector.interval=0'];
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
  secs: number;
  reps: number;
  /** A/B pairs (BPF detached/attached) per mode and path, and seconds per A/B run */
  abPairs: number;
  abSecs: number;
  /** scenario ids to run (default all) */
  only?: string[];
}

export function labOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LabOptions {
  const secs = Number(env.HPVM_SECS ?? 6);
  const reps = Number(env.HPVM_REPS ?? 2);
  const abPairs = Number(env.HPVM_AB_PAIRS ?? 3);
  const abSecs = Number(env.HPVM_AB_SECS ?? 2);
  if (!(secs > 0) || !(abSecs > 0) || !Number.isInteger(reps) || reps < 1 || !Number.isInteger(abPairs) || abPairs < 1) {
    throw new Error('HPVM_SECS and HPVM_AB_SECS must be > 0, HPVM_REPS and HPVM_AB_PAIRS positive integers');
  }
  return { secs, reps, abPairs, abSecs, ...(env.HPVM_SCENARIOS ? { only: env.HPVM_SCENARIOS.split(',') } : {}) };
}

/** What a lab may choose of a boot; the rest (images, accelerator, log, console file) the lab fills in. */
export type BootTuning = Partial<Omit<BootOptions, 'images' | 'accel' | 'log' | 'failedConsoleFile'>>;

/** The trixie guest's defaults: 2 vCPUs, 2 GiB, nvme.poll_queues=2, the NVMe controllers above. */
export const TRIXIE_BOOT = { smp: 2, memMiB: 2048, pollQueues: 2, nvme: NVME, bootTimeoutMs: 300_000 } satisfies BootTuning;

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
    const sc = scenarios(o.secs).filter((s) => !o.only || o.only.includes(s.id));
    session = await runSession(guest, {
      startedAt: new Date(t0).toISOString(), accel, accelWhy: why, images, info: guest.info, bootSeconds: guest.bootSeconds,
    }, { scenarios: sc, reps: o.reps, abPairs: o.abPairs, abSecs: o.abSecs, exporterArgs: exporterArgs(), log });
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
 * recordings/vm-hybrid.jsonl and vm-classic.jsonl: QD1 4k on the 20 µs null-co device (the sleep is
 * a fraction of the device time there, as on real NVMe), one boot, hybrid then classic.
 */
export async function recordAll(secs: number): Promise<void> {
  const images = buildAll('trixie');
  const { accel, why } = chooseAccel(accelFacts());
  log(`accelerator: ${accel} (${why})`);
  const guest = await bootWithRetry(images, accel);
  try {
    const scenario = scenarios(secs).find((s) => s.id === 'qd1-lat20us')!;
    const where = `QD1 4k random O_DIRECT reads (hpdrive, raw io_uring) on an emulated NVMe (QEMU null-co, latency-ns=20000, 2 poll queues) in a QEMU ${accel.toUpperCase()} guest, kernel ${guest.info.release}`;
    const caveat = accel === 'tcg' ? '; software-emulated CPU: counts and ratios are real, absolute times are emulated (5-20x slow)' : '';
    for (const mode of ['hybrid', 'poll'] as const) {
      const what = mode === 'hybrid' ? 'io_uring hybrid IOPOLL (IORING_SETUP_IOPOLL|IORING_SETUP_HYBRID_IOPOLL)' : 'io_uring classic IOPOLL (IORING_SETUP_IOPOLL)';
      await recordRun(guest, { file: join(ROOT, 'recordings', `vm-${mode === 'poll' ? 'classic' : 'hybrid'}.jsonl`), mode, scenario, description: `Real ${what}: ${where}${caveat}` }, log);
    }
  } finally {
    const off = await guest.shutdown();
    log(`guest ${off.clean ? 'powered off' : 'killed (no clean power-off)'}`);
  }
}
