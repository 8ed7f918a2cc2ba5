// The report as one self-contained HTML file: inline CSS and SVG, no scripts, no external resources.
// Per device: key figures, the recommendation, the latency distribution with the current and the
// optimal sleep marked, CPU against latency for every policy, and the what-if table. Pure.
import { lowerNs, OVERFLOW, upperNs } from '../model/buckets.js';
import { withheld, type ModelTarget, type PolicyOutcome } from '../model/index.js';
import { VERSION } from '../version.js';
import type { Report, ReportDevice } from './data.js';
import { el, esc, linear, linearTicks, log, logTicks, placeLabels, textWidth } from './svg.js';
import { hostDevices, ringLine } from './text.js';
import { cores, duration, integer, percent } from './units.js';

const COLOR = { current: '#d9480f', optimal: '#2b8a3e', bars: '#a5b4fc', device: '#1c3f95', policy: '#495057', axis: '#868e96' };
const W = 640;
const H = 300;
const M = { left: 58, right: 18, top: 44, bottom: 44 };

const us = (ns: number) => ns / 1000;
const usLabel = (v: number) => (v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1).replace(/\.0$/, '') : String(Number(v.toPrecision(2))));

/** Upper bound of a bucket for plotting; the overflow bucket gets one more octave. */
const plotUpper = (i: number) => (i >= OVERFLOW ? 2 * lowerNs(i) : upperNs(i));

