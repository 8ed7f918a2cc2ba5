// evaluatePoller: every policy of the what-if table, and the current state, for one poller at its
// measured depth: today's QD1 closed forms where they hold (depth 1 on one device, sync jobs),
// the seeded simulation elsewhere, with common random numbers so policies are compared on the
// same I/Os. Pure.
import { CostModel, fixedDelaySleep, kernelHalfMeanSleep, policySleep, settableSleep } from '../policies.js';
import { mean, totalMass } from '../dist.js';
import type { Dist } from '../types.js';
import { fromQd1, qd1Table, ringHalfMinSleep, STATIC_POLICIES } from './closed.js';
import { Sampler } from './random.js';
import { simulate, type SimConfig, type SimStats, type SleepRule } from './sim.js';
import type { PollerDevice, PollerInput, PollerOutcome, PollerResult, SimOptions } from './types.js';

/** ios: simulated I/Os per poller, split over its depth points (at least MIN_POINT_IOS each) */
export const DEFAULT_SIM: SimOptions = { seed: 1, ios: 1500 };
const MIN_POINT_IOS = 500;
/** At most this many depth points are simulated; a wider histogram is split into this many I/O-weighted groups. */
export const MAX_DEPTH_POINTS = 2;
/** best_static at depth: the QD1 best sleep scaled by these, besides every table policy's sleeps. */
const BEST_GRID = [0.25, 0.5];
/** blkmq kernel rule at depth: rounds of "sleep ½ the previous window's mean issue → found". */
const HALF_MEAN_ROUNDS = 3;

type StaticPolicy = (typeof STATIC_POLICIES)[number];

function checkDist(d: Dist, what: string): void {
  if (!d.pieces.length || !(totalMass(d) > 0)) throw new Error(`${what}: empty distribution`);
  for (const q of d.pieces) {
    if (!(Number.isFinite(q.lo) && Number.isFinite(q.hi) && q.lo >= 0 && q.hi >= q.lo && q.p >= 0)) throw new Error(`${what}: bad piece ${JSON.stringify(q)}`);
  }
}

function nonNegative(v: number, what: string): void {
  if (!(Number.isFinite(v) && v >= 0)) throw new Error(`${what} must be a finite number ≥ 0 (got ${v})`);
}

function validate(input: PollerInput): void {
  if (!input.devices.length) throw new Error('evaluatePoller: no device');
  input.devices.forEach((d) => {
    checkDist(d.fD, `device ${d.device}: F_D`);
    if (!(Number.isFinite(d.share) && d.share > 0)) throw new Error(`device ${d.device}: share must be > 0`);
  });
  checkDist(input.fO, 'F_O');
  nonNegative(input.switchCostNs, 'switchCostNs');
  nonNegative(input.sleepOnCpuNs ?? 0, 'sleepOnCpuNs');
  nonNegative(input.latencyBudget, 'latencyBudget');
  nonNegative(input.submission.submitNs, 'submitNs');
  nonNegative(input.submission.reapNs, 'reapNs');
  nonNegative(input.submission.minComplete, 'minComplete');
  nonNegative(input.submission.loopReapNs ?? 0, 'loopReapNs');
  nonNegative(input.submission.callNs ?? 0, 'callNs');
  nonNegative(input.submission.leadNs ?? 0, 'leadNs');
  if (input.era !== 'blkmq_sync') {
    if (!input.depth.length || !(input.depth.reduce((a, [, w]) => a + w, 0) > 0)) throw new Error('evaluatePoller: empty depth histogram');
    for (const [d, w] of input.depth) {
      if (!(Number.isFinite(d) && d >= 1) || !(Number.isFinite(w) && w >= 0)) throw new Error(`evaluatePoller: bad depth entry [${d}, ${w}]`);
    }
  }
  if (input.era === 'blkmq_sync' && input.devices.length !== 1) throw new Error('evaluatePoller: a sync job polls one device');
  if (input.current.rule === 'static') nonNegative(input.current.sleepNs ?? NaN, 'current.sleepNs');
}

