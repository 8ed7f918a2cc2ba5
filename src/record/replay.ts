// Replays a recording as if it were live: an InputReader for the SnapshotEngine that advances
// through the frames on the wall clock (scaled by `speed`), rebases their timestamps to now, and,
// when looping, shifts every cumulative value by what the previous passes added so that counters
// and histograms never go down.
import type { SnapshotInputs } from '../snapshot/types.js';
import type { InputReader } from '../snapshot/engine.js';
import { addScaled, cumulativeOf, emptyCumulative, passIncrement, shifted, type Cumulative } from './cumulative.js';

export interface ReplayOptions {
  /** A fresh pass over the recording's frames; called again for every loop. */
  open: () => Promise<AsyncIterator<SnapshotInputs>>;
  loop: boolean;
  /** recording seconds per wall-clock second */
  speed: number;
  /** wall clock in ms; injectable for tests */
  now?: () => number;
  /** called once when a --once replay has served its last frame, and on every new loop */
  onPass?: (event: { kind: 'ended' } | { kind: 'loop'; pass: number }) => void;
}

interface Pass {
  frames: AsyncIterator<SnapshotInputs>;
  /** recording time (ms since the replay started, before scaling) at which this pass began */
  startMs: number;
  current: SnapshotInputs;
  next?: SnapshotInputs;
}

export interface ReplayReader extends InputReader {
  /** Passes started so far (1 during the first). */
  passes(): number;
}

export function replayReader(o: ReplayOptions): ReplayReader {
  const now = o.now ?? Date.now;
  let wallStart: number | undefined;
  let firstMs = 0;
  let secondMs: number | undefined;
  let firstBpfNs: number | undefined;
  let pass: Pass | undefined;
  let passCount = 0;
  let ended = false;
  // Cumulative values of the first, second and last frames of a pass, and the resulting shift.
  let first: Cumulative | undefined;
  let second: Cumulative | undefined;
  let increment: Cumulative | undefined;
  let offset = emptyCumulative();
  /** length of one pass in recording ms: first → last frame, plus one step (the first interval) back to the first */
  let periodMs: number | undefined;

  const pull = async (it: AsyncIterator<SnapshotInputs>) => {
    const r = await it.next();
    return r.done ? undefined : r.value;
  };

  const startPass = async (startMs: number): Promise<Pass> => {
    const frames = await o.open();
    const current = await pull(frames);
    if (!current) throw new Error('the recording has no frames');
    passCount += 1;
    if (passCount === 1) {
      firstMs = current.takenAtMs;
      firstBpfNs = current.bpf?.takenAtNs;
      first = cumulativeOf(current);
    }
    const next = await pull(frames);
    if (passCount === 1 && next) {
      second = cumulativeOf(next);
      secondMs = next.takenAtMs;
    }
    return { frames, startMs, current, ...(next ? { next } : {}) };
  };

  const at = (p: Pass, f: SnapshotInputs) => p.startMs + (f.takenAtMs - firstMs);

  const read = async (): Promise<SnapshotInputs> => {
    const t = now();
    wallStart ??= t;
    const elapsed = (t - wallStart) * o.speed;
    pass ??= await startPass(0);
    for (;;) {
      while (pass.next && at(pass, pass.next) <= elapsed) {
        pass.current = pass.next;
        const n = await pull(pass.frames);
        if (n) pass.next = n;
        else delete pass.next;
      }
      if (pass.next) break;
      // End of this pass: the first pass tells how long a pass is and what it adds.
      if (periodMs === undefined) {
        periodMs = pass.current.takenAtMs - firstMs + (secondMs === undefined ? 0 : secondMs - firstMs);
        increment = passIncrement(first!, second ?? first!, cumulativeOf(pass.current));
      }
      if (!o.loop || periodMs <= 0) {
        if (!ended) o.onPass?.({ kind: 'ended' });
        ended = true;
        break;
      }
      const passEnd = pass.startMs + periodMs;
      if (elapsed < passEnd) break;
      // Skip whole passes at once after a long gap between reads: their effect is k increments.
      const k = Math.floor((elapsed - pass.startMs) / periodMs);
      offset = addScaled(offset, increment!, k);
      passCount += k - 1;
      pass = await startPass(pass.startMs + k * periodMs);
      o.onPass?.({ kind: 'loop', pass: passCount });
    }
    const f = shifted(pass.current, offset);
    const wallMs = wallStart + at(pass, pass.current) / o.speed;
    f.takenAtMs = Math.round(wallMs);
    if (f.bpf) f.bpf = { ...f.bpf, takenAtNs: Math.round((firstBpfNs ?? 0) + (wallMs - wallStart) * 1e6) };
    return f;
  };

  return Object.assign(read, { passes: () => passCount });
}

