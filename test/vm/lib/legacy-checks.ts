// The truth checks of the legacy-era session (issues 8, 13), pure functions over its runs. Each run
// has its own exporter (its counters and model window hold that run alone); within-run checks
// compare the exporter with the poller and the device of the same run, the model checks feed the
// model one run and compare its what-if rows with the measured runs of those settings.
import { relErr, type CheckResult } from './checks.js';
import { delta, histDelta, parseExposition, select, value, type HistDelta, type Scrape } from './prom.js';
import { addedLatencySeconds, ADVICE_BUDGET, adviceBudgetSeconds, completionEdgePerIo, hpsimOverRun, isHpdrive, queueDepth, LATENCY_SLACK_S, parseHpsimStats, pollStatMeanOverRun, wakeOverheadSeconds, type DelayMode, type LegacyRun, type LegacySession, type RunLatency, type Workload } from './legacy.js';

/**
 * The bounds of issue 13 (virtual time, simulated device): counts exact to ±0.5 %; sleeps per I/O,
 * switch-outs and the requested sleep as in issue 8; CPU accounting ±5 % at QD1; the model ±10 %.
 * deviceTime: the model's E[D] against the device's own mean service time; E[D] is the classic
 * row's CPU per I/O, so it must sit well inside the model's ±10 %. unchanged: tracing does not
 * change the workload (issue 13: within 5 % of an untraced run).
 */
export const LEGACY_BOUNDS = {
  count: 0.005,
  switchOuts: 0.02,
  sleepsPerIo: 0.05,
  requestedSleep: 0.15,
  cpu: 0.05,
  model: 0.1,
  deviceTime: 0.05,
  unchanged: 0.05,
} as const;

/** The model's what-if rows the checks and the seeds table read. */
export const MODEL_ROWS = ['classic', 'blkmq_half_mean', 'three_quarter_mean', 'min_minus_wake', 'blkmq_fixed', 'best_static'] as const;
export type ModelRow = (typeof MODEL_ROWS)[number];

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
  wakeOverhead: number | undefined;
  /** issue → reaped of every I/O */
  ioLatency: HistDelta | undefined;
  /** slept I/Os already complete at wake-up (censored) and still pending (exact device time) */
  foundSlept: HistDelta | undefined;
  devSpun: HistDelta | undefined;
  /** debugfs poll_stat, read 4 KiB, after the run: samples and mean of the last 100 ms window */
  pollStat4k: { samples: number | undefined; mean: number | undefined };
  /** the read 4 KiB poll_stat mean (and min) the run's sleeps saw (per I/O, from the guest's 50 ms reads) */
  pollStatOverRun: { meanSeconds: number | undefined; minSeconds: number | undefined; ios: number };
  /** debugfs hctx*\/io_poll deltas over the run, summed over the device's hctxs */
  hctx: { considered: number | undefined; invoked: number | undefined; success: number | undefined };
  /** the device's own account of the run (hpsim stats) */
  device: ReturnType<typeof hpsimOverRun>;
  measuredCpuPerIo: number | undefined;
  /** polled I/Os in the model's window: its polled IOPS × its span */
  modelWindowIos: number | undefined;
  /** the model's self-check: modelled cpu(current) against the measured CPU per I/O, − 1 */
  modelSelfError: number | undefined;
  /** the model's rows fed this run: CPU per I/O, sleep, CPU share (s, s, ratio) */
  model: Partial<Record<ModelRow, number>>;
  modelSleep: Partial<Record<ModelRow, number>>;
  modelShare: Partial<Record<ModelRow, number>>;
  /** the model's E[D]: the classic row's latency */
  modelMeanD: number | undefined;
  /** the share of F_D the model could not place (hybridpoll_model_unresolved_ratio) */
  modelUnresolved: number | undefined;
  /** the exporter's hybridpoll_model_device_time_identified: 0 when its rows for other sleeps are not identified */
  modelIdentified: number | undefined;
  switchCost: number | undefined;
  efficiency: number | undefined;
  currentSleep: number | undefined;
  optimalSleep: number | undefined;
  wastedCores: number | undefined;
  /** the model window's polled IOPS: the wasted cores' divisor */
  polledIops: number | undefined;
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
  const rows = (name: string) => Object.fromEntries(MODEL_ROWS.map((policy) => [policy, value(a, name, { ...dev, policy })]).filter(([, v]) => v !== undefined));
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
    wakeOverhead: wakeOverheadSeconds(r),
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
    device: hpsimOverRun(parseHpsimStats(r.hpsimBefore), parseHpsimStats(r.hpsimAfter)),
    measuredCpuPerIo: value(a, 'hybridpoll_measured_cpu_seconds_per_io', dev),
    modelWindowIos: (value(a, 'hybridpoll_polled_iops', dev) ?? NaN) * (value(a, 'hybridpoll_model_window_seconds') ?? NaN),
    modelSelfError: value(a, 'hybridpoll_model_cpu_error_ratio', dev),
    model: rows('hybridpoll_policy_cpu_seconds_per_io'),
    modelSleep: rows('hybridpoll_policy_sleep_seconds'),
    modelShare: rows('hybridpoll_policy_cpu_share_ratio'),
    modelMeanD: value(a, 'hybridpoll_policy_latency_seconds', { ...dev, policy: 'classic' }),
    modelUnresolved: value(a, 'hybridpoll_model_unresolved_ratio', dev),
    modelIdentified: value(a, 'hybridpoll_model_device_time_identified', dev),
    switchCost: value(a, 'hybridpoll_model_switch_cost_seconds', dev),
    efficiency: value(a, 'hybridpoll_sleep_efficiency_ratio', dev),
    currentSleep: value(a, 'hybridpoll_current_sleep_seconds', dev),
    optimalSleep: value(a, 'hybridpoll_optimal_sleep_seconds', dev),
    wastedCores: value(a, 'hybridpoll_wasted_cpu_cores', dev),
    polledIops: value(a, 'hybridpoll_polled_iops', dev),
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

