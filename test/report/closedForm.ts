// Closed-form recordings for `report`: a legacy (5.10-era, block-layer hybrid) host, one device
// polled at QD1, every I/O sleeping once for the same requested sleep s, a constant wake overhead
// O and sleep/wake cost c_sw, and a device time D made of atoms and uniforms drawn
// deterministically (stratified), so every figure of the model has an exact answer. The BPF
// histograms are built by the QD1 simulator of test/model/helpers.ts (exact sums, as the BPF side
// keeps them); the recording is two frames: nothing, then the window.
import { headerLine, frameLine } from '../../src/record/format.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';
import { simulatePoller } from '../model/helpers.js';

/** One component of D: probability p, uniform on (lo, hi], an atom when lo === hi (ns). */
export interface Part {
  p: number;
  lo: number;
  hi: number;
}

export interface ClosedCase {
  name: string;
  D: Part[];
  sleepNs: number;
  wakeNs: number;
  cswNs: number;
  /** queue/io_poll_delay: 0 = ½ mean (blkmq_half_mean), > 0 = fixed µs (blkmq_fixed) */
  ioPollDelay: number;
  /** I/Os in the window */
  n: number;
  seconds: number;
}

/** n device times for the parts, in a fixed interleaved order (stratified inside each uniform). */
export function deviceTimes(c: ClosedCase): number[] {
  const lists = c.D.map((part) => {
    const k = Math.round(part.p * c.n);
    return Array.from({ length: k }, (_, j) => Math.round(part.lo + ((j + 0.5) / k) * (part.hi - part.lo)));
  });
  const out: number[] = [];
  for (let j = 0; out.length < lists.reduce((a, l) => a + l.length, 0); j++) for (const l of lists) if (j < l.length) out.push(l[j]!);
  return out;
}

export function recordingOf(c: ClosedCase): string {
  const ds = deviceTimes(c);
  let k = 0;
  const sim = simulatePoller({ n: ds.length, D: () => ds[k++]!, O: () => c.wakeNs, sleepNs: c.sleepNs, cswNs: c.cswNs });
  const host = {
    nvmePollQueues: 2,
    features: { release: '5.10.0-closed-form', iouringHybrid: false, legacyHybrid: true },
    era: { era: 'blkmq_hybrid', evidence: 'btf', reason: 'closed-form test recording' },
    devices: [{ device: 'nvme0n1', devNum: '259:0', ioPoll: 1, ioPollDelay: c.ioPollDelay, hctxByType: { default: 2, poll: 2 }, errors: [] }],
  } as SnapshotInputs['host'];
  const frame = (i: number, withData: boolean): SnapshotInputs => ({
    takenAtMs: Date.UTC(2026, 0, 1) + i * c.seconds * 1000,
    host,
    bpf: {
      takenAtNs: 1e12 + i * c.seconds * 1e9,
      pollPath: 'tracepoint',
      programs: {},
      devices: withData ? [{ dev: '259:0', device: 'nvme0n1', hists: sim.hists }] : [],
      rings: [],
      counters: withData ? sim.counters : {},
      deviceCounters: withData ? { '259:0': sim.counters } : {},
    },
    bpfStatus: { mode: 'on', state: 'running', cause: 'ok', reason: 'tracepoint poll path', loaderRestarts: 0 },
    collectors: [],
  });
  const header = { format: 'hybridpoll-recording', version: 1, created: '2026-01-01T00:00:00.000Z', host: `closed-form-${c.name}`, source: 'synthetic', description: `closed-form case ${c.name}` } as const;
  return headerLine(header) + frameLine(frame(0, false)) + frameLine(frame(1, true));
}