function frame(title: string, cls: string, body: string[], xLabel: string, yLabel: string): string {
  return el('svg', { class: `chart ${cls}`, viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': title, xmlns: 'http://www.w3.org/2000/svg' },
    el('title', {}, esc(title)),
    el('rect', { x: 0, y: 0, width: W, height: H, fill: '#fff' }),
    ...body,
    el('text', { x: (M.left + W - M.right) / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis-label' }, esc(xLabel)),
    el('text', { x: 14, y: (M.top + H - M.bottom) / 2, 'text-anchor': 'middle', class: 'axis-label', transform: `rotate(-90 14 ${(M.top + H - M.bottom) / 2})` }, esc(yLabel)),
  );
}

function axes(xTicks: { x: number; label: string }[], yTicks: { y: number; label: string }[]): string[] {
  const x0 = M.left;
  const x1 = W - M.right;
  const y0 = H - M.bottom;
  return [
    ...yTicks.map((t) => el('line', { x1: x0, x2: x1, y1: t.y, y2: t.y, class: 'grid' })),
    el('line', { x1: x0, x2: x1, y1: y0, y2: y0, class: 'axis' }),
    el('line', { x1: x0, x2: x0, y1: M.top, y2: y0, class: 'axis' }),
    ...xTicks.map((t) => el('g', {}, el('line', { x1: t.x, x2: t.x, y1: y0, y2: y0 + 4, class: 'axis' }), el('text', { x: t.x, y: y0 + 16, 'text-anchor': 'middle', class: 'tick' }, esc(t.label)))),
    ...yTicks.map((t) => el('text', { x: x0 - 6, y: t.y + 4, 'text-anchor': 'end', class: 'tick' }, esc(t.label))),
  ];
}

interface MarkerSpec {
  kind: 'current' | 'optimal';
  x: number;
  label: string;
  color: string;
}

/**
 * The two sleep markers: vertical lines with their labels on two rows above the plot. Labels point
 * away from the other marker where they fit, and the row order keeps a label that points towards
 * the other marker above that marker's line, so no text crosses a line.
 */
function markers(a: MarkerSpec, b: MarkerSpec): string[] {
  const [left, right] = a.x <= b.x ? [a, b] : [b, a];
  const width = (m: MarkerSpec) => textWidth(m.label, 12) + 6;
  const leftAnchor = left.x - width(left) >= 2 ? 'end' : 'start';
  const rightAnchor = right.x + width(right) <= W - 2 ? 'start' : 'end';
  const leftRow = leftAnchor === 'start' ? 0 : rightAnchor === 'end' ? 1 : 0;
  const draw = (m: MarkerSpec, anchor: 'start' | 'end', row: number) => {
    const ty = 14 + row * 14;
    return el('g', { 'data-marker': m.kind, class: `marker marker-${m.kind}` },
      el('line', { x1: m.x, x2: m.x, y1: ty + 3, y2: H - M.bottom, stroke: m.color, 'stroke-width': 2 }),
      el('text', { x: anchor === 'start' ? m.x + 4 : m.x - 4, y: ty, 'text-anchor': anchor, fill: m.color, class: 'marker-label' }, esc(m.label)),
    );
  };
  return [draw(left, leftAnchor, leftRow), draw(right, rightAnchor, 1 - leftRow)];
}

function wake(kind: 'current' | 'optimal', x: number, color: string): string {
  return el('line', { 'data-wake': kind, x1: x, x2: x, y1: M.top, y2: H - M.bottom, stroke: color, 'stroke-width': 1, 'stroke-dasharray': '4 3', opacity: 0.8 });
}

/** Issue → reaped latency (bars) and the estimated device time F_D (outline) on the log grid, sleeps marked. */
export function latencyChart(d: ReportDevice): string {
  const t = d.target;
  const total = d.latency.reduce((a, [, c]) => a + c, 0);
  const lat = d.latency.filter(([, c]) => c > 0).map(([i, c]) => ({ i, p: c / total }));
  const dev = t.deviceTime.masses.filter(([, p]) => p > 0).map(([i, p]) => ({ i, p }));
  const wakeOf = (s: number) => s + t.wakeOverhead.meanNs;
  const sleeps = [t.current.sleepNs, t.best.sleepNs, wakeOf(t.current.sleepNs), wakeOf(t.best.sleepNs)].filter((v) => v > 0);
  const bounds = [...lat, ...dev].flatMap(({ i }) => [Math.max(lowerNs(i), 1), plotUpper(i)]);
  const lo = Math.min(...bounds, ...sleeps) / 1.4;
  const hi = Math.max(...bounds, ...sleeps) * 1.4;
  const x = log([lo, hi], [M.left, W - M.right]);
  const pMax = Math.max(...lat.map((b) => b.p), ...dev.map((b) => b.p), 1e-9);
  const yTop = pMax * 1.45;
  const y = linear([0, yTop], [H - M.bottom, M.top]);
  const bars = lat.map(({ i, p }) =>
    el('rect', { class: 'bar', x: x(Math.max(lowerNs(i), lo)) + 0.5, y: y(p), width: Math.max(1, x(plotUpper(i)) - x(Math.max(lowerNs(i), lo)) - 1), height: y(0) - y(p), fill: COLOR.bars },
      el('title', {}, esc(`(${duration(lowerNs(i))}, ${duration(plotUpper(i))}]: ${percent(p)} of I/Os`))));
  // F_D as a step outline over its buckets.
  let path = '';
  for (const { i, p } of [...dev].sort((a, b) => a.i - b.i)) {
    const x0 = x(Math.max(lowerNs(i), lo));
    const x1 = x(plotUpper(i));
    path += `${path ? 'L' : 'M'}${x0.toFixed(2)},${y(0).toFixed(2)}L${x0.toFixed(2)},${y(p).toFixed(2)}L${x1.toFixed(2)},${y(p).toFixed(2)}L${x1.toFixed(2)},${y(0).toFixed(2)}`;
  }
  const xTicks = logTicks(lo, hi).map((v) => ({ x: x(v), label: usLabel(us(v)) }));
  const yTicks = linearTicks(0, yTop, 4).map((v) => ({ y: y(v), label: percent(v, v < 0.1 && v > 0 ? 1 : 0) }));
  // Headroom above the tallest bar holds the legend.
  const lx = W - M.right - 218;
  const legend = el('g', { class: 'legend' },
    el('rect', { x: lx - 6, y: M.top - 2, width: 218, height: 52, fill: '#fff', opacity: 0.9 }),
    el('rect', { x: lx, y: M.top + 2, width: 12, height: 10, fill: COLOR.bars }),
    el('text', { x: lx + 16, y: M.top + 11 }, 'issue → reaped (measured)'),
    el('line', { x1: lx, x2: lx + 12, y1: M.top + 24, y2: M.top + 24, stroke: COLOR.device, 'stroke-width': 2 }),
    el('text', { x: lx + 16, y: M.top + 28 }, esc(`device time D (${t.deviceTime.source})`)),
    el('line', { x1: lx, x2: lx + 12, y1: M.top + 41, y2: M.top + 41, stroke: COLOR.axis, 'stroke-dasharray': '4 3' }),
    el('text', { x: lx + 16, y: M.top + 45 }, 'wake-up: sleep + mean O'),
  );
  const sx = (s: number) => (s > 0 ? x(s) : M.left);
  return frame(`${t.device}: latency distribution with the current and the optimal sleep`, 'latency', [
    ...axes(xTicks, yTicks),
    ...bars,
    path ? el('path', { d: path, fill: 'none', stroke: COLOR.device, 'stroke-width': 1.6, class: 'device-time' }) : '',
    t.current.sleepNs > 0 ? wake('current', x(wakeOf(t.current.sleepNs)), COLOR.current) : '',
    t.best.sleepNs > 0 ? wake('optimal', x(wakeOf(t.best.sleepNs)), COLOR.optimal) : '',
    ...markers(
      { kind: 'current', x: sx(t.current.sleepNs), label: `current sleep ${duration(t.current.sleepNs)}`, color: COLOR.current },
      { kind: 'optimal', x: sx(t.best.sleepNs), label: `optimal sleep ${duration(t.best.sleepNs)}`, color: COLOR.optimal },
    ),
    legend,
  ], 'time from issue (µs, log scale)', 'share of I/Os per bucket');
}

interface Point {
  name: string;
  o: Omit<PolicyOutcome, 'policy'>;
  kind: 'current' | 'optimal' | 'policy';
}

/** CPU per I/O against mean latency for every policy and the measured current state; the budget as a line. */
export function policyChart(t: ModelTarget): string {
  const points: Point[] = [
    ...t.policies.filter((p) => p.policy !== 'best_static').map((p): Point => ({ name: p.policy, o: p, kind: 'policy' })),
    { name: `best_static (optimal)`, o: t.best, kind: 'optimal' },
    { name: `current (${t.current.policy})`, o: t.current.outcome, kind: 'current' },
  ];
  const budgetNs = t.deviceTime.meanNs * (1 + t.latencyBudget);
  const xs = [...points.map((p) => p.o.latencyNs), budgetNs];
  const xSpan = Math.max(Math.max(...xs) - Math.min(...xs), 0.02 * Math.max(...xs));
  const x = linear([Math.min(...xs) - 0.12 * xSpan, Math.max(...xs) + 0.45 * xSpan], [M.left, W - M.right]);
  const yMax = Math.max(...points.map((p) => p.o.cpuNs)) * 1.1;
  const y = linear([0, yMax], [H - M.bottom, M.top]);
  const xTicks = linearTicks(us(x.domain[0]), us(x.domain[1]), 5).map((v) => ({ x: x(v * 1000), label: String(Number(v.toPrecision(4))) }));
  const yTicks = linearTicks(0, us(yMax), 4).map((v) => ({ y: y(v * 1000), label: usLabel(v) }));
  const color = (p: Point) => (p.kind === 'current' ? COLOR.current : p.kind === 'optimal' ? COLOR.optimal : COLOR.policy);
  const label = (p: Point) => `${p.name} ${duration(p.o.sleepNs)}`;
  // Current and optimal are labelled first, so they get the best spots.
  const order = [...points.keys()].sort((a, b) => Number(points[b]!.kind !== 'policy') - Number(points[a]!.kind !== 'policy'));
  const placed = placeLabels(
    order.map((k) => ({ x: x(points[k]!.o.latencyNs), y: y(points[k]!.o.cpuNs), label: label(points[k]!) })),
    11,
    { x: M.left + 2, y: M.top, w: W - M.right - M.left - 2, h: H - M.bottom - M.top },
  );
  const dots = order.map((k, j) => {
    const p = points[k]!;
    const px = x(p.o.latencyNs);
    const py = y(p.o.cpuNs);
    const at = placed[j]!;
    const shape = p.kind === 'current'
      ? el('path', { d: `M${px - 6},${py}L${px},${py - 6}L${px + 6},${py}L${px},${py + 6}Z`, fill: color(p) })
      : el('circle', { cx: px, cy: py, r: p.kind === 'optimal' ? 6 : 4, fill: color(p) });
    const ly = at.y - 4;
    const leader = Math.abs(ly - py) > 4 ? el('line', { x1: px, y1: py, x2: at.anchor === 'start' ? at.x - 2 : at.x + 2, y2: ly, stroke: '#ced4da', 'stroke-width': 1 }) : '';
    return el('g', { 'data-point': p.kind === 'policy' ? p.name : p.kind, class: `point point-${p.kind}` },
      el('title', {}, esc(`${p.name}: sleep ${duration(p.o.sleepNs)}, CPU ${duration(p.o.cpuNs)} per I/O, latency ${duration(p.o.latencyNs)}, added ${duration(p.o.lateNs)}`)),
      leader, shape,
      el('text', { x: at.x, y: at.y, 'text-anchor': at.anchor, fill: color(p), class: 'point-label' }, esc(label(p))));
  });
  const bx = x(budgetNs);
  return frame(`${t.device}: CPU against latency per policy`, 'policies', [
    ...axes(xTicks, yTicks),
    el('g', { 'data-budget': 'latency' },
      el('line', { x1: bx, x2: bx, y1: M.top, y2: H - M.bottom, stroke: COLOR.axis, 'stroke-dasharray': '5 4' }),
      el('text', { x: bx + 4, y: M.top - 6, class: 'note' }, esc(`latency budget (+${percent(t.latencyBudget, 0)} of E[D])`))),
    ...dots,
  ], 'mean latency per I/O (µs)', 'CPU per I/O (µs)');
}

function card(label: string, value: string, sub: string, cls = ''): string {
  return `<div class="card ${cls}"><div class="label">${esc(label)}</div><div class="value">${esc(value)}</div><div class="sub">${esc(sub)}</div></div>`;
}

function whatIf(t: ModelTarget): string {
  const row = (name: string, o: Omit<PolicyOutcome, 'policy'>, cls: string) =>
    `<tr class="${cls}"><td>${esc(name)}</td><td>${duration(o.sleepNs)}</td><td>${duration(o.cpuNs)}</td><td>${percent(o.cpuShare)}</td>` +
    `<td>${duration(o.lateNs)}</td><td>${duration(o.latencyNs)}</td><td>${percent(Math.max(0, o.oversleepProbability))}</td><td>${o.meetsBudget ? 'yes' : 'no'}</td></tr>`;
  return `<table class="whatif"><thead><tr><th>policy</th><th>sleep</th><th>CPU / I/O</th><th>CPU share</th><th>added latency</th><th>latency</th><th>overslept</th><th>in budget</th></tr></thead><tbody>
${row('current (measured)', t.current.outcome, 'current')}
${t.policies.map((p) => row(p.policy, p, p.policy === 'best_static' ? 'optimal' : p.policy === t.current.policy ? 'kernel' : '')).join('\n')}
</tbody></table>`;
}

/** The device's caveats as a list; nothing when there are none. */
function caveatList(d: ReportDevice): string {
  const c = d.caveats;
  const items = ([['not identified', c.identified], ['unresolved', c.unresolved], ['oversleep check', c.oversleep], ['efficiency', c.efficiency], ['wasted CPU', c.wastedCpu]] as const).filter(([, v]) => v !== undefined);
  if (items.length === 0) return '';
  return `<ul class="caveats">${items.map(([k, v]) => `<li data-caveat="${esc(k)}"><b>${esc(k)}:</b> ${esc(v!)}</li>`).join('')}</ul>`;
}

/** A device a ring over several devices polls: what was measured, and why the model's figures are withheld. */
function sharedRingSection(t: ReportDevice['target']): string {
  const m = t.measured;
  return `${sectionHead(t)}
<div class="cards">
${card('current sleep', duration(t.current.sleepNs), `${t.current.policy}, ${percent(t.current.sleptFraction, 0)} of I/Os (the ring's one sleep)`, 'current')}
${card('oversleep', m?.oversleepRatio === undefined ? 'n/a' : percent(m.oversleepRatio), 'measured')}
${card('shared ring', `${t.sharedRing!.pollsPerIo.toFixed(1)}`, 'poll calls per I/O in passes over several devices')}
</div>
${recommendation(t)}
</section>`;
}

/** A device section's opening and heading: name, number, polled IOPS, window. */
function sectionHead(t: ReportDevice['target']): string {
  const m = t.measured;
  return `<section class="device" id="device-${esc(t.device)}">
<h2>${esc(t.device)} <span class="dim">${esc(t.dev)}${m ? ` · ${integer(m.iops)} polled IOPS` : ''} · window ${t.windowSeconds.toFixed(0)} s</span></h2>`;
}

/** The recommendation, with what it rests on unless that is the model. */
function recommendation(t: ReportDevice['target']): string {
  return `<p class="recommendation">${esc(t.recommendation)}${t.advice === 'model' ? '' : ` <b>[${esc(t.advice)}]</b>`}</p>`;
}

function deviceSection(d: ReportDevice): string {
  const t = d.target;
  if (withheld(t)) return sharedRingSection(t);
  const m = t.measured;
  const eff = t.efficiency === undefined ? 'n/a' : percent(t.efficiency, 0);
  return `${sectionHead(t)}
<div class="cards">
${card('current sleep', duration(t.current.sleepNs), `${t.current.policy}, ${percent(t.current.sleptFraction, 0)} of I/Os`, 'current')}
${card('optimal sleep', duration(t.best.sleepNs), `best static, ${percent(t.latencyBudget, 0)} latency budget`, 'optimal')}
${card('efficiency', eff, '100% = best static sleep, 0% = classic')}
${card('wasted CPU', t.wastedCpuCores === undefined ? 'n/a' : cores(t.wastedCpuCores), 'measured − optimal, × IOPS')}
${card('oversleep', m?.oversleepRatio === undefined ? 'n/a' : percent(m.oversleepRatio), `adds ${duration(t.current.outcome.lateNs)} per I/O`)}
${card('CPU per I/O', m ? duration(m.cpuPerIoNs) : 'n/a', `modelled ${duration(t.current.outcome.cpuNs)}${t.modelCpuErrorRatio === undefined ? '' : ` (${t.modelCpuErrorRatio >= 0 ? '+' : ''}${percent(t.modelCpuErrorRatio)})`}`)}
</div>
${t.sharedRing?.ring ? `<p class="ring">${esc(ringLine(t.sharedRing.ring))}</p>` : ''}
${recommendation(t)}
${caveatList(d)}
<div class="charts">
<figure>${latencyChart(d)}<figcaption>Latency distribution: measured issue → reaped, and the device time D estimated from ${integer(t.deviceTime.samples)} samples (${integer(t.deviceTime.censored)} censored). Wake overhead O: mean ${duration(t.wakeOverhead.meanNs)}; c_sw ${duration(t.switchCostNs)}.</figcaption></figure>
<figure>${policyChart(t)}<figcaption>CPU per I/O against mean latency for each policy on the same D and O. Left of the dashed line: within the latency budget.</figcaption></figure>
</div>
${whatIf(t)}
</section>`;
}

const CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1360px;padding:0 1.5em;color:#212529;background:#f8f9fa}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.3em;margin:.2em 0 .6em}.dim{color:#868e96;font-weight:normal;font-size:.8em}
.meta{color:#495057;margin:0 0 1.5em}.meta td{padding:.1em 1em .1em 0}
section.device{background:#fff;border:1px solid #dee2e6;border-radius:8px;padding:1.2em 1.5em;margin-bottom:1.5em}
.cards{display:grid;grid-template-columns:repeat(6,1fr);gap:.8em}
.card{border:1px solid #e9ecef;border-radius:6px;padding:.6em .8em}.card .label{font-size:.8em;color:#868e96;text-transform:uppercase;letter-spacing:.03em}
.card .value{font-size:1.5em;font-weight:600;margin:.1em 0}.card .sub{font-size:.8em;color:#495057}
.card.current .value{color:${COLOR.current}}.card.optimal .value{color:${COLOR.optimal}}
.recommendation{background:#fff9db;border-left:4px solid #fab005;padding:.6em 1em;margin:1em 0}
.caveats{color:#862e9c;font-size:.9em;margin:-.4em 0 1em}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:1.2em}figure{margin:0}figcaption{font-size:.85em;color:#495057;margin-top:.3em}
svg.chart{width:100%;height:auto;border:1px solid #e9ecef;border-radius:6px;font-size:11px}
svg .axis{stroke:#868e96}svg .grid{stroke:#f1f3f5}svg .tick{fill:#495057}svg .axis-label{fill:#495057;font-size:12px}
svg .marker-label{font-weight:600;font-size:12px}svg .legend text,svg .note{fill:#495057}svg .point-label{font-size:11px}
table.whatif{border-collapse:collapse;margin-top:1em;width:100%;font-variant-numeric:tabular-nums}
.whatif th,.whatif td{padding:.3em .7em;text-align:right;border-bottom:1px solid #e9ecef}.whatif th:first-child,.whatif td:first-child{text-align:left}
.whatif tr.current td{color:${COLOR.current};font-weight:600}.whatif tr.optimal td{color:${COLOR.optimal};font-weight:600}.whatif tr.kernel td:first-child::after{content:" (kernel policy)";color:#868e96;font-weight:normal}
.rings td,.rings th{padding:.2em 1em .2em 0;text-align:left}.note-list{color:#862e9c}
@media (max-width:1000px){.charts{grid-template-columns:1fr}.cards{grid-template-columns:repeat(3,1fr)}}
`;

export function renderHtml(r: Report): string {
  const src = r.source.kind === 'live' ? 'live snapshots' : `recording ${r.source.file} (${r.source.header.source}, created ${r.source.header.created})`;
  const rings = r.rings.length === 0 ? '' : `<section class="device"><h2>io_uring rings</h2><table class="rings"><tr><th>ring</th><th>process</th><th>mode</th><th>hybrid_poll_time</th><th>kernel sleep</th><th>sleeps in window</th><th>poller CPU per I/O</th><th>poller CPU</th></tr>
${r.rings.map((g) => `<tr><td>${esc(g.ring)}</td><td>${esc(g.comm)} (pid ${g.pid})</td><td>${g.hybrid ? 'hybrid' : 'classic'}</td><td>${g.hybridPollTimeNs === null ? 'no estimate' : duration(g.hybridPollTimeNs)}</td><td>${g.hybridPollTimeNs === null ? '' : duration(Math.floor(g.hybridPollTimeNs / 2))}</td><td>${integer(g.sleeps)}</td><td>${g.loops ? duration(g.loops.cpuPerIoNs) : 'n/a'}</td><td>${g.loops ? cores(g.loops.cores) : 'n/a'}</td></tr>`).join('\n')}
</table></section>`;
  const notes = r.notes.length === 0 && r.devices.length > 0 ? '' : `<section class="device note-list"><h2>Notes</h2><ul>${(r.notes.length ? r.notes : ['nothing to analyse in this window']).map((n) => `<li>${esc(n)}</li>`).join('')}</ul></section>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light">
<title>hybridpoll report: ${esc(r.host)}</title><style>${CSS}</style></head>
<body>
<h1>Hybrid polling report: ${esc(r.host)}</h1>
<table class="meta">
<tr><td>source</td><td>${esc(src)}</td></tr>
<tr><td>kernel</td><td>${esc(r.kernel.release ?? 'release unknown')}, era <b>${esc(r.kernel.era)}</b> (${esc(r.kernel.evidence)})</td></tr>
<tr><td>BPF</td><td>${esc(r.bpf.state)}${r.bpf.pollPath ? `, ${esc(r.bpf.pollPath)} path` : ''}${r.bpf.state === 'running' ? '' : `: ${esc(r.bpf.reason)}`}</td></tr>
<tr><td>window</td><td>${esc(r.window.from)} → ${esc(r.window.to)} (${r.window.seconds.toFixed(0)} s)</td></tr>
<tr><td>devices</td><td>${esc(hostDevices(r.hostDevices))}</td></tr>
<tr><td>latency budget</td><td>best_static may add ${percent(r.latencyBudget, r.latencyBudget < 0.01 ? 1 : 0)} of the mean device time</td></tr>
</table>
${r.devices.map(deviceSection).join('\n')}
${rings}
${notes}
<p class="dim">Generated ${esc(r.generated)} by hybridpoll-exporter ${esc(VERSION)}. Model: QD1, design.md §5; times per I/O.</p>
</body></html>
`;
}