/** Per I/O, what hpdrive's wait phase holds outside the busy window: the syscall residue it times itself and the completion edge. */
function outsideWindow(r: LegacyFigures): { residue: number; edge: number } {
  const ios = r.run.poller.ios;
  return { residue: (r.run.poller.syscallResidueSeconds ?? NaN) / ios, edge: completionEdge(r) / ios };
}

/** L8's two extra adaptive runs, by what sets them apart (BPF detached; traced without bpf_stats); undefined for a setting's run. */
function l8Variant(r: LegacyRun): 'BPF detached' | 'bpf_stats off' | undefined {
  return r.traced === false ? 'BPF detached' : r.bpfStats === false ? 'bpf_stats off' : undefined;
}

/** The share of a run's slept I/Os found complete at their wake-up (their D bounded from above only). */
function censoredShare(r: LegacyFigures): { censored: number; judged: number } {
  const judged = (r.foundSlept?.count ?? 0) + (r.devSpun?.count ?? 0);
  return { censored: judged > 0 ? (r.foundSlept?.count ?? 0) / judged : 0, judged };
}

/**
 * The exporter's busy-window CPU per I/O less hpdrive's wait phase, both on the same terms (the
 * syscall residue and the completion edge added to the exporter's side), on a classic run: the
 * stretch of the submit call after the polled issue, where the busy window opens, which hpdrive
 * times as submission, not as its wait phase. A classic run sleeps nothing, so this is all that
 * differs there; the same submission code runs in every polling mode, so the sleeping runs of the
 * workload carry the same stretch (L5 checks them with it). undefined without a wait phase (fio).
 */
export function submitTail(classic: LegacyFigures | undefined): number | undefined {
  if (classic?.waitCpuPerIo === undefined || classic.measuredCpuPerIo === undefined) return undefined;
  const { residue, edge } = outsideWindow(classic);
  return classic.measuredCpuPerIo + residue + edge - classic.waitCpuPerIo;
}

/**
 * The poll loop's CPU per I/O as the poller measured it, on the exporter's terms (the quantity the
 * model predicts): hpdrive's wait phase less the syscall entry/exit it times itself and the BPF work
 * after the busy window's end, plus the submit tail the busy window holds (measured on the classic
 * run, `submitTail`; on that run itself this is the exporter's own figure, which L5 checks against
 * the wait phase). A pvsync2 read submits and polls in one call, so fio has no such figure: there
 * the exporter's measured CPU of that run stands in.
 */
export function pollLoopCpuPerIo(r: LegacyFigures, classic: LegacyFigures | undefined): { value: number | undefined; source: string } {
  const tail = submitTail(classic);
  if (r.waitCpuPerIo !== undefined && tail !== undefined) {
    const { residue, edge } = outsideWindow(r);
    return {
      value: r.waitCpuPerIo - residue - edge + tail,
      source: `poller wait phase − residue − completion edge + submit tail ${us(tail)}`,
    };
  }
  return { value: r.measuredCpuPerIo, source: "exporter's measured (fio)" };
}

const TRACEPOINT_PROGRAMS = ['rq_issue', 'rq_complete', 'hrtimer_start', 'sched_switch', 'sched_wakeup', 'task_exit'];

/** A check whose premise does not hold in this session carries `skipped` (run loudly skipped). */
export type LegacyCheck = CheckResult;

/** Most slept I/Os censored: F_D is then mostly bounded from above, not measured. */
export const MAX_CENSORED = 0.5;

/**
 * The model's premises, from the session's own data: (a) the device time does not depend on the
 * poller: the classic run's mean issue → reaped within the model's bound of the adaptive run's;
 * (b) F_D is measured: at most MAX_CENSORED of the fed run's slept I/Os were already complete at
 * wake-up. Under virtual time with the simulated device they hold by construction (the device's
 * time is drawn at queue_rq on the guest clock) and the model checks always run; the evidence is
 * printed. Without virtual time (plain TCG) a failed premise skips them loudly.
 */
