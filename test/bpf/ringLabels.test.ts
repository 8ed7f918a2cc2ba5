// The ring label's bound (src/bpf/ringLabels.ts): a cap, an "other" aggregate that stays monotonic
// as rings come and go, and no series left behind by exited rings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RestartAccumulator } from '../../src/bpf/accumulate.js';
import { OTHER_RING, RingLabels } from '../../src/bpf/ringLabels.js';
import type { BpfRing, BpfSnapshot } from '../../src/bpf/types.js';

const ring = (id: string, n: number, loops = true): BpfRing => ({
  ring: id, pid: 7, comm: 'db', flags: 0x20001, hybrid: true, hybridPollTimeNs: 9000, sleeps: n, iopollPasses: 2 * n,
  ...(loops ? { loops: { polledIos: n, count: n, wallNs: 10 * n, spinNs: 3 * n, offcpuNs: 4 * n, wakeLatencyNs: n } } : {}),
});

describe('RingLabels', () => {
  it('labels the first rings up to the cap and sums the rest under "other", which keeps them', () => {
    const l = new RingLabels(2);
    const a = l.apply([ring('a', 1), ring('b', 2), ring('c', 3), ring('d', 4)], []);
    expect(a.rings.map((r) => r.ring)).toEqual(['a', 'b', OTHER_RING]);
    expect(a.others).toBe(2);
    expect(a.rings[2]).toMatchObject({ sleeps: 7, iopollPasses: 14, hybridPollTimeNs: null, pid: 0, loops: { polledIos: 7, wallNs: 70 } });
    // b exits: its slot goes to the next new ring, c and d stay under "other"
    const b = l.apply([ring('a', 2), ring('c', 5), ring('d', 5), ring('e', 1)], ['b']);
    expect(b.rings.map((r) => r.ring)).toEqual(['a', 'e', OTHER_RING]);
    expect(b.rings[2]!.sleeps).toBe(10);
    // c exits: its counts stay in the aggregate, so "other" does not go down
    const c = l.apply([ring('a', 2), ring('d', 6), ring('e', 1)], ['c']);
    expect(c.rings[2]).toMatchObject({ sleeps: 11 });
    expect(c.others).toBe(1);
  });

  it('has no aggregate before a ring goes past the cap, and a cap of 0 puts every ring there', () => {
    expect(new RingLabels(4).apply([ring('a', 1)], []).rings.map((r) => r.ring)).toEqual(['a']);
    expect(new RingLabels(0).apply([ring('a', 1), ring('b', 1)], []).rings.map((r) => r.ring)).toEqual([OTHER_RING]);
    expect(() => new RingLabels(-1)).toThrow(/non-negative integer/);
  });

  it('sums the loop counters of the rings that have them', () => {
    const r = new RingLabels(0).apply([ring('a', 1, false), ring('b', 2)], []).rings[0]!;
    expect(r.sleeps).toBe(3);
    expect(r.loops).toEqual({ polledIos: 2, count: 2, wallNs: 20, spinNs: 6, offcpuNs: 8, wakeLatencyNs: 2 });
  });

  it('keeps every counter of every exposed ring monotonic, whatever rings come and go (property)', () => {
    const step = fc.record({ alive: fc.subarray(['a', 'b', 'c', 'd', 'e']), grow: fc.nat(5) });
    fc.assert(fc.property(fc.nat(4), fc.array(step, { minLength: 1, maxLength: 12 }), (max, steps) => {
      const l = new RingLabels(max);
      const count = new Map<string, number>();
      let alive = new Set<string>();
      const last = new Map<string, number>();
      for (const s of steps) {
        const now = new Set(s.alive);
        const exited = [...alive].filter((x) => !now.has(x));
        for (const x of exited) count.delete(x); // a ring that returns is a new ring
        for (const x of now) count.set(x, (count.get(x) ?? 0) + s.grow);
        alive = now;
        const out = l.apply([...now].map((x) => ring(x, count.get(x)!)), exited);
        expect(out.rings.filter((r) => r.ring !== OTHER_RING).length).toBeLessThanOrEqual(max);
        const other = out.rings.find((r) => r.ring === OTHER_RING);
        if (other) {
          expect(other.sleeps).toBeGreaterThanOrEqual(last.get(OTHER_RING) ?? 0);
          last.set(OTHER_RING, other.sleeps);
        }
      }
    }));
  });
});

describe('RestartAccumulator with a ring cap', () => {
  const snap = (rings: BpfRing[]): BpfSnapshot => ({ takenAtNs: 0, pollPath: 'fentry', programs: {}, devices: [], rings, counters: {}, deviceCounters: {} });

  it('says how many live rings "other" holds, and nothing while there is no aggregate', () => {
    const a = new RestartAccumulator(1);
    a.newRun();
    expect(a.apply(snap([ring('aaaaaaaaaaaa', 1)]))).not.toHaveProperty('ringsOther');
    const s = a.apply(snap([ring('aaaaaaaaaaaa', 2), ring('bbbbbbbbbbbb', 1), ring('cccccccccccc', 1)]));
    expect(s.rings.map((r) => r.ring)).toEqual(['aaaaaaaaaaaa', OTHER_RING]);
    expect(s.ringsOther).toBe(2);
    // both "other" rings exit: the aggregate stays (its counts are in it), holding none
    const t = a.apply(snap([ring('aaaaaaaaaaaa', 3)]));
    expect(t.rings.find((r) => r.ring === OTHER_RING)!.sleeps).toBe(2);
    expect(t.ringsOther).toBe(0);
  });
});
