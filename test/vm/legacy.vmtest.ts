// The legacy-era checks of issues 8 and 13 on one boot of the bullseye guest (kernel 5.10,
// block-layer hybrid polling, virtual time, simulated device hpsim; see test/vm/setup.ts and
// docs/validation-legacy.md). Each failure message has the numbers and the bound.
import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import { allLegacyChecks } from './lib/legacy-checks.js';
import { openCause } from './lib/open.js';
import type { LegacySession } from './lib/legacy.js';

const skip = inject('vmLegacySkip');
if (skip) console.warn(`*** SKIPPED: ${skip} ***`);

describe.skipIf(!!skip)('guest VM, bullseye 5.10: legacy block-layer hybrid polling on hpsim, measured by the exporter', () => {
  const session = skip ? undefined : (JSON.parse(readFileSync(inject('vmLegacySession'), 'utf8')) as LegacySession);
  it('the session ran every workload, in virtual time', () => {
    expect(session?.error, `session stopped early: ${session?.error}`).toBeUndefined();
    expect(session?.icount || session?.accel === 'kvm', `not in virtual time (accel ${session?.accel}): the bounds of issue 13 assume icount`).toBe(true);
  });
  for (const c of session ? allLegacyChecks(session) : []) {
    const name = `[${c.scenario}] ${c.id}: ${c.title}`;
    // A check whose premise this session violates (the model checks without virtual time) is skipped loudly, with the evidence.
    if (c.skipped) console.warn(`*** SKIPPED ${name}: ${c.skipped} (had it run: ${c.pass ? 'pass' : 'fail'}; ${c.measured}) ***`);
    // A known-open failure (lib/open.ts) is not gated: it is skipped as OPEN, with its figures and cause.
    const open = openCause(c);
    if (open) console.warn(`*** OPEN, not gated: ${name}: ${c.measured} — bound ${c.bound}; cause: ${open} ***`);
    it.skipIf(!!c.skipped || !!open)(open ? `OPEN ${name}` : name, () => {
      expect(c.pass, `${c.title} [${c.scenario}]: ${c.measured} — bound ${c.bound}`).toBe(true);
    });
  }
});