export function legacyModelPremises(fed: LegacyFigures, c: LegacyFigures, a: LegacyFigures): { holds: boolean; evidence: string } {
  const dC = c.ioLatency?.mean;
  const dA = a.ioLatency?.mean;
  const dependent = relErr(dC, dA);
  const { censored, judged } = censoredShare(fed);
  const okA = Number.isFinite(dependent) && dependent <= LEGACY_BOUNDS.model;
  const okB = censored <= MAX_CENSORED;
  const truth = [c, a].map((x) => us(x.device?.meanSeconds)).join(' vs ');
  return {
    holds: okA && okB,
    evidence: `device time: classic issue→reaped ${us(dC)} vs adaptive ${us(dA)} (${pct(dependent)}${okA ? '' : ': the device was slower under classic polling, D depends on the poller'}; device's own mean ${truth}); ` +
      `censored ${num(fed.foundSlept?.count)} of ${judged} slept I/Os of the fed run (${(censored * 100).toFixed(0)}%${okB ? '' : `, over ${MAX_CENSORED * 100}%: F_D not measured`})`,
  };
}

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const us = (s: number | undefined) => (s === undefined || !Number.isFinite(s) ? String(s) : `${(s * 1e6).toFixed(2)} µs`);
const num = (x: number | undefined, d = 0) => (x === undefined || !Number.isFinite(x) ? String(x) : x.toFixed(d));
const within = (err: number, tol: number) => Number.isFinite(err) && Math.abs(err) <= tol;
const bpct = (b: number) => `±${+(b * 100).toFixed(2)}%`;

export const SETTING_LABEL: Record<DelayMode, string> = { classic: 'classic', adaptive: '½ mean', three_quarter: '¾ mean', min_wake: 'min − wake', best: 'best (advice)', above: 'above the advice' };

function check(group: string, id: string, title: string, measured: string, bound: string, pass: boolean): CheckResult {
  return { id: `L${id}`, scenario: group, title, measured, bound, pass };
}

/** Every run must pass f; the message lists all of them. */
function each(runs: LegacyFigures[], f: (r: LegacyFigures) => { ok: boolean; text: string }): { pass: boolean; measured: string } {
  const out = runs.map((r) => ({ ...f(r), delay: SETTING_LABEL[r.run.delay] }));
  return { pass: out.length > 0 && out.every((o) => o.ok), measured: out.map((o) => `${o.delay}: ${o.text}`).join('; ') || 'no runs' };
}

