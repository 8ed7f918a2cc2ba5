// The container recipe: scripts/container-build.sh performs the Dockerfile's steps without Docker
// (no engine here) and smoke-runs the staged exporter. Both must list the same steps, so a change
// to one without the other fails here.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/metricsDoc.js';
import { requireBinary } from './lib/tools.js';

const dockerfile = readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8');
const script = readFileSync(resolve(ROOT, 'scripts/container-build.sh'), 'utf8');
const toolchain = ['clang', 'bpftool', 'gcc'].every((t) => requireBinary(t, 'scripts/container-build.sh (BPF toolchain)'));

describe('container image', () => {
  it('the Dockerfile and scripts/container-build.sh list the same steps in the same order', () => {
    const inDockerfile = [...dockerfile.matchAll(/^# step: ([\w-]+)/gm)].map((m) => m[1]);
    const inScript = [...script.matchAll(/^step ([\w-]+)$/gm)].map((m) => m[1]);
    expect(inDockerfile.length).toBeGreaterThanOrEqual(6);
    expect(inScript).toEqual(inDockerfile);
  });

  it('the Dockerfile is multi-stage, slim at run time, with a HEALTHCHECK on /healthz', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(3);
    expect(dockerfile).toMatch(/^ARG RUNTIME_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    // The runtime stage installs nothing: everything comes from the build stages.
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).not.toMatch(/^RUN /m);
  });

  it.skipIf(!toolchain)('scripts/container-build.sh builds and smoke-runs the staged image tree', () => {
    const stage = mkdtempSync(join(tmpdir(), 'hybridpoll-container-'));
    try {
      const r = spawnSync('bash', [resolve(ROOT, 'scripts/container-build.sh')], {
        cwd: ROOT,
        env: { ...process.env, STAGE: stage },
        encoding: 'utf8',
        timeout: 540_000,
      });
      const out = `${r.stdout}${r.stderr}`;
      expect(r.status, out).toBe(0);
      expect(out).toContain('linked statically');
      expect(out).toMatch(/ok: staged exporter answered \/healthz and served \d+ samples from replay/);
    } finally {
      rmSync(stage, { recursive: true, force: true });
    }
  }, 600_000);
});
