// Control agent of the VM-suite guest (plain Node, no dependencies). The host drives every step
// through it over a hostfwd port on 127.0.0.1: start the exporter (serve or record), run hpdrive,
// read files, power off. It only runs the fixed binaries of the project disk, with validated options.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';

const PORT = Number(process.env.HPVM_AGENT_PORT ?? 9100);
const EXPORTER_PORT = 9742;
const APP = '/opt/hp/app/dist/cli.js';
const HPDRIVE = '/opt/hp/bin/hpdrive';
const LOADER = '/opt/hp/bin/hybridpoll-bpf';

const read = (p) => {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return null;
  }
};
const log = (msg) => process.stdout.write(`HPVM: agent: ${msg}\n`);

/** Block devices the lab drives: QEMU's NVMe namespaces and the simulated hpsim devices. */
const DEV_NAME = /^(nvme\d+n\d+|hpsim\d+)$/;
const DEV_PATH = /^\/dev\/(nvme\d+n\d+|hpsim\d+)$/;
const deviceName = (d) => {
  if (!DEV_NAME.test(d ?? '')) throw new Error('device must be nvmeXnY or hpsimN');
  return d;
};
const devicePath = (d) => {
  if (!DEV_PATH.test(d ?? '')) throw new Error('device must be /dev/nvmeXnY or /dev/hpsimN');
  return d;
};
/** hpsimN or /dev/hpsimN: the device's sysfs directory of the module (tools/hpsim/README.md) */
const hpsimDir = (d) => {
  const m = /^(?:\/dev\/)?(hpsim\d+)$/.exec(d ?? '');
  if (!m) throw new Error('device must be hpsimN or /dev/hpsimN');
  const dir = `/sys/block/${m[1]}/hpsim`;
  if (!existsSync(dir)) throw new Error(`no ${m[1]} (is the hpsim module loaded?)`);
  return dir;
};
const hpsimState = (dir) => ({ profile: read(`${dir}/profile`), seed: read(`${dir}/seed`), stats: read(`${dir}/stats`) });

/** What the guest kernel shows about polling, for the host's sanity checks and the report. */
function info() {
  const devices = readdirSync('/sys/block')
    .filter((d) => DEV_NAME.test(d))
    .map((name) => {
      const dbg = `/sys/kernel/debug/block/${name}`;
      const hctx = {};
      if (existsSync(dbg)) for (const h of readdirSync(dbg).filter((x) => x.startsWith('hctx'))) hctx[h] = read(`${dbg}/${h}/type`);
      const sim = name.startsWith('hpsim');
      return {
        name,
        // hpsim has no device/serial: its name stands in
        serial: sim ? name : read(`/sys/block/${name}/device/serial`),
        majmin: read(`/sys/block/${name}/dev`),
        io_poll: read(`/sys/block/${name}/queue/io_poll`),
        io_poll_delay: read(`/sys/block/${name}/queue/io_poll_delay`),
        max_sectors_kb: read(`/sys/block/${name}/queue/max_sectors_kb`),
        hctx,
        ...(sim ? { hpsim: hpsimState(`/sys/block/${name}/hpsim`) } : {}),
      };
    });
  const hpsimParams = existsSync('/sys/module/hpsim/parameters')
    ? Object.fromEntries(readdirSync('/sys/module/hpsim/parameters').map((p) => [p, read(`/sys/module/hpsim/parameters/${p}`)]))
    : null;
  return {
    release: read('/proc/sys/kernel/osrelease'),
    cmdline: read('/proc/cmdline'),
    nproc: onlineCpus(),
    pollQueuesParam: read('/sys/module/nvme/parameters/poll_queues'),
    hpsimParams,
    node: process.version,
    loader: existsSync(LOADER),
    devices,
    uptime: Number(read('/proc/uptime')?.split(' ')[0]),
  };
}

