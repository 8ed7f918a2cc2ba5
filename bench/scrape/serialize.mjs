#!/usr/bin/env node
// The exposition serializer alone: src/metrics/exposition.ts against prom-client's Registry (the
// renderer it replaced, through the same adapter the old render.ts used) on the same families:
// 10 histogram kinds × N devices × (31 buckets + sum + count), as --bpf.buckets=pow2 exposes with
// --bpf.histograms=all (the default exposes full buckets for io_latency only).
// Alternating A B per iteration, medians. Both must write the same bytes (checked once).
//   node bench/scrape/serialize.mjs --devices 64 --iterations 40
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';

const ROOT = resolve(import.meta.dirname, '../..');
const { serialize } = await import(resolve(ROOT, 'dist/metrics/exposition.js'));
const { values: opt } = parseArgs({ options: { devices: { type: 'string', default: '64' }, iterations: { type: 'string', default: '40' } } });

const fams = [];
for (let k = 0; k < 10; k++) {
  const samples = [];
  for (let d = 0; d < Number(opt.devices); d++) {
    const labels = { device: `nvme${d}n1` };
    for (let i = 0; i < 31; i++) samples.push({ labels: { ...labels, le: String(2 ** (i + 7) / 1e9) }, value: (i + 1) * 1234 + d, suffix: '_bucket' });
    samples.push({ labels: { ...labels, le: '+Inf' }, value: 40000 + d, suffix: '_bucket' });
    samples.push({ labels, value: 0.123456 + d, suffix: '_sum' }, { labels, value: 40000 + d, suffix: '_count' });
  }
  fams.push({ name: `hybridpoll_kind${k}_seconds`, help: 'A histogram.', type: 'histogram', samples });
}

async function viaPromClient() {
  const reg = new Registry();
  for (const f of fams) {
    const metric = {
      name: f.name, help: f.help, type: f.type, aggregator: 'sum',
      get: async () => ({ name: metric.name, help: f.help, type: f.type, aggregator: 'sum', values: f.samples.map((s) => ({ labels: s.labels, value: s.value, metricName: f.name + s.suffix })) }),
    };
    reg.registerMetric(metric);
  }
  return reg.metrics();
}

if (serialize(fams, 'prometheus') !== (await viaPromClient())) throw new Error('the serializers disagree');
const t = { direct: [], promClient: [] };
for (let i = 0; i < Number(opt.iterations); i++) {
  let t0 = performance.now();
  serialize(fams, 'prometheus');
  t.direct.push(performance.now() - t0);
  t0 = performance.now();
  await viaPromClient();
  t.promClient.push(performance.now() - t0);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const samples = fams.reduce((a, f) => a + f.samples.length, 0);
console.log(`${samples} samples (${opt.devices} devices), median of ${opt.iterations}: direct ${median(t.direct).toFixed(1)} ms, prom-client ${median(t.promClient).toFixed(1)} ms`);
