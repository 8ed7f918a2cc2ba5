// Kubernetes manifests: rendered with `kubectl kustomize` (offline), validated against the
// Kubernetes and prometheus-operator schemas, and checked for the least-privilege promises.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, ServiceAccount } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { prometheusRule } from '../../deploy/prometheus/src/bundle.js';
import { DEFAULT_CONFIG } from '../../deploy/prometheus/src/config.js';
import { ROOT } from '../helpers/metricsDoc.js';
import { requireBinary } from './lib/tools.js';

const kubectl = requireBinary('kubectl', 'rendering the kustomizations');
const K8S = resolve(ROOT, 'deploy/kubernetes');

type Doc = any;

function render(dir: string): Doc[] {
  const r = spawnSync(kubectl!, ['kustomize', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir} failed:\n${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS());
}

/** An overlay in a temp dir: base plus the given components. */
function renderWithComponents(components: string[]): Doc[] {
  const dir = mkdtempSync(join(tmpdir(), 'hybridpoll-kustomize-'));
  try {
    const rel = (p: string) => relative(dir, resolve(K8S, p));
    writeFileSync(join(dir, 'kustomization.yaml'),
      `resources:\n  - ${rel('base')}\ncomponents:\n${components.map((c) => `  - ${rel(`components/${c}`)}`).join('\n')}\n`);
    return render(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const MODELS: Record<string, new (d: Doc) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/DaemonSet': DaemonSet,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

function validateAll(docs: Doc[]): void {
  for (const d of docs) {
    const Model = MODELS[`${d.apiVersion}/${d.kind}`];
    expect(Model, `a schema for ${d.apiVersion} ${d.kind}`).toBeDefined();
    expect(() => new Model!(d).validate(), `${d.kind}/${d.metadata.name}`).not.toThrow();
  }
}

const daemonSet = (docs: Doc[]) => docs.find((d) => d.kind === 'DaemonSet');
const container = (docs: Doc[]) => daemonSet(docs).spec.template.spec.containers[0];

describe.skipIf(!kubectl)('kubernetes manifests', () => {
  const base = kubectl ? render(resolve(K8S, 'base')) : [];
  const overlay = kubectl ? render(resolve(K8S, 'overlays/example')) : [];

  it('render to the expected objects', () => {
    const kinds = (docs: Doc[]) => docs.map((d) => d.kind).sort();
    expect(kinds(base)).toEqual(['ConfigMap', 'ConfigMap', 'ConfigMap', 'DaemonSet', 'PodMonitor', 'PrometheusRule', 'ServiceAccount']);
    expect(kinds(overlay)).toEqual(kinds(base));
  });

  it('validate against the Kubernetes and prometheus-operator schemas', () => {
    validateAll(base);
    validateAll(overlay);
    validateAll(renderWithComponents(['kernel-5.8-to-5.10']));
    validateAll(renderWithComponents(['kernel-before-5.8']));
  });

  it('the schema check itself rejects a broken object', () => {
    const broken = structuredClone(daemonSet(base));
    broken.spec.template.spec.containers[0].securityContext.privileged = 'no';
    expect(() => new DaemonSet(broken).validate()).toThrow(/privileged/);
  });

  it('nothing asks for privileged: true, host PID or host network', () => {
    for (const docs of [base, overlay]) {
      const text = JSON.stringify(docs);
      expect(text).not.toMatch(/"privileged":\s*true/);
      const spec = daemonSet(docs).spec.template.spec;
      expect(spec.hostPID).toBe(false);
      expect(spec.hostNetwork).toBe(false);
    }
  });

  it('the exporter runs with drop ALL + BPF, PERFMON, read-only root, read-only host mounts', () => {
    const c = container(base);
    expect(c.securityContext.capabilities).toEqual({ drop: ['ALL'], add: ['BPF', 'PERFMON'] });
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
    const volumes = Object.fromEntries(daemonSet(base).spec.template.spec.volumes.map((v: Doc) => [v.name, v]));
    const hostMounts = c.volumeMounts.filter((m: Doc) => volumes[m.name].hostPath);
    expect(hostMounts.map((m: Doc) => volumes[m.name].hostPath.path).sort()).toEqual(['/sys', '/sys/kernel/btf', '/sys/kernel/debug', '/sys/kernel/tracing']);
    for (const m of hostMounts) expect(m.readOnly, m.name).toBe(true);
    expect(c.resources.requests).toBeDefined();
    expect(c.resources.limits).toBeDefined();
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    expect(daemonSet(base).spec.template.spec.tolerations).toEqual([{ operator: 'Exists' }]);
  });

  it('the components for older kernels add only what they document', () => {
    expect(container(renderWithComponents(['kernel-5.8-to-5.10'])).securityContext.capabilities.add).toEqual(['BPF', 'PERFMON', 'SYS_RESOURCE']);
    const old = container(renderWithComponents(['kernel-before-5.8'])).securityContext;
    expect(old.capabilities).toEqual({ drop: ['ALL'], add: ['SYS_ADMIN', 'SYS_RESOURCE'] });
    expect(old.privileged).toBe(false);
  });

  it('the overlay labels the PodMonitor and PrometheusRule for kube-prometheus-stack and sets the namespace', () => {
    for (const d of overlay) {
      expect(d.metadata.namespace, d.kind).toBe('monitoring');
      if (d.kind === 'PodMonitor' || d.kind === 'PrometheusRule') expect(d.metadata.labels.release).toBe('kube-prometheus-stack');
    }
  });

  it('the PodMonitor scrapes the DaemonSet\'s pods and names them as the rules expect', () => {
    const pm = base.find((d) => d.kind === 'PodMonitor');
    const podLabels = daemonSet(base).spec.template.metadata.labels;
    for (const [k, v] of Object.entries(pm.spec.selector.matchLabels)) expect(podLabels[k]).toBe(v);
    expect(pm.spec.podMetricsEndpoints[0].port).toBe(container(base).ports[0].name);
    const relabel = pm.spec.podMetricsEndpoints[0].relabelings;
    expect(relabel).toContainEqual({ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: DEFAULT_CONFIG.nodeLabel });
    expect(relabel).toContainEqual({ targetLabel: 'job', replacement: 'hybridpoll-exporter' });
    expect(DEFAULT_CONFIG.selector).toBe('job="hybridpoll-exporter"');
  });

  it('the PrometheusRule is the generated one and the dashboards carry the sidecar label', () => {
    const rule = base.find((d) => d.kind === 'PrometheusRule');
    expect(rule.spec).toEqual(prometheusRule(DEFAULT_CONFIG).spec);
    const maps = base.filter((d) => d.kind === 'ConfigMap');
    for (const m of maps) expect(m.metadata.labels.grafana_dashboard).toBe('1');
  });
});
