// The live input reader: files through HostReader, per-I/O timings through the BPF collector.
import type { BpfSource } from '../bpf/source.js';
import type { BpfSnapshot } from '../bpf/types.js';
import type { Logger } from '../log.js';
import type { HostReader } from '../sources/reader.js';
import { collectorLog } from './collectorLog.js';
import type { InputReader } from './engine.js';
import type { HostReading } from '../sources/types.js';
import type { CollectorName, CollectorResult, SnapshotInputs } from './types.js';

/**
 * How long a scrape waits for the kernel files. A read stuck in the kernel (a sysfs attribute
 * behind a queue freeze on a dead controller) would otherwise hold every later scrape: the engine
 * shares one snapshot at a time. Below Prometheus' default 10 s scrape timeout.
 */
export const HOST_READ_DEADLINE_MS = 4000;

/**
 * The first read does once-per-process work (the kernel's BTF, each device's static attributes):
 * seconds on a slow or emulated CPU. It gets a longer deadline so a healthy start is not reported
 * as a hung read; a read stuck at start still fails its scrapes after this.
 */
export const FIRST_HOST_READ_DEADLINE_MS = 30_000;

interface HostRead {
  host?: HostReading;
  collectors: CollectorResult[];
}

export function liveReader(
  host: Pick<HostReader, 'read'>,
  bpf: BpfSource,
  log: Logger,
  bpfEnabled: boolean,
  deadlineMs = HOST_READ_DEADLINE_MS,
  firstDeadlineMs = FIRST_HOST_READ_DEADLINE_MS,
): InputReader {
  const note = collectorLog(log);
  // A read that outlived its deadline: no new one starts until it ends (each would pin another
  // thread-pool thread on the same stuck file); scrapes meanwhile report the files as failed.
  let stuck: { since: number; read: Promise<unknown> } | undefined;
  // The file collectors a read reports (the enabled ones), to mark them failed when it hangs.
  let names: CollectorName[] = ['sysfs', 'debugfs', 'era'];
  let done = false;

  const readHost = async (): Promise<HostRead> => {
    const t0 = performance.now();
    const failed = (error: string): HostRead => ({
      collectors: names.map((name) => ({ name, success: false, durationSeconds: (performance.now() - t0) / 1000, error })),
    });
    if (stuck) return failed(`kernel file reads still pending since ${new Date(stuck.since).toISOString()} (a read hung in the kernel?)`);
    const read = host.read();
    const limitMs = done ? deadlineMs : firstDeadlineMs;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), limitMs)));
    const first = await Promise.race([read, late]);
    clearTimeout(timer);
    if (first !== 'late') {
      names = first.collectors.map((c) => c.name);
      done = true;
      return first;
    }
    const entry = { since: Date.now(), read };
    stuck = entry;
    const clear = () => {
      if (stuck === entry) stuck = undefined;
    };
    read.then(clear, clear);
    return failed(`kernel file reads did not finish within ${limitMs / 1000} s (a read hung in the kernel?)`);
  };

  return async (): Promise<SnapshotInputs> => {
    const takenAtMs = Date.now();
    const [hostRead, bpfRead] = await Promise.all([readHost(), bpfEnabled ? readBpf(bpf) : undefined]);
    const collectors = [...hostRead.collectors, ...(bpfRead ? [bpfRead.result] : [])];
    // A disabled BPF collector (auto without privileges) was explained once at startup; its
    // success=0 stays visible in the self-metrics without a warning on the first scrape too.
    const disabled = bpf.status().state === 'disabled';
    collectors.filter((c) => !(c.name === 'bpf' && disabled)).forEach(note);
    return {
      takenAtMs,
      ...(hostRead.host ? { host: hostRead.host } : {}),
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
