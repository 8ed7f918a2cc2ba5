// The sliding window: BPF histograms and counters are cumulative (since the loader started), the
// model wants what happened in the last N seconds. Two steps:
//  - Accumulator turns raw readings into reset-absorbing totals per device (a loader restart or a
//    replay loop resets the raw series; the increase then counts from zero, as PromQL increase()).
//    Devices absent from a reading are dropped; one that comes back starts a new epoch.
//  - SlidingWindow keeps those totals by time, bounded by the window (and an entry cap), and
//    diffs the latest entry against the oldest one within the window that has the same epoch.
import type { BpfSnapshot, BucketHist, HistKind } from '../bpf/types.js';
import { counterIncrease, histReset, histSum, histDelta, checkHist } from './hist.js';

export interface DeviceTotals {
  dev: string;
  device?: string;
  /** increments each time the device (re)appears; deltas never cross epochs */
  epoch: number;
  hists: Partial<Record<HistKind, BucketHist>>;
  counters: Record<string, number>;
}

interface RawDevice {
  hists: Partial<Record<HistKind, BucketHist>>;
  counters: Record<string, number>;
}

export class Accumulator {
  private raw = new Map<string, RawDevice>();
  private totals = new Map<string, DeviceTotals>();
  /**
   * Per device and kind, what the totals hold beyond the current raw reading (the counts before
   * each reset); absent while that is nothing. Totals = offset + raw, so a series that never reset
   * (the usual case) is passed on as read, without bucket arithmetic per histogram and snapshot.
   */
  private offsets = new Map<string, Partial<Record<HistKind, BucketHist>>>();
  private epochs = 0;

  /** Feed one BPF reading; returns the totals of every device in it. Throws on malformed histograms. */
  update(bpf: BpfSnapshot): Map<string, DeviceTotals> {
    const raw = new Map<string, RawDevice>();
    for (const d of bpf.devices) {
      for (const [k, h] of Object.entries(d.hists)) if (h) checkHist(h, `device ${d.dev} histogram ${k}`);
      raw.set(d.dev, { hists: d.hists, counters: bpf.deviceCounters[d.dev] ?? {} });
    }
    for (const [dev, counters] of Object.entries(bpf.deviceCounters)) if (!raw.has(dev)) raw.set(dev, { hists: {}, counters });

    const names = new Map(bpf.devices.map((d) => [d.dev, d.device]));
    const next = new Map<string, DeviceTotals>();
    const offsets = new Map<string, Partial<Record<HistKind, BucketHist>>>();
    for (const [dev, cur] of raw) {
      const prevRaw = this.raw.get(dev);
      const prev = this.totals.get(dev);
      const off: Partial<Record<HistKind, BucketHist>> = { ...this.offsets.get(dev) };
      const hists: Partial<Record<HistKind, BucketHist>> = { ...prev?.hists };
      for (const [k, h] of Object.entries(cur.hists) as [HistKind, BucketHist][]) {
        const p = prevRaw?.hists[k];
        // After a reset, or when the series was absent from the last reading, everything in h is
        // new (as PromQL increase()): the totals so far become the offset.
        if (!p || histReset(p, h)) {
          const before = prev?.hists[k];
          if (before && before.count + before.sumNs + before.aux0 + before.aux1 > 0) off[k] = before;
          else delete off[k];
        }
        const o = off[k];
        hists[k] = o ? histSum(o, h) : h;
      }
      const counters: Record<string, number> = { ...prev?.counters };
      for (const [k, v] of Object.entries(cur.counters)) {
        if (Number.isFinite(v) && v >= 0) counters[k] = (counters[k] ?? 0) + counterIncrease(prevRaw?.counters[k], v);
      }
      const name = names.get(dev) ?? prev?.device;
      next.set(dev, { dev, ...(name ? { device: name } : {}), epoch: prev?.epoch ?? ++this.epochs, hists, counters });
      if (Object.keys(off).length) offsets.set(dev, off);
    }
    this.raw = raw;
    this.totals = next;
    this.offsets = offsets;
    return next;
  }
}

export interface WindowEntry {
  /** wall clock of the snapshot, ms */
  tMs: number;
  /** monotonic clock of the BPF reading, ns, when there was one */
  monoNs?: number;
  devices: Map<string, DeviceTotals>;
  /** the loader's --bpf.sample rate when it read its maps (BpfSnapshot.sampleRate) */
  sampleRate?: number;
}

export interface Delta {
  seconds: number;
  hists: Partial<Record<HistKind, BucketHist>>;
  counters: Record<string, number>;
  /** the highest sample rate read over the delta's entries (absent when none said): see DeviceWindow */
  sampleRate?: number;
}

/** totals b − a of one device (same epoch, a earlier). */
export function totalsDelta(a: DeviceTotals | undefined, b: DeviceTotals): Omit<Delta, 'seconds'> {
  const hists: Partial<Record<HistKind, BucketHist>> = {};
  for (const [k, h] of Object.entries(b.hists) as [HistKind, BucketHist][]) {
    const base = a?.hists[k];
    hists[k] = base ? histDelta(base, h) : h;
  }
  const counters: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.counters)) counters[k] = v - (a?.counters[k] ?? 0);
  return { hists, counters };
}