/** One child at a time per role; output kept for the host. */
function start(role, file, args, stdin = 'ignore') {
  const child = spawn(file, args, { stdio: [stdin, 'pipe', 'pipe'] });
  const st = { child, stdout: '', stderr: '', exit: null };
  // A child that exits before its stdin is closed must not take the agent down with EPIPE.
  child.stdin?.on('error', (e) => log(`${role} stdin: ${e.message}`));
  // Resolved once a line is out or the child is gone: a waiter must not poll on a timer, since
  // in virtual time every wake-up of this process is guest CPU beside the measured run.
  let lineOut;
  st.line = new Promise((ok) => (lineOut = ok));
  child.stdout.on('data', (d) => {
    st.stdout += d;
    if (st.stdout.includes('\n')) lineOut();
  });
  child.stderr.on('data', (d) => {
    st.stderr += d;
    if (st.stderr.length > 1_000_000) st.stderr = st.stderr.slice(-500_000);
  });
  st.done = new Promise((ok) =>
    child.on('close', (code, signal) => {
      st.exit = { code, signal };
      lineOut();
      ok(st.exit);
    }),
  );
  child.on('error', (e) => (st.stderr += `spawn error: ${e.message}\n`));
  log(`${role} started pid ${child.pid}: ${file} ${args.join(' ')}`);
  return st;
}

/** the hpdrive processes of the current run (one, or several side by side: the lab's rings runs) */
let drives = [];
const driving = () => drives.some((d) => d.exit === null);
let settledThreads;
let exporter = null;
let watch = null;

const MODES = new Set(['irq', 'poll', 'hybrid']);
const int = (v, lo, hi, name) => {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${name} must be an integer in [${lo}, ${hi}]`);
  return String(v);
};
/** hpdrive's arguments for process i of b.procs: pinned to the last CPU, the next ones below it. */
function driveArgs(b, i = 0) {
  const devices = b.devices ?? [b.device];
  if (!Array.isArray(devices) || devices.length < 1 || devices.length > 8) throw new Error('devices must list 1 to 8 devices');
  devices.forEach(devicePath);
  if (!MODES.has(b.mode)) throw new Error('mode must be irq, poll or hybrid');
  const a = ['-m', b.mode, '-q', int(b.qd ?? 1, 1, 1024, 'qd'), '-b', int(b.bs ?? 4096, 512, 1 << 20, 'bs')];
  if (b.ios !== undefined) a.push('-n', int(b.ios, 1, 1e9, 'ios'));
  else a.push('-t', String(Number(b.secs ?? 5)));
  // side by side, each process its own seed (its own offsets)
  if (b.seed !== undefined) a.push('-s', int(b.seed + i, 1, 2 ** 31, 'seed'));
  if (b.hold) a.push('-H');
  // one ring over several devices: each new read on the next device in turn (else slot i on device i mod n)
  if (b.roundRobin) a.push('-R');
  // side by side, each would wait for the others to go quiet (the host idles the guest before)
  if ((b.procs ?? 1) > 1) a.push('-Q');
  // The poller on the last CPU, the agent, exporter and housekeeping free to use the others.
  a.push('-c', String(onlineCpus() - 1 - i));
  return [...a, ...devices];
}

const onlineCpus = () => readdirSync('/sys/devices/system/cpu').filter((c) => /^cpu\d+$/.test(c)).length;

/** Run time (ns) of every thread but those of `skipPids`, by "comm pid": what ran beside a measured run. */
function threadTimes(skipPids) {
  const out = new Map();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d) && !skipPids.includes(Number(d)))) {
    let tids = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; /* gone */
    }
    for (const tid of tids) {
      const ns = Number(read(`/proc/${pid}/task/${tid}/schedstat`)?.split(' ')[0]);
      if (!Number.isFinite(ns)) continue;
      // by tid: a kworker's comm names the work it runs ("kworker/u8:2+iou_exit"), which changes
      out.set(tid, { comm: read(`/proc/${pid}/task/${tid}/comm`) ?? '?', ns });
    }
  }
  return out;
}

/** The threads that ran most between two threadTimes, in ms (top n, over 0.05 ms). */
function topThreads(a, b, n) {
  return [...b].map(([tid, t]) => [`${t.comm} ${tid}`, (t.ns - (a.get(tid)?.ns ?? 0)) / 1e6]).filter(([, ms]) => ms > 0.05)
    .sort((x, y) => y[1] - x[1]).slice(0, n).map(([k, ms]) => `${k}: ${ms.toFixed(2)} ms`);
}
const topBeside = (a, b) => topThreads(a, b, 5);

/** Threads now running a ring's teardown (io_uring defers it to a kworker after the last close). */
const ringExits = () => [...threadTimes([]).values()].filter((t) => t.comm.includes('+iou_exit')).length;

// Flags the host may pass to the exporter: only the product's own option families.
const FLAG = /^--(bpf|model|collector|no-collector|log|output|interval|duration|count|description)[.\w-]*(=.*)?$/;
async function startExporter(b) {
  if (exporter && exporter.exit === null) throw new Error('exporter already running');
  const command = b.command ?? 'serve';
  if (!['serve', 'record'].includes(command)) throw new Error('command must be serve or record');
  const args = b.args ?? [];
  for (const a of args) if (typeof a !== 'string' || !FLAG.test(a)) throw new Error(`flag not allowed: ${a}`);
  const full = [APP, command, ...args];
  if (command === 'serve') full.push(`--web.listen-address=:${EXPORTER_PORT}`);
  if (existsSync(LOADER) && !args.some((a) => a.startsWith('--bpf.loader'))) full.push(`--bpf.loader=${LOADER}`);
  const t0 = Date.now();
  exporter = start('exporter', process.execPath, full);
  const ready = b.readyPattern ? new RegExp(b.readyPattern) : command === 'serve' ? /msg=listening/ : null;
  const timeoutMs = b.timeoutMs ?? 60_000;
  if (ready) {
    while (!ready.test(exporter.stderr) && !ready.test(exporter.stdout)) {
      if (exporter.exit) throw new Error(`exporter exited ${JSON.stringify(exporter.exit)} before ready:\n${exporter.stderr.slice(-4000)}`);
      if (Date.now() - t0 > timeoutMs) throw new Error(`exporter not ready after ${timeoutMs} ms:\n${exporter.stderr.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { pid: exporter.child.pid, startMs: Date.now() - t0, log: exporter.stderr.slice(-4000) };
}

async function stopExporter() {
  if (!exporter) return { running: false };
  const st = exporter;
  exporter = null;
  if (st.exit === null) {
    st.child.kill('SIGTERM');
    const timer = setTimeout(() => st.child.kill('SIGKILL'), 15_000);
    await st.done;
    clearTimeout(timer);
  }
  return { exit: st.exit, log: st.stderr.slice(-20_000), stdout: st.stdout.slice(-20_000), bpfPrograms: bpfPrograms() };
}

function signalExporter(sig) {
  if (!exporter || exporter.exit !== null) throw new Error('exporter not running');
  exporter.child.kill(sig);
  return { ok: true };
}

/** The exporter's BPF loader: its child process running LOADER. */
function loaderPid() {
  if (!exporter || exporter.exit !== null) throw new Error('exporter not running');
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const stat = read(`/proc/${d}/stat`);
    const ppid = stat ? Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) : NaN;
    if (ppid === exporter.child.pid && read(`/proc/${d}/comm`) === 'hybridpoll-bpf') return Number(d);
  }
  throw new Error('the exporter has no BPF loader process');
}

