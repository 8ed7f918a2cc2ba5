#!/usr/bin/env node
// The eBPF histogram families alone (bpfFamilies in src/metrics/bpf.ts), in-process on dist/: 64
// devices × 10 histogram kinds × 40 occupied grid buckets, --bpf.buckets=pow2, with the default
// --bpf.histograms (io_latency in full) and with all; medians of 200 calls after 30 warm-up,
// alternating the two. An older checkout (--root) ignores the option: both rows expose all.
//   node bench/scrape/families.mjs [--devices 64] [--root /tmp/base]
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: opt } = parseArgs({ options: { root: { type: 'string', default: ROOT }, devices: { type: 'string', default: '64' } } });
const { bpfFamilies } = await import(resolve(opt.root, 'dist/metrics/bpf.js'));
const KINDS = ['rq_lat', 'sleep_req', 'offcpu', 'wake_ovh', 'wake_lat', 'spin', 'dev_spun', 'found_slept', 'oversleep_ub', 'iopoll'];
const ALL = ['io_latency', 'poll_sleep_requested', 'poll_offcpu', 'poll_wake_overhead', 'poll_wake_latency', 'poll_spin', 'poll_device_time', 'poll_found_after_sleep', 'poll_oversleep_upper_bound', 'iopoll_pass'];
const devices = Array.from({ length: Number(opt.devices) }, (_, d) => ({
  dev: `259:${d}`,
  hists: Object.fromEntries(KINDS.map((k, j) => {
    const buckets = Array.from({ length: 40 }, (_, b) => [20 + b + j, 1 + ((b * 7 + d) % 13)]);
    return [k, { buckets, count: buckets.reduce((a, [, c]) => a + c, 0), sumNs: 1e6, aux0: 0, aux1: 0 }];
  })),
}));
const snap = {
  takenAtMs: 0,
  host: { devices: devices.map((d, i) => ({ device: `nvme${i}n1`, devNum: d.dev, errors: [] })) },
  bpf: { takenAtNs: 1, pollPath: 'fentry', programs: {}, devices, rings: [], counters: {}, deviceCounters: {} },
  bpfStatus: { mode: 'auto', state: 'running', reason: '', loaderRestarts: 0 },
};
const variants = { default: undefined, all: { keepEvery: 4, fullHistograms: ALL } };
const t = { default: [], all: [] };
const samples = {};
for (let i = 0; i < 230; i++) {
  for (const v of i % 2 ? ['default', 'all'] : ['all', 'default']) {
    const t0 = performance.now();
    const f = bpfFamilies(snap, variants[v]);
    const ms = performance.now() - t0;
    if (i >= 30) t[v].push(ms);
    samples[v] = f.reduce((n, x) => n + x.samples.length, 0);
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1].toFixed(2);
console.log(`| root | devices | histograms | bpfFamilies ms | samples |`);
console.log(`| --- | --- | --- | --- | --- |`);
for (const v of ['default', 'all']) console.log(`| ${opt.root} | ${opt.devices} | ${v} | ${med(t[v])} | ${samples[v]} |`);
