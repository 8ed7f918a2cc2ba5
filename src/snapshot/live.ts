// The live input reader: files through HostReader, per-I/O timings through the BPF collector.
import type { BpfSource } from '../bpf/source.js';
import type { BpfSnapshot } from '../bpf/types.js';
import type { Logger } from '../log.js';
import type { HostReader } from '../sources/reader.js';
import { collectorLog } from './collectorLog.js';
import type { InputReader } from './engine.js';
import type { CollectorResult, SnapshotInputs } from './types.js';

export function liveReader(host: HostReader, bpf: BpfSource, log: Logger, bpfEnabled: boolean): InputReader {
  const note = collectorLog(log);

  return async (): Promise<SnapshotInputs> => {
    const takenAtMs = Date.now();
    const [hostRead, bpfRead] = await Promise.all([host.read(), bpfEnabled ? readBpf(bpf) : undefined]);
    const collectors = [...hostRead.collectors, ...(bpfRead ? [bpfRead.result] : [])];
    // A disabled BPF collector (auto without privileges) was explained once at startup; its
    // success=0 stays visible in the self-metrics without a warning on the first scrape too.
    const disabled = bpf.status().state === 'disabled';
    collectors.filter((c) => !(c.name === 'bpf' && disabled)).forEach(note);
    return {
      takenAtMs,
      host: hostRead.host,
      ...(bpfRead?.snap ? { bpf: bpfRead.snap } : {}),
      bpfStatus: bpf.status(),
      collectors,
    };
  };
}

async function readBpf(bpf: BpfSource): Promise<{ snap?: BpfSnapshot; result: CollectorResult }> {
  const t0 = performance.now();
  const dur = () => (performance.now() - t0) / 1000;
  try {
    const snap = await bpf.snapshot();
    const st = bpf.status();
    if (!snap) return { result: { name: 'bpf', success: false, durationSeconds: dur(), error: st.reason } };
    return { snap, result: { name: 'bpf', success: true, durationSeconds: dur() } };
  } catch (e) {
    return { result: { name: 'bpf', success: false, durationSeconds: dur(), error: e instanceof Error ? e.message : String(e) } };
  }
}
