#!/usr/bin/env node
// File reading alone (HostReader.read on the fixture host of tree.mjs), this checkout against a
// built older one (--root), alternating process by process, each the median of its reads.
// Unlike phases.mjs this has no BPF request competing for the event loop.
//   node bench/scrape/files.mjs --root /tmp/base --devices 64 --runs 3
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { makeHost } from './tree.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: opt } = parseArgs({ options: { root: { type: 'string' }, devices: { type: 'string', default: '64' }, runs: { type: 'string', default: '3' }, reads: { type: 'string', default: '60' }, child: { type: 'string' } } });

if (opt.child) {
  const { HostReader } = await import(resolve(opt.child, 'dist/sources/reader.js'));
  const host = makeHost(Number(opt.devices));
  const r = new HostReader({ paths: { sysfs: host.sys, debugfs: host.debug, procfs: host.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: true } });
  const ts = [];
  for (let i = 0; i < Number(opt.reads); i++) {
    const t0 = performance.now();
    await r.read();
    ts.push(performance.now() - t0);
    await new Promise((ok) => setTimeout(ok, 5));
  }
  host.dispose();
  console.log(ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)]);
} else {
  const roots = { this: ROOT, ...(opt.root ? { before: resolve(opt.root) } : {}) };
  const res = Object.fromEntries(Object.keys(roots).map((k) => [k, []]));
  for (let i = 0; i < Number(opt.runs); i++) {
    for (const [k, dir] of Object.entries(roots)) {
      const out = spawnSync(process.execPath, [import.meta.filename, '--child', dir, '--devices', opt.devices, '--reads', opt.reads], { encoding: 'utf8' });
      if (out.status !== 0) throw new Error(out.stderr);
      res[k].push(Number(out.stdout.trim()));
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(Object.entries(res).map(([k, v]) => `${k}: ${median(v).toFixed(1)} ms (runs ${v.map((x) => x.toFixed(1)).join(', ')})`).join('; ') + ` — ${opt.devices} devices`);
}
