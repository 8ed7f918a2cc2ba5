// The QEMU command line of the VM lab's guests (test/vm/lib/guest.ts): virtual time and the
// simulated device's parameters. Pure: no QEMU is started.
import { describe, expect, it } from 'vitest';
import { kernelCmdline, qemuArgs, usesIcount, type BootOptions } from './lib/guest.js';

const images = { suite: 'trixie', kernel: '/k', initrd: '/i', root: '/r', project: '/p', kernelRelease: '7.3', loader: true, hpsim: true, rootKey: 'a', projectKey: 'b' };
const base: BootOptions = { images, accel: 'tcg', smp: 2, memMiB: 2048, pollQueues: 2, nvme: [], log: () => {}, bootTimeoutMs: 1 };
const args = (o: Partial<BootOptions>) => qemuArgs({ ...base, ...o }, { agent: 1, exporter: 2 }, '/c');
const after = (a: string[], flag: string) => a[a.indexOf(flag) + 1];

describe('virtual time', () => {
  it('is on by default with TCG, single-threaded, skipping idle time', () => {
    const a = args({});
    expect(after(a, '-icount')).toBe('shift=0,sleep=off,align=off');
    expect(after(a, '-accel')).toBe('tcg,thread=single');
    expect(usesIcount(base)).toBe(true);
  });
  it('can be switched off on TCG', () => {
    expect(args({ icount: false })).not.toContain('-icount');
  });
  it('is never used with KVM, and asking for it there is an error', () => {
    expect(args({ accel: 'kvm' })).not.toContain('-icount');
    expect(() => args({ accel: 'kvm', icount: true })).toThrow(/needs TCG/);
  });
});

describe('kernel command line', () => {
  it('carries the hpsim parameters base64-encoded, so spaces and ; survive', () => {
    const p = 'nr_devices=2 poll_queues=1 profiles=fixed:50000;twopoint:20000:100000:500';
    const m = /hpvm\.hpsim=(\S+)/.exec(kernelCmdline({ pollQueues: 1, hpsim: p }));
    expect(Buffer.from(m![1]!, 'base64').toString()).toBe(p);
  });
  it('leaves the guest default when no parameters are given', () => {
    expect(kernelCmdline({ pollQueues: 1 })).not.toContain('hpvm.hpsim');
    expect(after(args({}), '-append')).toContain('nvme.poll_queues=2');
  });
  it('attaches no NVMe controller when the list is empty', () => {
    expect(args({}).join(' ')).not.toContain('nvme,serial');
    expect(args({ nvme: [{ serial: 's0', latencyNs: 0 }] }).join(' ')).toContain('nvme,serial=s0');
  });
});
