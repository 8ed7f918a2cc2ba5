// Keeps everything the BPF collector reports monotonic although the loader's maps start from zero
// when it is restarted (crash, hang, SIGKILL): reported = what earlier runs counted + this run.
// Within a run, a value that goes down (a map entry recreated) is absorbed the same way.
// Pure state machine over plain data; the client calls newRun() whenever it spawns a new loader,
// the collector forget() for devices that are gone (else their series would stay forever).
import { NB } from '../model/buckets.js';
import { addBuckets } from '../model/hist.js';
import { DEFAULT_MAX_RINGS, RingLabels } from './ringLabels.js';
import { mapRingLoops, type BpfProgramStatus, type BpfRing, type BpfSnapshot, type BucketHist, type HistKind } from './types.js';

interface Total {
  base: number;
  last: number;
}

interface HistTotal {
  /** what earlier runs (or resets within a run) counted; undefined while that is nothing */
  base?: Float64Array;
  baseSum: number;
  baseAux0: number;
  baseAux1: number;
  /** bucketSumsNs of the earlier runs; `sumsLost` once one of them counted samples without sums */
  baseSums?: Float64Array;
  sumsLost?: boolean;
  last?: BucketHist;
}

/**
 * Counters are kept in groups (`c` the totals, `d:<dev>` per device, `p:<program>`, `r:<ring>`),
 * so that building one device's record reads that device's counters only: a flat map scanned per
 * device was quadratic in the device count (64 devices: a third of the BPF collector's time).
 */
export class RestartAccumulator {
  private run = 0;
  private readonly labels: RingLabels;
  private readonly groups = new Map<string, Map<string, Total>>();
  /** dev → kind → totals */
  private readonly hists = new Map<string, Map<HistKind, HistTotal>>();
  /** ring id → the run in which it was last reported */
  private readonly ringSeen = new Map<string, number>();

  /** maxRings: --bpf.max-rings, the rings with a label of their own (the rest under ring="other") */
  constructor(maxRings = DEFAULT_MAX_RINGS) {
    this.labels = new RingLabels(maxRings);
  }

  /** A new loader process: its counts start from zero. */
  newRun(): void {
    this.run += 1;
    for (const g of this.groups.values()) {
      for (const t of g.values()) {
        t.base += t.last;
        t.last = 0;
      }
    }
    for (const kinds of this.hists.values()) for (const h of kinds.values()) fold(h);
  }

  /** Every device with accumulated totals ("major:minor"). */
  devices(): string[] {
    const devs = new Set(this.knownDevs());
    for (const dev of this.hists.keys()) devs.add(dev);
    return [...devs];
  }

  /** Drops a device that no longer exists: its series end instead of lingering forever. */
  forget(dev: string): void {
    this.groups.delete(`d:${dev}`);
    this.hists.delete(dev);
  }

  /** The restart-adjusted snapshot for a raw one of the current run. */
  apply(raw: BpfSnapshot): BpfSnapshot {
    const counters = this.counterRecord('c', raw.counters);
    const deviceCounters: Record<string, Record<string, number>> = {};
    const devs = new Set([...Object.keys(raw.deviceCounters), ...this.knownDevs()]);
    for (const dev of devs) deviceCounters[dev] = this.counterRecord(`d:${dev}`, raw.deviceCounters[dev] ?? {});

    for (const d of raw.devices) {
      for (const [kind, h] of Object.entries(d.hists) as [HistKind, BucketHist][]) this.seeHist(d.dev, kind, h);
    }
    const rawDevices = new Map(raw.devices.map((d) => [d.dev, d]));
    const devices = [...this.hists].map(([dev, kinds]) => {
      const hists: Partial<Record<HistKind, BucketHist>> = {};
      for (const [kind, t] of kinds) hists[kind] = histTotal(t);
      return { ...rawDevices.get(dev), dev, hists };
    });

    const programs: Record<string, BpfProgramStatus> = {};
    for (const [name, p] of Object.entries(raw.programs)) {
      programs[name] = { ...p };
      if (p.runTimeNs !== undefined) programs[name].runTimeNs = this.see(`p:${name}`, 'run_ns', p.runTimeNs);
      if (p.runCount !== undefined) programs[name].runCount = this.see(`p:${name}`, 'run_cnt', p.runCount);
    }

    return {
      ...raw,
      programs,
      devices,
      ...ringsOf(this.rings(raw.rings)),
      counters,
      deviceCounters,
    };
  }

  private see(group: string, name: string, v: number): number {
    let g = this.groups.get(group);
    if (!g) this.groups.set(group, (g = new Map()));
    let t = g.get(name);
    if (!t) g.set(name, (t = { base: 0, last: 0 }));
    if (v < t.last) t.base += t.last; // reset within the run
    t.last = v;
    return t.base + t.last;
  }

