// Shared by the BPF integration tests: privileges, the loader build, loop devices, fio, bpftool.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { execa } from 'execa';

export const ROOT = resolve(import.meta.dirname, '../..');
export const LOADER = resolve(ROOT, 'build/bpf/hybridpoll-bpf');

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** Why the BPF integration tests cannot run here, or undefined. */
export function bpfSkipReason(needs: string[] = []): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  if (!existsSync('/sys/kernel/btf/vmlinux')) return 'needs kernel BTF (/sys/kernel/btf/vmlinux)';
  for (const cmd of ['bpftool', 'clang', ...needs]) if (!has(cmd)) return `needs ${cmd}`;
  return undefined;
}

/** Skips loudly: CI has root and BPF, so a skip there is a finding. */
export function warnSkip(file: string, reason: string | undefined): boolean {
  if (reason) console.warn(`\n*** SKIPPING ${file}: ${reason} ***\n`);
  return reason !== undefined;
}

/** Builds the loader if its sources changed (the script is idempotent and fast when up to date). */
export function ensureLoader(): void {
  execFileSync('bash', [resolve(ROOT, 'scripts/build-bpf.sh')], { stdio: 'pipe' });
}

interface ProgInfo {
  id: number;
  name?: string;
}

const loadedPrograms = () => JSON.parse(execFileSync('bpftool', ['prog', 'show', '-j'], { encoding: 'utf8' })) as ProgInfo[];

/** Names of loaded BPF programs that are ours (hp_ prefix), from bpftool: any process's. */
export function ourPrograms(): string[] {
  return loadedPrograms().map((p) => p.name ?? '').filter((n) => n.startsWith('hp_'));
}

/** IDs of the BPF programs a process holds (prog and link fds), from /proc/PID/fdinfo. */
export function programIdsOf(pid: number): number[] {
  const ids = new Set<number>();
  for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
    const m = /^prog_id:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
    if (m) ids.add(Number(m[1]));
  }
  return [...ids];
}

/**
 * Which of these program IDs are still loaded after up to `ms` (other processes' programs do not
 * count). The kernel frees a program shortly after its last reference goes (RCU-deferred).
 */
