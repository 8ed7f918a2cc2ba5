// Bad input through the whole exporter: fuzzed kernel files go through the real reader, engine,
// metric families and renderer (every failure must become device_read_errors, a collector
// success of 0 and a log line, never an exception); then the real exporter process against trees
// holding a 100 MB file, a FIFO, a device node, planted symlinks and crafted device names.
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, rmSync, symlinkSync, writeSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { disabledBpf } from '../../src/bpf/source.js';
import { createLogger } from '../../src/log.js';
import { familiesOf } from '../../src/metrics/index.js';
import { render } from '../../src/metrics/render.js';
import { SnapshotEngine } from '../../src/snapshot/engine.js';
import { liveReader } from '../../src/snapshot/live.js';
import { parseHctxIoPoll, parseHctxType } from '../../src/sources/hctx.js';
import { parsePollStat } from '../../src/sources/pollStat.js';
import { parseDevNum, parseIoPoll, parseIoPollDelay } from '../../src/sources/queue.js';
import { HostReader } from '../../src/sources/reader.js';
import { textInput } from './helpers/mutate.js';
import { fdCount, leaks, TMP_PREFIX, parseProm, rssBytes, sample, scrape, startExporter, systemState, type Exporter, type SystemState, waitForLog } from './helpers/proc.js';
import { makeTree, pollStatText, writeDevice, type Tree } from './helpers/tree.js';

/** A sysfs/debugfs file the reader reads, the parser that judges it, and valid contents to mutate. */
const FILES = [
  { rel: 'sys/block/nvme0n1/dev', collector: 'sysfs', ok: (t: string) => parseDevNum(t).ok, valid: ['259:0\n'] },
  { rel: 'sys/block/nvme0n1/queue/io_poll', collector: 'sysfs', ok: (t: string) => parseIoPoll(t).ok, valid: ['1\n', '0\n'] },
  { rel: 'sys/block/nvme0n1/queue/io_poll_delay', collector: 'sysfs', ok: (t: string) => parseIoPollDelay(t).ok, valid: ['-1\n', '0\n', '25\n'] },
  { rel: 'debug/block/nvme0n1/poll_stat', collector: 'debugfs', ok: (t: string) => parsePollStat(t).ok, valid: [pollStatText(), ''] },
  { rel: 'debug/block/nvme0n1/hctx0/type', collector: 'debugfs', ok: (t: string) => parseHctxType(t).ok, valid: ['poll\n', 'default\n'] },
  { rel: 'debug/block/nvme0n1/hctx0/io_poll', collector: 'debugfs', ok: (t: string) => parseHctxIoPoll('hctx0', t).ok, valid: ['considered=5\ninvoked=40\nsuccess=5\n'] },
] as const;

