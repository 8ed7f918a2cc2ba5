// The shipped recordings of real polling in the VM lab (npx tsx test/vm/lab.ts record) carry what
// they claim: real hybrid and classic io_uring polling, readable by `report` on any machine.
// No VM needed: this runs in the default suite against dist/ (built by the default global setup).
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

interface Report {
  kernel: { era: string; evidence: string };
  bpf: { pollPath: string };
  source: { header: { source: string; description: string } };
  devices: { target: { device: string; current: { policy: string; sleepNs: number; sleptFraction: number }; measured: { polledIos: number; iops: number } } }[];
}

function report(file: string): Report {
  const out = execFileSync(process.execPath, [resolve(ROOT, 'dist/cli.js'), 'report', '--from-recording', resolve(ROOT, 'recordings', file), '--format', 'json'], { encoding: 'utf8' });
  return JSON.parse(out) as Report;
}

describe('recordings of real polling from the VM lab', () => {
  it('vm-hybrid.jsonl: a live 6.13+ guest on the fentry path, hybrid sleeps on every I/O', () => {
    const r = report('vm-hybrid.jsonl');
    expect(r.source.header.source).toBe('live');
    expect(r.source.header.description).toMatch(/HYBRID_IOPOLL/);
    expect(r.kernel).toMatchObject({ era: 'iouring_hybrid', evidence: 'btf' });
    expect(r.bpf.pollPath).toBe('fentry');
    const nvme = r.devices.filter((d) => d.target.device.startsWith('nvme'));
    expect(nvme).toHaveLength(1);
    const t = nvme[0]!.target;
    expect(t.measured.polledIos).toBeGreaterThan(10_000);
    expect(t.current.policy).toBe('iouring_half_min');
    expect(t.current.sleptFraction).toBeGreaterThan(0.95);
    expect(t.current.sleepNs).toBeGreaterThan(0);
  });

  it('vm-classic.jsonl: the same device polled classically, no sleeps', () => {
    const r = report('vm-classic.jsonl');
    expect(r.source.header.source).toBe('live');
    expect(r.kernel.era).toBe('iouring_hybrid');
    const t = r.devices.filter((d) => d.target.device.startsWith('nvme'))[0]!.target;
    expect(t.measured.polledIos).toBeGreaterThan(5_000);
    expect(t.current.policy).toBe('classic');
    expect(t.current.sleepNs).toBe(0);
  });
});
