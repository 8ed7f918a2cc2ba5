// docs/metrics.md is the contract between the exporter, the dashboards and the alert rules:
// every metric family the exporter emits must be documented there.
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** Names in the doc's tables; "`a_min_seconds`, `_max_seconds`" shorthands expand against the first name. */
export function documentedNames(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const line of markdown.split('\n').filter((l) => l.startsWith('| `'))) {
    const cell = line.split('|')[1] ?? '';
    const parts = [...cell.matchAll(/`([a-z_:]+)`/g)].map((m) => m[1]!);
    const first = parts[0];
    for (const p of parts) {
      if (p.startsWith('hybridpoll_')) names.add(p);
      else if (first && p.startsWith('_')) {
        // `hybridpoll_poll_stat_mean_seconds`, `_min_seconds` → replace the last matching suffix part
        const suffixWords = p.split('_').filter(Boolean).length;
        const stem = first.split('_').slice(0, -suffixWords).join('_');
        names.add(`${stem}${p}`);
      }
    }
  }
  return names;
}

describe('docs/metrics.md', () => {
  const documented = documentedNames(readFileSync(resolve(ROOT, 'docs/metrics.md'), 'utf8'));

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
