// Reads sysfs, debugfs and procfs into a HostReading. All file access of the sources lives here;
// parsing is delegated to the pure parsers beside this file.
import { join } from 'node:path';
import type { CollectorName, CollectorResult } from '../snapshot/types.js';
import { btfFeatures, detectEra, parseOsRelease } from './era.js';
import { parseBtf } from './btf.js';
import { errnoOf, isMissing, listDir, messageOf, readBounded, readText, realRoot, resolvesWithin } from './files.js';
import { parseHctxIoPoll, parseHctxType } from './hctx.js';
import { parsePollStat } from './pollStat.js';
import { parseDevNum, parseIntFile, parseIoPoll, parseIoPollDelay } from './queue.js';
import type { Parsed } from './result.js';
import type { DeviceReading, HostReading, KernelFeatures } from './types.js';

export interface HostPaths {
  sysfs: string;
  debugfs: string;
  procfs: string;
}

export interface DeviceFilter {
  include?: RegExp;
  exclude?: RegExp;
}

export interface HostReaderOptions {
  paths: HostPaths;
  filter: DeviceFilter;
  collectors: { sysfs: boolean; debugfs: boolean; era: boolean };
  /** BTF of the running kernel is large (~6 MB) and never changes: parse it once. */
  btfMaxBytes?: number;
}

const SAFE_NAME = /^[A-Za-z0-9._:@+-]+$/;

/** Kernel-provided names are data: refuse anything that could walk out of the tree. */
export function isSafeName(name: string): boolean {
  return SAFE_NAME.test(name) && name !== '.' && name !== '..';
}

export function deviceSelected(name: string, f: DeviceFilter): boolean {
  if (f.include && !f.include.test(name)) return false;
  if (f.exclude && f.exclude.test(name)) return false;
  return true;
}

type Errors = { file: string; message: string }[];

/** Read and parse one optional file. Missing → undefined; unreadable or malformed → error recorded. */
async function readParsed<T>(path: string, parse: (t: string) => Parsed<T>, errors: Errors): Promise<T | undefined> {
  let text: string;
  try {
    text = await readText(path);
  } catch (e) {
    if (!isMissing(e)) errors.push({ file: path, message: messageOf(e) });
    return undefined;
  }
  const r = parse(text);
  if (!r.ok) {
    errors.push({ file: path, message: r.error });
    return undefined;
  }
  return r.value;
}

export class HostReader {
  private btfCache?: Pick<KernelFeatures, 'iouringHybrid' | 'legacyHybrid' | 'hctxPollCounters'> | { error: string } | 'absent';

  private realRoots = { sysfs: '', debugfs: '' };

  constructor(private readonly opts: HostReaderOptions) {}

  async read(): Promise<{ host: HostReading; collectors: CollectorResult[] }> {
    const { sysfs, debugfs, procfs } = this.opts.paths;
    // Resolved once per read (the engine never runs two at once), for the per-device containment check.
    this.realRoots = { sysfs: await realRoot(sysfs), debugfs: await realRoot(debugfs) };
    const collectors: CollectorResult[] = [];
    const timed = async <T>(name: CollectorName, fn: () => Promise<{ value: T; error?: string }>): Promise<T> => {
      const t0 = performance.now();
      const { value, error } = await fn();
      collectors.push({
        name,
        success: error === undefined,
        durationSeconds: (performance.now() - t0) / 1000,
        ...(error === undefined ? {} : { error }),
      });
      return value;
    };

    const blockDir = join(sysfs, 'block');
    let blockError: string | undefined;
    const listed = await listDir(blockDir).catch((e: unknown) => {
      blockError = messageOf(e);
      return undefined;
    });
    if (listed === undefined && blockError === undefined) blockError = 'no such directory: is --path.sysfs right?';
    const names = (listed ?? []).filter((n) => isSafeName(n) && deviceSelected(n, this.opts.filter));
    const devices: DeviceReading[] = names.map((device) => ({ device, errors: [] }));

    let nvmePollQueues: number | undefined;
    if (this.opts.collectors.sysfs) {
      await timed('sysfs', async () => {
        const hostErrors: Errors = blockError ? [{ file: blockDir, message: blockError }] : [];
        nvmePollQueues = await readParsed(join(sysfs, 'module/nvme/parameters/poll_queues'), parseIntFile, hostErrors);
        await Promise.all(devices.map((d) => this.readSysfsDevice(d)));
        return { value: undefined, error: firstError(hostErrors, devices, sysfs) };
      });
    }

    let debugfsEvidence = { hctxIoPoll: false, pollStatLines: false };
    if (this.opts.collectors.debugfs) {
      debugfsEvidence = await timed('debugfs', async () => {
        const root = join(debugfs, 'block');
        let present: string[] | undefined;
        try {
          present = await listDir(root);
        } catch (e) {
          const hint = errnoOf(e) === 'EACCES' ? ' (debugfs is readable by root only)' : '';
          return { value: debugfsEvidence, error: `debugfs not readable at ${root}: ${messageOf(e)}${hint}` };
        }
        if (present === undefined) {
          return { value: debugfsEvidence, error: `no ${root}: debugfs not mounted or CONFIG_BLK_DEBUG_FS off` };
        }
        await Promise.all(devices.filter((d) => present.includes(d.device)).map((d) => this.readDebugfsDevice(d)));
        return {
          value: {
            hctxIoPoll: devices.some((d) => (d.hctxIoPoll?.length ?? 0) > 0),
            pollStatLines: devices.some((d) => d.pollStat?.kind === 'buckets'),
          },
          error: firstError([], devices, debugfs),
        };
      });
    }

    const features: KernelFeatures = {
      debugfsHctxIoPoll: debugfsEvidence.hctxIoPoll,
      debugfsPollStatLines: debugfsEvidence.pollStatLines,
    };
    let era = detectEra(features);
    if (this.opts.collectors.era) {
      era = await timed('era', async () => {
        const relErrors: Errors = [];
        const release = await readParsed(join(procfs, 'sys/kernel/osrelease'), parseOsRelease, relErrors);
        if (release) features.release = release;
        const btf = await this.btfFeatures();
        if (typeof btf === 'object' && !('error' in btf)) Object.assign(features, btf);
        const error = typeof btf === 'object' && 'error' in btf ? btf.error : relErrors[0] ? `${relErrors[0].file}: ${relErrors[0].message}` : undefined;
        return { value: detectEra(features), ...(error ? { error } : {}) };
      });
    }

    return {
      host: { ...(nvmePollQueues === undefined ? {} : { nvmePollQueues }), features, era, devices },
      collectors,
    };
  }

