// The bullseye guest of the VM lab (issues 8, 13): same builder, cache, QEMU harness and agent as the
// trixie guest, its own root image key and its own saved sessions (results/latest-bullseye.json).
// It boots in virtual time (icount) with one vCPU and the simulated device hpsim.
import { existsSync, mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accelFacts, chooseAccel, type Accel } from './accel.js';
import type { Guest, GuestImages } from './guest.js';
import { usesIcount } from './guest.js';
import { bootWithRetry, buildAll, RESULTS, ROOT, type BootTuning } from './lab.js';
import { ALL_WORKLOADS, DELAY_MODES, MODEL_WINDOW_SECONDS, PROFILES, runLegacySession, warmupIos, WORKLOADS, type DelayMode, type LegacyProfile, type LegacySession, type Workload } from './legacy.js';
import { recordRun } from './recordings.js';

export const LEGACY_SUITE = 'bullseye';
export const LATEST_LEGACY = join(RESULTS, `latest-${LEGACY_SUITE}.json`);

const log = (msg: string) => process.stderr.write(`[vm ${LEGACY_SUITE} ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/**
 * The exporter as the operator would run it; 5.10 has no fentry target of the io_uring poll path.
 * One collection per scrape: the lab compares scrapes taken at the edges of each run. The model
 * window holds one run (legacy.ts MODEL_WINDOW_SECONDS).
 */
export function legacyExporterArgs(): string[] {
  return ['--bpf.enable=on', '--bpf.timeout=10s', '--log.level=info', '--collector.interval=0', `--model.window=${MODEL_WINDOW_SECONDS}s`];
}

export interface LegacyLabOptions {
  profiles: readonly LegacyProfile[];
  workloads: readonly Workload[];
  delays: readonly DelayMode[];
  /** an untraced adaptive run per profile and workload (HPVM_LEGACY_UNTRACED=0 leaves it out) */
  untraced: boolean;
  ios: number;
  warmupIos: number;
  /** vCPUs: the bullseye kernel hangs bringing up a second vCPU under icount (../shared/docs/testbed.md) */
  smp: number;
  /** the CI profile (HPVM_PROFILE=ci): a subset of the checks, same bounds */
  ci: boolean;
}

function list<T extends string>(env: string | undefined, defaults: readonly T[], name: string, all: readonly T[] = defaults): T[] {
  const v = (env ?? defaults.join(',')).split(',').filter(Boolean) as T[];
  for (const x of v) if (!all.includes(x)) throw new Error(`${name}: unknown ${x} (${all.join(', ')})`);
  return v;
}

/**
 * Env: HPVM_LEGACY_PROFILES (seed001,seed004), HPVM_LEGACY_WORKLOADS (hpdrive,fio,hpdrive4; CI: hpdrive,fio),
 * HPVM_LEGACY_DELAYS (classic,adaptive,three_quarter,min_wake), HPVM_LEGACY_IOS (per measured run),
 * HPVM_LEGACY_WARMUP_IOS (adaptive runs; 0: 0.15 s of guest time at the profile's mean), HPVM_LEGACY_SMP.
 * HPVM_LEGACY_UNTRACED=0 (no untraced adaptive run). HPVM_PROFILE=ci: seed001 only, 20,000 I/Os per
 * run (explicit variables still win).
 */
export function legacyOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LegacyLabOptions {
  const ci = env.HPVM_PROFILE === 'ci';
  const ids = list(env.HPVM_LEGACY_PROFILES ?? (ci ? 'seed001' : undefined), PROFILES.map((p) => p.id), 'HPVM_LEGACY_PROFILES');
  const ios = Number(env.HPVM_LEGACY_IOS ?? 20_000);
  const warm = Number(env.HPVM_LEGACY_WARMUP_IOS ?? 0);
  const smp = Number(env.HPVM_LEGACY_SMP ?? 1);
  if (!Number.isInteger(ios) || ios < 100) throw new Error('HPVM_LEGACY_IOS must be an integer ≥ 100');
  if (!Number.isInteger(warm) || warm < 0) throw new Error('HPVM_LEGACY_WARMUP_IOS must be an integer ≥ 0');
  if (!Number.isInteger(smp) || smp < 1) throw new Error('HPVM_LEGACY_SMP must be a positive integer');
  return {
    profiles: PROFILES.filter((p) => ids.includes(p.id)),
    workloads: list(env.HPVM_LEGACY_WORKLOADS, ci ? WORKLOADS : ALL_WORKLOADS, 'HPVM_LEGACY_WORKLOADS', ALL_WORKLOADS),
    delays: list(env.HPVM_LEGACY_DELAYS, DELAY_MODES, 'HPVM_LEGACY_DELAYS'),
    untraced: env.HPVM_LEGACY_UNTRACED !== '0',
    ios, warmupIos: warm, smp, ci,
  };
}

/** One vCPU, no QEMU NVMe, two hpsim devices with one poll queue each (profiles set per run). */
export function legacyBoot(smp: number): BootTuning {
  return { smp, pollQueues: 1, nvme: [], hpsim: 'nr_devices=2 submit_queues=1 poll_queues=1' };
}

async function bootLegacy(images: GuestImages, accel: Accel, smp: number): Promise<Guest> {
  if (!images.hpsim) throw new Error(`the ${LEGACY_SUITE} project disk has no hpsim module (images: ${JSON.stringify(images)})`);
  return bootWithRetry(images, accel, legacyBoot(smp));
}

/** Builds, boots the bullseye guest, runs the legacy session, powers off; returns the saved session's path. */
export async function runLegacyLab(o: LegacyLabOptions): Promise<string> {
  const t0 = Date.now();
  const images = buildAll(LEGACY_SUITE);
  const { accel, why } = chooseAccel(accelFacts());
  const icount = usesIcount({ accel });
  log(`accelerator: ${accel} (${why})${icount ? ', icount (virtual time)' : ''}${o.ci ? ', CI profile' : ''}; profiles ${o.profiles.map((p) => `${p.id}=${p.profile}`).join(' ')}; ` +
    `${o.workloads.join(' + ')} × io_poll_delay ${o.delays.join('/')}, ${o.ios} I/Os each`);
  const guest = await bootLegacy(images, accel, o.smp);
  let session: LegacySession;
  try {
    session = await runLegacySession(guest, {
      suite: LEGACY_SUITE, startedAt: new Date(t0).toISOString(), accel, accelWhy: why, icount, images, info: guest.info, bootSeconds: guest.bootSeconds,
    }, { profiles: o.profiles, workloads: o.workloads, delays: o.delays, untraced: o.untraced, ios: o.ios, warmupIos: o.warmupIos, exporterArgs: legacyExporterArgs(), log });
  } finally {
    const off = await guest.shutdown();
    log(`guest ${off.clean ? 'powered off' : 'killed (no clean power-off)'}`);
    mkdirSync(RESULTS, { recursive: true });
    const con = join(RESULTS, `console-${LEGACY_SUITE}-${new Date(t0).toISOString().replace(/[:.]/g, '-')}.log`);
    writeFileSync(con, off.console);
    log(`guest console: ${con}`);
  }
  const file = join(RESULTS, `session-${LEGACY_SUITE}-${session.startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(session));
  if (existsSync(LATEST_LEGACY)) unlinkSync(LATEST_LEGACY);
  symlinkSync(file, LATEST_LEGACY);
  log(`session saved: ${file} (lab total ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  return file;
}

/**
 * recordings/vm-legacy.jsonl: hpdrive's io_uring IOPOLL on hpsim with the seed-001 profile, in
 * virtual time, io_poll_delay=0 (adaptive, ½ the poll_stat mean), the era the seed threads are
 * about. `secs` are guest seconds of the workload.
 */
export async function recordLegacy(secs: number): Promise<void> {
  const images = buildAll(LEGACY_SUITE);
  const { accel, why } = chooseAccel(accelFacts());
  const icount = usesIcount({ accel });
  log(`accelerator: ${accel} (${why})${icount ? ', icount (virtual time)' : ''}`);
  const guest = await bootLegacy(images, accel, 1);
  try {
    const p = PROFILES[0]!;
    const device = guest.info.devices.find((d) => d.name.startsWith('hpsim'))?.name;
    if (!device) throw new Error('no hpsim device in the guest');
    await guest.agent('POST', '/hpsim/profile', { device, profile: p.profile, seed: 1 });
    await guest.agent('POST', '/io_poll_delay', { device, value: 0 });
    // poll_stat fills when the first 100 ms window of adaptive polling closes: warm up first.
    await guest.agent('POST', '/drive', { device: `/dev/${device}`, mode: 'poll', qd: 1, bs: 4096, ios: warmupIos({ warmupIos: 0 }, p) });
    await guest.agent('POST', '/drive/wait', {}, 300_000);
    const clock = icount ? 'in virtual time (QEMU icount: 1 instruction = 1 ns, idle skipped), 1 vCPU' : `under ${accel.toUpperCase()} in real time (absolute times are emulated)`;
    await recordRun(guest, {
      file: join(ROOT, 'recordings', 'vm-legacy.jsonl'),
      mode: 'poll',
      // one vCPU: every collection of the recorder runs on the poller's CPU and delays its
      // wake-ups (with 1 s frames 7.4 µs of mean wake overhead, 5 s frames 6.8 µs, against the
      // suite's 4.3 µs with the exporter paused; 2026-12-06), so fewer, longer frames
      interval: '2s',
      scenario: { serial: device, qd: 1, bs: 4096, secs, profile: p.profile },
      description: `Real block-layer hybrid polling (io_poll_delay=0: sleep ½ the poll_stat mean) under io_uring IOPOLL (IORING_SETUP_IOPOLL): ` +
        `QD1 4k random O_DIRECT reads (hpdrive) on the simulated device hpsim (tools/hpsim, profile ${p.profile}: service time on the guest clock, 1 poll queue) ` +
        `in a QEMU guest ${clock}, Debian bullseye, kernel ${guest.info.release}`,
    }, log);
  } finally {
    const off = await guest.shutdown();
    log(`guest ${off.clean ? 'powered off' : 'killed (no clean power-off)'}`);
  }
}
