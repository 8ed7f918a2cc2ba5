// test/run.mjs with test/setup/lostFiles.ts: a file whose vitest worker dies is named and run
// once more when nothing else failed; a file that dies every time, or a failing test, still fails.
// The fixtures kill their own worker (SIGKILL) or cut its IPC channel, as the pool fault does.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'hp-rerun-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function runFixtures(glob: string, marker: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['test/run.mjs', '--config', 'test/setup/fixtures/worker-exit/vitest.config.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, HP_FIXTURE: glob, HP_FIXTURE_MARKER: join(dir, marker), HP_VITEST_LOST: '', NO_COLOR: '1' },
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

const RERUN = /test\/run\.mjs: no test failed, but a vitest worker died under (\S+): running it once more/;

describe('test/run.mjs, when a vitest worker dies', () => {
  it('names the lost file and passes when its second run passes (SIGKILL)', () => {
    const r = runFixtures('{crashOnce,passes}.fixture.ts', 'sigkill');
    expect(r.out).toContain('1 test file(s) lost');
    expect(r.out).toContain('crashOnce.fixture.ts: 0 of 2 tests reported');
    expect(RERUN.exec(r.out)?.[1]).toBe('test/setup/fixtures/worker-exit/crashOnce.fixture.ts');
    expect(r.out).toMatch(/Tests\s+2 passed \(2\)/); // the second run: the lost file alone, every test
    expect(r.status).toBe(0);
  });

  it('says how the worker ended where Node can tell (an exit code), and reruns', () => {
    const r = runFixtures('exits.fixture.ts', 'ipc');
    // Which side sees the cut channel first is a race: the worker, which then exits with a code
    // and says so, or vitest, whose next write fails (EPIPE) and which ends the worker itself;
    // either way the death is reported and the file run once more
    expect(r.out).toMatch(/vitest worker \d+ exited with code \d+ before its test file finished|Worker forks emitted error[\s\S]*EPIPE/);
    expect(r.out).toMatch(RERUN);
    expect(r.status).toBe(0);
  });

  it('fails when the file dies on its second run too', () => {
    const r = runFixtures('crashAlways.fixture.ts', 'always');
    expect(r.out.match(/1 test file\(s\) lost/g)).toHaveLength(2);
    expect(r.status).not.toBe(0);
  });

  it('does not rerun anything when a test failed', () => {
    const r = runFixtures('{crashOnce,fails}.fixture.ts', 'failed');
    expect(r.out).toContain('crashOnce.fixture.ts: 0 of 2 tests reported');
    expect(r.out).not.toMatch(RERUN);
    expect(r.status).not.toBe(0);
  });
});
