// The report for machines: the Report object as JSON (format "hybridpoll-report", version 1; all
// times in ns, as in the model's ModelTarget; windows and timestamps ISO 8601).
import type { Report } from './data.js';

export function renderJson(r: Report): string {
  return JSON.stringify(r, null, 2) + '\n';
}
