// The truth checks of the legacy-era session (issue 8), pure functions over its runs. Each run has
// its own exporter (its counters and model window hold that run alone); within-run checks compare
// the exporter with the poller of the same run, the model checks pair runs of one workload.
import { BOUNDS, relErr, type CheckResult } from './checks.js';
import { delta, histDelta, parseExposition, select, value, type HistDelta, type Scrape } from './prom.js';
import { pollStatMeanOverRun, type DelayMode, type LegacyRun, type LegacySession, type Workload } from './legacy.js';

export interface LegacyFigures {
  run: LegacyRun;
  era: string | undefined;
  /** how the era was detected: the product must choose by BTF */
  eraEvidence: string | undefined;
  pollPath: string | undefined;
  /** programs the exporter reports attached */
  attached: string[];
  ioPollDelayGauge: number | undefined;
  polledIos: number | undefined;
  sleeps: number | undefined;
  sleepRequested: HistDelta | undefined;
  offcpu: HistDelta | undefined;
  spin: HistDelta | undefined;
  /** issue → reaped of every I/O */
  ioLatency: HistDelta | undefined;
  /** slept I/Os already complete at wake-up (censored) and still pending (exact device time) */
  foundSlept: HistDelta | undefined;
  devSpun: HistDelta | undefined;
  /** debugfs poll_stat, read 4 KiB, after the run: samples and mean of the last 100 ms window */
  pollStat4k: { samples: number | undefined; mean: number | undefined };
  /** the read 4 KiB poll_stat mean the run's sleeps saw (per I/O, from the guest's 50 ms reads) */
  pollStatOverRun: { meanSeconds: number | undefined; ios: number };
  /** debugfs hctx*\/io_poll deltas over the run, summed over the device's hctxs */
  hctx: { considered: number | undefined; invoked: number | undefined; success: number | undefined };
  measuredCpuPerIo: number | undefined;
  /** the model's self-check: modelled cpu(current) against the measured CPU per I/O, − 1 */
  modelSelfError: number | undefined;
  model: { classic: number | undefined; halfMean: number | undefined; fixed: number | undefined };
  efficiency: number | undefined;
  currentSleep: number | undefined;
  optimalSleep: number | undefined;
  wastedCores: number | undefined;
  /** run time of BPF programs over the run (kernel.bpf_stats_enabled), by program label */
  programSeconds: Record<string, number>;
  /** the poller */
  cpuPerIo: number;
  waitCpuPerIo: number | undefined;
  cpuUtil: number;
}

function hctxDelta(b: Scrape, a: Scrape, name: string, device: string): number | undefined {
  const series = select(a, name, { device });
  if (!series.length) return undefined;
  return series.reduce((t, s) => t + (delta(b, a, name, { device, hctx: s.labels.hctx ?? '' }) ?? 0), 0);
}

