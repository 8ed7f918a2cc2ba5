// Guest-side benchmark of BPF loader builds against each other and against no tracing, in one boot
// (plain Node, no dependencies; run with `npx tsx test/vm/lab.ts exec 'node /opt/hp/guest/loader-ab.mjs ...'`).
// Every loader runs on its default (fentry) path with its programs detached (SIGUSR1) except while
// its own runs go (SIGUSR2), so the configurations differ only in which programs are attached.
// Each round runs every configuration once, in an order rotated per round (drift of the emulated
// host hits all alike); a configuration's IOPS change is judged per round as in check 4:
// p50(untraced) / p50(traced) − 1, median over rounds. Then, with kernel.bpf_stats_enabled=1, one
// run per loader: each program's runs and run time per I/O.
//   --loaders NAME=PATH[+ARG...],...  loader builds and their options, e.g.
//            base=/opt/hp/bin/hybridpoll-bpf,lean=/opt/hp/bin/variants/lean+--exclude+task_exit%rq_issue
//            (options after '+', a '%' in them stands for a comma)
//   --serial S (hpfast) --modes poll,hybrid --qd 1 --bs 4096 --secs 2 --rounds 6 --stats-secs 4
//   --device NAME  the block device by name instead (e.g. hpsim0: tools/hpsim has no serial)
//   --floor PATH   bench/bpf-cost's count-only floor (floor.bpf.c, linked statically), attached
//                  through the bpf_stats runs: each stats line then has the floor's issue +
//                  complete pair per I/O and the loader's programs against it (issue 16's target)
// Prints one JSON line per run ("run"), per program cost ("stats") and the summary ("summary").
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';

const HPDRIVE = '/opt/hp/bin/hpdrive';
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const loaders = (args.loaders ?? 'base=/opt/hp/bin/hybridpoll-bpf').split(',').map((x) => x.split('='));
const modes = (args.modes ?? 'poll,hybrid').split(',');
const qd = Number(args.qd ?? 1);
const bs = Number(args.bs ?? 4096);
const secs = Number(args.secs ?? 2);
const rounds = Number(args.rounds ?? 6);
const statsSecs = Number(args['stats-secs'] ?? 4);
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const name = args.device ?? readdirSync('/sys/block').find((d) => d.startsWith('nvme') && readFileSync(`/sys/block/${d}/device/serial`, 'utf8').trim() === (args.serial ?? 'hpfast'));
if (!name) throw new Error(`no NVMe namespace with serial ${args.serial ?? 'hpfast'}`);
const device = `/dev/${name}`;

function links(pid) {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === 'anon_inode:bpf_link') n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/** A child whose stdin stays open, once it printed its first line: [child, that line]. */
async function spawnFirstLine(label, path, opts) {
  const child = spawn(path, opts, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-500)));
  for (let t = 0; !stdout.includes('\n'); t++) {
    if (t > 1200 || child.exitCode !== null) throw new Error(`${label}: no first line: ${stdout.slice(0, 500)} ${stderr}`);
    await sleep(100);
  }
  return [child, stdout.split('\n')[0]];
}

async function startLoader(label, spec) {
  const [path, ...opts] = spec.split('+').map((x) => x.replaceAll('%', ','));
  const [child, first] = await spawnFirstLine(label, path, opts);
  const hello = JSON.parse(first);
  if (hello.type !== 'hello') throw new Error(`${label}: ${first.slice(0, 500)}`);
  const l = { label, child, pid: child.pid, attachedLinks: links(child.pid), path: hello.poll_path };
  const attached = Object.entries(hello.programs ?? {}).filter(([, p]) => p.state === 'attached').map(([n]) => n);
  out({ type: 'loader', label, pid: l.pid, poll_path: hello.poll_path, links: l.attachedLinks, attached });
  return l;
}

async function setAttached(l, attached) {
  process.kill(l.pid, attached ? 'SIGUSR2' : 'SIGUSR1');
  for (const t0 = Date.now(); ; ) {
    const n = links(l.pid);
    if (attached ? n >= l.attachedLinks : n === 0) return;
    if (Date.now() - t0 > 30_000) throw new Error(`${l.label}: ${n} links after ${attached ? 'SIGUSR2' : 'SIGUSR1'}`);
    await sleep(50);
  }
}

function drive(mode, more) {
  const r = spawnSync(HPDRIVE, ['-m', mode, '-q', String(qd), '-b', String(bs), ...more, device], { encoding: 'utf8' });
  const j = JSON.parse(r.stdout.trim().split('\n').pop());
  if (j.error) throw new Error(`hpdrive: ${j.error}`);
  return j;
}

