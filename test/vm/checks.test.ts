// The VM checks' arithmetic on synthetic sessions (no VM): each bound passes just inside and fails
// just outside, so a wrong sign, pairing or unit in test/vm/lib/checks.ts shows up here and not as a
// puzzling result of a 15-minute guest run.
import { describe, expect, it } from 'vitest';
import { allChecks, check2, check3, check4, check5, SessionRuns, tracepointCpu, type CheckResult } from './lib/checks.js';
import { parseExposition, histDelta } from './lib/prom.js';
import type { DriverResult, PollMode, RunRecord, Scenario, Session, Tracing } from './lib/session.js';

const SC: Scenario = { id: 'qd1', title: 't', serial: 'hpfast', profile: 'fixed:50000', qd: 1, bs: 4096, ios: 10_000, model: true };

function driver(mode: PollMode, ios: number, cpuS: number, vcsw: number, pid = 100): DriverResult {
  const lat = 8e6 / ios; // closed loop at QD1: latency = wall / I/Os
  return {
    mode, flags: mode === 'hybrid' ? 0x20001 : 1, qd: 1, bs: 4096, device: '/dev/nvme0n1', pid, ios, wall_s: 8, iops: ios / 8,
    lat_us: { mean: lat, p50: lat, p90: lat, p99: lat, p999: lat, max: lat },
    cpu: { exec_s: cpuS * 1.25, run_delay_s: 0, timeslices: 1, utime_s: 0, stime_s: cpuS, util: cpuS / 8, per_io_us: (cpuS / ios) * 1e6, wait_s: cpuS, wait_calls: ios, empty_enter_ns: 0 },
    ctxsw: { voluntary: vcsw, involuntary: 0 },
  };
}

interface Exp {
  polled: number;
  sleeps: number;
  spinS: number;
  offcpuS?: number;
  reqMeanS?: number;
  hptS?: number;
  measuredPerIo?: number;
  classicPerIo?: number;
  /** the model's best static sleep and its CPU per I/O; the exporter's η (default 0.5; null: absent) */
  optimalS?: number;
  bestPerIo?: number;
  eta?: number | null;
  pid?: number;
  /** spin after sleeps: seconds, loops */
  spinSlept?: [number, number];
  /** io_latency mean seconds (count = polled), overslept and spun I/Os */
  latS?: number;
  overslept?: number;
  spun?: number;
  selfError?: number;
  /** BPF program run time over the run (bpf_stats), seconds by program */
  progS?: Record<string, number>;
  /** the model's E[D], seconds */
  meanDS?: number;
  /** hybridpoll_model_device_time_identified */
  identified?: number;
  /** hybridpoll_wasted_cpu_cores (default 0.1) and hybridpoll_current_sleep_seconds (without hptS) */
  wastedCores?: number;
  currentSleepS?: number;
  /** the model's mean in flight and how it was evaluated (hybridpoll_model_input_info depth) */
  inFlight?: number;
  depth?: 'qd1' | 'simulation';
}

