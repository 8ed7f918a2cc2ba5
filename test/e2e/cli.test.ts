// The command line as a user meets it: help, bad flags, bad input files.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, fixtureArgs, startExporter } from '../helpers/exporter.js';

const run = (args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 15000 });

describe('command line', () => {
  it('documents every flag in --help', () => {
    const r = run(['serve', '--help']);
    expect(r.status).toBe(0);
    for (const flag of [
      '--web.listen-address', '--web.telemetry-path', '--path.sysfs', '--path.debugfs', '--path.procfs',
      '--collector.device-include', '--collector.device-exclude', '--collector.bpf', '--no-collector.debugfs',
      '--bpf.enable', '--model.window', '--log.level', '--collector.interval',
    ]) {
      expect(r.stdout, flag).toContain(flag);
    }
  });

  it.each([
    [['--no-such-flag'], /unknown option '--no-such-flag'/],
    [['--log.level', 'loud'], /--log.level.*Allowed choices/],
    [['--web.listen-address', 'nowhere'], /expected \[host\]:port/],
    [['--collector.device-include', '('], /not a valid regular expression/],
    [['--model.window', 'soon'], /expected a duration/],
    [['--collector.interval', 'often'], /expected a duration/],
    [['--collector.device-include', 'nvme', '--collector.device-exclude', 'loop'], /mutually exclusive/],
  ])('rejects %j with a one-line reason and a non-zero exit', (args, reason) => {
    const r = run(args);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(reason);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('error:'))).toHaveLength(1);
  });

  it.each(['record', 'report'])('%s refuses conflicting device filters too', (command) => {
    const r = run([command, '--collector.device-include', 'nvme', '--collector.device-exclude', 'loop']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/mutually exclusive/);
  });

  it('exits non-zero with a clear message when the port is taken', async () => {
    const a = await startExporter([...fixtureArgs('no-nvme'), '--no-collector.bpf']);
    try {
      const port = new URL(a.url).port;
      const r = spawnSync(process.execPath, [CLI, ...fixtureArgs('no-nvme'), '--no-collector.bpf', `--web.listen-address=127.0.0.1:${port}`], {
        encoding: 'utf8',
        timeout: 15000,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/msg="cannot listen".*EADDRINUSE/);
    } finally {
      await a.stop();
    }
  });
});

describe('bad input files', () => {
  it('reports garbage as collector failures and log lines, and keeps serving the healthy device', async () => {
    const exp = await startExporter([...fixtureArgs('garbage'), '--no-collector.bpf']);
    try {
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${exp.url}/metrics`);
        expect(res.status).toBe(200);
        const body = await res.text();
        expect(body).toContain('hybridpoll_scrape_collector_success{collector="sysfs"} 0');
        expect(body).toContain('hybridpoll_scrape_collector_success{collector="debugfs"} 0');
        expect(body).toContain('hybridpoll_device_read_errors{device="nvme0n1"} 5');
        expect(body).toContain('hybridpoll_device_io_poll{device="nvme1n1"} 1');
      }
      const logs = exp.logs();
      expect(logs).toMatch(/level=warn msg="collector failed" collector=sysfs err=.*(io_poll must be 0 or 1|EISDIR|expected an integer)/);
      expect(logs).toMatch(/level=warn msg="collector failed" collector=debugfs err=.*poll_stat line 1 not understood/);
      // Logged when the error appears, not on every scrape.
      expect(logs.match(/collector=sysfs/g)).toHaveLength(1);
    } finally {
      await exp.stop();
    }
  });

  it('serves a clear failure when the paths point nowhere', async () => {
    const exp = await startExporter(['--path.sysfs=/nonexistent/sys', '--path.debugfs=/nonexistent/debug', '--path.procfs=/nonexistent/proc', '--no-collector.bpf']);
    try {
      const body = await (await fetch(`${exp.url}/metrics`)).text();
      expect(body).toContain('hybridpoll_scrape_collector_success{collector="sysfs"} 0');
      expect(exp.logs()).toMatch(/is --path.sysfs right\?/);
      const page = await (await fetch(`${exp.url}/`)).text();
      expect(page).toMatch(/debugfs not mounted/);
    } finally {
      await exp.stop();
    }
  });
});
