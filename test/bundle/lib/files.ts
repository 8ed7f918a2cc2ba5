// Compare generated files with the committed ones; UPDATE_GOLDEN=1 rewrites them instead.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ROOT } from '../../helpers/metricsDoc.js';

/** Files whose committed content differs from the generated content (empty = all in step). */
export function staleFiles(files: Record<string, string>): string[] {
  const stale: string[] = [];
  for (const [rel, text] of Object.entries(files)) {
    const path = resolve(ROOT, rel);
    if (process.env['UPDATE_GOLDEN']) writeFileSync(path, text);
    let committed = '';
    try {
      committed = readFileSync(path, 'utf8');
    } catch {
      /* missing counts as stale */
    }
    if (committed !== text) stale.push(rel);
  }
  return stale;
}
