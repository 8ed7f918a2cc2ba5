// One snapshot per scrape: everything every metric, the / page and the report read.
import type { BpfSnapshot, BpfStatus } from '../bpf/types.js';
import type { HostReading } from '../sources/types.js';
import type { ModelResult } from '../model/types.js';

export type CollectorName = 'sysfs' | 'debugfs' | 'era' | 'bpf' | 'model';
export const COLLECTORS: readonly CollectorName[] = ['sysfs', 'debugfs', 'era', 'bpf', 'model'];

export interface CollectorResult {
  name: CollectorName;
  success: boolean;
  durationSeconds: number;
  /** one-line reason when success is false */
  error?: string;
}

/** What the readers produce: the raw, recordable input of one scrape. */
export interface SnapshotInputs {
  /** wall clock, ms since the epoch */
  takenAtMs: number;
  host?: HostReading;
  bpf?: BpfSnapshot;
  bpfStatus: BpfStatus;
  collectors: CollectorResult[];
}

/** Per poll_stat line: when its content last changed (staleness signal). */
export interface PollStatAge {
  device: string;
  op: string;
  sizeBytes: number;
  /** wall clock ms when this line was first seen with its current content */
  unchangedSinceMs: number;
}

/** hctx io_poll counters made monotonic across the kernel's reset-on-write. */
export interface HctxCounterTotals {
  device: string;
  hctx: string;
  considered: number;
  invoked: number;
  success: number;
  resets: number;
}

export interface Snapshot extends SnapshotInputs {
  pollStatAges: PollStatAge[];
  hctxTotals: HctxCounterTotals[];
  model?: ModelResult;
}
