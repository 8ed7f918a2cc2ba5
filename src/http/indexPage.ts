// The / page: version, each source and its state, links. Pure: snapshot in, HTML out.
import type { Snapshot } from '../snapshot/types.js';
import { VERSION } from '../version.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** refreshSeconds: the collection interval (--collector.interval); undefined when every scrape collects. */
export function indexPage(s: Snapshot | undefined, metricsPath: string, refreshSeconds?: number): string {
  const rows = (s?.collectors ?? [])
    .map((c) => `<tr><td>${esc(c.name)}</td><td class="${c.success ? 'ok' : 'bad'}">${c.success ? 'ok' : 'failed'}</td>` +
      `<td>${(c.durationSeconds * 1000).toFixed(1)} ms</td><td>${esc(c.error ?? '')}</td></tr>`)
    .join('\n');
  const era = s?.host?.era;
  const bpf = s?.bpfStatus;
  const devices = (s?.host?.devices ?? [])
    .map((d) => `<tr><td>${esc(d.device)}</td><td>${d.ioPoll ?? ''}</td><td>${d.ioPollDelay ?? ''}</td>` +
      `<td>${d.hctxByType ? (d.hctxByType.poll ?? 0) : ''}</td><td>${esc(d.pollStat?.kind ?? '')}</td></tr>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hybridpoll-exporter</title>
<style>body{font-family:sans-serif;margin:2em;max-width:60em}td,th{padding:.2em .8em;text-align:left}
.ok{color:#070}.bad{color:#b00}code{background:#eee;padding:0 .2em}</style></head>
<body><h1>hybridpoll-exporter</h1>
<p>Version ${esc(VERSION)}. How much CPU NVMe hybrid polling wastes, and what the best sleep would have been.</p>
<p><a href="${esc(metricsPath)}">Metrics</a> · <a href="/healthz">Health</a></p>
<p>${s ? `Snapshot taken ${esc(new Date(s.takenAtMs).toISOString())}` : 'No snapshot yet'}; ${refreshSeconds ? `collected every ${refreshSeconds} s, scrapes serve the latest` : 'collected on every scrape'}.</p>
<h2>Kernel</h2>
<p>Era: <code>${esc(era?.era ?? 'not read yet')}</code> (${esc(era?.evidence ?? '')}: ${esc(era?.reason ?? '')})</p>
<h2>Sources</h2>
<table><tr><th>collector</th><th>state</th><th>duration</th><th>error</th></tr>
${rows}
<tr><td>bpf loader</td><td class="${bpf?.state === 'running' ? 'ok' : 'bad'}">${esc(bpf?.state ?? '')}</td><td></td><td>${esc(bpf?.reason ?? '')}</td></tr>
</table>
<h2>Devices</h2>
<table><tr><th>device</th><th>io_poll</th><th>io_poll_delay</th><th>poll queues</th><th>poll_stat</th></tr>
${devices}
</table>
</body></html>
`;
}
