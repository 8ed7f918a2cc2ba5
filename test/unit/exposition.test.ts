// The direct serializer against prom-client's own Registry (the renderer it replaced) as the
// oracle: the same families must give the same bytes, in both formats, for arbitrary names, help
// texts, label values (quotes, backslashes, newlines, non-ASCII), values (NaN, ±Inf, -0) and histograms.
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { fromPromClient, serialize, type Format } from '../../src/metrics/exposition.js';
import type { MetricFamily, Sample } from '../../src/metrics/family.js';
import { processRegistry, render } from '../../src/metrics/render.js';

const CT: Record<Format, string> = { prometheus: Registry.PROMETHEUS_CONTENT_TYPE, openmetrics: Registry.OPENMETRICS_CONTENT_TYPE };

/** The renderer before exposition.ts: every family through a prom-client Registry. */
async function viaPromClient(families: MetricFamily[], format: Format, extra: Awaited<ReturnType<Registry['getMetricsAsJSON']>> = []): Promise<string> {
  const reg = new Registry();
  reg.setContentType(CT[format] as never);
  for (const f of families) {
    if (f.samples.length === 0) continue;
    const metric = {
      name: f.name, help: f.help, type: f.type, aggregator: 'sum',
      get: async () => ({
        name: metric.name, help: f.help, type: f.type, aggregator: 'sum',
        values: f.samples.map((s) => ({ labels: s.labels, value: s.value, ...(s.suffix ? { metricName: f.name + s.suffix } : {}) })),
      }),
    };
    reg.registerMetric(metric as never);
  }
  for (const m of extra) {
    if (m.values.length === 0) continue;
    const metric = { name: m.name, help: m.help, type: String(m.type), aggregator: 'sum', get: async () => ({ ...m, name: metric.name }) };
    reg.registerMetric(metric as never);
  }
  return reg.metrics();
}

const labelName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/).filter((n) => n !== 'le');
// non-ASCII too: the serializer writes UTF-8 bytes itself (2-, 3- and 4-byte characters)
const labelValue = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('a"b', 'c\\d', 'e\nf', '\\"\n', '', 'é—😀', 'nvme0n1 ü'));
const value = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(NaN, Infinity, -Infinity, -0, 1e21, 5e-324));
const labels = fc.dictionary(labelName, labelValue, { maxKeys: 3 });
const help = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('back\\slash', 'new\nline', 'quote "x"'));

const simple = (type: 'gauge' | 'counter') =>
  fc.record({ base: fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/), help, samples: fc.array(fc.record({ labels, value }), { maxLength: 4 }) })
    .map(({ base, help, samples }): MetricFamily => ({ name: `hp_${base}${type === 'counter' ? '_total' : ''}`, help, type, samples }));

const histogram = fc.record({ base: fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/), help, series: fc.array(fc.record({ labels, les: fc.array(fc.nat(), { maxLength: 5 }), sum: value }), { maxLength: 3 }) })
  .map(({ base, help, series }): MetricFamily => {
    const samples: Sample[] = [];
    for (const s of series) {
      s.les.forEach((c, i) => samples.push({ labels: { ...s.labels, le: i === s.les.length - 1 ? '+Inf' : String(2 ** i / 1e9) }, value: c, suffix: '_bucket' }));
      samples.push({ labels: s.labels, value: s.sum, suffix: '_sum' }, { labels: s.labels, value: s.les.length, suffix: '_count' });
    }
    return { name: `hp_${base}_seconds`, help, type: 'histogram', samples };
  });

/** Distinct family names, as the exporter has (prom-client throws on a duplicate). */
const families = fc.uniqueArray(fc.oneof(simple('gauge'), simple('counter'), histogram), { selector: (f) => f.name, maxLength: 6 });

describe('direct exposition serializer', () => {
  for (const format of ['prometheus', 'openmetrics'] as const) {
    it(`writes the same bytes as prom-client (${format})`, async () => {
      await fc.assert(fc.asyncProperty(families, async (fams) => {
        expect(serialize(fams, format)).toBe(await viaPromClient(fams, format));
      }), { numRuns: 300 });
    });

    it(`writes prom-client's process metrics as prom-client does (${format})`, async () => {
      // One reading of the process metrics, written by both (their values change between reads).
      const json = await processRegistry().getMetricsAsJSON();
      const fams: MetricFamily[] = [{ name: 'hp_up', help: 'h', type: 'gauge', samples: [{ labels: {}, value: 1 }] }];
      const ours = serialize([...fams, ...json.map(fromPromClient)], format);
      expect(ours).toBe(await viaPromClient(fams, format, json));
      expect(ours).toMatch(/^process_cpu_user_seconds_total /m);
      expect(ours).toMatch(/^process_resident_memory_bytes \d+$/m);
    });
  }

  it('leaves out empty families and refuses a family name exposed twice', async () => {
    const f: MetricFamily = { name: 'hp_x', help: 'h', type: 'gauge', samples: [{ labels: {}, value: 2 }] };
    expect(serialize([{ ...f, name: 'hp_empty', samples: [] }, f], 'prometheus')).toBe('# HELP hp_x h\n# TYPE hp_x gauge\nhp_x 2\n');
    expect(() => serialize([f, f], 'prometheus')).toThrow(/hp_x exposed twice/);
    for (const format of ['prometheus', 'openmetrics'] as const) expect(serialize([], format)).toBe(await viaPromClient([], format));
    await expect(render([f, f], 'openmetrics')).rejects.toThrow(/twice/);
  });
});
