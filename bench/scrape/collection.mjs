// One collection's CPU, and RSS, of two builds paired A B A B on the same fixture tree (fake
// loader, every histogram kind): each run a fresh `serve` process at --collector.interval=0 (a
// collection per scrape, back to back), 20 warm-up scrapes, then --scrapes more on one keep-alive
// connection with gzip as Prometheus asks; CPU is the process's utime+stime over them, per scrape.
// With --interval (e.g. 2s) and --pace the same measures the refresh loop: RSS after the scrapes,
// the process's CPU per scrape including the collections that fell among them.
// Needs root (the BPF collector checks privileges before starting the fake loader).
//   node bench/scrape/collection.mjs --baseline OLD [--devices 64] [--scrapes 100] [--pairs 4]
//   node bench/scrape/collection.mjs --baseline OLD --interval 2s --pace 25 --settle 5000 --scrapes 200
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { memKiB, procStat } from './proc.mjs';
import { makeHost } from './tree.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: opt } = parseArgs({ options: {
  baseline: { type: 'string' },
  devices: { type: 'string', default: '64' },
  scrapes: { type: 'string', default: '100' },
  pairs: { type: 'string', default: '4' },
  interval: { type: 'string', default: '0' },
  pace: { type: 'string', default: '0' },
  settle: { type: 'string', default: '1500' },
} });
if (!opt.baseline) throw new Error('usage: node bench/scrape/collection.mjs --baseline OLD_CHECKOUT (a built checkout: OLD/dist/cli.js) [--devices N] [--scrapes N] [--pairs N] [--interval D --pace MS --settle MS]');
if (process.getuid?.() !== 0) throw new Error('needs root: the fake BPF loader is started only by a privileged exporter');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const devices = Number(opt.devices);

/** utime + stime of a process, ms */
const cpuMs = (pid) => (procStat(pid).cpuTicks * 1000) / 100; // USER_HZ = 100 on Linux

async function one(checkout, port) {
  const host = makeHost(devices);
  // each build with its own fake loader, which speaks that build's loader protocol
  const fake = resolve(checkout, 'test/hardening/fixtures/fake-loader.mjs');
  const args = [resolve(checkout, 'dist/cli.js'), `--path.sysfs=${host.sys}`, `--path.debugfs=${host.debug}`, `--path.procfs=${host.proc}`,
    `--web.listen-address=127.0.0.1:${port}`, `--collector.interval=${opt.interval}`, '--bpf.enable=on', `--bpf.loader=${fake}`, '--log.level=error'];
  const p = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, HP_FAKE_DEVICES: String(devices) } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () => new Promise((res, rej) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent, headers: { 'accept-encoding': 'gzip' } }, (m) => {
      m.resume();
      m.on('end', () => res(m.statusCode));
    }).on('error', rej);
  });
  try {
    let up = false;
    for (let i = 0; i < 200 && !up; i++) {
      up = await get().then((c) => c === 200, () => false);
      if (!up) await sleep(50);
    }
    if (!up) throw new Error(`${checkout}: the exporter did not answer on port ${port}`);
    await sleep(Number(opt.settle)); // the fake loader up, the model with two snapshots
    for (let i = 0; i < 20; i++) await get();
    const c0 = cpuMs(p.pid);
    for (let i = 0; i < Number(opt.scrapes); i++) {
      await get();
      if (Number(opt.pace) > 0) await sleep(Number(opt.pace));
    }
    const cpu = (cpuMs(p.pid) - c0) / Number(opt.scrapes);
    return { cpu, rss: memKiB(p.pid, 'VmRSS') / 1024, hwm: memKiB(p.pid, 'VmHWM') / 1024 };
  } finally {
    agent.destroy();
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
    host.dispose();
  }
}

console.log(`collection benchmark: ${devices} devices, --collector.interval=${opt.interval}, ${opt.scrapes} scrapes${Number(opt.pace) ? ` ${opt.pace} ms apart` : ''}, ${opt.pairs} pairs (A = ${opt.baseline}, B = ${ROOT}), load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
const rows = { A: [], B: [] };
for (let i = 0; i < Number(opt.pairs); i++) {
  rows.A.push(await one(opt.baseline, 19761));
  rows.B.push(await one(ROOT, 19762));
  console.log(`pair ${i + 1}: CPU ms/scrape ${rows.A[i].cpu.toFixed(1)} → ${rows.B[i].cpu.toFixed(1)}, RSS MiB ${rows.A[i].rss.toFixed(1)} → ${rows.B[i].rss.toFixed(1)} (peak ${rows.A[i].hwm.toFixed(1)} → ${rows.B[i].hwm.toFixed(1)})`);
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
for (const k of ['cpu', 'rss']) {
  const ratios = rows.B.map((r, i) => r[k] / rows.A[i][k]);
  console.log(`${k === 'cpu' ? 'CPU ms per scrape' : 'RSS MiB'}: median ${med(rows.A.map((r) => r[k])).toFixed(1)} → ${med(rows.B.map((r) => r[k])).toFixed(1)}, per-pair ratios ${ratios.map((x) => `×${x.toFixed(2)}`).join(' ')} (median ×${med(ratios).toFixed(2)})`);
}