/** Exposition after the run (before = all zero). */
function scrape(e: Exp): string {
  const d = '{device="nvme0n1"}';
  const lines = [
    'hybridpoll_kernel_era_info{era="iouring_hybrid",evidence="btf",release="7.3.4"} 1',
    'hybridpoll_device_hw_queues{device="nvme0n1",type="poll"} 2',
    `hybridpoll_device_io_poll${d} 1`,
    `hybridpoll_polled_ios_total${d} ${e.polled}`,
    `hybridpoll_poll_sleeps_total${d} ${e.sleeps}`,
    `hybridpoll_poll_spin_seconds_sum${d} ${e.spinS}`,
    `hybridpoll_poll_spin_seconds_count${d} ${e.polled}`,
    `hybridpoll_poll_offcpu_seconds_sum${d} ${e.offcpuS ?? 0}`,
    `hybridpoll_poll_offcpu_seconds_count${d} ${e.sleeps}`,
    `hybridpoll_poll_sleep_requested_seconds_sum${d} ${(e.reqMeanS ?? 0) * e.sleeps}`,
    `hybridpoll_poll_sleep_requested_seconds_count${d} ${e.sleeps}`,
    `hybridpoll_wasted_cpu_cores${d} ${e.wastedCores ?? 0.1}`,
  ];
  if (e.currentSleepS !== undefined && e.hptS === undefined) lines.push(`hybridpoll_current_sleep_seconds${d} ${e.currentSleepS}`);
  if (e.eta !== null) lines.push(`hybridpoll_sleep_efficiency_ratio${d} ${e.eta ?? 0.5}`);
  if (e.optimalS !== undefined) lines.push(`hybridpoll_optimal_sleep_seconds${d} ${e.optimalS}`);
  if (e.bestPerIo !== undefined) lines.push(`hybridpoll_policy_cpu_seconds_per_io{device="nvme0n1",policy="best_static"} ${e.bestPerIo}`);
  if (e.hptS !== undefined) lines.push(`hybridpoll_current_sleep_seconds${d} ${e.hptS / 2}`);
  if (e.spinSlept) lines.push(`hybridpoll_poll_spin_after_sleep_seconds_total${d} ${e.spinSlept[0]}`, `hybridpoll_poll_spin_after_sleep_total${d} ${e.spinSlept[1]}`);
  if (e.latS !== undefined) lines.push(`hybridpoll_io_latency_seconds_sum${d} ${e.latS * e.polled}`, `hybridpoll_io_latency_seconds_count${d} ${e.polled}`);
  if (e.overslept !== undefined) lines.push(`hybridpoll_poll_overslept_ios_total${d} ${e.overslept}`, `hybridpoll_poll_spun_ios_total${d} ${e.spun ?? 0}`);
  if (e.measuredPerIo !== undefined) lines.push(`hybridpoll_measured_cpu_seconds_per_io${d} ${e.measuredPerIo}`);
  for (const [p, sec] of Object.entries(e.progS ?? {})) lines.push(`hybridpoll_bpf_program_run_seconds_total{program="${p}"} ${sec}`);
  if (e.selfError !== undefined) lines.push(`hybridpoll_model_cpu_error_ratio${d} ${e.selfError}`);
  if (e.meanDS !== undefined) lines.push(`hybridpoll_model_device_time_mean_seconds{device="nvme0n1"} ${e.meanDS}`);
  if (e.identified !== undefined) lines.push(`hybridpoll_model_device_time_identified{device="nvme0n1"} ${e.identified}`);
  if (e.inFlight !== undefined) lines.push(`hybridpoll_model_in_flight_ios${d} ${e.inFlight}`);
  if (e.depth !== undefined) lines.push(`hybridpoll_model_input_info{device="nvme0n1",device_time="censored_km",wake_overhead="measured",switch_cost="measured",depth="${e.depth}"} 1`);
  if (e.classicPerIo !== undefined) lines.push(`hybridpoll_policy_cpu_seconds_per_io{device="nvme0n1",policy="classic"} ${e.classicPerIo}`);
  if (e.hptS !== undefined) {
    lines.push(`hybridpoll_ring_info{ring="r1",pid="${e.pid ?? 100}",comm="hpdrive",hybrid="1"} 1`);
    lines.push(`hybridpoll_ring_hybrid_poll_time_seconds{ring="r1"} ${e.hptS}`);
  }
  return lines.join('\n') + '\n';
}

function run(tracing: Tracing, mode: PollMode, d: DriverResult, e?: Exp, rep = 0): RunRecord {
  return { scenario: 'qd1', tracing, mode, rep, device: 'nvme0n1', driver: d, ...(e ? { before: '', after: scrape(e) } : {}) };
}

/** The simulated device's stats over the run: `ios` polled completions of mean `meanS` seconds. */
function withDevice(r: RunRecord, meanS: number, ios = r.driver.ios): RunRecord {
  const line = (n: number, sum: number) => `issued=${n} completed_irq=0 completed_poll=${n} service_ns_sum=${sum} service_ns_min=1 service_ns_max=1`;
  return { ...r, hpsim: { before: line(100, 5_000_000), after: line(100 + ios, 5_000_000 + Math.round(ios * meanS * 1e9)) } };
}