export function legacyFigures(r: LegacyRun): LegacyFigures {
  const b = parseExposition(r.before);
  const a = parseExposition(r.after);
  const dev = { device: r.device };
  const p = r.poller;
  const ps = { ...dev, op: 'read', size_bytes: '4096' };
  return {
    run: r,
    era: select(a, 'hybridpoll_kernel_era_info')[0]?.labels.era,
    eraEvidence: select(a, 'hybridpoll_kernel_era_info')[0]?.labels.evidence,
    pollPath: select(a, 'hybridpoll_bpf_poll_path_info').find((s) => s.value === 1)?.labels.path,
    attached: select(a, 'hybridpoll_bpf_program_attached').filter((x) => x.value === 1).map((x) => x.labels.program ?? ''),
    ioPollDelayGauge: value(a, 'hybridpoll_device_io_poll_delay', dev),
    polledIos: delta(b, a, 'hybridpoll_polled_ios_total', dev),
    sleeps: delta(b, a, 'hybridpoll_poll_sleeps_total', dev),
    sleepRequested: histDelta(b, a, 'hybridpoll_poll_sleep_requested_seconds', dev),
    offcpu: histDelta(b, a, 'hybridpoll_poll_offcpu_seconds', dev),
    spin: histDelta(b, a, 'hybridpoll_poll_spin_seconds', dev),
    ioLatency: histDelta(b, a, 'hybridpoll_io_latency_seconds', dev),
    foundSlept: histDelta(b, a, 'hybridpoll_poll_found_after_sleep_seconds', dev),
    devSpun: histDelta(b, a, 'hybridpoll_poll_device_time_seconds', dev),
    pollStat4k: { samples: value(a, 'hybridpoll_poll_stat_samples', ps), mean: value(a, 'hybridpoll_poll_stat_mean_seconds', ps) },
    pollStatOverRun: pollStatMeanOverRun(r.pollStatWatch),
    hctx: {
      considered: hctxDelta(b, a, 'hybridpoll_hctx_poll_considered_total', r.device),
      invoked: hctxDelta(b, a, 'hybridpoll_hctx_poll_invoked_total', r.device),
      success: hctxDelta(b, a, 'hybridpoll_hctx_poll_success_total', r.device),
    },
    measuredCpuPerIo: value(a, 'hybridpoll_measured_cpu_seconds_per_io', dev),
    modelSelfError: value(a, 'hybridpoll_model_cpu_error_ratio', dev),
    model: {
      classic: value(a, 'hybridpoll_policy_cpu_seconds_per_io', { ...dev, policy: 'classic' }),
      halfMean: value(a, 'hybridpoll_policy_cpu_seconds_per_io', { ...dev, policy: 'blkmq_half_mean' }),
      fixed: value(a, 'hybridpoll_policy_cpu_seconds_per_io', { ...dev, policy: 'blkmq_fixed' }),
    },
    efficiency: value(a, 'hybridpoll_sleep_efficiency_ratio', dev),
    currentSleep: value(a, 'hybridpoll_current_sleep_seconds', dev),
    optimalSleep: value(a, 'hybridpoll_optimal_sleep_seconds', dev),
    wastedCores: value(a, 'hybridpoll_wasted_cpu_cores', dev),
    programSeconds: Object.fromEntries(select(a, 'hybridpoll_bpf_program_run_seconds_total').map((x) => {
      const program = x.labels.program ?? '?';
      return [program, delta(b, a, 'hybridpoll_bpf_program_run_seconds_total', { program }) ?? 0];
    })),
    cpuPerIo: p.ios > 0 ? p.cpuSeconds / p.ios : NaN,
    waitCpuPerIo: p.waitCpuSeconds !== undefined && p.ios > 0 ? p.waitCpuSeconds / p.ios : undefined,
    cpuUtil: p.cpuSeconds / p.wallSeconds,
  };
}

/**
 * Run time of the rq_complete program over the run (kernel.bpf_stats_enabled; 0 without it): it
 * reads the clock that ends the busy window first and then does its work on the poller's CPU
 * inside the waiting call. It also runs for other devices' completions (few in the guest).
 */
export function completionEdge(r: LegacyFigures): number {
  return r.programSeconds['rq_complete'] ?? 0;
}

const TRACEPOINT_PROGRAMS = ['rq_issue', 'rq_complete', 'hrtimer_start', 'sched_switch', 'sched_wakeup', 'task_exit'];

/** A check whose premise does not hold in this session carries `skipped` (run loudly skipped). */
export type LegacyCheck = CheckResult;

/** Most slept I/Os censored: F_D is then mostly bounded from above, not measured. */
export const MAX_CENSORED = 0.5;

/**
 * The model's premises, from the session's own data (as for the trixie guest's model check):
 * (a) the device time does not depend on how it is polled: the classic run's mean issue → reaped
 * must not exceed the adaptive run's by more than the check's bound (under TCG a spinning vCPU
 * starves QEMU's main loop, which completes the emulated I/O); (b) F_D is measured: at most
 * MAX_CENSORED of the adaptive run's slept I/Os were already complete at wake-up; (c) the model
 * reproduces the run it was fed: its self-check on the adaptive run within the check's bound.
 */
