#!/usr/bin/env node
// Cost of the BPF collector, three measurements (root; needs fio, bpftool, clang, losetup; see README.md):
//  1. ns per event of our block programs (hp_rq_issue, hp_rq_done) against a count-only tp_btf pair
//     (the floor, floor.bpf.c) and the equivalent bpftrace script (equivalent.bt), all attached in
//     the same fio QD32 run, from kernel.bpf_stats_enabled=1 (run_time_ns / run_cnt);
//  2. fio IOPS with and without the whole exporter (node dist/cli.js serve, scraped every second),
//     paired A B A B ..., at QD1 and QD32: medians of each and of the per-pair ratio;
//  3. the loader's RSS (VmRSS, VmHWM) while serving those scrapes.
// The device is a loop device with direct I/O over a file of random data under /tmp.
//   node bench/bpf-cost/run.mjs [--seconds 5] [--pairs 5] [--no-bpftrace] [--no-iops]
//     [--sample N] [--baseline OLD/build/bpf/hybridpoll-bpf [--baseline-sample N]] [--cost-runs N]
// With --baseline, section 1 runs that loader and ours alternately (A B A B ..., --cost-runs pairs,
// each run with the floor attached too) and reports medians and the median of the paired ratios.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { execa } from 'execa';

const HERE = import.meta.dirname;
const ROOT = resolve(HERE, '../..');
const BUILD = resolve(ROOT, 'build/bpf');
const LOADER = resolve(BUILD, 'hybridpoll-bpf');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const SECONDS = opt('--seconds', 5);
const PAIRS = opt('--pairs', 5);
const WITH_BPFTRACE = !args.includes('--no-bpftrace');
const WITH_IOPS = !args.includes('--no-iops');
const str = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const BASELINE = str('--baseline') && resolve(str('--baseline'));
const SAMPLE = opt('--sample', 1);
const BASE_SAMPLE = opt('--baseline-sample', 1);
const COST_RUNS = opt('--cost-runs', BASELINE ? 3 : 1);
const PORT = 19791;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const has = (cmd) => execa('sh', ['-c', `command -v ${cmd}`], { reject: false }).then((r) => r.exitCode === 0);
const log = (...a) => console.error('bpf-cost:', ...a);

async function preflight() {
  if (process.getuid() !== 0) throw new Error('run as root');
  for (const c of ['fio', 'bpftool', 'clang', 'losetup', 'cc']) if (!(await has(c))) throw new Error(`${c} is missing`);
  if (!existsSync(resolve(ROOT, 'dist/cli.js'))) throw new Error('dist/cli.js is missing: run npm run build');
  execFileSync('bash', [resolve(ROOT, 'scripts/build-bpf.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  // the floor, built against the same vmlinux.h
  execFileSync('bash', [resolve(HERE, 'build-floor.sh'), resolve(BUILD, 'floor')], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (WITH_BPFTRACE && !(await has('bpftrace'))) {
    log('installing bpftrace (apt-get install -y bpftrace) for the comparison');
    await execa('apt-get', ['install', '-y', 'bpftrace'], { env: { DEBIAN_FRONTEND: 'noninteractive' }, reject: false });
  }
}

function loopDevice() {
  const dir = mkdtempSync(join(tmpdir(), 'hp-bench-'));
  const file = join(dir, 'backing.img');
  execFileSync('dd', ['if=/dev/urandom', `of=${file}`, 'bs=1M', 'count=256', 'status=none']);
  const path = execFileSync('losetup', ['-f', '--show', '--direct-io=on', file], { encoding: 'utf8' }).trim();
  return { path, detach: () => (execFileSync('losetup', ['-d', path]), rmSync(dir, { recursive: true, force: true })) };
}

async function fio(dev, qd, seconds) {
  const r = await execa('fio', ['--name=b', `--filename=${dev}`, '--ioengine=io_uring', '--direct=1', '--rw=randread', '--bs=4k',
    `--iodepth=${qd}`, `--runtime=${seconds}`, '--time_based', '--output-format=json']);
  const read = JSON.parse(r.stdout).jobs[0].read;
  return { iops: read.iops, ios: read.total_ios, clatUs: read.clat_ns.mean / 1000 };
}

/** spawns a process whose first stdout line says it is ready */
async function spawnReady(cmd, argv, isReady) {
  const p = track(spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'inherit'] }));
  const lines = createInterface({ input: p.stdout });
  await new Promise((ok, fail) => {
    lines.on('line', (l) => isReady(l) && ok());
    p.on('exit', (c) => fail(new Error(`${cmd} exited with ${c}`)));
  });
  return p;
}

/** ends a child by PID with `signal` (bpftrace wants SIGINT), SIGKILL after 5 s */
const stop = (p, signal = 'SIGTERM') => new Promise((done) => {
  if (p.exitCode !== null || p.signalCode !== null) return done();
  const killer = setTimeout(() => p.kill('SIGKILL'), 5000);
  p.once('exit', () => {
    clearTimeout(killer);
    done();
  });
  p.kill(signal);
});

// undo the machine changes (children, sysctl, loop device) also when the bench is interrupted
const cleanups = [];
const children = new Set();
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    for (const p of children) p.kill(p.stopSignal ?? 'SIGTERM');
    for (const c of cleanups.reverse()) try { c(); } catch { /* best effort */ }
    process.exit(130);
  });
}
const track = (p) => (children.add(p), p.once('exit', () => children.delete(p)), p);

