// File access at the edge: bounded reads, so a huge or never-ending file cannot exhaust memory.
import { constants } from 'node:fs';
import { closeSync, fstatSync, openSync, read, readdirSync, readSync, realpathSync } from 'node:fs';
import { readdir, realpath } from 'node:fs/promises';
import type { ByteSource } from './btf.js';

export const DEFAULT_MAX_BYTES = 64 * 1024;

export class FileTooLargeError extends Error {}

/**
 * Read a whole small file; refuse files larger than maxBytes. O_NONBLOCK keeps open() on a FIFO
 * planted in a tree given with --path.* from blocking forever (open(2) runs on the event loop,
 * see readBounded); a device node is cut off at maxBytes like any file. O_NOFOLLOW: kernel
 * attribute files are never symlinks, and one planted in a writable tree must not make the
 * exporter (often root) quote another file in its errors. No fstat: it would add a system call to
 * every file, whose size sysfs does not know anyway; the buffer grows instead.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW;

const symlinkRefused = (e: unknown): unknown => (errnoOf(e) === 'ELOOP' ? new Error('is a symbolic link: not followed') : e);

/** The read buffer, doubled (up to maxBytes + 1, to detect an oversized file) once it is full. */
function roomIn(buf: Buffer<ArrayBuffer>, n: number, maxBytes: number): Buffer<ArrayBuffer> {
  if (n < buf.length) return buf;
  const bigger = Buffer.allocUnsafe(Math.min(maxBytes + 1, buf.length * 2));
  buf.copy(bigger, 0, 0, n);
  return bigger;
}

function checkSize(n: number, maxBytes: number): void {
  if (n > maxBytes) throw new FileTooLargeError(`larger than ${maxBytes} bytes: not read`);
}

/**
 * A short read is the end: regular files, sysfs attributes (one show() per read) and debugfs
 * seq_files (filled up to the buffer) all end so. Saves a read per file, about a quarter of the
 * file reading's time when each was a thread-pool round trip. Except whole pages: kernfs binary
 * attributes (/sys/kernel/btf/vmlinux) return at most one page per read, so a short read of a
 * multiple of 4096 bytes goes on until a read returns 0.
 */
function isLastRead(bytesRead: number, want: number): boolean {
  return bytesRead === 0 || (bytesRead < want && bytesRead % 4096 !== 0);
}

/** One read(2) on the thread pool, where a read stuck in the kernel cannot hold the event loop. */
function readOnPool(fd: number, buf: Buffer, offset: number, length: number): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, buf, offset, length, null, (e, bytesRead) => (e ? reject(e) : resolve(bytesRead)));
  });
}

/** open(2) with OPEN_FLAGS; a symlink's refusal (O_NOFOLLOW) gets the error that says so. */
function openRefusingSymlinks(path: string): number {
  try {
    return openSync(path, OPEN_FLAGS);
  } catch (e) {
    throw symlinkRefused(e);
  }
}

/**
 * Only the read(2)s go to the thread pool: a sysfs attribute's show() runs in read and may wait
 * on a lock (queue attributes take q->sysfs_lock, which a writer holds across a queue freeze),
 * while open(2) and close(2) of a kernfs or debugfs file only set up and free the open file and
 * return at once. Opening and closing in place saves two thread-pool round trips per file, and
 * the FileHandle that fs/promises builds (and finalises) for each.
 */
export async function readBounded(path: string, maxBytes = DEFAULT_MAX_BYTES): Promise<Buffer> {
  const fd = openRefusingSymlinks(path);
  try {
    let buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, 4096));
    let n = 0;
    for (;;) {
      buf = roomIn(buf, n, maxBytes);
      const want = buf.length - n;
      const bytesRead = await readOnPool(fd, buf, n, want);
      n += bytesRead;
      checkSize(n, maxBytes);
      if (isLastRead(bytesRead, want)) break;
    }
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * `use` reads the file where it lies, by position (btf.ts's ByteSource), and the file is closed
 * after it: for the one parse of the kernel's BTF per process, which reads a few records and
 * windows of the ~6 MB blob instead of a copy that stayed resident until V8's next full GC. Synchronous: kernfs serves that
 * binary attribute one page per read(2), and a thread-pool round trip per page took seconds on an
 * emulated CPU; it is served from kernel memory and cannot hang. The size is fstat's (kernfs gives
 * a binary attribute its size) and is bounded by maxBytes; O_NONBLOCK makes a FIFO planted in a
 * --path.sysfs tree fail, and a FIFO's or a device's size of 0 reads as an empty file.
 */
