// docs/metrics.md is the contract between the exporter, the dashboards and the alert rules:
// every metric family the exporter emits must be documented there.
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentedSeries, ROOT } from '../helpers/metricsDoc.js';

describe('docs/metrics.md', () => {
  const documented = documentedSeries(readFileSync(resolve(ROOT, 'docs/metrics.md'), 'utf8'), false);

  it('lists every family in the golden outputs', () => {
    const dir = resolve(ROOT, 'test/golden');
    const emitted = new Set<string>();
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.prom'))) {
      for (const m of readFileSync(resolve(dir, f), 'utf8').matchAll(/^# TYPE (hybridpoll_\w+) /gm)) emitted.add(m[1]!);
    }
    expect(emitted.size).toBeGreaterThan(10);
    const missing = [...emitted].filter((n) => !documented.has(n));
    expect(missing, 'emitted but not documented in docs/metrics.md').toEqual([]);
  });

  it('expands the shorthand rows', () => {
    expect(documented.has('hybridpoll_poll_stat_max_seconds')).toBe(true);
    expect(documented.has('hybridpoll_hctx_poll_success_total')).toBe(true);
  });
});
