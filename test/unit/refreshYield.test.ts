// A scrape that arrives while a 64-device refresh runs (model per device, families, serializing)
// is answered before that refresh ends, from the previous snapshot: the refresh yields to the
// event loop between devices and families. Asserted on the order of events and on how far the
// refresh had got, not on wall time.
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { BpfSnapshot, BucketHist } from '../../src/bpf/types.js';
import { ScrapeBodies } from '../../src/http/bodies.js';
import { createApp } from '../../src/http/server.js';
import { listenWeb } from '../../src/http/webServer.js';
import { createLogger } from '../../src/log.js';
import { histSum } from '../../src/model/hist.js';
import { EfficiencyModel } from '../../src/model/stage.js';
import { SnapshotEngine, type ModelStage } from '../../src/snapshot/engine.js';
import { Refresher } from '../../src/snapshot/refresher.js';
import type { Snapshot, SnapshotInputs } from '../../src/snapshot/types.js';
import { normal, prng, simulatePoller } from '../model/helpers.js';

const DEVICES = 64;

/** Cumulative BPF data of 64 hybrid-polling devices, advanced by one simulated interval per read. */
function host() {
  const cum = Array.from({ length: DEVICES }, () => ({ hists: {} as Record<string, BucketHist>, counters: {} as Record<string, number> }));
  const rand = prng(7);
  let t = 0;
  return (): SnapshotInputs => {
    t += 15;
    cum.forEach((c, i) => {
      const iv = simulatePoller({ n: 2000, D: () => normal(rand, 10_000 + 50 * i, 300), O: () => normal(rand, 1000, 100), sleepNs: 5000, cswNs: 1500 });
      for (const [k, h] of Object.entries(iv.hists)) c.hists[k] = c.hists[k] ? histSum(c.hists[k]!, h) : h;
      for (const [k, v] of Object.entries(iv.counters)) c.counters[k] = (c.counters[k] ?? 0) + v;
    });
    const devs = cum.map((_, i) => `259:${i}`);
    const bpf: BpfSnapshot = {
      takenAtNs: t * 1e9,
      pollPath: 'fentry',
      programs: {},
      devices: devs.map((dev, i) => ({ dev, hists: { ...cum[i]!.hists } })),
      rings: [],
      counters: {},
      deviceCounters: Object.fromEntries(devs.map((dev, i) => [dev, { ...cum[i]!.counters }])),
    };
    return {
      takenAtMs: Date.now(),
      bpf,
      bpfStatus: { mode: 'auto', state: 'running', cause: 'ok', reason: '', loaderRestarts: 0 },
      collectors: [],
      host: {
        features: {},
        era: { era: 'blkmq_hybrid', evidence: 'btf', reason: '' },
        devices: devs.map((dev, i) => ({ device: `nvme${i}n1`, devNum: dev, ioPollDelay: 0, errors: [] })),
      },
    };
  };
}

/** The efficiency model, counting the device steps it has finished in the current update. */
function countingModel() {
  const model = new EfficiencyModel({ windowSeconds: 60, latencyBudget: 0.01 });
  const state = { steps: 0 };
  const stage: ModelStage = {
    update: (s) => model.update(s),
    *updateSteps(s: Snapshot) {
      state.steps = 0;
      const inner = model.updateSteps(s);
      for (let r = inner.next(); ; r = inner.next()) {
        if (r.done) return r.value;
        state.steps += 1;
        yield;
      }
    },
  };
  return { stage, state };
}

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

describe('refresh loop yields', () => {
  it('a scrape issued during a 64-device refresh is answered before the refresh ends, from the previous snapshot', async () => {
    const log = createLogger('error', () => {});
    const read = host();
    const { stage, state } = countingModel();
    const engine = new SnapshotEngine(async () => read(), stage);
    const bodies = new ScrapeBodies({});
    const events: string[] = [];
    const refresher = new Refresher({
      take: () => engine.snapshot(),
      intervalMs: 3_600_000,
      // as serve prepares: the text and its deflated form, so a gzip scrape (fetch asks for gzip, as
      // Prometheus does) is answered from the cache; with the plain text only, the answer deflated
      // it on libuv's thread pool first, and on a loaded machine that job could finish after the
      // refresh's last turn (a CI run saw 'refresh 2 ready' first)
      prepare: async (s) => {
        await bodies.prepare(s);
        events.push(`refresh ${engine.reads} ready`);
      },
      log,
    });
    refresher.start();
    const app = createApp({ source: refresher, log, bodies });
    const server = listenWeb(app, { host: '127.0.0.1', port: 0, metricsPath: '/metrics' }, log);
    stop = async () => {
      refresher.stop();
      await new Promise((r) => server.close(r));
    };
    await new Promise<void>((r) => server.once('listening', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    await refresher.snapshot();
    // Second refresh: the model has a window now and analyses all 64 devices.
    refresher.requestNow();
    await refresher.snapshot(); // still the first one: requestNow's refresh is under way
    while (state.steps < 1 && refresher.refreshes < 2) await new Promise((r) => setImmediate(r));
    const stepsAtRequest = state.steps;
    const body = await fetch(url).then((r) => {
      events.push(`scrape answered after ${state.steps} model steps`);
      return r.text();
    });
    while (refresher.refreshes < 2) await new Promise((r) => setImmediate(r));
    expect(stepsAtRequest).toBeLessThan(DEVICES);
    expect(events[0]).toBe('refresh 1 ready');
    expect(events[1]).toMatch(/^scrape answered after \d+ model steps$/);
    expect(events[2]).toBe('refresh 2 ready');
    // served from refresh 1: no model output yet (one snapshot is no window)
    expect(body).toMatch(/^hybridpoll_device_info\{device="nvme63n1"/m);
    expect(body).not.toMatch(/^hybridpoll_optimal_sleep_seconds/m);
    // and refresh 2 did analyse the devices
    const after = await fetch(url).then((r) => r.text());
    expect(after.match(/^hybridpoll_optimal_sleep_seconds\{/gm)?.length).toBe(DEVICES);
  }, 60_000);
});
