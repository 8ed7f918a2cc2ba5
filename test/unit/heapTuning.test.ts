// The heap flags the CLI sets at start (src/heapTuning.ts): the young generation stays at its
// initial size unless the user sized it, and then V8 grows it as the user allowed.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { youngGenerationSized } from '../../src/heapTuning.js';

const TUNING = resolve(import.meta.dirname, '../../dist/heapTuning.js');

/** new space's size in MiB after allocation that keeps a few MiB alive across scavenges (as a collection does). */
function newSpaceMiB(nodeOptions?: string): number {
  const script = `
    await import(${JSON.stringify(TUNING)});
    const { getHeapSpaceStatistics } = await import('node:v8');
    const keep = [];
    for (let r = 0; r < 200; r++) {
      const a = [];
      for (let i = 0; i < 20000; i++) a.push({ i, s: 'x' + i });
      keep.push(a);
      if (keep.length > 3) keep.shift();
    }
    console.log(getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576);`;
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  if (nodeOptions) env.NODE_OPTIONS = nodeOptions;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8' }).trim());
}

describe('heap tuning', () => {
  it('recognises the flags that size the young generation, in either spelling', () => {
    expect(youngGenerationSized(['--max-semi-space-size=8'], undefined)).toBe(true);
    expect(youngGenerationSized([], '--trace-gc --min_semi_space_size=4')).toBe(true);
    expect(youngGenerationSized(['--max-old-space-size=512'], '--trace-gc')).toBe(false);
    expect(youngGenerationSized([], undefined)).toBe(false);
  });

  it('keeps new space at its initial size, and lets it grow when NODE_OPTIONS sizes it', () => {
    const kept = newSpaceMiB();
    const grown = newSpaceMiB('--max-semi-space-size=8');
    // two semi-spaces of 1 MiB with the growth factor at 1; up to two of 8 MiB when the user allows it
    expect(kept).toBeLessThanOrEqual(2);
    expect(grown).toBeGreaterThan(4);
    expect(grown).toBeLessThanOrEqual(16);
  });
});
