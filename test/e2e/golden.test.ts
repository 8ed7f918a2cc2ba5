// Golden-file end-to-end test, node_exporter style: the real exporter on each fixture tree, scraped
// over HTTP, compared with test/golden/<fixture>.prom, then checked by `promtool check metrics`.
// UPDATE_GOLDEN=1 rewrites the golden files (npm run test:golden:update).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureArgs, ROOT, startExporter, type RunningExporter } from '../helpers/exporter.js';

const FIXTURES = ['legacy-5.4', 'v6.1', 'v6.13', 'no-nvme', 'garbage'];
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const PROMTOOL = '/usr/bin/promtool';

/** Our own families: prom-client's process_* and nodejs_* metrics are not ours to lint or pin. */
function ownMetrics(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/^(# (HELP|TYPE) )?(process_|nodejs_)/.test(l))
    .join('\n');
}

/** Drop what legitimately changes between runs (node_exporter's skip_re does the same). */
function normalise(text: string): string {
  return ownMetrics(text)
    .split('\n')
    .filter((l) => !/^hybridpoll_scrape_collector_duration_seconds\{/.test(l))
    .map((l) => l.replace(/^(hybridpoll_build_info)\{.*\} 1$/, '$1{…} 1'))
    .map((l) => l.replace(/^(hybridpoll_snapshot_age_seconds) \S+$/, '$1 …'))
    // Blank separators depend on which process_/nodejs_ families exist yet (GC metrics appear late).
    .filter((l) => l !== '')
    .join('\n');
}

describe.each(FIXTURES)('fixture %s', (fixture) => {
  let exp: RunningExporter;
  let body: string;

  beforeAll(async () => {
    exp = await startExporter([...fixtureArgs(fixture), '--no-collector.bpf']);
    const res = await fetch(`${exp.url}/metrics`);
    expect(res.status).toBe(200);
    body = await res.text();
  });
  afterAll(() => exp?.stop());

  it('matches the golden file', () => {
    const golden = resolve(ROOT, 'test/golden', `${fixture}.prom`);
    const got = normalise(body);
    if (UPDATE || !existsSync(golden)) {
      writeFileSync(golden, got);
      if (!UPDATE) throw new Error(`golden file ${golden} was missing and has been written; review and commit it`);
    }
    expect(got).toBe(readFileSync(golden, 'utf8'));
  });

  it.skipIf(!existsSync(PROMTOOL))('passes promtool check metrics', () => {
    const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: ownMetrics(body), encoding: 'utf8' });
    expect(r.stdout + r.stderr, 'promtool complaints').toBe('');
    expect(r.status).toBe(0);
  });

  it('serves OpenMetrics when asked', async () => {
    const res = await fetch(`${exp.url}/metrics`, { headers: { Accept: 'application/openmetrics-text; version=1.0.0' } });
    expect(res.headers.get('content-type')).toMatch(/application\/openmetrics-text/);
    const text = await res.text();
    expect(text.endsWith('# EOF\n')).toBe(true);
  });

  it('answers / with each source and its state', async () => {
    const html = await (await fetch(`${exp.url}/`)).text();
    for (const c of ['sysfs', 'debugfs', 'era']) expect(html).toContain(`<td>${c}</td>`);
    expect(html).toContain('href="/metrics"');
  });
});

if (!existsSync(PROMTOOL)) {
  console.warn(`\n*** SKIPPED promtool checks: ${PROMTOOL} missing (apt-get install prometheus) ***\n`);
}