/** The checks of one profile's and workload's runs (classic, adaptive, ¾ mean, min − wake, advised). */
export function legacyChecks(figs: LegacyFigures[], profile: string, w: Workload, opts: { accel?: string; icount?: boolean } = {}): LegacyCheck[] {
  const accel = opts.accel ?? 'tcg';
  const group = `legacy ${profile} ${w}`;
  const all = figs.filter((f) => f.run.workload === w && f.run.profile === profile);
  // the settings' runs; L8's two adaptive runs apart: BPF detached, and traced with bpf_stats off
  const runs = all.filter((f) => !l8Variant(f.run));
  const untraced = all.find((f) => l8Variant(f.run) === 'BPF detached' && f.run.delay === 'adaptive');
  const deployed = all.find((f) => l8Variant(f.run) === 'bpf_stats off' && f.run.delay === 'adaptive');
  const by = (d: DelayMode) => runs.find((f) => f.run.delay === d);
  const slept = runs.filter((f) => f.run.delay !== 'classic');
  const fixed = runs.filter((f) => f.run.ioPollDelay > 0);
  const B = LEGACY_BOUNDS;
  const out: LegacyCheck[] = [];

  const era = each(runs, (r) => ({ ok: r.era === 'blkmq_hybrid' && r.eraEvidence === 'btf', text: `era=${r.era} (${r.eraEvidence})` }));
  out.push(check(group, '1 era', 'era detection, from the kernel BTF', era.measured, 'blkmq_hybrid (btf)', era.pass));
  // 5.10's BTF has no io_uring_classic_poll: the loader must choose the tracepoint path by BTF.
  const bpf = each(runs, (r) => ({
    ok: r.pollPath === 'tracepoint' && TRACEPOINT_PROGRAMS.every((p) => r.attached.includes(p)),
    text: `poll path ${r.pollPath}, attached ${r.attached.join(',') || 'none'}`,
  }));
  out.push(check(group, '1 bpf', 'BPF collector loaded on 5.10: the tracepoint path with every tracepoint program', bpf.measured, `tracepoint; ${TRACEPOINT_PROGRAMS.join(',')}`, bpf.pass));
  const delay = each(runs, (r) => ({ ok: r.ioPollDelayGauge === r.run.ioPollDelay, text: `set ${r.run.ioPollDelay}, exported ${num(r.ioPollDelayGauge)}` }));
  out.push(check(group, '1 io_poll_delay', 'io_poll_delay exported as set by the test', delay.measured, 'equal', delay.pass));
  const a = by('adaptive');
  out.push(check(group, '1 poll_stat', 'live poll_stat (read 4 KiB) exported after the adaptive run', a ? `samples ${num(a.pollStat4k.samples)}, mean ${us(a.pollStat4k.mean)}` : 'no adaptive run',
    'samples > 0, mean > 0', !!a && (a.pollStat4k.samples ?? 0) > 0 && (a.pollStat4k.mean ?? 0) > 0));
  // At QD1 every I/O's completion is found by exactly one ->poll() that returned > 0; at depth one
  // such poll can find several, so there are at most as many as I/Os.
  const qd = queueDepth(w);
  const hs = each(runs, (r) => {
    const e = relErr(r.hctx.success, r.run.poller.ios);
    const ok = qd === 1 ? within(e, B.count) : (r.hctx.success ?? NaN) > 0 && e <= B.count;
    return { ok, text: `success ${num(r.hctx.success)} vs ${r.run.poller.ios} I/Os (${pct(e)}) [considered ${num(r.hctx.considered)}, invoked ${num(r.hctx.invoked)}]` };
  });
  out.push(check(group, '1 hctx io_poll', `hctx io_poll success counter vs poller I/Os${qd > 1 ? ` (QD${qd}: at most one per I/O)` : ''}`, hs.measured, qd === 1 ? bpct(B.count) : `> 0, ≤ +${B.count * 100}%`, hs.pass));

  const count = each(runs, (r) => {
    const e = relErr(r.polledIos, r.run.poller.ios);
    return { ok: within(e, B.count), text: `exporter ${num(r.polledIos)} vs ${w} ${r.run.poller.ios} (${pct(e)})` };
  });
  out.push(check(group, '2 count', 'polled I/Os, exporter vs poller', count.measured, bpct(B.count), count.pass));
  // The device's own count: every request it completed over the run was polled, one per I/O.
  const dc = each(runs, (r) => {
    const e = relErr(r.device?.polled, r.run.poller.ios);
    return { ok: within(e, B.count) && r.device?.completed === r.device?.polled, text: `device polled ${num(r.device?.polled)} of ${num(r.device?.completed)} completed vs ${r.run.poller.ios} I/Os (${pct(e)})` };
  });
  out.push(check(group, '2 device count', "the device's completions (hpsim stats) vs the poller's I/Os, all by polling", dc.measured, `${bpct(B.count)}, none by interrupt`, dc.pass));

  const c = by('classic');
  out.push(check(group, '3 sleeps', 'classic (−1): hybrid sleeps', c ? num(c.sleeps) : 'no classic run', '0', !!c && c.sleeps === 0));
  // At depth only the first request a pass polls can sleep (src/model/poller/sim.ts passBlkmq):
  // with a fixed delay past the device time, one sleep per refill of the queue depth.
  const spi = each(slept, (r) => {
    const x = (r.sleeps ?? NaN) / r.run.poller.ios;
    const ok = qd === 1 ? within(x - 1, B.sleepsPerIo) : x >= 1 / qd - B.sleepsPerIo && x <= 1 + B.sleepsPerIo;
    return { ok, text: `${num(r.sleeps)} sleeps / ${r.run.poller.ios} I/Os = ${x.toFixed(3)}` };
  });
  out.push(check(group, '3 sleeps/IO', qd === 1 ? 'hybrid (0, fixed): one sleep per I/O (the kernel sleeps at most once per request)' : `hybrid (0, fixed) at QD${qd}: at most one sleep per I/O, at least one per refill`,
    spi.measured, qd === 1 ? `1 ±${B.sleepsPerIo}` : `[1/${qd}, 1] ±${B.sleepsPerIo}`, spi.pass));
  if (isHpdrive(w)) {
    // fio's context-switch count mixes voluntary and involuntary ones: only hpdrive's is independent.
    const sw = each(slept, (r) => {
      const e = relErr(r.offcpu?.count, r.run.poller.voluntarySwitches);
      return { ok: within(e, B.switchOuts), text: `${num(r.offcpu?.count)} switched-out sleeps vs ${r.run.poller.voluntarySwitches} voluntary switches (${pct(e)})` };
    });
    out.push(check(group, '3 switch-outs', "hybrid: switched-out sleeps vs the poller's voluntary switches", sw.measured, bpct(B.switchOuts), sw.pass));
  }

  // poll_stat is a gauge of the last 100 ms window with I/O, and each adaptive sleep is ½ the mean
  // of the window before it: the reference is that mean weighted per I/O over the run (legacy.ts).
  if (a) {
    const m = a.pollStatOverRun;
    const half = m.meanSeconds === undefined ? undefined : m.meanSeconds / 2;
    const e = relErr(a.sleepRequested?.mean, half);
    out.push(check(group, '4 requested', 'adaptive (0): requested sleep vs ½ poll_stat mean (read 4 KiB) over the run',
      `requested mean ${us(a.sleepRequested?.mean)} vs ½ mean ${us(half)} (${pct(e)}) [${a.run.pollStatWatch.samples.length} poll_stat windows read, ` +
      `${m.ios} samples in them for ${a.run.poller.ios} I/Os; the exporter's after-run gauge ${us(a.pollStat4k.mean)}]`,
      bpct(B.requestedSleep), within(e, B.requestedSleep)));
  }
  if (fixed.length) {
    const fx = each(fixed, (r) => {
      const e = relErr(r.sleepRequested?.mean, r.run.ioPollDelay * 1e-6);
      return { ok: within(e, B.requestedSleep), text: `requested mean ${us(r.sleepRequested?.mean)} vs ${r.run.ioPollDelay} µs [${r.run.derivation}] (${pct(e)})` };
    });
    out.push(check(group, '4 requested', 'fixed (¾ mean, min − wake, advised): requested sleep vs io_poll_delay', fx.measured, bpct(B.requestedSleep), fx.pass));
  }

  // CPU: hpdrive measures its wait phase (the polling io_uring_enter calls) itself; a pvsync2 read
  // submits and polls in one system call, so fio has no separate polling CPU to compare with.
  if (isHpdrive(w)) {
    // The syscall entry and exit around the poll loop, which no probe sees, is timed by hpdrive
    // itself and added to the exporter's side, with its size in the message; so is the BPF run time
    // no window can contain (bpf_stats, per run): the tracepoint path's busy window ends at the
    // clock read that starts rq_complete, whose work runs after it, in the waiting call. The
    // window opens at the polled issue, inside the submit call: the classic run, which sleeps
    // nothing, shows that stretch alone (submitTail), and the sleeping runs are checked less it,
    // so that what they test is the sleep's accounting (the wake latency charged, switchCost).
    const tail = submitTail(c);
    const cpu = each(runs, (r) => {
      const { residue: res, edge } = outsideWindow(r);
      const less = r === c ? 0 : tail ?? NaN;
      const e = relErr((r.measuredCpuPerIo ?? NaN) + res + edge - less, r.waitCpuPerIo);
      return {
        ok: within(e, B.cpu),
        text: `exporter ${us(r.measuredCpuPerIo)}/IO + syscall residue ${us(res)}/IO + completion-edge BPF ${us(edge)}/IO` +
          `${r === c ? '' : ` − submit tail ${us(less)}/IO`} vs poller wait phase ${us(r.waitCpuPerIo)}/IO (${pct(e)}) ` +
          `[exporter alone ${pct(relErr(r.measuredCpuPerIo, r.waitCpuPerIo))}; poller total ${us(r.cpuPerIo)}/IO]`,
      };
    });
    out.push(check(group, '5 cpu', "exporter's measured CPU per I/O vs the poller's polling CPU (QD1; the sleeping runs less the classic run's submit tail)", cpu.measured, bpct(B.cpu), cpu.pass));
  }

  // The model: its self-check on every run; fed each hybrid run, its rows against the measured runs
  // of those settings. Gated on the premises only without virtual time.
  // One exporter serves the session: its model must have been fed this run and nothing else.
  const win = each(runs, (r) => {
    const e = relErr(r.modelWindowIos, r.run.poller.ios);
    return { ok: within(e, B.count), text: `${num(r.modelWindowIos)} I/Os in the window vs ${r.run.poller.ios} (${pct(e)})` };
  });
  out.push(check(group, '6 window', "the model's window holds this run alone (its polled IOPS × span vs the run's I/Os)", win.measured, bpct(B.count), win.pass));
  const self = each(runs, (r) => ({ ok: r.modelSelfError !== undefined && within(r.modelSelfError, B.model), text: r.modelSelfError === undefined ? 'absent' : pct(r.modelSelfError) }));
  out.push(check(group, '6 self-check', 'model self-check on the run it was fed (modelled CPU at the current sleep vs measured)', self.measured, bpct(B.model), self.pass));
  if (c && a) {
    const fedRuns = slept;
    const gate = (fed: LegacyFigures) => legacyModelPremises(fed, c, a);
    const skippedOf = (prem: { holds: boolean; evidence: string }[]) => {
      const bad = prem.filter((p) => !p.holds);
      return accel !== 'kvm' && !opts.icount && bad.length ? `model premises violated under ${accel} without virtual time: ${bad.map((p) => p.evidence).join(' | ')}` : undefined;
    };
    const cross = (id: string, title: string, row: ModelRow, target: LegacyFigures | undefined, feeds: LegacyFigures[]) => {
      if (!target || !feeds.length) return;
      const t = pollLoopCpuPerIo(target, c);
      const prem = feeds.map(gate);
      const res = feeds.map((fed) => {
        const e = relErr(fed.model[row], t.value);
        const judged = within(e, B.model);
        // Fed a run whose slept I/Os were mostly found complete at wake-up, the data bound D from
        // above only and a row that extrapolates to another sleep is not identified (the policy's
        // own sleep moves with the placement): the exporter promises only to say so, with
        // hybridpoll_model_device_time_identified 0. Such a column passes within the bound or flagged.
        const { censored } = censoredShare(fed);
        const unmeasured = censored > MAX_CENSORED;
        const flagged = unmeasured && fed.modelIdentified === 0;
        const note = unmeasured
          ? `; F_D not measured, ${(censored * 100).toFixed(0)}% censored, unresolved ratio ${num(fed.modelUnresolved, 2)}, identified ${num(fed.modelIdentified)}${judged ? '' : flagged ? ': flagged by the exporter, not judged' : ': NOT flagged'}`
          : '';
        return { judged, ok: judged || flagged, text: `fed ${SETTING_LABEL[fed.run.delay]}: predicted ${us(fed.model[row])}/IO at sleep ${us(fed.modelSleep[row])} (${pct(e)}${note})` };
      });
      const skipped = skippedOf(prem);
      out.push({
        ...check(group, id, title, `${res.map((x) => x.text).join('; ')} vs measured ${us(t.value)}/IO (${t.source}) of the ${SETTING_LABEL[target.run.delay]} run [${prem[0]!.evidence}]`,
          `${bpct(B.model)}; a fed run over ${MAX_CENSORED * 100}% censored passes flagged (identified 0); at least one column within`,
          res.every((x) => x.ok) && res.some((x) => x.judged)),
        ...(skipped ? { skipped } : {}),
      });
    };
    cross('6 model classic', 'model fed a hybrid run: classic CPU per I/O vs the classic run', 'classic', c, fedRuns);
    cross('6 model ½ mean', 'model fed a hybrid run: blkmq_half_mean CPU per I/O vs the adaptive run', 'blkmq_half_mean', a, fedRuns);
    cross('6 model ¾ mean', 'model fed a hybrid run: three_quarter_mean CPU per I/O vs the ¾-mean run', 'three_quarter_mean', by('three_quarter'), fedRuns);
    for (const f of fixed) cross('6 model fixed', `model fed the ${SETTING_LABEL[f.run.delay]} run: blkmq_fixed (io_poll_delay ${f.run.ioPollDelay} µs) CPU per I/O vs that run`, 'blkmq_fixed', f, [f]);
    const best = by('best');
    if (best) {
      cross('9 best cpu', "the exporter's advice applied: model fed the ½-mean run, best_static CPU per I/O vs the run at that sleep", 'best_static', best, [a]);
      out.push(...adviceChecks(group, c, a, best, runs));
    }
  }

  // Tracing does not change the workload: the adaptive run again with the BPF programs detached,
  // against the adaptive run traced as the exporter runs on a user's host: without bpf_stats, whose
  // clock reads around every program run are the lab's instrument (sessions before that run: the
  // traced run with bpf_stats). In virtual time the difference is the programs' own instructions,
  // the figure a user cares about.
  const traced = deployed ?? a;
  if (traced && untraced) {
    const per = (f: LegacyFigures) => ({ cpu: f.cpuPerIo, iops: f.run.poller.iops, sleeps: f.run.poller.voluntarySwitches / f.run.poller.ios });
    const t = per(traced);
    const u = per(untraced);
    const e = { cpu: relErr(t.cpu, u.cpu), iops: relErr(t.iops, u.iops), sleeps: relErr(t.sleeps, u.sleeps) };
    const psT = traced.pollStatOverRun.meanSeconds;
    const psU = untraced.pollStatOverRun.meanSeconds;
    const withStats = deployed && a ? `; with bpf_stats on: CPU ${us(a.cpuPerIo)}/IO (${pct(relErr(a.cpuPerIo, u.cpu))})` : deployed ? '' : '; bpf_stats on (no run without)';
    out.push(check(group, '8 unchanged', 'tracing does not change the workload: adaptive run traced (bpf_stats off) vs BPF detached (poller CPU per I/O, IOPS, switches per I/O)',
      `CPU ${us(t.cpu)} vs ${us(u.cpu)}/IO (${pct(e.cpu)}), IOPS ${Math.round(t.iops)} vs ${Math.round(u.iops)} (${pct(e.iops)}), switches/IO ${t.sleeps.toFixed(3)} vs ${u.sleeps.toFixed(3)} (${pct(e.sleeps)}) ` +
      `[poll_stat mean over the run ${us(psT)} vs ${us(psU)} (${pct(relErr(psT, psU))}); requested sleep ${us(traced.sleepRequested?.mean)}; device mean ${us(traced.device?.meanSeconds)} vs ${us(untraced.device?.meanSeconds)}${withStats}]`,
      bpct(B.unchanged), within(e.cpu, B.unchanged) && within(e.iops, B.unchanged) && within(e.sleeps, B.unchanged)));
  }

  // The device's truth against the model's input: E[D] (the classic row's latency) vs the mean
  // service time hpsim drew for the run's requests. Where most slept I/Os were found complete at
  // their wake-up (over MAX_CENSORED) the data bound D from above only (D ≤ the found time; the
  // estimator keeps what it cannot place at its found time, the most the data allow): there E[D]
  // errs high by construction, and what is checked is that it is not under the truth by more
  // than the bound.
  const dt = each(runs, (r) => {
    const e = relErr(r.modelMeanD, r.device?.meanSeconds);
    const { censored } = censoredShare(r);
    const bound = censored > MAX_CENSORED;
    return {
      ok: bound ? Number.isFinite(e) && e >= -B.deviceTime : within(e, B.deviceTime),
      text: `model E[D] ${us(r.modelMeanD)} vs device ${us(r.device?.meanSeconds)} (${pct(e)}${bound ? `; ${(censored * 100).toFixed(0)}% of slept I/Os censored: an upper bound, judged ≥ −${B.deviceTime * 100}%` : ''})`,
    };
  });
  out.push(check(group, '7 device time', "model's E[D] vs the device's own mean service time (hpsim stats; an upper bound where most slept I/Os were censored)", dt.measured,
    `${bpct(B.deviceTime)}; ≥ −${B.deviceTime * 100}% where over ${MAX_CENSORED * 100}% censored`, dt.pass));

  return out;
}