function seconds(a: WindowEntry, b: WindowEntry): number {
  if (a.monoNs !== undefined && b.monoNs !== undefined && b.monoNs > a.monoNs) return (b.monoNs - a.monoNs) / 1e9;
  return (b.tMs - a.tMs) / 1000;
}

/** Slack on the window edge, so that scrape jitter does not drop the entry exactly one window old. */
const EDGE_SLACK = 0.02;

/** Count and sum of one histogram over an interval: what integrating the wasted CPU needs. */
export interface IntervalDelta {
  seconds: number;
  hists: Partial<Record<HistKind, { count: number; sumNs: number }>>;
  counters: Record<string, number>;
}

/**
 * Entries are thinned by time, so memory does not follow the scrape rate: older entries are kept
 * at least windowSeconds/slots apart (the oldest one anchors the window), plus always the two
 * latest ones, whose difference integrates the counters scrape by scrape. At most slots + 3
 * entries whatever the scrape rate; the span the delta covers stays within one spacing of the
 * window (reported by span()).
 */
export class SlidingWindow {
  private entries: WindowEntry[] = [];
  private readonly spacingMs: number;

  constructor(
    readonly windowSeconds: number,
    readonly slots = 12,
  ) {
    if (!(windowSeconds > 0)) throw new Error('window must be > 0 s');
    if (!(Number.isInteger(slots) && slots >= 1)) throw new Error('window slots must be an integer >= 1');
    this.spacingMs = (windowSeconds * 1000) / slots;
  }

  get size(): number {
    return this.entries.length;
  }

  /** Append; a clock that went backwards (replay loop, clock step) starts the window afresh. */
  push(e: WindowEntry): void {
    const last = this.entries[this.entries.length - 1];
    if (last && e.tMs < last.tMs) this.entries = [];
    this.entries.push(e);
    // The entry that just stopped being one of the latest two stays only if spaced from its elder.
    const n = this.entries.length;
    if (n >= 4 && this.entries[n - 3]!.tMs - this.entries[n - 4]!.tMs < this.spacingMs) this.entries.splice(n - 3, 1);
    const edge = e.tMs - this.windowSeconds * 1000 * (1 + EDGE_SLACK);
    let firstKept = 0;
    while (this.entries[firstKept]!.tMs < edge) firstKept++;
    if (firstKept > 0) this.entries = this.entries.slice(firstKept);
  }

  latest(): WindowEntry | undefined {
    return this.entries[this.entries.length - 1];
  }

  /** The snapshot before the latest (for per-interval increments), if any. */
  previous(): WindowEntry | undefined {
    return this.entries[this.entries.length - 2];
  }

  /** Span the window covers now, s (0 with fewer than two entries). */
  span(): number {
    const a = this.entries[0];
    const b = this.latest();
    return a && b && a !== b ? seconds(a, b) : 0;
  }

  /** Latest minus the oldest entry of the same device epoch; undefined without two such entries. */
  delta(dev: string): Delta | undefined {
    const b = this.latest();
    const cur = b?.devices.get(dev);
    if (!b || !cur) return undefined;
    const a = this.entries.find((x) => x.devices.get(dev)?.epoch === cur.epoch);
    if (!a || a === b) return undefined;
    const s = seconds(a, b);
    if (!(s > 0)) return undefined;
    const rates = this.entries.slice(this.entries.indexOf(a), this.entries.length).flatMap((x) => (x.sampleRate === undefined ? [] : [x.sampleRate]));
    return { seconds: s, ...totalsDelta(a.devices.get(dev), cur), ...(rates.length ? { sampleRate: Math.max(...rates) } : {}) };
  }

  /**
   * Latest minus previous snapshot of one device (same epoch), for integrating counters. Only
   * counts and sums: the bucket arithmetic of every histogram was a third of the window's cost.
   */
  lastInterval(dev: string): IntervalDelta | undefined {
    const a = this.previous();
    const b = this.latest();
    const cur = b?.devices.get(dev);
    const old = a?.devices.get(dev);
    if (!a || !b || !cur || !old || old.epoch !== cur.epoch) return undefined;
    const s = seconds(a, b);
    if (!(s > 0)) return undefined;
    const hists: IntervalDelta['hists'] = {};
    for (const [k, h] of Object.entries(cur.hists) as [HistKind, BucketHist][]) {
      const base = old.hists[k];
      hists[k] = { count: h.count - (base?.count ?? 0), sumNs: h.sumNs - (base?.sumNs ?? 0) };
    }
    const counters: Record<string, number> = {};
    for (const [k, v] of Object.entries(cur.counters)) counters[k] = v - (old.counters[k] ?? 0);
    return { seconds: s, hists, counters };
  }
}
