// The release for plain hosts: `npm run release` (scripts/release.sh) makes the tarball; here it is
// unpacked as deploy/systemd/README.md says into a fresh Debian root without Node
// (scripts/debian-root.sh, cached), its systemd unit verified by systemd-analyze, and the single
// executable run in that root (chroot, own mount namespace) the way the unit runs it: the example
// flags file, only CAP_BPF and CAP_PERFMON (bounding, inheritable and ambient sets, securebits
// noroot, no_new_privs), a read-only root with a private /tmp. It is scraped, linted by promtool,
// and must have attached its BPF programs; `report --from-recording` and `replay` must work.
// Missing prerequisites skip loudly, and fail under CI=true.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/exporter.js';
import { findBinary } from '../bundle/lib/tools.js';
import { checkMetrics, HAVE_PROMTOOL } from '../e2e/promtool.js';

const CI = process.env['CI'] === 'true';
const missing = [
  ...['debootstrap', 'unshare', 'chroot', 'systemd-analyze', 'strip', 'mountpoint'].filter((t) => !findBinary(t)),
  ...(process.getuid?.() === 0 ? [] : ['root']),
];
if (missing.length && !CI) console.warn(`\n*** SKIPPING the release tarball test: missing ${missing.join(', ')} (bash scripts/setup.sh as root installs them) ***\n`);
const CACHE = join(process.env['HP_CONTAINER_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'hybridpoll-container'), 'roots');
const OPT = '/opt/hybridpoll-exporter';
const EXE = `${OPT}/hybridpoll-exporter`;

function run(cmd: string, args: string[], timeout = 600_000): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout, cwd: ROOT });
  const out = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${out}`);
  return r.stdout;
}

/** PIDs below pid, from /proc/PID/task/PID/children. */
function descendants(pid: number): number[] {
  const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

function freePort(): number {
  return Number(run(process.execPath, ['-e', 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})']).trim());
}

describe.skipIf(missing.length > 0 && !CI)('release tarball on a fresh Debian root without Node', () => {
  let work = '';
  let rootfs = '';
  let tarball = '';
  const procs: ChildProcess[] = [];

  beforeAll(() => {
    expect(missing, 'prerequisites of the release test (CI=true: they must be there)').toEqual([]);
    work = mkdtempSync(join(tmpdir(), 'hybridpoll-release-test-'));
    const t0 = Date.now();
    tarball = run('bash', [resolve(ROOT, 'scripts/release.sh')], 900_000).trim().split('\n').pop()!;
    const t1 = Date.now();
    mkdirSync(CACHE, { recursive: true });
    const rootTar = run('bash', [resolve(ROOT, 'scripts/debian-root.sh'), CACHE], 900_000).trim();
    rootfs = join(work, 'root');
    mkdirSync(rootfs);
    run('tar', ['-C', rootfs, '-xf', rootTar]);
    // As deploy/systemd/README.md installs it.
    mkdirSync(join(rootfs, OPT), { recursive: true });
    run('tar', ['-xzf', tarball, '-C', join(rootfs, OPT), '--strip-components=1']);
    run('cp', [join(rootfs, OPT, 'hybridpoll-exporter.service'), join(rootfs, 'etc/systemd/system/')]);
    run('cp', [join(rootfs, OPT, 'hybridpoll-exporter.default'), join(rootfs, 'etc/default/hybridpoll-exporter')]);
    console.log(`release test: release.sh ${((t1 - t0) / 1000).toFixed(0)} s, fresh root ${((Date.now() - t1) / 1000).toFixed(0)} s`);
  }, 1_800_000);

  /** unshare --fork ignores SIGTERM: the exporter below it is stopped, by PID, and unshare follows. */
  async function stop(p: ChildProcess): Promise<void> {
    if (p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((done) => p.once('exit', done));
    for (const pid of descendants(p.pid!).filter((d) => readFileSync(`/proc/${d}/cmdline`, 'utf8').startsWith(`${EXE}\0`))) process.kill(pid, 'SIGTERM');
    await exited;
  }

  afterAll(async () => {
    for (const p of procs) await stop(p);
    // The mounts lived in the children's mount namespace; never recurse into a live one.
    if (rootfs && !['proc', 'sys', 'tmp'].some((d) => spawnSync('mountpoint', ['-q', join(rootfs, d)]).status === 0)) rmSync(work, { recursive: true, force: true });
  });

  /**
   * The unit's way, in the fresh root: a mount namespace with /proc, the host's /sys (debugfs,
   * tracefs, BTF under it) read-only, the root read-only (ProtectSystem=strict), a private /tmp;
   * then setpriv to the unit's capabilities. --kill-child: the exporter dies with unshare.
   */
  function startInRoot(args: string): ChildProcess {
    const r = rootfs;
    const script = [
      `mount --bind ${r} ${r}`,
      `mount -t proc proc ${r}/proc`,
      `mount --rbind /sys ${r}/sys`,
      `mount -o remount,bind,ro ${r}/sys`,
      `mount -t tmpfs -o size=16m tmpfs ${r}/tmp`,
      `mount -o remount,bind,ro ${r}`,
      `. ${r}/etc/default/hybridpoll-exporter`,
      `exec chroot ${r} setpriv --bounding-set -all,+bpf,+perfmon --inh-caps -all,+bpf,+perfmon --ambient-caps -all,+bpf,+perfmon --securebits +noroot,+noroot_locked --no-new-privs ${args}`,
    ].join(' && ');
    const p = spawn('unshare', ['--mount', '--fork', '--kill-child=SIGTERM', 'sh', '-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    p.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    Object.assign(p, { log: () => log });
    procs.push(p);
    return p;
  }

  async function scrapeUntil(p: ChildProcess, url: string, pattern: RegExp): Promise<string> {
    let body = '';
    for (let i = 0; i < 100; i++) {
      if (p.exitCode !== null) break;
      body = await fetch(url).then((r) => r.text(), () => '');
      if (pattern.test(body)) return body;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${url} never matched ${pattern} (exit ${p.exitCode}):\n${(p as unknown as { log(): string }).log()}\n${body.split('\n').filter((l) => l.startsWith('hybridpoll_bpf_status')).join('\n')}`);
  }

  it('the root has no Node, and the tarball holds one executable, the static loader, the unit, the flags file and the recording', () => {
    expect(spawnSync('chroot', [rootfs, 'sh', '-c', 'command -v node || ls /usr/bin/node /usr/local/bin/node'], { encoding: 'utf8' }).status).not.toBe(0);
    const listing = run('tar', ['-tzf', tarball]).split('\n').filter(Boolean).map((l) => l.replace(/^[^/]+\//, '')).filter((l) => l && !l.endsWith('/')).sort();
    expect(listing).toEqual(['README.md', 'build/bpf/hybridpoll-bpf', 'hybridpoll-exporter', 'hybridpoll-exporter.default', 'hybridpoll-exporter.service', 'package.json', 'recordings/synthetic.jsonl']);
    expect(tarball).toMatch(new RegExp(`hybridpoll-exporter-${JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')).version}\\.linux-amd64\\.tar\\.gz$`));
    expect(spawnSync('chroot', [rootfs, `${OPT}/build/bpf/hybridpoll-bpf`, '--version']).status).toBe(0);
  });

  /** systemd-analyze on the host's systemd, the unit's ExecStart resolving to the unpacked release (a private /opt). */
  function analyze(args: string): { status: number | null; out: string } {
    const r = spawnSync('unshare', ['--mount', 'sh', '-c', `mount -t tmpfs tmpfs /opt && mkdir ${OPT} && mount --bind ${rootfs}${OPT} ${OPT} && systemd-analyze ${args} ${rootfs}/etc/systemd/system/hybridpoll-exporter.service`], { encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  }

  it('systemd-analyze verify accepts the unit, and it states the DaemonSet capability set', () => {
    const r = analyze('verify');
    expect(r.out.trim(), 'systemd-analyze verify complaints').toBe('');
    expect(r.status).toBe(0);
    const unit = readFileSync(join(rootfs, 'etc/systemd/system/hybridpoll-exporter.service'), 'utf8');
    for (const line of ['CapabilityBoundingSet=CAP_BPF CAP_PERFMON', 'AmbientCapabilities=CAP_BPF CAP_PERFMON', 'ProtectSystem=strict', 'NoNewPrivileges=yes', `ExecStart=${EXE} serve $HYBRIDPOLL_EXPORTER_ARGS`]) {
      expect(unit).toContain(`\n${line}\n`);
    }
    // The exposure score, for the record (0 = fully locked down, 10 = unprotected).
    const score = /Overall exposure level for \S+: ([\d.]+)/.exec(analyze('security --offline=yes').out)?.[1];
    console.log(`release test: systemd-analyze security exposure ${score ?? '(not reported)'}`);
  });

  it('runs as the unit runs it: serves /metrics, BPF attached with only CAP_BPF and CAP_PERFMON, promtool-clean', async () => {
    const port = freePort();
    const t0 = Date.now();
    // The flags file's arguments, then a free loopback port instead of its :9742 (the last one wins).
    const p = startInRoot(`${EXE} serve $HYBRIDPOLL_EXPORTER_ARGS --web.listen-address=127.0.0.1:${port}`);
    const body = await scrapeUntil(p, `http://127.0.0.1:${port}/metrics`, /^hybridpoll_bpf_status_info\{state="running",reason="ok"\} 1$/m);
    console.log(`release test: serve in the fresh root: BPF running after ${Date.now() - t0} ms`);
    expect(body).toMatch(/^hybridpoll_bpf_program_attached\{.*\} 1$/m);
    expect(body).toMatch(/^hybridpoll_scrape_collector_success\{collector="sysfs"\} 1$/m);
    expect(body).toMatch(/^hybridpoll_build_info\{version="[^"]+",nodejs_version="20\.\d+\.\d+"\} 1$/m);
    if (HAVE_PROMTOOL) expect(checkMetrics(body).output).toBe('');
    // The exporter process (below unshare and sh): the unit's capabilities and no more.
    const exe = descendants(p.pid!).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(`${EXE}\0`));
    expect(exe, 'the exporter process').toBeDefined();
    const caps = Object.fromEntries([...readFileSync(`/proc/${exe}/status`, 'utf8').matchAll(/^(Cap\w+):\s*([0-9a-f]+)$/gm)].map((m) => [m[1], BigInt(`0x${m[2]}`)]));
    const BPF_PERFMON = (1n << 38n) | (1n << 39n);
    expect(caps).toMatchObject({ CapEff: BPF_PERFMON, CapPrm: BPF_PERFMON, CapBnd: BPF_PERFMON, CapAmb: BPF_PERFMON });
    await stop(p);
  }, 60_000);

  it('report --from-recording and replay work in the fresh root', async () => {
    const report = spawnSync('chroot', [rootfs, EXE, 'report', '--from-recording', `${OPT}/recordings/synthetic.jsonl`], { encoding: 'utf8', timeout: 60_000 });
    expect(report.status, report.stderr).toBe(0);
    expect(report.stdout).toMatch(/^hybridpoll-exporter report$/m);
    expect(report.stdout).toMatch(/synthetic-nvme-host/);
    const port = freePort();
    const p = startInRoot(`${EXE} replay --speed 10 --web.listen-address=127.0.0.1:${port}`);
    const body = await scrapeUntil(p, `http://127.0.0.1:${port}/metrics`, /^hybridpoll_wasted_cpu_seconds_total\{/m);
    if (HAVE_PROMTOOL) expect(checkMetrics(body).output).toBe('');
    await stop(p);
  }, 90_000);

  it('is where `npm run release` puts it', () => {
    expect(existsSync(tarball)).toBe(true);
    expect(JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')).scripts.release).toBe('bash scripts/release.sh');
  });
});
