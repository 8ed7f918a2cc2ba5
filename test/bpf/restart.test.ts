// The real exporter (dist/cli.js serve) with the real loader: SIGKILL the loader mid-run while fio
// drives a loop device. /metrics keeps answering 200, the loader is back within 5 s, and no counter,
// histogram bucket, _sum or _count ever goes down. Needs root, BTF, fio.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExporter, type RunningExporter } from '../helpers/exporter.js';
import { bpfSkipReason, ensureLoader, fio, loaderPid, loopDevice, programIdsOf, stillLoaded, warnSkip, type LoopDevice } from './helpers.js';

const skip = warnSkip('test/bpf/restart.test.ts', bpfSkipReason(['fio', 'losetup']));

/** Monotonic samples (counters, histogram series) of a scrape: "name{labels}" → value. */
function monotonicSamples(text: string): Map<string, number> {
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1]!, m[2]!);
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/gm)) {
    const name = m[1]!;
    const fam = name.replace(/_(bucket|sum|count)$/, '');
    const monotonic = types.get(name) === 'counter' || (types.get(fam) === 'histogram' && fam !== name);
    if (monotonic && name.startsWith('hybridpoll_')) out.set(name + (m[2] ?? ''), Number(m[3]));
  }
  return out;
}

const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

describe.skipIf(skip)('exporter survives SIGKILL of its loader (root)', () => {
  let loop: LoopDevice;
  let exp: RunningExporter;
  const ids: number[] = []; // every program any of the exporter's loaders held

  beforeAll(async () => {
    ensureLoader();
    loop = loopDevice(64);
    // Collection every 250 ms: the scrapes below follow the loader's restart closely.
    exp = await startExporter(['--bpf.enable=on', '--collector.interval=250ms']);
  });
  afterAll(async () => {
    await exp?.stop();
    loop?.detach();
  });

  it('keeps answering, restarts the loader within 5 s, and no exported counter goes down', async () => {
    const scrape = async () => {
      const r = await fetch(`${exp.url}/metrics`);
      return { status: r.status, text: await r.text() };
    };
    const end = Date.now() + 20_000;
    while (gauge((await scrape()).text, 'hybridpoll_bpf_up') !== 1) {
      if (Date.now() > end) throw new Error(`loader never came up:\n${exp.logs()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const load = fio(loop.path, { seconds: 8, iodepth: 4, rateIops: 3000 });
    await new Promise((r) => setTimeout(r, 2000));

    const scrapes: Map<string, number>[] = [];
    const first = await scrape();
    expect(first.status).toBe(200);
    scrapes.push(monotonicSamples(first.text));
    const killed = loaderPid(exp.logs());
    ids.push(...programIdsOf(killed));
    process.kill(killed, 'SIGKILL');
    const killedAt = Date.now();

    let backAfterMs = -1;
    while (Date.now() - killedAt < 8000) {
      const s = await scrape();
      expect(s.status).toBe(200);
      scrapes.push(monotonicSamples(s.text));
      if (backAfterMs < 0 && gauge(s.text, 'hybridpoll_bpf_up') === 1 && gauge(s.text, 'hybridpoll_bpf_loader_restarts_total') === 1) {
        backAfterMs = Date.now() - killedAt;
        await new Promise((r) => setTimeout(r, 1000)); // let the new loader count some I/O
        const after = await scrape();
        scrapes.push(monotonicSamples(after.text));
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await load;
    ids.push(...programIdsOf(loaderPid(exp.logs())));
    console.info(`loader back ${backAfterMs} ms after SIGKILL; ${scrapes.length} scrapes`);
    expect(backAfterMs).toBeGreaterThan(0);
    expect(backAfterMs).toBeLessThan(5000);

    // every series seen before the kill is back, and nothing went down between any two scrapes
    const before = scrapes[0]!;
    const last = scrapes.at(-1)!;
    expect([...before.keys()].filter((k) => !last.has(k))).toEqual([]);
    const loopIos = [...before.keys()].find((k) => k.startsWith('hybridpoll_io_latency_seconds_count{') && k.includes(`device="${loop.path.slice(5)}"`));
    expect(loopIos, 'the loop device has an I/O count').toBeDefined();
    expect(last.get(loopIos!)!).toBeGreaterThan(before.get(loopIos!)!);
    for (let i = 1; i < scrapes.length; i++) {
      for (const [k, v] of scrapes[i]!) {
        const p = scrapes.slice(0, i).reverse().find((s) => s.has(k))?.get(k);
        if (p !== undefined) expect(v, `${k} went down after scrape ${i}`).toBeGreaterThanOrEqual(p);
      }
    }
  });

  it('leaves no BPF program behind when the exporter stops', async () => {
    await exp.stop();
    expect(ids.length).toBeGreaterThanOrEqual(12); // two loaders
    expect(await stillLoaded(ids)).toEqual([]);
  });
});
