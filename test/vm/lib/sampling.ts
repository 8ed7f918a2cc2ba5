// The sampling agreement (issue 16): one seeded workload observed at once by exporters at
// --bpf.sample=1, 16 and 64, each with its own BPF loader (the guest agent's sampled exporters),
// so the comparison is free of run-to-run noise: the model's efficiency, optimal sleep and wasted
// CPU at N > 1 against N = 1 of the same run, at QD1 and QD32, hybrid and classic polling. Pure:
// the guest side is sampling-session.ts.
//
// What sampling touches: only rq_lat (io_latency) is timed 1 in N (src/bpf/README.md,
// "Sampling"); the poll path (spin, sleeps, dev_spun, found_slept) follows every polled I/O. So
// a hybrid run's model, whose F_D is the censored estimate from dev_spun and found_slept, differs
// only by the side-by-side loaders' own error (each one's clock reads also time the programs of the
// others: the unsampled spin shows it); a classic run's F_D is rq_lat, and its agreement adds the
// sampling error.
import { BOUNDS, type CheckResult } from './checks.js';
import { delta, histDelta, parseExposition, select, value, type Scrape } from './prom.js';
import type { DriverResult, PollMode, Scenario } from './session.js';

export const SAMPLE_RATES = [1, 16, 64] as const;
/** N > 1 against N = 1, relative (issue 16) */
export const SAMPLING_BOUND = 0.02;

export interface SamplingScenario extends Scenario {
  mode: Exclude<PollMode, 'irq'>;
}

/**
 * QD1 and QD32, hybrid and classic, each on its own simulated device (the model's window of a
 * device then holds that run alone), all with the lab's fixed 50 µs profile and seed.
 */
export function samplingScenarios(ios: number): SamplingScenario[] {
  const profile = 'fixed:50000';
  const sc = (qd: number, mode: SamplingScenario['mode'], serial: string): SamplingScenario => {
    const what = mode === 'poll' ? 'classic' : 'hybrid';
    return { id: `sampling qd${qd} ${what}`, title: `QD${qd} 4k randread, ${what} polling, --bpf.sample=${SAMPLE_RATES.join('/')} at once (${serial} ${profile})`, serial, profile, qd, bs: 4096, ios, model: true, mode };
  };
  return [sc(1, 'hybrid', 'hpsim0'), sc(1, 'poll', 'hpsim1'), sc(32, 'hybrid', 'hpsim2'), sc(32, 'poll', 'hpsim3')];
}

export interface SamplingRun {
  scenario: string;
  device: string;
  driver: DriverResult;
  hpsim?: { before: string; after: string };
  /** exposition text per sample rate, before and after the measured run */
  before: Record<string, string>;
  after: Record<string, string>;
}

export interface SamplingSession {
  rates: number[];
  args: string[];
  scenarios: SamplingScenario[];
  runs: SamplingRun[];
  /** set when the phase stopped early */
  error?: string;
}

export interface SampledFigures {
  rate: number;
  /** hybridpoll_bpf_sample_rate after the run: the rate the loader said it used */
  sampleRate?: number;
  efficiency?: number;
  optimalSleep?: number;
  /** hybridpoll_wasted_cpu_seconds_total over the run: integrated between the two scrapes, so per I/O of the run, not per second of a window */
  wastedSeconds?: number;
  unresolved?: number;
  deviceTimeSource?: string;
  polledIos?: number;
  sleeps?: number;
  /** io_latency_seconds_count over the run: every completion, estimated from the timed ones */
  latencyCount?: number;
  latencyMean?: number;
  /** spin seconds over the run: never sampled, so what it differs by across rates is the side-by-side loaders' own error */
  spinSeconds?: number;
}

export function sampledFigures(before: string, after: string, device: string, rate: number): SampledFigures {
  const b: Scrape = parseExposition(before);
  const a: Scrape = parseExposition(after);
  const dev = { device };
  const lat = histDelta(b, a, 'hybridpoll_io_latency_seconds', dev);
  return {
    rate,
    sampleRate: value(a, 'hybridpoll_bpf_sample_rate'),
    efficiency: value(a, 'hybridpoll_sleep_efficiency_ratio', dev),
    optimalSleep: value(a, 'hybridpoll_optimal_sleep_seconds', dev),
    wastedSeconds: delta(b, a, 'hybridpoll_wasted_cpu_seconds_total', dev),
    unresolved: value(a, 'hybridpoll_model_unresolved_ratio', dev),
    deviceTimeSource: select(a, 'hybridpoll_model_input_info', dev)[0]?.labels.device_time,
    polledIos: delta(b, a, 'hybridpoll_polled_ios_total', dev),
    sleeps: delta(b, a, 'hybridpoll_poll_sleeps_total', dev),
    latencyCount: lat?.count,
    latencyMean: lat?.mean,
    spinSeconds: histDelta(b, a, 'hybridpoll_poll_spin_seconds', dev)?.sum,
  };
}

