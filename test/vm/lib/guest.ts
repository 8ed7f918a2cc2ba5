// Boots the VM-suite guest under QEMU, talks to its agent and exporter through hostfwd ports on
// 127.0.0.1, and powers it off. QEMU is killed by PID and the temp dir removed on every exit path.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Accel } from './accel.js';

/** What test/vm/build-guest.sh prints as its last line. */
export interface GuestImages {
  suite: string;
  kernel: string;
  initrd: string;
  root: string;
  project: string;
  kernelRelease: string;
  loader: boolean;
  /** the project disk carries /opt/hp/modules/hpsim.ko (tools/hpsim), built for this kernel */
  hpsim?: boolean;
  rootKey: string;
  projectKey: string;
}

/** One emulated NVMe controller, backed by QEMU's null-co driver (reads return zeroes, no host I/O). */
export interface NvmeSpec {
  serial: string;
  /** null-co latency-ns: emulated device latency */
  latencyNs: number;
}

export interface BootOptions {
  images: GuestImages;
  accel: Accel;
  smp: number;
  memMiB: number;
  pollQueues: number;
  /** QEMU NVMe controllers; may be empty (then the guest does not wait for nvme) */
  nvme: NvmeSpec[];
  /**
   * Virtual time: QEMU's -icount shift=0,sleep=off,align=off, one guest nanosecond per executed
   * instruction, idle time skipped. TCG only; default true with TCG, never with KVM.
   */
  icount?: boolean;
  /** insmod parameters of the hpsim module (tools/hpsim), e.g. "nr_devices=1 profiles=fixed:50000";
   * the guest's default when absent: "nr_devices=2 poll_queues=1 profiles=fixed:50000" */
  hpsim?: string;
  log: (msg: string) => void;
  bootTimeoutMs: number;
  /** appended to the kernel command line */
  extraCmdline?: string;
  /** where to keep the full serial console when the boot fails */
  failedConsoleFile?: string;
}

export interface GuestDevice {
  name: string;
  serial: string | null;
  majmin: string | null;
  io_poll: string | null;
  io_poll_delay: string | null;
  max_sectors_kb: string | null;
  hctx: Record<string, string | null>;
  /** hpsim devices only: their /sys/block/hpsimN/hpsim/ files */
  hpsim?: { profile: string | null; seed: string | null; stats: string | null };
}

