// What `report` shows, as plain data: the model's analysis of every device between two snapshots,
// with the context needed to read it. Pure: snapshots in, Report out; the renderers take it from here.
import { ringPollCpuNs, type BpfRing, type PollPath, type RingLoops } from '../bpf/types.js';
import { analysePair, histIncrease, MIN_SAMPLES, type ModelTarget } from '../model/index.js';
import { bucketPairs } from '../model/hist.js';
import type { RecordingHeader } from '../record/format.js';
import type { SnapshotInputs } from '../snapshot/types.js';
import { caveats, type Caveats } from './caveats.js';
import type { Era, EraEvidence } from '../sources/types.js';

export const REPORT_FORMAT = 'hybridpoll-report';
export const REPORT_VERSION = 1;

export interface ReportDevice {
  /** the model's analysis; all times in ns */
  target: ModelTarget;
  /** what to keep in mind reading it (unresolved share, oversleep check, causes of η or wasted CPU out of range), as text */
  caveats: Caveats;
  /** measured issue → reaped latency over the window: sparse [bucket index, count] on the grid */
  latency: [number, number][];
}

export interface ReportRing {
  ring: string;
  comm: string;
  pid: number;
  hybrid: boolean;
  /** the ring's running minimum at the end of the window; the kernel sleeps half of it */
  hybridPollTimeNs: number | null;
  /** hybrid sleeps in the window */
  sleeps: number;
  /** the ring's poll loops in the window, over every device it polls (a loader that counts them) */
  loops?: { polledIos: number; cpuPerIoNs: number; cores: number };
}

/** A block device as sysfs/debugfs show it: can it poll at all? */
export interface ReportHostDevice {
  device: string;
  ioPoll?: number;
  ioPollDelay?: number;
  /** poll hardware queues from debugfs, when readable */
  pollQueues?: number;
}

export type ReportSource = { kind: 'live' } | { kind: 'recording'; file: string; header: RecordingHeader };

export interface Report {
  format: typeof REPORT_FORMAT;
  version: typeof REPORT_VERSION;
  /** ISO time the report was made */
  generated: string;
  source: ReportSource;
  host: string;
  kernel: { release?: string; era: Era; evidence: EraEvidence | 'none' };
  bpf: { state: string; reason: string; pollPath?: PollPath };
  window: { from: string; to: string; seconds: number };
  latencyBudget: number;
  /** every block device of the host reading, analysed or not */
  hostDevices: ReportHostDevice[];
  devices: ReportDevice[];
  rings: ReportRing[];
  /** why something expected is missing (no BPF data, too few samples), for humans */
  notes: string[];
}

export interface BuildOptions {
  latencyBudget: number;
  source: ReportSource;
  host: string;
  generatedAtMs: number;
}

function rings(from: SnapshotInputs, to: SnapshotInputs, seconds: number): ReportRing[] {
  const before = new Map<string, BpfRing>((from.bpf?.rings ?? []).map((r) => [r.ring, r]));
  return (to.bpf?.rings ?? []).map((r) => {
    const b = before.get(r.ring);
    const loops = ringLoops(r.loops, b?.loops, seconds);
    return {
      ring: r.ring,
      comm: r.comm,
      pid: r.pid,
      hybrid: r.hybrid,
      hybridPollTimeNs: r.hybridPollTimeNs,
      sleeps: b && r.sleeps >= b.sleeps ? r.sleeps - b.sleeps : r.sleeps,
      ...(loops ? { loops } : {}),
    };
  });
}

/** A ring's polling CPU over the window (docs/metrics.md, hybridpoll_ring_poll_cpu_seconds_total). */
function ringLoops(to: RingLoops | undefined, from: RingLoops | undefined, seconds: number): ReportRing['loops'] {
  if (!to) return undefined;
  const base = from && to.polledIos >= from.polledIos ? from : undefined;
  const d = (k: keyof RingLoops) => to[k] - (base?.[k] ?? 0);
  const polledIos = d('polledIos');
  const cpuNs = ringPollCpuNs({ wallNs: d('wallNs'), offcpuNs: d('offcpuNs'), wakeLatencyNs: d('wakeLatencyNs') });
  if (!(polledIos > 0) || !(seconds > 0)) return undefined;
  return { polledIos, cpuPerIoNs: cpuNs / polledIos, cores: cpuNs / 1e9 / seconds };
}

/** The analysis between two snapshots of the same host (`from` earlier than `to`). */
export function buildReport(from: SnapshotInputs, to: SnapshotInputs, o: BuildOptions): Report {
  const targets = analysePair(from, to, { latencyBudget: o.latencyBudget });
  const devices: ReportDevice[] = targets.map((target) => {
    const before = from.bpf?.devices.find((d) => d.dev === target.dev)?.hists.rq_lat;
    const after = to.bpf?.devices.find((d) => d.dev === target.dev)?.hists.rq_lat;
    return { target, caveats: caveats(target), latency: after ? bucketPairs(histIncrease(before, after)) : [] };
  });
  const notes: string[] = [];
  if (!to.bpf) {
    notes.push(`no BPF data, so no per-I/O timings to analyse: the BPF collector is ${to.bpfStatus.state} (${to.bpfStatus.reason})`);
  } else {
    const analysed = new Set(targets.map((t) => t.dev));
    const name = (dev: string, known?: string) => known ?? to.host?.devices.find((h) => h.devNum === dev)?.device ?? dev;
    for (const d of to.bpf.devices.filter((x) => !analysed.has(x.dev))) {
      notes.push(`${name(d.dev, d.device)}: fewer than ${MIN_SAMPLES} timed I/Os in the window: nothing to analyse`);
    }
    if (to.bpf.devices.length === 0) notes.push('BPF saw no polled I/O in the window');
  }
  const era = to.host?.era;
  return {
    format: REPORT_FORMAT,
    version: REPORT_VERSION,
    generated: new Date(o.generatedAtMs).toISOString(),
    source: o.source,
    host: o.host,
    kernel: { ...(to.host?.features.release ? { release: to.host.features.release } : {}), era: era?.era ?? 'unknown', evidence: era?.evidence ?? 'none' },
    bpf: { state: to.bpfStatus.state, reason: to.bpfStatus.reason, ...(to.bpf ? { pollPath: to.bpf.pollPath } : {}) },
    window: { from: new Date(from.takenAtMs).toISOString(), to: new Date(to.takenAtMs).toISOString(), seconds: (to.takenAtMs - from.takenAtMs) / 1000 },
    latencyBudget: o.latencyBudget,
    hostDevices: (to.host?.devices ?? []).map((d) => ({
      device: d.device,
      ...(d.ioPoll !== undefined ? { ioPoll: d.ioPoll } : {}),
      ...(d.ioPollDelay !== undefined ? { ioPollDelay: d.ioPollDelay } : {}),
      ...(d.hctxByType ? { pollQueues: d.hctxByType['poll'] ?? 0 } : {}),
    })),
    devices,
    rings: rings(from, to, (to.takenAtMs - from.takenAtMs) / 1000),
    notes,
  };
}