/** BPF links the process holds (its fds to anon_inode:bpf_link; bpftool races with links going away). */
function bpfLinks(pid) {
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

/**
 * Detach (SIGUSR1) or re-attach (SIGUSR2) the loader's programs, and wait until the kernel shows
 * it: no BPF links left, or as many as before the detach.
 */
let attachedLinks = 0;
async function setAttached(attached) {
  const pid = loaderPid();
  const before = bpfLinks(pid);
  if (!attached && before > 0) attachedLinks = before;
  process.kill(pid, attached ? 'SIGUSR2' : 'SIGUSR1');
  const t0 = Date.now();
  for (;;) {
    const n = bpfLinks(pid);
    if (attached ? n >= attachedLinks && n > 0 : n === 0) return { links: n, ms: Date.now() - t0 };
    if (Date.now() - t0 > 30_000) throw new Error(`loader ${pid}: ${n} BPF links 30 s after ${attached ? 'SIGUSR2' : 'SIGUSR1'} (expected ${attached ? attachedLinks : 0})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A second loader beside the exporter's (the other poll path), measuring the same run: the two
 * paths' figures can then be compared without the run-to-run noise of the emulated host. Talks
 * the loader protocol directly (src/bpf/README.md).
 */
let twin = null;
async function twinLine(type, timeoutMs) {
  const t0 = Date.now();
  for (;;) {
    const lines = twin.stdout.split('\n');
    const i = lines.findIndex((l) => l.startsWith(`{"type":"${type}"`) || l.startsWith('{"type":"fatal"'));
    if (i >= 0 && i < lines.length - 1) {
      twin.stdout = lines.slice(i + 1).join('\n');
      const j = JSON.parse(lines[i]);
      if (j.type === 'fatal') throw new Error(`twin loader: ${j.msg}`);
      return j;
    }
    if (twin.exit) throw new Error(`twin loader exited ${JSON.stringify(twin.exit)}: ${twin.stderr.slice(-2000)}`);
    if (Date.now() - t0 > timeoutMs) throw new Error(`twin loader: no ${type} line after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
async function startTwin(b) {
  if (twin && twin.exit === null) throw new Error('twin loader already running');
  const args = b.forceTracepoint ? ['--force-tracepoint'] : [];
  twin = start('twin-loader', LOADER, args, 'pipe');
  return { hello: await twinLine('hello', 180_000) };
}
let twinSeq = 0;
async function snapTwin() {
  if (!twin || twin.exit !== null) throw new Error('twin loader not running');
  twin.child.stdin.write(`snap t${++twinSeq}\n`);
  return twinLine('snap', 30_000);
}
async function stopTwin() {
  if (!twin) return { running: false };
  const st = twin;
  twin = null;
  st.child.stdin.end();
  const timer = setTimeout(() => st.child.kill('SIGKILL'), 15_000);
  await st.done;
  clearTimeout(timer);
  return { exit: st.exit, stderr: st.stderr.slice(-4000) };
}

/**
 * Exporters at given --bpf.sample rates (the sampling check starts one at a time: side by side,
 * each loader's clock reads would also time the others' programs), each with its own loader. They
 * listen on 127.0.0.1 only; the agent scrapes them for the host. Not beside the lab's exporter.
 */
const SAMPLED_PORT = 9750;
let sampled = [];
async function startSampled(b) {
  if (sampled.length) throw new Error('sampled exporters already running');
  if (exporter && exporter.exit === null) throw new Error('the lab exporter is running');
  const rates = b.rates ?? [];
  if (!Array.isArray(rates) || rates.length < 1 || rates.length > 4 || new Set(rates).size !== rates.length) throw new Error('rates must be 1 to 4 distinct sample rates');
  rates.forEach((n) => int(n, 1, 65536, 'rate'));
  const args = b.args ?? [];
  for (const a of args) if (typeof a !== 'string' || !FLAG.test(a) || a.startsWith('--bpf.sample') || a.startsWith('--bpf.loader')) throw new Error(`flag not allowed: ${a}`);
  // start()'s handlers write into the object it returns: extend that one, do not copy it
  sampled = rates.map((n, i) => Object.assign(start(`exporter-sample-${n}`, process.execPath,
    [APP, 'serve', ...args, `--bpf.sample=${n}`, `--web.listen-address=127.0.0.1:${SAMPLED_PORT + i}`, `--bpf.loader=${LOADER}`]), { n, port: SAMPLED_PORT + i }));
  // the host waits for them by scraping (/sampled/scrape with pending): three Node starts under TCG
  // can outlast one HTTP request
  return { pids: sampled.map((st) => st.child.pid) };
}
/** One scrape of every sampled exporter, keyed by rate; with pending, one not listening yet is reported, not an error. */
async function scrapeSampled(b) {
  if (!sampled.length) throw new Error('no sampled exporters running');
  const out = {};
  const pending = [];
  for (const st of sampled) {
    if (st.exit) throw new Error(`exporter --bpf.sample=${st.n} exited ${JSON.stringify(st.exit)}:\n${(st.stderr + st.stdout).slice(-4000)}`);
    if (b.pending && !/msg=listening/.test(st.stderr + st.stdout)) {
      pending.push(st.n);
      continue;
    }
    const r = await fetch(`http://127.0.0.1:${st.port}/metrics`, { signal: AbortSignal.timeout(60_000) });
    if (!r.ok) throw new Error(`scrape of exporter --bpf.sample=${st.n}: HTTP ${r.status}`);
    out[st.n] = await r.text();
  }
  return { scrapes: out, pending };
}
function signalSampled(sig) {
  if (!sampled.length) throw new Error('no sampled exporters running');
  for (const st of sampled) if (st.exit === null) st.child.kill(sig);
  return { ok: true };
}
async function stopSampled() {
  const all = sampled;
  sampled = [];
  const out = {};
  for (const st of all) {
    if (st.exit === null) {
      st.child.kill('SIGCONT');
      st.child.kill('SIGTERM');
      const timer = setTimeout(() => st.child.kill('SIGKILL'), 15_000);
      await st.done;
      clearTimeout(timer);
    }
    out[st.n] = { exit: st.exit, log: (st.stderr + st.stdout).slice(-4000) };
  }
  return { exporters: out, bpfPrograms: bpfPrograms() };
}

/** BPF programs loaded in the guest now (the loader must leave none behind). */
function bpfPrograms() {
  try {
    const j = JSON.parse(execFileSync('bpftool', ['prog', 'show', '-j'], { encoding: 'utf8' }));
    return j.map((p) => ({ id: p.id, type: p.type, name: p.name }));
  } catch (e) {
    return { error: e.message };
  }
}

/** hpdrive's result once it has printed it (a held ring stays open after that) or exited. */
async function driveResult(st, withBeside) {
  if (!st.held) await st.done;
  await st.line;
  const beside = withBeside && st.threadsBefore ? topBeside(st.threadsBefore, threadTimes([st.child.pid])) : [];
  const line = st.stdout.trim().split('\n').pop() ?? '';
  let result = null;
  try {
    result = JSON.parse(line);
  } catch {
    /* reported below as raw output */
  }
  return { exit: st.exit, result, beside, stdout: st.stdout.slice(-4000), stderr: st.stderr.slice(-4000) };
}

/**
 * Every process's result of the current run: one result, or { procs: [...] } when `many` were
 * asked for. Processes side by side run beside each other, so only a lone one gets the threads
 * that ran beside it (a walk of /proc).
 */
async function drivesResult(many) {
  const rs = await Promise.all(drives.map((d) => driveResult(d, drives.length === 1)));
  return many ? { procs: rs } : rs[0];
}

const routes = {
  'GET /info': async () => info(),
  // wait: true answers once the run is done (as /drive/wait): under icount the guest runs ahead
  // while the host's next request is on its way, so a separate /drive/wait arrives in the middle
  // of the run, and its interrupt, softirq and the agent's work on it run beside the poller.
  // procs: that many hpdrive processes side by side (each its own ring, pinned to its own CPU);
  // the answer is then { procs: [one result each] }.
  'POST /drive': async (b) => {
    if (driving()) throw new Error('hpdrive already running');
    const procs = Number(int(b.procs ?? 1, 1, onlineCpus(), 'procs'));
    const argv = Array.from({ length: procs }, (_, i) => driveArgs(b, i));
    drives = argv.map((a) => Object.assign(start('hpdrive', HPDRIVE, a, b.hold ? 'pipe' : 'ignore'), { held: !!b.hold }));
    // taken by /settle, before the quiet time: reading /proc here would leave Node's GC work
    // running beside the run
    for (const d of drives) d.threadsBefore = settledThreads;
    settledThreads = undefined;
    if (!b.wait) return { pids: drives.map((d) => d.child.pid) };
    return drivesResult(b.procs !== undefined);
  },
  // Until hpdrive has printed its result (a held ring stays open after that) or exited.
  'POST /drive/wait': async () => {
    if (!drives.length) throw new Error('no hpdrive started');
    return drivesResult(drives.length > 1);
  },
  'POST /drive/release': async () => {
    if (!drives.length) throw new Error('no hpdrive started');
    for (const d of drives) d.child.stdin?.end();
    const exits = await Promise.all(drives.map((d) => d.done));
    return { exit: exits[0], exits };
  },
  'POST /exporter/start': startExporter,
  'POST /exporter/stop': stopExporter,
  // SIGSTOP/SIGCONT of the exporter's Node process (its BPF programs stay attached and keep
  // counting): a measured run then pays for the BPF programs, not for Node working in the guest.
  'POST /exporter/pause': async () => signalExporter('SIGSTOP'),
  'POST /exporter/resume': async () => signalExporter('SIGCONT'),
  'GET /exporter/log': async () => ({ running: !!exporter && exporter.exit === null, log: exporter?.stderr.slice(-20_000) ?? '' }),
  'GET /bpf/progs': async () => bpfPrograms(),
  'POST /bpf/attach': async (b) => setAttached(!!b.attached),
  'POST /twin/start': startTwin,
  'POST /twin/snap': snapTwin,
  'POST /twin/stop': stopTwin,
  'POST /sampled/start': startSampled,
  'POST /sampled/scrape': scrapeSampled,
  'POST /sampled/pause': async () => signalSampled('SIGSTOP'),
  'POST /sampled/resume': async () => signalSampled('SIGCONT'),
  'POST /sampled/stop': stopSampled,
  // BPF run-time statistics for the cost diagnostic (the exporter itself never writes sysctls).
  'POST /bpf/stats': async (b) => {
    writeFileSync('/proc/sys/kernel/bpf_stats_enabled', b.enable ? '1' : '0');
    return { enabled: read('/proc/sys/kernel/bpf_stats_enabled') };
  },
  // The legacy guest's settings (issue 8): the test sets io_poll_delay (the exporter never writes).
  'POST /io_poll_delay': async (b) => {
    deviceName(b.device);
    if (!Number.isInteger(b.value) || b.value < -1 || b.value > 1_000_000) throw new Error('value must be an integer in [-1, 1000000]');
    const f = `/sys/block/${b.device}/queue/io_poll_delay`;
    writeFileSync(f, String(b.value));
    return { value: read(f) };
  },
  // poll_stat over a run (issue 8): the file is a gauge of the last 100 ms window with I/O, and each
  // adaptive sleep is ½ the mean of the window before it, so the host needs every window, not one.
  'POST /watch/start': async (b) => {
    deviceName(b.device);
    if (watch) clearInterval(watch.timer);
    const file = `/sys/kernel/debug/block/${b.device}/poll_stat`;
    const samples = [];
    const tick = () => {
      const text = read(file);
      if (text !== samples.at(-1)?.text) samples.push({ t: Date.now(), text });
    };
    tick();
    // a full collection now, before the run (the next request), as /settle does: a scavenge
    // falling due in the run is 1.4-5.7 ms of guest CPU beside the poller (--trace-gc, 2026-12-07)
    globalThis.gc?.();
    // taken before the run starts: what ran beside it is the difference at stop
    watch = { timer: setInterval(tick, Number(int(b.intervalMs ?? 50, 5, 1000, 'intervalMs'))), tick, samples, threads: threadTimes([]) };
    return { samples: samples.length };
  },
  'POST /watch/stop': async () => {
    if (!watch) throw new Error('no watch started');
    const w = watch;
    watch = null;
    clearInterval(w.timer);
    w.tick();
    return { samples: w.samples, end: Date.now(), threads: topThreads(w.threads, threadTimes([]), 8) };
  },
  // The seeds' fio job (issue 8): pvsync2 with hipri, O_DIRECT 4k random reads, one job.
  'POST /fio': async (b) => {
    if (driving()) throw new Error('hpdrive running');
    devicePath(b.device);
    const limit = b.ios !== undefined ? [`--number_ios=${int(b.ios, 1, 1e9, 'ios')}`, '--size=4g'] : ['--time_based', `--runtime=${int(b.secs ?? 5, 1, 3600, 'secs')}`];
    const args = ['--name=seed001', `--filename=${b.device}`, '--ioengine=pvsync2', '--hipri', '--direct=1', '--bs=4k', '--rw=randread',
      '--numjobs=1', '--thread=0', `--randseed=${int(b.seed ?? 1, 1, 2 ** 31, 'seed')}`, ...limit, '--output-format=json'];
    const st = start('fio', 'fio', args);
    const timer = setTimeout(() => st.child.kill('SIGKILL'), ((b.secs ?? 5) + 120) * 1000);
    await st.done;
    clearTimeout(timer);
    let result = null;
    try {
      result = JSON.parse(st.stdout.slice(st.stdout.indexOf('{')));
    } catch {
      /* reported as raw output */
    }
    return { exit: st.exit, result, stdout: result ? '' : st.stdout.slice(-4000), stderr: st.stderr.slice(-4000) };
  },
  // The simulated device's profile and seed (tools/hpsim/README.md): a bad profile is the
  // module's EINVAL, reported as the error.
  'POST /hpsim/profile': async (b) => {
    const dir = hpsimDir(b.device);
    if (typeof b.profile !== 'string' || !/^[a-z]+(:\d+)+$/.test(b.profile)) throw new Error('profile must look like fixed:50000 (tools/hpsim/README.md)');
    try {
      writeFileSync(`${dir}/profile`, b.profile);
    } catch (e) {
      throw new Error(`profile ${b.profile} refused by hpsim: ${e.code ?? e.message}`);
    }
    if (b.seed !== undefined) writeFileSync(`${dir}/seed`, int(b.seed, 0, 2 ** 32 - 1, 'seed'));
    return hpsimState(dir);
  },
  'GET /hpsim/stats': async (_b, q) => hpsimState(hpsimDir(q.get('device'))),
  // Idle guest time (the agent only waits): under icount the clock jumps over it at almost no host
  // cost. The legacy session separates the model windows of successive runs of one exporter with it.
  // Until no io_uring ring teardown is running: the previous run's ring exits in a kworker for
  // a while (seen: 5–18 ms of guest CPU beside the next run); under icount that work would slow
  // the next run's poller. Checks every 10 ms of guest time.
  'POST /settle': async (b) => {
    const timeout = Number(int(b.timeoutMs ?? 10_000, 1, 600_000, 'timeoutMs'));
    const t0 = Date.now();
    let busy = ringExits();
    while (busy > 0 && Date.now() - t0 < timeout) {
      await new Promise((r) => setTimeout(r, 10));
      busy = ringExits();
    }
    // A full collection now, before the quiet time, rather than one falling due in the run (its
    // work would run beside the poller). Suspected, not shown, for one sampling run of 2026-12-06
    // that read +2.6 % CPU per I/O with the agent 42.6 ms beside it (13–15 ms beside the others)
    // and one 10.3 ms stall; a later run had 76.9 ms beside it at the same CPU per I/O.
    globalThis.gc?.();
    settledThreads = threadTimes([]);
    return { waitedMs: Date.now() - t0, busy };
  },
  'POST /idle': async (b) => {
    const ms = Number(int(b.ms, 1, 600_000, 'ms'));
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, ms));
    return { ms: Date.now() - t0 };
  },
  'POST /file': async (b) => {
    if (!/^\/tmp\/hp-[\w.-]+$/.test(b.path ?? '')) throw new Error('only /tmp/hp-* files can be read');
    return { content: readFileSync(b.path, 'utf8') };
  },
  'POST /poweroff': async () => {
    setTimeout(async () => {
      await stopExporter();
      await stopTwin();
      await stopSampled();
      for (const d of drives) d.child.kill('SIGKILL');
      server.close();
      process.exit(0);
    }, 100);
    return { ok: true };
  },
};

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const route = routes[`${req.method} ${url.pathname}`];
  let body = '';
  for await (const c of req) body += c;
  let status = 200;
  let out;
  if (!route) {
    status = 404;
    out = { error: `no route ${req.method} ${url.pathname}` };
  } else {
    try {
      out = await route(body ? JSON.parse(body) : {}, url.searchParams);
    } catch (e) {
      status = 400;
      out = { error: e instanceof Error ? e.message : String(e) };
    }
  }
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(out));
});
// Idle keep-alive sockets stay open until the host closes them: Node's default 5 s keep-alive
// timeout runs on the guest clock, which under icount jumps over idle time, so the guest closed
// sockets the host's fetch was about to reuse ("other side closed" on an idempotent GET).
server.keepAliveTimeout = 0;
server.listen(PORT, '0.0.0.0', () => log(`listening on :${PORT}`));
// The agent must outlive any single failed request: log (to the serial console) and carry on.
process.on('uncaughtException', (e) => log(`uncaught: ${e.stack ?? e}`));
process.on('unhandledRejection', (e) => log(`unhandled rejection: ${e instanceof Error ? e.stack : e}`));
