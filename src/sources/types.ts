// Plain data read from sysfs, debugfs and procfs. Parsers produce these; nothing here does I/O.

/** Kernel eras of hybrid polling (docs/kernel.md §0). Label values are stable API. */
export type Era =
  | 'pre_hybrid' // ≤4.9: classic polling only
  | 'blkmq_hybrid' // 4.10–5.15: block-layer hybrid reachable (sync HIPRI and io_uring IOPOLL)
  | 'blkmq_hybrid_sync_only' // 5.16–5.18: io_uring passes BLK_POLL_NOSLEEP; only sync HIPRI sleeps
  | 'blkmq_hybrid_dead' // 5.19–6.3: code present, unreachable from user space
  | 'no_hybrid' // 6.4–6.12: removed; io_poll_delay reads -1
  | 'iouring_hybrid' // 6.13+: io_uring IORING_SETUP_HYBRID_IOPOLL, per ring
  | 'unknown';

export const ERAS: readonly Era[] = [
  'pre_hybrid',
  'blkmq_hybrid',
  'blkmq_hybrid_sync_only',
  'blkmq_hybrid_dead',
  'no_hybrid',
  'iouring_hybrid',
  'unknown',
];

/** How the era was decided, strongest first. */
export type EraEvidence = 'btf' | 'debugfs' | 'release_hint' | 'none';

/** Kernel features found by probing files (never by writing). */
export interface KernelFeatures {
  /** BTF: struct io_ring_ctx has hybrid_poll_time. undefined = BTF not readable. */
  iouringHybrid?: boolean;
  /** BTF: struct request_queue has poll_nsec (legacy hybrid code present, ≤6.3). */
  legacyHybrid?: boolean;
  /** BTF: struct blk_mq_hw_ctx has poll_considered (hctx io_poll counters, ≤5.15). */
  hctxPollCounters?: boolean;
  /** debugfs: some hctx<N>/io_poll file exists. */
  debugfsHctxIoPoll?: boolean;
  /** debugfs: some poll_stat file has the 16-line format. */
  debugfsPollStatLines?: boolean;
  /** `uname -r` style release, e.g. "6.18.44"; a hint only. */
  release?: string;
}

export interface EraDetection {
  era: Era;
  evidence: EraEvidence;
  /** Human-readable reason, shown on / and in logs. */
  reason: string;
}

export type PollStatOp = 'read' | 'write';

/** One line of debugfs poll_stat (4.12–6.3). Times in nanoseconds. */
export interface PollStatBucket {
  op: PollStatOp;
  sizeBytes: number;
  samples: number;
  meanNs?: number;
  minNs?: number;
  maxNs?: number;
}

/** The state of a poll_stat file: absent, empty (5.17+ unallocated or 6.4+), or 16 buckets. */
export type PollStat =
  | { kind: 'absent' }
  | { kind: 'empty' }
  | { kind: 'buckets'; buckets: PollStatBucket[] };

/** debugfs hctx<N>/io_poll counters (4.11–5.15). Reset to 0 on any write. */
export interface HctxIoPoll {
  hctx: string;
  considered: number;
  invoked: number;
  success: number;
}

export type HctxType = 'default' | 'read' | 'poll';

export interface DeviceReading {
  device: string;
  /** major:minor from sysfs dev */
  devNum?: string;
  /** queue/io_poll: 0/1 (a capability, not usage) */
  ioPoll?: number;
  /** queue/io_poll_delay raw value: -1 classic, 0 adaptive, >0 fixed µs */
  ioPollDelay?: number;
  /** count of hctx by type from debugfs hctx*\/type; undefined when debugfs is not readable */
  hctxByType?: Partial<Record<string, number>>;
  pollStat?: PollStat;
  hctxIoPoll?: HctxIoPoll[];
  /** non-fatal problems met while reading this device (file → message) */
  errors: { file: string; message: string }[];
}

export interface HostReading {
  /** /sys/module/nvme/parameters/poll_queues, when the nvme module is loaded */
  nvmePollQueues?: number;
  features: KernelFeatures;
  era: EraDetection;
  devices: DeviceReading[];
}
