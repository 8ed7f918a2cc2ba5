// Global setup of npm run test:vm: builds the lab, boots each guest once, runs its workloads and
// hands the saved sessions to the checks. HPVM_GUESTS picks the guests (default trixie,bullseye:
// the io_uring hybrid guest of issue 5 and the legacy block-layer guest of issue 8).
// HPVM_SESSION=<file> / HPVM_LEGACY_SESSION=<file> re-check a saved session without booting.
// HPVM_PROFILE=ci runs both guests' CI profiles (the gate of .ci/run). With CI=true a missing
// prerequisite (root, QEMU, debootstrap, ...) is an error, not a skip: the gate must not pass empty.
import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { labOptionsFromEnv, missingPrerequisites, runLab } from './lib/lab.js';
import { LEGACY_SUITE, legacyOptionsFromEnv, runLegacyLab } from './lib/legacy-lab.js';

declare module 'vitest' {
  export interface ProvidedContext {
    vmSession: string;
    vmSkip: string;
    vmLegacySession: string;
    vmLegacySkip: string;
  }
}

const GUESTS = ['trixie', LEGACY_SUITE];

export default async function setup(project: TestProject): Promise<void> {
  const guests = (process.env.HPVM_GUESTS ?? GUESTS.join(',')).split(',');
  for (const g of guests) if (!GUESTS.includes(g)) throw new Error(`HPVM_GUESTS: unknown guest ${g} (${GUESTS.join(', ')})`);
  const notPicked = (g: string) => `guest ${g} not in HPVM_GUESTS=${guests.join(',')}`;
  const missing = missingPrerequisites();
  const cannot = missing.length ? `VM suite cannot run here: missing ${missing.join(', ')}` : '';
  if (cannot && process.env.CI === 'true') throw new Error(`${cannot} (CI=true: the VM gate fails rather than skips)`);
  if (cannot) console.warn(`\n*** ${cannot}: every VM check is SKIPPED ***\n`);
  for (const g of GUESTS.filter((x) => !guests.includes(x))) console.warn(`\n*** ${notPicked(g)}: its checks are SKIPPED ***\n`);

  const given = process.env.HPVM_SESSION;
  const trixie = guests.includes('trixie') ? (given ? resolve(given) : cannot ? '' : await runLab(labOptionsFromEnv())) : '';
  project.provide('vmSession', trixie);
  project.provide('vmSkip', trixie ? '' : guests.includes('trixie') ? cannot : notPicked('trixie'));

  const givenLegacy = process.env.HPVM_LEGACY_SESSION;
  const legacy = guests.includes(LEGACY_SUITE) ? (givenLegacy ? resolve(givenLegacy) : cannot ? '' : await runLegacyLab(legacyOptionsFromEnv())) : '';
  project.provide('vmLegacySession', legacy);
  project.provide('vmLegacySkip', legacy ? '' : guests.includes(LEGACY_SUITE) ? cannot : notPicked(LEGACY_SUITE));
}
