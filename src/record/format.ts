// The recording format: JSON lines. Line 1 is a header, every further line one SnapshotInputs
// (the raw, recordable input of one scrape, src/snapshot/types.ts). Versioned so that a reader
// refuses what it does not understand instead of misreading it.
import { bucketPairs, flatPairs } from '../model/hist.js';
import type { SnapshotInputs } from '../snapshot/types.js';

export const RECORDING_FORMAT = 'hybridpoll-recording';
export const RECORDING_VERSION = 1;

/** Longest line a reader accepts, in characters: a frame of a large host is well under 1 MB. */
export const MAX_LINE_CHARS = 8 * 1024 * 1024;

export type RecordingSource = 'live' | 'synthetic';

export interface RecordingHeader {
  format: typeof RECORDING_FORMAT;
  version: typeof RECORDING_VERSION;
  /** ISO 8601 time the recording was started */
  created: string;
  /** host name of the recorded machine (or of the synthetic model) */
  host: string;
  source: RecordingSource;
  description: string;
}

export function headerLine(h: RecordingHeader): string {
  return JSON.stringify(h) + '\n';
}

/** A frame's line. Histogram buckets (and bucket sums) are written as [index, value] pairs (in memory BucketHist keeps them flat). */
export function frameLine(f: SnapshotInputs): string {
  if (!f.bpf) return JSON.stringify(f) + '\n';
  const devices = f.bpf.devices.map((d) => ({
    ...d,
    hists: Object.fromEntries(
      Object.entries(d.hists).map(([kind, h]) => [kind, { ...h, buckets: bucketPairs(h), ...(h.bucketSumsNs ? { bucketSumsNs: flatPairs(h.bucketSumsNs) } : {}) }]),
    ),
  }));
  return JSON.stringify({ ...f, bpf: { ...f.bpf, devices } }) + '\n';
}

/** A problem in a recording, located by its 1-based line number. */
export class RecordingError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
    this.name = 'RecordingError';
  }
}
