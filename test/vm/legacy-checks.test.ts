// The legacy session's arithmetic on synthetic runs (no VM): poll_stat over a run, fio's JSON, the
// fixed delay, and each legacy check passing just inside its bound and failing just outside.
import { describe, expect, it } from 'vitest';
import { legacyChecks, legacyFigures, legacyTable } from './lib/legacy-checks.js';
import { fixedDelayUs, fromFio, pollStatMeanOverRun, type DelayMode, type LegacyRun, type LegacySession, type PollStatWatch } from './lib/legacy.js';

const stat = (meanNs: number, samples = 100) =>
  ['read  (512 Bytes): samples=0', 'write (512 Bytes): samples=0', `read  (4096 Bytes): samples=${samples}, mean=${meanNs}, min=${meanNs / 2}, max=${meanNs * 2}`, 'write (4096 Bytes): samples=0'].join('\n');

describe('pollStatMeanOverRun', () => {
  it("weights each content's mean by the samples of the window that follows it (the I/Os that slept on it)", () => {
    const w: PollStatWatch = { samples: [{ t: 0, text: stat(400_000, 50) }, { t: 100, text: stat(800_000, 100) }, { t: 200, text: stat(1_000_000, 25) }], end: 400 };
    // 400 µs was current for the next window's 100 I/Os, 800 µs for the 25 after; the last has no successor
    expect(pollStatMeanOverRun(w)).toEqual({ meanSeconds: expect.closeTo((0.0004 * 100 + 0.0008 * 25) / 125, 12), ios: 125 });
  });
  it('skips contents without a read 4 KiB mean and has no value without any', () => {
    expect(pollStatMeanOverRun({ samples: [{ t: 0, text: 'read  (4096 Bytes): samples=0' }, { t: 50, text: stat(1000, 7) }, { t: 150, text: stat(2000, 3) }], end: 150 }))
      .toEqual({ meanSeconds: expect.closeTo(1e-6, 12), ios: 3 });
    expect(pollStatMeanOverRun({ samples: [{ t: 0, text: null }], end: 10 })).toEqual({ meanSeconds: undefined, ios: 0 });
  });
});

describe('fio and the fixed delay', () => {
  it('fromFio: usr+sys over the job runtime, read counts and latency in µs', () => {
    const p = fromFio({ jobs: [{ job_runtime: 6000, usr_cpu: 5, sys_cpu: 30, ctx: 4000, error: 0, read: { total_ios: 4144, iops: 690.6, clat_ns: { mean: 1_430_000, percentile: { '50.000000': 1_400_000, '99.000000': 2_000_000 } } } }] });
    expect(p).toMatchObject({ ios: 4144, iops: 690.6, wallSeconds: 6, voluntarySwitches: 4000, latUs: { mean: 1430, p50: 1400, p99: 2000 } });
    expect(p.cpuSeconds).toBeCloseTo(2.1, 12);
    expect(p.waitCpuSeconds).toBeUndefined();
  });
  it('fromFio refuses a failed job', () => {
    expect(() => fromFio({ jobs: [{ job_runtime: 1, usr_cpu: 0, sys_cpu: 0, ctx: 0, error: 5, read: { total_ios: 0, iops: 0, clat_ns: { mean: 0 } } }] })).toThrow(/job error 5/);
  });
  it('fixedDelayUs is ¾ of the adaptive mean, in whole µs, and needs a mean', () => {
    expect(fixedDelayUs(435e-6)).toBe(326);
    expect(fixedDelayUs(0.4e-6)).toBe(1);
    expect(() => fixedDelayUs(undefined)).toThrow(/no read 4k poll_stat mean/);
  });
});

