// Parser for debugfs block/<dev>/poll_stat (4.12–6.3; empty file on 5.17+ until used and on 6.4+).
// Format (docs/kernel.md §2.1): 16 lines, read and write interleaved, sizes 512 B … 64 KiB:
//   "read  (512 Bytes): samples=3, mean=1234, min=1000, max=1500"   (mean printed %llu or %lld)
//   "write (512 Bytes): samples=0"
import type { PollStat, PollStatBucket } from './types.js';
import { fail, ok, quote, type Parsed } from './result.js';

const LINE_RE =
  /^(read|write)\s+\((\d+) Bytes\):\s+samples=(\d+)(?:,\s+mean=(-?\d+),\s+min=(-?\d+),\s+max=(-?\d+))?$/;

export function parsePollStat(text: string): Parsed<PollStat> {
  const lines = text.split('\n').map((l) => l.trimEnd()).filter((l) => l.length > 0);
  if (lines.length === 0) return ok({ kind: 'empty' });
  const buckets: PollStatBucket[] = [];
  for (const [i, line] of lines.entries()) {
    const m = LINE_RE.exec(line);
    if (!m) return fail(`poll_stat line ${i + 1} not understood: ${quote(line)}`);
    const [, op, size, samples, mean, min, max] = m;
    // Digits beyond 2^53 are not exact (and 309+ digits become Infinity): refuse, do not export.
    if ([size, samples, mean, min, max].some((v) => v !== undefined && !Number.isSafeInteger(Number(v)))) {
      return fail(`poll_stat line ${i + 1} has a number out of range: ${quote(line)}`);
    }
    const b: PollStatBucket = {
      op: op as 'read' | 'write',
      sizeBytes: Number(size),
      samples: Number(samples),
    };
    if (mean !== undefined) {
      b.meanNs = Number(mean);
      b.minNs = Number(min);
      b.maxNs = Number(max);
    } else if (b.samples !== 0) {
      return fail(`poll_stat line ${i + 1} has samples but no mean/min/max: ${quote(line)}`);
    }
    buckets.push(b);
  }
  return ok({ kind: 'buckets', buckets });
}

/** Stable identity of one line's content, for the "unchanged since" staleness signal. */
export function pollStatLineKey(b: PollStatBucket): string {
  return `${b.samples}/${b.meanNs ?? ''}/${b.minNs ?? ''}/${b.maxNs ?? ''}`;
}
