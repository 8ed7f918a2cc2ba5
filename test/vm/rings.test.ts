// The rings checks' arithmetic (test/vm/lib/rings.ts) and the merge of processes side by side
// (test/vm/lib/drivers.ts) on synthetic runs, no VM: each bound passes just inside and fails just
// outside.
import { describe, expect, it } from 'vitest';
import { allChecks, SessionRuns, type CheckResult } from './lib/checks.js';
import { mergeDrivers } from './lib/drivers.js';
import { checkRings, checkSharedRing } from './lib/rings.js';
import type { DriverResult, PollMode, RunRecord, Scenario, Session } from './lib/session.js';

function driver(mode: PollMode, pid: number, ios: number, waitS: number, deviceIos?: number[]): DriverResult {
  return {
    mode, flags: 0, qd: 1, bs: 4096, device: '/dev/hpsim7', pid, ios, ...(deviceIos ? { device_ios: deviceIos } : {}), wall_s: 2, iops: ios / 2,
    lat_us: { mean: 50, p50: 50, p90: 50, p99: 60, p999: 70, max: 80 },
    cpu: { exec_s: waitS * 1.1, run_delay_s: 0, timeslices: 1, utime_s: 0, stime_s: waitS, util: (waitS * 1.1) / 2, per_io_us: ((waitS * 1.1) / ios) * 1e6, wait_s: waitS, wait_calls: ios, empty_enter_ns: 0 },
    ctxsw: { voluntary: mode === 'hybrid' ? ios : 0, involuntary: 0 },
    cpus: { on: [1, 1], task_s: [0, 0] },
  };
}

describe('mergeDrivers', () => {
  it('sums counts, CPU and switches, takes IOPS over the longest run, and keeps each process', () => {
    const a = driver('hybrid', 11, 4000, 0.1);
    const b = { ...driver('hybrid', 12, 4000, 0.3), wall_s: 4, lat_us: { mean: 100, p50: 100, p90: 100, p99: 100, p999: 100, max: 100 } };
    b.cpu.empty_enter_ns = 1000;
    a.cpu.empty_enter_ns = 3000;
    const m = mergeDrivers([a, b]);
    expect(m.ios).toBe(8000);
    expect(m.iops).toBe(2000);
    expect(m.cpu.wait_s).toBeCloseTo(0.4, 12);
    expect(m.cpu.per_io_us).toBeCloseTo((0.44 / 8000) * 1e6, 9);
    expect(m.cpu.empty_enter_ns).toBe(2000);
    expect(m.ctxsw.voluntary).toBe(8000);
    expect(m.lat_us.mean).toBe(75);
    expect(m.cpus).toBeUndefined();
    expect(m.procs?.map((p) => p.pid)).toEqual([11, 12]);
    expect(mergeDrivers([a])).toBe(a);
    expect(() => mergeDrivers([])).toThrow(/no results/);
  });
});

const TWO: Scenario = { id: 'rings2', title: 't', serial: 'hpsim6', profile: 'fixed:50000', qd: 1, bs: 4096, ios: 4000, model: true, procs: 2 };
const RING: Scenario = {
  id: 'ring2dev', title: 't', serial: 'hpsim7', profile: 'fixed:20000', qd: 2, bs: 4096, ios: 4000, model: true,
  ring: [{ serial: 'hpsim7', profile: 'fixed:20000' }, { serial: 'hpsim8', profile: 'fixed:100000' }],
};

function session(scenarios: Scenario[], runs: RunRecord[]): Session {
  const dev = (name: string, majmin: string) => ({ name, serial: name, majmin, io_poll: '1', io_poll_delay: '-1', max_sectors_kb: '128', hctx: {} });
  return {
    startedAt: '', wallSeconds: 0, accel: 'tcg', accelWhy: '', bootSeconds: 0, scenarios, runs,
    exporterArgs: { fentry: [], tracepoint: [] },
    images: { suite: 'trixie', kernel: '', initrd: '', root: '', project: '', kernelRelease: '', loader: true, rootKey: '', projectKey: '' },
    info: { release: '', cmdline: '', nproc: 2, pollQueuesParam: '2', node: '', loader: true, uptime: 0, devices: [dev('hpsim6', '250:6'), dev('hpsim7', '250:7'), dev('hpsim8', '250:8')] },
  };
}

