// Reads sysfs, debugfs and procfs into a HostReading. All file access of the sources lives here;
// parsing is delegated to the pure parsers beside this file.
import { lstatSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { join } from 'node:path';
import type { CollectorName, CollectorResult } from '../snapshot/types.js';
import { btfFeatures, detectEra, parseOsRelease } from './era.js';
import { parseBtf } from './btf.js';
import { errnoOf, isMissing, listDir, listDirSync, messageOf, readText, readTextSync, realRoot, resolvesWithin, withPositionalFile } from './files.js';
import { parseHctxIoPoll, parseHctxType } from './hctx.js';
import { parsePollStat } from './pollStat.js';
import { parseDevNum, parseIntFile, parseIoPoll, parseIoPollDelay } from './queue.js';
import type { Parsed } from './result.js';
import type { DeviceReading, HctxIoPoll, HostReading, KernelFeatures } from './types.js';

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
    return unreadable(path, e, errors);
  }
  return parsedOrRecorded(path, text, parse, errors);
}

/** readParsed, synchronously: for the debugfs files (see readDebugfsDevices). */
function readParsedSync<T>(path: string, parse: (t: string) => Parsed<T>, errors: Errors): T | undefined {
  let text: string;
  try {
    text = readTextSync(path);
  } catch (e) {
    return unreadable(path, e, errors);
  }
  return parsedOrRecorded(path, text, parse, errors);
}

function unreadable(path: string, e: unknown, errors: Errors): undefined {
  if (!isMissing(e)) errors.push({ file: path, message: messageOf(e) });
  return undefined;
}

function parsedOrRecorded<T>(path: string, text: string, parse: (t: string) => Parsed<T>, errors: Errors): T | undefined {
  const r = parse(text);
  if (!r.ok) {
    errors.push({ file: path, message: r.error });
    return undefined;
  }
  return r.value;
}

/**
 * The longest the debugfs reading holds the event loop before it lets other work (HTTP, the BPF
 * reply) run: its reads are synchronous. On a real debugfs 64 devices take ~2 ms in all; this
 * bounds a slow tree given with --path.debugfs.
 */
export const SYNC_SLICE_MS = 10;

/** How long a device's debugfs listing and hctx types are trusted before they are read again. */
export const STATIC_REFRESH_MS = 60_000;

/** What a device's sysfs entry holds for its lifetime. */
interface SysfsStatic {
  ino: string;
  contained: boolean;
  devNum?: string;
  errors: Errors;
}

/** A device's debugfs directory as last listed: which files exist, and the hctx types. */
interface DebugfsStatic {
  ino: string;
  readAtMs: number;
  listed: boolean;
  pollStat: boolean;
  byType: Partial<Record<string, number>>;
  /** hctx directories that have an io_poll file, and the counters read with the listing */
  hctxIoPoll: string[];
  firstCounters: HctxIoPoll[];
  errors: Errors;
}

export class HostReader {
  private readonly sysfsStatic = new Map<string, SysfsStatic>();
  private readonly debugfsStatic = new Map<string, DebugfsStatic>();

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
    const listedNames = new Set(names);
    for (const cache of [this.sysfsStatic, this.debugfsStatic]) {
      for (const name of cache.keys()) if (!listedNames.has(name)) cache.delete(name);
    }

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
        await this.readDebugfsDevices(devices.filter((d) => present.includes(d.device)));
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

  /**
   * Per scrape: one lstat of the device's entry and its two queue settings (writable at any time,
   * so read every scrape). `dev` and the containment check belong to the device's lifetime: read
   * again only when the entry is a new one (sysfs gives a re-created device a new inode).
   */
  private async readSysfsDevice(d: DeviceReading): Promise<void> {
    const dir = join(this.opts.paths.sysfs, 'block', d.device);
    const known = this.sysfsStatic.get(d.device);
    const ino = identity(dir, d);
    if (ino === undefined) return; // gone since the listing (or unreadable: recorded)
    const st = known?.ino === ino ? known : await this.readSysfsStatic(dir, ino);
    // Only a clean reading is kept: an error is read (and reported) again next scrape.
    if (st.errors.length === 0) this.sysfsStatic.set(d.device, st);
    else this.sysfsStatic.delete(d.device);
    if (!st.contained) return void d.errors.push(...st.errors);
    if (st.devNum !== undefined) d.devNum = st.devNum;
    const [ioPoll, ioPollDelay] = await Promise.all([
      readParsed(join(dir, 'queue/io_poll'), parseIoPoll, d.errors),
      readParsed(join(dir, 'queue/io_poll_delay'), parseIoPollDelay, d.errors),
    ]);
    if (ioPoll !== undefined) d.ioPoll = ioPoll;
    if (ioPollDelay !== undefined) d.ioPollDelay = ioPollDelay;
    d.errors.push(...st.errors);
  }

  private async readSysfsStatic(dir: string, ino: string): Promise<SysfsStatic> {
    const errors: Errors = [];
    const contained = containedIn(this.realRoots.sysfs, dir, errors);
    const devNum = contained ? await readParsed(join(dir, 'dev'), parseDevNum, errors) : undefined;
    return { ino, contained, ...(devNum === undefined ? {} : { devNum }), errors };
  }

