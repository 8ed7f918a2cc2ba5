// Golden-file end-to-end test, node_exporter style: the real exporter on each fixture tree, scraped
// over HTTP, compared with test/golden/<fixture>.prom; every body the exporter serves (each fixture,
// the real host, replay; Prometheus text and OpenMetrics) is linted whole by the real promtool.
// UPDATE_GOLDEN=1 rewrites the golden files (npm run test:golden:update).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, fixtureArgs, ROOT, startExporter, type RunningExporter } from '../helpers/exporter.js';
import { checkMetrics, familyTypes, HAVE_PROMTOOL, parseOpenMetrics, PROMTOOL, sampledFamilyTypes } from './promtool.js';

const FIXTURES = ['legacy-5.4', 'v6.1', 'v6.13', 'no-nvme', 'garbage'];
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const OPENMETRICS = { Accept: 'application/openmetrics-text; version=1.0.0' };
const IS_ROOT = process.getuid?.() === 0;

/** Pinned families: prom-client's process_* and nodejs_* values change from run to run (they are linted, not pinned). */
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

async function scrape(url: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  return res.text();
}

/** The whole body, both formats, through promtool: the lint a user's CI would run on our /metrics. */
function lintsClean(name: string, bodies: () => { text: string; openMetrics: string }): void {
  it.skipIf(!HAVE_PROMTOOL)(`${name}: promtool check metrics passes on the whole Prometheus text`, () => {
    const r = checkMetrics(bodies().text);
    expect(r.output, 'promtool complaints').toBe('');
    expect(r.status).toBe(0);
  });
  it.skipIf(!HAVE_PROMTOOL)(`${name}: Prometheus's OpenMetrics parser accepts the OpenMetrics body, same families`, () => {
    const { text, openMetrics } = bodies();
    const r = parseOpenMetrics(openMetrics);
    expect(r.output, 'OpenMetrics parse errors').toBe('');
    expect(r.status).toBe(0);
    // The two bodies come from two scrapes: the exporter's own families are the same in both; a
    // runtime family (nodejs_active_requests) may be empty, or left out, at one of them, so runtime
    // families agree in type where both have them and differ in at most two names.
    const own = (fs: string[]) => fs.filter((f) => f.startsWith('hybridpoll_'));
    expect(own(sampledFamilyTypes(openMetrics))).toEqual(own(sampledFamilyTypes(text)));
    const types = (body: string) => new Map(familyTypes(body).map((f) => f.split(' ') as [string, string]));
    const [a, b] = [types(text), types(openMetrics)];
    const both = [...a.keys()].filter((n) => b.has(n));
    expect(both.filter((n) => a.get(n) !== b.get(n)), 'families typed differently').toEqual([]);
    expect(a.size + b.size - 2 * both.length, 'families in one body only').toBeLessThanOrEqual(2);
  });
}

it('every fixture tree under test/fixtures has a golden file here', () => {
  const trees = readdirSync(resolve(ROOT, 'test/fixtures'), { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  expect(trees.sort()).toEqual([...FIXTURES].sort());
});

describe.each(FIXTURES)('fixture %s', (fixture) => {
  let exp: RunningExporter;
  let body: string;
  let openMetrics: string;

  beforeAll(async () => {
    exp = await startExporter([...fixtureArgs(fixture), '--no-collector.bpf']);
    body = await scrape(exp.url);
    openMetrics = await scrape(exp.url, OPENMETRICS);
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

  lintsClean(fixture, () => ({ text: body, openMetrics }));

  it('serves OpenMetrics when asked', async () => {
    const res = await fetch(`${exp.url}/metrics`, { headers: OPENMETRICS });
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

// The real host: /sys, /sys/kernel/debug, and the BPF collector when root can load it.
describe('the real host', () => {
  let exp: RunningExporter;
  let body = '';
  let openMetrics = '';

  beforeAll(async () => {
    exp = await startExporter([]);
    // Wait for the collection after the BPF loader came up (its families then exist), 10 s at most.
    for (let i = 0; i < 50; i++) {
      body = await scrape(exp.url);
      if (!IS_ROOT || /^hybridpoll_bpf_status_info\{state="running"/m.test(body)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    body = await scrape(exp.url);
    openMetrics = await scrape(exp.url, OPENMETRICS);
  }, 20_000);
  afterAll(() => exp?.stop());

  it.skipIf(!IS_ROOT)('serves the BPF families as root', () => {
    expect(body).toMatch(/^hybridpoll_bpf_status_info\{state="running",reason="ok"\} 1$/m);
  });
  lintsClean('host', () => ({ text: body, openMetrics }));
});

/** startExporter() for `replay`, which logs "replaying address=" where serve logs "listening address=". */
async function startReplay(args: string[]): Promise<RunningExporter> {
  const proc = spawn(process.execPath, [CLI, 'replay', ...args, '--web.listen-address=127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`replay did not start within 15 s:\n${stderr}`)), 15_000);
    proc.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /msg=replaying address=([\d.]+:\d+)/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        ok(`http://${m[1]}`);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`replay exited with ${code}:\n${stderr}`));
    });
  });
  return {
    url,
    proc,
    logs: () => stderr,
    stop: () => new Promise<void>((done) => (proc.exitCode !== null || proc.signalCode !== null ? done() : (proc.once('exit', () => done()), proc.kill('SIGTERM')))),
  };
}

// replay: the shipped synthetic recording, every histogram with all its buckets.
describe('replay', () => {
  let exp: RunningExporter;
  let body = '';
  let openMetrics = '';

  beforeAll(async () => {
    exp = await startReplay(['--speed', '10', '--bpf.histograms', 'all']);
    // The model needs two frames (5 s apart in the recording, 0.5 s at --speed 10).
    for (let i = 0; i < 50 && !/^hybridpoll_wasted_cpu_seconds_total/m.test(body); i++) {
      await new Promise((r) => setTimeout(r, 200));
      body = await scrape(exp.url);
    }
    openMetrics = await scrape(exp.url, OPENMETRICS);
  }, 20_000);
  afterAll(() => exp?.stop());

  it('serves the model families', () => {
    expect(body).toMatch(/^hybridpoll_wasted_cpu_seconds_total\{/m);
  });
  lintsClean('replay', () => ({ text: body, openMetrics }));
});

if (!HAVE_PROMTOOL) {
  console.warn(`\n*** SKIPPED promtool checks: ${PROMTOOL} missing (apt-get install prometheus) ***\n`);
}

