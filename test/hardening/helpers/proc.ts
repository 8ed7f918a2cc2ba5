// The real exporter process for the hardening suites, plus the leak checks run after each test:
// processes, file descriptors, loop devices and BPF programs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../../..');
export const CLI = resolve(ROOT, 'dist/cli.js');

export interface Exporter {
  /** "http://127.0.0.1:PORT" or "https://…" */
  url: string;
  port: number;
  pid: number;
  proc: ChildProcess;
  logs(): string;
  /** pids of every process below the exporter seen while it ran (the BPF loader, …) */
  children(): number[];
  /** ids of the BPF programs the exporter or its children held open at some point */
  bpfProgIds(): number[];
  /** open file descriptors of the exporter when it started listening */
  fdsAtStart: number;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface StartOptions {
  scheme?: 'http' | 'https';
  /** command prefix that execs the exporter, e.g. setpriv … or unshare … (the pid stays node's) */
  wrap?: string[];
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Every live pid whose parent chain leads to `root`. */
export function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      // comm may contain spaces and parentheses: the ppid is the 2nd field after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(e), ppid);
    } catch {
      // exited while we looked
    }
  }
  const out: number[] = [];
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers signal 0; it is gone for our purposes once reaped or defunct.
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z';
  } catch {
    return false;
  }
}

export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Open files of a process, for a readable leak report. */
export function fdTargets(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return '?';
    }
  });
}

/** BPF program ids a process holds through its file descriptors (fdinfo "prog_id:"). */
export function heldBpfProgs(pid: number): number[] {
  const ids: number[] = [];
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return ids;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== 'anon_inode:bpf-prog') continue;
      const m = /^prog_id:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
      if (m) ids.push(Number(m[1]));
    } catch {
      // closed while we looked
    }
  }
  return ids;
}

export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** node dist/cli.js <args> on 127.0.0.1 with a free port; waits for the "listening" log line. */
export async function startExporter(args: string[], o: StartOptions = {}): Promise<Exporter> {
  const cmd = [...(o.wrap ?? []), process.execPath, CLI, ...args, '--web.listen-address=127.0.0.1:0'];
  const proc = spawn(cmd[0]!, cmd.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env: o.env ?? process.env });
  let stderr = '';
  const seen = new Set<number>();
  const progs = new Set<number>();
  const sample = () => {
    if (!proc.pid) return;
    for (const p of [proc.pid, ...descendants(proc.pid)]) {
      if (p !== proc.pid) seen.add(p);
      heldBpfProgs(p).forEach((id) => progs.add(id));
    }
  };
  const sampler = setInterval(sample, 50);
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const port = await new Promise<number>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`exporter did not start within ${o.timeoutMs ?? 15000} ms:\n${stderr}`)), o.timeoutMs ?? 15000);
    proc.stderr!.on('data', () => {
      const m = /msg=listening address=[\d.]+:(\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        ok(Number(m[1]));
      }
    });
    proc.on('exit', (code, sig) => {
      clearTimeout(timer);
      clearInterval(sampler);
      fail(new Error(`exporter exited with ${code ?? sig}:\n${stderr}`));
    });
  });
  const fdsAtStart = fdCount(proc.pid!);
  return {
    fdsAtStart,
    url: `${o.scheme ?? 'http'}://127.0.0.1:${port}`,
    port,
    pid: proc.pid!,
    proc,
    logs: () => stderr,
    children: () => {
      sample();
      return [...seen];
    },
    bpfProgIds: () => {
      sample();
      return [...progs];
    },
    stop: (signal = 'SIGTERM') =>
      new Promise<void>((done) => {
        clearInterval(sampler);
        if (proc.exitCode !== null || proc.signalCode !== null) return done();
        const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          done();
        });
        proc.kill(signal);
      }),
  };
}

