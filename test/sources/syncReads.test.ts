// The debugfs files are read synchronously (readTextSync, one shared buffer) and their listing is
// kept per device: the text must be what readBounded returns, and a device or hctx directory
// appearing or disappearing must be seen on the next collection, yielding or not.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_MAX_BYTES, readBounded, readTextSync } from '../../src/sources/files.js';
import { HostReader } from '../../src/sources/reader.js';
import type { HostReading } from '../../src/sources/types.js';
import { makeTree, pollStatText, writeDevice, type Tree } from '../hardening/helpers/tree.js';

describe('readTextSync', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hp-sync-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('returns what readBounded returns, whatever was read before into its buffer', async () => {
    // Long files first: a shorter one after them must not show the longer one's tail.
    for (const size of [DEFAULT_MAX_BYTES, 8192, 4096, 4095, 100, 1, 0]) {
      const f = join(dir, `f${size}`);
      writeFileSync(f, Buffer.alloc(size, 0x61 + (size % 26)));
      const text = readTextSync(f);
      expect(text.length, `size ${size}`).toBe(size);
      expect(text).toBe((await readBounded(f)).toString('utf8'));
    }
  });

  it('refuses oversized files and symlinks, and does not block on a FIFO', () => {
    const big = join(dir, 'big');
    writeFileSync(big, Buffer.alloc(DEFAULT_MAX_BYTES + 1, 0x62));
    expect(() => readTextSync(big)).toThrow(`larger than ${DEFAULT_MAX_BYTES} bytes: not read`);
    const small = join(dir, 'small');
    writeFileSync(small, 'poll\n');
    expect(readTextSync(small)).toBe('poll\n'); // the refusal left the buffer usable
    symlinkSync(small, join(dir, 'link'));
    expect(() => readTextSync(join(dir, 'link'))).toThrow('is a symbolic link: not followed');
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    expect(readTextSync(join(dir, 'fifo'))).toBe('');
    expect(() => readTextSync(join(dir, 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});

describe('devices and hctx directories coming and going', () => {
  let tree: Tree;
  let reader: HostReader;
  const read = async (): Promise<HostReading> => (await reader.read()).host;
  const device = async (name: string) => (await read()).devices.find((d) => d.device === name);

  beforeEach(() => {
    tree = makeTree();
    writeDevice(tree, 'nvme0n1', { dev: '259:0', hctx: ['default', 'poll'], pollStat: pollStatText(1) });
    reader = new HostReader({ paths: { sysfs: tree.sys, debugfs: tree.debug, procfs: tree.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: false } });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    tree.dispose();
  });

  it('sees an hctx directory added or removed on the next collection', async () => {
    expect((await device('nvme0n1'))?.hctxByType).toEqual({ default: 1, poll: 1 });
    tree.write('debug/block/nvme0n1/hctx2/type', 'poll\n');
    tree.write('debug/block/nvme0n1/hctx2/io_poll', 'considered=3\ninvoked=2\nsuccess=1\n');
    const added = await device('nvme0n1');
    expect(added?.hctxByType).toEqual({ default: 1, poll: 2 });
    expect(added?.hctxIoPoll).toEqual([{ hctx: 'hctx2', considered: 3, invoked: 2, success: 1 }]);
    tree.remove('debug/block/nvme0n1/hctx2');
    tree.remove('debug/block/nvme0n1/hctx0');
    const removed = await device('nvme0n1');
    expect(removed?.hctxByType).toEqual({ poll: 1 });
    expect(removed?.hctxIoPoll).toBeUndefined();
    expect(removed?.errors).toEqual([]);
  });

  it('sees a device added or removed on the next collection', async () => {
    expect((await read()).devices.map((d) => d.device)).toEqual(['nvme0n1']);
    writeDevice(tree, 'nvme1n1', { dev: '259:1', hctx: ['poll'], pollStat: pollStatText(5) });
    const both = await read();
    expect(both.devices.map((d) => d.device)).toEqual(['nvme0n1', 'nvme1n1']);
    expect(both.devices[1]).toMatchObject({ devNum: '259:1', hctxByType: { poll: 1 }, pollStat: { kind: 'buckets' } });
    tree.remove('sys/block/nvme0n1');
    tree.remove('debug/block/nvme0n1');
    expect((await read()).devices.map((d) => d.device)).toEqual(['nvme1n1']);
    // Its debugfs directory gone alone: the device stays, without debugfs readings or errors.
    tree.remove('debug/block/nvme1n1');
    const sysOnly = await device('nvme1n1');
    expect(sysOnly).toMatchObject({ devNum: '259:1', errors: [] });
    expect(sysOnly?.hctxByType).toBeUndefined();
  });

  it('reads the same when it gives the event loop back after every device', async () => {
    for (let i = 1; i < 6; i++) writeDevice(tree, `nvme${i}n1`, { dev: `259:${i}`, hctx: ['default', 'poll'], pollStat: pollStatText(i) });
    tree.write('debug/block/nvme3n1/poll_stat', 'garbage\n');
    const straight = await new HostReader({ paths: { sysfs: tree.sys, debugfs: tree.debug, procfs: tree.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: false } }).read();
    // A clock that jumps a second per look: every device ends a slice.
    let t = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => (t += 1000));
    const sliced = await reader.read();
    expect(sliced.host).toEqual(straight.host);
    expect(sliced.collectors.map(({ durationSeconds: _, ...c }) => c)).toEqual(straight.collectors.map(({ durationSeconds: _, ...c }) => c));
  });
});
