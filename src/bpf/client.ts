// The loader process: spawned once with execa (argument array, no shell), handshake on its hello
// line, one request per scrape with a timeout, restarted with exponential backoff when it exits
// or stops answering. Its stdin is a pipe: if the exporter dies, the loader sees EOF and exits.
import { execa } from 'execa';
import type { Logger } from '../log.js';
import { LineSplitter, parseLine, ProtocolError, type LoaderHello, type LoaderSnap } from './protocol.js';

export interface LoaderClientOptions {
  file: string;
  args: string[];
  /** how long one request may take before the loader counts as hung */
  timeoutMs: number;
  log: Logger;
  /** how long loading and attaching may take (verification of every program) */
  handshakeTimeoutMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  /** a run this long resets the backoff */
  healthyAfterMs?: number;
  /** called before each spawn: a new run whose counts start from zero */
  onNewRun?: () => void;
  /** stop retrying after this many consecutive runs that never got to their hello line */
  giveUpAfter?: number;
  /** called when a run says hello (its programs are loaded): the state is then 'running' */
  onRunning?: () => void;
  /** called once when the client gives up; the state is then 'stopped' */
  onGiveUp?: (why: string) => void;
}

export type LoaderState = 'starting' | 'running' | 'backoff' | 'stopped';

interface Pending {
  resolve: (snap: LoaderSnap) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

const STDERR_LINES_PER_RUN = 20;
/** A loader spewing bad lines must not flood the log (found by test/hardening/faults.test.ts). */
const PROTOCOL_ERRORS_LOGGED_PER_RUN = 20;

export class LoaderClient {
  state: LoaderState = 'stopped';
  /** spawns after the first one */
  restarts = 0;
  hello?: LoaderHello;
  /** why the last run ended or failed */
  lastError?: string;
  private child?: ReturnType<typeof execa>;
  private readonly pending = new Map<string, Pending>();
  private seq = 0;
  private spawns = 0;
  private delayMs: number;
  private startedAt = 0;
  private retryTimer?: NodeJS.Timeout;
  private handshakeTimer?: NodeJS.Timeout;
  private fatal?: string;
  private failedStarts = 0;
  private protocolErrorsLogged = 0;

  constructor(private readonly o: LoaderClientOptions) {
    this.delayMs = o.backoff?.initialMs ?? 250;
  }

  start(): void {
    if (this.state === 'stopped') this.spawn();
  }

