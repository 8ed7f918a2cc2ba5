// The report as a plain-text table for a terminal. Pure: Report in, string out.
import { withheld, type KernelTerms, type PolicyOutcome, type RingState } from '../model/index.js';
import type { Report, ReportDevice, ReportHostDevice } from './data.js';
import { cores, duration, integer, percent } from './units.js';

/** Columns two spaces apart: the first and the last left-aligned, the others right-aligned (numbers). */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const last = widths.length - 1;
  return rows.map((r) => r.map((cell, c) => (c === 0 || c === last ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  ').trimEnd());
}

/** Probabilities from the model can come out a hair below 0 by rounding; show those as 0. */
const probability = (p: number) => percent(Math.max(0, p));

function sourceLine(r: Report): string {
  if (r.source.kind === 'live') return `${r.host} (live)`;
  const h = r.source.header;
  return `${r.host} (recording ${r.source.file}: ${h.source}, created ${h.created})`;
}

const outcomeRow = (name: string, o: Omit<PolicyOutcome, 'policy'>, mark: string): string[] => [
  name,
  duration(o.sleepNs),
  duration(o.cpuNs),
  percent(o.cpuShare),
  duration(o.lateNs),
  duration(o.latencyNs),
  probability(o.oversleepProbability),
  o.meetsBudget ? 'yes' : 'no',
  mark,
];

function device(d: ReportDevice): string[] {
  const t = d.target;
  const c = t.current;
  const m = t.measured;
  const lines = [`${t.device} (${t.dev})`];
  const kv = (k: string, v: string) => lines.push(`  ${k.padEnd(18)}${v}`);
  if (m) kv('polled I/O', `${integer(m.iops)} IOPS, ${integer(m.polledIos)} I/Os in ${t.windowSeconds.toFixed(0)} s`);
  if (withheld(t)) {
    sharedRingRows(t, kv);
    return [...lines, ...verdict(t)];
  }
  const dt = t.deviceTime;
  const notes = d.caveats;
  kv('device time D', `mean ${duration(dt.meanNs)}, p50 ${duration(dt.p50Ns)}, p99 ${duration(dt.p99Ns)} (${dt.source}: ${integer(dt.samples)} samples, ${integer(dt.censored)} censored)`);
  if (notes.identified) kv('not identified', notes.identified);
  if (notes.unresolved) kv('unresolved', notes.unresolved);
  // at depth the model runs on F_D fitted to rq_lat (src/model/depth.ts fitDeviceTime), not on the estimate above
  if (t.depth?.method === 'simulation') kv('at depth', `${t.depth.meanInFlight.toFixed(1)} I/Os in flight per wait: the model simulates the poller there, on D fitted to the measured latency (mean ${duration(t.depth.meanDeviceNs)})`);
  if (t.sharedRing?.ring) kv('ring', ringLine(t.sharedRing.ring));
  kv('wake overhead O', `mean ${duration(t.wakeOverhead.meanNs)} (${t.wakeOverhead.source}); sleep/wake CPU c_sw ${duration(t.switchCostNs)} (${t.switchCostSource})`);
  if (t.kernel) kv('kernel terms', kernelTerms(t.kernel));
  const sleptOn = c.sleptFraction > 0 ? `, on ${percent(c.sleptFraction)} of I/Os (${c.sleepSource.replace('_', ' ')})` : '';
  kv('current sleep', `${duration(c.sleepNs)}  ${c.policy}${sleptOn}`);
  const bound = t.bound && t.advice !== 'model' ? `; within it whatever the unresolved device times: ${t.bound.sleepNs > 0 ? duration(t.bound.sleepNs) : 'none'}` : '';
  kv('optimal sleep', `${duration(t.best.sleepNs)}  best_static within the ${percent(t.latencyBudget, 0)} latency budget${bound}`);
  kv('efficiency', t.efficiency === undefined ? 'n/a: no static sleep beats classic polling' : `${percent(t.efficiency)}  (100% = the best static sleep, 0% = classic polling)${notes.efficiency ? `; ${notes.efficiency}` : ''}`);
  if (m) {
    const check = t.modelCpuErrorRatio === undefined ? '' : ` (self-check ${t.modelCpuErrorRatio >= 0 ? '+' : ''}${percent(t.modelCpuErrorRatio)})`;
    kv('CPU per I/O', `measured ${duration(m.cpuPerIoNs)}, modelled ${duration(c.outcome.cpuNs)}${check}`);
  }
  if (t.wastedCpuCores !== undefined) kv('wasted CPU', `${cores(t.wastedCpuCores)}${notes.wastedCpu ? ` (${notes.wastedCpu})` : ''}`);
  const over = m?.oversleepRatio === undefined ? 'not measured' : `${percent(m.oversleepRatio)} of slept I/Os already complete at wake-up`;
  kv('oversleep', `${over}; modelled to add ${duration(c.outcome.lateNs)} per I/O`);
  if (notes.oversleep) kv('oversleep check', notes.oversleep);
  lines.push('');
  const rows = [
    ['what-if, per I/O', 'sleep', 'CPU', 'CPU share', 'added latency', 'latency', 'overslept', 'in budget', ''],
    outcomeRow('current (measured)', c.outcome, ''),
    ...t.policies.map((p) => outcomeRow(p.policy, p, p.policy === 'best_static' ? '<- optimal' : p.policy === c.policy ? '<- kernel policy' : '')),
  ];
  lines.push(...table(rows).map((l) => `  ${l}`));
  if (dt.unresolved > 0) lines.push(`  (in budget: with the unresolved ${percent(dt.unresolved)} at its found time; the recommendation says what holds whatever their times)`);
  lines.push(...verdict(t));
  return lines;
}

/** The recommendation line, with what it rests on unless that is the model. */
const verdict = (t: ReportDevice['target']): string[] => ['', `  => ${t.recommendation}${t.advice === 'model' ? '' : ` [${t.advice}]`}`];

/** A ring over several devices modelled whole: its devices, its CPU, its self-check, and this device's part. */
export function ringLine(r: RingState): string {
  const check = `${r.modelCpuErrorRatio >= 0 ? '+' : ''}${percent(r.modelCpuErrorRatio)}`;
  return `one io_uring ring polls ${r.devices.join(', ')} with one sleep: the model runs the ring whole (CPU per I/O over the ring: measured ${duration(r.measuredCpuPerIoNs)}, modelled ${duration(r.currentCpuNs)}, self-check ${check}; best ${duration(r.bestCpuNs)}, ${r.bestSleepNs > 0 ? `sleeping ${duration(r.bestSleepNs)}` : 'classic polling'}); this device's figures are its part, ${percent(r.cpuShare)} of the ring's CPU`;
}

/** "poll_stat mean 55.1 µs (sleep_req), 3.4 µs over the modelled latency; timer lag 320 ns" */
function kernelTerms(k: KernelTerms): string {
  const mean = k.meanNs !== undefined ? `the kernel's completion mean ${duration(k.meanNs)} (${k.meanSource?.replace('_', ' ')}), ${duration(Math.abs(k.offsetNs))} ${k.offsetNs >= 0 ? 'over' : 'under'} the modelled latency` : '';
  const lag = k.timerLagNs !== 0 ? `timer armed ${duration(k.timerLagNs)} before the sleep BPF sees` : '';
  return `${[mean, lag].filter(Boolean).join('; ')}: the block layer's rows sleep by them`;
}

/** A device a ring over several devices polls: what was measured, and why the model's figures are withheld. */
function sharedRingRows(t: ReportDevice['target'], kv: (k: string, v: string) => void): void {
  const c = t.current;
  const m = t.measured;
  kv('current sleep', `${duration(c.sleepNs)}  ${c.policy}${c.sleptFraction > 0 ? `, on ${percent(c.sleptFraction)} of I/Os (the ring's one sleep)` : ''}`);
  kv('oversleep', m?.oversleepRatio === undefined ? 'not measured' : `${percent(m.oversleepRatio)} of slept I/Os already complete at wake-up`);
  kv('shared ring', `${t.sharedRing!.pollsPerIo.toFixed(1)} poll calls per I/O in passes that also polled another device: one poller serves several devices, so efficiency, optimal sleep, wasted CPU and the what-if table are not modelled per device`);
}

/** "nvme0n1 (io_poll 1, 2 poll queues)" */
function hostDevice(d: ReportHostDevice): string {
  const parts = [d.ioPoll === undefined ? undefined : `io_poll ${d.ioPoll}`, d.pollQueues === undefined ? undefined : `${d.pollQueues} poll queue${d.pollQueues === 1 ? '' : 's'}`];
  const known = parts.filter((x) => x !== undefined);
  return known.length ? `${d.device} (${known.join(', ')})` : d.device;
}

/** The devices that can poll, in full; the others counted. */
export function hostDevices(list: ReportHostDevice[]): string {
  if (list.length === 0) return 'none read';
  const polling = list.filter((d) => d.ioPoll === 1);
  const others = list.length - polling.length;
  if (polling.length === 0) return `${others} device${others === 1 ? '' : 's'}, none can poll (io_poll 0 or unknown)`;
  const rest = others === 0 ? '' : `; ${others} other${others === 1 ? '' : 's'} without polling (io_poll 0 or unknown)`;
  return polling.map(hostDevice).join(', ') + rest;
}

export function renderText(r: Report): string {
  const lines = [
    'hybridpoll-exporter report',
    `  host        ${sourceLine(r)}`,
    `  kernel      ${r.kernel.release ?? 'release unknown'}, era ${r.kernel.era} (${r.kernel.evidence})`,
    `  BPF         ${r.bpf.state}${r.bpf.pollPath ? `, ${r.bpf.pollPath} path` : ''}${r.bpf.state === 'running' ? '' : `: ${r.bpf.reason}`}`,
    `  window      ${r.window.from} -> ${r.window.to} (${r.window.seconds.toFixed(0)} s)`,
    `  devices     ${hostDevices(r.hostDevices)}`,
    `  budget      best_static may add ${percent(r.latencyBudget, r.latencyBudget < 0.01 ? 1 : 0)} of the mean device time as latency`,
  ];
  for (const d of r.devices) lines.push('', ...device(d));
  if (r.rings.length > 0) {
    lines.push('', 'io_uring rings');
    lines.push(...table(r.rings.map((g) => [
      `  ring ${g.ring}`,
      `${g.comm} (pid ${g.pid})`,
      g.hybrid ? 'hybrid' : 'classic',
      g.hybridPollTimeNs === null ? 'no estimate yet' : `hybrid_poll_time ${duration(g.hybridPollTimeNs)}, sleeps ${duration(Math.floor(g.hybridPollTimeNs / 2))}`,
      `${integer(g.sleeps)} sleeps in the window`,
      g.loops ? `poller CPU ${duration(g.loops.cpuPerIoNs)} per I/O, ${cores(g.loops.cores)} over ${integer(g.loops.polledIos)} I/Os` : '',
    ])));
  }
  if (r.devices.length === 0 && r.notes.length === 0) lines.push('', 'Nothing to analyse in this window.');
  if (r.notes.length > 0) lines.push('', ...r.notes.map((n) => `note: ${n}`));
  return lines.join('\n') + '\n';
}
