// The sampling check's arithmetic (test/vm/lib/sampling.ts) on synthetic scrapes, no VM: each
// bound passes just inside and fails just outside, and the premise catches an exporter that did
// not sample.
import { describe, expect, it } from 'vitest';
import { agreement, CONTROL, sampledFigures, samplingChecks, samplingScenarios, type SamplingSession } from './lib/sampling.js';
import type { DriverResult } from './lib/session.js';

const DEV = 'hpsim0';

interface Fig { rate: number; eff: number; opt: number; wasted: number; lat: number; polled?: number; sleeps?: number; gauge?: number; identified?: number }

function scrape(f: Fig, after: boolean): string {
  const k = after ? 1 : 0;
  const d = `device="${DEV}"`;
  return [
    `hybridpoll_bpf_sample_rate ${f.gauge ?? f.rate}`,
    `hybridpoll_polled_ios_total{${d}} ${100 + k * (f.polled ?? 4000)}`,
    `hybridpoll_poll_sleeps_total{${d}} ${90 + k * (f.sleeps ?? 3990)}`,
    `hybridpoll_io_latency_seconds_count{${d}} ${64 * 10 + k * f.lat}`,
    `hybridpoll_io_latency_seconds_sum{${d}} ${1 + k * f.lat * 5e-5}`,
    `hybridpoll_wasted_cpu_seconds_total{${d}} ${0.5 + k * f.wasted}`,
    ...(after ? [
      `hybridpoll_sleep_efficiency_ratio{${d}} ${f.eff}`,
      `hybridpoll_optimal_sleep_seconds{${d}} ${f.opt}`,
      `hybridpoll_model_unresolved_ratio{${d}} 0`,
      `hybridpoll_model_device_time_identified{${d}} ${f.identified ?? 1}`,
      `hybridpoll_model_input_info{${d},device_time="censored_km",wake_overhead="measured",switch_cost="measured"} 1`,
    ] : []),
  ].join('\n');
}

const driver = { ios: 4000, cpu: { per_io_us: 49.3 } } as DriverResult;

/** One run per rate, and the control (N = 1 again: `control`, the same as N = 1's when absent). */
function session(figs: Fig[], scenarios = samplingScenarios(4000).slice(0, 1), control?: Fig): SamplingSession {
  const runs: [string, Fig][] = [...figs.map((f): [string, Fig] => [String(f.rate), f]), [CONTROL, control ?? figs[0]!]];
  return {
    rates: figs.map((f) => f.rate),
    args: [],
    scenarios,
    runs: [{
      scenario: scenarios[0]!.id, device: DEV,
      drivers: Object.fromEntries(runs.map(([k]) => [k, driver])),
      before: Object.fromEntries(runs.map(([k, f]) => [k, scrape(f, false)])),
      after: Object.fromEntries(runs.map(([k, f]) => [k, scrape(f, true)])),
    }],
    stops: [],
  };
}

const ref: Fig = { rate: 1, eff: 0.5, opt: 40e-6, wasted: 0.01, lat: 4000 };

