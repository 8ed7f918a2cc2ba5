// Test helpers for the model: a seeded PRNG and histograms built from samples on the real grid.
import type { BucketHist } from '../../src/bpf/types.js';
import { bucketOf } from '../../src/model/buckets.js';
import { rng } from '../../src/record/prng.js';
import { flatBuckets } from '../../src/model/hist.js';

/** mulberry32 (src/record/prng.ts): deterministic uniform [0, 1). */
export function prng(seed: number): () => number {
  return rng(seed).next;
}

export function normal(rand: () => number, mean: number, sd: number): number {
  const u = 1 - rand();
  return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** A BucketHist of integer-ns samples, bucketed as the BPF program does (withSums: each bucket's ns too, as dev_spun from a device block). */
export function histOf(samples: readonly number[], aux: { aux0?: number; aux1?: number } = {}, withSums = false): BucketHist {
  const m = new Map<number, number>();
  const sums = new Map<number, number>();
  let sum = 0;
  for (const v of samples) {
    const x = Math.max(0, Math.round(v));
    const i = bucketOf(x);
    m.set(i, (m.get(i) ?? 0) + 1);
    sums.set(i, (sums.get(i) ?? 0) + x);
    sum += x;
  }
  const order = [...m.keys()].sort((a, b) => a - b);
  return {
    buckets: flatBuckets(order.map((i) => [i, m.get(i)!])),
    ...(withSums ? { bucketSumsNs: flatBuckets(order.map((i) => [i, sums.get(i)!])) } : {}),
    count: samples.length,
    sumNs: sum,
    aux0: aux.aux0 ?? 0,
    aux1: aux.aux1 ?? 0,
  };
}

export const scaleHist = (h: BucketHist, k: number): BucketHist => ({
  buckets: h.buckets.map((x, j) => (j % 2 ? x * k : x)),
  count: h.count * k,
  sumNs: h.sumNs * k,
  aux0: h.aux0 * k,
  aux1: h.aux1 * k,
});

export interface PollerSim {
  /** polled I/Os */
  n: number;
  /** draws a device time, ns */
  D: () => number;
  /** draws a wake overhead (off-CPU − requested), ns */
  O: () => number;
  /** requested sleep per I/O, ns; 0 = classic polling */
  sleepNs: number;
  /** on-CPU cost of one sleep/wake pair, ns */
  cswNs: number;
  /** export ctx->hybrid_poll_time/2 in aux0/aux1 of sleep_req, as the fentry path on 6.13+ does */
  kernelEstimate?: boolean;
  /**
   * on-CPU time from D's origin (the issue) to the sleep's start, ns, part of cswNs (5.10: the rest
   * of the submission and the waiting call's entry); summed in wake_ovh's aux0/aux1 unless
   * `withoutOffset` (a loader before it). Default 0.
   */
  offsetNs?: number;
  withoutOffset?: boolean;
  /** the tracepoint path's window (5.10's, or a kernel that refuses fentry): no poll-loop counters and no REAP_NS apart in the spin */
  tracepoint?: boolean;
  /** dev_spun and found_slept with their per-bucket sums, as a loader reports a device with its own block */
  bucketSums?: boolean;
  /**
   * λ: the woken poller's first look, switch-in → the completion found, ns (default 0): an I/O
   * complete by then is found there (its latency and spin end λ after the wake-up), as the loader
   * counts it in found_slept's aux
   */
  lookNs?: number;
}

/**
 * A QD1 hybrid poller simulated I/O by I/O, producing what the BPF collector reports for one
 * device over an interval: the histograms (non-cumulative) and counters. The timeline per I/O, from
 * D's origin: the poll loop starts `offsetNs` later; it sleeps s (on-CPU c_sw, off-CPU s + O), or
 * not at all, then spins until the device completes at D, then spends REAP_NS on the completion
 * (in the spin, as the fentry path measures it).
 */
/** the loop's completion work per I/O after the finding poll (reap_ns / reaped) */
export const REAP_NS = 300;

export function simulatePoller(sim: PollerSim): { hists: Record<string, BucketHist>; counters: Record<string, number> } {
  const v: Record<string, number[]> = { rq_lat: [], spin: [], iopoll: [], sleep_req: [], offcpu: [], wake_ovh: [], dev_spun: [], found_slept: [] };
  const a = sim.offsetNs ?? 0;
  const reap = sim.tracepoint ? 0 : REAP_NS;
  let overslept = 0;
  let spun = 0;
  let spinNs = 0;
  for (let k = 0; k < sim.n; k++) {
    const D = Math.max(1, Math.round(sim.D()));
    if (sim.sleepNs <= 0) {
      const spin = Math.max(0, D - a) + reap;
      v.rq_lat!.push(D);
      v.spin!.push(spin);
      v.iopoll!.push(spin);
      spinNs += spin;
      continue;
    }
    const O = Math.max(0, Math.round(sim.O()));
    // back on CPU, from D's origin: the sleep starts a after it; the first look λ later
    const wake = a + sim.sleepNs + O;
    const look = wake + (sim.lookNs ?? 0);
    const spin = Math.max(look, D) - wake + reap;
    v.sleep_req!.push(sim.sleepNs);
    v.offcpu!.push(sim.sleepNs + O);
    v.wake_ovh!.push(O);
    v.spin!.push(spin);
    v.iopoll!.push(sim.cswNs + sim.sleepNs + O + spin);
    v.rq_lat!.push(Math.max(D, look));
    spinNs += spin;
    if (D > look) {
      v.dev_spun!.push(D);
      spun++;
    } else {
      v.found_slept!.push(look);
      overslept++;
    }
  }
  const sleeps = sim.sleepNs > 0 ? sim.n : 0;
  const hists: Record<string, BucketHist> = {};
  for (const [k, xs] of Object.entries(v)) {
    if (!xs.length) continue;
    const aux =
      k === 'sleep_req' && sim.kernelEstimate ? { aux0: sim.sleepNs * xs.length, aux1: xs.length }
      : k === 'wake_ovh' && !sim.withoutOffset ? { aux0: a * xs.length, aux1: xs.length }
      : k === 'found_slept' && sim.lookNs !== undefined ? { aux0: sim.lookNs * xs.length, aux1: xs.length }
      : {};
    hists[k] = histOf(xs, aux, (k === 'dev_spun' || k === 'found_slept') && sim.bucketSums);
  }
  return {
    hists,
    // one I/O in flight at every wait (QD1), as a loader that counts the depth reports it
    counters: {
      polled_ios: sim.n, sleeps, overslept, spun, spin_ns: spinNs, sleep_ns: sleeps * sim.sleepNs, waits: sim.n, inflight_sum: sim.n,
      // and 1 µs between loops, 0.5 µs of it after the issue, 0.3 µs of completion work in the loop (fentry-path counters)
      ...(sim.tracepoint ? {} : { gaps: sim.n, gap_ns: sim.n * 1000, gap_k: sim.n, gap_kk: sim.n, gap_kns: sim.n * 1000, lead_ns: sim.n * 500, leads: sim.n, reap_ns: sim.n * REAP_NS, reaped: sim.n }),
    },
  };
}
