// The container image: scripts/container-build.sh builds the Dockerfile with buildah and runs it
// with podman with the DaemonSet's capabilities and mounts (test/release/container.shiptest.ts,
// npm run test:ship). Here, cheaply in every npm test: the Dockerfile still takes its bases as
// arguments, and the DaemonSet still states the capabilities, mounts and arguments the script
// runs the image with.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/metricsDoc.js';

const dockerfile = readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8');
const script = readFileSync(resolve(ROOT, 'scripts/container-build.sh'), 'utf8');
/** The script's run(): how it starts every container. */
const runFn = script.slice(script.indexOf('\nrun() {'), script.indexOf('\n}\n', script.indexOf('\nrun() {')));
const daemonset = parse(readFileSync(resolve(ROOT, 'deploy/kubernetes/base/daemonset.yaml'), 'utf8')) as {
  spec: { template: { spec: { containers: { args: string[]; securityContext: Record<string, unknown>; volumeMounts: { mountPath: string; readOnly?: boolean; name: string }[] }[]; volumes: { name: string; hostPath?: { path: string }; emptyDir?: unknown }[] } } };
};

describe('container image', () => {
  it('the Dockerfile is multi-stage, takes its bases as arguments, slim at run time, with a HEALTHCHECK', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(3);
    expect(dockerfile).toMatch(/^ARG BUILD_IMAGE=node:20-bookworm$/m);
    expect(dockerfile).toMatch(/^ARG RUNTIME_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    // The runtime stage installs nothing: everything comes from the build stages.
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).not.toMatch(/^RUN /m);
  });

  it('the DaemonSet states the capabilities, read-only root and host mounts the script runs the image with', () => {
    const pod = daemonset.spec.template.spec;
    const c = pod.containers[0]!;
    expect(c.securityContext).toMatchObject({ privileged: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'], add: ['BPF', 'PERFMON'] } });
    expect(runFn).toMatch(/--cap-drop ALL/);
    expect(script).toMatch(/^run "\$tag-full" BPF PERFMON$/m);
    expect(runFn).toMatch(/ --read-only /);
    expect(runFn).not.toMatch(/--privileged|--cap-add [A-Z]/);
    // Each host path the DaemonSet mounts read-only, the script mounts read-only at the same place.
    const hostPath = new Map(pod.volumes.filter((v) => v.hostPath).map((v) => [v.name, v.hostPath!.path]));
    const mounts = c.volumeMounts.filter((m) => hostPath.has(m.name));
    expect(mounts.length).toBeGreaterThanOrEqual(4);
    for (const m of mounts) {
      expect(m.readOnly, m.mountPath).toBe(true);
      expect(runFn).toContain(`-v ${hostPath.get(m.name)}:${m.mountPath}:ro`);
    }
    expect(c.volumeMounts.some((m) => m.mountPath === '/tmp') && runFn.includes('--tmpfs /tmp')).toBe(true);
    for (const a of c.args) expect(runFn).toContain(a);
  });

});