const progs = () => JSON.parse(execFileSync('bpftool', ['prog', 'show', '-j'], { encoding: 'utf8' }));

async function costRun(dev, loader = LOADER, sample = SAMPLE, withBt = WITH_BPFTRACE) {
  const old = readFileSync('/proc/sys/kernel/bpf_stats_enabled', 'utf8').trim();
  const restore = () => execFileSync('sysctl', ['-q', `kernel.bpf_stats_enabled=${old}`]);
  cleanups.push(restore);
  execFileSync('sysctl', ['-q', 'kernel.bpf_stats_enabled=1']);
  const started = [];
  try {
    started.push(await spawnReady(loader, sample > 1 ? [`--sample=${sample}`] : [], (l) => l.startsWith('{"type":"hello"')));
    started.push(await spawnReady(resolve(BUILD, 'floor/floor'), [], (l) => l === 'ready'));
    const beforeBt = new Set(progs().map((p) => p.id));
    if (withBt && (await has('bpftrace'))) {
      const bt = track(spawn('bpftrace', [resolve(HERE, 'equivalent.bt')], { stdio: ['ignore', 'ignore', 'ignore'] }));
      bt.stopSignal = 'SIGINT';
      started.push(bt);
      for (let i = 0; i < 100 && progs().filter((p) => !beforeBt.has(p.id)).length < 2; i++) await sleep(100);
    }
    const btIds = new Set(progs().filter((p) => !beforeBt.has(p.id) && p.type === 'tracepoint').map((p) => p.id));
    const base = new Map(progs().map((p) => [p.id, p]));
    const r = await fio(dev, 32, SECONDS);
    const rows = [];
    for (const p of progs()) {
      const b = base.get(p.id);
      const cnt = (p.run_cnt ?? 0) - (b?.run_cnt ?? 0);
      const ns = (p.run_time_ns ?? 0) - (b?.run_time_ns ?? 0);
      const who = p.name?.startsWith('hp_') ? 'ours' : p.name?.startsWith('floor_') ? 'floor' : btIds.has(p.id) ? 'bpftrace' : undefined;
      if (who) rows.push({ who, name: p.name, cnt, ns, nsPerEvent: cnt ? ns / cnt : 0, misses: p.recursion_misses ?? 0 });
    }
    return { fio: r, rows };
  } finally {
    for (const p of started.reverse()) await stop(p, p.stopSignal);
    restore();
  }
}

