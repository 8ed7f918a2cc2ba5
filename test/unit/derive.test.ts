import { describe, expect, it } from 'vitest';
import { derive, emptyDeriveState } from '../../src/snapshot/derive.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';
import type { DeviceReading } from '../../src/sources/types.js';

const inputs = (takenAtMs: number, devices: DeviceReading[]): SnapshotInputs => ({
  takenAtMs,
  host: { features: {}, era: { era: 'blkmq_hybrid', evidence: 'debugfs', reason: '' }, devices },
  bpfStatus: { mode: 'off', state: 'disabled', cause: 'disabled_by_flag', reason: '', loaderRestarts: 0 },
  collectors: [],
});
const dev = (hctx: [number, number, number] | undefined, mean = 9000): DeviceReading => ({
  device: 'nvme0n1',
  errors: [],
  pollStat: { kind: 'buckets', buckets: [{ op: 'read', sizeBytes: 4096, samples: 10, meanNs: mean, minNs: 1, maxNs: 2 }] },
  ...(hctx ? { hctxIoPoll: [{ hctx: 'hctx2', considered: hctx[0], invoked: hctx[1], success: hctx[2] }] } : {}),
});

describe('derive', () => {
  it('keeps hctx counters monotonic across a reset-on-write', () => {
    let state = emptyDeriveState();
    const totals: number[][] = [];
    for (const [t, c] of [[0, [100, 1000, 90]], [1, [150, 1400, 130]], [2, [20, 100, 10]], [3, [30, 300, 20]]] as const) {
      const r = derive(state, inputs(t * 1000, [dev([...c] as [number, number, number])]));
      state = r.state;
      const h = r.derived.hctxTotals[0]!;
      totals.push([h.considered, h.invoked, h.success, h.resets]);
    }
    expect(totals).toEqual([
      [100, 1000, 90, 0],
      [150, 1400, 130, 0],
      [170, 1500, 140, 1],
      [180, 1700, 150, 1],
    ]);
  });

  it('reports how long a poll_stat line has been unchanged', () => {
    let s = derive(emptyDeriveState(), inputs(1000, [dev(undefined, 9000)]));
    s = derive(s.state, inputs(6000, [dev(undefined, 9000)]));
    expect(s.derived.pollStatAges[0]!.unchangedSinceMs).toBe(1000);
    s = derive(s.state, inputs(9000, [dev(undefined, 9100)]));
    expect(s.derived.pollStatAges[0]!.unchangedSinceMs).toBe(9000);
  });

  it('forgets devices that disappeared', () => {
    const s1 = derive(emptyDeriveState(), inputs(0, [dev([1, 2, 3])]));
    const s2 = derive(s1.state, inputs(1000, []));
    expect(s2.state.hctx.size).toBe(0);
    expect(s2.state.pollStat.size).toBe(0);
  });
});
