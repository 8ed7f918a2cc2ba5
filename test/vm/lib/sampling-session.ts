// The guest side of the sampling check (sampling.ts): after the session's other runs, for each
// sample rate in turn, and N = 1 once more as the control, one exporter starts alone (the agent's
// /sampled routes) and every scenario runs once, scraped before and after and paused (SIGSTOP) during the run, as the lab's own
// exporter is (session.ts, scrapedRun). One exporter at a time: side by side, each loader's clock
// reads on the poll path would also time the programs of the others.
import type { Guest } from './guest.js';
import { CONTROL, SAMPLE_RATES, type SampledStop, type SamplingRun, type SamplingScenario, type SamplingSession } from './sampling.js';
import { deviceOf, runDriver } from './session.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function scrapeOne(g: Guest, rate: number): Promise<string> {
  const text = (await g.agent<{ scrapes: Record<string, string> }>('POST', '/sampled/scrape', {}, 180_000)).scrapes[rate];
  if (text === undefined) throw new Error(`sampled exporter --bpf.sample=${rate}: no scrape`);
  return text;
}

/** Until the sampled exporter reports its BPF loader up. */
async function waitUp(g: Guest, rate: number, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    const s = await g.agent<{ scrapes: Record<string, string>; pending: number[] }>('POST', '/sampled/scrape', { pending: true }, 180_000);
    if (!s.pending.length && /^hybridpoll_bpf_up(\{[^}]*\})? 1$/m.test(s.scrapes[rate] ?? '')) return;
    await sleep(500);
  }
  throw new Error(`sampled exporter: BPF not up after ${timeoutMs / 1000} s at --bpf.sample=${rate}`);
}

/**
 * Stop the sampled exporter and record how (programs still loaded right after the exit are listed
 * again 2 s later, as session.ts does for the lab's exporter); an exit other than a clean one is
 * the phase's error, with its log.
 */
async function stopOne(g: Guest, key: string, stops: SampledStop[]): Promise<string | undefined> {
  const stop = await g.agent<{ exporters: Record<string, { exit: SampledStop['exit']; log: string }>; bpfPrograms: unknown }>('POST', '/sampled/stop', {}, 120_000).catch((e: Error) => ({ error: e.message }));
  if ('error' in stop) return `stopping the sampled exporter: ${stop.error}`;
  const x = Object.values(stop.exporters)[0];
  const rec: SampledStop = { rate: key, exit: x?.exit ?? null, log: x?.log ?? '', bpfPrograms: stop.bpfPrograms };
  if (Array.isArray(stop.bpfPrograms) && stop.bpfPrograms.length > 0) {
    await g.agent('POST', '/idle', { ms: 2000 });
    rec.bpfProgramsLater = await g.agent<unknown>('GET', '/bpf/progs').catch((e: Error) => ({ error: e.message }));
  }
  stops.push(rec);
  const clean = JSON.stringify(rec.exit) === '{"code":0,"signal":null}' || JSON.stringify(rec.exit) === '{"code":null,"signal":"SIGTERM"}';
  return clean ? undefined : `sampled exporter N=${key} exited badly: ${JSON.stringify(rec.exit)}: ${rec.log.slice(-1500)}`;
}

export async function samplingRuns(g: Guest, scenarios: SamplingScenario[], args: string[], log: (m: string) => void): Promise<SamplingSession> {
  const out: SamplingSession = { rates: [...SAMPLE_RATES], args, scenarios, runs: [], stops: [] };
  const t0 = Date.now();
  const recordOf = (s: SamplingScenario, device: string): SamplingRun => {
    let rec = out.runs.find((r) => r.scenario === s.id);
    if (!rec) out.runs.push((rec = { scenario: s.id, device, drivers: {}, before: {}, after: {} }));
    return rec;
  };
  try {
    // every rate, then N = 1 again: the control of what runs in a row differ by
    for (const [key, rate] of [...out.rates.map((n) => [String(n), n] as const), [CONTROL, 1] as const]) {
      const t1 = Date.now();
      await g.agent('POST', '/sampled/start', { rates: [rate], args }, 60_000);
      try {
        await waitUp(g, rate, 900_000);
        log(`sampling: exporter at --bpf.sample=${rate}${key === CONTROL ? ' (the control)' : ''} up in ${((Date.now() - t1) / 1000).toFixed(0)} s`);
        for (const s of scenarios) {
          const device = deviceOf(g.info, s.serial);
          const t2 = Date.now();
          let before = '';
          let paused = false;
          try {
            const run = await runDriver(g, s, device, s.mode, {
              beforeRun: async () => {
                before = await scrapeOne(g, rate);
                await g.agent('POST', '/sampled/pause', {});
                paused = true;
              },
            });
            await g.agent('POST', '/sampled/resume', {});
            paused = false;
            const rec = recordOf(s, device);
            rec.drivers[key] = run.driver;
            rec.before[key] = before;
            rec.after[key] = await scrapeOne(g, rate);
            const d = run.driver;
            log(`sampling ${s.id} N=${key}: ${d.ios} I/Os, ${Math.round(d.iops)} IOPS, ${d.cpu.per_io_us.toFixed(2)} µs CPU/IO (${((Date.now() - t2) / 1000).toFixed(1)} s)`);
          } finally {
            if (paused) await g.agent('POST', '/sampled/resume', {}).catch(() => undefined);
          }
        }
      } finally {
        const err = await stopOne(g, key, out.stops);
        if (err) out.error ??= err;
      }
      if (out.error) break;
    }
  } catch (e) {
    out.error ??= (e as Error).message;
    log(`sampling phase stopped: ${out.error}`);
  }
  log(`sampling phase: ${out.runs.reduce((a, r) => a + Object.keys(r.drivers).length, 0)}/${scenarios.length * (out.rates.length + 1)} runs in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return out;
}
