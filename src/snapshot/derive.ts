// Scrape-to-scrape derivations that need memory: poll_stat staleness and monotonic hctx counters.
// Pure: (previous state, new inputs) → (next state, derived values). Devices that disappear are
// dropped from the state, so label sets cannot leak.
import { pollStatLineKey } from '../sources/pollStat.js';
import type { HctxCounterTotals, PollStatAge, SnapshotInputs } from './types.js';

interface PollStatMemo {
  content: string;
  sinceMs: number;
}

interface HctxMemo {
  last: { considered: number; invoked: number; success: number };
  totals: HctxCounterTotals;
}

export interface DeriveState {
  pollStat: Map<string, PollStatMemo>;
  hctx: Map<string, HctxMemo>;
}

export const emptyDeriveState = (): DeriveState => ({ pollStat: new Map(), hctx: new Map() });

export interface Derived {
  pollStatAges: PollStatAge[];
  hctxTotals: HctxCounterTotals[];
}

const FIELDS = ['considered', 'invoked', 'success'] as const;

export function derive(prev: DeriveState, inputs: SnapshotInputs): { state: DeriveState; derived: Derived } {
  const state = emptyDeriveState();
  const pollStatAges: PollStatAge[] = [];
  const hctxTotals: HctxCounterTotals[] = [];
  for (const d of inputs.host?.devices ?? []) {
    if (d.pollStat?.kind === 'buckets') {
      for (const b of d.pollStat.buckets) {
        const key = `${d.device}/${b.op}/${b.sizeBytes}`;
        const content = pollStatLineKey(b);
        const old = prev.pollStat.get(key);
        const memo = old && old.content === content ? old : { content, sinceMs: inputs.takenAtMs };
        state.pollStat.set(key, memo);
        pollStatAges.push({ device: d.device, op: b.op, sizeBytes: b.sizeBytes, unchangedSinceMs: memo.sinceMs });
      }
    }
    for (const h of d.hctxIoPoll ?? []) {
      const key = `${d.device}/${h.hctx}`;
      const old = prev.hctx.get(key);
      const totals: HctxCounterTotals = old
        ? { ...old.totals }
        : { device: d.device, hctx: h.hctx, considered: h.considered, invoked: h.invoked, success: h.success, resets: 0 };
      if (old) {
        // Any write to the file zeroes all three: a drop in any field means a reset happened,
        // and everything counted since the reset is the new value itself.
        const reset = FIELDS.some((f) => h[f] < old.last[f]);
        if (reset) totals.resets += 1;
        for (const f of FIELDS) totals[f] += reset ? h[f] : h[f] - old.last[f];
      }
      state.hctx.set(key, { last: { considered: h.considered, invoked: h.invoked, success: h.success }, totals });
      hctxTotals.push(totals);
    }
  }
  return { state, derived: { pollStatAges, hctxTotals } };
}
