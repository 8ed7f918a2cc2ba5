// The reader keeps what a device holds for its lifetime (dev, hctx types, which debugfs files
// exist) and re-reads every scrape what can be written at any time (io_poll, io_poll_delay,
// poll_stat, hctx io_poll counters). A re-created device, or a minute passing, reads it afresh.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HostReader, STATIC_REFRESH_MS } from '../../src/sources/reader.js';
import { makeTree, pollStatText, writeDevice, type Tree } from '../hardening/helpers/tree.js';

describe('per-device static attributes', () => {
  let tree: Tree;
  let reader: HostReader;
  const device = async (name: string) => (await reader.read()).host.devices.find((d) => d.device === name)!;

  beforeEach(() => {
    tree = makeTree();
    writeDevice(tree, 'nvme0n1', { dev: '259:0', ioPoll: 1, delay: -1, hctx: ['default', 'poll'], pollStat: pollStatText(1) });
    tree.write('debug/block/nvme0n1/hctx1/io_poll', 'considered=1\ninvoked=2\nsuccess=1\n');
    reader = new HostReader({ paths: { sysfs: tree.sys, debugfs: tree.debug, procfs: tree.proc }, filter: {}, collectors: { sysfs: true, debugfs: true, era: false } });
  });
  afterEach(() => {
    vi.useRealTimers();
    tree.dispose();
  });

  it('re-reads the writable settings and the counters every scrape', async () => {
    expect(await device('nvme0n1')).toMatchObject({ ioPoll: 1, ioPollDelay: -1, hctxIoPoll: [{ hctx: 'hctx1', considered: 1 }] });
    tree.write('sys/block/nvme0n1/queue/io_poll_delay', '0\n');
    tree.write('sys/block/nvme0n1/queue/io_poll', '0\n');
    tree.write('debug/block/nvme0n1/poll_stat', pollStatText(50));
    tree.write('debug/block/nvme0n1/hctx1/io_poll', 'considered=9\ninvoked=9\nsuccess=9\n');
    const d = await device('nvme0n1');
    expect(d).toMatchObject({ ioPoll: 0, ioPollDelay: 0, hctxIoPoll: [{ hctx: 'hctx1', considered: 9 }] });
    expect(d.pollStat?.kind === 'buckets' && d.pollStat.buckets[0]).toMatchObject({ op: 'read', samples: 50 });
  });

  it('keeps dev and the hctx types for the device\'s lifetime, and reads a re-created device afresh', async () => {
    expect(await device('nvme0n1')).toMatchObject({ devNum: '259:0', hctxByType: { default: 1, poll: 1 } });
    // Written in place (the kernel never does): the device is the same one, nothing is re-read.
    tree.write('sys/block/nvme0n1/dev', '259:7\n');
    tree.write('debug/block/nvme0n1/hctx0/type', 'read\n');
    expect(await device('nvme0n1')).toMatchObject({ devNum: '259:0', hctxByType: { default: 1, poll: 1 } });
    // Gone and back (hot-plug): new directories, read again.
    tree.remove('sys/block/nvme0n1');
    tree.remove('debug/block/nvme0n1');
    expect(await device('nvme0n1')).toBeUndefined();
    writeDevice(tree, 'nvme0n1', { dev: '259:3', hctx: ['default', 'read', 'poll'], pollStat: pollStatText(1) });
    expect(await device('nvme0n1')).toMatchObject({ devNum: '259:3', hctxByType: { default: 1, read: 1, poll: 1 } });
  });

  it('does not look for absent io_poll or poll_stat files again until the listing is refreshed', async () => {
    tree.remove('debug/block/nvme0n1/hctx1/io_poll');
    tree.remove('debug/block/nvme0n1/poll_stat');
    vi.useFakeTimers({ toFake: ['Date'] });
    const first = await device('nvme0n1');
    expect(first.hctxIoPoll).toBeUndefined();
    expect(first.pollStat).toEqual({ kind: 'absent' });
    // A file appearing inside an hctx directory changes neither the device directory nor its
    // listing: not opened, so not seen, until the refresh.
    tree.write('debug/block/nvme0n1/hctx1/io_poll', 'considered=4\ninvoked=4\nsuccess=4\n');
    expect((await device('nvme0n1')).hctxIoPoll).toBeUndefined();
    vi.setSystemTime(Date.now() + STATIC_REFRESH_MS + 1);
    expect((await device('nvme0n1')).hctxIoPoll).toEqual([{ hctx: 'hctx1', considered: 4, invoked: 4, success: 4 }]);
  });

  it('reports a bad static attribute on every scrape, not only the first', async () => {
    tree.write('sys/block/nvme0n1/dev', 'garbage\n');
    for (let i = 0; i < 2; i++) {
      const r = await reader.read();
      expect(r.collectors.find((c) => c.name === 'sysfs')).toMatchObject({ success: false, error: expect.stringMatching(/dev: expected major:minor/) });
    }
    tree.write('sys/block/nvme0n1/dev', '259:0\n');
    expect((await reader.read()).collectors.find((c) => c.name === 'sysfs')!.success).toBe(true);
  });
});