  /** One snapshot from the running loader; rejects when it is not running or does not answer in time. */
  request(): Promise<{ hello: LoaderHello; snap: LoaderSnap }> {
    const child = this.child;
    const hello = this.hello;
    if (this.state !== 'running' || !child || !hello) return Promise.reject(new Error(`BPF loader is not running (${this.state}${this.lastError ? `: ${this.lastError}` : ''})`));
    const id = String(++this.seq);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`BPF loader did not answer within ${this.o.timeoutMs} ms; restarting it`));
        this.kill(child, `no answer within ${this.o.timeoutMs} ms`);
      }, this.o.timeoutMs);
      this.pending.set(id, { resolve: (snap) => resolve({ hello, snap }), reject, timer });
      child.stdin?.write(`snap ${id}\n`);
    });
  }

  /** Asks the running loader to time 1 in n completions from now on (it answers with a sample line). */
  setSample(n: number): void {
    if (this.state === 'running' && this.hello?.sample !== undefined) this.child?.stdin?.write(`sample ${n}\n`);
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    clearTimeout(this.retryTimer);
    clearTimeout(this.handshakeTimer);
    const child = this.child;
    if (!child) return;
    child.stdin?.end(); // EOF: the loader detaches its programs and exits
    const killer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await child;
    clearTimeout(killer);
  }

  private spawn(): void {
    this.state = 'starting';
    this.hello = undefined;
    this.fatal = undefined;
    this.protocolErrorsLogged = 0;
    if (this.spawns++ > 0) this.restarts += 1;
    this.o.onNewRun?.();
    this.startedAt = Date.now();
    const child = execa(this.o.file, this.o.args, {
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
      buffer: false,
      reject: false,
      cleanup: true,
    });
    this.child = child;
    let stderrLines = 0;
    const out = new LineSplitter(
      (line) => this.onLine(child, line),
      (bytes) => this.onBadLine(new ProtocolError(`dropped a line of ${bytes} bytes: longer than the limit`)),
    );
    const err = new LineSplitter(
      (line) => {
        if (stderrLines++ < STDERR_LINES_PER_RUN && line.trim()) this.o.log.warn('bpf loader', { stderr: line.trim() });
      },
      () => {},
      4096,
    );
    // a write to a loader that just died must not take the exporter down (EPIPE)
    child.stdin?.on('error', () => {});
    child.stdout?.on('data', (b: Buffer | string) => out.push(Buffer.isBuffer(b) ? b : Buffer.from(b)));
    child.stderr?.on('data', (b: Buffer | string) => err.push(Buffer.isBuffer(b) ? b : Buffer.from(b)));
    this.handshakeTimer = setTimeout(() => {
      if (this.child === child && this.state === 'starting') this.kill(child, `no hello within ${this.handshakeTimeoutMs()} ms`);
    }, this.handshakeTimeoutMs());
    void child.then((r) => this.onExit(child, r.signal ?? (r.exitCode !== undefined ? `exit code ${r.exitCode}` : r.shortMessage)));
  }

  private handshakeTimeoutMs(): number {
    return this.o.handshakeTimeoutMs ?? 60_000;
  }

  private onLine(child: ReturnType<typeof execa>, line: string): void {
    if (child !== this.child) return;
    let m;
    try {
      m = parseLine(line);
    } catch (e) {
      this.onBadLine(e as Error);
      return;
    }
    switch (m.type) {
      case 'hello': {
        clearTimeout(this.handshakeTimer);
        this.hello = m;
        this.state = 'running';
        this.failedStarts = 0;
        this.lastError = undefined;
        const attached = Object.entries(m.programs).filter(([, p]) => p.state === 'attached').map(([n]) => n);
        const failed = Object.entries(m.programs).filter(([, p]) => p.state === 'failed').map(([n, p]) => `${n} (${p.reason ?? '?'})`);
        this.o.log.info('bpf loader running', {
          pid: m.pid,
          poll_path: m.pollPath,
          attached: attached.join(','),
          ...(failed.length ? { not_attached: failed.join('; ') } : {}),
          load_ms: Math.round(m.loadUs / 1000),
        });
        this.o.onRunning?.();
        return;
      }
      case 'snap': {
        const p = this.pending.get(m.id);
        if (!p) return; // the answer to a request that already timed out
        clearTimeout(p.timer);
        this.pending.delete(m.id);
        p.resolve(m);
        return;
      }
      case 'sample':
        this.o.log.debug('bpf sampling rate set', { n: m.n });
        return;
      case 'fatal':
        this.fatal = m.msg;
        this.o.log.error('bpf loader failed', { err: m.msg });
        return;
      case 'error':
        this.onBadLine(new ProtocolError(`loader refused a request: ${m.msg}`));
    }
  }

  /** The loader answers in order: a bad line stands for the oldest outstanding request. */
  private onBadLine(e: Error): void {
    const n = ++this.protocolErrorsLogged;
    if (n <= PROTOCOL_ERRORS_LOGGED_PER_RUN) this.o.log.warn('bpf loader protocol error', { err: e.message });
    if (n === PROTOCOL_ERRORS_LOGGED_PER_RUN) this.o.log.warn('bpf loader: further protocol errors of this run are not logged');
    const first = this.pending.entries().next();
    if (first.done) return;
    const [id, p] = first.value;
    clearTimeout(p.timer);
    this.pending.delete(id);
    p.reject(e);
  }

  private kill(child: ReturnType<typeof execa>, why: string): void {
    if (child !== this.child) return;
    this.lastError = why;
    this.o.log.warn('bpf loader hung; killing it', { pid: child.pid, why });
    child.kill('SIGKILL');
  }

  private onExit(child: ReturnType<typeof execa>, how: string | undefined): void {
    if (child !== this.child) return;
    this.child = undefined;
    clearTimeout(this.handshakeTimer);
    const why = this.fatal ?? this.lastError ?? `loader exited (${how ?? 'unknown'})`;
    const neverStarted = this.state === 'starting';
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`BPF loader exited: ${why}`));
    }
    this.pending.clear();
    this.hello = undefined;
    if (this.state === 'stopped') return;
    this.lastError = why;
    if (neverStarted && ++this.failedStarts >= (this.o.giveUpAfter ?? Infinity)) {
      this.state = 'stopped';
      this.o.onGiveUp?.(why);
      return;
    }
    if (Date.now() - this.startedAt >= (this.o.healthyAfterMs ?? 30_000)) this.delayMs = this.o.backoff?.initialMs ?? 250;
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.o.backoff?.maxMs ?? 30_000);
    this.state = 'backoff';
    this.o.log.warn('bpf loader stopped; restarting', { why, in_ms: delay });
    this.retryTimer = setTimeout(() => {
      if (this.state === 'backoff') this.spawn();
    }, delay);
  }
}
