// CPU cost of the poller model at depth per collection: 64 devices (one ring each), every one
// analysed as analyseAtDepth does (fitDeviceTime: F_D deconvolved from a measured rq_lat histogram,
// then its mean fitted to rq_lat's, for a mean depth ≥ 1.5, then evaluatePoller: the what-if table, best, oracle and the current state
// under the kernel's own rule), against today's QD1 model on the same inputs (CostModel +
// evaluatePolicies + the current outcome). Runs are paired (A B A B …); the figures are medians over the pairs of
// process CPU time (user + system) per device per collection.
//   npx tsx bench/model-depth/run.ts [--devices 64] [--pairs 7] [--ios 2000] [--era iouring_70] [--ring 2]
// --ring N: the devices are rings of N devices each, every ring analysed as src/model/ring.ts does
// (deviceTimesAtDepth over the ring's devices, each fitted to its own rq_lat mean, then one
// evaluatePoller over them); the figures stay per device.
// --classic: every device polls classically (current state classic, no sleep), as a classic
// IOPOLL host's windows are analysed: the fit also measures rq_lat's slope in D (two more
// simulations per device, deviceTimesAtDepth) for deviceTimeIdentified.
// A calibration loop (1e8 additions) is timed before and after: compare it between runs (a
// loaded machine inflates it and every other figure alike).
import { parseArgs } from 'node:util';
import { bucketOf } from '../../src/model/buckets.js';
import { deviceTimesAtDepth, fitDeviceTime } from '../../src/model/depth.js';
import { distFromMasses, mean, scaledToMean } from '../../src/model/dist.js';
import { CostModel, evaluatePolicies } from '../../src/model/policies.js';
import { evaluatePoller, Sampler, type PollerEra, type PollerInput } from '../../src/model/poller/index.js';
import type { Dist } from '../../src/model/types.js';
import { rng } from '../../src/record/prng.js';

const { values } = parseArgs({
  options: {
    devices: { type: 'string', default: '64' },
    pairs: { type: 'string', default: '7' },
    ios: { type: 'string', default: '1500' },
    era: { type: 'string', default: 'iouring_70' },
    ring: { type: 'string', default: '1' },
    classic: { type: 'boolean', default: false },
  },
});
const nDev = Number(values.devices);
const pairs = Number(values.pairs);
const ios = Number(values.ios);
const era = values.era as PollerEra;
const ringSize = Math.max(1, Number(values.ring));
const classic = values.classic;

/** A histogram on the BPF grid of lognormal-ish samples, as analyse builds F_D/F_O from one (calibrated to the exact mean). */
function histDist(rand: () => number, meanNs: number, cv: number, n = 4000): Dist {
  const m = new Map<number, number>();
  let sum = 0;
  const sigma = Math.sqrt(Math.log(1 + cv * cv));
  for (let k = 0; k < n; k++) {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    const v = Math.round(meanNs * Math.exp(sigma * z - (sigma * sigma) / 2));
    m.set(bucketOf(v), (m.get(bucketOf(v)) ?? 0) + 1);
    sum += v;
  }
  return scaledToMean(distFromMasses([...m.entries()])!, sum / n);
}

// 64 devices of different service times and depths (1, 4, 16, 64, and a two-depth mix)
const rand = rng(2026).next; // the synthetic recording's mulberry32
const DEPTHS: [number, number][][] = [[[1, 1]], [[4, 1]], [[16, 1]], [[64, 1]], [[8, 3], [32, 1]]];
const inputs: PollerInput[] = Array.from({ length: nDev }, (_, i) => ({
  era,
  devices: [{ device: `nvme${i}n1`, fD: histDist(rand, 8000 + 72_000 * rand(), 0.1 + 0.4 * rand()), share: 1 }],
  fO: histDist(rand, 900 + 600 * rand(), 0.3, 500),
  switchCostNs: 1200 + 800 * rand(),
  latencyBudget: 0.01,
  depth: DEPTHS[i % DEPTHS.length]!,
  submission: { submitNs: 300, reapNs: 100, minComplete: 1 },
  current: classic ? { policy: 'classic', rule: 'none' } : { policy: 'iouring_half_min', rule: 'kernel' },
  sim: { seed: i + 1, ios },
}));

