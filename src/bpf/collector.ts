// The BPF collector (BpfSource): decides per --bpf.enable whether to run the loader, keeps it
// running, and turns each answer into a restart-adjusted BpfSnapshot.
//   auto: runs when privileges, kernel BTF and the loader binary allow; otherwise, or when the
//         loader fails to start three times in a row, one log line and a disabled status saying why.
//   on:   the same checks, but a failure is an error (logged at error level, state failed).
import { constants } from 'node:fs';
import { access, readFile, readlink } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.js';
import { deviceSelected, type DeviceFilter } from '../sources/reader.js';
import { RestartAccumulator } from './accumulate.js';
import { LoaderClient } from './client.js';
import { nextSampleRate, stepCpu, type CpuMeter } from './cost.js';
import { toBpfSnapshot } from './protocol.js';
import type { BpfSource } from './source.js';
import type { BpfCause, BpfSnapshot, BpfStatus } from './types.js';

/** The loader built by `npm run build:bpf`, relative to this module (src/bpf or dist/bpf). */
export const DEFAULT_LOADER = fileURLToPath(new URL('../../build/bpf/hybridpoll-bpf', import.meta.url));

export interface BpfCollectorOptions {
  mode: 'auto' | 'on';
  loader?: string;
  timeoutMs: number;
  /** pass --force-tracepoint: never use fentry/fexit */
  forceTracepoint?: boolean;
  /** more loader arguments (tests: --test-sleeper-tgid) */
  extraArgs?: string[];
  log: Logger;
  /** overrides for tests */
  client?: { handshakeTimeoutMs?: number; backoff?: { initialMs: number; maxMs: number } };
  /** where to look for privileges and BTF (tests), and the sysfs root (--path.sysfs) */
  paths?: { procStatus?: string; btf?: string; sysfs?: string };
  /** --collector.device-include/-exclude: per-device series of other devices are dropped */
  filter?: DeviceFilter;
  /** called when a loader run is up and can answer (serve's refresh loop reads it at once) */
  onRunning?: () => void;
  /** --bpf.sample: time 1 in N completions, or pick N per collection to stay under cpuBudget */
  sample?: number | 'auto';
  /** --bpf.cpu-budget as a fraction of one CPU (0.005 = 0.5 %) */
  cpuBudget?: number;
  /** --bpf.max-rings: rings with a label of their own, the rest under ring="other" (default DEFAULT_MAX_RINGS) */
  maxRings?: number;
}

export const DEFAULT_CPU_BUDGET = 0.005;

/** Whether the filter restricts anything (otherwise every device passes). */
const filters = (f: DeviceFilter | undefined): f is DeviceFilter => !!f && (!!f.include || !!f.exclude);

/** Drops the per-device series of devices not selected. Pure. */
export function filterDevices(s: BpfSnapshot, selected: (dev: string) => boolean): BpfSnapshot {
  return {
    ...s,
    devices: s.devices.filter((d) => selected(d.dev)),
    deviceCounters: Object.fromEntries(Object.entries(s.deviceCounters).filter(([dev]) => selected(dev))),
  };
}

const CAP_SYS_ADMIN = 21;
const CAP_PERFMON = 38;
const CAP_BPF = 39;

/** Whether effective capabilities (hex CapEff of /proc/self/status) allow loading tracing programs. */
export function capsAllowBpf(capEffHex: string): boolean {
  const caps = BigInt(`0x${capEffHex.trim() || '0'}`);
  const has = (bit: number) => (caps >> BigInt(bit)) & 1n;
  return has(CAP_SYS_ADMIN) === 1n || (has(CAP_BPF) === 1n && has(CAP_PERFMON) === 1n);
}

/** Why the loader cannot run here, or undefined when it can. */
export async function preflight(loader: string, paths: BpfCollectorOptions['paths'] = {}): Promise<Blocked | undefined> {
  const status = await readFile(paths.procStatus ?? '/proc/self/status', 'utf8').catch(() => '');
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  if (capEff === undefined || !capsAllowBpf(capEff)) return { cause: 'not_privileged', reason: 'not privileged: needs root, or CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)' };
  const btf = paths.btf ?? '/sys/kernel/btf/vmlinux';
  if (await access(btf, constants.R_OK).then(() => false, () => true)) return { cause: 'no_btf', reason: `kernel has no BTF (${btf} is not readable; needs CONFIG_DEBUG_INFO_BTF)` };
  if (await access(loader, constants.X_OK).then(() => false, () => true)) return { cause: 'no_loader', reason: `BPF loader ${loader} is missing or not executable: run npm run build:bpf` };
  return undefined;
}

interface Blocked {
  cause: BpfCause;
  reason: string;
}

export class BpfCollector implements BpfSource {
  private readonly acc: RestartAccumulator;
  private client?: LoaderClient;
  private blocked?: Blocked & { state: 'disabled' | 'failed' };
  /** "major:minor" → block device name from sysfs (undefined: not there) */
  private readonly names = new Map<string, string | undefined>();
  private cpu?: CpuMeter;

  private constructor(private readonly o: BpfCollectorOptions) {
    this.acc = new RestartAccumulator(o.maxRings);
  }

