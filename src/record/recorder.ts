// The record loop: read a snapshot every interval (on a fixed schedule, so it does not drift), write
// it, stop after a count or a duration or when aborted. Clock and sleep are injected for tests.
import type { InputReader } from '../snapshot/engine.js';
import type { RecordingWriter } from './writer.js';

export interface RecordLoopOptions {
  read: InputReader;
  writer: RecordingWriter;
  intervalMs: number;
  /** stop after this many frames */
  count?: number;
  /** stop once the next frame would be later than this after the first */
  durationMs?: number;
  /** aborting ends the loop after the frame being taken, if any, is written */
  signal: AbortSignal;
  onFrame?: (frames: number, bytes: number) => void;
  now?: () => number;
}

export type RecordEnd = 'count' | 'duration' | 'aborted';

/** Resolves after ms, or at once when the signal aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done);
  });
}

export async function recordLoop(o: RecordLoopOptions): Promise<RecordEnd> {
  const now = o.now ?? Date.now;
  const start = now();
  let slot = 0;
  for (;;) {
    if (o.signal.aborted) return 'aborted';
    await o.writer.write(await o.read());
    o.onFrame?.(o.writer.frames, o.writer.bytes);
    if (o.count !== undefined && o.writer.frames >= o.count) return 'count';
    // The next slot of the schedule; slots missed by a slow read are skipped, not made up.
    slot = Math.max(slot + 1, Math.ceil((now() - start) / o.intervalMs));
    if (o.durationMs !== undefined && slot * o.intervalMs > o.durationMs) return 'duration';
    await pause(start + slot * o.intervalMs - now(), o.signal);
  }
}
