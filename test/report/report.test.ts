// report: the analysis of the shipped recording as text and JSON, the recording window, the CLI.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordingWindow } from '../../src/cli/reportRun.js';
import { SYNTHETIC_RECORDING } from '../../src/record/shipped.js';
import { buildReport, type Report } from '../../src/report/data.js';
import { renderHtml } from '../../src/report/html.js';
import { renderJson } from '../../src/report/json.js';
import { renderText } from '../../src/report/text.js';
import { placeLabels } from '../../src/report/svg.js';
import { CLI, fixtureArgs } from '../helpers/exporter.js';
import { firstPhase } from './shipped.js';

const dir = mkdtempSync(join(tmpdir(), 'hp-report-'));

describe('report on the shipped recording', () => {
  it('recovers the synthetic device model and the design anchors (½ mean ≈ 55 %, ¾ mean ≈ 30 % CPU)', async () => {
    const r = await firstPhase();
    expect(r.devices.map((d) => d.target.device)).toEqual(['nvme0n1', 'nvme1n1']);
    const [a, b] = r.devices.map((d) => d.target);
    // nvme0n1: D ~ 10 µs (mean 10.1 µs with the outliers), O ≈ 1 µs, c_sw measured = 1.5 µs.
    expect(a!.deviceTime.meanNs).toBeGreaterThan(9_900);
    expect(a!.deviceTime.meanNs).toBeLessThan(10_500);
    expect(a!.wakeOverhead.meanNs).toBeGreaterThan(900);
    expect(a!.wakeOverhead.meanNs).toBeLessThan(1_100);
    expect(Math.abs(a!.switchCostNs - 1500)).toBeLessThan(10);
    const share = (name: string) => a!.policies.find((p) => p.policy === name)!.cpuShare;
    expect(share('blkmq_half_mean')).toBeGreaterThan(0.5);
    expect(share('blkmq_half_mean')).toBeLessThan(0.6);
    expect(share('three_quarter_mean')).toBeGreaterThan(0.25);
    expect(share('three_quarter_mean')).toBeLessThan(0.35);
    // The kernel's io_uring rule: half the ring's running minimum, set by the first I/O at 850 ns.
    expect(a!.current.policy).toBe('iouring_half_min');
    expect(a!.current.sleepNs).toBe(425);
    expect(r.rings.find((g) => g.comm === 'fio')!.hybridPollTimeNs).toBe(850);
    expect(a!.best.sleepNs).toBeGreaterThan(6_000);
    expect(a!.wastedCpuCores!).toBeGreaterThan(0.3);
    // Generated from the model's own assumptions, the self-check must be close.
    expect(Math.abs(a!.modelCpuErrorRatio!)).toBeLessThan(0.03);
    // nvme1n1 oversleeps: censored samples, oversleep measured, added latency beyond the budget.
    expect(b!.deviceTime.source).toBe('censored_km');
    expect(b!.deviceTime.censored).toBeGreaterThan(0);
    expect(b!.measured!.oversleepRatio!).toBeGreaterThan(0.25);
    expect(b!.current.outcome.meetsBudget).toBe(false);
    // E[D] of the generator: median 4.3 µs, σ 0.05, 0.5% outliers × U(1.5, 3) → 4.332 µs. The
    // censored device's exact part is scaled to dev_spun's exact mean: within 1.5% (the poll call,
    // 200 ns, rides on each spun sample).
    expect(Math.abs(b!.deviceTime.meanNs / 4332 - 1)).toBeLessThan(0.015);
    // The wake-up (4.25 µs) sits inside this tight D, where the grid's error is at most ρ/8 of
    // E[D] (ρ = 2/9, test/model/analyse.test.ts), ~6% of the measured CPU here.
    expect(Math.abs(b!.current.outcome.cpuNs - b!.measured!.cpuPerIoNs)).toBeLessThan((2 / 9 / 8) * b!.deviceTime.meanNs);
    // Its few unresolved I/Os (below every exact sample) are reported, and the advice says what it rests on.
    expect(b!.deviceTime.unresolved).toBeGreaterThan(0);
    expect(b!.deviceTime.unresolved).toBeLessThan(0.05);
    expect(['bounded', 'withheld']).toContain(b!.advice);
    expect(a!.deviceTime.unresolved).toBe(0);
    expect(a!.advice).toBe('model');
  });

  it('renders a readable text table: every policy, aligned columns, a recommendation, no NaN', async () => {
    const r = await firstPhase();
    const text = renderText(r);
    expect(text).not.toMatch(/NaN|undefined|Infinity|\[object/);
    for (const d of ['nvme0n1 (259:0)', 'nvme1n1 (259:1)']) expect(text).toContain(d);
    const table = text.split('\n').filter((l) => /^ {2}(current \(measured\)|classic|blkmq_half_mean|three_quarter_mean|min_minus_wake|iouring_half_min|best_static|oracle) /.test(l));
    expect(table).toHaveLength(2 * 8);
    // Right-aligned numeric columns: every row of a table has the "in budget" column ending at the same place.
    const header = text.split('\n').find((l) => l.includes('what-if, per I/O'))!;
    const end = header.indexOf('in budget') + 'in budget'.length;
    for (const row of table) expect(row.slice(end - 3, end), row).toMatch(/^( no|yes)$/);
    expect(text).toMatch(/<- optimal/);
    expect(text).toMatch(/=> nvme0n1: the kernel sleeps 0\.4 µs \(iouring_half_min\); a static sleep of [\d.]+ µs would save/);
    expect(text).toMatch(/ring \w{8} +fio \(pid 3131\) +hybrid +hybrid_poll_time 0\.85 µs, sleeps 0\.42 µs/);
  });

  it('says, at depth, which device time the model ran on', async () => {
    const r = await firstPhase();
    const d = r.devices[0]!;
    const depth = { meanInFlight: 4, era: 'iouring_70' as const, method: 'simulation' as const, points: [{ depth: 4, ioShare: 1 }], sleepsPerIo: 0.44, reapedPerPass: 1.7, cpuStdErrNs: 20, deviceShiftNs: 640, meanDeviceNs: 61_020 };
    const text = renderText({ ...r, devices: [{ ...d, target: { ...d.target, depth } }] });
    expect(text).toContain('at depth          4.0 I/Os in flight per wait: the model simulates the poller there, on D fitted to the measured latency (mean 61.0 µs)');
    expect(renderText(r)).not.toContain('at depth');
  });

  it('renders JSON that parses back to the same report, with the format and version', async () => {
    const r = await firstPhase();
    const back = JSON.parse(renderJson(r)) as Report;
    expect(back).toEqual(r);
    expect(back.format).toBe('hybridpoll-report');
    expect(back.version).toBe(1);
  });

  it('picks the window at the end of a recording, or all of it', async () => {
    const all = await recordingWindow(SYNTHETIC_RECORDING, undefined);
    expect(all.to.takenAtMs - all.from.takenAtMs).toBe(900_000);
    const last = await recordingWindow(SYNTHETIC_RECORDING, 60);
    expect(last.to.takenAtMs - last.from.takenAtMs).toBe(60_000);
    const odd = await recordingWindow(SYNTHETIC_RECORDING, 62);
    expect(odd.to.takenAtMs - odd.from.takenAtMs).toBe(65_000);
    const longer = await recordingWindow(SYNTHETIC_RECORDING, 3600);
    expect(longer.from.takenAtMs).toBe(all.from.takenAtMs);
    // In the last minute nvme0n1 reads 16 KiB: D ≈ 14 µs.
    const r = buildReport(last.from, last.to, { latencyBudget: 0.01, source: last.report.source, host: last.report.host, generatedAtMs: 0 });
    expect(r.devices[0]!.target.deviceTime.meanNs).toBeGreaterThan(13_500);
    expect(r.window.seconds).toBe(60);
  });

  it('places chart labels without overlaps when there is room', () => {
    // A cluster like the policy chart's: several policies at the same latency, CPU values a few px apart.
    const pts = Array.from({ length: 8 }, (_, i) => ({ x: 100 + (i % 2) * 3, y: 60 + i * 8, label: `policy_${i} 1.00 µs` }));
    const placed = placeLabels(pts, 11, { x: 0, y: 0, w: 600, h: 300 });
    const boxes = placed.map((p, i) => {
      const w = pts[i]!.label.length * 11 * 0.58;
      return { x: p.anchor === 'start' ? p.x : p.x - w, y: p.y - 11, w, h: 13 };
    });
    expect(placed.every((p) => !p.crowded)).toBe(true);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i]!, boxes[j]!];
        expect(a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h, `labels ${i} and ${j}`).toBe(false);
      }
    }
  });
});