export function legacyModelPremises(a: LegacyFigures, c: LegacyFigures): { holds: boolean; evidence: string } {
  const dC = c.ioLatency?.mean;
  const dA = a.ioLatency?.mean;
  const dependent = relErr(dC, dA);
  const judged = (a.foundSlept?.count ?? 0) + (a.devSpun?.count ?? 0);
  const censored = judged > 0 ? (a.foundSlept?.count ?? 0) / judged : NaN;
  const okA = Number.isFinite(dependent) && dependent <= BOUNDS.model;
  const okB = Number.isFinite(censored) && censored <= MAX_CENSORED;
  const self = a.modelSelfError;
  const okC = self !== undefined && within(self, BOUNDS.model);
  return {
    holds: okA && okB && okC,
    evidence: `device time: classic issue→reaped ${us(dC)} vs adaptive ${us(dA)} (${pct(dependent)}${okA ? '' : ': the device was slower under classic polling, D depends on the poller'}); ` +
      `censored ${num(a.foundSlept?.count)} of ${judged} slept I/Os (${Number.isFinite(censored) ? `${(censored * 100).toFixed(0)}%` : 'n/a'}${okB ? '' : `, over ${MAX_CENSORED * 100}%: F_D not measured`}); ` +
      `self-check on the adaptive run ${self === undefined ? 'absent' : pct(self)}${okC ? '' : ': the model does not reproduce the run it was fed'}`,
  };
}

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const us = (s: number | undefined) => (s === undefined || !Number.isFinite(s) ? String(s) : `${(s * 1e6).toFixed(2)} µs`);
const num = (x: number | undefined, d = 0) => (x === undefined || !Number.isFinite(x) ? String(x) : x.toFixed(d));
const within = (err: number, tol: number) => Number.isFinite(err) && Math.abs(err) <= tol;

function check(workload: Workload, id: string, title: string, measured: string, bound: string, pass: boolean): CheckResult {
  return { id: `L${id}`, scenario: `legacy ${workload}`, title, measured, bound, pass };
}

/** Every run of one workload must pass f; the message lists all of them. */
function each(runs: LegacyFigures[], f: (r: LegacyFigures) => { ok: boolean; text: string }): { pass: boolean; measured: string } {
  const out = runs.map((r) => ({ ...f(r), delay: r.run.delay }));
  return { pass: out.length > 0 && out.every((o) => o.ok), measured: out.map((o) => `${o.delay}: ${o.text}`).join('; ') || 'no runs' };
}