function progStats() {
  const r = spawnSync('bpftool', ['-j', 'prog', 'show'], { encoding: 'utf8' });
  const by = {};
  for (const p of JSON.parse(r.stdout)) {
    if (!p.name?.startsWith('hp_') && !p.name?.startsWith('floor_')) continue;
    const e = (by[p.name] ??= { ns: 0, cnt: 0 });
    e.ns += p.run_time_ns ?? 0;
    e.cnt += p.run_cnt ?? 0;
  }
  return by;
}

const median = (xs) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return v.length ? (v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2) : NaN;
};

/** The floor binary, once it says "ready" (it detaches and exits at stdin's end). */
async function startFloor(path) {
  const [child, first] = await spawnFirstLine('floor', path, []);
  if (first !== 'ready') throw new Error(`floor: not ready: ${first.slice(0, 200)}`);
  return child;
}

const ls = [];
for (const [label, path] of loaders) ls.push(await startLoader(label, path));
for (const l of ls) await setAttached(l, false);
const configs = ['none', ...ls.map((l) => l.label)];
const results = [];
writeFileSync('/proc/sys/kernel/bpf_stats_enabled', '0');
for (let round = 0; round < rounds; round++) {
  for (const mode of modes) {
    for (let k = 0; k < configs.length; k++) {
      const cfg = configs[(k + round) % configs.length];
      const l = ls.find((x) => x.label === cfg);
      if (l) await setAttached(l, true);
      drive(mode, ['-n', '200']);
      const d = drive(mode, ['-t', String(secs)]);
      if (l) await setAttached(l, false);
      const rec = { type: 'run', round, mode, cfg, ios: d.ios, iops: d.iops, p50: d.lat_us.p50, cpu: d.cpu.util, vcsw: d.ctxsw.voluntary / d.ios };
      results.push(rec);
      out(rec);
    }
  }
}
writeFileSync('/proc/sys/kernel/bpf_stats_enabled', '1');
const floor = args.floor ? await startFloor(args.floor) : undefined;
for (const mode of modes) {
  for (const l of ls) {
    await setAttached(l, true);
    drive(mode, ['-n', '200']);
    const a = progStats();
    const d = drive(mode, ['-t', String(statsSecs)]);
    const b = progStats();
    await setAttached(l, false);
    const progs = {};
    const floorProgs = {};
    let total = 0;
    for (const [p, v] of Object.entries(b)) {
      const ns = v.ns - (a[p]?.ns ?? 0);
      const cnt = v.cnt - (a[p]?.cnt ?? 0);
      if (!cnt) continue;
      const row = { perIo: +(cnt / d.ios).toFixed(2), nsPerIo: Math.round(ns / d.ios), nsPerRun: Math.round(ns / cnt) };
      if (p.startsWith('floor_')) floorProgs[p] = row;
      else {
        total += ns;
        progs[p] = row;
      }
    }
    // the floor's pair: one count-only issue and one complete, each at its cost per run
    const pair = floor && floorProgs.floor_issue && floorProgs.floor_done ? floorProgs.floor_issue.nsPerRun + floorProgs.floor_done.nsPerRun : undefined;
    out({ type: 'stats', mode, cfg: l.label, ios: d.ios, p50: d.lat_us.p50, nsPerIo: Math.round(total / d.ios), progs,
      ...(floor ? { floor: floorProgs, floorPairNs: pair, againstFloorPair: pair ? +(total / d.ios / pair).toFixed(2) : undefined } : {}) });
  }
}
if (floor) floor.stdin.end();
writeFileSync('/proc/sys/kernel/bpf_stats_enabled', '0');
for (const mode of modes) {
  for (const l of ls) {
    const gaps = [];
    for (let round = 0; round < rounds; round++) {
      const u = results.find((r) => r.round === round && r.mode === mode && r.cfg === 'none');
      const t = results.find((r) => r.round === round && r.mode === mode && r.cfg === l.label);
      if (u && t) gaps.push(u.p50 / t.p50 - 1);
    }
    const p50s = (c) => results.filter((r) => r.mode === mode && r.cfg === c).map((r) => r.p50);
    out({ type: 'summary', mode, cfg: l.label, iopsByP50: gaps.map((g) => +(g * 100).toFixed(1)), median: +(median(gaps) * 100).toFixed(1),
      p50Median: median(p50s(l.label)), untracedP50Median: median(p50s('none')) });
  }
}
for (const l of ls) l.child.stdin.end();
await sleep(1000);