export function allLegacyChecks(s: LegacySession): LegacyCheck[] {
  const figs = s.runs.map(legacyFigures);
  const groups = [...new Map(s.runs.map((r) => [`${r.profile}/${r.workload}`, r] as const)).values()];
  const progs = s.exporterStop?.bpfPrograms;
  const left = Array.isArray(progs) ? progs.filter((x: { name?: string }) => x.name?.startsWith('hp_')).length : NaN;
  const code = s.exporterStop?.exit?.code;
  return [
    ...groups.flatMap((r) => legacyChecks(figs, r.profile, r.workload, { accel: s.accel, icount: s.icount })),
    { id: 'Lcleanup', scenario: 'legacy session', title: 'exporter stop leaves no BPF programs loaded', measured: `exit ${code}, ${left} hp_ programs left`, bound: '0 programs, exit 0', pass: left === 0 && code === 0 },
  ];
}

/** Not a check: the BPF programs' CPU per polled I/O of every run (kernel.bpf_stats_enabled). */
export function legacyBpfCost(s: LegacySession): string[] {
  return s.runs.map(legacyFigures).map((f) => {
    const per = Object.entries(f.programSeconds).filter(([, sec]) => sec > 0);
    const total = per.reduce((t, [, sec]) => t + sec, 0);
    const ios = f.run.poller.ios;
    const detail = per.map(([p, sec]) => `${p} ${((sec / ios) * 1e9).toFixed(0)} ns`).join(', ');
    return `${f.run.profile} ${f.run.workload} ${SETTING_LABEL[f.run.delay]}${l8Variant(f.run) ? ` (${l8Variant(f.run)})` : ''}: ${((total / ios) * 1e6).toFixed(2)} µs per I/O = ${((total / f.run.poller.cpuSeconds) * 100).toFixed(1)}% of the poller's CPU (per I/O: ${detail || 'no run time: bpf_stats off'})`;
  });
}