interface Fig {
  ios: number;
  polled: number;
  sleeps: number;
  reqMeanS: number;
  offcpuCount: number;
  vcsw: number;
  success: number;
  measuredPerIo: number;
  waitPerIo: number;
  classicPerIo?: number;
  halfMeanPerIo?: number;
  pollStatMeanS: number;
  ioLatS?: number;
  selfError?: number;
  foundSlept?: number;
  devSpun?: number;
  /** rq_complete's run time over the run (bpf_stats), seconds */
  rqCompleteSeconds?: number;
}

function run(delay: DelayMode, f: Fig): LegacyRun {
  const d = 'device="nvme1n1"';
  const ioPollDelay = delay === 'classic' ? -1 : delay === 'adaptive' ? 0 : 326;
  const after = [
    'hybridpoll_kernel_era_info{era="blkmq_hybrid",evidence="btf",release="5.10.0-32-amd64"} 1',
    'hybridpoll_bpf_poll_path_info{path="tracepoint"} 1',
    ...['rq_issue', 'rq_complete', 'hrtimer_start', 'sched_switch', 'sched_wakeup', 'task_exit'].map((p) => `hybridpoll_bpf_program_attached{program="${p}"} 1`),
    'hybridpoll_bpf_program_attached{program="iopoll_enter"} 0',
    `hybridpoll_device_io_poll_delay{${d}} ${ioPollDelay}`,
    `hybridpoll_polled_ios_total{${d}} ${f.polled}`,
    `hybridpoll_poll_sleeps_total{${d}} ${f.sleeps}`,
    `hybridpoll_poll_sleep_requested_seconds_count{${d}} ${f.sleeps}`,
    `hybridpoll_poll_sleep_requested_seconds_sum{${d}} ${f.sleeps * f.reqMeanS}`,
    `hybridpoll_poll_offcpu_seconds_count{${d}} ${f.offcpuCount}`,
    `hybridpoll_poll_offcpu_seconds_sum{${d}} 1`,
    `hybridpoll_poll_stat_samples{${d},op="read",size_bytes="4096"} 100`,
    `hybridpoll_poll_stat_mean_seconds{${d},op="read",size_bytes="4096"} ${f.pollStatMeanS}`,
    `hybridpoll_hctx_poll_success_total{${d},hctx="hctx2"} ${f.success}`,
    `hybridpoll_hctx_poll_considered_total{${d},hctx="hctx2"} ${f.success}`,
    `hybridpoll_hctx_poll_invoked_total{${d},hctx="hctx2"} ${f.success}`,
    `hybridpoll_measured_cpu_seconds_per_io{${d}} ${f.measuredPerIo}`,
    `hybridpoll_model_cpu_error_ratio{${d}} ${f.selfError ?? 0.02}`,
    `hybridpoll_io_latency_seconds_count{${d}} ${f.polled}`,
    `hybridpoll_io_latency_seconds_sum{${d}} ${f.polled * (f.ioLatS ?? 1e-3)}`,
    `hybridpoll_poll_found_after_sleep_seconds_count{${d}} ${f.foundSlept ?? 0}`,
    `hybridpoll_poll_found_after_sleep_seconds_sum{${d}} 1`,
    `hybridpoll_poll_device_time_seconds_count{${d}} ${f.devSpun ?? 0}`,
    `hybridpoll_poll_device_time_seconds_sum{${d}} 1`,
    ...(f.rqCompleteSeconds !== undefined ? [`hybridpoll_bpf_program_run_seconds_total{program="rq_complete"} ${f.rqCompleteSeconds}`] : []),
    ...(f.classicPerIo !== undefined ? [`hybridpoll_policy_cpu_seconds_per_io{${d},policy="classic"} ${f.classicPerIo}`] : []),
    ...(f.halfMeanPerIo !== undefined ? [`hybridpoll_policy_cpu_seconds_per_io{${d},policy="blkmq_half_mean"} ${f.halfMeanPerIo}`] : []),
  ].join('\n');
  return {
    workload: 'hpdrive', delay, ioPollDelay, device: 'nvme1n1',
    poller: { ios: f.ios, iops: f.ios / 6, wallSeconds: 6, cpuSeconds: f.waitPerIo * f.ios * 1.5, waitCpuSeconds: f.waitPerIo * f.ios, syscallResidueSeconds: f.waitPerIo * f.ios * 0.01, voluntarySwitches: f.vcsw, latUs: { mean: 1000, p50: 1000, p99: 2000 } },
    raw: {}, before: '', after,
    pollStatWatch: { samples: [{ t: 0, text: stat(f.pollStatMeanS * 1e9) }, { t: 100, text: stat(f.pollStatMeanS * 1e9 * 3, f.ios) }], end: 6000 },
    exporterStartMs: 1, bpfReadySeconds: 1,
    exporterStop: { exit: { code: 0, signal: null }, log: '', bpfPrograms: [] },
  };
}

