#!/usr/bin/env node
// Scrape benchmark: hybridpoll-exporter against Debian's prometheus-node-exporter on the same
// fixture host (bench/scrape/tree.mjs), for 1, 16 and 64 NVMe devices. Per run: scrape latency
// p50/p99 (sequential keep-alive scrapes, as Prometheus does), CPU per scrape (utime+stime of the
// exporter process), RSS, startup time. Runs are paired A B A B with fresh processes; the table
// shows medians over the pairs and the ratio to node_exporter. Our exporter gets full BPF
// histograms for every device from a fake loader (test/hardening/fixtures/fake-loader.mjs; its
// own CPU is not counted, the real loader's cost is bench/bpf-cost's subject), and the real
// loader's startup is timed separately when it is built and we are root.
//
//   npm run bench:scrape                  (builds, then: node bench/scrape/run.mjs)
//   node bench/scrape/run.mjs --scrapes 300 --pairs 3 --devices 1,16,64 --buckets pow2
//   node bench/scrape/run.mjs --baseline /tmp/base   (a built checkout of an older commit, run
//                                                    in the same pairs: A B C A B C; rows "before")
// Our exporter runs once per --histograms exposition in each pair: `default` (no flag: full
// buckets for io_latency only) as "hybridpoll" and `all` (--bpf.histograms=all, every histogram in
// full, what issue 7's targets are stated for) as "hybridpoll (all)"; e.g. --histograms all alone.
// Collection: those rows run the refresh loop at --interval (default 15s, serve's default), with
// scrapes --pace ms apart (25); their CPU per scrape is the run's CPU over its scrapes, with the
// collections that fell in the run. At 15 s a run of 200 scrapes (~5-10 s, after the collections
// at start) rarely holds a collection: the scrape cost alone. --interval 1s makes scrapes meet
// collections in progress (a stress: 15 times the default collection rate). Rows "@0" run
// --collector.interval=0 (a collection per scrape, back to back, as before the refresh loop):
// their CPU per scrape is the cost of one collection, what the host pays every interval.
// --no-per-scrape leaves them out. The baseline ("before") collects per scrape, back to back.
// --node-options X repeats our rows with NODE_OPTIONS=X in the same pairs (V8 flags A/B).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { memKiB, procStat } from './proc.mjs';
import { makeHost } from './tree.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = resolve(ROOT, 'dist/cli.js');
const FAKE = resolve(ROOT, 'test/hardening/fixtures/fake-loader.mjs');
const REAL_LOADER = resolve(ROOT, 'build/bpf/hybridpoll-bpf');
const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';
const IS_ROOT = process.getuid?.() === 0;
const TICK_MS = 10; // USER_HZ = 100 on Linux

const { values: opt } = parseArgs({
  options: {
    scrapes: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '20' },
    pairs: { type: 'string', default: '2' },
    devices: { type: 'string', default: '1,16,64' },
    buckets: { type: 'string', default: 'pow2' },
    'loader-runs': { type: 'string', default: '3' },
    baseline: { type: 'string' },
    histograms: { type: 'string', multiple: true, default: ['default', 'all'] },
    interval: { type: 'string', default: '15s' },
    pace: { type: 'string', default: '25' },
    'no-per-scrape': { type: 'boolean', default: false },
    'node-options': { type: 'string' },
  },
});
const SCRAPES = Number(opt.scrapes);
const WARMUP = Number(opt.warmup);
const PAIRS = Number(opt.pairs);
const DEVICES = opt.devices.split(',').map(Number);
const BASE_CLI = opt.baseline ? resolve(opt.baseline, 'dist/cli.js') : undefined;
// the baseline's own fake loader: it speaks that build's loader protocol (2 since flat buckets)
const BASE_FAKE = opt.baseline ? resolve(opt.baseline, 'test/hardening/fixtures/fake-loader.mjs') : undefined;
const PACE_MS = Number(opt.pace);
/**
 * Our exporter per --histograms value and collection mode: "hybridpoll" for the default
 * exposition, "hybridpoll (all)" for all; " @0" for --collector.interval=0. Values: { h, interval }.
 */
