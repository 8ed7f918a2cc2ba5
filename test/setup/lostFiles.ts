// A vitest 4.1 forks worker that dies takes its file's results with it: the summary then counts
// that file as neither passed nor failed ("61 passed (62)"), and vitest names neither the file nor
// why the process ended (vitest-dev/vitest#10587, #10894; seen once in this project's CI, in a
// worker of `npm test`). This reporter names such files, with the kernel's word on the death when
// it has one, and hands them to test/run.mjs (through $HP_VITEST_LOST), which runs them once more.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/** What test/run.mjs reads: the files no worker reported on, and whether anything else went wrong. */
export interface LostFilesReport {
  lost: string[];
  failedTests: number;
  /** unhandled errors other than a worker's unexpected exit */
  otherErrors: number;
}

const WORKER_EXIT = /Worker exited unexpectedly/;
// the same death seen from the other side: vitest writing to the dead worker's channel first
const WORKER_CHANNEL = /Worker forks emitted error/;
const CHANNEL_GONE = /EPIPE|ERR_IPC_CHANNEL_CLOSED|channel closed/i;

function isWorkerExit(e: SerializedError): boolean {
  const cause = (e as { cause?: { message?: unknown; code?: unknown } }).cause;
  const message = String(e.message ?? '');
  if (WORKER_EXIT.test(message) || WORKER_EXIT.test(String(cause?.message ?? ''))) return true;
  return WORKER_CHANNEL.test(message) && CHANNEL_GONE.test(`${String(cause?.code ?? '')} ${String(cause?.message ?? '')}`);
}

/** The kernel's lines on processes it killed or that crashed (needs root; empty if unreadable). */
function kernelDeaths(): string[] {
  const r = spawnSync('dmesg', ['--ctime'], { encoding: 'utf8', timeout: 5000 });
  if (r.status !== 0) return [];
  return r.stdout.split('\n').filter((l) => /segfault|general protection|traps:|Killed process|Out of memory|oom-kill/i.test(l)).slice(-5);
}

export default class LostFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<SerializedError>): void {
    const lost = modules.filter((m) => m.state() === 'pending' || m.state() === 'queued');
    const tests = modules.flatMap((m) => [...m.children.allTests()]);
    const report: LostFilesReport = {
      lost: lost.map((m) => m.moduleId),
      failedTests: tests.filter((t) => t.result().state === 'failed').length,
      otherErrors: errors.filter((e) => !isWorkerExit(e)).length,
    };
    if (process.env['HP_VITEST_LOST']) writeFileSync(process.env['HP_VITEST_LOST'], JSON.stringify(report));
    if (!lost.length) return;
    const lines = lost.map((m) => {
      const all = [...m.children.allTests()];
      return `  ${m.relativeModuleId}: ${all.filter((t) => t.result().state !== 'pending').length} of ${all.length} tests reported`;
    });
    const kernel = kernelDeaths();
    console.error(
      `\n*** ${lost.length} test file(s) lost: the vitest worker running them died before reporting ***\n${lines.join('\n')}\n` +
        (kernel.length ? `  the kernel's last words on killed or crashed processes:\n    ${kernel.join('\n    ')}\n` : '  the kernel logged no crash or kill (dmesg)\n'),
    );
  }
}