export async function stillLoaded(ids: number[], ms = 5000): Promise<ProgInfo[]> {
  const end = Date.now() + ms;
  for (;;) {
    const left = loadedPrograms().filter((p) => ids.includes(p.id));
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** PID of the last loader that said hello in a log. */
export function loaderPid(log: string): number {
  const m = [...log.matchAll(/msg="bpf loader running" pid=(\d+)/g)].at(-1);
  if (!m) throw new Error(`no loader in the log:\n${log}`);
  return Number(m[1]);
}

export interface LoopDevice {
  path: string;
  /** "major:minor" */
  dev: string;
  detach(): void;
}

/** A loop device with direct I/O over a file of real data under /tmp (reads go to the disk). */
export function loopDevice(sizeMiB = 128): LoopDevice {
  const dir = mkdtempSync(join(tmpdir(), 'hp-loop-'));
  const file = join(dir, 'backing.img');
  execFileSync('dd', ['if=/dev/urandom', `of=${file}`, 'bs=1M', `count=${sizeMiB}`, 'status=none']);
  const path = execFileSync('losetup', ['-f', '--show', '--direct-io=on', file], { encoding: 'utf8' }).trim();
  const dev = readFileSync(`/sys/block/${basename(path)}/dev`, 'utf8').trim();
  return {
    path,
    dev,
    detach: () => {
      spawnSync('losetup', ['-d', path]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A loop device that disappears entirely when detached (sysfs entry and node removed with
 * LOOP_CTL_REMOVE through python3), unlike loop0..7, which stay in sysfs once created.
 */
export function removableLoopDevice(sizeMiB = 16): LoopDevice {
  const dir = mkdtempSync(join(tmpdir(), 'hp-loop-'));
  const file = join(dir, 'backing.img');
  execFileSync('dd', ['if=/dev/urandom', `of=${file}`, 'bs=1M', `count=${sizeMiB}`, 'status=none']);
  let n = 200 + Math.floor(Math.random() * 50);
  while (existsSync(`/sys/block/loop${n}`)) n += 1;
  const path = `/dev/loop${n}`;
  execFileSync('losetup', ['--direct-io=on', path, file]);
  const dev = readFileSync(`/sys/block/loop${n}/dev`, 'utf8').trim();
  let gone = false;
  return {
    path,
    dev,
    detach: () => {
      if (gone) return;
      gone = true;
      spawnSync('losetup', ['-d', path]);
      spawnSync('python3', ['-c', `import fcntl, os\nfd = os.open('/dev/loop-control', os.O_RDWR)\nfcntl.ioctl(fd, 0x4C81, ${n})  # LOOP_CTL_REMOVE`]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function attached(path: string): boolean {
  return execFileSync('losetup', ['-a'], { encoding: 'utf8' }).includes(`${path}:`);
}

export interface FioResult {
  ios: number;
  clatMeanNs: number;
}

/**
 * Runs a command as SCHED_FIFO when chrt exists: on a busy 2-CPU machine a normal task's wake-up
 * delay dwarfs what the tests measure (fio's completion latency, a sleeper's wake-up).
 */
export function realtime(cmd: string, args: string[]): [string, string[]] {
  return has('chrt') ? ['chrt', ['-f', '10', cmd, ...args]] : [cmd, args];
}

/** fio 4k random reads with io_uring and O_DIRECT; total issued I/Os and completion latency mean. */
export async function fio(device: string, o: { seconds: number; iodepth: number; rateIops?: number }): Promise<FioResult> {
  const r = await execa(...realtime('fio', [
    '--name=hp', `--filename=${device}`, '--ioengine=io_uring', '--direct=1', '--rw=randread', '--bs=4k',
    `--iodepth=${o.iodepth}`, `--runtime=${o.seconds}`, '--time_based', '--output-format=json',
    ...(o.rateIops ? [`--rate_iops=${o.rateIops}`] : []),
  ]));
  const read = (JSON.parse(r.stdout) as { jobs: { read: { total_ios: number; clat_ns: { mean: number } } }[] }).jobs[0]!.read;
  return { ios: read.total_ios, clatMeanNs: read.clat_ns.mean };
}

/** A python3 process that sleeps 500 × 0.5 ms then 500 × 2 ms with 1 ns timer slack, after "go" on stdin. */
export function sleeperScript(dir: string): string {
  const f = join(dir, 'sleeper.py');
  writeFileSync(
    f,
    [
      'import ctypes, sys',
      'libc = ctypes.CDLL(None)',
      'libc.prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK: the timer expires exactly at the request',
      'class Timespec(ctypes.Structure):',
      '    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]',
      'print("ready", flush=True)',
      'sys.stdin.readline()',
      '# relative nanosleep(2), not time.sleep: Python computes an absolute deadline before the call,',
      '# so a preemption in between would shorten the sleep the kernel is asked for',
      'for ns in (500_000, 2_000_000):',
      '    t = Timespec(0, ns)',
      '    for _ in range(500):',
      '        libc.nanosleep(ctypes.byref(t), None)',
      'print("done", flush=True)',
      'sys.stdin.readline()',
    ].join('\n'),
  );
  return f;
}

/**
 * A python3 process whose `threads` threads each sleep `count` × 0.5 ms (1 ns timer slack), after
 * "go" on stdin; "done" once every thread has exited.
 */
export function threadedSleeperScript(dir: string, threads: number, count: number): string {
  const f = join(dir, 'threaded-sleeper.py');
  writeFileSync(
    f,
    [
      'import ctypes, sys, threading',
      'libc = ctypes.CDLL(None)',
      'class Timespec(ctypes.Structure):',
      '    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]',
      'def sleeper():',
      '    libc.prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, per thread',
      '    t = Timespec(0, 500_000)',
      `    for _ in range(${count}):`,
      '        libc.nanosleep(ctypes.byref(t), None)',
      'print("ready", flush=True)',
      'sys.stdin.readline()',
      `ts = [threading.Thread(target=sleeper) for _ in range(${threads})]`,
      'for t in ts: t.start()',
      'for t in ts: t.join()',
      'print("done", flush=True)',
      'sys.stdin.readline()',
    ].join('\n'),
  );
  return f;
}
