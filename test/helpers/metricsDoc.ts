// The metric names docs/metrics.md promises, including the series a histogram row implies.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Names in the doc's tables; "`a_min_seconds`, `_max_seconds`" shorthands expand against the first
 * name of the row. With withHistogramSeries, a histogram row also yields its _bucket/_sum/_count.
 */
export function documentedSeries(
  markdown = readFileSync(resolve(ROOT, 'docs/metrics.md'), 'utf8'),
  withHistogramSeries = true,
): Set<string> {
  const names = new Set<string>();
  for (const line of markdown.split('\n').filter((l) => l.startsWith('| `'))) {
    const cells = line.split('|');
    const parts = [...(cells[1] ?? '').matchAll(/`([a-z_:]+)`/g)].map((m) => m[1]!);
    const isHistogram = (cells[2] ?? '').trim() === 'histogram';
    const first = parts[0];
    for (const p of parts) {
      let name: string | undefined;
      if (p.startsWith('hybridpoll_')) name = p;
      else if (first && p.startsWith('_')) {
        const suffixWords = p.split('_').filter(Boolean).length;
        name = `${first.split('_').slice(0, -suffixWords).join('_')}${p}`;
      }
      if (!name) continue;
      names.add(name);
      if (isHistogram && withHistogramSeries) for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    }
  }
  return names;
}
