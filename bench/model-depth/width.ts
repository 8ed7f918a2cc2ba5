// How a classic poller's CPU at depth on a narrow device depends on the width of F_D, and what the
// exporter's fit (src/model/depth.ts fitDeviceTime: deconvolved from the bucketed rq_lat, then its
// mean fitted) gives back, the simulation being the truth (docs/validation.md, "Classic polling at
// depth"). A classic QD32 poller with the 7.3 guest's costs; per true F_D: its CPU and completions
// per poll loop over 20,000 I/Os, the fit's E[D], and the CPU and completions per loop of the fit
// with its spread around its mean scaled by w (1: the fit as it is; 0: an atom at its mean).
//   npx tsx bench/model-depth/width.ts
import { bucketOf } from '../../src/model/buckets.js';
import { fitDeviceTime } from '../../src/model/depth.js';
import { atom, mean, uniform } from '../../src/model/dist.js';
import { Sampler, simulate } from '../../src/model/poller/index.js';
import type { Dist } from '../../src/model/types.js';

const poller = {
  era: 'iouring_70' as const, depth: 32, switchCostNs: 5400, sleepOnCpuNs: 3300, rule: { kind: 'none' as const },
  submission: { submitNs: 4600, callNs: 1130, leadNs: 3000, reapNs: 0, minComplete: 1, loopReapNs: 1800, lookNs: 1500, lookPerIoNs: 200 },
};
const wake = uniform(3900, 4800);
const WIDTHS = [2, 1.5, 1, 0.75, 0.5, 0];

/** A normal distribution as 60 uniform pieces over ±3 σ. */
function normal(m: number, sd: number): Dist {
  const pieces = Array.from({ length: 60 }, (_, j) => {
    const lo = m + ((j - 30) * sd) / 10;
    const z = (lo + sd / 20 - m) / sd;
    return { lo, hi: lo + sd / 10, p: Math.exp((-z * z) / 2) };
  });
  const total = pieces.reduce((a, q) => a + q.p, 0);
  return { pieces: pieces.map((q) => ({ ...q, p: q.p / total })) };
}
const scaled = (d: Dist, w: number): Dist => {
  const m = mean(d);
  return { pieces: d.pieces.map((q) => ({ lo: Math.max(0, m + w * (q.lo - m)), hi: Math.max(0, m + w * (q.hi - m)), p: q.p })) };
};
function run(fD: Dist, seed: number, observe?: (d: number, r: number) => void) {
  const st = simulate({ ...poller, devices: [{ fD: new Sampler(fD), share: 1 }], wake: new Sampler(wake), ios: 20_000, warmup: 500, seed, ...(observe ? { observe } : {}) });
  return { cpuNs: (st.spinNs + st.switchNs) / st.ios, perLoop: st.ios / st.loops, rqLatNs: st.perDevice[0]!.rqLatNs / st.perDevice[0]!.ios };
}

const truths: [string, Dist][] = [
  ['atom 400 µs', atom(400_000)], ['uniform 380–420 µs', uniform(380_000, 420_000)],
  ['normal 400 ± 10 µs', normal(400_000, 10_000)], ['normal 400 ± 40 µs', normal(400_000, 40_000)],
];
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
console.log(`| true F_D | CPU per I/O | completions per loop | fit E[D] | the fit scaled by w = ${WIDTHS.join(' / ')}: CPU; completions per loop |`);
console.log('|---|---|---|---|---|');
for (const [name, truth] of truths) {
  const counts = new Map<number, number>();
  const t = run(truth, 11, (_d, r) => {
    const b = bucketOf(Math.round(r));
    counts.set(b, (counts.get(b) ?? 0) + 1);
  });
  const fit = fitDeviceTime({ ...poller, fD: truth, fO: wake, rqLatMeanNs: t.rqLatNs, rqLatBuckets: [...counts].sort((a, b) => a[0] - b[0]).flat() });
  const cells = WIDTHS.map((w) => run(scaled(fit.fD, w), 7)).map((r) => `${pct(r.cpuNs / t.cpuNs - 1)}; ${r.perLoop.toFixed(2)}`);
  console.log(`| ${name} | ${(t.cpuNs / 1000).toFixed(2)} µs | ${t.perLoop.toFixed(2)} | ${(mean(fit.fD) / 1000).toFixed(1)} µs | ${cells.join(' / ')} |`);
}
