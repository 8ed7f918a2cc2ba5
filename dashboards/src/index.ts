// The dashboards of the bundle and the files they are written to.
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import type { BundleConfig } from '../../deploy/prometheus/src/config.js';
import { yamlText } from '../../deploy/prometheus/src/bundle.js';
import { deviceDashboard } from './device.js';
import { fleetDashboard } from './fleet.js';
import { healthDashboard } from './health.js';

export const DASHBOARDS: Record<string, (c: BundleConfig) => Dashboard> = {
  'fleet-overview': fleetDashboard,
  'device-drilldown': deviceDashboard,
  'exporter-health': healthDashboard,
};

export function dashboardJson(d: Dashboard): string {
  return JSON.stringify(d, null, 2) + '\n';
}

/** One ConfigMap per dashboard, labelled for the Grafana sidecar (kiwigrid k8s-sidecar). */
export function dashboardConfigMaps(c: BundleConfig): object[] {
  return Object.entries(DASHBOARDS).map(([name, build]) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `hybridpoll-dashboard-${name}`,
      labels: { grafana_dashboard: '1', 'app.kubernetes.io/name': 'hybridpoll-exporter', 'app.kubernetes.io/component': 'dashboards' },
      // Folder, when the sidecar runs with folderAnnotation=grafana_folder (kube-prometheus-stack does).
      annotations: { grafana_folder: 'HybridPoll' },
    },
    data: { [`hybridpoll-${name}.json`]: dashboardJson(build(c)) },
  }));
}

/** Output path (relative to the repository root) → content. */
export function dashboardFiles(c: BundleConfig): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [name, build] of Object.entries(DASHBOARDS)) files[`dashboards/${name}.json`] = dashboardJson(build(c));
  files['deploy/kubernetes/base/grafana-dashboards.yaml'] = dashboardConfigMaps(c)
    .map((m, i) => (i === 0 ? yamlText(m) : yamlText(m).replace(/^#.*\n/, '')))
    .join('---\n');
  return files;
}