async function withExporter(fn) {
  const p = track(spawn(process.execPath, [resolve(ROOT, 'dist/cli.js'), 'serve', `--web.listen-address=127.0.0.1:${PORT}`, '--bpf.enable=on'], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let logs = '';
  p.stderr.on('data', (d) => (logs += d));
  try {
    for (let i = 0; ; i++) {
      const up = await fetch(`http://127.0.0.1:${PORT}/metrics`).then((r) => r.text()).catch(() => '');
      if (/^hybridpoll_bpf_up 1$/m.test(up)) break;
      if (i > 300) throw new Error(`exporter did not come up:\n${logs}`);
      await sleep(100);
    }
    const loaderPid = Number(/msg="bpf loader running" pid=(\d+)/.exec(logs)[1]);
    let scrapes = 0;
    const timer = setInterval(() => fetch(`http://127.0.0.1:${PORT}/metrics`).then((r) => r.text()).then(() => scrapes++, () => {}), 1000);
    const result = await fn().finally(() => clearInterval(timer));
    const status = readFileSync(`/proc/${loaderPid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)[1]);
    const nodeStatus = readFileSync(`/proc/${p.pid}/status`, 'utf8');
    return { ...result, scrapes, loaderRssKb: kb('VmRSS'), loaderHwmKb: kb('VmHWM'), exporterRssKb: Number(/^VmRSS:\s+(\d+)/m.exec(nodeStatus)[1]) };
  } finally {
    await stop(p);
  }
}

async function pairs(dev, qd) {
  const rows = [];
  for (let i = 0; i < PAIRS; i++) {
    const a = await fio(dev, qd, SECONDS);
    const b = await withExporter(() => fio(dev, qd, SECONDS));
    rows.push({ without: a.iops, with: b.iops, ratio: b.iops / a.iops - 1, loaderRssKb: b.loaderRssKb, loaderHwmKb: b.loaderHwmKb, exporterRssKb: b.exporterRssKb, scrapes: b.scrapes });
    log(`QD${qd} pair ${i + 1}: without ${a.iops.toFixed(0)} IOPS, with ${b.iops.toFixed(0)} IOPS (${(100 * (b.iops / a.iops - 1)).toFixed(1)} %), loader RSS ${b.loaderRssKb} kB`);
  }
  return rows;
}

await preflight();
const loop = loopDevice();
cleanups.push(loop.detach);
log(`loop device ${loop.path} (${basename(loop.path)}), ${SECONDS} s runs, ${PAIRS} pairs`);
const FLOOR_OF = { hp_hrt_start: 'floor_hrt', hp_sched_sw: 'floor_sw', hp_sched_wk: 'floor_wk' };
const summary = (cost) => {
  const get = (who, re) => cost.rows.find((r) => r.who === who && re.test(r.name));
  const ours = { issue: get('ours', /^hp_rq_issue$/), complete: get('ours', /^hp_rq_done$/) };
  const floor = { issue: get('floor', /^floor_issue$/), complete: get('floor', /^floor_done$/) };
  const per = (r) => r?.nsPerEvent ?? NaN;
  const other = Object.fromEntries(cost.rows.filter((x) => x.who === 'ours' && x !== ours.issue && x !== ours.complete)
    .map((r) => [r.name, { ns: r.nsPerEvent, cnt: r.cnt, floor: per(get('floor', new RegExp(`^${FLOOR_OF[r.name]}$`))) }]));
  return { ours, floor, pair: per(ours.issue) + per(ours.complete), floorPair: per(floor.issue) + per(floor.complete), other, cost };
};
try {
  if (BASELINE) {
    // A B A B: the baseline loader and ours, each with the floor, on the same loop device
    const runs = [];
    for (let i = 0; i < COST_RUNS; i++) {
      const a = summary(await costRun(loop.path, BASELINE, BASE_SAMPLE, false));
      const b = summary(await costRun(loop.path, LOADER, SAMPLE, false));
      runs.push({ a, b });
      log(`cost pair ${i + 1}: before ${a.pair.toFixed(0)} ns (floor ${a.floorPair.toFixed(0)}), after ${b.pair.toFixed(0)} ns (floor ${b.floorPair.toFixed(0)})`);
    }
    const m = (f) => median(runs.map(f));
    const row = (name, s) => `| ${name} | ${m((r) => s(r).ours.issue.nsPerEvent).toFixed(0)} ns | ${m((r) => s(r).ours.complete.nsPerEvent).toFixed(0)} ns | ${m((r) => s(r).pair).toFixed(0)} ns | ${m((r) => s(r).floorPair).toFixed(0)} ns | ${m((r) => s(r).pair / s(r).floorPair).toFixed(2)}× |`;
    console.log(`\n## ns per event, A/B, ${COST_RUNS} pairs of fio QD32 ${SECONDS} s runs (medians)\n`);
    console.log('| loader | issue | complete | issue + complete | floor pair (same run) | / floor |\n|---|---|---|---|---|---|');
    console.log(row(`before (${BASELINE}${BASE_SAMPLE > 1 ? `, --sample=${BASE_SAMPLE}` : ''})`, (r) => r.a));
    console.log(row(`after (${LOADER}${SAMPLE > 1 ? `, --sample=${SAMPLE}` : ''})`, (r) => r.b));
    console.log(`\nmedian of the paired ratios after/before, issue + complete: ×${m((r) => r.b.pair / r.a.pair).toFixed(2)}`);
    console.log('\n| program | before ns/run | after ns/run | floor ns/run (same hook) | after / floor |\n|---|---|---|---|---|');
    for (const name of Object.keys(runs[0].b.other)) {
      const v = (s, k) => m((r) => s(r).other[name]?.[k] ?? NaN);
      console.log(`| ${name} | ${v((r) => r.a, 'ns').toFixed(0)} | ${v((r) => r.b, 'ns').toFixed(0)} (${v((r) => r.b, 'cnt').toFixed(0)} runs) | ${v((r) => r.b, 'floor').toFixed(0)} | ${m((r) => r.b.other[name].ns / r.b.other[name].floor).toFixed(2)}× |`);
    }
  } else {
  const cost = await costRun(loop.path);
  const get = (who, re) => cost.rows.find((r) => r.who === who && re.test(r.name));
  const pair = (who, i, c) => [get(who, i), get(who, c)];
  const [oi, oc] = pair('ours', /^hp_rq_issue$/, /^hp_rq_done$/);
  const [fi, fc] = pair('floor', /^floor_issue$/, /^floor_done$/);
  const [bi, bc] = pair('bpftrace', /issue/, /compl/);
  const fmt = (r) => (r ? `${r.nsPerEvent.toFixed(0)} ns (${r.cnt} runs${r.misses ? `, ${r.misses} recursion misses` : ''})` : 'n/a');
  const floorPair = fi.nsPerEvent + fc.nsPerEvent;
  console.log(`\n## ns per event, fio QD32 ${SECONDS} s (${cost.fio.ios} I/Os, ${cost.fio.iops.toFixed(0)} IOPS${SAMPLE > 1 ? `, --sample=${SAMPLE}` : ''})\n`);
  console.log('| program | issue | complete | issue + complete | / floor |\n|---|---|---|---|---|');
  for (const [name, i, c] of [['floor (count only, tp_btf)', fi, fc], ['ours (hp_rq_issue, hp_rq_done)', oi, oc], ['bpftrace equivalent.bt', bi, bc]]) {
    if (!i || !c) continue;
    const sum = i.nsPerEvent + c.nsPerEvent;
    console.log(`| ${name} | ${fmt(i)} | ${fmt(c)} | ${sum.toFixed(0)} ns | ${(sum / floorPair).toFixed(2)}× |`);
  }
  console.log('\nOther programs of ours in the same run (floor: a count-only program on the same hook):');
  for (const r of cost.rows.filter((x) => x.who === 'ours' && x !== oi && x !== oc)) {
    const f = FLOOR_OF[r.name] && get('floor', new RegExp(`^${FLOOR_OF[r.name]}$`));
    console.log(`- ${r.name}: ${fmt(r)}${f ? `; floor ${fmt(f)}` : ''}`);
  }
  }
  if (WITH_IOPS) {

  const all = {};
  for (const qd of [1, 32]) all[qd] = await pairs(loop.path, qd);
  console.log(`\n## fio IOPS with and without the exporter (${PAIRS} pairs A B, ${SECONDS} s each, scraped every 1 s)\n`);
  console.log('| QD | median without | median with | median of paired ratio | pairs (without → with) |\n|---|---|---|---|---|');
  for (const qd of [1, 32]) {
    const rs = all[qd];
    console.log(`| ${qd} | ${median(rs.map((r) => r.without)).toFixed(0)} | ${median(rs.map((r) => r.with)).toFixed(0)} | ${(100 * median(rs.map((r) => r.ratio))).toFixed(1)} % | ${rs.map((r) => `${r.without.toFixed(0)}→${r.with.toFixed(0)}`).join(', ')} |`);
  }
  const rss = Object.values(all).flat();
  console.log(`\nLoader RSS while serving: VmRSS median ${median(rss.map((r) => r.loaderRssKb))} kB, max VmHWM ${Math.max(...rss.map((r) => r.loaderHwmKb))} kB; exporter (node) VmRSS median ${median(rss.map((r) => r.exporterRssKb))} kB.`);
  }
} finally {
  loop.detach();
}
