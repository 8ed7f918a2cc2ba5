// Keeps everything the BPF collector reports monotonic although the loader's maps start from zero
// when it is restarted (crash, hang, SIGKILL): reported = what earlier runs counted + this run.
// Within a run, a value that goes down (a map entry recreated) is absorbed the same way.
// Pure state machine over plain data; the client calls newRun() whenever it spawns a new loader,
// the collector forget() for devices that are gone (else their series would stay forever).
import { NB } from '../model/buckets.js';
import type { BpfProgramStatus, BpfRing, BpfSnapshot, BucketHist, HistKind } from './types.js';

interface Total {
  base: number;
  last: number;
}

interface HistTotal {
  base: Float64Array;
  baseSum: number;
  baseAux0: number;
  baseAux1: number;
  last?: BucketHist;
}

export class RestartAccumulator {
  private run = 0;
  private readonly counters = new Map<string, Total>();
  private readonly hists = new Map<string, HistTotal>();
  /** ring id → the run in which it was last reported */
  private readonly ringSeen = new Map<string, number>();

  /** A new loader process: its counts start from zero. */
  newRun(): void {
    this.run += 1;
    for (const t of this.counters.values()) {
      t.base += t.last;
      t.last = 0;
    }
    for (const h of this.hists.values()) fold(h);
  }

  /** Every device with accumulated totals ("major:minor"). */
  devices(): string[] {
    const devs = new Set(this.knownDevs('d'));
    for (const key of this.hists.keys()) devs.add(key.split('/')[0]!);
    return [...devs];
  }

  /** Drops a device that no longer exists: its series end instead of lingering forever. */
  forget(dev: string): void {
    for (const key of [...this.counters.keys()]) if (key.startsWith(`d:${dev}:`)) this.counters.delete(key);
    for (const key of [...this.hists.keys()]) if (key.startsWith(`${dev}/`)) this.hists.delete(key);
  }

  /** The restart-adjusted snapshot for a raw one of the current run. */
  apply(raw: BpfSnapshot): BpfSnapshot {
    const counters = this.counterRecord('c', raw.counters);
    const deviceCounters: Record<string, Record<string, number>> = {};
    const devs = new Set([...Object.keys(raw.deviceCounters), ...this.knownDevs('d')]);
    for (const dev of devs) deviceCounters[dev] = this.counterRecord(`d:${dev}`, raw.deviceCounters[dev] ?? {});

    for (const d of raw.devices) {
      for (const [kind, h] of Object.entries(d.hists) as [HistKind, BucketHist][]) this.seeHist(`${d.dev}/${kind}`, h);
    }
    const byDev = new Map<string, Partial<Record<HistKind, BucketHist>>>();
    for (const [key, t] of this.hists) {
      const [dev, kind] = key.split('/') as [string, HistKind];
      const m = byDev.get(dev) ?? {};
      m[kind] = histTotal(t);
      byDev.set(dev, m);
    }

    const programs: Record<string, BpfProgramStatus> = {};
    for (const [name, p] of Object.entries(raw.programs)) {
      programs[name] = { ...p };
      if (p.runTimeNs !== undefined) programs[name].runTimeNs = this.see(`p:${name}:run_ns`, p.runTimeNs);
      if (p.runCount !== undefined) programs[name].runCount = this.see(`p:${name}:run_cnt`, p.runCount);
    }

    return {
      ...raw,
      programs,
      devices: [...byDev.entries()].map(([dev, hists]) => ({ ...raw.devices.find((d) => d.dev === dev), dev, hists })),
      rings: this.rings(raw.rings),
      counters,
      deviceCounters,
    };
  }

  private see(key: string, v: number): number {
    const t = this.counters.get(key) ?? { base: 0, last: 0 };
    if (v < t.last) t.base += t.last; // reset within the run
    t.last = v;
    this.counters.set(key, t);
    return t.base + t.last;
  }

  private counterRecord(prefix: string, cur: Record<string, number>): Record<string, number> {
    for (const [k, v] of Object.entries(cur)) this.see(`${prefix}:${k}`, v);
    const out: Record<string, number> = {};
    const p = `${prefix}:`;
    for (const [key, t] of this.counters) {
      const name = key.slice(p.length);
      if (key.startsWith(p) && !name.includes(':')) out[name] = t.base + t.last;
    }
    return out;
  }

  private knownDevs(prefix: string): string[] {
    const devs = new Set<string>();
    for (const key of this.counters.keys()) {
      const m = new RegExp(`^${prefix}:(\\d+:\\d+):`).exec(key);
      if (m?.[1]) devs.add(m[1]);
    }
    return [...devs];
  }

  private seeHist(key: string, h: BucketHist): void {
    const t = this.hists.get(key) ?? { base: new Float64Array(NB), baseSum: 0, baseAux0: 0, baseAux1: 0 };
    if (t.last && h.count < t.last.count) fold(t);
    t.last = h;
    this.hists.set(key, t);
  }

  /** Rings of the current run; a ring reported earlier in this run and now absent has exited. */
  private rings(cur: BpfRing[]): BpfRing[] {
    const out = cur.map((r) => {
      this.ringSeen.set(r.ring, this.run);
      return { ...r, sleeps: this.see(`r:${r.ring}:sleeps`, r.sleeps), iopollPasses: this.see(`r:${r.ring}:passes`, r.iopollPasses) };
    });
    const present = new Set(cur.map((r) => r.ring));
    for (const [ring, seen] of this.ringSeen) {
      // gone within this run (process exited), or not back for a whole run after a restart
      if (!present.has(ring) && (seen === this.run || seen < this.run - 1)) {
        this.ringSeen.delete(ring);
        this.counters.delete(`r:${ring}:sleeps`);
        this.counters.delete(`r:${ring}:passes`);
      }
    }
    return out;
  }
}

function fold(t: HistTotal): void {
  if (!t.last) return;
  for (const [i, c] of t.last.buckets) t.base[i] = (t.base[i] ?? 0) + c;
  t.baseSum += t.last.sumNs;
  t.baseAux0 += t.last.aux0;
  t.baseAux1 += t.last.aux1;
  t.last = undefined;
}

function histTotal(t: HistTotal): BucketHist {
  const dense = Float64Array.from(t.base);
  for (const [i, c] of t.last?.buckets ?? []) dense[i] = (dense[i] ?? 0) + c;
  const buckets: [number, number][] = [];
  let count = 0;
  dense.forEach((c, i) => {
    if (c > 0) {
      buckets.push([i, c]);
      count += c;
    }
  });
  return {
    buckets,
    count,
    sumNs: t.baseSum + (t.last?.sumNs ?? 0),
    aux0: t.baseAux0 + (t.last?.aux0 ?? 0),
    aux1: t.baseAux1 + (t.last?.aux1 ?? 0),
  };
}