/** A tracepoint run's fentry twin: what a second loader saw of the same run (before = empty). */
function withTwin(r: RunRecord, t: { polled: number; sleeps: number; offcpuS: number; spinSleptS: number; progS?: Record<string, number> }): RunRecord {
  const h = (kind: string, count: number, sumS: number, aux0S = 0, aux1 = 0) => ({ dev: '259:0', kind, count, sum: sumS * 1e9, aux0: aux0S * 1e9, aux1 });
  return { ...r, twin: { before: { hists: [], devs: [] }, after: {
    hists: [h('sleep_req', t.sleeps, 0), h('offcpu', t.sleeps, t.offcpuS), h('spin', t.polled, t.spinSleptS, t.spinSleptS, t.sleeps)],
    devs: [{ dev: '259:0', polled_ios: t.polled }],
    progs: Object.fromEntries(Object.entries(t.progS ?? {}).map(([p, sec]) => [p, { run_ns: sec * 1e9 }])),
  } } };
}

/** An A/B run of the exporter on `path`, its programs attached or detached. */
function abRun(path: 'fentry' | 'tracepoint', attached: boolean, mode: PollMode, d: DriverResult, pair = 0): RunRecord {
  return { scenario: 'qd1', tracing: attached ? path : 'untraced', mode, rep: 0, device: 'nvme0n1', driver: d, ab: { exporter: path, pair } };
}

function session(runs: RunRecord[]): Session {
  return {
    startedAt: '', wallSeconds: 0, accel: 'tcg', accelWhy: '', bootSeconds: 0, scenarios: [SC], runs,
    exporterArgs: { fentry: [], tracepoint: [] },
    images: { suite: 'trixie', kernel: '', initrd: '', root: '', project: '', kernelRelease: '', loader: true, rootKey: '', projectKey: '' },
    info: { release: '', cmdline: '', nproc: 2, pollQueuesParam: '2', node: '', loader: true, uptime: 0,
      devices: [{ name: 'nvme0n1', serial: 'hpfast', majmin: '259:0', io_poll: '1', io_poll_delay: '-1', max_sectors_kb: '128', hctx: {} }] },
  };
}

const find = (cs: CheckResult[], title: string) => {
  const c = cs.find((x) => x.title.includes(title));
  if (!c) throw new Error(`no check "${title}" in ${cs.map((x) => x.title).join(', ')}`);
  return c;
};

describe('prom helpers', () => {
  it('parses labels with escapes and takes counter and histogram deltas', () => {
    const b = parseExposition('x_sum{a="q\\"x"} 1\nx_count{a="q\\"x"} 2\n');
    const a = parseExposition('# HELP x y\nx_sum{a="q\\"x"} 4\nx_count{a="q\\"x"} 5\n');
    expect(histDelta(b, a, 'x', { a: 'q"x' })).toEqual({ count: 3, sum: 3, mean: 1 });
  });
  it('rejects a malformed line', () => {
    expect(() => parseExposition('x{a="b} 1')).toThrow(/bad/);
  });
});

describe('check 2 (classic)', () => {
  const ok = (polled: number, spinS: number) =>
    check2(new SessionRuns(session([run('fentry', 'poll', driver('poll', 10_000, 8, 0), { polled, sleeps: 0, spinS })])), SC);
  it('passes inside the bounds (count ±0.5%, spin CPU ±5% at QD1)', () => {
    expect(ok(10_040, 7.7).every((c) => c.pass)).toBe(true);
  });
  it('fails a count 0.6% off and spin 6% low', () => {
    expect(find(ok(10_060, 8), 'polled I/Os').pass).toBe(false);
    expect(find(ok(10_000, 7.5), 'spin CPU').pass).toBe(false);
  });
  it('takes ±10% for the CPU at QD > 1', () => {
    const deep = { ...SC, qd: 4 };
    const c = (spinS: number) => find(check2(new SessionRuns(session([run('fentry', 'poll', driver('poll', 10_000, 8, 0), { polled: 10_000, sleeps: 0, spinS })])), deep), 'spin CPU');
    expect(c(7.5).pass).toBe(true);
    expect(c(7.1).pass).toBe(false);
  });
  it("compares the exporter's count with the simulated device's polled completions", () => {
    const r = (devIos: number) => find(check2(new SessionRuns(session([withDevice(run('fentry', 'poll', driver('poll', 10_000, 8, 0), { polled: 10_000, sleeps: 0, spinS: 8 }), 50e-6, devIos)])), SC), "device's polled");
    expect(r(10_000).pass).toBe(true);
    expect(r(10_100).pass).toBe(false);
  });
  it("adds the driver's syscall residue (waiting calls × empty io_uring_enter) to the exporter's spin", () => {
    const d = driver('poll', 10_000, 8, 0);
    d.cpu.empty_enter_ns = 100_000; // 10,000 calls × 100 µs = 1 s
    const c = (spinS: number) => find(check2(new SessionRuns(session([run('fentry', 'poll', d, { polled: 10_000, sleeps: 0, spinS })])), SC), 'spin CPU');
    expect(c(7).pass).toBe(true);
    expect(c(8).pass).toBe(false); // 8 + 1 = +12.5%
    expect(c(7).measured).toContain('syscall residue 1.000 s');
  });
});