  /**
   * The debugfs files are read synchronously, each device in turn, giving the event loop back
   * every SYNC_SLICE_MS. They are blk-mq's debugfs attributes (poll_stat, each hctx's type and
   * io_poll), whose show() prints in-memory counters under no lock, so a read returns at once and
   * cannot hang the way a sysfs queue attribute can (those stay on the thread pool, see
   * readBounded). It saves the thread-pool round trip per file that was most of their time.
   */
  private async readDebugfsDevices(devices: DeviceReading[]): Promise<void> {
    let sliceStart = performance.now();
    for (const d of devices) {
      this.readDebugfsDevice(d);
      if (performance.now() - sliceStart >= SYNC_SLICE_MS) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
  }

  /**
   * Per scrape: poll_stat and the hctx io_poll counters, only those the device's directory had
   * (io_poll is gone on 5.16+, poll_stat on 6.4+: never opened there). The listing and the hctx
   * types are kept for the device's lifetime and refreshed every STATIC_REFRESH_MS, because a
   * controller reset can remap hardware queues under the same directory.
   */
  private readDebugfsDevice(d: DeviceReading): void {
    const dir = join(this.opts.paths.debugfs, 'block', d.device);
    const known = this.debugfsStatic.get(d.device);
    const ino = identity(dir, d);
    if (ino === undefined) return;
    const now = Date.now();
    const fresh = known?.ino === ino && now - known.readAtMs < STATIC_REFRESH_MS ? known : undefined;
    const st = fresh ?? this.readDebugfsStatic(dir, ino, now);
    if (st.errors.length === 0) this.debugfsStatic.set(d.device, st);
    else this.debugfsStatic.delete(d.device);
    if (!st.listed) return void d.errors.push(...st.errors);
    d.hctxByType = st.byType;
    const pollStat = st.pollStat ? readParsedSync(join(dir, 'poll_stat'), parsePollStat, d.errors) : { kind: 'absent' as const };
    // The static reading just read the counters: not read twice in one scrape.
    const counters = st.hctxIoPoll.map((h, i) => (fresh ? readParsedSync(join(dir, h, 'io_poll'), (t) => parseHctxIoPoll(h, t), d.errors) : st.firstCounters[i]));
    if (pollStat) d.pollStat = pollStat;
    const present = counters.filter((c) => c !== undefined);
    if (present.length > 0) d.hctxIoPoll = present;
    // After this scrape's own: the collector's error line names poll_stat first, as it always did.
    d.errors.push(...st.errors);
    // A file that vanished since the listing: look again next scrape.
    if ((st.pollStat && !pollStat) || present.length < st.hctxIoPoll.length) this.debugfsStatic.delete(d.device);
  }

  private readDebugfsStatic(dir: string, ino: string, now: number): DebugfsStatic {
    const errors: Errors = [];
    const st: DebugfsStatic = { ino, readAtMs: now, listed: false, pollStat: false, byType: {}, hctxIoPoll: [], firstCounters: [], errors };
    if (!containedIn(this.realRoots.debugfs, dir, errors)) return st;
    let entries: string[];
    try {
      entries = listDirSync(dir) ?? [];
    } catch (e) {
      errors.push({ file: dir, message: messageOf(e) });
      return st;
    }
    st.listed = true;
    st.pollStat = entries.includes('poll_stat');
    for (const h of entries.filter((e) => /^hctx\d+$/.test(e))) {
      const type = readParsedSync(join(dir, h, 'type'), parseHctxType, errors);
      if (type) st.byType[type] = (st.byType[type] ?? 0) + 1;
      const counters = readParsedSync(join(dir, h, 'io_poll'), (t) => parseHctxIoPoll(h, t), errors);
      if (counters === undefined) continue;
      st.hctxIoPoll.push(h);
      st.firstCounters.push(counters);
    }
    return st;
  }

  private async btfFeatures(): Promise<NonNullable<HostReader['btfCache']>> {
    if (this.btfCache) return this.btfCache;
    const path = join(this.opts.paths.sysfs, 'kernel/btf/vmlinux');
    try {
      this.btfCache = withPositionalFile(path, this.opts.btfMaxBytes ?? 256 * 1024 * 1024, (f) => {
        const r = parseBtf(f);
        return r.ok ? btfFeatures(r.value) : { error: `${path}: ${r.error}` };
      });
    } catch (e) {
      // No BTF is a normal old-kernel state: fall back to debugfs and the release hint.
      this.btfCache = isMissing(e) ? 'absent' : { error: `${path}: ${messageOf(e)}` };
    }
    return this.btfCache;
  }
}

/** A device directory that resolves outside its tree is not read (see resolvesWithin). */
function containedIn(realRootPath: string, dir: string, errors: Errors): boolean {
  let inside: boolean;
  try {
    inside = resolvesWithin(realRootPath, dir);
  } catch {
    inside = true; // unreadable: the reads will say so
  }
  return insideOrRecorded(inside, realRootPath, dir, errors);
}

function insideOrRecorded(inside: boolean, realRootPath: string, dir: string, errors: Errors): boolean {
  if (!inside) errors.push({ file: dir, message: `resolves outside ${realRootPath}: not read` });
  return inside;
}

/**
 * A device entry's identity (not followed): inode and change time. sysfs and debugfs give a
 * re-created device new inodes; the change time also tells a re-created fixture directory on a
 * file system that reuses inode numbers, and one whose entries changed (debugfs hctx dirs).
 * Synchronous: lstat(2) is answered from the dentry or kernfs node, it runs no attribute show().
 */
function identity(path: string, d: DeviceReading): string | undefined {
  try {
    const st = lstatSync(path, { bigint: true });
    return `${st.ino}/${st.ctimeNs}`;
  } catch (e) {
    if (!isMissing(e)) d.errors.push({ file: path, message: messageOf(e) });
    return undefined;
  }
}

/** The collector's one-line error: the first problem, and how many more. */
function firstError(hostErrors: Errors, devices: DeviceReading[], root: string): string | undefined {
  const all = [...hostErrors, ...devices.flatMap((d) => d.errors.filter((e) => e.file.startsWith(root)))];
  if (all.length === 0) return undefined;
  const [first] = all;
  return `${first!.file}: ${first!.message}${all.length > 1 ? ` (+${all.length - 1} more)` : ''}`;
}
