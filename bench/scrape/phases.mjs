#!/usr/bin/env node
// Where a scrape's time goes, in-process on the built modules (dist/): file reading (sysfs +
// debugfs), the BPF request (fake loader, JSON parse, restart accumulator), the efficiency model,
// building metric families, rendering the body (as served: UTF-8 bytes) and deflating it (at the
// build's level; builds before it was exported deflated at 6). Medians over the scrapes, per device count.
// Needs root for the fake loader (the BPF collector checks privileges before starting any loader).
// Families and render are timed for each --histograms exposition on the same snapshot: `default`
// (--bpf.histograms' default, io_latency with full buckets) and `all` (every histogram with full
// buckets, what issue 7's targets are stated for); files, bpf and model are shared by both rows.
//   node bench/scrape/phases.mjs --scrapes 50 --devices 1,16,64
//   node bench/scrape/phases.mjs --histograms all     (only one exposition; repeat to add more)
//   node bench/scrape/phases.mjs --root /tmp/base      (the same on a built older checkout)
import { resolve } from 'node:path';
import { constants, deflateRawSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import { makeHost } from './tree.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: opt } = parseArgs({ options: {
  scrapes: { type: 'string', default: '50' },
  devices: { type: 'string', default: '1,16,64' },
  root: { type: 'string', default: ROOT },
  histograms: { type: 'string', multiple: true, default: ['default', 'all'] },
} });
const dist = (m) => import(resolve(opt.root, 'dist', m));
const { HostReader } = await dist('sources/reader.js');
const { BpfCollector } = await dist('bpf/collector.js');
const { disabledBpf } = await dist('bpf/source.js');
const { SnapshotEngine } = await dist('snapshot/engine.js');
const { liveReader } = await dist('snapshot/live.js');
const { EfficiencyModel } = await dist('model/index.js');
const { familiesOf } = await dist('metrics/index.js');
const { render, renderYielding, processRegistry } = await dist('metrics/render.js');
// The body as the exporter serves it: UTF-8 bytes from renderYielding where the build has it (the
// string render() is the tests' and adds a decode the server never does), else render().
const renderServed = renderYielding ? (fams, reg) => renderYielding([() => fams], 'prometheus', reg) : (fams, reg) => render(fams, 'prometheus', reg);
const { createLogger } = await dist('log.js');
const { DEFLATE_LEVEL = 6 } = await dist('http/bodies.js');
const { parseHistogramList } = await dist('metrics/bpf.js');

// An older checkout without --bpf.histograms exposes every histogram in full, whatever is asked.
const variants = parseHistogramList
  ? opt.histograms.map((h) => ({ name: h, bpf: h === 'default' ? undefined : { keepEvery: 4, fullHistograms: parseHistogramList(h) } }))
  : [{ name: 'all (fixed)', bpf: undefined }];

// the checkout's own fake loader: it speaks that build's loader protocol
const FAKE = resolve(opt.root, 'test/hardening/fixtures/fake-loader.mjs');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const log = createLogger('error');

console.log(`| devices | histograms | files ms | bpf ms | model ms | families ms | render ms | deflate ms | total ms | samples | gzip kB |`);
console.log(`| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`);
for (const n of opt.devices.split(',').map(Number)) {
  const host = makeHost(n);
  process.env.HP_FAKE_DEVICES = String(n);
  const bpf = process.getuid?.() === 0
    ? await BpfCollector.create({ mode: 'on', loader: FAKE, timeoutMs: 10_000, log })
    : disabledBpf('not root');
  for (let i = 0; i < 100 && bpf.status().state !== 'running' && bpf.status().state !== 'disabled'; i++) await new Promise((r) => setTimeout(r, 50));
  const reader = new HostReader({ paths: { sysfs: host.sys, debugfs: host.debug, procfs: host.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: true } });
  // Time the two readers separately: wrap them with the same interfaces the live reader uses.
  const t = { files: [], bpf: [], model: [], families: variants.map(() => []), render: variants.map(() => []), deflate: variants.map(() => []), total: variants.map(() => []) };
  let filesMs = 0;
  let bpfMs = 0;
  const timedHost = { read: async () => { const t0 = performance.now(); const r = await reader.read(); filesMs = performance.now() - t0; return r; } };
  const timedBpf = { status: () => bpf.status(), stop: () => bpf.stop(), snapshot: async () => { const t0 = performance.now(); const r = await bpf.snapshot(); bpfMs = performance.now() - t0; return r; } };
  const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
  let modelMs = 0;
  const timedModel = { update: (s) => { const t0 = performance.now(); const r = model.update(s); modelMs = performance.now() - t0; return r; } };
  const engine = new SnapshotEngine(liveReader(timedHost, timedBpf, log, bpf.status().state === 'running'), timedModel, log);
  const reg = processRegistry();
  const samples = variants.map(() => 0);
  const gzipBytes = variants.map(() => 0);
  for (let i = 0; i < Number(opt.scrapes) + 5; i++) {
    const t0 = performance.now();
    const snap = await engine.snapshot();
    const t1 = performance.now();
    // Each exposition on the same snapshot, in alternating order (neither always runs first).
    const order = variants.map((_, j) => j);
    if (i % 2) order.reverse();
    const timed = [];
    for (const j of order) {
      const t2 = performance.now();
      const fams = familiesOf(snap, variants[j].bpf ? { bpf: variants[j].bpf } : {});
      const t3 = performance.now();
      const body = await renderServed(fams, reg);
      const t4 = performance.now();
      // as the server does once per collection (there on the thread pool, here inline)
      const gz = deflateRawSync(body, { level: DEFLATE_LEVEL, finishFlush: constants.Z_SYNC_FLUSH });
      const t5 = performance.now();
      timed[j] = { families: t3 - t2, render: t4 - t3, deflate: t5 - t4, body, gz: gz.length };
    }
    if (i < 5) continue; // warm-up (and the model needs two snapshots for a window)
    t.files.push(filesMs);
    t.bpf.push(bpfMs);
    t.model.push(modelMs);
    variants.forEach((_, j) => {
      t.families[j].push(timed[j].families);
      t.render[j].push(timed[j].render);
      t.deflate[j].push(timed[j].deflate);
      t.total[j].push(t1 - t0 + timed[j].families + timed[j].render + timed[j].deflate);
      gzipBytes[j] = timed[j].gz;
      samples[j] = String(timed[j].body).split('\n').filter((l) => l && l[0] !== '#').length;
    });
    await new Promise((r) => setTimeout(r, 20)); // scrapes are seconds apart in life; let the loop breathe
  }
  await bpf.stop();
  host.dispose();
  const m = (xs) => median(xs).toFixed(1);
  variants.forEach((v, j) => {
    console.log(`| ${n} | ${v.name} | ${m(t.files)} | ${m(t.bpf)} | ${m(t.model)} | ${m(t.families[j])} | ${m(t.render[j])} | ${m(t.deflate[j])} | ${m(t.total[j])} | ${samples[j]} | ${(gzipBytes[j] / 1000).toFixed(1)} |`);
  });
}