/** Depth points: the distinct depths, or MAX_DEPTH_POINTS groups of equal loop mass each represented by its weighted mean. */
export function depthPoints(hist: readonly (readonly [number, number])[]): { depth: number; weight: number }[] {
  const rows = hist.filter(([, w]) => w > 0).map(([d, w]) => ({ depth: Math.round(d), weight: w })).sort((a, b) => a.depth - b.depth);
  const merged: { depth: number; weight: number }[] = [];
  for (const r of rows) {
    const last = merged[merged.length - 1];
    if (last && last.depth === r.depth) last.weight += r.weight;
    else merged.push({ ...r });
  }
  if (merged.length <= MAX_DEPTH_POINTS) return merged;
  const total = merged.reduce((a, r) => a + r.weight, 0);
  const groups: { depth: number; weight: number }[] = [];
  let acc = 0;
  let g = { sum: 0, weight: 0 };
  for (const r of merged) {
    g.sum += r.depth * r.weight;
    g.weight += r.weight;
    acc += r.weight;
    if (acc >= (total * (groups.length + 1)) / MAX_DEPTH_POINTS - 1e-12 && groups.length < MAX_DEPTH_POINTS - 1) {
      groups.push({ depth: Math.max(1, Math.round(g.sum / g.weight)), weight: g.weight });
      g = { sum: 0, weight: 0 };
    }
  }
  if (g.weight > 0) groups.push({ depth: Math.max(1, Math.round(g.sum / g.weight)), weight: g.weight });
  return groups;
}

interface Ctx {
  input: PollerInput;
  models: CostModel[];
  shares: number[];
  meanD: number;
  sim: SimOptions;
}

/** A device's io_poll_delay as its sleeps last from the sleep start BPF sees (policies.ts fixedDelaySleep). */
const fixedSleep = (d: PollerDevice): number | undefined => fixedDelaySleep(d.fixedSleepNs, d.kernel);

/** The sleep per device each static policy picks; undefined when it cannot (blkmq_fixed without a setting). */
function staticSleeps(ctx: Ctx, policy: StaticPolicy): number[] | undefined {
  const { models, input } = ctx;
  if (policy === 'iouring_half_min') {
    const s = ringHalfMinSleep(models);
    return models.map(() => s);
  }
  if (policy === 'blkmq_fixed') {
    const v = input.devices.map(fixedSleep);
    return v.every((x) => x !== undefined && x > 0) ? (v as number[]) : undefined;
  }
  const v = models.map((m, i) => policySleep(policy, m, input.devices[i]!.kernel));
  return v.every((x) => x !== undefined) ? (v as number[]) : undefined;
}

/** The closed forms: one device at depth 1, or sync jobs (each a QD1 poller on its own CPU). */
function closedForm(ctx: Ctx): PollerResult {
  const { input } = ctx;
  const m = ctx.models[0]!;
  const device = input.devices[0]!.device;
  const sub = input.submission;
  const table = qd1Table(m, device, sub, input.devices[0]!.kernel);
  const best = table.find((r) => r.policy === 'best_static')!;
  const oracle = table.find((r) => r.policy === 'oracle')!;
  const base = { era: input.era, method: 'closed_form' as const, depthPoints: [{ depth: 1, ioShare: 1 }], policies: table, best, oracle, meanDeviceNs: ctx.meanD };
  if (input.current.rule === 'kernel' && input.era === 'iouring_613') {
    // io_uring's own rule on 6.13–6.19 depends on one-look poll calls: only the current state is simulated
    const p = simPoints(ctx, [[1, 1]])[0]!;
    const cls = run(p, { kind: 'none' });
    const cur = run(p, { kind: 'ring_min' });
    return { ...base, current: outcome('current', [cur], [1], [cls], ctx), kernelEstimateNs: cur.hybridPollTimeNs! };
  }
  const s = currentSleepClosed(ctx);
  return { ...base, current: fromQd1('current', m.outcome(s), s > 0 ? 1 : 0, device, sub) };
}

function currentSleepClosed(ctx: Ctx): number {
  const { current } = ctx.input;
  const m = ctx.models[0]!;
  if (current.rule === 'none') return 0;
  if (current.rule === 'static') return current.sleepNs!;
  if (current.policy === 'blkmq_fixed') return fixedSleep(ctx.input.devices[0]!) ?? 0;
  if (current.policy === 'blkmq_half_mean') return kernelHalfMeanSleep(m, ctx.input.devices[0]!.kernel);
  return ringHalfMinSleep(ctx.models);
}

