#!/usr/bin/env node
// What the sched_switch program costs a host that does not poll, for two loader builds, paired:
// A B B A A B … runs of a context-switch load (two processes ping-ponging over pipes), each with
// one loader attached and kernel.bpf_stats_enabled=1; per run the program's run_ns / run_cnt from
// the loader's own snapshot. Prints every run and the medians. Needs root.
//   sudo node bench/bpf-cost/switch-gate.mjs --a OLD_LOADER --b NEW_LOADER [--pairs 6] [--seconds 3]
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

const { values: o } = parseArgs({ options: { a: { type: 'string' }, b: { type: 'string' }, pairs: { type: 'string', default: '6' }, seconds: { type: 'string', default: '3' } } });
if (!o.a || !o.b) throw new Error('usage: switch-gate.mjs --a LOADER --b LOADER [--pairs N] [--seconds S]');
const pairs = Number(o.pairs);
const secs = Number(o.seconds);
const PROG = 'sched_switch';

/** One loader: start, wait for hello, snapshot, load, snapshot, quit. */
async function measure(loader) {
  const p = spawn(loader, [], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = createInterface({ input: p.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value);
  const hello = await next();
  if (hello.type !== 'hello') throw new Error(`${loader}: ${JSON.stringify(hello)}`);
  const snap = async (id) => {
    p.stdin.write(`snap ${id}\n`);
    const s = await next();
    return s.progs?.[PROG] ?? {};
  };
  const s0 = await snap('0');
  // two python processes ping-pong one byte: every round trip is two context switches per side
  execFileSync('python3', ['-c', `
import os, time
r1, w1 = os.pipe(); r2, w2 = os.pipe()
end = time.time() + ${secs}
if os.fork() == 0:
    os.close(w1); os.close(r2)
    while True:
        b = os.read(r1, 1)
        if not b: os._exit(0)
        os.write(w2, b)
os.close(r1); os.close(w2)
n = 0
while time.time() < end:
    os.write(w1, b'x'); os.read(r2, 1); n += 1
os.close(w1)
os.wait()
`]);
  const s1 = await snap('1');
  p.stdin.write('quit\n');
  await new Promise((r) => p.on('exit', r));
  const runs = (s1.run_cnt ?? 0) - (s0.run_cnt ?? 0);
  return { runs, nsPerRun: runs > 0 ? ((s1.run_ns ?? 0) - (s0.run_ns ?? 0)) / runs : NaN };
}

const median = (xs) => {
  const v = [...xs].sort((x, y) => x - y);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

const STATS = '/proc/sys/kernel/bpf_stats_enabled';
const was = readFileSync(STATS, 'utf8').trim();
writeFileSync(STATS, '1');
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { writeFileSync(STATS, was); process.exit(1); });
try {
  const res = { a: [], b: [] };
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 ? ['b', 'a'] : ['a', 'b'];
    for (const k of order) {
      const m = await measure(o[k]);
      res[k].push(m.nsPerRun);
      console.log(`pair ${i} ${k}: ${m.runs} ${PROG} runs, ${m.nsPerRun.toFixed(1)} ns each`);
    }
  }
  const ratio = res.a.map((x, i) => res.b[i] / x - 1);
  console.log(`median ns per ${PROG}: a ${median(res.a).toFixed(1)}, b ${median(res.b).toFixed(1)}; median paired b/a - 1: ${(median(ratio) * 100).toFixed(1)}%`);
} finally {
  writeFileSync(STATS, was);
}
