// Starts the real exporter (node dist/cli.js) on 127.0.0.1 with a free port and stops it by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = resolve(ROOT, 'dist/cli.js');

export interface RunningExporter {
  url: string;
  proc: ChildProcess;
  /** everything the process wrote to stderr so far */
  logs(): string;
  stop(): Promise<void>;
}

/** Fixture tree flags: --path.sysfs/debugfs/procfs pointing at test/fixtures/NAME. */
export function fixtureArgs(name: string): string[] {
  const dir = resolve(ROOT, 'test/fixtures', name);
  return [`--path.sysfs=${dir}/sys`, `--path.debugfs=${dir}/debug`, `--path.procfs=${dir}/proc`];
}

/** Runs `node dist/cli.js <args> --web.listen-address 127.0.0.1:0` and waits for its "listening" log line. */
export async function startExporter(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<RunningExporter> {
  const proc = spawn(process.execPath, [CLI, ...args, '--web.listen-address=127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: opts.env ?? process.env,
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  proc.stdout!.resume();
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`exporter did not start within ${opts.timeoutMs ?? 15000} ms:\n${stderr}`)), opts.timeoutMs ?? 15000);
    const check = () => {
      const m = /msg=listening address=([\d.]+:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        ok(`http://${m[1]}`);
      }
    };
    proc.stderr!.on('data', check);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`exporter exited with ${code}:\n${stderr}`));
    });
  });
  return {
    url,
    proc,
    logs: () => stderr,
    stop: () =>
      new Promise<void>((done) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return done();
        proc.once('exit', () => done());
        proc.kill('SIGTERM');
      }),
  };
}