/** When today's closed forms are exact for this input. */
function closedFormHolds(input: PollerInput): boolean {
  if (input.era === 'blkmq_sync') return true;
  if (input.devices.length !== 1) return false;
  return input.depth.every(([d, w]) => w === 0 || Math.round(d) === 1);
}

interface Point {
  depth: number;
  weight: number;
  base: Omit<SimConfig, 'rule' | 'depth'>;
}

function run(p: Point, rule: SleepRule, ios = p.base.ios): SimStats {
  return simulate({ ...p.base, depth: p.depth, rule, ios });
}

/** Per-I/O outcome of one sleep rule over the depth points (shares: I/O weights per point). */
function outcome(policy: PollerOutcome['policy'], stats: SimStats[], shares: number[], classic: SimStats[], ctx: Ctx): PollerOutcome {
  const per = (f: (s: SimStats) => number) => stats.reduce((a, s, i) => a + shares[i]! * f(s), 0);
  const spinNs = per((s) => s.spinNs / s.ios);
  const switchNs = per((s) => s.switchNs / s.ios);
  const overheadNs = per((s) => s.overheadNs / s.ios);
  const latencyNs = per((s) => s.latencyNs / s.ios);
  const classicLat = classic.reduce((a, s, i) => a + shares[i]! * (s.latencyNs / s.ios), 0);
  const addedLatencyNs = latencyNs - classicLat;
  const sleeps = per((s) => s.sleeps / s.ios);
  const sleepTotal = stats.reduce((a, s) => a + s.sleepNsTotal, 0);
  const sleepCount = stats.reduce((a, s) => a + s.sleeps, 0);
  const seVar = stats.reduce((a, s, i) => a + shares[i]! ** 2 * batchVar(s.batchCpuPerIo), 0);
  const perDevice = ctx.input.devices.map((d, k) => {
    const ios = stats.reduce((a, s, i) => a + shares[i]! * (s.perDevice[k]!.ios / s.ios), 0);
    const avg = (f: (s: SimStats) => number, from: SimStats[]) =>
      from.reduce((a, s, i) => a + (s.perDevice[k]!.ios ? (shares[i]! * (s.perDevice[k]!.ios / s.ios) * f(s)) / s.perDevice[k]!.ios : 0), 0) / (ios || 1);
    const lat = avg((s) => s.perDevice[k]!.latencyNs, stats);
    return {
      device: d.device,
      ioShare: ios,
      cpuNs: avg((s) => s.perDevice[k]!.cpuNs, stats),
      sleepsPerIo: avg((s) => s.perDevice[k]!.sleeps, stats),
      latencyNs: lat,
      addedLatencyNs: lat - avg((s) => s.perDevice[k]!.latencyNs, classic),
    };
  });
  return {
    policy,
    sleepNs: sleepCount ? sleepTotal / sleepCount : 0,
    spinNs,
    switchNs,
    cpuNs: spinNs + switchNs,
    overheadNs,
    taskCpuNs: spinNs + switchNs + overheadNs,
    cpuShare: per((s) => (s.spinNs + s.switchNs) / s.ios) / per((s) => s.elapsedNs / s.ios),
    latencyNs,
    addedLatencyNs,
    sleepsPerIo: sleeps,
    reapedPerPass: per((s) => (s.reapingPasses ? s.ios / s.reapingPasses : 0)),
    meetsBudget: addedLatencyNs <= ctx.input.latencyBudget * ctx.meanD * (1 + 1e-9),
    cpuStdErrNs: Math.sqrt(seVar),
    perDevice,
  };
}

/** Variance of the mean of batch means. */
function batchVar(b: number[]): number {
  if (b.length < 2) return 0;
  const m = b.reduce((a, x) => a + x, 0) / b.length;
  return b.reduce((a, x) => a + (x - m) ** 2, 0) / (b.length - 1) / b.length;
}