const good = (): Record<DelayMode, Fig> => ({
  classic: { ios: 6000, polled: 6000, sleeps: 0, reqMeanS: 0, offcpuCount: 0, vcsw: 0, success: 6000, measuredPerIo: 970e-6 * 0.99, waitPerIo: 970e-6, pollStatMeanS: 900e-6 },
  adaptive: { ios: 6000, polled: 6000, sleeps: 6000, reqMeanS: 450e-6, offcpuCount: 6000, vcsw: 6000, success: 6000, measuredPerIo: 160e-6 * 0.99, waitPerIo: 160e-6, classicPerIo: 970e-6, halfMeanPerIo: 160e-6, pollStatMeanS: 900e-6, ioLatS: 950e-6, foundSlept: 1000, devSpun: 5000 },
  fixed: { ios: 6000, polled: 6000, sleeps: 6000, reqMeanS: 326e-6, offcpuCount: 6000, vcsw: 6000, success: 6000, measuredPerIo: 190e-6 * 0.99, waitPerIo: 190e-6, pollStatMeanS: 900e-6 },
});

function checks(figs: Record<DelayMode, Fig>, accel = 'tcg') {
  const runs = (['classic', 'adaptive', 'fixed'] as const).map((d) => run(d, figs[d]));
  return legacyChecks(runs.map(legacyFigures), 'hpdrive', accel);
}

const result = (cs: ReturnType<typeof checks>, id: string, title?: RegExp) => {
  const c = cs.find((x) => x.id === id && (!title || title.test(x.title)));
  if (!c) throw new Error(`no check ${id}`);
  return c;
};

