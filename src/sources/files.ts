// File access at the edge: bounded reads, so a huge or never-ending file cannot exhaust memory.
import { open, readdir } from 'node:fs/promises';

export const DEFAULT_MAX_BYTES = 64 * 1024;

export class FileTooLargeError extends Error {}

/** Read a whole small file; refuse files larger than maxBytes. */
export async function readBounded(path: string, maxBytes = DEFAULT_MAX_BYTES): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, null);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > maxBytes) throw new FileTooLargeError(`${path}: larger than ${maxBytes} bytes`);
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
