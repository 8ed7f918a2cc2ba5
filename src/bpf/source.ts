// What the snapshot engine needs from the BPF collector (implemented in src/bpf/collector.ts).
import type { BpfCause, BpfSnapshot, BpfStatus } from './types.js';

export interface BpfSource {
  status(): BpfStatus;
  /** Current cumulative maps; undefined when the loader is not running. Throws on a failed request. */
  snapshot(): Promise<BpfSnapshot | undefined>;
  stop(): Promise<void>;
}

export function disabledBpf(reason: string, cause: BpfCause = 'disabled_by_flag'): BpfSource {
  const status: BpfStatus = { mode: 'off', state: 'disabled', cause, reason, loaderRestarts: 0 };
  return { status: () => status, snapshot: async () => undefined, stop: async () => {} };
}
