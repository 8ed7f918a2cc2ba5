// The ring label's bound (--bpf.max-rings): the first rings seen keep their own label while they
// live; the rest are counted together under ring="other". A ring never moves between the two, and
// an "other" ring that exits leaves its counts in the aggregate, so every ring counter stays
// monotonic (rate() stays right) and the series count stays bounded as rings come and go.
// Pure state machine over restart-adjusted rings (accumulate.ts).
import { mapRingLoops, type BpfRing, type RingLoops } from './types.js';

/** The label of the aggregate; ring ids are 12 hex digits, so it cannot clash with one. */
export const OTHER_RING = 'other';
export const DEFAULT_MAX_RINGS = 32;

interface Counts {
  sleeps: number;
  iopollPasses: number;
  loops?: RingLoops;
}

const countsOf = (r: BpfRing): Counts => ({ sleeps: r.sleeps, iopollPasses: r.iopollPasses, ...(r.loops ? { loops: { ...r.loops } } : {}) });

function add(a: Counts, b: Counts): Counts {
  const loops = a.loops && b.loops ? mapRingLoops((k) => a.loops![k] + b.loops![k]) : a.loops ?? b.loops;
  return { sleeps: a.sleeps + b.sleeps, iopollPasses: a.iopollPasses + b.iopollPasses, ...(loops ? { loops: { ...loops } } : {}) };
}

export class RingLabels {
  private readonly labeled = new Set<string>();
  /** rings under "other" that have not exited, with their latest counts */
  private readonly others = new Map<string, Counts>();
  /** what exited "other" rings counted */
  private base: Counts | undefined;

  constructor(private readonly max: number = DEFAULT_MAX_RINGS) {
    if (!Number.isInteger(max) || max < 0) throw new Error(`max rings must be a non-negative integer, not ${max}`);
  }

  /**
   * The rings to expose: each labeled one as it is, then (once any ring went there) the aggregate
   * of the others, with `others` = how many live rings it holds now (absent while there is no
   * aggregate). `exited`: rings gone for good.
   */
  apply(rings: readonly BpfRing[], exited: Iterable<string>): { rings: BpfRing[]; others?: number } {
    for (const id of exited) {
      this.labeled.delete(id);
      const c = this.others.get(id);
      if (c) {
        this.base = this.base ? add(this.base, c) : c;
        this.others.delete(id);
      }
    }
    const out: BpfRing[] = [];
    for (const r of rings) {
      // a new ring takes a free label; one that found none stays under "other" for its life
      if (!this.labeled.has(r.ring) && !this.others.has(r.ring) && this.labeled.size < this.max) this.labeled.add(r.ring);
      if (this.labeled.has(r.ring)) out.push(r);
      else this.others.set(r.ring, countsOf(r));
    }
    let sum = this.base;
    for (const c of this.others.values()) sum = sum ? add(sum, c) : c;
    if (!sum) return { rings: out };
    out.push({ ring: OTHER_RING, pid: 0, comm: '', flags: 0, hybrid: false, hybridPollTimeNs: null, ...sum });
    return { rings: out, others: this.others.size };
  }
}
