#!/usr/bin/env node
// Retained memory against RSS: scrapes back-to-back in-process at N devices (fixture host, fake
// loader's full histograms; root) and prints, every 20 scrapes, the heap after a forced GC (what
// is really retained) beside heapTotal and RSS (what V8 and malloc hold). NOMODEL=1 leaves the
// efficiency model out.
//   node --expose-gc bench/scrape/heap.mjs [--devices 64] [--scrapes 80]
//   MALLOC_ARENA_MAX=2 node --expose-gc --max-semi-space-size=4 bench/scrape/heap.mjs
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { makeHost } from './tree.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: opt } = parseArgs({ options: { devices: { type: 'string', default: '64' }, scrapes: { type: 'string', default: '80' } } });
if (typeof global.gc !== 'function') throw new Error('run with node --expose-gc');
const dist = (m) => import(resolve(ROOT, 'dist', m));
const { HostReader } = await dist('sources/reader.js');
const { BpfCollector } = await dist('bpf/collector.js');
const { SnapshotEngine } = await dist('snapshot/engine.js');
const { liveReader } = await dist('snapshot/live.js');
const { EfficiencyModel } = await dist('model/index.js');
const { familiesOf } = await dist('metrics/index.js');
const { render, processRegistry } = await dist('metrics/render.js');
const { createLogger } = await dist('log.js');
const log = createLogger('error');
const n = Number(opt.devices); const host = makeHost(n); process.env.HP_FAKE_DEVICES = String(n);
const bpf = await BpfCollector.create({ mode: 'on', loader: resolve(ROOT, 'test/hardening/fixtures/fake-loader.mjs'), timeoutMs: 10000, log });
while (bpf.status().state !== 'running') await new Promise((r) => setTimeout(r, 50));
const reader = new HostReader({ paths: { sysfs: host.sys, debugfs: host.debug, procfs: host.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: true } });
const model = process.env.NOMODEL ? undefined : new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
const engine = new SnapshotEngine(liveReader(reader, bpf, log, true), model, log);
const reg = processRegistry();
const mib = (b) => (b / 1048576).toFixed(1);
for (let i = 1; i <= Number(opt.scrapes); i++) {
  const s = await engine.snapshot(); await render(familiesOf(s), 'prometheus', reg);
  if (i % 20 === 0) { global.gc(); const m = process.memoryUsage(); console.log(`${i} scrapes: heapUsed ${mib(m.heapUsed)} heapTotal ${mib(m.heapTotal)} rss ${mib(m.rss)} ext ${mib(m.external)} ab ${mib(m.arrayBuffers)}`); }
}
await bpf.stop(); host.dispose();
