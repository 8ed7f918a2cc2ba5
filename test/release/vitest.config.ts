// npm run test:ship: the container image and the release tarball, built and run for real
// (scripts/container-build.sh, scripts/release.sh). Not part of `npm test`: a cold run builds
// Debian roots and the image (about 10+ minutes on 2 cores); .ci/run runs it after `npm test`.
import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: resolve(import.meta.dirname, '../..'),
  test: {
    include: ['test/release/**/*.shiptest.ts'],
    testTimeout: 60_000,
    hookTimeout: 1_800_000,
    // Both load BPF programs on the host kernel and compete for the CPU: one file at a time.
    fileParallelism: false,
    // A worker that dies is named (and, through test/run.mjs, its files run once more).
    setupFiles: ['test/setup/workerExit.ts'],
    reporters: ['default', 'test/setup/lostFiles.ts'],
  },
});