const OURS = new Map();
for (const h of opt.histograms) OURS.set(h === 'default' ? 'hybridpoll' : `hybridpoll (${h})`, { h, interval: opt.interval });
if (!opt['no-per-scrape']) for (const h of opt.histograms) OURS.set(`${h === 'default' ? 'hybridpoll' : `hybridpoll (${h})`} @0`, { h, interval: '0' });
// --node-options X: each of our rows again with NODE_OPTIONS=X, in the same pairs (A/B of V8 flags)
if (opt['node-options']) for (const [k, v] of [...OURS]) OURS.set(`${k} [${opt['node-options']}]`, { ...v, nodeOptions: opt['node-options'] });
/** The baseline checkout per exposition: "before", "before (all)". */
const BEFORE = new Map(BASE_CLI ? opt.histograms.flatMap((h) => {
  const name = h === 'default' ? 'before' : `before (${h})`;
  // @0 rows of the baseline too (it must have --collector.interval): one collection, paired
  return [[name, { h }], ...(opt['no-per-scrape'] ? [] : [[`${name} @0`, { h, interval: '0' }]])];
}) : []);
/** Our exporter, or the baseline checkout's: both are "hybridpoll" to start() but for the file run. */
const isOurs = (kind) => OURS.has(kind) || BEFORE.has(kind);
/** The exposition the real loader's startup is timed with (startup does not depend on it). */
const LOADER_KIND = [...OURS.keys()][0];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
};