  /** Checks whether the loader can run and starts it; never throws. */
  static async create(o: BpfCollectorOptions): Promise<BpfCollector> {
    const c = new BpfCollector(o);
    const loader = o.loader ?? DEFAULT_LOADER;
    const why = await preflight(loader, o.paths);
    if (why) {
      c.blocked = { state: o.mode === 'on' ? 'failed' : 'disabled', ...why };
      if (o.mode === 'on') o.log.error('BPF collector cannot run (--bpf.enable=on)', { reason: why.reason });
      else o.log.info('BPF collector disabled', { reason: why.reason });
      return c;
    }
    // a key per exporter process keeps ring ids stable across loader restarts, and secret
    const ringKey = [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
    c.client = new LoaderClient({
      file: loader,
      args: [
        ...(o.extraArgs ?? []),
        ...(o.forceTracepoint ? ['--force-tracepoint'] : []),
        ...(typeof o.sample === 'number' && o.sample > 1 ? [`--sample=${o.sample}`] : []),
        '--ring-key', ringKey, '--sysfs', o.paths?.sysfs ?? '/sys',
      ],
      timeoutMs: o.timeoutMs,
      log: o.log,
      ...(o.client?.handshakeTimeoutMs ? { handshakeTimeoutMs: o.client.handshakeTimeoutMs } : {}),
      ...(o.client?.backoff ? { backoff: o.client.backoff } : {}),
      onNewRun: () => c.acc.newRun(),
      ...(o.onRunning ? { onRunning: o.onRunning } : {}),
      // auto: a loader that cannot even load here (lockdown, a kernel without usable BPF) is not
      // retried forever; on: keep trying, the operator asked for BPF
      ...(o.mode === 'auto'
        ? {
            giveUpAfter: 3,
            onGiveUp: (why: string) => {
              c.blocked = { state: 'disabled', cause: 'loader_unusable', reason: `the BPF loader cannot run here: ${why}` };
              o.log.info('BPF collector disabled', { reason: c.blocked.reason });
            },
          }
        : {}),
    });
    c.client.start();
    return c;
  }

  status(): BpfStatus {
    const restarts = this.client?.restarts ?? 0;
    if (this.blocked) return { mode: this.o.mode, ...this.blocked, loaderRestarts: restarts };
    const cl = this.client!;
    switch (cl.state) {
      case 'running':
        return { mode: this.o.mode, state: 'running', cause: 'ok', reason: `${cl.hello?.pollPath} poll path`, loaderRestarts: restarts };
      case 'starting':
        return { mode: this.o.mode, state: 'starting', cause: cl.lastError ? 'restarting' : 'loading', reason: cl.lastError ? `restarting after: ${cl.lastError}` : 'loading BPF programs', loaderRestarts: restarts };
      default:
        return { mode: this.o.mode, state: 'failed', cause: 'loader_down', reason: cl.lastError ?? 'loader not running', loaderRestarts: restarts };
    }
  }

  async snapshot(): Promise<BpfSnapshot | undefined> {
    if (!this.client || this.client.state !== 'running') return undefined;
    const { hello, snap } = await this.client.request();
    if (snap.unknownKinds.length) this.o.log.debug('bpf loader sent unknown histogram kinds', { kinds: snap.unknownKinds.join(',') });
    const raw = toBpfSnapshot(hello, snap);
    // A device the loader no longer reports (it prunes devices gone from sysfs) and that sysfs does
    // not know is gone: forget it. One absent after a restart but still in sysfs is only idle.
    const reported = new Set([...raw.devices.map((d) => d.dev), ...Object.keys(raw.deviceCounters)]);
    const sysfs = this.o.paths?.sysfs ?? '/sys';
    for (const dev of this.acc.devices()) {
      if (!reported.has(dev) && (await access(`${sysfs}/dev/block/${dev}`).then(() => false, () => true))) this.acc.forget(dev);
    }
    const out = this.withCpu(this.acc.apply(raw));
    const f = this.o.filter;
    if (!filters(f)) return out;
    for (const d of out.devices.map((x) => x.dev).concat(Object.keys(out.deviceCounters))) {
      if (!this.names.has(d)) this.names.set(d, await readlink(`${sysfs}/dev/block/${d}`).then((l) => basename(l), () => undefined));
    }
    // A device whose name is unknown cannot match an include list; an exclude list lets it through.
    return filterDevices(out, (dev) => {
      const name = this.names.get(dev);
      return name === undefined ? !f.include : deviceSelected(name, f);
    });
  }

  /** Steps the CPU meter; in auto mode, asks the loader for the rate the budget allows. */
  private withCpu(s: BpfSnapshot): BpfSnapshot {
    const budget = this.o.cpuBudget ?? DEFAULT_CPU_BUDGET;
    const sample = s.sampleRate ?? 1;
    const runNs = Object.values(s.programs).reduce((a, p) => a + (p.runTimeNs ?? 0), 0);
    this.cpu = stepCpu(this.cpu, { bpfStats: s.bpfStats === true, runNs, ios: s.counters['ios'] ?? 0, sample, atNs: s.takenAtNs });
    if (this.o.sample === 'auto') {
      const next = nextSampleRate(sample, this.cpu.share, budget);
      if (next !== sample) {
        this.o.log.info('bpf sampling rate changed', { from: sample, to: next, cpu_share: this.cpu.share?.toPrecision(3), iops: Math.round(this.cpu.iops ?? 0) });
        this.client?.setSample(next);
      }
    }
    return { ...s, cpu: { seconds: this.cpu.seconds, source: this.cpu.source, budget } };
  }

  async stop(): Promise<void> {
    await this.client?.stop();
  }
}