const base = { wakeNs: 1000, cswNs: 1500, n: 20_000, seconds: 10 };
/** The cases of test/report/closed-form.test.ts (and of the issue-14 before/after table). */
export const CASES: (ClosedCase & { unresolved: 'none' | 'some' | 'half' })[] = [
  // D = 20 µs, fixed 10 µs sleep (io_poll_delay 10): nothing censored, D a single bucket.
  { ...base, name: 'constant', D: [{ p: 1, lo: 20_000, hi: 20_000 }], sleepNs: 10_000, ioPollDelay: 10, unresolved: 'none' },
  // D ~ U(10, 30) µs, fixed 9 µs: the wake-up (10 µs) touches the bottom of D, nothing censored.
  { ...base, name: 'uniform', D: [{ p: 1, lo: 10_000, hi: 30_000 }], sleepNs: 9000, ioPollDelay: 9, unresolved: 'none' },
  // Half at 5 µs, half at 50 µs, fixed 10 µs: the fast half is always complete at wake-up (censored, unresolved).
  { ...base, name: 'two-mode', D: [{ p: 0.5, lo: 5000, hi: 5000 }, { p: 0.5, lo: 50_000, hi: 50_000 }], sleepNs: 10_000, ioPollDelay: 10, unresolved: 'half' },
  // D ~ U(20, 40) µs, O = 8 µs, ½ mean setting with a 12 µs sleep in one bucket: a large wake-up overhead.
  { ...base, name: 'large-O', D: [{ p: 1, lo: 20_000, hi: 40_000 }], wakeNs: 8000, sleepNs: 12_000, ioPollDelay: 0, unresolved: 'none' },
  // D ~ U(10, 30) µs, ½ mean = 10 µs: 5% complete at wake-up (11 µs), in the same bucket as the lowest exact samples.
  { ...base, name: 'uniform-censored', D: [{ p: 1, lo: 10_000, hi: 30_000 }], sleepNs: 10_000, ioPollDelay: 0, unresolved: 'some' },
];

// ---- the closed forms (O and s constant, D a mixture of atoms and uniforms) ----

/** E[(D − t)⁺] */
export function excess(D: Part[], t: number): number {
  return D.reduce((a, { p, lo, hi }) => {
    if (hi === lo) return a + p * Math.max(0, lo - t);
    if (t <= lo) return a + p * ((lo + hi) / 2 - t);
    if (t >= hi) return a;
    return a + (p * (hi - t) ** 2) / (2 * (hi - lo));
  }, 0);
}

/** P(D ≤ t) */
export function cdfOf(D: Part[], t: number): number {
  return D.reduce((a, { p, lo, hi }) => a + p * (hi === lo ? (lo <= t ? 1 : 0) : Math.min(1, Math.max(0, (t - lo) / (hi - lo)))), 0);
}

export const meanOf = (D: Part[]) => D.reduce((a, { p, lo, hi }) => a + (p * (lo + hi)) / 2, 0);

export interface ClosedForm {
  meanD: number;
  spin: (s: number) => number;
  cpu: (s: number) => number;
  late: (s: number) => number;
  overslept: (s: number) => number;
  best: number;
}

/**
 * The closed form's best where the sleep is a setting of whole steps (io_poll_delay: µs; the
 * kernel sleeps it less the timer lag): the cheapest such sleep within the budget, the smallest of
 * equal cost; 0 when none beats classic polling.
 */
export function settableBest(cf: ClosedForm, budget: number, lagNs: number, stepNs = 1000): number {
  let best = 0;
  for (let n = 1; ; n++) {
    const s = n * stepNs - lagNs;
    if (cf.late(s) > budget * cf.meanD) break;
    if (cf.cpu(s) < cf.cpu(best) - 1e-9) best = s;
  }
  return best;
}

/**
 * Exact QD1 model: spin(s) = E[(D − s − O)⁺] + R, late(s) = E[(s + O − D)⁺] = spin(s) − R − (E[D] − s − O),
 * R the loop's completion work per I/O (in the measured spin). best_static: late is non-decreasing
 * and spin non-increasing, so the cheapest sleep within the budget is the largest feasible one, or
 * the smallest with the same spin (spin reaches R at max D − O). Found here by bisection on the
 * exact late(s).
 */
export function closedForm(D: Part[], O: number, csw: number, budget: number, reapNs = 0): ClosedForm {
  const meanD = meanOf(D);
  const wait = (s: number) => (s > 0 ? excess(D, s + O) : meanD);
  const spin = (s: number) => wait(s) + reapNs;
  const late = (s: number) => (s > 0 ? Math.max(0, wait(s) - (meanD - s - O)) : 0);
  let lo = 0;
  let hi = meanD * 4;
  for (let k = 0; k < 200; k++) {
    const mid = (lo + hi) / 2;
    if (late(mid) <= budget * meanD) lo = mid;
    else hi = mid;
  }
  const maxD = Math.max(...D.map((x) => x.hi));
  let best = Math.min(lo, Math.max(0, maxD - O));
  if (wait(best) + csw >= meanD) best = 0;
  return { meanD, spin, cpu: (s) => spin(s) + (s > 0 ? csw : 0), late, overslept: (s) => (s > 0 ? cdfOf(D, s + O) : 0), best };
}
