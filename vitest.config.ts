import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/setup/build.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests share the kernel (BPF programs, loop devices): run files one at a time.
    fileParallelism: false,
    // A worker that dies is named (and, through test/run.mjs, its files run once more).
    setupFiles: ['test/setup/workerExit.ts'],
    reporters: ['default', 'test/setup/lostFiles.ts'],
  },
});
