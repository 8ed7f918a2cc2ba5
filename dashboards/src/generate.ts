// `npm run dashboards [-- --flag value ...]`: writes dashboards/*.json and the Grafana sidecar
// ConfigMaps. Takes the same selector flags as `npm run rules`, so both stay in step.
import { fileURLToPath } from 'node:url';
import { configCommand, configOf, writeFiles } from '../../deploy/prometheus/src/generate.js';
import { dashboardFiles } from './index.js';

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const cmd = configCommand('dashboards', 'generate the Grafana dashboards and their ConfigMaps');
  cmd.action(async (o: Record<string, unknown>) => writeFiles(o['out'] as string, dashboardFiles(configOf(o))));
  await cmd.parseAsync(process.argv);
}
