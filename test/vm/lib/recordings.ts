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

/** Frames written so far to the guest's recording (its first line is the header). */
async function framesIn(g: Guest, path: string): Promise<number> {
  try {
    const { content } = await g.agent<{ content: string }>('POST', '/file', { path });
    return Math.max(0, content.trim().split('\n').length - 1);
  } catch {
    return 0; // not written yet
  }
}

async function waitFrames(g: Guest, path: string, n: number, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while ((await framesIn(g, path)) < n) {
    if (Date.now() > end) throw new Error(`the recorder wrote fewer than ${n} frames to ${path} in ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
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
  // One idle frame with BPF up before the workload (the baseline every delta starts from), and one
  // after it. Counted in frames, not waited for in host time: under icount an idle guest's clock
  // jumps from timer to timer, so a few host seconds were tens of idle frames (2026-12-06: 79
  // frames, 390 s of guest time around a 4 s run, which `report` then averaged over).
  await waitFrames(g, out, 1);
  if (s.profile) await g.agent('POST', '/hpsim/profile', { device, profile: s.profile, seed: 1 });
  const limit = s.ios !== undefined ? { ios: s.ios } : { secs: s.secs ?? 10 };
  await g.agent('POST', '/drive', { device: `/dev/${device}`, mode: spec.mode, qd: s.qd, bs: s.bs, ...limit });
  const r = await g.agent<{ result: { ios: number; iops: number; error?: string } | null }>('POST', '/drive/wait', {}, 600_000);
  if (!r.result || r.result.error) throw new Error(`hpdrive failed while recording: ${JSON.stringify(r)}`);
  await waitFrames(g, out, (await framesIn(g, out)) + 1);
  const stop = await g.agent<{ exit: { code: number | null } | null; log: string }>('POST', '/exporter/stop', {}, 60_000);
  if (stop.exit?.code !== 0) throw new Error(`record exited ${JSON.stringify(stop.exit)}:\n${stop.log.slice(-3000)}`);
  const { content } = await g.agent<{ content: string }>('POST', '/file', { path: out });
  writeFileSync(spec.file, content);
  const frames = content.trim().split('\n').length - 1;
  log(`recorded ${spec.file}: ${frames} frames, ${content.length} bytes; driver ${r.result.ios} I/Os at ${Math.round(r.result.iops)} IOPS`);
  return { frames, bytes: content.length };
}
