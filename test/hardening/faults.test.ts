// Faults against the real exporter process (node dist/cli.js serve on 127.0.0.1; loader faults with
// the refresh loop on a 200 ms --collector.interval, the file faults with a read per scrape): the BPF loader
// killed, hung (SIGSTOP), exiting at start, speaking garbage, never ending a line, never saying
// hello (a fake loader via --bpf.loader, and the real loader when built); a real loop device
// detached and removed between scrapes; debugfs missing and really unmounted; no root.
// In every case /metrics answers 200 with the rest intact and the degradation visible in the
// self-metrics; after every test nothing is left: processes, BPF programs, loop devices, fds.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  alive, fdCount, fdTargets, heldBpfProgs, leaks, loadedBpfProgs, ROOT, rssBytes, sample, scrape, startExporter, systemState,
  TMP_PREFIX, type Exporter, type PromSample, type SystemState, waitForLog } from './helpers/proc.js';
import { makeTree, type Tree } from './helpers/tree.js';

const FAKE = resolve(import.meta.dirname, 'fixtures/fake-loader.mjs');
const REAL_LOADER = resolve(ROOT, 'build/bpf/hybridpoll-bpf');
const IS_ROOT = process.getuid?.() === 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Scrape until `ok` holds for the samples (each scrape must be a 200). */
async function until(exp: Exporter, what: string, ok: (s: PromSample[]) => boolean, timeoutMs = 15_000): Promise<PromSample[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const m = await scrape(exp.url);
    expect(m.status).toBe(200);
    if (ok(m.samples)) return m.samples;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; logs:\n${exp.logs()}`);
    await sleep(150);
  }
}

const bpfUp = (s: PromSample[]) => sample(s, 'hybridpoll_bpf_up');
const restarts = (s: PromSample[]) => sample(s, 'hybridpoll_bpf_loader_restarts_total') ?? 0;
const success = (s: PromSample[], c: string) => sample(s, 'hybridpoll_scrape_collector_success', { collector: c });

/** The v6.1 fixture's host metrics are all there: the "rest intact" check. */
function hostIntact(s: PromSample[]): void {
  expect(sample(s, 'hybridpoll_device_info', { device: 'nvme0n1', major_minor: '259:0' })).toBe(1);
  expect(sample(s, 'hybridpoll_device_io_poll_delay', { device: 'nvme0n1' })).toBe(-1);
  expect(sample(s, 'hybridpoll_kernel_era_info', { era: 'blkmq_hybrid_dead' })).toBe(1);
  expect(success(s, 'sysfs')).toBe(1);
  expect(success(s, 'debugfs')).toBe(1);
}

/** Pids the fake loader wrote, one per start. */
const pidsIn = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : []);

let exp: Exporter | undefined;
let before: SystemState;
let tree: Tree;
let work: string;

beforeEach(() => {
  before = systemState();
  tree = makeTree('v6.1');
  work = mkdtempSync(join(tmpdir(), `${TMP_PREFIX}faults-`));
});
afterEach(async () => {
  const problems = await leaks(before, exp);
  exp = undefined;
  tree.dispose();
  rmSync(work, { recursive: true, force: true });
  expect(problems).toEqual([]);
});

/**
 * Collection every 200 ms (the refresh loop, as by default, on a short interval): a fault must
 * show in the self-metrics within an interval or so of happening.
 */
const INTERVAL = '--collector.interval=200ms';

/** The exporter on the v6.1 tree with the fake loader in the given mode. */
async function withFake(mode: string, extra: string[] = []): Promise<{ exp: Exporter; pidfile: string }> {
  const pidfile = join(work, 'loader.pids');
  const e = await startExporter([...tree.args, '--bpf.enable=on', `--bpf.loader=${FAKE}`, '--bpf.timeout=500ms', INTERVAL, ...extra], {
    env: { ...process.env, HP_FAKE_MODE: mode, HP_FAKE_PIDFILE: pidfile },
  });
  return { exp: e, pidfile };
}

describe.skipIf(!IS_ROOT)('BPF loader faults (fake loader; the collector needs root to start it)', () => {
  it('loader killed: scrapes stay 200, the loader is restarted, the old one is gone', async () => {
    const f = await withFake('ok');
    exp = f.exp;
    const up = await until(exp, 'bpf up', (s) => bpfUp(s) === 1);
    hostIntact(up);
    expect(sample(up, 'hybridpoll_io_latency_seconds_count', { device: '259:0' }) ?? sample(up, 'hybridpoll_io_latency_seconds_count')).toBeGreaterThan(0);
    const fds = fdCount(exp.pid);
    const [first] = pidsIn(f.pidfile);
    process.kill(first!, 'SIGKILL');
    const after = await until(exp, 'restart', (s) => restarts(s) >= 1 && bpfUp(s) === 1);
    hostIntact(after);
    expect(alive(first!)).toBe(false);
    expect(pidsIn(f.pidfile)).toHaveLength(2);
    await waitForLog(exp, /msg="bpf loader stopped; restarting" why="loader exited \(SIGKILL\)"/);
    expect(fdCount(exp.pid), fdTargets(exp.pid).join('\n')).toBeLessThanOrEqual(fds + 2);
  });

  it('loader hung (SIGSTOP): the refresh gives up after --bpf.timeout, the loader is killed and replaced', async () => {
    const f = await withFake('ok');
    exp = f.exp;
    await until(exp, 'bpf up', (s) => bpfUp(s) === 1);
    const [first] = pidsIn(f.pidfile);
    process.kill(first!, 'SIGSTOP');
    // Scrapes meanwhile are served from the last refresh; the refresh that meets the hung loader
    // gives up after --bpf.timeout=500ms and reports it (bounded: not forever).
    const hung = await until(exp, 'the bpf collector failing', (s) => success(s, 'bpf') === 0, 5000);
    hostIntact(hung);
    const after = await until(exp, 'replacement', (s) => restarts(s) >= 1 && bpfUp(s) === 1);
    hostIntact(after);
    expect(alive(first!)).toBe(false); // SIGKILL reaches a stopped process
    await waitForLog(exp, /msg="bpf loader hung; killing it"/);
  });

  it('loader exiting at start: /metrics stays 200 with bpf_up 0, restarts back off, no process piles up', async () => {
    const f = await withFake('exit-at-start');
    exp = f.exp;
    const s = await until(exp, 'a few restarts', (x) => restarts(x) >= 3, 20_000);
    hostIntact(s);
    expect(bpfUp(s)).toBe(0);
    expect(success(s, 'bpf')).toBe(0);
    expect(sample(s, 'hybridpoll_bpf_status_info', { state: 'starting', reason: 'restarting' }) ?? sample(s, 'hybridpoll_bpf_status_info', { state: 'failed', reason: 'loader_down' })).toBe(1);
    await waitForLog(exp, /fake loader: failing at start on purpose/);
    // Backoff: not a restart storm (250 ms doubling: ≤ 8 starts in the first 20 s).
    expect(pidsIn(f.pidfile).length).toBeLessThanOrEqual(10);
    expect(exp.children().filter(alive).length).toBeLessThanOrEqual(1);
  });

  it('loader speaking garbage: every scrape is 200 with the bpf collector failed, the log says why, and stays bounded', async () => {
    const f = await withFake('flood');
    exp = f.exp;
    await until(exp, 'hello', (s) => sample(s, 'hybridpoll_bpf_status_info', { state: 'running' }) === 1);
    for (let i = 0; i < 5; i++) {
      const m = await scrape(exp.url);
      expect(m.status).toBe(200);
      expect(success(m.samples, 'bpf')).toBe(0);
      hostIntact(m.samples);
    }
    await sleep(500);
    const protocolLines = exp.logs().split('\n').filter((l) => l.includes('bpf loader protocol error'));
    expect(protocolLines.length).toBeGreaterThan(0);
    // 5 scrapes × 5000 bad lines must not become 25000 log lines.
    expect(protocolLines.length).toBeLessThanOrEqual(100);
  });

  it('loader answering with malformed snapshots: refused field by field, the rest intact', async () => {
    const f = await withFake('garbage');
    exp = f.exp;
    await until(exp, 'hello', (s) => sample(s, 'hybridpoll_bpf_status_info', { state: 'running' }) === 1);
    const m = await scrape(exp.url);
    expect(m.status).toBe(200);
    expect(success(m.samples, 'bpf')).toBe(0);
    hostIntact(m.samples);
    await sleep(300);
    await waitForLog(exp, /bpf loader protocol error.*not JSON/);
  });

  it('a never-ending line from the loader is dropped, not buffered: memory stays bounded', async () => {
    const f = await withFake('endless-line', ['--bpf.timeout=3s']);
    exp = f.exp;
    // The hello from the log: the collection that follows it at once asks for a snapshot, so no
    // collection ends with the loader still running (its status metric would race that request).
    await waitForLog(exp, /msg="bpf loader running"/);
    const rss0 = rssBytes(exp.pid);
    // That request starts the endless line; the loader writes ~GBs until the timeout kills it.
    const m = await until(exp, 'restart after the timeout', (s) => restarts(s) >= 1);
    expect(success(m, 'bpf')).toBe(0);
    hostIntact(m);
    expect(rssBytes(exp.pid) - rss0).toBeLessThan(120 * 1024 * 1024); // the line limit is 16 MiB
  });

  it('a loader that never says hello and ignores EOF is killed when the exporter stops', async () => {
    const f = await withFake('no-hello');
    exp = f.exp;
    for (let i = 0; i < 100 && pidsIn(f.pidfile).length === 0; i++) await sleep(100);
    const s = await until(exp, 'a scrape', () => true);
    hostIntact(s);
    expect(sample(s, 'hybridpoll_bpf_status_info', { state: 'starting', reason: 'loading' })).toBe(1);
    expect(success(s, 'bpf')).toBe(0);
    const [pid] = pidsIn(f.pidfile);
    expect(alive(pid!)).toBe(true);
    // afterEach: stop, then the leak check requires this pid to be gone.
  });
});

// ---------------------------------------------------------------------------------------------
// The real loader.

const realLoaderSkip = !IS_ROOT ? 'not root' : !existsSync(REAL_LOADER) ? `${REAL_LOADER} not built (npm run build:bpf)` : !existsSync('/sys/kernel/btf/vmlinux') ? 'no kernel BTF' : undefined;
if (realLoaderSkip) console.warn(`\n*** SKIPPED real BPF loader fault tests: ${realLoaderSkip} ***\n`);

describe.skipIf(realLoaderSkip !== undefined)('real BPF loader faults', () => {
  /** The real loader's pid from the exporter's log. */
  const loaderPid = (e: Exporter) => Number([...e.logs().matchAll(/msg="bpf loader running" pid=(\d+)/g)].at(-1)?.[1]);

  it('SIGSTOP of the real loader: scrape bounded, loader replaced, its BPF programs unloaded', async () => {
    exp = await startExporter([...tree.args, '--bpf.enable=on', '--bpf.timeout=1s', INTERVAL]);
    const e = exp;
    await until(e, 'bpf up', (s) => bpfUp(s) === 1, 60_000);
    const pid = loaderPid(e);
    const progs = heldBpfProgs(pid);
    expect(progs.length).toBeGreaterThan(0);
    process.kill(pid, 'SIGSTOP');
    const hung = await until(e, 'the bpf collector failing', (s) => success(s, 'bpf') === 0, 10_000);
    hostIntact(hung);
    await until(e, 'replacement', (s) => restarts(s) >= 1 && bpfUp(s) === 1, 60_000);
    expect(alive(pid)).toBe(false);
    for (let i = 0; i < 30 && progs.some((p) => loadedBpfProgs().has(p)); i++) await sleep(100);
    expect(progs.filter((p) => loadedBpfProgs().has(p))).toEqual([]);
  });

  it('SIGKILL of the exporter itself: the loader sees EOF and exits, its programs are unloaded', async () => {
    exp = await startExporter([...tree.args, '--bpf.enable=on']);
    const e = exp;
    await until(e, 'bpf up', (s) => bpfUp(s) === 1, 60_000);
    const pid = loaderPid(e);
    const progs = heldBpfProgs(pid);
    expect(progs.length).toBeGreaterThan(0);
    await e.stop('SIGKILL');
    for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
    expect(alive(pid)).toBe(false);
    // leaks() in afterEach checks every program the exporter's children held is gone.
  });
});

// ---------------------------------------------------------------------------------------------
// File-side faults.

describe('debugfs missing', () => {
  it('an empty --path.debugfs: debugfs collector 0 with the reason, everything else intact', async () => {
    const empty = mkdtempSync(join(work, 'debugfs-'));
    exp = await startExporter([...tree.args.filter((a) => !a.startsWith('--path.debugfs')), `--path.debugfs=${empty}`, '--no-collector.bpf']);
    const m = await scrape(exp.url);
    expect(m.status).toBe(200);
    expect(success(m.samples, 'debugfs')).toBe(0);
    expect(success(m.samples, 'sysfs')).toBe(1);
    expect(sample(m.samples, 'hybridpoll_device_info', { device: 'nvme0n1' })).toBe(1);
    expect(sample(m.samples, 'hybridpoll_device_hw_queues', { device: 'nvme0n1', type: 'poll' })).toBeUndefined();
    await waitForLog(exp, /msg="collector failed" collector=debugfs err=".*debugfs not mounted/);
  });
});

const mountSkip = !IS_ROOT ? 'not root' : !existsSync('/usr/bin/unshare') || !existsSync('/usr/bin/nsenter') ? 'unshare/nsenter missing' : undefined;
if (mountSkip) console.warn(`\n*** SKIPPED real debugfs unmount test: ${mountSkip} ***\n`);

describe.skipIf(mountSkip !== undefined)('debugfs really unmounted (private mount namespace)', () => {
  it('mounted, then unmounted under the running exporter: debugfs turns 0, sysfs keeps going', async () => {
    const mnt = mkdtempSync(join(work, 'dbg-'));
    // The exporter runs in its own mount namespace with its own debugfs mount; the host's mounts
    // are untouched, and the namespace dies with the process.
    exp = await startExporter(
      // A read per scrape: the scrape right after the unmount must see it.
      ['--path.sysfs=/sys', `--path.debugfs=${mnt}`, '--path.procfs=/proc', '--no-collector.bpf', '--collector.interval=0'],
      { wrap: ['/usr/bin/unshare', '--mount', '--propagation', 'private', '--', '/bin/sh', '-c', `mount -t debugfs none ${mnt} && exec "$0" "$@"`] },
    );
    const e = exp;
    const mounted = await scrape(e.url);
    expect(mounted.status).toBe(200);
    expect(success(mounted.samples, 'debugfs')).toBe(1);
    const queues = mounted.samples.filter((s) => s.name === 'hybridpoll_device_hw_queues').length;
    expect(queues).toBeGreaterThan(0);
    execFileSync('/usr/bin/nsenter', ['-t', String(e.pid), '-m', '--', 'umount', '-l', mnt]);
    const gone = await scrape(e.url);
    expect(gone.status).toBe(200);
    expect(success(gone.samples, 'debugfs')).toBe(0);
    expect(success(gone.samples, 'sysfs')).toBe(1);
    expect(gone.samples.filter((s) => s.name === 'hybridpoll_device_hw_queues')).toHaveLength(0);
    expect(gone.samples.filter((s) => s.name === 'hybridpoll_device_info').length).toBe(mounted.samples.filter((s) => s.name === 'hybridpoll_device_info').length);
    // The host never saw the mount.
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(mnt);
  });
});

// LOOP_CTL_ADD / LOOP_CTL_REMOVE: a loop device that really appears in and disappears from /sys/block.
const LOOP_CTL = { add: 0x4c80, remove: 0x4c81 };
const loopCtl = (op: number, n: number) =>
  spawnSync('python3', ['-c', `import fcntl,os,sys; fd=os.open('/dev/loop-control', os.O_RDWR); fcntl.ioctl(fd, ${op}, ${n})`], { encoding: 'utf8' });
const loopSkip = !IS_ROOT ? 'not root' : !existsSync('/dev/loop-control') ? 'no /dev/loop-control' : spawnSync('python3', ['-c', '1']).status !== 0 ? 'python3 missing' : undefined;
if (loopSkip) console.warn(`\n*** SKIPPED loop device disappearance test: ${loopSkip} ***\n`);

describe.skipIf(loopSkip !== undefined)('a real device disappearing between scrapes', () => {
  it('loop device detached and removed: its series go, the scrape is clean, series count returns to baseline', async () => {
    let n = 200 + Math.floor(Math.random() * 500);
    while (existsSync(`/sys/block/loop${n}`)) n += 1;
    const name = `loop${n}`;
    const img = join(work, 'backing.img');
    writeFileSync(img, Buffer.alloc(8 << 20));
    const cleanup = () => {
      spawnSync('losetup', ['-d', `/dev/${name}`]);
      loopCtl(LOOP_CTL.remove, n);
    };
    try {
      // A read per scrape: each scrape must see the device state set just before it.
      exp = await startExporter(['--path.sysfs=/sys', '--path.debugfs=/sys/kernel/debug', '--path.procfs=/proc', '--no-collector.bpf', '--collector.interval=0', `--collector.device-include=^(${name}|vda)$`]);
      const base = await scrape(exp.url);
      expect(base.status).toBe(200);
      expect(base.samples.some((s) => s.labels['device'] === name)).toBe(false);
      const baseline = base.samples.filter((s) => s.name.startsWith('hybridpoll_') && !s.name.includes('duration')).length;

      expect(loopCtl(LOOP_CTL.add, n).status).toBe(0);
      execFileSync('losetup', [`/dev/${name}`, img]);
      const withDev = await scrape(exp.url);
      expect(withDev.status).toBe(200);
      expect(sample(withDev.samples, 'hybridpoll_device_info', { device: name })).toBe(1);
      expect(sample(withDev.samples, 'hybridpoll_device_read_errors', { device: name })).toBe(0);

      execFileSync('losetup', ['-d', `/dev/${name}`]);
      expect(loopCtl(LOOP_CTL.remove, n).status).toBe(0);
      expect(existsSync(`/sys/block/${name}`)).toBe(false);
      const after = await scrape(exp.url);
      expect(after.status).toBe(200);
      expect(after.samples.some((s) => s.labels['device'] === name)).toBe(false);
      expect(success(after.samples, 'sysfs')).toBe(1);
      expect(after.samples.filter((s) => s.name.startsWith('hybridpoll_') && !s.name.includes('duration')).length).toBe(baseline);
    } finally {
      if (existsSync(`/sys/block/${name}`)) cleanup();
    }
  });
});

const setprivSkip = !IS_ROOT ? 'not root (cannot switch to nobody)' : !existsSync('/usr/bin/setpriv') ? 'setpriv missing' : undefined;
if (setprivSkip) console.warn(`\n*** SKIPPED non-root test: ${setprivSkip} ***\n`);

describe.skipIf(setprivSkip !== undefined)('permission denied (running as nobody)', () => {
  it('sysfs-only mode: debugfs and BPF each explained once, sysfs and era work', async () => {
    exp = await startExporter(['--path.sysfs=/sys', '--path.debugfs=/sys/kernel/debug', '--path.procfs=/proc'], {
      wrap: ['/usr/bin/setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', '--'],
    });
    const e = exp;
    let m = await scrape(e.url);
    for (let i = 0; i < 4; i++) m = await scrape(e.url);
    expect(m.status).toBe(200);
    expect(success(m.samples, 'sysfs')).toBe(1);
    expect(success(m.samples, 'era')).toBe(1);
    expect(success(m.samples, 'debugfs')).toBe(0);
    expect(bpfUp(m.samples)).toBe(0);
    expect(sample(m.samples, 'hybridpoll_bpf_status_info', { state: 'disabled', reason: 'not_privileged' })).toBe(1);
    expect(m.samples.filter((s) => s.name === 'hybridpoll_device_info').length).toBeGreaterThan(0);
    const lines = e.logs().split('\n').filter(Boolean);
    const debugfsLines = lines.filter((l) => l.includes('collector=debugfs'));
    expect(debugfsLines).toHaveLength(1); // once, not per scrape
    expect(debugfsLines[0]).toMatch(/permission denied.*readable by root only/i);
    const bpfLines = lines.filter((l) => /BPF collector disabled/.test(l));
    expect(bpfLines).toHaveLength(1);
    expect(bpfLines[0]).toMatch(/not privileged/);
    expect(lines.filter((l) => l.includes('collector=bpf'))).toEqual([]); // said once at startup, not again
    expect(lines.filter((l) => /level=(warn|error)/.test(l))).toHaveLength(1);
  });
});
