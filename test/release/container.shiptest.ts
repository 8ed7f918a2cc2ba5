// The container image, for real: scripts/container-build.sh builds the Dockerfile with buildah (on
// local bases made from Debian packages, cached), runs it with podman with the DaemonSet's
// capabilities, mounts and arguments, and checks that the BPF collector attaches and that each
// missing capability degrades as documented (test/bundle/container.test.ts checks the DaemonSet
// still states what the script runs). Missing prerequisites skip loudly, and fail under CI=true.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/exporter.js';
import { findBinary } from '../bundle/lib/tools.js';

const missing = [
  ...['buildah', 'podman', 'runc', 'debootstrap', 'npm', 'curl'].filter((t) => !findBinary(t)),
  ...(process.getuid?.() === 0 ? [] : ['root']),
];
const CI = process.env['CI'] === 'true';
if (missing.length && !CI) console.warn(`\n*** SKIPPING the container image build and run: missing ${missing.join(', ')} (bash scripts/setup.sh as root installs them) ***\n`);

describe('container image', () => {
  it.skipIf(missing.length > 0 && !CI)('builds the image with buildah and runs it with podman as the DaemonSet does', () => {
    expect(missing, 'prerequisites of scripts/container-build.sh (CI=true: they must be there)').toEqual([]);
    const r = spawnSync('bash', [resolve(ROOT, 'scripts/container-build.sh')], { cwd: ROOT, encoding: 'utf8', timeout: 1_500_000 });
    const out = `${r.stdout}${r.stderr}`;
    expect(r.status, out).toBe(0);
    expect(out).toMatch(/ok: CAP_BPF\+CAP_PERFMON \(CapEff \w+\): BPF collector running, [1-9]\d* programs attached, healthcheck passed/);
    for (const cap of ['BPF', 'PERFMON']) expect(out).toContain(`ok: without CAP_${cap}: still serving, bpf_status_info state=disabled reason=not_privileged`);
    const size = /ok: image \S+ (\d+) MiB/.exec(out);
    expect(size, out).not.toBeNull();
    console.log(`container image: ${size![1]} MiB; ${out.split('\n').filter((l) => /\(\d+ s\)$/.test(l)).join('; ')}`);
  }, 1_600_000);
});