interface RingSpec { ring: string; pid: number; hybrid: boolean; hptS?: number; polled?: number; cpuS?: number; loops?: number }

/** ring_info per process, the ring's gauge and counters once per ring (as the exporter writes them) */
const ringLines = (rings: RingSpec[]) => [
  ...rings.map((r) => `hybridpoll_ring_info{ring="${r.ring}",pid="${r.pid}",comm="hpdrive",hybrid="${r.hybrid ? 1 : 0}"} 1`),
  ...[...new Map(rings.map((r) => [r.ring, r])).values()].flatMap((r) => [
    ...(r.hptS !== undefined ? [`hybridpoll_ring_hybrid_poll_time_seconds{ring="${r.ring}"} ${r.hptS}`] : []),
    ...(r.polled !== undefined ? [`hybridpoll_ring_polled_ios_total{ring="${r.ring}"} ${r.polled}`, `hybridpoll_ring_poll_loops_total{ring="${r.ring}"} ${r.loops ?? r.polled}`] : []),
    ...(r.cpuS !== undefined ? [`hybridpoll_ring_poll_cpu_seconds_total{ring="${r.ring}"} ${r.cpuS}`] : []),
  ]),
];

describe('several rings on one device', () => {
  const run = (mode: PollMode, rings: RingSpec[], shared = 0): RunRecord => ({
    scenario: TWO.id, tracing: 'fentry', mode, rep: 0, device: 'hpsim6', before: '',
    after: [`hybridpoll_polled_ios_total{device="hpsim6"} 8000`, `hybridpoll_model_ring_shared{device="hpsim6"} ${shared}`, ...ringLines(rings)].join('\n') + '\n',
    driver: mergeDrivers([driver(mode, 11, 4000, 0.1), driver(mode, 12, 4000, 0.1)]),
  });
  const rows = (runs: RunRecord[]) => checkRings(new SessionRuns(session([TWO], runs)), TWO);

  // each process: 4000 I/Os and 0.1 s of polling (25 µs/IO), no syscall residue, no BPF run time
  const whole = { polled: 4000, cpuS: 0.1 };
  it('passes with one ring per process in its mode, hybrid ones with their own hybrid_poll_time, each ring\'s count and CPU its process\'s', () => {
    const r = rows([
      run('hybrid', [{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6, ...whole }, { ring: 'b', pid: 12, hybrid: true, hptS: 28e-6, ...whole }]),
      run('poll', [{ ring: 'c', pid: 11, hybrid: false, ...whole }, { ring: 'd', pid: 12, hybrid: false, ...whole }]),
    ]);
    expect(r.map((x) => `${x.id} ${x.pass}`)).toEqual(['R rings true', 'R rings true', 'R own device true', 'R ring count true', 'R ring cpu true', 'R own device true', 'R ring count true', 'R ring cpu true']);
    // a device of its own taken for one a ring over several devices polls: its model would be withheld
    const taken = rows([run('hybrid', [{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6, ...whole }, { ring: 'b', pid: 12, hybrid: true, hptS: 28e-6, ...whole }], 1)]);
    expect(taken.find((x) => x.id === 'R own device' && x.title.startsWith('hybrid'))).toMatchObject({ pass: false, measured: 'ring_shared 1' });
    expect(r[1]!.measured).toMatch(/pid 11: ring a hybrid=1 hpt 30\.00 µs, pid 12: ring b/);
  });

  it("fails a ring whose count is 0.6 % short or whose CPU is 6 % off its process's (QD1: ±5 %), and one without its counters", () => {
    const poll = run('poll', [{ ring: 'c', pid: 11, hybrid: false, ...whole }, { ring: 'd', pid: 12, hybrid: false, ...whole }]);
    const hyb = (b: Partial<RingSpec>) => rows([run('hybrid', [{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6, ...whole }, { ring: 'b', pid: 12, hybrid: true, hptS: 28e-6, ...whole, ...b }]), poll]);
    const row = (cs: CheckResult[], id: string) => cs.find((c) => c.id === id && c.title.startsWith('hybrid'))!;
    expect(row(hyb({ polled: 3976, loops: 4000 }), 'R ring count')).toMatchObject({ pass: false, measured: expect.stringMatching(/pid 12: ring 3976 vs driver 4000 \(-0\.6%\)/) });
    expect(row(hyb({ cpuS: 0.106 }), 'R ring cpu')).toMatchObject({ pass: false, measured: expect.stringMatching(/pid 12: ring 26\.50 µs\/IO .* \(\+6\.0%\)/) });
    expect(row(hyb({ cpuS: 0.104 }), 'R ring cpu').pass).toBe(true);
    expect(row(hyb({ cpuS: undefined }), 'R ring cpu').pass).toBe(false);
  });

  it("fails a process without a ring, two processes on one ring, a ring in the wrong mode or without its hpt", () => {
    const poll = run('poll', [{ ring: 'c', pid: 11, hybrid: false }, { ring: 'd', pid: 12, hybrid: false }]);
    const hyb = (rings: RingSpec[]) => rows([run('hybrid', rings), poll])[1]!;
    expect(hyb([{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6 }])).toMatchObject({ pass: false, measured: expect.stringMatching(/pid 12: no ring_info/) });
    expect(hyb([{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6 }, { ring: 'a', pid: 12, hybrid: true, hptS: 30e-6 }]).pass).toBe(false);
    expect(hyb([{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6 }, { ring: 'b', pid: 12, hybrid: false }]).pass).toBe(false);
    expect(hyb([{ ring: 'a', pid: 11, hybrid: true, hptS: 30e-6 }, { ring: 'b', pid: 12, hybrid: true }]).pass).toBe(false);
    expect(rows([poll])[1]).toMatchObject({ pass: false, measured: 'no runs' });
  });

  it('replace check 4 in allChecks (no A/B runs side by side)', () => {
    const ids = allChecks(session([TWO], [run('hybrid', []), run('poll', [])])).map((c) => c.id);
    expect(ids).toContain('R rings');
    expect(ids.some((id) => id.startsWith('4 '))).toBe(false);
  });
});

