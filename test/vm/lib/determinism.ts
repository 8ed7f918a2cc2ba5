// Determinism across boots (issue 13): two saved sessions of the same profile, figure by figure.
// In virtual time a run's figures depend only on the instructions it executes; what still differs
// between boots is where host-side asynchronous events (virtio, host timers) land, and, for hybrid
// polling, the ring's running minimum, which its first I/Os fix. Pure: sessions in, rows out.
import { median, relErr } from './checks.js';
import { runFigures, type RunFigures } from './figures.js';
import type { PollMode, Session } from './session.js';

/** Bound on |b/a − 1| of every figure: interrupt and classic polling, and hybrid. */
export const SPREAD_BOUND: Record<PollMode, number> = { irq: 0.01, poll: 0.01, hybrid: 0.03 };

export interface SpreadRow {
  scenario: string;
  mode: PollMode;
  /** which runs: untraced (irq runs, A/B runs with the programs detached) or the fentry checked run */
  runs: string;
  figure: string;
  a: number;
  b: number;
  spread: number;
  bound: number;
  pass: boolean;
}

const FIGURES: [string, (r: RunFigures) => number | undefined][] = [
  ['CPU per I/O (µs)', (r) => r.driver.cpuPerIo * 1e6],
  ['wait-phase CPU per I/O (µs)', (r) => r.driver.waitCpuPerIo * 1e6],
  ['IOPS', (r) => r.driver.iops],
  ['p50 latency (µs)', (r) => r.driver.p50us],
  ['vol. switches per I/O', (r) => r.driver.sleepsPerIo],
];

const EXPORTER: [string, (r: RunFigures) => number | undefined][] = [
  ['exporter measured CPU per I/O (µs)', (r) => (r.exporter?.measuredCpuPerIo ?? NaN) * 1e6],
  ['exporter spin per I/O (µs)', (r) => ((r.exporter?.spin?.sum ?? NaN) / r.driver.ios) * 1e6],
  ['current sleep (µs)', (r) => (r.exporter?.currentSleep ?? NaN) * 1e6],
  ['model classic CPU per I/O (µs)', (r) => (r.exporter?.modelClassicCpuPerIo ?? NaN) * 1e6],
];

function groups(s: Session): Map<string, RunFigures[]> {
  const majmin = new Map(s.info.devices.map((d) => [d.name, d.majmin ?? undefined]));
  const out = new Map<string, RunFigures[]>();
  for (const f of s.runs.map((r) => runFigures(r, majmin.get(r.device)))) {
    const r = f.run;
    const kind = r.tracing === 'untraced' ? 'untraced' : !r.ab && r.tracing === 'fentry' ? 'fentry' : undefined;
    if (!kind) continue;
    const key = `${r.scenario}\t${r.mode}\t${kind}`;
    out.set(key, [...(out.get(key) ?? []), f]);
  }
  return out;
}

/**
 * Every figure of every (scenario, mode, runs) both sessions have: the median of each side's runs.
 * A scenario whose device is not on the guest clock (QEMU's NVMe: `model` false) is shown
 * without a bound: its device time follows the host's speed.
 */
export function compareSessions(a: Session, b: Session): SpreadRow[] {
  const hostClock = new Set(a.scenarios.filter((s) => !s.model).map((s) => s.id));
  const ga = groups(a);
  const gb = groups(b);
  const rows: SpreadRow[] = [];
  for (const [key, ra] of ga) {
    const rb = gb.get(key);
    if (!rb) continue;
    const [scenario, mode, runs] = key.split('\t') as [string, PollMode, string];
    const list = runs === 'fentry' ? EXPORTER.filter(([n]) => mode === 'hybrid' || !n.startsWith('current') && !n.startsWith('model')) : FIGURES;
    for (const [figure, f] of list) {
      const x = median(ra.map((r) => f(r) ?? NaN));
      const y = median(rb.map((r) => f(r) ?? NaN));
      if (!Number.isFinite(x) && !Number.isFinite(y)) continue;
      // a figure that is 0 on both sides (sleeps of classic polling) agrees exactly
      const spread = x === 0 && y === 0 ? 0 : relErr(y, x);
      const bound = hostClock.has(scenario) ? Infinity : SPREAD_BOUND[mode];
      rows.push({ scenario, mode, runs, figure, a: x, b: y, spread, bound, pass: Number.isFinite(spread) && Math.abs(spread) <= bound });
    }
  }
  return rows;
}

export function spreadTable(rows: SpreadRow[]): string {
  const f = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(3));
  return ['| workload | mode | runs | figure | boot A | boot B | B/A − 1 | bound | result |', '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.scenario} | ${r.mode} | ${r.runs} | ${r.figure} | ${f(r.a)} | ${f(r.b)} | ${(r.spread * 100).toFixed(2)}% | ${Number.isFinite(r.bound) ? `±${r.bound * 100}%` : 'none (host-clock device)'} | ${Number.isFinite(r.bound) ? (r.pass ? 'pass' : '**FAIL**') : '—'} |`)].join('\n');
}