  private async readSysfsDevice(d: DeviceReading): Promise<void> {
    const dir = join(this.opts.paths.sysfs, 'block', d.device);
    if (!(await contained(this.realRoots.sysfs, dir, d))) return;
    const [devNum, ioPoll, ioPollDelay] = await Promise.all([
      readParsed(join(dir, 'dev'), parseDevNum, d.errors),
      readParsed(join(dir, 'queue/io_poll'), parseIoPoll, d.errors),
      readParsed(join(dir, 'queue/io_poll_delay'), parseIoPollDelay, d.errors),
    ]);
    if (devNum !== undefined) d.devNum = devNum;
    if (ioPoll !== undefined) d.ioPoll = ioPoll;
    if (ioPollDelay !== undefined) d.ioPollDelay = ioPollDelay;
  }

  private async readDebugfsDevice(d: DeviceReading): Promise<void> {
    const dir = join(this.opts.paths.debugfs, 'block', d.device);
    if (!(await contained(this.realRoots.debugfs, dir, d))) return;
    let entries: string[];
    try {
      entries = (await listDir(dir)) ?? [];
    } catch (e) {
      d.errors.push({ file: dir, message: messageOf(e) });
      return;
    }
    const pollStat = entries.includes('poll_stat')
      ? await readParsed(join(dir, 'poll_stat'), parsePollStat, d.errors)
      : { kind: 'absent' as const };
    if (pollStat) d.pollStat = pollStat;
    const hctxs = entries.filter((e) => /^hctx\d+$/.test(e));
    const byType: Partial<Record<string, number>> = {};
    const counters = await Promise.all(
      hctxs.map(async (h) => {
        const type = await readParsed(join(dir, h, 'type'), parseHctxType, d.errors);
        if (type) byType[type] = (byType[type] ?? 0) + 1;
        return readParsed(join(dir, h, 'io_poll'), (t) => parseHctxIoPoll(h, t), d.errors);
      }),
    );
    d.hctxByType = byType;
    const present = counters.filter((c) => c !== undefined);
    if (present.length > 0) d.hctxIoPoll = present;
  }

  private async btfFeatures(): Promise<NonNullable<HostReader['btfCache']>> {
    if (this.btfCache) return this.btfCache;
    const path = join(this.opts.paths.sysfs, 'kernel/btf/vmlinux');
    try {
      const r = parseBtf(await readBounded(path, this.opts.btfMaxBytes ?? 256 * 1024 * 1024));
      this.btfCache = r.ok ? btfFeatures(r.value) : { error: `${path}: ${r.error}` };
    } catch (e) {
      // No BTF is a normal old-kernel state: fall back to debugfs and the release hint.
      this.btfCache = isMissing(e) ? 'absent' : { error: `${path}: ${messageOf(e)}` };
    }
    return this.btfCache;
  }
}

/** A device directory that resolves outside its tree is not read (see resolvesWithin). */
async function contained(realRootPath: string, dir: string, d: DeviceReading): Promise<boolean> {
  const inside = await resolvesWithin(realRootPath, dir).catch(() => true); // unreadable: the reads will say so
  if (!inside) d.errors.push({ file: dir, message: `resolves outside ${realRootPath}: not read` });
  return inside;
}

/** The collector's one-line error: the first problem, and how many more. */
function firstError(hostErrors: Errors, devices: DeviceReading[], root: string): string | undefined {
  const all = [...hostErrors, ...devices.flatMap((d) => d.errors.filter((e) => e.file.startsWith(root)))];
  if (all.length === 0) return undefined;
  const [first] = all;
  return `${first!.file}: ${first!.message}${all.length > 1 ? ` (+${all.length - 1} more)` : ''}`;
}
