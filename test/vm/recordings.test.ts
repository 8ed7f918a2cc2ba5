// The shipped recordings of real polling in the VM lab (npx tsx test/vm/lab.ts record, and
// HPVM_SUITE=bullseye for vm-legacy.jsonl) carry what they claim: real hybrid and classic io_uring
// polling on 7.x, block-layer hybrid polling on 5.10, readable by `report` on any machine.
// No VM needed: this runs in the default suite against dist/ (built by the default global setup).
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

interface Report {
  kernel: { era: string; evidence: string };
  bpf: { pollPath: string };
  source: { header: { source: string; description: string } };
  devices: { target: { device: string; current: { policy: string; sleepNs: number; sleptFraction: number }; measured: { polledIos: number; iops: number }; modelCpuErrorRatio?: number } }[];
}

function report(file: string): Report {
  const out = execFileSync(process.execPath, [resolve(ROOT, 'dist/cli.js'), 'report', '--from-recording', resolve(ROOT, 'recordings', file), '--format', 'json'], { encoding: 'utf8' });
  return JSON.parse(out) as Report;
}

/** The model's self-check on a recording of the virtual-time lab: within the VM suite's ±10 % (issue 13). */
const SELF_CHECK_BOUND = 0.1;

describe('recordings of real polling from the VM lab', () => {
  it('vm-hybrid.jsonl: a live 6.13+ guest on the fentry path, hybrid sleeps on every I/O', () => {
    const r = report('vm-hybrid.jsonl');
    expect(r.source.header.source).toBe('live');
    expect(r.source.header.description).toMatch(/HYBRID_IOPOLL/);
    expect(r.kernel).toMatchObject({ era: 'iouring_hybrid', evidence: 'btf' });
    expect(r.bpf.pollPath).toBe('fentry');
    const nvme = r.devices.filter((d) => /^(nvme|hpsim)/.test(d.target.device));
    expect(nvme).toHaveLength(1);
    const t = nvme[0]!.target;
    expect(t.measured.polledIos).toBeGreaterThan(10_000);
    expect(t.current.policy).toBe('iouring_half_min');
    expect(t.current.sleptFraction).toBeGreaterThan(0.95);
    expect(t.current.sleepNs).toBeGreaterThan(0);
    expect(Math.abs(t.modelCpuErrorRatio!), 'self-check').toBeLessThanOrEqual(SELF_CHECK_BOUND);
  });

  it('vm-legacy.jsonl: a live 5.10 guest, block-layer hybrid polling with io_poll_delay=0 (½ the poll_stat mean)', () => {
    const r = report('vm-legacy.jsonl');
    expect(r.source.header.source).toBe('live');
    expect(r.source.header.description).toMatch(/io_poll_delay=0.*kernel 5\.10/);
    expect(r.kernel).toMatchObject({ era: 'blkmq_hybrid', evidence: 'btf' });
    expect(r.bpf.pollPath).toBe('tracepoint');
    const nvme = r.devices.filter((d) => /^(nvme|hpsim)/.test(d.target.device));
    expect(nvme).toHaveLength(1);
    const t = nvme[0]!.target;
    expect(t.measured.polledIos).toBeGreaterThan(5_000);
    expect(t.current.policy).toBe('blkmq_half_mean');
    expect(t.current.sleptFraction).toBeGreaterThan(0.95);
    expect(t.current.sleepNs).toBeGreaterThan(0);
    expect(Math.abs(t.modelCpuErrorRatio!), 'self-check').toBeLessThanOrEqual(SELF_CHECK_BOUND);
  });

  it('vm-classic.jsonl: the same device polled classically, no sleeps', () => {
    const r = report('vm-classic.jsonl');
    expect(r.source.header.source).toBe('live');
    expect(r.kernel.era).toBe('iouring_hybrid');
    const t = r.devices.filter((d) => /^(nvme|hpsim)/.test(d.target.device))[0]!.target;
    expect(t.measured.polledIos).toBeGreaterThan(5_000);
    expect(t.current.policy).toBe('classic');
    expect(t.current.sleepNs).toBe(0);
    expect(Math.abs(t.modelCpuErrorRatio!), 'self-check').toBeLessThanOrEqual(SELF_CHECK_BOUND);
  });
});
