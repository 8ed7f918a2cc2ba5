// Paired RSS of two builds of the exporter, A B A B: each started on this host (its own sysfs,
// BPF off, so nothing but the process differs), scraped 40 times 25 ms apart, then VmRSS and
// VmHWM read. For changes to what the process loads; bench/scrape/run.mjs is the full comparison.
//   node bench/scrape/rss-pair.mjs OLD/dist/cli.js dist/cli.js [pairs]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
const [oldCli, newCli, pairs = '5'] = process.argv.slice(2);
if (!oldCli || !newCli) throw new Error('usage: node bench/scrape/rss-pair.mjs OLD/dist/cli.js NEW/dist/cli.js [pairs]');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function one(cli, port) {
  const p = spawn(process.execPath, [cli, '--no-collector.bpf', `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = ''; p.stderr.on('data', (d) => (err += d));
  for (let i = 0; i < 100 && !/listening/.test(err); i++) await sleep(50);
  for (let i = 0; i < 40; i++) { await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(); await sleep(25); }
  await sleep(500);
  const st = readFileSync(`/proc/${p.pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(st)[1]) / 1024, hwm = Number(/VmHWM:\s+(\d+)/.exec(st)[1]) / 1024;
  p.kill('SIGTERM'); await new Promise((r) => p.once('exit', r));
  return { rss, hwm };
}
const rows = { old: [], new: [] };
for (let i = 0; i < Number(pairs); i++) {
  rows.old.push(await one(oldCli, 19742));
  rows.new.push(await one(newCli, 19743));
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
for (const k of ['old', 'new']) console.log(k, 'RSS', rows[k].map((r) => r.rss.toFixed(1)).join(' '), 'median', med(rows[k].map((r) => r.rss)).toFixed(1), '| peak median', med(rows[k].map((r) => r.hwm)).toFixed(1));
console.log('ratios per pair', rows.new.map((r, i) => (r.rss / rows.old[i].rss).toFixed(3)).join(' '));