/**
 * io_uring (6.13+) sleeps one hybrid_poll_time/2 for every request of a ring, whatever its device:
 * a ring over several devices can only take one sleep, so its best static sleep is searched among
 * single values.
 */
function ringWide(input: PollerInput): boolean {
  return input.devices.length > 1 && (input.era === 'iouring_613' || input.era === 'iouring_70');
}

/** One sleep for every device from each per-device candidate: its shortest and its I/O-weighted mean (distinct vectors). */
function ringSleeps(candidates: readonly number[][], shares: readonly number[]): number[][] {
  const values = new Set<number>();
  for (const v of candidates) {
    values.add(Math.min(...v));
    values.add(v.reduce((a, x, i) => a + x * shares[i]!, 0));
  }
  return [...values].map((x) => shares.map(() => x));
}

/** The simulated depth points, sharing samplers and the seed (common random numbers). */
function simPoints(ctx: Ctx, hist: readonly (readonly [number, number])[]): Point[] {
  const { input } = ctx;
  const wake = new Sampler(input.fO);
  const devices = input.devices.map((d, i) => ({ fD: new Sampler(d.fD), share: ctx.shares[i]! }));
  const groups = depthPoints(hist);
  const pointIos = Math.max(MIN_POINT_IOS, Math.round(ctx.sim.ios / groups.length));
  return groups.map(({ depth, weight }) => ({
    depth,
    weight,
    base: {
      era: input.era as SimConfig['era'],
      devices,
      wake,
      switchCostNs: input.switchCostNs,
      ...(input.sleepOnCpuNs !== undefined ? { sleepOnCpuNs: input.sleepOnCpuNs } : {}),
      submission: input.submission,
      ios: pointIos,
      warmup: Math.max(200, 4 * depth),
      seed: ctx.sim.seed,
    },
  }));
}