describe('legacy checks', () => {
  it('all pass on consistent figures', () => {
    const cs = checks(good());
    expect(cs.filter((c) => !c.pass).map((c) => `${c.id}: ${c.measured}`)).toEqual([]);
    expect(cs.map((c) => c.id)).toEqual(expect.arrayContaining(['L1 era', 'L1 bpf', 'L1 io_poll_delay', 'L1 poll_stat', 'L1 hctx io_poll', 'L2 count', 'L3 sleeps', 'L3 sleeps/IO', 'L3 switch-outs', 'L4 requested', 'L5 cpu', 'L6 model classic', 'L6 model ½ mean', 'Lcleanup']));
  });
  it('era: blkmq_hybrid from BTF only (debugfs evidence means the BTF read failed)', () => {
    const runs = (['classic', 'adaptive', 'fixed'] as const).map((d) => run(d, good()[d]));
    runs[1]!.after = runs[1]!.after.replace('evidence="btf"', 'evidence="debugfs"');
    const c = legacyChecks(runs.map(legacyFigures), 'hpdrive').find((x) => x.id === 'L1 era')!;
    expect(c.pass).toBe(false);
    expect(c.measured).toMatch(/adaptive: era=blkmq_hybrid \(debugfs\)/);
  });
  it('count: 1.9 % off passes, 2.1 % fails', () => {
    const g = good();
    g.adaptive.polled = 6000 * 1.019;
    expect(result(checks(g), 'L2 count').pass).toBe(true);
    g.adaptive.polled = 6000 * 1.021;
    expect(result(checks(g), 'L2 count').pass).toBe(false);
  });
  it('requested sleep: adaptive against ½ the poll_stat mean over the run, fixed against io_poll_delay', () => {
    const g = good();
    g.adaptive.reqMeanS = 450e-6 * 1.14;
    expect(result(checks(g), 'L4 requested', /adaptive/).pass).toBe(true);
    g.adaptive.reqMeanS = 450e-6 * 1.16;
    expect(result(checks(g), 'L4 requested', /adaptive/).pass).toBe(false);
    g.fixed.reqMeanS = 326e-6 * 0.84;
    expect(result(checks(g), 'L4 requested', /fixed/).pass).toBe(false);
  });
  it('cpu: every run within 10 %; the model within 15 % of the paired runs', () => {
    const g = good();
    g.classic.measuredPerIo = 970e-6 * 0.90; // + 1 % residue: −9 %
    expect(result(checks(g), 'L5 cpu').pass).toBe(true);
    g.classic.measuredPerIo = 970e-6 * 0.88;
    expect(result(checks(g), 'L5 cpu').pass).toBe(false);
    // rq_complete's run time comes after the busy window's end, inside the waiting call: added
    g.classic.rqCompleteSeconds = 970e-6 * 6000 * 0.02; // −12 % + 1 % + 2 %
    expect(result(checks(g), 'L5 cpu').pass).toBe(true);
    expect(result(checks(g), 'L5 cpu').measured).toMatch(/completion-edge BPF 19\.40 µs\/IO .*\(-9\.0%\) \[exporter alone -12\.0%/);
    const h = good();
    h.adaptive.classicPerIo = 970e-6 * 1.14;
    expect(result(checks(h), 'L6 model classic').pass).toBe(true);
    h.adaptive.classicPerIo = 970e-6 * 1.16;
    expect(result(checks(h), 'L6 model classic').pass).toBe(false);
    h.adaptive.halfMeanPerIo = 160e-6 * 0.84;
    expect(result(checks(h), 'L6 model ½ mean').pass).toBe(false);
  });
  it('model premises: skipped under TCG when the classic device was slower or most sleeps were censored; run under KVM', () => {
    expect(result(checks(good()), 'L6 model classic').skipped).toBeUndefined();
    const g = good();
    g.classic.ioLatS = 950e-6 * 1.16;
    expect(result(checks(g), 'L6 model classic').skipped).toMatch(/D depends on the poller/);
    expect(result(checks(g), 'L6 model ½ mean').skipped).toMatch(/D depends on the poller/);
    expect(result(checks(g, 'kvm'), 'L6 model classic').skipped).toBeUndefined();
    const h = good();
    h.adaptive.foundSlept = 5001;
    expect(result(checks(h), 'L6 model classic').skipped).toMatch(/F_D not measured/);
    const k = good();
    k.adaptive.selfError = 0.16;
    expect(result(checks(k), 'L6 model classic').skipped).toMatch(/does not reproduce the run it was fed/);
  });
  it('sleeps: none in classic mode, one per I/O otherwise', () => {
    const g = good();
    g.classic.sleeps = 1;
    g.fixed.sleeps = 6000 * 0.94;
    const cs = checks(g);
    expect(result(cs, 'L3 sleeps').pass).toBe(false);
    expect(result(cs, 'L3 sleeps/IO').pass).toBe(false);
  });
  it('the table has a row per run with the setting', () => {
    const runs = (['classic', 'adaptive', 'fixed'] as const).map((d) => run(d, good()[d]));
    const s = { runs } as unknown as LegacySession;
    const t = legacyTable(s).split('\n');
    expect(t).toHaveLength(5);
    expect(t[2]).toMatch(/^\| hpdrive \| −1 \(classic\) \| /);
    expect(t[4]).toMatch(/326 µs \(fixed\)/);
  });
});
