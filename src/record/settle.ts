// One-shot readers (record, report) take their first snapshot right after starting the BPF
// loader, which needs a second or two to load and attach. A first snapshot without BPF data would
// leave the window's start without histograms, so wait until the loader is up or has given up.
import type { BpfSource } from '../bpf/source.js';
import type { BpfStatus } from '../bpf/types.js';

export async function bpfSettled(bpf: BpfSource, timeoutMs: number, pollMs = 100): Promise<BpfStatus> {
  const end = Date.now() + timeoutMs;
  while (bpf.status().state === 'starting' && Date.now() < end) await new Promise((r) => setTimeout(r, pollMs));
  return bpf.status();
}