describe('fuzzed kernel files through reader, engine, families and renderer', () => {
  let tree: Tree;
  beforeEach(() => {
    tree = makeTree();
    // The healthy neighbour whose metrics must survive whatever nvme0n1 holds.
    writeDevice(tree, 'nvme1n1', { dev: '259:1', ioPoll: 1, delay: 0, hctx: ['default', 'poll'], pollStat: pollStatText(7) });
  });
  afterEach(() => tree.dispose());

  it('turns every unparsable file into device_read_errors, collector success 0 and a log line', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.tuple(...FILES.map((f) => textInput(f.valid))),
        textInput(['6.1.0-18-amd64\n']),
        async (contents, release) => {
          FILES.forEach((f, i) => tree.write(f.rel, contents[i]!));
          tree.write('proc/sys/kernel/osrelease', release);
          const lines: string[] = [];
          const log = createLogger('debug', (l) => lines.push(l));
          const host = new HostReader({
            paths: { sysfs: tree.sys, debugfs: tree.debug, procfs: tree.proc },
            filter: {},
            collectors: { sysfs: true, debugfs: true, era: true },
          });
          const engine = new SnapshotEngine(liveReader(host, disabledBpf('test'), log, false));
          const text = await render(familiesOf(await engine.snapshot()), 'prometheus');
          const samples = parseProm(text); // throws on a malformed exposition line

          // Judge each file as the reader sees it: written as UTF-8, read back (lone surrogates become U+FFFD).
          const failed = FILES.filter((f, i) => !f.ok(Buffer.from(contents[i]!).toString('utf8')));
          expect(sample(samples, 'hybridpoll_device_read_errors', { device: 'nvme0n1' })).toBe(failed.length);
          for (const c of ['sysfs', 'debugfs'] as const) {
            const bad = failed.some((f) => f.collector === c);
            expect(sample(samples, 'hybridpoll_scrape_collector_success', { collector: c }), c).toBe(bad ? 0 : 1);
            expect(lines.some((l) => l.includes('msg="collector failed"') && l.includes(`collector=${c}`)), `log line for ${c}`).toBe(bad);
          }
          // Log lines stay lines: hostile content cannot forge a second one.
          for (const l of lines) expect(l.indexOf('\n')).toBe(l.length - 1);
          // The neighbour is intact.
          expect(sample(samples, 'hybridpoll_device_io_poll', { device: 'nvme1n1' })).toBe(1);
          expect(sample(samples, 'hybridpoll_device_io_poll_delay', { device: 'nvme1n1' })).toBe(0);
          expect(sample(samples, 'hybridpoll_device_hw_queues', { device: 'nvme1n1', type: 'poll' })).toBe(1);
          expect(sample(samples, 'hybridpoll_poll_stat_samples', { device: 'nvme1n1', op: 'read', size_bytes: '4096' })).toBe(10);
          expect(sample(samples, 'hybridpoll_device_read_errors', { device: 'nvme1n1' })).toBe(0);
          // Whatever the release string held, the era metric is there; a release that is not
          // printable ASCII (control characters, spaces, …) is refused as an era error, not exported.
          const era = samples.find((s) => s.name === 'hybridpoll_kernel_era_info');
          const rel = Buffer.from(release).toString('utf8').trim();
          const relOk = /^[\x21-\x7e]{1,64}$/.test(rel);
          expect(era?.labels['release']).toBe(relOk ? rel : '');
          expect(sample(samples, 'hybridpoll_scrape_collector_success', { collector: 'era' })).toBe(relOk ? 1 : 0);
        },
      ),
      { numRuns: 300 },
    );
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// The real process against hostile trees.

describe('exporter process against hostile trees', () => {
  let exp: Exporter | undefined;
  let before: SystemState;
  let tree: Tree;
  let outside: string;
  const CANARY = 'CANARY-7f3a-not-for-export';

  beforeEach(() => {
    before = systemState();
    tree = makeTree('v6.1');
    outside = mkdtempSync(join(tmpdir(), `${TMP_PREFIX}outside-`));
    mkdirSync(join(outside, 'queue'));
    for (const f of ['dev', 'queue/io_poll', 'queue/io_poll_delay', 'poll_stat', 'type']) tree.write(`../${outside.split('/').pop()}/${f}`, `${CANARY}\n`);
  });
  afterEach(async () => {
    expect(await leaks(before, exp)).toEqual([]);
    exp = undefined;
    tree.dispose();
    rmSync(outside, { recursive: true, force: true });
  });

  it('bounds a 100 MB file, refuses a FIFO and a device node, and keeps serving', async () => {
    // 100 MB of real, valid-looking poll_stat lines (not sparse): read whole, it would cost 100 MB+.
    writeDevice(tree, 'big0', { dev: '259:9', hctx: ['poll'], pollStat: '' });
    const fd = openSync(join(tree.debug, 'block/big0/poll_stat'), 'w');
    const chunk = Buffer.from(pollStatText().repeat(Math.ceil((1 << 20) / pollStatText().length)));
    for (let n = 0; n < 100 * (1 << 20); n += chunk.length) writeSync(fd, chunk);
    closeSync(fd);
    // A sparse 100 MB sysfs attribute.
    const sparse = openSync(join(tree.sys, 'block/big0/dev'), 'w');
    ftruncateSync(sparse, 100 * (1 << 20));
    closeSync(sparse);
    // open() on a FIFO without a writer blocks forever unless O_NONBLOCK.
    tree.remove('sys/block/big0/queue/io_poll');
    execFileSync('mkfifo', [join(tree.sys, 'block/big0/queue/io_poll')]);
    // A never-ending character device (a /dev/zero twin).
    tree.remove('sys/block/big0/queue/io_poll_delay');
    execFileSync('mknod', [join(tree.sys, 'block/big0/queue/io_poll_delay'), 'c', '1', '5']);

    exp = await startExporter([...tree.args, '--no-collector.bpf']);
    const first = await scrape(exp.url);
    expect(first.status).toBe(200);
    expect(sample(first.samples, 'hybridpoll_device_read_errors', { device: 'big0' })).toBe(4);
    expect(sample(first.samples, 'hybridpoll_scrape_collector_success', { collector: 'sysfs' })).toBe(0);
    expect(sample(first.samples, 'hybridpoll_scrape_collector_success', { collector: 'debugfs' })).toBe(0);
    // The rest is intact: v6.1's nvme0n1 and the era.
    expect(sample(first.samples, 'hybridpoll_device_info', { device: 'nvme0n1', major_minor: '259:0' })).toBe(1);
    expect(sample(first.samples, 'hybridpoll_kernel_era_info', { era: 'blkmq_hybrid_dead' })).toBe(1);
    // One line per collector: the first problem and how many more (dev and io_poll_delay too large,
    // the FIFO read as empty at once, in whatever order the reads finished).
    await waitForLog(exp, /msg="collector failed" collector=sysfs err=".*big0\/.*(larger than 65536 bytes|expected an integer).*\(\+2 more\)/);
    await waitForLog(exp, /msg="collector failed" collector=debugfs err=".*big0\/poll_stat: larger than 65536 bytes/);
    const html = await (await fetch(`${exp.url}/`)).text();
    expect(html).toContain('big0/poll_stat: larger than 65536 bytes');
    // Scrapes keep working (the FIFO did not wedge the thread pool) and nothing accumulates.
    const fds = fdCount(exp.pid);
    for (let i = 0; i < 10; i++) expect((await scrape(exp.url)).status).toBe(200);
    expect(fdCount(exp.pid)).toBeLessThanOrEqual(fds + 2);
    expect(rssBytes(exp.pid)).toBeLessThan(150 * 1024 * 1024);
  });

  it('does not follow planted symlinks: another file\'s content never reaches /metrics, / or the log', async () => {
    writeDevice(tree, 'leak0', { dev: '259:7', hctx: ['poll'], pollStat: '' });
    for (const f of ['dev', 'queue/io_poll', 'queue/io_poll_delay']) {
      tree.remove(`sys/block/leak0/${f}`);
      symlinkSync(join(outside, f), join(tree.sys, 'block/leak0', f));
    }
    tree.remove('debug/block/leak0/poll_stat');
    symlinkSync(join(outside, 'poll_stat'), join(tree.debug, 'block/leak0/poll_stat'));
    tree.remove('debug/block/leak0/hctx0/type');
    symlinkSync(join(outside, 'type'), join(tree.debug, 'block/leak0/hctx0/type'));

    exp = await startExporter([...tree.args, '--no-collector.bpf', '--log.level=debug']);
    const m = await scrape(exp.url);
    expect(m.status).toBe(200);
    expect(sample(m.samples, 'hybridpoll_device_read_errors', { device: 'leak0' })).toBe(5);
    const html = await (await fetch(`${exp.url}/`)).text();
    expect(html).toContain('is a symbolic link: not followed');
    for (const where of [m.text, html, exp.logs()]) expect(where).not.toContain(CANARY);
  });

  it('treats crafted device names as data: unsafe names are skipped, nothing outside the tree is read', async () => {
    // Names a kernel would never make, but a tree given with --path.sysfs could hold.
    const crafted = ['a\nb', 'evil"name', 'x{y="1"}', 'sp ace', '$(reboot)', 'back\\slash', 'ünï', '-rf'];
    for (const n of crafted) writeDevice(tree, n, { dev: '259:5' });
    // A device entry that is a symlink out of the tree (as sysfs block/ entries are symlinks).
    symlinkSync(outside, join(tree.sys, 'block/escape'));
    // And one with dots only, which isSafeName lets through as data.
    writeDevice(tree, '...', { dev: '259:6' });

    exp = await startExporter([...tree.args, '--no-collector.bpf']);
    const m = await scrape(exp.url);
    expect(m.status).toBe(200);
    const devices = new Set(m.samples.flatMap((s) => (s.labels['device'] === undefined ? [] : [s.labels['device']])));
    for (const d of devices) expect(d).toMatch(/^[A-Za-z0-9._:@+-]+$/);
    for (const n of crafted.filter((c) => !/^[A-Za-z0-9._:@+-]+$/.test(c))) expect(devices.has(n)).toBe(false);
    expect(devices.has('-rf')).toBe(true); // safe characters: it is just a name
    expect(devices.has('...')).toBe(true);
    // The escaping entry resolves outside the tree; its files hold the canary and are refused or
    // unparsable, and the canary is quoted nowhere.
    const html = await (await fetch(`${exp.url}/`)).text();
    for (const where of [m.text, html, exp.logs()]) expect(where).not.toContain(CANARY);
  });
});
