// Parsers for single-value sysfs files: queue/io_poll, queue/io_poll_delay, module parameters, dev.
import { fail, ok, quote, type Parsed } from './result.js';

const INT_RE = /^-?\d+$/;

/** A file holding one decimal integer and a newline. */
export function parseIntFile(text: string): Parsed<number> {
  const t = text.trim();
  if (!INT_RE.test(t)) return fail(`expected an integer, got ${quote(t)}`);
  const n = Number(t);
  if (!Number.isSafeInteger(n)) return fail(`integer out of range: ${quote(t)}`);
  return ok(n);
}

/** queue/io_poll: 0 or 1. */
export function parseIoPoll(text: string): Parsed<number> {
  const r = parseIntFile(text);
  if (r.ok && r.value !== 0 && r.value !== 1) return fail(`io_poll must be 0 or 1, got ${r.value}`);
  return r;
}

/** queue/io_poll_delay: -1 (classic), 0 (adaptive ½ mean), >0 fixed µs. Older kernels accepted other negatives. */
export function parseIoPollDelay(text: string): Parsed<number> {
  return parseIntFile(text);
}

/** sysfs `dev`: "major:minor". */
export function parseDevNum(text: string): Parsed<string> {
  const t = text.trim();
  if (!/^\d+:\d+$/.test(t)) return fail(`expected major:minor, got ${quote(t)}`);
  return ok(t);
}

export type PollMode = 'classic' | 'adaptive' | 'fixed';

/** What an io_poll_delay value means on kernels where it still works (≤6.3). */
export function pollModeOf(ioPollDelay: number): PollMode {
  if (ioPollDelay < 0) return 'classic';
  return ioPollDelay === 0 ? 'adaptive' : 'fixed';
}
