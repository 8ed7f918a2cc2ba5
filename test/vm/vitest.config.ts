// npm run test:vm: the guest-VM truth checks (issue 5). Not part of the default `npm test`: it
// builds and boots a QEMU guest (cold ~2 min build; the session itself several minutes under TCG).
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: resolve(import.meta.dirname, '../..'),
  test: {
    include: ['test/vm/**/*.vmtest.ts'],
    globalSetup: ['test/vm/setup.ts'],
    // The global setup boots the guest and runs every workload; the tests only compare figures.
    hookTimeout: 60_000,
    testTimeout: 60_000,
    fileParallelism: false,
    // A worker that dies is named (and, through test/run.mjs, its files run once more).
    setupFiles: ['test/setup/workerExit.ts'],
    reporters: ['default', 'test/setup/lostFiles.ts'],
  },
});