describe('sampling agreement', () => {
  it('is relative, and exact where N = 1 reads 0', () => {
    expect(agreement(1.0199, 1).pass).toBe(true);
    expect(agreement(0.9801, 1).pass).toBe(true);
    expect(agreement(1.0201, 1).pass).toBe(false);
    expect(agreement(0.9799, 1).pass).toBe(false);
    expect(agreement(0, 0).pass).toBe(true);
    expect(agreement(0.001, 0).pass).toBe(false);
    expect(agreement(undefined, 1).pass).toBe(false);
    expect(agreement(1, undefined).pass).toBe(false);
    // no value at both (efficiency where the best sleep is 0) is the same answer
    expect(agreement(undefined, undefined)).toEqual({ err: 0, pass: true });
    expect(agreement(NaN, 1).pass).toBe(false);
  });

  it('checks the control run (N = 1 again) against N = 1 with the same bound, and fails without it', () => {
    const control = (c?: Fig) => samplingChecks(session([ref, { ...ref, rate: 16, lat: 3984 }], undefined, c)).filter((x) => x.id === 'S control');
    expect(control().map((x) => x.pass)).toEqual([true, true, true]);
    expect(control().map((x) => x.title)).toEqual([expect.stringMatching(/^efficiency.*N=1 again vs N=1$/), expect.stringMatching(/^optimal sleep/), expect.stringMatching(/^wasted CPU/)]);
    const moved = control({ ...ref, wasted: 0.01 * 1.03 });
    expect(moved.map((x) => x.pass)).toEqual([true, true, false]);
    expect(moved[2]!.measured).toMatch(/\+3\.00%.*poller CPU per I\/O \+0\.00%/);
    const s = session([ref, { ...ref, rate: 16, lat: 3984 }]);
    delete s.runs[0]!.drivers[CONTROL];
    expect(samplingChecks(s).filter((x) => x.id === 'S control')).toEqual([expect.objectContaining({ pass: false, measured: 'no run' })]);
  });

  it('reads the figures of one run from the two scrapes', () => {
    const f = sampledFigures(scrape({ ...ref, rate: 16, lat: 4016 }, false), scrape({ ...ref, rate: 16, lat: 4016 }, true), DEV, 16);
    expect(f).toMatchObject({ rate: 16, sampleRate: 16, efficiency: 0.5, optimalSleep: 40e-6, polledIos: 4000, sleeps: 3990, latencyCount: 4016, deviceTimeSource: 'censored_km' });
    expect(f.wastedSeconds).toBeCloseTo(0.01, 12);
  });

  it('passes each figure within ±2 % of N = 1 and fails it outside', () => {
    const c = samplingChecks(session([ref, { ...ref, rate: 16, eff: 0.5 * 1.019, opt: 40e-6 * 0.981, lat: 3984 }, { ...ref, rate: 64, wasted: 0.01 * 1.021, lat: 4032 }]));
    const by = (title: RegExp) => c.find((x) => x.id === 'S agreement' && title.test(x.title))!;
    expect(c.find((x) => x.id === 'S premise')!.pass).toBe(true);
    expect(by(/^efficiency.*N=16/).pass).toBe(true);
    expect(by(/^optimal sleep.*N=16/).pass).toBe(true);
    expect(by(/^wasted CPU.*N=16/).pass).toBe(true);
    expect(by(/^efficiency.*N=64/).pass).toBe(true);
    expect(by(/^wasted CPU.*N=64/).pass).toBe(false);
    expect(by(/^wasted CPU.*N=64/).measured).toMatch(/\+2\.10%/);
    expect(c.filter((x) => x.id === 'S agreement')).toHaveLength(6);
  });

  it('judges the flag, not the values, where N = 1 does not identify the device time', () => {
    const wasted = (n1: Partial<Fig>, n16: Partial<Fig>) =>
      samplingChecks(session([{ ...ref, ...n1 }, { ...ref, rate: 16, lat: 3984, ...n16 }])).find((x) => x.id === 'S agreement' && /^wasted CPU/.test(x.title))!;
    // the QD32 shape: both flagged, values apart (3.67 against 2.08 ms): not judged, said so
    const both = wasted({ identified: 0, wasted: 0.00208 }, { identified: 0, wasted: 0.00367 });
    expect(both.pass).toBe(true);
    expect(both.measured).toMatch(/\+76\.\d\d%.*not identified, at this run not identified.*not judged/);
    // sampling lost the identification, or gained one: the answer changed
    expect(wasted({ wasted: 0.01 }, { identified: 0, wasted: 0.01 }).pass).toBe(false);
    expect(wasted({ identified: 0, wasted: 0.01 }, { wasted: 0.01 }).pass).toBe(false);
    // both identified: the ±2 % bound as before
    expect(wasted({ wasted: 0.01 }, { wasted: 0.0103 }).pass).toBe(false);
  });

  it('fails the premise when an exporter did not sample or lost a count', () => {
    const premise = (figs: Fig[]) => samplingChecks(session(figs)).find((x) => x.id === 'S premise')!.pass;
    expect(premise([ref, { ...ref, rate: 16, lat: 3984 }])).toBe(true);
    // io_latency counted one by one: no multiple of 16, the loader timed every completion
    expect(premise([ref, { ...ref, rate: 16, lat: 4001 }])).toBe(false);
    // the loader said another rate
    expect(premise([ref, { ...ref, rate: 16, lat: 3984, gauge: 1 }])).toBe(false);
    // counts must be exact at every rate
    expect(premise([ref, { ...ref, rate: 16, lat: 3984, polled: 3979 }])).toBe(false);
    expect(premise([ref, { ...ref, rate: 16, lat: 3984, polled: 3981 }])).toBe(true);
    // each run is its own: sleeps per I/O may move as little as tracing may move them (±0.05/IO)
    expect(premise([ref, { ...ref, rate: 16, lat: 3984, sleeps: 3990 - 196 }])).toBe(true);
    expect(premise([ref, { ...ref, rate: 16, lat: 3984, sleeps: 3990 - 204 }])).toBe(false);
    // and agree with the driver's
    expect(premise([{ ...ref, polled: 3900 }, { ...ref, rate: 16, lat: 3984, polled: 3900 }])).toBe(false);
    // a rate whose run is missing
    const s = session([ref, { ...ref, rate: 16, lat: 3984 }]);
    delete s.runs[0]!.drivers[16];
    expect(samplingChecks(s).find((x) => x.id === 'S premise')!.pass).toBe(false);
  });

  it('fails a scenario without its run, and a phase that stopped', () => {
    const s = session([ref, { ...ref, rate: 16, lat: 3984 }], samplingScenarios(4000));
    const c = samplingChecks({ ...s, error: 'guest agent: boom' });
    expect(c.filter((x) => x.id === 'S ran' && !x.pass).map((x) => x.scenario)).toEqual(['sampling', 'sampling qd1 classic', 'sampling qd32 hybrid', 'sampling qd32 classic']);
    expect(samplingChecks(undefined)).toEqual([]);
  });
});