/** Agreement of one figure with N = 1's: relative, and exact where N = 1's is 0 (classic's efficiency is 0 by definition). */
export function agreement(x: number | undefined, ref: number | undefined, bound = SAMPLING_BOUND): { err: number; pass: boolean } {
  if (x === undefined || ref === undefined || !Number.isFinite(x) || !Number.isFinite(ref)) return { err: NaN, pass: false };
  if (ref === 0) return { err: x === 0 ? 0 : Infinity, pass: Math.abs(x) <= 1e-9 };
  const err = x / ref - 1;
  return { err, pass: Math.abs(err) <= bound };
}

const FIGURES: { key: 'efficiency' | 'optimalSleep' | 'wastedSeconds'; title: string; fmt: (v: number) => string }[] = [
  { key: 'efficiency', title: 'efficiency (hybridpoll_sleep_efficiency_ratio)', fmt: (v) => v.toFixed(4) },
  { key: 'optimalSleep', title: 'optimal sleep (hybridpoll_optimal_sleep_seconds)', fmt: (v) => `${(v * 1e6).toFixed(2)} µs` },
  { key: 'wastedSeconds', title: 'wasted CPU over the run (hybridpoll_wasted_cpu_seconds_total)', fmt: (v) => `${(v * 1e3).toFixed(3)} ms` },
];

const show = (v: number | undefined, f: (v: number) => string) => (v === undefined || !Number.isFinite(v) ? String(v) : f(v));
const pct = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}%` : String(x));

/** What each sampled exporter saw of one run: the rate it said, the exact counts, the timed completions. */
function premise(run: SamplingRun, figs: SampledFigures[], rates: number[]): CheckResult {
  const ref = figs.find((f) => f.rate === 1);
  const parts = figs.map((f) => `N=${f.rate}: rate gauge ${f.sampleRate}, ${f.polledIos} polled I/Os, ${f.sleeps} sleeps, io_latency count ${f.latencyCount} ` +
    `(${f.latencyCount === undefined ? '?' : (f.latencyCount / f.rate).toFixed(0)} timed), mean ${show(f.latencyMean, (v) => `${(v * 1e6).toFixed(2)} µs`)}, F_D from ${f.deviceTimeSource}, unresolved ${f.unresolved}`);
  const exact = figs.every((f) => f.polledIos !== undefined && f.polledIos === ref?.polledIos && f.sleeps === ref?.sleeps);
  const rated = figs.every((f) => f.sampleRate === f.rate);
  // a timed completion counts N times: a count that is no multiple of N was not sampled
  const weighted = figs.every((f) => f.latencyCount !== undefined && f.latencyCount > 0 && f.latencyCount % f.rate === 0);
  return {
    id: 'S premise',
    scenario: run.scenario,
    title: `exporters at --bpf.sample=${rates.join(', ')} on the same run: each says its rate, counts are exact, io_latency is weighted`,
    measured: `${run.driver.ios} I/Os by the driver; ${parts.join('; ')}`,
    bound: `rate gauge = N; polled I/Os and sleeps equal at every N and within ±${BOUNDS.count * 100}% of the driver's; io_latency count a multiple of N`,
    pass: !!ref && exact && rated && weighted && Math.abs((ref.polledIos ?? NaN) / run.driver.ios - 1) <= BOUNDS.count,
  };
}

/** The sampling checks of a session's sampling phase (none when it did not run). */
export function samplingChecks(s: SamplingSession | undefined): CheckResult[] {
  if (!s) return [];
  const out: CheckResult[] = [];
  if (s.error) out.push({ id: 'S ran', scenario: 'sampling', title: 'the sampling phase ran every workload', measured: s.error, bound: 'no error', pass: false });
  for (const sc of s.scenarios) {
    const run = s.runs.find((r) => r.scenario === sc.id);
    if (!run) {
      out.push({ id: 'S ran', scenario: sc.id, title: 'sampling run present', measured: 'no run', bound: 'one run', pass: false });
      continue;
    }
    const figs = s.rates.map((n) => sampledFigures(run.before[n] ?? '', run.after[n] ?? '', run.device, n));
    out.push(premise(run, figs, s.rates));
    const ref = figs.find((f) => f.rate === 1);
    for (const f of figs.filter((x) => x.rate !== 1)) {
      for (const fig of FIGURES) {
        const a = agreement(f[fig.key], ref?.[fig.key]);
        out.push({
          id: 'S agreement',
          scenario: sc.id,
          title: `${fig.title}: N=${f.rate} vs N=1`,
          // the unsampled spin beside it: each loader's clock reads also time the other loaders' programs
          measured: `N=${f.rate} ${show(f[fig.key], fig.fmt)} vs N=1 ${show(ref?.[fig.key], fig.fmt)} (${pct(a.err)}; F_D from ${f.deviceTimeSource} on ${f.latencyCount === undefined ? '?' : Math.round(f.latencyCount / f.rate)} timed of ${f.polledIos} I/Os; ` +
            `unsampled spin ${pct(agreement(f.spinSeconds, ref?.spinSeconds).err)} against N=1's: the loaders' own difference)`,
          bound: `±${SAMPLING_BOUND * 100}%`,
          pass: a.pass,
        });
      }
    }
  }
  return out;
}
