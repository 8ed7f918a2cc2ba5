// Every device between two snapshots (`report --duration D`, a recording's span): the deltas with
// resets absorbed, each ring over several devices modelled whole, the rest per device. Pure.
import type { BpfSnapshot } from '../bpf/types.js';
import type { PollStat } from '../sources/types.js';
import type { SnapshotInputs } from '../snapshot/types.js';
import { analyseUnit, analysisUnits } from './ring.js';
import type { AnalyseOptions, DeviceWindow, ModelTarget } from './types.js';
import { Accumulator, totalsDelta } from './window.js';

/** Device name, io_poll_delay and poll_stat's mean for a BPF device, from the BPF series or the host reading. */
export function deviceContext(inputs: SnapshotInputs, dev: string, bpfName?: string): Pick<DeviceWindow, 'device' | 'ioPollDelay' | 'pollStatMeanNs' | 'sharedWith' | 'lookMinNs'> {
  const host = inputs.host?.devices.find((d) => (bpfName ? d.device === bpfName : false) || d.devNum === dev);
  const device = bpfName ?? host?.device ?? dev;
  const series = inputs.bpf?.devices.find((d) => d.dev === dev);
  const sharedWith = series?.sharedWith;
  const pollStatMeanNs = host?.pollStat ? pollStatMean(host.pollStat) : undefined;
  return {
    device,
    ...(host?.ioPollDelay !== undefined ? { ioPollDelay: host.ioPollDelay } : {}),
    ...(pollStatMeanNs !== undefined ? { pollStatMeanNs } : {}),
    ...(sharedWith ? { sharedWith } : {}),
    ...(series?.lookMinNs !== undefined ? { lookMinNs: series.lookMinNs } : {}),
  };
}

/** The mean over poll_stat's lines with samples, weighted by them; undefined when none has any. */
export function pollStatMean(ps: PollStat): number | undefined {
  if (ps.kind !== 'buckets') return undefined;
  let n = 0;
  let sum = 0;
  for (const b of ps.buckets) {
    if (b.samples > 0 && b.meanNs !== undefined) {
      n += b.samples;
      sum += b.samples * b.meanNs;
    }
  }
  return n > 0 ? sum / n : undefined;
}

/**
 * Every device between two snapshots (e.g. `report --duration D`): deltas from..to with resets
 * absorbed, analysed. Devices missing from `from` are measured from zero (they appeared in between).
 */
export function analysePair(from: SnapshotInputs, to: SnapshotInputs, opts: AnalyseOptions): ModelTarget[] {
  if (!from.bpf || !to.bpf) return [];
  const acc = new Accumulator();
  const base = acc.update(from.bpf);
  const head = acc.update(to.bpf);
  const seconds = secondsBetween(from, to);
  if (!(seconds > 0)) return [];
  const era = to.host?.era.era ?? 'unknown';
  const release = to.host?.features.release;
  const windows: DeviceWindow[] = [];
  for (const [dev, cur] of head) {
    const old = base.get(dev);
    const d = old ? totalsDelta(old, cur) : { hists: cur.hists, counters: cur.counters };
    windows.push({ dev, ...deviceContext(to, dev, cur.device), seconds, era, ...(release ? { release } : {}), ...d });
  }
  return analysisUnits(windows).flatMap((u) => analyseUnit(u, opts));
}

function secondsBetween(a: { takenAtMs: number; bpf?: BpfSnapshot }, b: { takenAtMs: number; bpf?: BpfSnapshot }): number {
  if (a.bpf && b.bpf && b.bpf.takenAtNs > a.bpf.takenAtNs) return (b.bpf.takenAtNs - a.bpf.takenAtNs) / 1e9;
  return (b.takenAtMs - a.takenAtMs) / 1000;
}