const cell = (x: string) => x.replace(/\|/g, '\\|');
const setting = (r: LegacyRun) => (r.delay === 'classic' ? '−1 (classic)' : r.delay === 'adaptive' ? '0 (½ mean)' : `${r.ioPollDelay} µs (${SETTING_LABEL[r.delay]})`) + (l8Variant(r) ? `, ${l8Variant(r)}` : '');

/**
 * The exporter's advice, applied (L9): fed the ½-mean run it names a best static sleep, the
 * io_poll_delay that gives it and the CPU that run wastes against it; the lab ran that setting. On
 * the measured runs alone: the advised run adds no more latency than the budget allows and spends
 * the least poll-loop CPU per I/O of every setting that keeps within it; the exporter's wasted CPU
 * and η of the ½-mean run against the same figures from the three measured runs (classic, ½ mean,
 * advised). The latency a sleep adds is measured as the exporter's budget counts it, against
 * classic polling, less the exporter's own extra on a slept I/O's completion (the rq_complete
 * program's run time per I/O above the classic run's: addedLatencySeconds). Until 2026-12-07 it
 * was measured against the sleeping run that overslept least, which left out what that run's
 * sleeps already added (the model's ½-mean row: 0.05–0.32 µs).
 */
export function adviceChecks(group: string, c: LegacyFigures, a: LegacyFigures, best: LegacyFigures, runs: LegacyFigures[]): LegacyCheck[] {
  const B = LEGACY_BOUNDS;
  const out: LegacyCheck[] = [];
  const loop = (f: LegacyFigures) => pollLoopCpuPerIo(f, c).value ?? NaN;
  const lat = (f: LegacyFigures) => f.run.poller.latUs.mean * 1e-6;
  // the budget as the exporter applies it: a share of the mean device time (its default, 1 %), here of the device's own mean
  const budget = adviceBudgetSeconds(c.run);
  const runLatency = (f: LegacyFigures): RunLatency => ({ meanUs: f.run.poller.latUs.mean, ios: f.run.poller.ios, rqCompleteSeconds: completionEdge(f) });
  const added = (f: LegacyFigures) => (f === c ? 0 : addedLatencySeconds(runLatency(f), runLatency(c)));
  const edge = (f: LegacyFigures) => completionEdgePerIo(runLatency(f));
  const lb = added(best);
  const modelLate = value(parseExposition(a.run.after), 'hybridpoll_policy_added_latency_seconds', { device: a.run.device, policy: 'best_static' });
  out.push(check(group, '9 best latency', "the advised sleep's added mean latency (against the classic run, less rq_complete's extra per slept I/O) within the exporter's latency budget",
    `${us(lb)} added (${us(lat(best))} vs classic ${us(lat(c))}, less rq_complete ${us(edge(best))} − ${us(edge(c))} per I/O; model: ${us(modelLate)}); budget ${ADVICE_BUDGET * 100}% of the device mean ${us(c.device?.meanSeconds)} = ${us(budget)}; ` +
    `advised sleep ${us(a.optimalSleep)} as io_poll_delay ${best.run.ioPollDelay} µs (requested ${us(best.sleepRequested?.mean)}) [the ½-mean run: ${us(added(a))} added]`,
    `≤ budget + ${us(LATENCY_SLACK_S)}`, Number.isFinite(lb) && lb <= budget + LATENCY_SLACK_S));
  // every other setting, those the lab ran above the advice (one µs at a time, up to the first that
  // breaks the budget) among them; one counts as within the budget as measured, without the slack
  // the advice's own latency gets (a setting within the slack is not shown to keep the budget)
  const others = runs.filter((f) => f !== best && f.run.delay !== 'best');
  const rows = others.map((f) => ({ f, cpu: loop(f), inBudget: added(f) <= budget }));
  const mine = loop(best);
  const beaten = rows.filter((r) => r.inBudget && !(mine <= r.cpu * (1 + BEST_SLACK)));
  out.push(check(group, '9 best is best', 'the advised sleep spends the least poll-loop CPU per I/O of the settings that keep within the budget (measured)',
    `advised (${best.run.ioPollDelay} µs) ${us(mine)}/IO; ${rows.map((r) => `${SETTING_LABEL[r.f.run.delay]}${r.f.run.ioPollDelay > 0 ? ` (${r.f.run.ioPollDelay} µs)` : ''} ${us(r.cpu)}/IO (${pct(relErr(mine, r.cpu))}; ${us(added(r.f))} added${r.inBudget ? '' : ', over budget'})`).join('; ')}`,
    `≤ each in budget (+${BEST_SLACK * 100}%)`, Number.isFinite(mine) && rows.some((r) => r.inBudget && r.f !== c) && beaten.length === 0));
  // wasted CPU per I/O of the ½-mean run: the exporter's (measured − cpu(best)) against measured − measured
  const wastedExp = a.wastedCores !== undefined && a.polledIops ? a.wastedCores / a.polledIops : undefined;
  const wastedTrue = loop(a) - mine;
  const ew = relErr(wastedExp, wastedTrue);
  out.push(check(group, '9 wasted', "exporter's wasted CPU per I/O of the ½-mean run vs ½-mean minus advised, both measured",
    `exporter ${us(wastedExp)}/IO (${num(a.wastedCores, 4)} cores at ${Math.round(a.polledIops ?? NaN)} IOPS) vs measured ${us(wastedTrue)}/IO (${us(loop(a))} − ${us(mine)}) (${pct(ew)})`,
    bpct(B.model), within(ew, B.model)));
  // η = (classic − current) / (classic − best): the exporter's from its model, the lab's from three runs
  const etaTrue = (loop(c) - loop(a)) / (loop(c) - mine);
  const ee = relErr(a.efficiency, etaTrue);
  out.push(check(group, '9 efficiency', "exporter's η of the ½-mean run vs η from the classic, ½-mean and advised runs (measured)",
    `exporter ${num(a.efficiency, 3)} vs measured ${num(etaTrue, 3)} ((${us(loop(c))} − ${us(loop(a))}) / (${us(loop(c))} − ${us(mine)})) (${pct(ee)})`,
    bpct(B.model), within(ee, B.model)));
  return out;
}