describe('check 3 (hybrid)', () => {
  const c3 = (sleeps: number, reqMeanS: number, measuredPerIo: number) =>
    check3(new SessionRuns(session([run("fentry", "hybrid", driver("hybrid", 10_000, 5, 9_999), { polled: 10_000, sleeps, spinS: 1, reqMeanS, hptS: 80e-6, measuredPerIo })])), SC);
  it('passes: one sleep per I/O, each switched out, requested = hpt/2, CPU per I/O matched', () => {
    expect(c3(9_999, 38e-6, 520e-6).every((c) => c.pass)).toBe(true);
  });
  it('fails: 0.9 sleeps per I/O, 10% fewer switch-outs, requested 20% above hpt/2, CPU 12% high (the count still passes)', () => {
    const cs = c3(9_000, 48e-6, 560e-6);
    expect(cs.map((c) => `${c.id} ${c.pass}`)).toEqual(['3 count true', '3 sleeps/IO false', '3 switch-outs false', '3 requested false', '3 cpu false']);
  });
  it('CPU 6% high fails at QD1 (±5%)', () => {
    expect(find(c3(9_999, 38e-6, 530e-6), 'measured CPU').pass).toBe(false);
  });
});

describe('tracepoint path CPU (not a check)', () => {
  it('classic: spin + residue + BPF after the window (exporter rq_complete, twin rq_complete and iopoll_exit) vs the wait phase', () => {
    const twin = { polled: 10_000, sleeps: 0, offcpuS: 0, spinSleptS: 0, progS: { rq_complete: 0.1, iopoll_exit: 0.1, iopoll_enter: 5 } };
    const [line] = tracepointCpu(session([withTwin(run('tracepoint', 'poll', driver('poll', 10_000, 8, 0), { polled: 10_000, sleeps: 0, spinS: 7.1, progS: { rq_complete: 0.2, rq_issue: 5 } }), twin)]));
    // 7.1 + 0.2 + 0.1 + 0.1 = 7.5 s: −6.3%; the twin's iopoll_enter and the exporter's rq_issue run inside the window
    expect(line).toBe('qd1 rep 0 poll: exporter 710.00 µs/IO + syscall residue 0.00 µs/IO + BPF after the window 40.00 µs/IO vs poller wait phase 800.00 µs/IO (-6.3%; exporter alone -11.3%), poller total 1000.00 µs/IO');
  });
  it('hybrid: the measured CPU per I/O', () => {
    const [line] = tracepointCpu(session([run('tracepoint', 'hybrid', driver('hybrid', 10_000, 5, 9_999), { polled: 10_000, sleeps: 9_999, spinS: 1, measuredPerIo: 560e-6 })]));
    expect(line).toMatch(/^qd1 rep 0 hybrid: exporter 560\.00 µs\/IO .* vs poller wait phase 500\.00 µs\/IO \(\+12\.0%; exporter alone \+12\.0%\)/);
  });
});