/** Wait until the exporter's log matches (stderr arrives through a pipe, after the HTTP answer). */
export async function waitForLog(exp: Exporter, re: RegExp, timeoutMs = 5000): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (!re.test(exp.logs())) {
    if (Date.now() > end) throw new Error(`log never matched ${re}:\n${exp.logs()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return exp.logs();
}

/** Run the exporter to completion (for startup errors): exit code and stderr. */
export function runExporter(args: string[], timeoutMs = 15_000): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stderr: r.stderr };
}

/**
 * Loop devices of this suite (backing files under a directory named hp-hard-*). Other work on the
 * same machine creates loop devices and BPF programs too, so leaks are judged on what is ours.
 */
export interface SystemState {
  loops: string[];
}

export const HAVE_BPFTOOL = existsSync('/usr/sbin/bpftool') || existsSync('/usr/bin/bpftool');
export const TMP_PREFIX = 'hp-hard-';
const FD_SLACK = 12;

export function systemState(): SystemState {
  const loops = spawnSync('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' })
    .stdout.split('\n').map((l) => l.trim()).filter((l) => l.includes(`/${TMP_PREFIX}`)).sort();
  return { loops };
}

/** Ids of every BPF program loaded in the kernel (empty without bpftool). */
export function loadedBpfProgs(): Set<number> {
  if (!HAVE_BPFTOOL) return new Set();
  const r = spawnSync('bpftool', ['--json', 'prog', 'show'], { encoding: 'utf8' });
  return new Set(r.status === 0 ? (JSON.parse(r.stdout || '[]') as { id: number }[]).map((p) => p.id) : []);
}

/**
 * After a test: the exporter and everything it started are gone, every BPF program they held is
 * unloaded, and no loop device of ours is left. Returns the problems found (empty = no leak).
 */
export async function leaks(before: SystemState, exp: Exporter | undefined): Promise<string[]> {
  const problems: string[] = [];
  if (exp) {
    const kids = exp.children();
    const progs = exp.bpfProgIds();
    // Descriptors: what the test's own keep-alive connections and a loader's pipes can explain,
    // no more; a leak per scrape or per loader restart shows up well beyond this.
    if (alive(exp.pid) && fdCount(exp.pid) > exp.fdsAtStart + FD_SLACK) {
      problems.push(`exporter holds ${fdCount(exp.pid)} fds, ${exp.fdsAtStart} at start:\n  ${fdTargets(exp.pid).join('\n  ')}`);
    }
    await exp.stop();
    // Give children that exit on stdin EOF a moment.
    for (let i = 0; i < 50 && [exp.pid, ...kids].some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    if (alive(exp.pid)) problems.push(`exporter ${exp.pid} still running`);
    for (const k of kids.filter(alive)) problems.push(`child process ${k} (${safeComm(k)}) outlived the exporter`);
    // The kernel frees a program asynchronously after its last reference goes.
    let left = progs.filter((id) => loadedBpfProgs().has(id));
    for (let i = 0; i < 30 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      left = left.filter((id) => loadedBpfProgs().has(id));
    }
    for (const id of left) problems.push(`BPF program ${id} still loaded after the exporter exited`);
  }
  const after = systemState();
  for (const l of after.loops.filter((x) => !before.loops.includes(x))) problems.push(`loop device left attached: ${l}`);
  return problems;
}

function safeComm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** Prometheus text → samples. Enough for tests: `name{labels} value` per line. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseProm(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/s.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      // One pass, left to right: `\\n` is an escaped backslash then `n`, not a newline.
      labels[l[1]!] = l[2]!.replace(/\\([\\n"])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const v = m[3]!;
    out.push({ name: m[1]!, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  return out;
}

/** The value of one sample, undefined when absent. */
export function sample(samples: PromSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

export async function scrape(url: string, path = '/metrics'): Promise<{ status: number; text: string; samples: PromSample[] }> {
  const res = await fetch(url + path);
  const text = await res.text();
  return { status: res.status, text, samples: res.status === 200 ? parseProm(text) : [] };
}
