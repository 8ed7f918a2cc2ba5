// Start-up time of the release's single executable (A) against `node dist/cli.js` (B), paired
// runs A B A B … on the same machine, medians. Two measures:
//   version: spawn → exit of `--version` (process start, module loading, argument parsing)
//   replay:  spawn → first 200 from /healthz of `replay` on 127.0.0.1 (the whole serving start-up;
//            polled every 5 ms, which bounds the resolution)
// Needs `npm run build` and `npm run release` first (the tarball in build/release is unpacked).
//   node bench/release/run.mjs [--pairs 15]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');
const pairs = Number(process.argv[process.argv.indexOf('--pairs') + 1] || 15);
const tarball = readdirSync(join(root, 'build/release')).find((f) => /^hybridpoll-exporter-.*\.linux-amd64\.tar\.gz$/.test(f));
if (!tarball) throw new Error('no tarball in build/release: run npm run release');
const dir = mkdtempSync(join(tmpdir(), 'hybridpoll-bench-release-'));
spawnSync('tar', ['-xzf', join(root, 'build/release', tarball), '-C', dir, '--strip-components=1'], { stdio: 'inherit' });

const variants = {
  A: { name: 'single executable', cmd: join(dir, 'hybridpoll-exporter'), args: [] },
  B: { name: 'node dist/cli.js', cmd: process.execPath, args: [join(root, 'dist/cli.js')] },
};

const freePort = () => new Promise((ok) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); }); });

async function timeVersion(v) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(v.cmd, [...v.args, '--version'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${v.name} --version failed: ${r.stderr}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

async function timeReplay(v) {
  const port = await freePort();
  const t0 = process.hrtime.bigint();
  const p = spawn(v.cmd, [...v.args, 'replay', `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore', cwd: dir });
  try {
    for (;;) {
      if (p.exitCode !== null) throw new Error(`${v.name} replay exited ${p.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
      if (ok) return Number(process.hrtime.bigint() - t0) / 1e6;
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    await new Promise((done) => (p.exitCode !== null ? done() : (p.once('exit', done), p.kill('SIGTERM'))));
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

const results = {};
for (const [measure, fn] of [['version', timeVersion], ['replay', timeReplay]]) {
  await fn(variants.A); await fn(variants.B); // warm the page cache for both
  const t = { A: [], B: [] };
  for (let i = 0; i < pairs; i++) for (const k of ['A', 'B']) t[k].push(await fn(variants[k]));
  results[measure] = t;
}
rmSync(dir, { recursive: true, force: true });

console.log(`| measure (${pairs} pairs, A B A B …) | single executable, median (min–max) | node dist/cli.js, median (min–max) | median of A − B per pair |`);
console.log('|---|---|---|---|');
for (const [measure, t] of Object.entries(results)) {
  const cell = (xs) => `${median(xs).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
  const diff = median(t.A.map((a, i) => a - t.B[i]));
  console.log(`| ${measure} | ${cell(t.A)} | ${cell(t.B)} | ${diff >= 0 ? '+' : ''}${diff.toFixed(0)} ms |`);
}
