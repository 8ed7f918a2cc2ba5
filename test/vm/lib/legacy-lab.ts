// The bullseye guest of the VM lab (issue 8): same builder, cache, QEMU harness and agent as the
// trixie guest, its own root image key and its own saved sessions (results/latest-bullseye.json).
import { existsSync, mkdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { accelFacts, chooseAccel } from './accel.js';
import { bootWithRetry, buildAll, RESULTS, ROOT } from './lab.js';
import { DELAY_MODES, runLegacySession, WORKLOADS, type LegacySession, type Workload } from './legacy.js';
import { recordRun } from './recordings.js';

export const LEGACY_SUITE = 'bullseye';
export const LATEST_LEGACY = join(RESULTS, `latest-${LEGACY_SUITE}.json`);
/** The 20 µs null-co controller: the sleep is then a fraction of the device time, as on real NVMe. */
export const LEGACY_SERIAL = 'hpslow';

const log = (msg: string) => process.stderr.write(`[vm ${LEGACY_SUITE} ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** The exporter as the operator would run it; 5.10 has no fentry target of the io_uring poll path. */
export function legacyExporterArgs(): string[] {
  // one collection per scrape: the lab compares scrapes taken at the edges of each run (lab.ts)
  return ['--bpf.enable=on', '--bpf.timeout=10s', '--log.level=info', '--collector.interval=0'];
}

export interface LegacyLabOptions {
  secs: number;
  workloads: readonly Workload[];
}

export function legacyOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LegacyLabOptions {
  const secs = Number(env.HPVM_LEGACY_SECS ?? 6);
  if (!(secs > 0)) throw new Error('HPVM_LEGACY_SECS must be > 0');
  const workloads = (env.HPVM_LEGACY_WORKLOADS ?? WORKLOADS.join(',')).split(',') as Workload[];
  for (const w of workloads) if (!WORKLOADS.includes(w)) throw new Error(`HPVM_LEGACY_WORKLOADS: unknown workload ${w} (${WORKLOADS.join(', ')})`);
  return { secs, workloads };
}

/** Builds, boots the bullseye guest, runs the legacy session, powers off; returns the saved session's path. */
export async function runLegacyLab(o: LegacyLabOptions): Promise<string> {
  const t0 = Date.now();
  const images = buildAll(LEGACY_SUITE);
  const { accel, why } = chooseAccel(accelFacts());
  log(`accelerator: ${accel} (${why}); ${o.workloads.join(' + ')} × io_poll_delay ${DELAY_MODES.join('/')}, ${o.secs} s each`);
  const guest = await bootWithRetry(images, accel);
  let session: LegacySession;
  try {
    session = await runLegacySession(guest, {
      suite: LEGACY_SUITE, startedAt: new Date(t0).toISOString(), accel, accelWhy: why, images, info: guest.info, bootSeconds: guest.bootSeconds,
    }, { secs: o.secs, serial: LEGACY_SERIAL, exporterArgs: legacyExporterArgs(), workloads: o.workloads, log });
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
 * recordings/vm-legacy.jsonl: hpdrive's io_uring IOPOLL on the 20 µs device of the bullseye guest
 * with io_poll_delay=0 (adaptive, ½ the poll_stat mean), the era the seed threads are about.
 */
export async function recordLegacy(secs: number): Promise<void> {
  const images = buildAll(LEGACY_SUITE);
  const { accel, why } = chooseAccel(accelFacts());
  log(`accelerator: ${accel} (${why})`);
  const guest = await bootWithRetry(images, accel);
  try {
    const device = guest.info.devices.find((d) => d.serial === LEGACY_SERIAL)?.name;
    if (!device) throw new Error(`no NVMe namespace with serial ${LEGACY_SERIAL}`);
    await guest.agent('POST', '/io_poll_delay', { device, value: 0 });
    const caveat = accel === 'tcg' ? '; software-emulated CPU: counts and ratios are real, absolute times are emulated (5-20x slow)' : '';
    await recordRun(guest, {
      file: join(ROOT, 'recordings', 'vm-legacy.jsonl'),
      mode: 'poll',
      scenario: { id: 'legacy', title: 'QD1 4k randread, io_poll_delay=0', serial: LEGACY_SERIAL, qd: 1, bs: 4096, secs },
      description: `Real block-layer hybrid polling (io_poll_delay=0: sleep ½ the poll_stat mean) under io_uring IOPOLL (IORING_SETUP_IOPOLL): ` +
        `QD1 4k random O_DIRECT reads (hpdrive) on an emulated NVMe (QEMU null-co, latency-ns=20000, 2 poll queues) in a QEMU ${accel.toUpperCase()} guest, ` +
        `Debian bullseye, kernel ${guest.info.release}${caveat}`,
    }, log);
  } finally {
    const off = await guest.shutdown();
    log(`guest ${off.clean ? 'powered off' : 'killed (no clean power-off)'}`);
  }
}