function simulated(ctx: Ctx): PollerResult {
  const { input } = ctx;
  const era = input.era as SimConfig['era'];
  const points = simPoints(ctx, input.depth);
  const pointIos = points[0]!.base.ios;
  const runAll = (rule: SleepRule, ios?: number) => points.map((p) => run(p, rule, ios));

  // the current state first: it was measured under it, so it converts loop weights into I/O shares
  let kernelEstimateNs: number | undefined;
  let current: SimStats[];
  const cur = input.current;
  if (cur.rule === 'none') current = runAll({ kind: 'none' });
  else if (cur.rule === 'static') current = runAll({ kind: 'static', sleepNs: input.devices.map(() => cur.sleepNs!) });
  else if (era !== 'blkmq_iouring') {
    current = runAll({ kind: 'ring_min' });
    // the ring's minimum over its life sees every depth: the smallest of the points'
    kernelEstimateNs = Math.min(...current.map((c) => c.hybridPollTimeNs ?? Infinity));
  } else if (cur.policy === 'blkmq_fixed') current = runAll({ kind: 'static', sleepNs: input.devices.map((d) => fixedSleep(d) ?? 0) });
  else {
    // ½ the mean issue → found of the previous window, per device and depth point, towards its
    // fixed point (the rounds before the last on a third of the I/Os: they only move the sleep)
    current = points.map((p) => {
      let s = ctx.models.map((m) => m.meanD / 2);
      for (let k = 0; k < HALF_MEAN_ROUNDS; k++) {
        const st = run(p, { kind: 'static', sleepNs: s }, Math.ceil(pointIos / 3));
        s = st.perDevice.map((d, i) => (d.ios ? d.foundLatencyNs / d.ios / 2 : s[i]!));
      }
      return run(p, { kind: 'static', sleepNs: s });
    });
  }
  // I/O share of a depth point: its loops × completions per loop under the current state
  const ioMass = points.map((p, i) => p.weight * (current[i]!.ios / Math.max(1, current[i]!.loops)));
  const massTotal = ioMass.reduce((a, x) => a + x, 0);
  const shares = ioMass.map((x) => x / massTotal);

  const cache = new Map<string, SimStats[]>();
  const forSleeps = (v: readonly number[]) => {
    const key = v.join(',');
    let r = cache.get(key);
    if (!r) cache.set(key, (r = v.every((x) => x === 0) ? runAll({ kind: 'none' }) : runAll({ kind: 'static', sleepNs: v })));
    return r;
  };
  const classic = forSleeps(input.devices.map(() => 0));
  const rows: PollerOutcome[] = [];
  const vectors = new Map<StaticPolicy, number[]>();
  for (const p of STATIC_POLICIES) {
    const v = staticSleeps(ctx, p);
    if (v) vectors.set(p, v);
  }
  // best_static at depth: the cheapest in budget over every table sleep and a grid around the QD1 best
  const qd1Best = vectors.get('best_static')!;
  const seed = qd1Best.some((x) => x > 0) ? qd1Best : ctx.models.map((m) => m.meanD / 2);
  // where a device's sleep is set in whole steps, only the sleeps a setting gives
  const settable = (v: number[]) => v.map((x, i) => {
    const d = input.devices[i]!;
    return d.sleepStepNs === undefined || !(x > 0) ? x : settableSleep(x, d.sleepStepNs, d.kernel);
  });
  const perDeviceCandidates: number[][] = [...vectors.values(), ...BEST_GRID.map((f) => seed.map((x) => x * f))].map(settable);
  const candidates = ringWide(input) ? ringSleeps(perDeviceCandidates, ctx.shares) : perDeviceCandidates;
  let best: PollerOutcome | undefined;
  let bestVector: number[] = [];
  let bestSum = Infinity;
  for (const v of candidates) {
    const o = outcome('best_static', forSleeps(v), shares, classic, ctx);
    const sum = v.reduce((a, x) => a + x, 0);
    if (o.meetsBudget && (!best || o.cpuNs < best.cpuNs || (o.cpuNs === best.cpuNs && sum < bestSum))) {
      best = o;
      bestVector = v;
      bestSum = sum;
    }
  }
  for (const [p, v] of vectors) rows.push(p === 'best_static' ? best! : outcome(p, forSleeps(v), shares, classic, ctx));
  // The oracle adds no latency but the wake overhead, per completion; when the best static sleep
  // batches completions (a budget wide enough), that sleep with every later wait made perfect is
  // cheaper still: the floor is the cheaper of the two.
  const perfect = outcome('oracle', runAll({ kind: 'oracle' }), shares, classic, ctx);
  const bestSleeps = best!.sleepNs > 0 ? bestVector : undefined;
  const refined = bestSleeps ? outcome('oracle', runAll({ kind: 'oracle', sleepNs: bestSleeps }), shares, classic, ctx) : undefined;
  const oracle = refined && refined.cpuNs < perfect.cpuNs ? refined : perfect;
  rows.push(oracle);
  return {
    era: input.era,
    method: 'simulation',
    depthPoints: points.map((p, i) => ({ depth: p.depth, ioShare: shares[i]! })),
    policies: rows,
    best: best!,
    oracle,
    current: outcome('current', current, shares, classic, ctx),
    ...(kernelEstimateNs !== undefined ? { kernelEstimateNs } : {}),
    meanDeviceNs: ctx.meanD,
  };
}

/**
 * The poller model: the what-if table (POLICIES order), the best static sleep, the oracle and the
 * current state, per I/O at the measured depth. Throws on malformed input (a clear message); the
 * caller keeps serving the other pollers.
 */
export function evaluatePoller(input: PollerInput): PollerResult {
  validate(input);
  const total = input.devices.reduce((a, d) => a + d.share, 0);
  const shares = input.devices.map((d) => d.share / total);
  const models = input.devices.map(
    (d) =>
      new CostModel(d.fD, input.fO, {
        switchCostNs: input.switchCostNs,
        latencyBudget: input.latencyBudget,
        ...(d.fixedSleepNs !== undefined ? { fixedSleepNs: d.fixedSleepNs } : {}),
        ...(d.sleepStepNs !== undefined ? { sleepStepNs: d.sleepStepNs } : {}),
      }),
  );
  const ctx: Ctx = {
    input,
    models,
    shares,
    meanD: models.reduce((a, m, i) => a + shares[i]! * mean(m.fD), 0),
    sim: { ...DEFAULT_SIM, ...input.sim },
  };
  return closedFormHolds(input) ? closedForm(ctx) : simulated(ctx);
}