/** Poll-loop CPU per I/O of two settings at nearly the same sleep (the advised run ties min − wake). */
const BEST_SLACK = 0.01;

/** The measured tables (lab.ts table): one row per run, then the seeds' shape (seedsTable). */
export function legacyTable(s: LegacySession): string {
  return `${runsTable(s)}\n\n${seedsTable(s)}`;
}

/** One row per profile, workload and io_poll_delay. */
export function runsTable(s: LegacySession): string {
  const rows = s.runs.map(legacyFigures).map((f) => {
    const r = f.run;
    const eff = f.efficiency === undefined ? (f.optimalSleep === 0 ? 'n/a (best is 0)' : 'absent') : f.efficiency.toFixed(2);
    return `| ${r.profile} | ${r.workload} | ${setting(r)} | ${(f.cpuUtil * 100).toFixed(1)}% | ${us(f.cpuPerIo)} | ${Math.round(r.poller.iops)} | ${r.poller.latUs.mean.toFixed(2)} µs | ` +
      `${us(f.sleepRequested && f.sleepRequested.count > 0 ? f.sleepRequested.mean : 0)} | ${us(f.wakeOverhead)} | ${us(f.switchCost)} | ${us(f.device?.meanSeconds)} | ${us(f.optimalSleep)} | ${cell(eff)} | ${num(f.wastedCores, 3)} |`;
  });
  return ['| profile | workload | io_poll_delay | poller CPU | CPU per I/O | IOPS | mean latency | sleep (mean requested) | wake overhead | c_sw (model) | device mean (hpsim) | optimal sleep (model) | efficiency | wasted cores |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|', ...rows].join('\n');
}