describe('report command', () => {
  const built = existsSync(CLI);
  if (!built) console.warn(`*** ${CLI} missing (the test setup builds it): skipping the report command tests ***`);

  it.skipIf(!built)('--from-recording: text on stdout, JSON, and an HTML file', () => {
    const text = spawnSync(process.execPath, [CLI, 'report', '--from-recording', SYNTHETIC_RECORDING, '--duration', '60s'], { encoding: 'utf8', timeout: 30000 });
    expect(text.status).toBe(0);
    expect(text.stdout).toContain('what-if, per I/O');
    const json = spawnSync(process.execPath, [CLI, 'report', '--from-recording', SYNTHETIC_RECORDING, '--format', 'json'], { encoding: 'utf8', timeout: 30000 });
    expect(json.status).toBe(0);
    expect((JSON.parse(json.stdout) as Report).devices).toHaveLength(2);
    const out = join(dir, 'r.html');
    const html = spawnSync(process.execPath, [CLI, 'report', '--from-recording', SYNTHETIC_RECORDING, '--format', 'html', '--output', out], { encoding: 'utf8', timeout: 30000 });
    expect(html.status).toBe(0);
    expect(html.stderr).toContain(`wrote ${out} (2 devices analysed)`);
    expect(readFileSync(out, 'utf8')).toMatch(/^<!doctype html>/);
  });

  it.skipIf(!built)('live on a fixture host without BPF: waits, says why there is nothing to analyse, exits 0', () => {
    const r = spawnSync(process.execPath, [CLI, 'report', ...fixtureArgs('v6.13'), '--no-collector.bpf', '--duration', '1s'], { encoding: 'utf8', timeout: 30000 });
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('measuring for 1 s');
    expect(r.stdout).toContain('era iouring_hybrid');
    expect(r.stdout).toMatch(/devices +nvme0n1 \(io_poll 1, \d+ poll queues?\)/);
    expect(r.stdout).toContain('note: no BPF data, so no per-I/O timings to analyse: the BPF collector is disabled');
  });

  it.skipIf(!built)('a malformed recording fails with the line number', () => {
    const bad = join(dir, 'bad.jsonl');
    const lines = readFileSync(SYNTHETIC_RECORDING, 'utf8').split('\n').slice(0, 4);
    lines[2] = lines[2]!.replace('"takenAtMs":', '"takenAtMs":"x","was":');
    writeFileSync(bad, lines.join('\n') + '\n');
    const r = spawnSync(process.execPath, [CLI, 'report', '--from-recording', bad], { encoding: 'utf8', timeout: 30000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/error: .*bad\.jsonl:3: frame: takenAtMs: expected a finite number, got string/);
  });
});

describe('report on a device a ring over several devices polls', () => {
  it('shows what was measured and why the model is withheld, not the per-device model', async () => {
    const r = await firstPhase();
    const d = r.devices[0]!;
    const { efficiency: _e, wastedCpuCores: _w, modelCpuErrorRatio: _m, ...t } = d.target;
    const shared: Report = { ...r, devices: [{ ...d, target: { ...t, sharedRing: { pollsPerIo: 2.5 }, advice: 'withheld', recommendation: 'nvme0n1: polled by an io_uring ring that also polls other devices' } }] };
    const text = renderText(shared);
    expect(text).toMatch(/shared ring +2\.5 poll calls per I\/O .* not modelled per device/);
    expect(text).toMatch(/=> nvme0n1: polled by an io_uring ring that also polls other devices \[withheld\]/);
    expect(text).not.toMatch(/^ {2}(optimal sleep|efficiency|wasted CPU|CPU per I\/O) |what-if, per I\/O/m);
    const html = renderHtml(shared);
    expect(html).toContain('shared ring');
    expect(html).not.toContain('optimal sleep');
  });

  it('shows the full model and the ring it is part of when the ring was modelled whole', async () => {
    const r = await firstPhase();
    const d = r.devices[0]!;
    const ring = {
      devs: ['259:0', '259:1'], devices: ['nvme0n1', 'nvme1n1'], polledIos: 8000, measuredCpuPerIoNs: 11_360, currentCpuNs: 11_680,
      classicCpuNs: 12_510, bestCpuNs: 12_510, bestSleepNs: 0, modelCpuErrorRatio: 0.028, cpuShare: 0.577,
    };
    const modelled: Report = { ...r, devices: [{ ...d, target: { ...d.target, sharedRing: { pollsPerIo: 0.67, ring } } }] };
    const text = renderText(modelled);
    expect(text).toMatch(/^ {2}ring +one io_uring ring polls nvme0n1, nvme1n1 with one sleep: .*measured 11\.4 µs, modelled 11\.7 µs, self-check \+2\.8%; best 12\.5 µs, classic polling\).*57\.7% of the ring's CPU$/m);
    expect(text).toMatch(/^ {2}(optimal sleep|efficiency) /m);
    const html = renderHtml(modelled);
    expect(html).toMatch(/<p class="ring">one io_uring ring polls nvme0n1, nvme1n1/);
    expect(html).toContain('optimal sleep');
  });
});
