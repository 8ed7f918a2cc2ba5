// The truth checks of issue 5 on one guest boot (see test/vm/setup.ts and docs/validation.md).
// Each check compares figures of the same session; its failure message carries the numbers.
import { describe, expect, inject, it } from 'vitest';
import { allChecks } from './lib/checks.js';
import { openCause } from './lib/open.js';
import { loadSession } from './lib/lab.js';

const skip = inject('vmSkip');
if (skip) console.warn(`*** SKIPPED: ${skip} ***`);

describe.skipIf(!!skip)('guest VM: real hybrid polling, measured by the exporter', () => {
  const session = skip ? undefined : loadSession(inject('vmSession'));
  it('the session ran every workload', () => {
    expect(session?.error, `session stopped early: ${session?.error}`).toBeUndefined();
  });
  for (const c of session ? allChecks(session) : []) {
    const name = `[${c.scenario}] ${c.id}: ${c.title}`;
    // A check whose premise this machine violates (check 5 under TCG) is skipped loudly, with the evidence.
    if (c.skipped) console.warn(`*** SKIPPED ${name}: ${c.skipped} (had it run: ${c.pass ? 'pass' : 'fail'}; ${c.measured}) ***`);
    // A known-open failure (lib/open.ts) is not gated: it is skipped as OPEN, with its figures and cause.
    const open = openCause(c);
    if (open) console.warn(`*** OPEN, not gated: ${name}: ${c.measured} — bound ${c.bound}; cause: ${open} ***`);
    it.skipIf(!!c.skipped || !!open)(open ? `OPEN ${name}` : name, () => {
      expect(c.pass, `${c.title} [${c.scenario}]: ${c.measured} — bound ${c.bound}`).toBe(true);
    });
  }
});
