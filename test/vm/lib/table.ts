// The checks as a Markdown table (docs/validation.md, the lab CLI).
import type { CheckResult } from './checks.js';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function checksTable(checks: CheckResult[]): string {
  const rows = checks.map((c) => `| ${c.scenario} | ${c.id} | ${cell(c.title)} | ${cell(c.measured)} | ${cell(c.bound)} | ${c.skipped ? `skipped (premise violated; would ${c.pass ? 'pass' : 'fail'})` : c.pass ? 'pass' : '**FAIL**'} |`);
  return ['| workload | check | what | measured | bound | result |', '|---|---|---|---|---|---|', ...rows].join('\n');
}
