import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { familiesOf } from '../../src/metrics/index.js';
import { negotiate, render } from '../../src/metrics/render.js';
import { family } from '../../src/metrics/family.js';
import { SnapshotEngine } from '../../src/snapshot/engine.js';
import type { SnapshotInputs } from '../../src/snapshot/types.js';

const inputs = (): SnapshotInputs => ({
  takenAtMs: Date.now(),
  bpfStatus: { mode: 'off', state: 'disabled', cause: 'disabled_by_flag', reason: 'test', loaderRestarts: 0 },
  collectors: [{ name: 'sysfs', success: true, durationSeconds: 0.001 }],
});

describe('snapshot engine', () => {
  it('coalesces concurrent scrapes onto one read', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const engine = new SnapshotEngine(async () => {
      await gate;
      return inputs();
    });
    const many = Array.from({ length: 50 }, () => engine.snapshot());
    release();
    const snaps = await Promise.all(many);
    expect(engine.reads).toBe(1);
    expect(new Set(snaps).size).toBe(1);
    await engine.snapshot();
    expect(engine.reads).toBe(2);
  });

  it('turns a failing model into a collector failure, not an exception', async () => {
    const engine = new SnapshotEngine(async () => inputs(), {
      update: () => {
        throw new Error('boom');
      },
    });
    const s = await engine.snapshot();
    expect(s.collectors.find((c) => c.name === 'model')).toMatchObject({ success: false, error: 'boom' });
  });

  it('logs a model failure once, when it starts', async () => {
    const lines: string[] = [];
    const log = createLogger('info', (l) => lines.push(l));
    const engine = new SnapshotEngine(async () => inputs(), { update: () => { throw new Error('bad window'); } }, log);
    await engine.snapshot();
    await engine.snapshot();
    expect(lines.filter((l) => /msg="collector failed" collector=model err="bad window"/.test(l))).toHaveLength(1);
  });
});

describe('rendering', () => {
  it('negotiates OpenMetrics only on request', () => {
    expect(negotiate(undefined)).toBe('prometheus');
    expect(negotiate('text/plain;version=0.0.4')).toBe('prometheus');
    expect(negotiate('application/openmetrics-text;version=1.0.0,text/plain;q=0.5')).toBe('openmetrics');
  });

  it('renders counters and histograms in both formats', async () => {
    const fams = [
      family('x_total', 'counter', 'help x', [3], (v) => ({ labels: { device: 'a' }, value: v })),
      {
        name: 'hybridpoll_h_seconds',
        help: 'help h',
        type: 'histogram' as const,
        samples: [
          { labels: { le: '0.001' }, value: 1, suffix: '_bucket' as const },
          { labels: { le: '+Inf' }, value: 2, suffix: '_bucket' as const },
          { labels: {}, value: 0.5, suffix: '_sum' as const },
          { labels: {}, value: 2, suffix: '_count' as const },
        ],
      },
    ];
    const prom = await render(fams, 'prometheus');
    expect(prom).toContain('# TYPE hybridpoll_x_total counter\nhybridpoll_x_total{device="a"} 3');
    expect(prom).toContain('hybridpoll_h_seconds_bucket{le="+Inf"} 2');
    const om = await render(fams, 'openmetrics');
    expect(om).toContain('# TYPE hybridpoll_x counter\nhybridpoll_x_total{device="a"} 3');
    expect(om.endsWith('# EOF\n')).toBe(true);
  });

  it('builds self metrics from a snapshot', async () => {
    const engine = new SnapshotEngine(async () => inputs());
    const text = await render(familiesOf(await engine.snapshot()), 'prometheus');
    expect(text).toMatch(/hybridpoll_scrape_collector_success\{collector="sysfs"\} 1/);
    expect(text).toMatch(/hybridpoll_build_info\{version="\d+\.\d+\.\d+"/);
  });
});
