// How a classic poller's CPU at depth on a narrow device depends on the width of F_D, and what the
// exporter's fit (src/model/depth.ts fitDeviceTime: deconvolved from the bucketed rq_lat, then its
// mean fitted) gives back: the simulation is the truth here (docs/validation.md, "Classic polling
// at depth"). A classic QD32 poller with the 7.3 guest's costs; per true F_D: its CPU and
// completions per loop over 20,000 I/Os; the fit's E[D], CPU and completions per loop; and the fit
// with its width set to the true run's completions per loop (widthToLoops), and its CPU.
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
function run(fD: Dist, seed: number, ios: number, observe?: (d: number, r: number) => void) {
  const st = simulate({ ...poller, devices: [{ fD: new Sampler(fD), share: 1 }], wake: new Sampler(wake), ios, warmup: 500, seed, ...(observe ? { observe } : {}) });
  return { cpuNs: (st.spinNs + st.switchNs) / st.ios, perLoop: st.ios / st.loops, rqLatNs: st.perDevice[0]!.rqLatNs / st.perDevice[0]!.ios };
}

const truths: [string, Dist][] = [
  ['atom 400 µs', atom(400_000)], ['uniform 380–420 µs', uniform(380_000, 420_000)],
  ['normal 400 ± 10 µs', normal(400_000, 10_000)], ['normal 400 ± 40 µs', normal(400_000, 40_000)],
];
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
console.log('| true F_D | CPU per I/O | completions per loop | fit E[D] | the fit\'s CPU | its completions per loop | width to the completions per loop | its CPU |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [name, truth] of truths) {
  const counts = new Map<number, number>();
  const t = run(truth, 11, 20_000, (_d, r) => {
    const b = bucketOf(Math.round(r));
    counts.set(b, (counts.get(b) ?? 0) + 1);
  });
  const rqLatBuckets = [...counts].sort((a, b) => a[0] - b[0]).flat();
  const fitted = fitDeviceTime({ ...poller, fD: truth, fO: wake, rqLatMeanNs: t.rqLatNs, rqLatBuckets });
  const widened = fitDeviceTime({ ...poller, fD: truth, fO: wake, rqLatMeanNs: t.rqLatNs, rqLatBuckets, slope: true, perLoop: t.perLoop });
  const f = run(fitted.fD, 7, 20_000);
  const w = run(widened.fD, 7, 20_000);
  console.log(`| ${name} | ${(t.cpuNs / 1000).toFixed(2)} µs | ${t.perLoop.toFixed(2)} | ${(mean(fitted.fD) / 1000).toFixed(1)} µs | ${pct(f.cpuNs / t.cpuNs - 1)} | ${f.perLoop.toFixed(2)} | ×${(widened.width ?? 1).toFixed(2)} (slope ${widened.rqLatSlope?.toFixed(2)}) | ${pct(w.cpuNs / t.cpuNs - 1)} |`);
}