function freePort() {
  return new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

async function waitFor(fn, what, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Start one exporter; resolves when /metrics serves complete data. */
async function start(kind, host, devices, o = {}) {
  let args;
  let env = process.env;
  const port = await freePort();
  /** our exporter's variant (this build's or the baseline's); undefined for node_exporter */
  const v = OURS.get(kind) ?? BEFORE.get(kind);
  const baseline = BEFORE.has(kind);
  if (isOurs(kind)) {
    args = [baseline ? BASE_CLI : CLI, `--path.sysfs=${host.sys}`, `--path.debugfs=${host.debug}`, `--path.procfs=${host.proc}`, `--web.listen-address=127.0.0.1:${port}`, `--bpf.buckets=${opt.buckets}`];
    if (v.h !== 'default') args.push(`--bpf.histograms=${v.h}`);
    // a baseline older than --collector.interval collects per scrape; its @0 rows need a newer one
    if (v.interval !== undefined) args.push(`--collector.interval=${v.interval}`);
    if (v.nodeOptions) env = { ...env, NODE_OPTIONS: v.nodeOptions };
    if (o.realLoader) args.push('--bpf.enable=on');
    else if (IS_ROOT) {
      args.push('--bpf.enable=on', `--bpf.loader=${baseline ? BASE_FAKE : FAKE}`);
      env = { ...env, HP_FAKE_DEVICES: String(devices) };
    } else args.push('--no-collector.bpf');
  } else {
    args = [`--path.sysfs=${host.sys}`, `--path.procfs=${host.proc}`, `--path.udev.data=${host.udev}`, `--web.listen-address=127.0.0.1:${port}`, '--collector.disable-defaults', '--collector.diskstats'];
  }
  const t0 = performance.now();
  const proc = spawn(isOurs(kind) ? process.execPath : NODE_EXPORTER, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  let log = '';
  proc.stderr.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}/metrics`;
  const listening = await waitFor(async () => ((await fetch(url)).status === 200 ? performance.now() - t0 : undefined), `${kind} to listen`);
  const wantBpf = isOurs(kind) && (IS_ROOT || o.realLoader);
  const ready = wantBpf ? await waitFor(async () => ((await (await fetch(url)).text()).includes('hybridpoll_bpf_up 1') ? performance.now() - t0 : undefined), 'BPF data', 60_000) : listening;
  // The model needs two BPF readings: with the refresh loop its families appear one interval after
  // the loader is up. Measure the full body (not counted in the startup columns), the baseline's
  // too (without, its refresh rows were measured with fewer series: not like for like).
  if (wantBpf && !o.realLoader && v.interval !== '0') {
    await waitFor(async () => (await (await fetch(url)).text()).includes('hybridpoll_optimal_sleep_seconds{'), 'model output', 120_000);
  }
  return {
    pid: proc.pid,
    url,
    listeningMs: listening,
    readyMs: ready,
    log: () => log,
    stop: () => new Promise((ok) => {
      if (proc.exitCode !== null) return ok();
      proc.once('exit', ok);
      proc.kill('SIGTERM');
      setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
    }),
  };
}

async function measure(e, paceMs) {
  const scrape = async () => {
    const t0 = performance.now();
    const r = await fetch(e.url);
    const body = await r.text();
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    return { ms: performance.now() - t0, body };
  };
  for (let i = 0; i < WARMUP; i++) await scrape();
  const cpu0 = procStat(e.pid).cpuTicks;
  const lat = [];
  let last = '';
  for (let i = 0; i < SCRAPES; i++) {
    if (paceMs) await sleep(paceMs);
    const r = await scrape();
    lat.push(r.ms);
    last = r.body;
  }
  const cpu1 = procStat(e.pid).cpuTicks;
  return {
    p50: quantile(lat, 0.5),
    p99: quantile(lat, 0.99),
    cpuMs: ((cpu1 - cpu0) * TICK_MS) / SCRAPES,
    rssMiB: memKiB(e.pid, 'VmRSS') / 1024,
    hwmMiB: memKiB(e.pid, 'VmHWM') / 1024,
    series: last.split('\n').filter((l) => l && !l.startsWith('#')).length,
    kib: last.length / 1024,
    startupMs: e.readyMs,
    listeningMs: e.listeningMs,
  };
}

async function oneRun(kind, host, devices) {
  const e = await start(kind, host, devices);
  try {
    const refreshLoop = OURS.has(kind) && OURS.get(kind).interval !== '0';
    return await measure(e, refreshLoop ? PACE_MS : 0);
  } finally {
    await e.stop();
  }
}

/** Real loader at 1 device, ours and (with --baseline) the baseline's, interleaved run by run. */
async function loaderStartup() {
  if (!IS_ROOT || !existsSync(REAL_LOADER) || Number(opt['loader-runs']) < 1) return undefined;
  const host = makeHost(1);
  const runs = { hybridpoll: [], before: [] };
  try {
    for (let i = 0; i < Number(opt['loader-runs']); i++) {
      for (const kind of BASE_CLI ? ['hybridpoll', 'before'] : ['hybridpoll']) {
        const e = await start(kind === 'hybridpoll' ? LOADER_KIND : [...BEFORE.keys()][0], host, 1, { realLoader: true });
        // stderr arrives through its own pipe, possibly after the scrape that showed BPF up
        const loadMs = await waitFor(async () => Number(/msg="bpf loader running".* load_ms=(\d+)/.exec(e.log())?.[1]) || undefined, 'the loader log line', 5000).catch(() => NaN);
        runs[kind].push({ readyMs: e.readyMs, listeningMs: e.listeningMs, loadMs });
        await e.stop();
      }
    }
  } finally {
    host.dispose();
  }
  return runs;
}

// ------------------------------------------------------------------------------------------------

const haveNodeExporter = existsSync(NODE_EXPORTER);
if (!existsSync(CLI)) throw new Error(`${CLI} missing: npm run build:ts`);
if (BASE_CLI && !existsSync(BASE_CLI)) throw new Error(`${BASE_CLI} missing: build the baseline checkout (npm run build:ts there)`);
if (!haveNodeExporter) console.warn(`*** ${NODE_EXPORTER} missing (apt-get install prometheus-node-exporter): no comparison ***`);
if (!IS_ROOT) console.warn('*** not root: the fake BPF loader cannot be started, our exporter runs without BPF histograms ***');

const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '?';
console.log(`scrape benchmark: ${SCRAPES} scrapes after ${WARMUP} warm-up, ${PAIRS} pairs (A B A B), --bpf.buckets=${opt.buckets}, --bpf.histograms ${opt.histograms.join(' / ')}, refresh loop at --collector.interval=${opt.interval} with scrapes ${PACE_MS} ms apart${opt['no-per-scrape'] ? '' : ', and @0 rows (a collection per scrape)'}`);
console.log(`host: ${cpuModel}, ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} load, node ${process.version}`);

const rows = [];
for (const n of DEVICES) {
  const host = makeHost(n);
  const runs = { ...Object.fromEntries([...OURS.keys(), ...BEFORE.keys()].map((k) => [k, []])), node_exporter: [] };
  try {
    for (let p = 0; p < PAIRS; p++) {
      for (const kind of OURS.keys()) runs[kind].push(await oneRun(kind, host, n));
      if (haveNodeExporter) runs.node_exporter.push(await oneRun('node_exporter', host, n));
      for (const kind of BEFORE.keys()) runs[kind].push(await oneRun(kind, host, n));
    }
  } finally {
    host.dispose();
  }
  for (const [kind, rs] of Object.entries(runs)) {
    if (rs.length === 0) continue;
    const m = Object.fromEntries(Object.keys(rs[0]).map((k) => [k, median(rs.map((r) => r[k]))]));
    rows.push({ devices: n, kind, ...m });
  }
}

const fmt = (v, d = 1) => (v === undefined || Number.isNaN(v) ? '–' : v.toFixed(d));
const line = (cells) => `| ${cells.join(' | ')} |`;
console.log();
console.log(line(['devices', 'exporter', 'p50 ms', 'p99 ms', 'CPU ms/scrape', 'RSS MiB', 'peak RSS MiB', 'series', 'body KiB', 'listening ms', 'full data ms']));
console.log(line(Array(11).fill('---')));
for (const n of DEVICES) {
  const oursAll = [...OURS.keys()].map((k) => rows.find((x) => x.devices === n && x.kind === k));
  const ne = rows.find((x) => x.devices === n && x.kind === 'node_exporter');
  const befores = [...BEFORE.keys()].map((k) => rows.find((x) => x.devices === n && x.kind === k));
  for (const r of [...oursAll, ne, ...befores]) {
    if (r) console.log(line([r.devices, r.kind, fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.cpuMs, 2), fmt(r.rssMiB), fmt(r.hwmMiB), r.series, fmt(r.kib), fmt(r.listeningMs, 0), fmt(r.startupMs, 0)]));
  }
  for (const ours of oursAll) {
    if (!ours) continue;
    const tag = ours.kind === 'hybridpoll' ? '' : ours.kind.slice('hybridpoll'.length);
    // the baseline row of the same exposition
    const before = befores.find((b) => b && b.kind === `before${tag.replace(/ \[.*\]/g, '')}`) ?? befores.find((b) => b && b.kind === `before${tag.replace(/ @0| \[.*\]/g, '')}`);
    if (ne) {
      const q = (a, b) => (b > 0 ? `×${(a / b).toFixed(1)}` : '–');
      console.log(line([n, `ratio${tag}`, q(ours.p50, ne.p50), q(ours.p99, ne.p99), q(ours.cpuMs, ne.cpuMs), q(ours.rssMiB, ne.rssMiB), q(ours.hwmMiB, ne.hwmMiB), q(ours.series, ne.series), q(ours.kib, ne.kib), q(ours.listeningMs, ne.listeningMs), q(ours.startupMs, ne.startupMs)]));
    }
    if (before) {
      const q = (a, b) => (b > 0 ? `×${(a / b).toFixed(2)}` : '–');
      console.log(line([n, `after${tag}/before`, q(ours.p50, before.p50), q(ours.p99, before.p99), q(ours.cpuMs, before.cpuMs), q(ours.rssMiB, before.rssMiB), q(ours.hwmMiB, before.hwmMiB), q(ours.series, before.series), q(ours.kib, before.kib), q(ours.listeningMs, before.listeningMs), q(ours.startupMs, before.startupMs)]));
    }
  }
}

const loaders = await loaderStartup();
const loader = loaders?.hybridpoll;
console.log();
if (loaders) {
  console.log(line(['real BPF loader startup', 'listening ms', 'BPF up ms', 'loader load+attach ms']));
  console.log(line(Array(4).fill('---')));
  for (const [kind, rs] of Object.entries(loaders)) {
    if (rs.length === 0) continue;
    const name = kind === 'before' ? 'before: ' : '';
    rs.forEach((r, i) => console.log(line([`${name}run ${i + 1}`, fmt(r.listeningMs, 0), fmt(r.readyMs, 0), fmt(r.loadMs, 0)])));
    console.log(line([`${name}median`, fmt(median(rs.map((r) => r.listeningMs)), 0), fmt(median(rs.map((r) => r.readyMs)), 0), fmt(median(rs.map((r) => r.loadMs)), 0)]));
  }
} else {
  console.log('real BPF loader startup: not measured (--loader-runs 0, or it needs root and build/bpf/hybridpoll-bpf: npm run build:bpf)');
}

// Targets from the issue (stated for full histograms): p99 ≤ 10 ms at 64 devices, RSS ≤ 100 MB,
// startup ≤ 1 s; shown for each exposition measured.
for (const at64 of rows.filter((r) => r.devices === Math.max(...DEVICES) && OURS.has(r.kind))) {
  const ok = (b) => (b ? 'met' : 'MISSED');
  console.log();
  console.log(`targets at ${at64.devices} devices, ${at64.kind}: p99 ${fmt(at64.p99, 2)} ms ≤ 10 ms ${ok(at64.p99 <= 10)}; peak RSS ${fmt(at64.hwmMiB)} MiB ≤ 100 MB (95.4 MiB) ${ok(at64.hwmMiB <= 95.4)}; listening after ${fmt(at64.listeningMs, 0)} ms ≤ 1000 ms ${ok(at64.listeningMs <= 1000)}`);
  if (loader && at64.kind === LOADER_KIND) {
    const up = median(loader.map((r) => r.readyMs));
    console.log(`real loader: BPF data after ${fmt(up, 0)} ms ≤ 1000 ms ${ok(up <= 1000)}`);
  }
}