describe('check 4 (paths agree, workload unchanged)', () => {
  const mk = (tpOffcpu: number, tpIops: number) => {
    const ru = [
      run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, offcpuS: 2, spinSlept: [1, 9_999] }),
      withTwin(run('tracepoint', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, offcpuS: tpOffcpu, spinSlept: [1, 9_999] }),
        { polled: 10_000, sleeps: 9_999, offcpuS: 2, spinSleptS: 1 }),
      run('fentry', 'poll', driver('poll', 20_000, 8, 0), { polled: 20_000, sleeps: 0, spinS: 7 }),
      withTwin(run('tracepoint', 'poll', driver('poll', 20_000, 8, 0), { polled: 20_000, sleeps: 0, spinS: 0 }), { polled: 20_000, sleeps: 0, offcpuS: 0, spinSleptS: 0 }),
      ...(['fentry', 'tracepoint'] as const).flatMap((p) => [
        abRun(p, false, 'hybrid', driver('hybrid', 10_000, 5, 9_000)), abRun(p, true, 'hybrid', driver('hybrid', p === 'tracepoint' ? tpIops : 10_000, 5, 9_000)),
        abRun(p, false, 'poll', driver('poll', 20_000, 8, 0)), abRun(p, true, 'poll', driver('poll', 20_000, 8, 0)),
      ]),
    ];
    return check4(new SessionRuns(session(ru)), SC);
  };
  it('passes when the paths agree and nothing moved', () => {
    const bad = mk(2, 10_000).filter((c) => !c.pass);
    expect(bad).toEqual([]);
  });
  it('fails off-CPU totals 12% apart (±10%) and IOPS 6% up under the tracepoint path (±5%)', () => {
    expect(find(mk(1.76, 10_000), 'sleep (off-CPU) time').pass).toBe(false);
    expect(find(mk(1.85, 10_000), 'sleep (off-CPU) time').pass).toBe(true);
    expect(find(mk(2, 10_600), 'hybrid under tracepoint vs untraced: IOPS').pass).toBe(false);
    expect(find(mk(2, 10_400), 'hybrid under tracepoint vs untraced: IOPS').pass).toBe(true);
  });
});

describe('check 4 premise: the untraced runs repeat', () => {
  const mk = (secondUntracedIos: number) => check4(new SessionRuns(session([
    abRun('fentry', false, 'hybrid', driver('hybrid', 10_000, 5, 9_000), 0), abRun('fentry', true, 'hybrid', driver('hybrid', 10_000, 5, 9_000), 0),
    abRun('fentry', true, 'hybrid', driver('hybrid', 10_000, 5, 9_000), 1), abRun('fentry', false, 'hybrid', driver('hybrid', secondUntracedIos, 5, 9_000), 1),
  ])), SC);
  it('judges traced vs untraced when the untraced runs agree', () => {
    const c = find(mk(10_100), 'hybrid under fentry vs untraced: IOPS');
    expect(c.skipped).toBeUndefined();
    expect(c.measured).toMatch(/untraced runs: 2, spread IOPS \+1\.0%/);
  });
  it('is skipped, with the spread, when the untraced runs differ by more than the bound', () => {
    expect(find(mk(11_000), 'hybrid under fentry vs untraced: IOPS').skipped).toMatch(/2 untraced runs of this boot differ by \+10\.0% in IOPS/);
  });
});

