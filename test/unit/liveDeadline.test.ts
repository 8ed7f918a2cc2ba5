// A kernel file read that never returns (simulated at the reader's boundary: a promise that does
// not settle, as a read stuck in the kernel leaves it) must not hold the scrapes: each answers
// after the deadline with the file collectors failed and the rest intact, and no second read is
// started on the stuck files until the first one ends.
import { describe, expect, it } from 'vitest';
import { disabledBpf } from '../../src/bpf/source.js';
import { createLogger } from '../../src/log.js';
import { familiesOf } from '../../src/metrics/index.js';
import { render } from '../../src/metrics/render.js';
import { SnapshotEngine } from '../../src/snapshot/engine.js';
import { liveReader } from '../../src/snapshot/live.js';
import type { HostReader } from '../../src/sources/reader.js';

type Read = Awaited<ReturnType<HostReader['read']>>;

const healthy: Read = {
  host: { features: {}, era: { era: 'unknown', evidence: 'none', reason: 'test' }, devices: [{ device: 'nvme0n1', devNum: '259:0', ioPoll: 1, errors: [] }] },
  collectors: [{ name: 'sysfs', success: true, durationSeconds: 0.001 }, { name: 'debugfs', success: true, durationSeconds: 0.001 }],
};

describe('host read deadline', () => {
  it('answers after the deadline with the file collectors failed, and starts no second read while the first hangs', async () => {
    let reads = 0;
    let release!: (r: Read) => void;
    const host = {
      read: () => {
        reads += 1;
        return reads === 1 ? new Promise<Read>((r) => (release = r)) : Promise.resolve(healthy);
      },
    };
    const lines: string[] = [];
    const engine = new SnapshotEngine(liveReader(host, disabledBpf('test'), createLogger('info', (l) => lines.push(l)), false, 50, 50));

    const t0 = performance.now();
    const first = await engine.snapshot();
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(first.host).toBeUndefined();
    expect(first.collectors.map((c) => [c.name, c.success])).toEqual([['sysfs', false], ['debugfs', false], ['era', false]]);
    expect(first.collectors[0]!.error).toMatch(/did not finish within 0.05 s/);
    const body = await render(familiesOf(first), 'prometheus');
    expect(body).toContain('hybridpoll_scrape_collector_success{collector="sysfs"} 0');
    expect(body).toContain('hybridpoll_build_info{');
    expect(lines.join('\n')).toMatch(/collector failed.*collector=sysfs.*did not finish/);

    // Still stuck: answered at once, and the stuck files are not read again.
    const t1 = performance.now();
    const second = await engine.snapshot();
    expect(performance.now() - t1).toBeLessThan(40);
    expect(second.collectors[0]!.error).toMatch(/still pending since/);
    expect(reads).toBe(1);

    // The read ends: the next scrape reads afresh, with the enabled collectors only.
    release(healthy);
    await new Promise((r) => setTimeout(r, 0));
    const third = await engine.snapshot();
    expect(reads).toBe(2);
    expect(third.host?.devices[0]?.device).toBe('nvme0n1');
    expect(third.collectors.map((c) => [c.name, c.success])).toEqual([['sysfs', true], ['debugfs', true]]);
  });

  it('gives the first read, which parses BTF and static attributes once, the longer first deadline', async () => {
    const slow = { read: () => new Promise<Read>((r) => setTimeout(() => r(healthy), 150)) };
    const engine = new SnapshotEngine(liveReader(slow, disabledBpf('test'), createLogger('error', () => {}), false, 50, 2000));
    const first = await engine.snapshot();
    expect(first.collectors.map((c) => [c.name, c.success])).toEqual([['sysfs', true], ['debugfs', true]]);
    // Later reads have the short deadline.
    const second = await engine.snapshot();
    expect(second.collectors[0]!.error).toMatch(/did not finish within 0.05 s/);
  });
});