export function withPositionalFile<T>(path: string, maxBytes: number, use: (f: ByteSource) => T): T {
  const fd = openRefusingSymlinks(path);
  try {
    const { size } = fstatSync(fd);
    checkSize(size, maxBytes);
    // One buffer for every read: a buffer per 64 KiB window was 11 MiB of garbage per parse, and
    // the process kept its pages after the GC freed them (RSS +2 MiB against the whole-file copy).
    let scratch = Buffer.allocUnsafe(0);
    const read = (offset: number, length: number): Buffer => {
      const want = Math.max(0, Math.min(length, size - offset));
      if (scratch.length < want) scratch = Buffer.allocUnsafe(want);
      let n = 0;
      // One page per read(2) from kernfs: go on until the window is full or the file ends.
      while (n < want) {
        const got = readSync(fd, scratch, n, want - n, offset + n);
        if (got === 0) break;
        n += got;
      }
      return scratch.subarray(0, n);
    };
    return use({ size, read });
  } finally {
    closeSync(fd);
  }
}

/** The synchronous read loop of readTextSync: buf grown as needed, ended as readBounded's. */
function readAllSync(fd: number, start: Buffer<ArrayBuffer>, maxBytes: number): { buf: Buffer<ArrayBuffer>; n: number } {
  let buf = start;
  let n = 0;
  for (;;) {
    buf = roomIn(buf, n, maxBytes);
    const want = buf.length - n;
    const bytesRead = readSync(fd, buf, n, want, null);
    n += bytesRead;
    checkSize(n, maxBytes);
    if (isLastRead(bytesRead, want)) return { buf, n };
  }
}

/** The buffer of readTextSync, kept between reads: the text is decoded before the next read. */
let scratch: Buffer<ArrayBuffer> = Buffer.allocUnsafe(4096);

/**
 * readText, synchronously, for kernel files whose read(2) cannot block (see the callers): no
 * thread-pool round trip, and one buffer for all of them. Ends on a short read as readBounded
 * does, so both return the same text for the same file.
 */
export function readTextSync(path: string, maxBytes = DEFAULT_MAX_BYTES): string {
  const fd = openRefusingSymlinks(path);
  try {
    const { buf, n } = readAllSync(fd, scratch, maxBytes);
    // Grown for a large file: kept up to the default bound, so it stays small.
    if (buf.length <= DEFAULT_MAX_BYTES + 1) scratch = buf;
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}

export async function readText(path: string, maxBytes = DEFAULT_MAX_BYTES): Promise<string> {
  return (await readBounded(path, maxBytes)).toString('utf8');
}

export function errnoOf(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

/** Missing file or directory: a feature this kernel does not have, not an error. */
export function isMissing(e: unknown): boolean {
  const c = errnoOf(e);
  return c === 'ENOENT' || c === 'ENOTDIR';
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Directory entries, or undefined when the directory does not exist. */
export async function listDir(path: string): Promise<string[] | undefined> {
  try {
    return (await readdir(path)).sort();
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
}

/** listDir, synchronously (see readTextSync). */
export function listDirSync(path: string): string[] | undefined {
  try {
    return readdirSync(path).sort();
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
}

/**
 * Whether `path` resolves (symlinks followed) to `realRoot` (already resolved, see realRoot) or
 * below. sysfs block/<dev> entries are symlinks into ../devices, so links are normal; one that
 * leaves the tree is not read, or its files' content would end up quoted in errors. A missing
 * path counts as inside: the reads report it.
 */
export function resolvesWithin(realRootPath: string, path: string): boolean {
  // synchronous: resolving walks directory entries (lstat, readlink), which no kernfs or debugfs
  // show() takes part in (see readTextSync)
  try {
    return isWithin(realRootPath, realpathSync.native(path));
  } catch (e) {
    if (isMissing(e)) return true;
    throw e;
  }
}

function isWithin(realRootPath: string, p: string): boolean {
  return p === realRootPath || p.startsWith(realRootPath.endsWith('/') ? realRootPath : `${realRootPath}/`);
}

/** A tree root with symlinks resolved (itself when it cannot be resolved: its reads will fail). */
export async function realRoot(root: string): Promise<string> {
  return realpath(root).catch(() => root);
}