const cpuMs = (f: () => void) => {
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
const calibrate = () => cpuMs(() => {
  let x = 0;
  for (let i = 0; i < 1e8; i++) x += i;
  if (x < 0) console.log(x);
});

/** rq_lat masses (flat index, count pairs) 20 % above F_D (the poller's own queueing), as the BPF side would count them */
function rqLatOf(fD: Dist, n = 4000): number[] {
  const draw = new Sampler(fD);
  const m = new Map<number, number>();
  for (let k = 0; k < n; k++) {
    const b = bucketOf(Math.round(1.2 * draw.at(rand())));
    m.set(b, (m.get(b) ?? 0) + 1);
  }
  return [...m.entries()].sort((x, y) => x[0] - y[0]).flat();
}
const rqLats = inputs.map((inp) => rqLatOf(inp.devices[0]!.fD));

/** analyseAtDepth's F_D fit (fitDeviceTime): deconvolved from that rq_lat, its mean fitted to 1.2 · E[D] */
const correct = (inp: PollerInput, i: number): PollerInput => {
  const meanDepth = inp.depth.reduce((x, [n, w]) => x + n * w, 0) / inp.depth.reduce((x, [, w]) => x + w, 0);
  if (meanDepth < 1.5 || inp.era === 'blkmq_sync') return inp;
  const d = inp.devices[0]!;
  const { fD } = fitDeviceTime({
    era: inp.era, depth: Math.round(meanDepth), fD: d.fD, fO: inp.fO, sleepOnCpuNs: 0, switchCostNs: inp.switchCostNs,
    submission: inp.submission, rule: classic ? { kind: 'none' } : { kind: 'ring_min' }, rqLatMeanNs: 1.2 * mean(d.fD), rqLatBuckets: rqLats[i]!, slope: classic,
  });
  return { ...inp, devices: [{ ...d, fD }] };
};
/** A ring over inputs[i .. i + ringSize): its devices' F_D shifted together, then one poller over them (analyseRing's work). */
const analyseRing = (i: number) => {
  const members = inputs.slice(i, i + ringSize);
  const inp = members[0]!;
  if (inp.era === 'blkmq_sync') throw new Error('--ring: an io_uring era');
  const meanDepth = inp.depth.reduce((x, [n, w]) => x + n * w, 0) / inp.depth.reduce((x, [, w]) => x + w, 0);
  const fits = deviceTimesAtDepth({
    era: inp.era, depth: Math.max(1, Math.round(meanDepth)), fO: inp.fO, sleepOnCpuNs: 0, switchCostNs: inp.switchCostNs, submission: inp.submission,
    rule: classic ? { kind: 'none' } : { kind: 'static', sleepNs: members.map(() => 5000) }, slope: classic,
    devices: members.map((m) => ({ fD: m.devices[0]!.fD, share: 1, targetNs: 1.2 * mean(m.devices[0]!.fD) })),
  });
  evaluatePoller({ ...inp, devices: members.map((m, k) => ({ ...m.devices[0]!, fD: fits[k]!.fD })), current: classic ? inp.current : { policy: 'iouring_half_min', rule: 'static', sleepNs: 5000 } });
};
const analyse = (inp: PollerInput, i: number) => (ringSize > 1 ? i % ringSize === 0 && analyseRing(i) : evaluatePoller(correct(inp, i)));
const depthModel = () => {
  inputs.forEach(analyse);
};
const qd1Model = () => {
  for (const inp of inputs) {
    const m = new CostModel(inp.devices[0]!.fD, inp.fO, { switchCostNs: inp.switchCostNs, latencyBudget: inp.latencyBudget });
    evaluatePolicies(m);
    m.outcome(m.meanD / 4);
  }
};

const calBefore = calibrate();
depthModel(); // the first collection also compiles the code: reported apart
qd1Model();
const a: number[] = [];
const b: number[] = [];
const first = cpuMs(() => analyse({ ...inputs[3]!, sim: { seed: 999, ios } }, 3));
const corrections = cpuMs(() => inputs.forEach(correct)) / nDev;
for (let p = 0; p < pairs; p++) {
  a.push(cpuMs(depthModel) / nDev);
  b.push(cpuMs(qd1Model) / nDev);
}
const calAfter = calibrate();
const med = (x: number[]) => [...x].sort((u, v) => u - v)[Math.floor(x.length / 2)]!;
const perDepth = DEPTHS.map((d, k) => {
  const sel = inputs.map((inp, i) => [inp, i] as const).filter(([, i]) => i % DEPTHS.length === k);
  const ms = cpuMs(() => sel.forEach(([inp, i]) => analyse(inp, i))) / sel.length;
  return `${d.map(([n]) => n).join('+')}: ${ms.toFixed(2)}`;
});
console.log(`${nDev} devices${ringSize > 1 ? ` in rings of ${ringSize}` : ''}, era ${era}, ${classic ? 'classic polling' : 'hybrid'}, ${ios} simulated I/Os per poller, ${pairs} pairs (A = poller model, B = QD1 model)`);
console.log(`CPU ms per device per collection: A median ${med(a).toFixed(2)} (min ${Math.min(...a).toFixed(2)}, max ${Math.max(...a).toFixed(2)}); B median ${med(b).toFixed(3)}`);
console.log(`CPU ms per collection at ${nDev} devices: A ${(med(a) * nDev).toFixed(0)}, B ${(med(b) * nDev).toFixed(1)}`);
if (ringSize === 1) {
  // per device only: a ring takes its first device's depth and its devices' work together
  console.log(`A per device by depth (ms, one pass): ${perDepth.join('; ')}`);
  console.log(`of A, the F_D correction alone (one pass): ${corrections.toFixed(2)} ms per device`);
  console.log(`one cold-ish evaluation after warm-up (depth 64, new seed): ${first.toFixed(2)} ms`);
}
console.log(`calibration (1e8 additions): ${calBefore.toFixed(0)} ms before, ${calAfter.toFixed(0)} ms after`);