  /** Every counter of the group ever seen (the current ones updated), as a record. */
  private counterRecord(group: string, cur: Record<string, number>): Record<string, number> {
    for (const [k, v] of Object.entries(cur)) this.see(group, k, v);
    const out: Record<string, number> = {};
    for (const [name, t] of this.groups.get(group) ?? []) out[name] = t.base + t.last;
    return out;
  }

  /** Devices with counters. */
  private knownDevs(): string[] {
    const devs: string[] = [];
    for (const g of this.groups.keys()) if (g.startsWith('d:')) devs.push(g.slice(2));
    return devs;
  }

  private seeHist(dev: string, kind: HistKind, h: BucketHist): void {
    let kinds = this.hists.get(dev);
    if (!kinds) this.hists.set(dev, (kinds = new Map()));
    let t = kinds.get(kind);
    if (!t) kinds.set(kind, (t = { baseSum: 0, baseAux0: 0, baseAux1: 0 }));
    if (t.last && h.count < t.last.count) fold(t);
    t.last = h;
  }

  /**
   * Rings of the current run, under their labels (ringLabels.ts); a ring reported earlier in this
   * run and now absent has exited.
   */
  private rings(cur: BpfRing[]): { rings: BpfRing[]; others?: number } {
    const out = cur.map((r) => {
      this.ringSeen.set(r.ring, this.run);
      const g = `r:${r.ring}`;
      const loops = r.loops ? mapRingLoops((k) => this.see(g, k, r.loops![k])) : undefined;
      return { ...r, sleeps: this.see(g, 'sleeps', r.sleeps), iopollPasses: this.see(g, 'passes', r.iopollPasses), ...(loops ? { loops } : {}) };
    });
    const present = new Set(cur.map((r) => r.ring));
    const exited: string[] = [];
    for (const [ring, seen] of this.ringSeen) {
      // gone within this run (process exited), or not back for a whole run after a restart
      if (!present.has(ring) && (seen === this.run || seen < this.run - 1)) {
        this.ringSeen.delete(ring);
        this.groups.delete(`r:${ring}`);
        exited.push(ring);
      }
    }
    return this.labels.apply(out, exited);
  }
}

const ringsOf = (r: { rings: BpfRing[]; others?: number }): Pick<BpfSnapshot, 'rings' | 'ringsOther'> =>
  ({ rings: r.rings, ...(r.others !== undefined ? { ringsOther: r.others } : {}) });

function fold(t: HistTotal): void {
  if (!t.last) return;
  addBuckets((t.base ??= new Float64Array(NB)), t.last);
  t.baseSum += t.last.sumNs;
  t.baseAux0 += t.last.aux0;
  t.baseAux1 += t.last.aux1;
  const sums = t.last.bucketSumsNs;
  if (sums) {
    const into = (t.baseSums ??= new Float64Array(NB));
    for (let j = 0; j < sums.length; j += 2) into[sums[j]!] = into[sums[j]!]! + sums[j + 1]!;
  } else if (t.last.count > 0) {
    t.sumsLost = true;
  }
  t.last = undefined;
}

/** Buckets ascending by index, none empty, count their sum: what histTotal returns. */
function canonical(h: BucketHist): boolean {
  const b = h.buckets;
  let sum = 0;
  for (let j = 0; j < b.length; j += 2) {
    const c = b[j + 1]!;
    if (!(c > 0) || (j > 0 && b[j]! <= b[j - 2]!)) return false;
    sum += c;
  }
  return sum === h.count;
}

function histTotal(t: HistTotal): BucketHist {
  // Nothing from earlier runs (the usual case): the current reading is the total. It is a fresh
  // object per reading that nothing mutates, so it is passed on as it is.
  if (!t.base && t.last && canonical(t.last)) return t.last;
  const dense = t.base ? Float64Array.from(t.base) : new Float64Array(NB);
  if (t.last) addBuckets(dense, t.last);
  // per-bucket sums only when every run that counted kept them
  const lastSums = t.last?.bucketSumsNs;
  const kept = !t.sumsLost && (t.baseSums !== undefined || lastSums !== undefined) && (lastSums !== undefined || !t.last?.count);
  const sums = kept ? (t.baseSums ? Float64Array.from(t.baseSums) : new Float64Array(NB)) : undefined;
  if (sums && lastSums) for (let j = 0; j < lastSums.length; j += 2) sums[lastSums[j]!] = sums[lastSums[j]!]! + lastSums[j + 1]!;
  const buckets: number[] = [];
  const bucketSumsNs: number[] = [];
  let count = 0;
  dense.forEach((c, i) => {
    if (c > 0) {
      buckets.push(i, c);
      count += c;
      if (sums) bucketSumsNs.push(i, sums[i]!);
    }
  });
  return {
    buckets,
    ...(sums ? { bucketSumsNs } : {}),
    count,
    sumNs: t.baseSum + (t.last?.sumNs ?? 0),
    aux0: t.baseAux0 + (t.last?.aux0 ?? 0),
    aux1: t.baseAux1 + (t.last?.aux1 ?? 0),
  };
}