describe('one ring over two devices', () => {
  const stats = (n: number, meanS: number) => ({ before: 'issued=0 service_ns_sum=0', after: `issued=${n} service_ns_sum=${Math.round(n * meanS * 1e9)}` });
  /** per device: polled I/Os, requested sleep, ring_shared, the ring's self-check, its classic row (s/IO), a model figure left out */
  interface Dev { polled: number; reqS?: number; shared?: number; self?: number; classicS?: number; missing?: string }
  const FIGURES = ['wasted_cpu_cores', 'optimal_sleep_seconds', 'measured_cpu_seconds_per_io', 'model_cpu_error_ratio'];
  /** ring: the one ring's own counters (default: every I/O reaped, the whole wait phase its CPU) */
  const run = (mode: PollMode, waitS: number, devs: [Dev, Dev], deviceIos: [number, number] = [4000, 4000], ring: Partial<RingSpec> = {}): RunRecord => {
    const lines = devs.flatMap((d, i) => {
      const l = `{device="hpsim${7 + i}"}`;
      return [
        `hybridpoll_polled_ios_total${l} ${d.polled}`,
        `hybridpoll_model_ring_shared${l} ${d.shared ?? 1}`,
        ...(d.reqS !== undefined ? [`hybridpoll_poll_sleep_requested_seconds_sum${l} ${d.reqS * d.polled}`, `hybridpoll_poll_sleep_requested_seconds_count${l} ${d.polled}`, `hybridpoll_poll_sleeps_total${l} ${d.polled}`] : []),
        ...FIGURES.filter((f) => f !== d.missing).map((f) => `hybridpoll_${f}${l} ${f === 'model_cpu_error_ratio' ? d.self ?? 0.02 : 1e-5}`),
        `hybridpoll_policy_cpu_seconds_per_io{device="hpsim${7 + i}",policy="classic"} ${d.classicS ?? 60e-6}`,
      ];
    });
    lines.push(...ringLines([{ ring: 'r', pid: 11, hybrid: mode === 'hybrid', hptS: 16e-6, polled: deviceIos[0] + deviceIos[1], cpuS: waitS, ...ring }]));
    return {
      scenario: RING.id, tracing: 'fentry', mode, rep: 0, device: 'hpsim7', before: '', after: lines.join('\n') + '\n',
      driver: driver(mode, 11, deviceIos[0] + deviceIos[1], waitS, deviceIos),
      ringDevices: [{ device: 'hpsim7', hpsim: stats(deviceIos[0], 20e-6) }, { device: 'hpsim8', hpsim: stats(deviceIos[1], 100e-6) }],
    };
  };
  const hybridDevs: [Dev, Dev] = [{ polled: 4000, reqS: 8e-6 }, { polled: 4000, reqS: 8.5e-6 }];
  const classicDevs: [Dev, Dev] = [{ polled: 4000 }, { polled: 4000 }];
  const rows = (runs: RunRecord[]) => checkSharedRing(new SessionRuns(session([RING], runs)), RING);
  const get = (cs: CheckResult[], id: string, mode?: string) => cs.find((c) => c.id === id && (!mode || c.title.startsWith(mode)))!;
  const both = (h: RunRecord = run('hybrid', 0.2, hybridDevs)) => rows([h, run('poll', 0.48, classicDevs)]);

  it("passes when each device is counted, the ring's count and CPU are its poller's, the sleep is shared and the ring's model holds", () => {
    const r = both();
    expect(r.filter((c) => !c.pass).map((c) => `${c.id} ${c.title}: ${c.measured}`)).toEqual([]);
    expect(r.map((c) => c.id)).toEqual(['R count', 'R ring count', 'R ring cpu', 'R self-check', 'R count', 'R ring count', 'R ring cpu', 'R self-check', 'R model', 'R shared sleep']);
    expect(get(r, 'R self-check', 'hybrid').measured).toBe('hpsim7: ring_shared 1, self-check +2.0% (measured 10.00 µs/IO); hpsim8: ring_shared 1, self-check +2.0% (measured 10.00 µs/IO)');
  });

  it('fails a device counted 0.6 % short, sleeps 16 % apart, a device not marked shared, a model figure missing, a self-check past 10 %', () => {
    expect(get(both(run('hybrid', 0.2, [{ ...hybridDevs[0], polled: 3976 }, hybridDevs[1]])), 'R count', 'hybrid').pass).toBe(false);
    expect(get(both(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], reqS: 8e-6 * 1.16 }])), 'R shared sleep').pass).toBe(false);
    expect(get(both(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], reqS: 8e-6 * 1.14 }])), 'R shared sleep').pass).toBe(true);
    expect(get(both(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], shared: 0 }])), 'R self-check', 'hybrid')).toMatchObject({ pass: false, measured: expect.stringMatching(/hpsim8: ring_shared 0/) });
    for (const missing of FIGURES) {
      expect(get(both(run('hybrid', 0.2, [{ ...hybridDevs[0], missing }, hybridDevs[1]])), 'R self-check', 'hybrid'), missing).toMatchObject({ pass: false, measured: expect.stringMatching(/hpsim7: ring_shared 1, missing: /) });
    }
    expect(get(both(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], self: -0.101 }])), 'R self-check', 'hybrid').pass).toBe(false);
    expect(get(both(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], self: -0.099 }])), 'R self-check', 'hybrid').pass).toBe(true);
  });

  it("predicts the ring's classic CPU from each device's classic row over its I/Os (±10 %)", () => {
    // classic run: 0.48 s of polling over 8000 I/Os = 60 µs/IO; the rows 40 and 80 µs over 4000 I/Os each
    const predict = (fast: number, slow: number) => get(both(run('hybrid', 0.2, [{ ...hybridDevs[0], classicS: fast }, { ...hybridDevs[1], classicS: slow }])), 'R model');
    expect(predict(40e-6, 80e-6)).toMatchObject({ pass: true, measured: expect.stringMatching(/^predicted 60\.00 µs\/IO .* vs classic run's polling CPU 60\.00 µs\/IO \(\+0\.0%\)$/) });
    expect(predict(40e-6 * 1.099, 80e-6 * 1.099).pass).toBe(true);
    expect(predict(40e-6 * 1.101, 80e-6 * 1.101).pass).toBe(false);
    expect(predict(40e-6, 80e-6 * 0.8).pass).toBe(false); // weighted by I/Os: 52 µs, −13 %
  });

  it("checks the ring's own count and CPU against the poller's (±0.5 %, ±10 %)", () => {
    const ring = (r: Partial<RingSpec>) => both(run('hybrid', 0.2, hybridDevs, [4000, 4000], r));
    expect(get(ring({ polled: 7950 }), 'R ring count', 'hybrid')).toMatchObject({ pass: false, measured: 'ring 7950 vs driver 8000 (-0.6%)' });
    expect(get(ring({ cpuS: 0.2 * 1.11 }), 'R ring cpu', 'hybrid')).toMatchObject({ pass: false, measured: expect.stringMatching(/ring 27\.75 µs\/IO .*vs poller wait phase 25\.00 µs\/IO \(\+11\.0%\)/) });
    expect(get(ring({ cpuS: 0.2 * 0.91 }), 'R ring cpu', 'hybrid').pass).toBe(true);
    expect(get(ring({ cpuS: undefined }), 'R ring cpu', 'hybrid').pass).toBe(false); // a loader without the ring's loops
  });

  it('brackets the loop-edge BPF between the loops\' share of the passes and all of it', () => {
    // 0.8 ms of iopoll programs over 4000 passes, 1000 loops: the edge is 0.2 … 0.8 ms
    const edged = (waitS: number, ringCpuS: number): RunRecord => {
      const r = run('poll', waitS, classicDevs, [4000, 4000], { cpuS: ringCpuS, loops: 1000 });
      const progs = [`hybridpoll_bpf_program_run_seconds_total{program="iopoll_enter"} 0.0008`, `hybridpoll_bpf_program_runs_total{program="iopoll_enter"} 4000`];
      return { ...r, after: r.after + progs.join('\n') + '\n' };
    };
    const cpu = (waitS: number) => get(rows([run('hybrid', 0.2, hybridDevs), edged(waitS, 0.48)]), 'R ring cpu', 'classic');
    // the ring's 0.48 s plus 0.2 … 0.8 ms: inside the bracket reads 0
    expect(cpu(0.4805)).toMatchObject({ pass: true, measured: expect.stringMatching(/1000 loops of 4000 passes.*\(\+0\.0%\)/) });
    expect(cpu(0.4802 / 1.099).pass).toBe(true);
    expect(cpu(0.4802 / 1.101).pass).toBe(false);
    expect(cpu(0.4808 / 0.899).pass).toBe(false);
  });

  it('fails every row without runs', () => {
    expect(rows([]).every((c) => !c.pass)).toBe(true);
  });

  it('judges the tracepoint path\'s runs, where there are any, by the counts and the devices marked and modelled (it sees no rings)', () => {
    const tp = (r: RunRecord): RunRecord => ({ ...r, tracing: 'tracepoint' });
    const r = rows([run('hybrid', 0.2, hybridDevs), run('poll', 0.48, classicDevs), tp(run('hybrid', 0.2, hybridDevs)), tp(run('poll', 0.48, classicDevs))]);
    expect(r.filter((c) => c.title.startsWith('tracepoint')).map((c) => `${c.id}: ${c.title.split(':')[0]}`)).toEqual([
      'R count: tracepoint classic', 'R marked: tracepoint classic', 'R count: tracepoint hybrid', 'R marked: tracepoint hybrid',
    ]);
    expect(r.every((c) => c.pass)).toBe(true);
    const unmarked = rows([run('hybrid', 0.2, hybridDevs), run('poll', 0.48, classicDevs), tp(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], shared: 0 }]))]);
    expect(get(unmarked, 'R marked', 'tracepoint hybrid').pass).toBe(false);
    // the self-check is shown there, not judged (no loop costs on that path)
    const off = rows([run('hybrid', 0.2, hybridDevs), run('poll', 0.48, classicDevs), tp(run('hybrid', 0.2, [hybridDevs[0], { ...hybridDevs[1], self: -0.3 }]))]);
    expect(get(off, 'R marked', 'tracepoint hybrid')).toMatchObject({ pass: true, measured: expect.stringMatching(/self-check -30\.0%/) });
  });
});
