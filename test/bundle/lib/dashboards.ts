// Walks dashboard JSON: the panels (rows excluded, nested rows included) and their queries.

export interface PanelJson {
  type: string;
  title?: string;
  description?: string;
  datasource?: { type?: string; uid?: string };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: { expr?: string; refId?: string; instant?: boolean; format?: string }[];
  panels?: PanelJson[];
}

export interface DashboardJson {
  uid: string;
  title: string;
  panels: PanelJson[];
  templating: { list: { name: string; type: string; query?: unknown }[] };
}

export function panelsOf(d: DashboardJson): PanelJson[] {
  return d.panels.flatMap((p) => (p.type === 'row' ? (p.panels ?? []) : [p]));
}