/** The row of the model fed the ½-mean run that stands for each setting (none for a setting above the advice). */
const MODEL_ROW_OF: Partial<Record<DelayMode, ModelRow>> = { classic: 'classic', adaptive: 'blkmq_half_mean', three_quarter: 'three_quarter_mean', min_wake: 'min_minus_wake', best: 'best_static' };

/**
 * The seeds' shape: per profile and workload, each setting's poller CPU (share of a core, and per
 * I/O) and IOPS, with the model fed the adaptive run beside it (its row for that setting: the
 * modelled CPU share and CPU per I/O) and the share relative to classic.
 */
export function seedsTable(s: LegacySession): string {
  const figs = s.runs.filter((r) => !l8Variant(r)).map(legacyFigures);
  const rows: string[] = [];
  for (const f of figs) {
    const r = f.run;
    const c = figs.find((x) => x.run.profile === r.profile && x.run.workload === r.workload && x.run.delay === 'classic');
    const fed = figs.find((x) => x.run.profile === r.profile && x.run.workload === r.workload && x.run.delay === 'adaptive');
    const row = MODEL_ROW_OF[r.delay];
    const rel = c ? `${((f.cpuUtil / c.cpuUtil) * 100).toFixed(0)}%` : 'n/a';
    const t = pollLoopCpuPerIo(f, c);
    rows.push(`| ${r.profile} | ${r.workload} | ${setting(r)} | ${(f.cpuUtil * 100).toFixed(1)}% (${rel} of classic) | ${Math.round(r.poller.iops)} | ${us(t.value)} | ` +
      `${fed && row ? `${us(fed.model[row])} (sleep ${us(fed.modelSleep[row])}), share ${fed.modelShare[row] === undefined ? 'n/a' : `${(fed.modelShare[row]! * 100).toFixed(1)}%`}` : 'n/a'} |`);
  }
  return ['| profile | workload | setting | poller CPU (measured) | IOPS | poll-loop CPU per I/O (measured) | model fed the ½-mean run: CPU per I/O, its share of a core |',
    '|---|---|---|---|---|---|---|', ...rows].join('\n');
}
