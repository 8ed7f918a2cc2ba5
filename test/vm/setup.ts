// Global setup of npm run test:vm: builds the lab, boots the guest once, runs every workload and
// hands the saved session to the checks. HPVM_SESSION=<file> re-checks a saved session without booting.
import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { labOptionsFromEnv, missingPrerequisites, runLab } from './lib/lab.js';

declare module 'vitest' {
  export interface ProvidedContext {
    vmSession: string;
    vmSkip: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  if (process.env.HPVM_SESSION) {
    project.provide('vmSession', resolve(process.env.HPVM_SESSION));
    project.provide('vmSkip', '');
    return;
  }
  const missing = missingPrerequisites();
  if (missing.length) {
    const reason = `VM suite cannot run here: missing ${missing.join(', ')}`;
    console.warn(`\n*** ${reason}: every VM check is SKIPPED ***\n`);
    project.provide('vmSession', '');
    project.provide('vmSkip', reason);
    return;
  }
  project.provide('vmSession', await runLab(labOptionsFromEnv()));
  project.provide('vmSkip', '');
}