/** The checks of one workload's three runs (classic, adaptive, fixed). */
export function legacyChecks(figs: LegacyFigures[], w: Workload, accel = 'tcg'): LegacyCheck[] {
  const runs = figs.filter((f) => f.run.workload === w);
  const by = (d: DelayMode) => runs.find((f) => f.run.delay === d);
  const slept = runs.filter((f) => f.run.delay !== 'classic');
  const out: LegacyCheck[] = [];

  const era = each(runs, (r) => ({ ok: r.era === 'blkmq_hybrid' && r.eraEvidence === 'btf', text: `era=${r.era} (${r.eraEvidence})` }));
  out.push(check(w, '1 era', 'era detection, from the kernel BTF', era.measured, 'blkmq_hybrid (btf)', era.pass));
  // 5.10's BTF has no io_uring_classic_poll: the loader must choose the tracepoint path by BTF.
  const bpf = each(runs, (r) => ({
    ok: r.pollPath === 'tracepoint' && TRACEPOINT_PROGRAMS.every((p) => r.attached.includes(p)),
    text: `poll path ${r.pollPath}, attached ${r.attached.join(',') || 'none'}`,
  }));
  out.push(check(w, '1 bpf', 'BPF collector loaded on 5.10: the tracepoint path with every tracepoint program', bpf.measured, `tracepoint; ${TRACEPOINT_PROGRAMS.join(',')}`, bpf.pass));
  const delay = each(runs, (r) => ({ ok: r.ioPollDelayGauge === r.run.ioPollDelay, text: `set ${r.run.ioPollDelay}, exported ${num(r.ioPollDelayGauge)}` }));
  out.push(check(w, '1 io_poll_delay', 'io_poll_delay exported as set by the test', delay.measured, 'equal', delay.pass));
  const a = by('adaptive');
  out.push(check(w, '1 poll_stat', 'live poll_stat (read 4 KiB) exported after the adaptive run', a ? `samples ${num(a.pollStat4k.samples)}, mean ${us(a.pollStat4k.mean)}` : 'no adaptive run',
    'samples > 0, mean > 0', !!a && (a.pollStat4k.samples ?? 0) > 0 && (a.pollStat4k.mean ?? 0) > 0));
  // At QD1 every I/O's completion is found by exactly one ->poll() that returned > 0.
  const hs = each(runs, (r) => {
    const e = relErr(r.hctx.success, r.run.poller.ios);
    return { ok: within(e, BOUNDS.count), text: `success ${num(r.hctx.success)} vs ${r.run.poller.ios} I/Os (${pct(e)}) [considered ${num(r.hctx.considered)}, invoked ${num(r.hctx.invoked)}]` };
  });
  out.push(check(w, '1 hctx io_poll', 'hctx io_poll success counter vs poller I/Os', hs.measured, `±${BOUNDS.count * 100}%`, hs.pass));

  const count = each(runs, (r) => {
    const e = relErr(r.polledIos, r.run.poller.ios);
    return { ok: within(e, BOUNDS.count), text: `exporter ${num(r.polledIos)} vs ${w} ${r.run.poller.ios} (${pct(e)})` };
  });
  out.push(check(w, '2 count', 'polled I/Os, exporter vs poller', count.measured, `±${BOUNDS.count * 100}%`, count.pass));

  const c = by('classic');
  out.push(check(w, '3 sleeps', 'classic (−1): hybrid sleeps', c ? num(c.sleeps) : 'no classic run', '0', !!c && c.sleeps === 0));
  const spi = each(slept, (r) => {
    const x = (r.sleeps ?? NaN) / r.run.poller.ios;
    return { ok: within(x - 1, BOUNDS.sleepsPerIo), text: `${num(r.sleeps)} sleeps / ${r.run.poller.ios} I/Os = ${x.toFixed(3)}` };
  });
  out.push(check(w, '3 sleeps/IO', 'hybrid (0, fixed): one sleep per I/O (the kernel sleeps at most once per request)', spi.measured, `1 ±${BOUNDS.sleepsPerIo}`, spi.pass));
  if (w === 'hpdrive') {
    // fio's context-switch count mixes voluntary and involuntary ones: only hpdrive's is independent.
    const sw = each(slept, (r) => {
      const e = relErr(r.offcpu?.count, r.run.poller.voluntarySwitches);
      return { ok: within(e, BOUNDS.count), text: `${num(r.offcpu?.count)} switched-out sleeps vs ${r.run.poller.voluntarySwitches} voluntary switches (${pct(e)})` };
    });
    out.push(check(w, '3 switch-outs', "hybrid: switched-out sleeps vs the poller's voluntary switches", sw.measured, `±${BOUNDS.count * 100}%`, sw.pass));
  }

  // poll_stat is a gauge of the last 100 ms window with I/O, and each adaptive sleep is ½ the mean
  // of the window before it: the reference is that mean weighted per I/O over the run (legacy.ts).
  if (a) {
    const m = a.pollStatOverRun;
    const half = m.meanSeconds === undefined ? undefined : m.meanSeconds / 2;
    const e = relErr(a.sleepRequested?.mean, half);
    out.push(check(w, '4 requested', 'adaptive (0): requested sleep vs ½ poll_stat mean (read 4 KiB) over the run',
      `requested mean ${us(a.sleepRequested?.mean)} vs ½ mean ${us(half)} (${pct(e)}) [${a.run.pollStatWatch.samples.length} poll_stat windows read, ` +
      `${m.ios} samples in them for ${a.run.poller.ios} I/Os; the exporter's after-run gauge ${us(a.pollStat4k.mean)}]`,
      `±${BOUNDS.requestedSleep * 100}%`, within(e, BOUNDS.requestedSleep)));
  }
  const f = by('fixed');
  if (f) {
    const e = relErr(f.sleepRequested?.mean, f.run.ioPollDelay * 1e-6);
    out.push(check(w, '4 requested', 'fixed: requested sleep vs io_poll_delay', `requested mean ${us(f.sleepRequested?.mean)} vs ${f.run.ioPollDelay} µs (${pct(e)})`,
      `±${BOUNDS.requestedSleep * 100}%`, within(e, BOUNDS.requestedSleep)));
  }

  // CPU: hpdrive measures its wait phase (the polling io_uring_enter calls) itself; a pvsync2 read
  // submits and polls in one system call, so fio has no separate polling CPU to compare with.
  if (w === 'hpdrive') {
    // As in the trixie checks: the syscall entry and exit around the poll loop, which no probe sees,
    // is timed by hpdrive itself and added to the exporter's side, with its size in the message;
    // so is the BPF run time no window can contain (bpf_stats, per run): the tracepoint path's busy
    // window ends at the clock read that starts rq_complete, whose work runs after it, in the
    // waiting call (trixie's loop-edge programs are the fentry path's counterpart).
    const cpu = each(runs, (r) => {
      const ios = r.run.poller.ios;
      const res = (r.run.poller.syscallResidueSeconds ?? NaN) / ios;
      const edge = completionEdge(r) / ios;
      const e = relErr((r.measuredCpuPerIo ?? NaN) + res + edge, r.waitCpuPerIo);
      return {
        ok: within(e, BOUNDS.cpu),
        text: `exporter ${us(r.measuredCpuPerIo)}/IO + syscall residue ${us(res)}/IO + completion-edge BPF ${us(edge)}/IO vs poller wait phase ${us(r.waitCpuPerIo)}/IO (${pct(e)}) ` +
          `[exporter alone ${pct(relErr(r.measuredCpuPerIo, r.waitCpuPerIo))}; poller total ${us(r.cpuPerIo)}/IO]`,
      };
    });
    out.push(check(w, '5 cpu', "exporter's measured CPU per I/O vs the poller's polling CPU", cpu.measured, `±${BOUNDS.cpu * 100}%`, cpu.pass));
    if (a && c) {
      // Where the premises fail under emulation the model checks are skipped with the evidence;
      // under KVM, or where they hold, they run in full.
      const prem = legacyModelPremises(a, c);
      const skipped = accel !== 'kvm' && !prem.holds ? `model premises violated under ${accel}: ${prem.evidence}` : undefined;
      const ec = relErr(a.model.classic, c.waitCpuPerIo);
      out.push({ ...check(w, '6 model classic', 'model fed the adaptive run: classic CPU per I/O vs the classic run',
        `predicted ${us(a.model.classic)}/IO vs measured ${us(c.waitCpuPerIo)}/IO (${pct(ec)}) [${prem.evidence}]`, `±${BOUNDS.model * 100}% (premises: D independent of the poller, ≤ ${MAX_CENSORED * 100}% censored, self-check within ±${BOUNDS.model * 100}%)`, within(ec, BOUNDS.model)), ...(skipped ? { skipped } : {}) });
      const eh = relErr(a.model.halfMean, a.waitCpuPerIo);
      out.push({ ...check(w, '6 model ½ mean', 'model fed the adaptive run: blkmq_half_mean CPU per I/O vs that run',
        `predicted ${us(a.model.halfMean)}/IO vs measured ${us(a.waitCpuPerIo)}/IO (${pct(eh)}) [${prem.evidence}]`, `±${BOUNDS.model * 100}% (premises: D independent of the poller, ≤ ${MAX_CENSORED * 100}% censored, self-check within ±${BOUNDS.model * 100}%)`, within(eh, BOUNDS.model)), ...(skipped ? { skipped } : {}) });
    }
  }

  const stops = runs.map((r) => {
    const progs = r.run.exporterStop?.bpfPrograms;
    const left = Array.isArray(progs) ? progs.filter((x: { name?: string }) => x.name?.startsWith('hp_')).length : NaN;
    return { left, code: r.run.exporterStop?.exit?.code };
  });
  out.push(check(w, 'cleanup', 'exporter stop leaves no BPF programs loaded', stops.map((s) => `exit ${s.code}, ${s.left} hp_ programs left`).join('; ') || 'no runs',
    '0 programs, exit 0', stops.length > 0 && stops.every((s) => s.left === 0 && s.code === 0)));
  return out;
}

