// --bpf.buckets reaches the exposition of the real exporter (it was parsed but never passed to the
// HTTP layer): `all` exposes four boundaries per power of two, `pow2` one.
import { resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { leaks, scrape, startExporter, systemState, type Exporter, type SystemState } from './helpers/proc.js';
import { makeTree, type Tree } from './helpers/tree.js';

const FAKE = resolve(import.meta.dirname, 'fixtures/fake-loader.mjs');
const IS_ROOT = process.getuid?.() === 0;
if (!IS_ROOT) console.warn('\n*** SKIPPED --bpf.buckets test: the BPF collector starts a loader only as root ***\n');

describe.skipIf(!IS_ROOT)('--bpf.buckets', () => {
  let exp: Exporter | undefined;
  let before: SystemState;
  let tree: Tree;
  beforeEach(() => {
    before = systemState();
    tree = makeTree('v6.1');
  });
  afterEach(async () => {
    const problems = await leaks(before, exp);
    exp = undefined;
    tree.dispose();
    expect(problems).toEqual([]);
  });

  const bucketsOf = async (keep: string): Promise<number> => {
    exp = await startExporter([...tree.args, '--bpf.enable=on', `--bpf.loader=${FAKE}`, `--bpf.buckets=${keep}`], { env: { ...process.env, HP_FAKE_DEVICES: '1' } });
    for (let i = 0; i < 100; i++) {
      const m = await scrape(exp.url);
      const n = m.samples.filter((s) => s.name === 'hybridpoll_io_latency_seconds_bucket').length;
      if (n > 0) {
        await exp.stop();
        return n;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no io_latency histogram:\n${exp.logs()}`);
  };

  it('all exposes about four times the boundaries of pow2', async () => {
    const pow2 = await bucketsOf('pow2');
    const all = await bucketsOf('all');
    // Below the +Inf bucket, every power of two has four grid boundaries and one pow2 boundary.
    expect(all - 1).toBeGreaterThanOrEqual(3 * (pow2 - 1));
    expect(all - 1).toBeLessThanOrEqual(4 * (pow2 - 1));
  });
});
