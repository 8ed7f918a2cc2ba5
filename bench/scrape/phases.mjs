#!/usr/bin/env node
// Where a scrape's time goes, in-process on the built modules (dist/): file reading (sysfs +
// debugfs), the BPF request (fake loader, JSON parse, restart accumulator), the efficiency model,
// building metric families, and rendering the text. Medians over the scrapes, per device count.
// Needs root for the fake loader (the BPF collector checks privileges before starting any loader).
//   node bench/scrape/phases.mjs --scrapes 50 --devices 1,16,64
//   node bench/scrape/phases.mjs --root /tmp/base      (the same on a built older checkout)
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { makeHost } from './tree.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: opt } = parseArgs({ options: { scrapes: { type: 'string', default: '50' }, devices: { type: 'string', default: '1,16,64' }, root: { type: 'string', default: ROOT } } });
const dist = (m) => import(resolve(opt.root, 'dist', m));
const { HostReader } = await dist('sources/reader.js');
const { BpfCollector } = await dist('bpf/collector.js');
const { disabledBpf } = await dist('bpf/source.js');
const { SnapshotEngine } = await dist('snapshot/engine.js');
const { liveReader } = await dist('snapshot/live.js');
const { EfficiencyModel } = await dist('model/index.js');
const { familiesOf } = await dist('metrics/index.js');
const { render, processRegistry } = await dist('metrics/render.js');
const { createLogger } = await dist('log.js');

const FAKE = resolve(ROOT, 'test/hardening/fixtures/fake-loader.mjs');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const log = createLogger('error');

console.log(`| devices | files ms | bpf ms | model ms | families ms | render ms | total ms | samples |`);
console.log(`| --- | --- | --- | --- | --- | --- | --- | --- |`);
for (const n of opt.devices.split(',').map(Number)) {
  const host = makeHost(n);
  process.env.HP_FAKE_DEVICES = String(n);
  const bpf = process.getuid?.() === 0
    ? await BpfCollector.create({ mode: 'on', loader: FAKE, timeoutMs: 10_000, log })
    : disabledBpf('not root');
  for (let i = 0; i < 100 && bpf.status().state !== 'running' && bpf.status().state !== 'disabled'; i++) await new Promise((r) => setTimeout(r, 50));
  const reader = new HostReader({ paths: { sysfs: host.sys, debugfs: host.debug, procfs: host.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: true } });
  // Time the two readers separately: wrap them with the same interfaces the live reader uses.
  const t = { files: [], bpf: [], model: [], families: [], render: [], total: [] };
  let filesMs = 0;
  let bpfMs = 0;
  const timedHost = { read: async () => { const t0 = performance.now(); const r = await reader.read(); filesMs = performance.now() - t0; return r; } };
  const timedBpf = { status: () => bpf.status(), stop: () => bpf.stop(), snapshot: async () => { const t0 = performance.now(); const r = await bpf.snapshot(); bpfMs = performance.now() - t0; return r; } };
  const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
  let modelMs = 0;
  const timedModel = { update: (s) => { const t0 = performance.now(); const r = model.update(s); modelMs = performance.now() - t0; return r; } };
  const engine = new SnapshotEngine(liveReader(timedHost, timedBpf, log, bpf.status().state === 'running'), timedModel, log);
  const reg = processRegistry();
  let samples = 0;
  for (let i = 0; i < Number(opt.scrapes) + 5; i++) {
    const t0 = performance.now();
    const snap = await engine.snapshot();
    const t1 = performance.now();
    const fams = familiesOf(snap);
    const t2 = performance.now();
    const body = await render(fams, 'prometheus', reg);
    const t3 = performance.now();
    if (i < 5) continue; // warm-up (and the model needs two snapshots for a window)
    t.files.push(filesMs);
    t.bpf.push(bpfMs);
    t.model.push(modelMs);
    t.families.push(t2 - t1);
    t.render.push(t3 - t2);
    t.total.push(t3 - t0);
    samples = body.split('\n').filter((l) => l && l[0] !== '#').length;
    await new Promise((r) => setTimeout(r, 20)); // scrapes are seconds apart in life; let the loop breathe
  }
  await bpf.stop();
  host.dispose();
  const m = (k) => median(t[k]).toFixed(1);
  console.log(`| ${n} | ${m('files')} | ${m('bpf')} | ${m('model')} | ${m('families')} | ${m('render')} | ${m('total')} | ${samples} |`);
}
