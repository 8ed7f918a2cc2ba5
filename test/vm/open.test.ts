// The gate's list of known-open checks (lib/open.ts) must excuse exactly the failures it names.
import { describe, expect, it } from 'vitest';
import type { CheckResult } from './lib/checks.js';
import { OPEN_CHECKS, openCause } from './lib/open.js';

const check = (over: Partial<CheckResult>): CheckResult =>
  ({ id: '4 unchanged', scenario: 'qd4-fixed50', title: 'hybrid under fentry vs untraced: poller CPU per I/O', measured: '+9.5%', bound: '±5%', pass: false, ...over });

describe('known-open VM checks', () => {
  it('excuses a failing check of a listed id in a listed scenario', () => {
    expect(openCause(check({}))).toMatch(/tracing moves the kernel's sleeps/);
  });
  it('never excuses a passing or premise-skipped check', () => {
    expect(openCause(check({ pass: true }))).toBeUndefined();
    expect(openCause(check({ skipped: 'premise' }))).toBeUndefined();
  });
  it('keeps the same check gated in other scenarios and other titles', () => {
    expect(openCause(check({ scenario: 'qd1-nvme' }))).toBeUndefined();
    expect(openCause(check({ id: '3 cpu', scenario: 'qd4-fixed50' }))).toBeUndefined();
    expect(openCause(check({ id: '5 self-check', scenario: 'qd16-fixed50' }))).toBeUndefined();
    expect(openCause(check({ id: '5 depth', scenario: 'qd4-fixed50' }))).toBeUndefined();
    expect(openCause(check({ id: '4 unchanged', scenario: 'qd4-fixed50', title: 'poll under fentry vs untraced: IOPS' }))).toBeUndefined();
    expect(openCause(check({ id: '4 unchanged', scenario: 'qd4-fixed50', title: 'hybrid under fentry vs untraced: IOPS' }))).toBeDefined();
    // passing at QD1 since the loop-end programs only store: gated there
    expect(openCause(check({ id: '4 unchanged', scenario: 'qd1-fixed50' }))).toBeUndefined();
    // and the tracepoint path's QD1 since task state is an array (+4.1 %)
    expect(openCause(check({ id: '4 unchanged', scenario: 'qd1-fixed50', title: 'hybrid under tracepoint vs untraced: poller CPU per I/O' }))).toBeUndefined();
    // the sampling checks judge the identified flag where N = 1's device time is not identified (QD32 hybrid
    // since the first-look fix); QD32 classic's waste is 0 at every rate: gated everywhere
    for (const id of ['S control', 'S agreement']) expect(openCause(check({ id, scenario: 'sampling qd32 hybrid', title: 'wasted CPU over the run (hybridpoll_wasted_cpu_seconds_total): N=1 again vs N=1' }))).toBeUndefined();
    expect(openCause(check({ id: 'S control', scenario: 'sampling qd32 classic', title: 'wasted CPU over the run (hybridpoll_wasted_cpu_seconds_total): N=1 again vs N=1' }))).toBeUndefined();
    expect(openCause(check({ id: 'S control', scenario: 'sampling qd1 classic', title: 'wasted CPU over the run (hybridpoll_wasted_cpu_seconds_total): N=1 again vs N=1' }))).toBeUndefined();
    expect(openCause(check({ id: '5 model', scenario: 'qd16-fixed50' }))).toBeUndefined();
    // since 2026-12-07 the exporter flags E[D] at depth on the fixed-time device not identified and the checks judge
    // the flag there; where F_D is measured (two-point device) the figure: gated everywhere
    for (const scenario of ['qd4-fixed50', 'qd16-fixed50', 'qd64-fixed50']) {
      for (const id of ['5 model', '5 device time']) expect(openCause(check({ id, scenario }))).toBeUndefined();
    }
    // QD32 on the 50 µs device since the first-look fix (the call found the sleep's 31 completions) and the
    // two-point device's self-check (−5.8 / −6.4 % since): gated; on the device-bound 400 µs device the model is open
    for (const id of ['5 model', '5 device time', '5 wasted', '5 self-check']) expect(openCause(check({ id, scenario: 'qd32-fixed50' }))).toBeUndefined();
    expect(openCause(check({ id: '5 self-check', scenario: 'qd4-twopoint' }))).toBeUndefined();
    // the device-bound 400 µs device at QD32: flagged not identified since FILL_SPUN, so its extrapolated figures
    // are judged by the flag (gated); its self-check rests on E[D] and is open
    for (const id of ['5 model', '5 device time', '5 wasted']) expect(openCause(check({ id, scenario: 'qd32-fixed400' }))).toBeUndefined();
    expect(openCause(check({ id: '5 self-check', scenario: 'qd32-fixed400' }))).toBeDefined();
    // the model fed the classic run (judged since its window holds that run alone): open on the fixed 400 µs device only
    expect(openCause(check({ id: '5 classic self-check', scenario: 'qd32-fixed400' }))).toBeDefined();
    for (const scenario of ['qd1-fixed50', 'qd4-fixed50', 'qd16-fixed50', 'qd32-fixed50', 'qd32-normal400', 'qd64-fixed50']) {
      for (const id of ['5 classic self-check', '5 classic device time']) expect(openCause(check({ id, scenario }))).toBeUndefined();
    }
    // the same with a spread in its service time: flagged, and its self-check gated since a ring's start is left out of the fit
    for (const id of ['5 model', '5 device time', '5 wasted', '5 self-check']) expect(openCause(check({ id, scenario: 'qd32-normal400' }))).toBeUndefined();
    expect(openCause(check({ id: '5 model', scenario: 'qd4-twopoint' }))).toBeUndefined();
    expect(openCause(check({ id: '5 device time', scenario: 'qd4-twopoint' }))).toBeUndefined();
    expect(openCause(check({ id: 'L6 model classic', scenario: 'legacy seed001 fio' }))).toBeUndefined();
    // passing since issue 13's origin fix: gated everywhere
    expect(openCause(check({ id: 'L6 self-check', scenario: 'legacy seed001 hpdrive' }))).toBeUndefined();
    // passing since the block layer's rows sleep by the kernel's own mean and the fixed row by the timer's lag: gated everywhere
    expect(openCause(check({ id: 'L6 model fixed', scenario: 'legacy seed004 fio' }))).toBeUndefined();
    expect(openCause(check({ id: 'L6 model fixed', scenario: 'legacy seed004 hpdrive' }))).toBeUndefined();
    for (const id of ['L6 model ½ mean', 'L6 model ¾ mean', 'L6 model classic']) expect(openCause(check({ id, scenario: 'legacy seed001 hpdrive' }))).toBeUndefined();
    // passing since the busy window charges the wake latency and hpdrive's reference holds the submit tail: gated everywhere
    for (const id of ['L6 model ½ mean', 'L6 model classic']) expect(openCause(check({ id, scenario: 'legacy seed004 hpdrive' }))).toBeUndefined();
    // its ¾ row fed runs whose F_D is censored passes flagged by the exporter (unresolved ratio) since 2026-12-07: gated everywhere
    for (const scenario of ['legacy seed004 hpdrive', 'legacy seed004 fio']) expect(openCause(check({ id: 'L6 model ¾ mean', scenario }))).toBeUndefined();
    for (const scenario of ['legacy seed001 hpdrive', 'legacy seed004 hpdrive']) expect(openCause(check({ id: 'L5 cpu', scenario }))).toBeUndefined();
    // tracing overhead on 5.10: at the bound on the 50 µs device, over it on the 30 µs one
    expect(openCause(check({ id: 'L8 unchanged', scenario: 'legacy seed001 hpdrive' }))).toBeDefined();
    // E[D] on 5.10: judged as the upper bound it is where most slept I/Os were censored, gated everywhere
    expect(openCause(check({ id: 'L7 device time', scenario: 'legacy seed004 hpdrive' }))).toBeUndefined();
    expect(openCause(check({ id: 'L2 count', scenario: 'legacy seed001 hpdrive' }))).toBeUndefined();
  });
  it('gives every entry a cause that names where the fix belongs', () => {
    for (const o of OPEN_CHECKS) expect(o.cause).toMatch(/issue \d+/);
  });
});
