// The cumulative values of a frame (counters, histogram buckets, sums) and how to shift them, so a
// looping replay can continue every counter from where the previous pass ended instead of
// jumping back to the recording's first values. Pure.
import { mapRingLoops, type BpfSnapshot, type BucketHist } from '../bpf/types.js';
import { bucketPairs, flatBuckets, flatPairs } from '../model/hist.js';
import type { SnapshotInputs } from '../snapshot/types.js';
import type { DeviceReading } from '../sources/types.js';

/** Flat cumulative values by key, histogram buckets kept apart by histogram key. */
export interface Cumulative {
  scalars: Map<string, number>;
  buckets: Map<string, Map<number, number>>;
}

export const emptyCumulative = (): Cumulative => ({ scalars: new Map(), buckets: new Map() });

const HIST_SCALARS = ['count', 'sumNs', 'aux0', 'aux1'] as const;
const HCTX_FIELDS = ['considered', 'invoked', 'success'] as const;

/**
 * Visits every cumulative value of a frame with a stable key and returns a copy in which each is
 * replaced by `scalar(key, value)`, and each histogram's buckets by `hist(key, buckets)`.
 */
function mapCumulative(
  f: SnapshotInputs,
  scalar: (key: string, v: number) => number,
  hist: (key: string, b: [number, number][]) => [number, number][],
): SnapshotInputs {
  const out: SnapshotInputs = { ...f, bpfStatus: { ...f.bpfStatus, loaderRestarts: scalar('loaderRestarts', f.bpfStatus.loaderRestarts) } };
  if (f.host) out.host = { ...f.host, devices: f.host.devices.map((d) => mapDevice(d, scalar)) };
  if (f.bpf) out.bpf = mapBpf(f.bpf, scalar, hist);
  return out;
}

function mapDevice(d: DeviceReading, scalar: (key: string, v: number) => number): DeviceReading {
  if (!d.hctxIoPoll) return d;
  return {
    ...d,
    hctxIoPoll: d.hctxIoPoll.map((h) => {
      const r = { ...h };
      for (const k of HCTX_FIELDS) r[k] = scalar(`hctx|${d.device}|${h.hctx}|${k}`, h[k]);
      return r;
    }),
  };
}

function mapBpf(
  b: BpfSnapshot,
  scalar: (key: string, v: number) => number,
  hist: (key: string, b: [number, number][]) => [number, number][],
): BpfSnapshot {
  const mapRecord = (prefix: string, r: Record<string, number>) =>
    Object.fromEntries(Object.entries(r).map(([k, v]) => [k, scalar(`${prefix}|${k}`, v)]));
  return {
    ...b,
    programs: Object.fromEntries(
      Object.entries(b.programs).map(([name, p]) => {
        const q = { ...p };
        if (p.runTimeNs !== undefined) q.runTimeNs = scalar(`prog|${name}|runTimeNs`, p.runTimeNs);
        if (p.runCount !== undefined) q.runCount = scalar(`prog|${name}|runCount`, p.runCount);
        return [name, q];
      }),
    ),
    devices: b.devices.map((d) => ({
      ...d,
      hists: Object.fromEntries(
        Object.entries(d.hists).map(([kind, h]) => {
          const key = `hist|${d.dev}|${kind}`;
          const q: BucketHist = { ...h, buckets: flatBuckets(hist(key, bucketPairs(h))) };
          if (h.bucketSumsNs) q.bucketSumsNs = flatBuckets(hist(`${key}|sums`, flatPairs(h.bucketSumsNs)));
          for (const k of HIST_SCALARS) q[k] = scalar(`${key}|${k}`, h[k]);
          return [kind, q];
        }),
      ),
    })),
    rings: b.rings.map((r) => ({
      ...r,
      sleeps: scalar(`ring|${r.ring}|sleeps`, r.sleeps),
      iopollPasses: scalar(`ring|${r.ring}|iopollPasses`, r.iopollPasses),
      ...(r.loops ? { loops: mapRingLoops((k) => scalar(`ring|${r.ring}|loops|${k}`, r.loops![k])) } : {}),
    })),
    counters: mapRecord('counter', b.counters),
    deviceCounters: Object.fromEntries(Object.entries(b.deviceCounters).map(([dev, r]) => [dev, mapRecord(`devcounter|${dev}`, r)])),
  };
}

/** Every cumulative value of a frame. */
export function cumulativeOf(f: SnapshotInputs): Cumulative {
  const c = emptyCumulative();
  mapCumulative(
    f,
    (k, v) => (c.scalars.set(k, v), v),
    (k, b) => (c.buckets.set(k, new Map(b)), b),
  );
  return c;
}

/** The frame with `offset` added to every cumulative value (buckets missing from the frame included). */
export function shifted(f: SnapshotInputs, offset: Cumulative): SnapshotInputs {
  return mapCumulative(
    f,
    (k, v) => v + (offset.scalars.get(k) ?? 0),
    (k, b) => {
      const add = offset.buckets.get(k);
      if (!add) return b;
      const m = new Map(b);
      for (const [i, v] of add) m.set(i, (m.get(i) ?? 0) + v);
      return [...m].sort((x, y) => x[0] - y[0]);
    },
  );
}

/**
 * What one more pass of the recording adds to every value: last − first, plus first step's growth
 * (second − first) for the step from the last frame back to the first, so rates stay smooth over
 * the seam. Negative differences (a counter that reset inside the recording) count as 0, so the
 * offset never makes a value go down.
 */
export function passIncrement(first: Cumulative, second: Cumulative, last: Cumulative): Cumulative {
  const inc = emptyCumulative();
  const grow = (a: number | undefined, b: number | undefined) => Math.max(0, (b ?? 0) - (a ?? 0));
  for (const k of new Set([...first.scalars.keys(), ...last.scalars.keys()])) {
    inc.scalars.set(k, grow(first.scalars.get(k), last.scalars.get(k)) + grow(first.scalars.get(k), second.scalars.get(k)));
  }
  for (const k of new Set([...first.buckets.keys(), ...last.buckets.keys()])) {
    const f = first.buckets.get(k) ?? new Map<number, number>();
    const l = last.buckets.get(k) ?? new Map<number, number>();
    const s = second.buckets.get(k) ?? new Map<number, number>();
    const m = new Map<number, number>();
    for (const i of new Set([...f.keys(), ...l.keys()])) {
      const v = grow(f.get(i), l.get(i)) + grow(f.get(i), s.get(i));
      if (v > 0) m.set(i, v);
    }
    inc.buckets.set(k, m);
  }
  return inc;
}

/** a + k·b, key by key. */
export function addScaled(a: Cumulative, b: Cumulative, k: number): Cumulative {
  const out: Cumulative = { scalars: new Map(a.scalars), buckets: new Map([...a.buckets].map(([key, m]) => [key, new Map(m)])) };
  for (const [key, v] of b.scalars) out.scalars.set(key, (out.scalars.get(key) ?? 0) + k * v);
  for (const [key, m] of b.buckets) {
    const o = out.buckets.get(key) ?? new Map<number, number>();
    for (const [i, v] of m) o.set(i, (o.get(i) ?? 0) + k * v);
    out.buckets.set(key, o);
  }
  return out;
}