export function allLegacyChecks(s: LegacySession): LegacyCheck[] {
  const figs = s.runs.map(legacyFigures);
  const workloads = [...new Set(s.runs.map((r) => r.workload))];
  return workloads.flatMap((w) => legacyChecks(figs, w, s.accel));
}

/** Not a check: the BPF programs' CPU per polled I/O of every run (kernel.bpf_stats_enabled). */
export function legacyBpfCost(s: LegacySession): string[] {
  return s.runs.map(legacyFigures).map((f) => {
    const per = Object.entries(f.programSeconds).filter(([, sec]) => sec > 0);
    const total = per.reduce((t, [, sec]) => t + sec, 0);
    const ios = f.run.poller.ios;
    const detail = per.map(([p, sec]) => `${p} ${((sec / ios) * 1e9).toFixed(0)} ns`).join(', ');
    return `${f.run.workload} ${f.run.delay}: ${((total / ios) * 1e6).toFixed(2)} µs per I/O = ${((total / f.run.poller.cpuSeconds) * 100).toFixed(1)}% of the poller's CPU (per I/O: ${detail || 'no run time: bpf_stats off'})`;
  });
}

const cell = (x: string) => x.replace(/\|/g, '\\|');

/** The measured table (docs/validation.md, README): one row per workload and io_poll_delay. */
export function legacyTable(s: LegacySession): string {
  const rows = s.runs.map(legacyFigures).map((f) => {
    const r = f.run;
    const setting = r.delay === 'classic' ? '−1 (classic)' : r.delay === 'adaptive' ? '0 (½ mean)' : `${r.ioPollDelay} µs (fixed)`;
    const eff = f.efficiency === undefined ? (f.optimalSleep === 0 ? 'n/a (best is 0)' : 'absent') : f.efficiency.toFixed(2);
    return `| ${r.workload} | ${setting} | ${(f.cpuUtil * 100).toFixed(0)}% | ${us(f.cpuPerIo)} | ${Math.round(r.poller.iops)} | ${r.poller.latUs.mean.toFixed(0)} µs | ` +
      `${us(f.sleepRequested && f.sleepRequested.count > 0 ? f.sleepRequested.mean : 0)} | ${us(f.optimalSleep)} | ${cell(eff)} | ${num(f.wastedCores, 3)} |`;
  });
  return ['| workload | io_poll_delay | poller CPU | CPU per I/O | IOPS | mean latency | sleep chosen (mean requested) | optimal sleep (model) | efficiency | wasted cores |',
    '|---|---|---|---|---|---|---|---|---|---|', ...rows].join('\n');
}
