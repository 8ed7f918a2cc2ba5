// Recordings of real hybrid and classic polling, made with the exporter's own `record` inside the
// guest, so that replay, report and the dashboards show real data on machines that cannot poll.
import { writeFileSync } from 'node:fs';
import type { Guest } from './guest.js';
import type { PollMode, Scenario } from './session.js';

export interface RecordingSpec {
  file: string;
  mode: PollMode;
  /** the device and workload; a run is sized by `ios` (virtual time) or, failing that, `secs` */
  scenario: Pick<Scenario, 'serial' | 'qd' | 'bs'> & Partial<Pick<Scenario, 'profile' | 'ios'>> & { secs?: number };
  description: string;
  /** the recorder's frame interval (guest clock), default 1s */
  interval?: string;
}

/**
 * Starts `record` (1 s frames), waits for the BPF loader, runs the workload, stops the recorder
 * cleanly (SIGTERM: it finishes the frame in hand) and copies the recording out of the guest.
 */
export async function recordRun(g: Guest, spec: RecordingSpec, log: (m: string) => void): Promise<{ frames: number; bytes: number }> {
  const device = g.info.devices.find((d) => d.serial === spec.scenario.serial)?.name;
  if (!device) throw new Error(`no device ${spec.scenario.serial} in the guest`);
  const out = `/tmp/hp-rec-${spec.mode}.jsonl`;
  const s = spec.scenario;
  await g.agent('POST', '/exporter/start', {
    command: 'record',
    args: ['--bpf.enable=on', `--interval=${spec.interval ?? '1s'}`, `--output=${out}`, `--description=${spec.description}`, `--collector.device-include=^${device}$`],
    readyPattern: 'bpf loader running',
    timeoutMs: 180_000,
  }, 200_000);
  // A few idle frames with BPF up before the workload, so the recording starts from a quiet device.
  await new Promise((r) => setTimeout(r, 3000));
  if (s.profile) await g.agent('POST', '/hpsim/profile', { device, profile: s.profile, seed: 1 });
  const limit = s.ios !== undefined ? { ios: s.ios } : { secs: s.secs ?? 10 };
  await g.agent('POST', '/drive', { device: `/dev/${device}`, mode: spec.mode, qd: s.qd, bs: s.bs, ...limit });
  const r = await g.agent<{ result: { ios: number; iops: number; error?: string } | null }>('POST', '/drive/wait', {}, 600_000);
  if (!r.result || r.result.error) throw new Error(`hpdrive failed while recording: ${JSON.stringify(r)}`);
  await new Promise((r2) => setTimeout(r2, 2000));
  const stop = await g.agent<{ exit: { code: number | null } | null; log: string }>('POST', '/exporter/stop', {}, 60_000);
  if (stop.exit?.code !== 0) throw new Error(`record exited ${JSON.stringify(stop.exit)}:\n${stop.log.slice(-3000)}`);
  const { content } = await g.agent<{ content: string }>('POST', '/file', { path: out });
  writeFileSync(spec.file, content);
  const frames = content.trim().split('\n').length - 1;
  log(`recorded ${spec.file}: ${frames} frames, ${content.length} bytes; driver ${r.result.ios} I/Os at ${Math.round(r.result.iops)} IOPS`);
  return { frames, bytes: content.length };
}