describe('check 5 (model)', () => {
  const mk = (o: { pred?: number; selfError?: number; meanDS?: number; classicMeanS?: number; overslept?: number; identified?: number }) => check5(new SessionRuns(session([
    withDevice(run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, classicPerIo: o.pred ?? 400e-6,
      selfError: o.selfError ?? 0.02, meanDS: o.meanDS ?? 52e-6, overslept: o.overslept ?? 1_000, spun: 10_000 - (o.overslept ?? 1_000),
      ...(o.identified !== undefined ? { identified: o.identified } : {}) }), 50e-6),
    withDevice(run('fentry', 'poll', driver('poll', 20_000, 8, 0), { polled: 20_000, sleeps: 0, spinS: 7 }), o.classicMeanS ?? 50e-6),
  ])), SC);
  it('compares the prediction from the hybrid run with the classic run of the same repetition (±10%)', () => {
    expect(find(mk({ pred: 400e-6 * 1.09 }), 'predicts classic').pass).toBe(true);
    expect(find(mk({ pred: 400e-6 * 0.89 }), 'predicts classic').pass).toBe(false);
  });
  it('checks the self-check and the mean device time against the device (±10%)', () => {
    expect(find(mk({ selfError: 0.09 }), 'self-check').pass).toBe(true);
    expect(find(mk({ selfError: -0.11 }), 'self-check').pass).toBe(false);
    expect(find(mk({ meanDS: 54e-6 }), 'mean device time').pass).toBe(true); // +8%
    expect(find(mk({ meanDS: 56e-6 }), 'mean device time').pass).toBe(false); // +12%
  });
  it('passes E[D] and the classic prediction outside the bound only where the exporter flags them not identified, and says so', () => {
    const flagged = mk({ meanDS: 40e-6, pred: 400e-6 * 0.78, overslept: 9_995, identified: 0 });
    expect(find(flagged, 'mean device time').pass).toBe(true);
    expect(find(flagged, 'mean device time').measured).toMatch(/\(-20\.0%; the exporter flags it not identified \(hybridpoll_model_device_time_identified 0\): not judged\)/);
    expect(find(flagged, 'predicts classic').pass).toBe(true);
    expect(find(flagged, 'predicts classic').measured).toMatch(/not identified .*: not judged$/);
    // identified (1) or not exported: judged
    for (const identified of [1, undefined]) {
      const judged = mk({ meanDS: 40e-6, pred: 400e-6 * 0.78, ...(identified !== undefined ? { identified } : {}) });
      expect(find(judged, 'mean device time').pass).toBe(false);
      expect(find(judged, 'mean device time').measured).toMatch(identified ? /judged: the exporter flags it identified/ : /judged: no identification flag/);
      expect(find(judged, 'predicts classic').pass).toBe(false);
    }
    // flagged but within the bound: passes, the flag printed
    expect(find(mk({ meanDS: 52e-6, identified: 0 }), 'mean device time').measured).toMatch(/flags it not identified[^:]*\)$/);
  });
  it('judges deeper runs by the model at depth, with the exporter\'s depth against the driver\'s (±5%)', () => {
    const deep = (e: Partial<Exp>) => check5(new SessionRuns(session([run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, classicPerIo: 400e-6, selfError: 0.04, ...e })])), { ...SC, qd: 4 });
    const at = deep({ inFlight: 3.9, depth: 'simulation' });
    expect(find(at, 'queue depth').pass).toBe(true);
    expect(find(at, 'self-check').pass).toBe(true);
    expect(find(at, 'self-check').skipped).toBeUndefined();
    expect(find(deep({ inFlight: 3.7, depth: 'simulation' }), 'queue depth').pass).toBe(false);
    expect(find(deep({ inFlight: 4, depth: 'simulation', selfError: 0.2 }), 'self-check').pass).toBe(false);
  });
  it('skips the model rows of a deeper run the exporter modelled as QD1 (a loader without the depth counters), and fails its depth row', () => {
    const old = check5(new SessionRuns(session([run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, classicPerIo: 400e-6, selfError: 5 })])), { ...SC, qd: 4 });
    expect(find(old, 'self-check').skipped).toMatch(/not evaluate the model at depth.*absent/);
    expect(find(old, 'queue depth').pass).toBe(false);
    expect(find(old, 'efficiency').skipped).toBeUndefined();
  });
  it("checks the exporter's wasted CPU where the best sleep is 0 against the two measured runs (±10%, or flagged), and a classic run's as 0", () => {
    // hybrid run 40 µs/IO against the classic run's 50 (1 s of spin over 20,000 I/Os): −10 µs/IO wasted
    const wasted = (o: { bestPerIo: number; identified?: number; classicWasted?: number; classicSleepS?: number; optimalS?: number }) => find(check5(new SessionRuns(session([
      run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, measuredPerIo: 40e-6, bestPerIo: o.bestPerIo, optimalS: o.optimalS ?? 0, eta: null, inFlight: 4, depth: 'simulation', selfError: 0, ...(o.identified !== undefined ? { identified: o.identified } : {}) }),
      run('fentry', 'poll', driver('poll', 20_000, 8, 0), { polled: 20_000, sleeps: 0, spinS: 1, measuredPerIo: 50e-6, optimalS: 0, currentSleepS: o.classicSleepS ?? 0, wastedCores: o.classicWasted ?? 0 }),
    ])), { ...SC, qd: 4 }), 'wasted CPU per I/O');
    expect(wasted({ bestPerIo: 50.5e-6 }).pass).toBe(true); // −10.5 against −10: +5 %
    expect(wasted({ bestPerIo: 52e-6 }).pass).toBe(false); // +20 %
    expect(wasted({ bestPerIo: 52e-6, identified: 0 }).pass).toBe(true); // the exporter says it does not know
    expect(wasted({ bestPerIo: 52e-6, identified: 0 }).measured).toMatch(/not identified.*not judged/);
    // a classic run with the best sleep 0 runs the best policy: any waste fails, unless its window held sleeps
    expect(wasted({ bestPerIo: 50e-6, classicWasted: 0.002 }).pass).toBe(false);
    expect(wasted({ bestPerIo: 50e-6, classicWasted: 0.002, classicSleepS: 150e-6 }).pass).toBe(true);
    // where the best sleep is not 0 no measured run is at it
    expect(wasted({ bestPerIo: 30e-6, optimalS: 20e-6, classicWasted: 0.002, classicSleepS: 150e-6 }).skipped).toMatch(/no run whose best static sleep is 0/);
  });

  it("checks the exporter's η against η from the two measured runs and the model's best (±10%), and skips it where η has no value", () => {
    // classic run 50 µs/IO, hybrid run 40, the model's best 10: η = (50 − 40) / (50 − 10) = 0.25
    const eta = (v: number | null, more: Partial<Exp> = {}, qd = 1) => find(check5(new SessionRuns(session([
      run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, measuredPerIo: 40e-6, bestPerIo: 10e-6, optimalS: 30e-6, eta: v, inFlight: qd, depth: qd > 1 ? 'simulation' : 'qd1', ...more }),
      // the classic run's own spin, 1 s over 20,000 I/Os; its window gauge reached back into the hybrid run
      run('fentry', 'poll', driver('poll', 20_000, 8, 0), { polled: 20_000, sleeps: 0, spinS: 1, measuredPerIo: 46e-6 }),
    ])), { ...SC, qd }), 'η');
    expect(eta(0.26).pass).toBe(true); // +4%
    expect(eta(0.26).measured).toMatch(/η 0\.260 vs \(classic run 50\.00 µs − hybrid run 40\.00 µs\)/);
    expect(eta(0.373).pass).toBe(false); // +49%: the classic term without the loop's start and reaping
    expect(eta(null).pass).toBe(false);
    const none = eta(null, { optimalS: 0, bestPerIo: 40e-6 }, 4);
    expect(none.skipped).toMatch(/best static sleep is 0/);
  });

  it('fails where a scraped run ends without the model\'s figures for its device, or a run that follows one starts without them', () => {
    const figures = (after: boolean, before: boolean) => {
      const hy = run('fentry', 'hybrid', driver('hybrid', 10_000, 5, 9_000), { polled: 10_000, sleeps: 9_999, spinS: 1, depth: 'qd1' });
      const cl = run('fentry', 'poll', driver('poll', 20_000, 8, 0), { polled: 20_000, sleeps: 0, spinS: 1, ...(after ? { depth: 'qd1' as const } : {}) });
      // the scrape before the classic run: the window holds the hybrid run and the warm-up
      cl.before = before ? scrape({ polled: 10_200, sleeps: 9_999, spinS: 1, depth: 'qd1' }) : scrape({ polled: 10_200, sleeps: 9_999, spinS: 1 });
      return find(check5(new SessionRuns(session([hy, cl])), SC), 'every scraped run');
    };
    expect(figures(true, true).pass).toBe(true);
    expect(figures(true, true).measured).toBe('fentry hybrid: after censored_km; fentry poll: before censored_km, after censored_km');
    expect(figures(false, true).pass).toBe(false);
    expect(figures(false, true).measured).toMatch(/fentry poll: before censored_km, after none/);
    expect(figures(true, false).pass).toBe(false);
    expect(figures(true, false).measured).toMatch(/fentry poll: before none, after censored_km/);
  });

  it('is not gated on its premises: it shows them, and says when one is violated', () => {
    const c = find(mk({}), 'predicts classic');
    expect(c.skipped).toBeUndefined();
    expect(c.measured).toMatch(/premises hold/);
    expect(find(mk({ classicMeanS: 55e-6 }), 'predicts classic').measured).toMatch(/VIOLATED.*D depends on the poller/);
    expect(find(mk({ overslept: 8_000 }), 'predicts classic').measured).toMatch(/80%.*F_D not measured/);
  });
});

it('a session without exporter data fails every check instead of passing vacuously', () => {
  const cs = allChecks(session([run('untraced', 'hybrid', driver('hybrid', 10_000, 5, 9_000)), run('untraced', 'poll', driver('poll', 10_000, 8, 0))]));
  expect(cs.filter((c) => c.pass).map((c) => c.title)).toEqual([]);
});