export interface GuestInfo {
  release: string;
  cmdline: string;
  nproc: number;
  pollQueuesParam: string | null;
  /** /sys/module/hpsim/parameters/* when the module is loaded (hpsim.poll_queues stands where nvme.poll_queues does) */
  hpsimParams?: Record<string, string | null> | null;
  node: string;
  loader: boolean;
  devices: GuestDevice[];
  uptime: number;
}

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => ok(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether a boot runs in virtual time (icount): TCG only, on unless switched off. */
export function usesIcount(o: Pick<BootOptions, 'accel' | 'icount'>): boolean {
  if (o.accel === 'kvm' && o.icount) throw new Error('icount (virtual time) needs TCG, not KVM');
  return o.accel === 'tcg' && o.icount !== false;
}

export function kernelCmdline(o: Pick<BootOptions, 'pollQueues' | 'hpsim' | 'extraCmdline'>): string {
  const parts = ['root=/dev/vda rw console=ttyS0 quiet loglevel=4 panic=-1 init=/sbin/lab-init', `nvme.poll_queues=${o.pollQueues}`];
  // base64: the parameter string has spaces and ';', which the kernel command line would split.
  if (o.hpsim !== undefined) parts.push(`hpvm.hpsim=${Buffer.from(o.hpsim).toString('base64')}`);
  if (o.extraCmdline) parts.push(o.extraCmdline);
  return parts.join(' ');
}

export function qemuArgs(o: BootOptions, ports: { agent: number; exporter: number }, consoleLog: string): string[] {
  // TCG runs both vCPUs on one host thread (thread=single): with one thread per vCPU (the default
  // thread=multi) the guest kernel's int3-based live patching (text_poke, used when BPF programs and
  // tracepoints attach) raced with stale translated code on the other vCPU and the guest oopsed in
  // __schedule ("Oops: int3") in about one exporter start in seventy, and once at boot. icount
  // needs single-threaded TCG anyway. sleep=off: idle guest time is skipped, not waited for in
  // real time; align=off: the guest clock does not try to follow the host's.
  const accel = o.accel === 'kvm' ? ['-accel', 'kvm', '-cpu', 'host'] : ['-accel', 'tcg,thread=single', '-cpu', 'max'];
  if (usesIcount(o)) accel.push('-icount', 'shift=0,sleep=off,align=off');
  const args = [
    ...accel,
    '-m', String(o.memMiB), '-smp', String(o.smp), '-no-reboot', '-nodefaults', '-display', 'none',
    '-kernel', o.images.kernel, '-initrd', o.images.initrd,
    '-append', kernelCmdline(o),
    // The cached images stay pristine: root writes go to a throw-away overlay, the project disk is read-only.
    '-drive', `file=${o.images.root},if=virtio,format=raw,snapshot=on`,
    '-drive', `file=${o.images.project},if=virtio,format=raw,readonly=on`,
  ];
  o.nvme.forEach((d, i) => {
    args.push('-blockdev', `driver=null-co,node-name=nv${i},size=4294967296,read-zeroes=on,latency-ns=${d.latencyNs}`);
    args.push('-device', `nvme,serial=${d.serial},drive=nv${i}`);
  });
  args.push(
    '-netdev', `user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:${ports.agent}-:9100,hostfwd=tcp:127.0.0.1:${ports.exporter}-:9742`,
    '-device', 'virtio-net-pci,netdev=n0',
    '-serial', `file:${consoleLog}`,
  );
  return args;
}

/** fetch's TypeError says only "fetch failed"; the reason is its cause. */
function fetchError(e: Error): string {
  const cause = (e as Error & { cause?: { message?: string; code?: string } }).cause;
  return cause ? `${e.message}: ${cause.code ?? ''} ${cause.message ?? ''}`.trim() : e.message;
}

export class Guest {
  private constructor(
    private readonly qemu: ChildProcess,
    readonly consoleLog: string,
    readonly agentUrl: string,
    readonly exporterUrl: string,
    readonly info: GuestInfo,
    readonly bootSeconds: number,
    private readonly onExit: () => void,
  ) {}

  static async boot(o: BootOptions): Promise<Guest> {
    for (const f of [o.images.kernel, o.images.initrd, o.images.root, o.images.project]) {
      if (!existsSync(f)) throw new Error(`guest image missing: ${f} (run test/vm/build-guest.sh)`);
    }
    const dir = mkdtempSync(join(tmpdir(), 'hpvm-'));
    const consoleLog = join(dir, 'console.log');
    const ports = { agent: await freePort(), exporter: await freePort() };
    const args = qemuArgs(o, ports, consoleLog);
    // QEMU's snapshot=on overlay goes to TMPDIR: keep it in our temp dir so cleanup removes it.
    const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TMPDIR: dir } });
    let qemuErr = '';
    qemu.stderr!.on('data', (d: Buffer) => (qemuErr += d.toString()));
    // If the test process dies, the guest must not outlive it.
    const onExit = () => {
      if (qemu.exitCode === null && qemu.signalCode === null && qemu.pid) process.kill(qemu.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    process.once('exit', onExit);
    const t0 = Date.now();
    o.log(`boot: qemu pid ${qemu.pid}, accel ${o.accel}${usesIcount(o) ? ' (icount: virtual time)' : ''}, ${o.smp} vCPUs, ${o.nvme.length} NVMe (poll_queues=${o.pollQueues}), agent 127.0.0.1:${ports.agent}, exporter 127.0.0.1:${ports.exporter}`);
    const agentUrl = `http://127.0.0.1:${ports.agent}`;
    let shown = 0;
    let lastTick = t0;
    try {
      for (;;) {
        if (qemu.exitCode !== null || qemu.signalCode !== null) throw new Error(`qemu exited (${qemu.exitCode ?? qemu.signalCode}) during boot: ${qemuErr}`);
        // Relay the guest's own progress lines from the serial console.
        const lines = existsSync(consoleLog) ? readFileSync(consoleLog, 'utf8').split('\n') : [];
        for (; shown < lines.length - 1; shown++) if (lines[shown]!.startsWith('HPVM:')) o.log(`guest: ${lines[shown]!.slice(6)}`);
        try {
          const r = await fetch(`${agentUrl}/info`, { signal: AbortSignal.timeout(2000) });
          if (r.ok) {
            const info = (await r.json()) as GuestInfo;
            const secs = (Date.now() - t0) / 1000;
            o.log(`boot: agent up after ${secs.toFixed(1)} s, kernel ${info.release}`);
            return new Guest(qemu, consoleLog, agentUrl, `http://127.0.0.1:${ports.exporter}`, info, secs, onExit);
          }
        } catch {
          /* not up yet: hostfwd accepts before the guest listens */
        }
        if (Date.now() - t0 > o.bootTimeoutMs) throw new Error(`guest agent not up after ${o.bootTimeoutMs / 1000} s`);
        if (Date.now() - lastTick > 15_000) {
          lastTick = Date.now();
          o.log(`boot: waiting for the guest (${Math.round((Date.now() - t0) / 1000)} s)`);
        }
        await sleep(500);
      }
    } catch (e) {
      const full = existsSync(consoleLog) ? readFileSync(consoleLog, 'utf8') : '';
      const tail = full.split('\n').slice(-40).join('\n');
      if (o.failedConsoleFile) writeFileSync(o.failedConsoleFile, full);
      onExit();
      process.removeListener('exit', onExit);
      throw new Error(`${(e as Error).message}${o.failedConsoleFile ? ` (full console: ${o.failedConsoleFile})` : ''}\n--- guest console (last 40 lines) ---\n${tail}`);
    }
  }

  /**
   * Boots the guest to run one shell script instead of the agent (a debugging aid: test/vm/lab.ts
   * exec), and returns what it printed. The script travels gzipped and base64 on the kernel command line.
   */
  static async exec(o: BootOptions, script: string): Promise<string> {
    // gzip first: the kernel command line holds 2048 bytes in all.
    const b64 = gzipSync(script).toString('base64');
    if (b64.length > 1500) throw new Error('script too long for the kernel command line (1500 chars of base64 after gzip)');
    const dir = mkdtempSync(join(tmpdir(), 'hpvm-'));
    const consoleLog = join(dir, 'console.log');
    try {
      const args = qemuArgs({ ...o, extraCmdline: `${o.extraCmdline ? `${o.extraCmdline} ` : ''}hpvm.run=${b64}` }, { agent: await freePort(), exporter: await freePort() }, consoleLog);
      const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, TMPDIR: dir } });
      const timer = setTimeout(() => qemu.kill('SIGKILL'), o.bootTimeoutMs);
      await new Promise((ok) => qemu.once('exit', ok));
      clearTimeout(timer);
      const out = readFileSync(consoleLog, 'utf8');
      const m = /HPVM: exec begin\r?\n([\s\S]*?)HPVM: exec end/.exec(out);
      return m ? m[1]! : out;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Calls the guest agent; throws with the agent's message on an error status. */
  async agent<T>(method: 'GET' | 'POST', path: string, body?: unknown, timeoutMs = 120_000): Promise<T> {
    const r = await fetch(`${this.agentUrl}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      signal: AbortSignal.timeout(timeoutMs),
    }).catch((e: Error) => {
      throw new Error(`guest agent ${method} ${path}: ${fetchError(e)}`);
    });
    const j = (await r.json()) as T & { error?: string };
    if (!r.ok) throw new Error(`guest agent ${method} ${path}: ${j.error ?? r.status}`);
    return j;
  }

  /** Scrapes the guest exporter through its hostfwd port. */
  async scrape(timeoutMs = 30_000): Promise<string> {
    // A connection the user-mode network drops now and then is retried (a scrape has no side
    // effect); an HTTP error is the exporter's answer and is not.
    for (let attempt = 1; ; attempt++) {
      let r: Response;
      try {
        r = await fetch(`${this.exporterUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
      } catch (e) {
        if (attempt >= 3) throw new Error(`scrape of the guest exporter, ${attempt} attempts: ${fetchError(e as Error)}`);
        await new Promise((ok) => setTimeout(ok, 1000));
        continue;
      }
      if (!r.ok) throw new Error(`scrape of the guest exporter: HTTP ${r.status}`);
      return r.text();
    }
  }

  console(): string {
    return existsSync(this.consoleLog) ? readFileSync(this.consoleLog, 'utf8') : '';
  }

  /** Asks the guest to power off; kills QEMU by PID if it has not exited in time; removes temp files. */
  async shutdown(timeoutMs = 60_000): Promise<{ clean: boolean; console: string }> {
    const console = this.console();
    let clean = false;
    if (this.qemu.exitCode === null && this.qemu.signalCode === null) {
      const exited = new Promise<void>((ok) => this.qemu.once('exit', () => ok()));
      try {
        await this.agent('POST', '/poweroff', {}, 10_000);
        let timer: NodeJS.Timeout | undefined;
        clean = await Promise.race([exited.then(() => true), new Promise<boolean>((ok) => (timer = setTimeout(() => ok(false), timeoutMs)))]);
        clearTimeout(timer);
      } catch {
        clean = false;
      }
      if (!clean && this.qemu.pid) {
        this.qemu.kill('SIGKILL');
        await exited;
      }
    } else clean = true;
    const full = this.console() || console;
    this.onExit();
    process.removeListener('exit', this.onExit);
    return { clean, console: full };
  }
}
