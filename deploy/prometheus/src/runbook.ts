// One post-processing step adds runbook_url to every alert that has none (kubernetes-mixin's
// add-runbook-links): the pattern's %s becomes the lower-cased alert name, which is the GitHub
// anchor of the alert's heading in docs/runbook.md.
import type { AlertingRule, RuleGroup } from './rules.js';

export function runbookAnchor(alert: string): string {
  return alert.toLowerCase();
}

export function addRunbookLinks(group: RuleGroup<AlertingRule>, pattern: string): RuleGroup<AlertingRule> {
  return {
    ...group,
    rules: group.rules.map((r) =>
      r.annotations['runbook_url']
        ? r
        : { ...r, annotations: { ...r.annotations, runbook_url: pattern.replace('%s', runbookAnchor(r.alert)) } },
    ),
  };
}
