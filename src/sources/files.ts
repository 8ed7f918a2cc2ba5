// File access at the edge: bounded reads, so a huge or never-ending file cannot exhaust memory.
import { constants } from 'node:fs';
import { open, readdir, realpath } from 'node:fs/promises';

export const DEFAULT_MAX_BYTES = 64 * 1024;

export class FileTooLargeError extends Error {}

/**
 * Read a whole small file; refuse files larger than maxBytes. Kernel attributes are regular files:
 * anything else (a FIFO, device or symlink planted in a tree given with --path.*) is refused; O_NONBLOCK
 * keeps open() on a FIFO from blocking a libuv thread (and every later scrape) forever.
 * The buffer grows as data arrives, so a 6 MB BTF does not cost a 256 MB allocation.
 */
export async function readBounded(path: string, maxBytes = DEFAULT_MAX_BYTES): Promise<Buffer> {
  // O_NOFOLLOW: kernel attribute files are never symlinks; one planted in a fixture or a writable
  // --path.* tree must not make the exporter (often root) quote another file in its errors.
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW).catch((e: unknown) => {
    throw errnoOf(e) === 'ELOOP' ? new Error('is a symbolic link: not followed') : e;
  });
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new Error('not a regular file');
    // sysfs reports 4096 and debugfs 0 whatever the content: the size is only a first guess.
    let buf = Buffer.allocUnsafe(Math.min(maxBytes + 1, Math.max(st.size + 1, 4096)));
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        const bigger = Buffer.allocUnsafe(Math.min(maxBytes + 1, buf.length * 2));
        buf.copy(bigger, 0, 0, n);
        buf = bigger;
      }
      const { bytesRead } = await fh.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > maxBytes) throw new FileTooLargeError(`larger than ${maxBytes} bytes: not read`);
    }
    return buf.subarray(0, n);
  } finally {
    await fh.close();
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

/**
 * Whether `path` resolves (symlinks followed) to `root` or below. sysfs block/<dev> entries are
 * symlinks into ../devices, so links are normal; one that leaves the tree is not read, or its
 * files' content would end up quoted in errors. A missing path counts as inside: reads report it.
 */
export async function resolvesWithin(root: string, path: string): Promise<boolean> {
  try {
    const [r, p] = await Promise.all([realpath(root), realpath(path)]);
    return p === r || p.startsWith(r.endsWith('/') ? r : `${r}/`);
  } catch (e) {
    if (isMissing(e)) return true;
    throw e;
  }
}
