// The guest side of the sampling check (sampling.ts): after the session's other runs, exporters at
// every sample rate start side by side (the agent's /sampled routes), each scenario runs once
// with all of them scraped before and after and paused (SIGSTOP) during the run, as the lab's own
// exporter is (session.ts, scrapedRun). Their BPF programs stay attached and all observe the run.
import type { Guest } from './guest.js';
import { SAMPLE_RATES, type SamplingRun, type SamplingScenario, type SamplingSession } from './sampling.js';
import { deviceOf, runDriver } from './session.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function scrapeAll(g: Guest): Promise<Record<string, string>> {
  return (await g.agent<{ scrapes: Record<string, string> }>('POST', '/sampled/scrape', {}, 180_000)).scrapes;
}

/** Until every sampled exporter reports its BPF loader up. */
async function waitAllUp(g: Guest, timeoutMs: number): Promise<void> {
  const t0 = Date.now();
  let down: string[] = [];
  while (Date.now() - t0 < timeoutMs) {
    const s = await g.agent<{ scrapes: Record<string, string>; pending: number[] }>('POST', '/sampled/scrape', { pending: true }, 180_000);
    down = [...s.pending.map(String), ...Object.entries(s.scrapes).filter(([, text]) => !/^hybridpoll_bpf_up(\{[^}]*\})? 1$/m.test(text)).map(([n]) => n)];
    if (!down.length) return;
    await sleep(500);
  }
  throw new Error(`sampled exporters: BPF not up after ${timeoutMs / 1000} s at --bpf.sample=${down.join(', ')}`);
}

export async function samplingRuns(g: Guest, scenarios: SamplingScenario[], args: string[], log: (m: string) => void): Promise<SamplingSession> {
  const out: SamplingSession = { rates: [...SAMPLE_RATES], args, scenarios, runs: [] };
  const t0 = Date.now();
  try {
    await g.agent('POST', '/sampled/start', { rates: out.rates, args }, 60_000);
    await waitAllUp(g, 900_000);
    log(`sampling: exporters at --bpf.sample=${out.rates.join(', ')} up in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    for (const s of scenarios) {
      const device = deviceOf(g.info, s.serial);
      const t1 = Date.now();
      let before: Record<string, string> = {};
      let paused = false;
      try {
        const run = await runDriver(g, s, device, s.mode, {
          beforeRun: async () => {
            before = await scrapeAll(g);
            await g.agent('POST', '/sampled/pause', {});
            paused = true;
          },
        });
        await g.agent('POST', '/sampled/resume', {});
        paused = false;
        const rec: SamplingRun = { scenario: s.id, device, ...run, before, after: await scrapeAll(g) };
        out.runs.push(rec);
        const d = rec.driver;
        log(`sampling ${s.id}: ${d.ios} I/Os, ${Math.round(d.iops)} IOPS, ${d.cpu.per_io_us.toFixed(2)} µs CPU/IO (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
      } finally {
        if (paused) await g.agent('POST', '/sampled/resume', {}).catch(() => undefined);
      }
    }
  } catch (e) {
    out.error = (e as Error).message;
    log(`sampling phase stopped: ${out.error}`);
  } finally {
    const stop = await g.agent<{ exporters: Record<string, { exit: unknown; log: string }> }>('POST', '/sampled/stop', {}, 120_000).catch((e: Error) => ({ error: e.message }));
    if ('error' in stop) out.error ??= `stopping the sampled exporters: ${stop.error}`;
    else {
      // an exporter that died during the phase is a failure, with its log
      const died = Object.entries(stop.exporters).filter(([, x]) => JSON.stringify(x.exit) !== '{"code":0,"signal":null}' && JSON.stringify(x.exit) !== '{"code":null,"signal":"SIGTERM"}');
      if (died.length) out.error ??= `sampled exporters exited badly: ${died.map(([n, x]) => `N=${n} ${JSON.stringify(x.exit)}: ${x.log.slice(-1500)}`).join('; ')}`;
    }
  }
  log(`sampling phase: ${out.runs.length}/${scenarios.length} runs in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return out;
}
