// The refresh loop (--collector.interval > 0): first refresh at start, scrapes served from the
// latest snapshot without reads of their own, never two refreshes at once, skipped ticks counted,
// a refresh on request (the BPF loader came up) outside the tick grid. Fake timers and clock: the
// assertions are on counts and order, not on wall time.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log.js';
import { Refresher } from '../../src/snapshot/refresher.js';
import type { Snapshot } from '../../src/snapshot/types.js';

const snap = (n: number): Snapshot => ({
  takenAtMs: n,
  bpfStatus: { mode: 'off', state: 'disabled', cause: 'disabled_by_flag', reason: 'test', loaderRestarts: 0 },
  collectors: [],
  pollStatAges: [],
  hctxTotals: [],
});

/** A take() that counts calls and overlaps, and can be held open. */
function taker() {
  let takes = 0;
  let active = 0;
  let maxActive = 0;
  let gate: Promise<void> | undefined;
  let release = () => {};
  return {
    take: async (): Promise<Snapshot> => {
      const n = ++takes;
      active += 1;
      maxActive = Math.max(maxActive, active);
      if (gate) await gate;
      active -= 1;
      return snap(n);
    },
    hold() {
      gate = new Promise((r) => (release = () => { gate = undefined; r(); }));
    },
    release: () => release(),
    get takes() { return takes; },
    get maxActive() { return maxActive; },
  };
}

const log = createLogger('error', () => {});
let r: Refresher | undefined;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  r?.stop();
  r = undefined;
  vi.useRealTimers();
});

describe('Refresher', () => {
  it('refreshes at start and every interval; scrapes in between cause no reads', async () => {
    const t = taker();
    r = new Refresher({ take: t.take, intervalMs: 1000, log, now: () => Date.now() });
    r.start();
    const first = await r.snapshot();
    expect(first.takenAtMs).toBe(1);
    const many = await Promise.all(Array.from({ length: 100 }, () => r!.snapshot()));
    expect(new Set(many)).toEqual(new Set([first]));
    expect(t.takes).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(t.takes).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.takes).toBe(2);
    expect((await r.snapshot()).takenAtMs).toBe(2);
    await vi.advanceTimersByTimeAsync(3000);
    expect(t.takes).toBe(5);
    expect(r.skippedTicks).toBe(0);
  });

  it('a refresh that outlives the interval: no overlap, the previous snapshot served meanwhile, missed ticks counted', async () => {
    const t = taker();
    r = new Refresher({ take: t.take, intervalMs: 1000, log, now: () => Date.now() });
    r.start();
    await r.snapshot();
    t.hold();
    await vi.advanceTimersByTimeAsync(1000); // tick 1 starts a refresh that hangs
    expect(t.takes).toBe(2);
    await vi.advanceTimersByTimeAsync(3500); // ticks 2, 3, 4 come due while it runs
    expect(t.takes).toBe(2);
    expect((await r.snapshot()).takenAtMs).toBe(1); // served at once, from the previous refresh
    t.release();
    await vi.advanceTimersByTimeAsync(0);
    // tick 4 runs late, at once; ticks 2 and 3 are skipped
    expect(t.takes).toBe(3);
    expect(r.skippedTicks).toBe(2);
    expect(t.maxActive).toBe(1);
    await vi.advanceTimersByTimeAsync(499); // back on the grid: tick 5 at 5000
    expect(t.takes).toBe(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(t.takes).toBe(4);
    expect(t.maxActive).toBe(1);
  });

  it('requestNow: at once when idle, after the running refresh otherwise; the grid stays', async () => {
    const t = taker();
    r = new Refresher({ take: t.take, intervalMs: 1000, log, now: () => Date.now() });
    r.start();
    await r.snapshot();
    await vi.advanceTimersByTimeAsync(300);
    r.requestNow();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.takes).toBe(2);
    await vi.advanceTimersByTimeAsync(700); // tick 1 still at 1000
    expect(t.takes).toBe(3);
    t.hold();
    await vi.advanceTimersByTimeAsync(1000); // tick 2 hangs
    r.requestNow();
    r.requestNow();
    expect(t.takes).toBe(4);
    t.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.takes).toBe(5); // one extra refresh for both requests, after the running one
    expect(t.maxActive).toBe(1);
    expect(r.skippedTicks).toBe(0);
  });

  it('a failed refresh is logged and the previous snapshot stays served; before any success, scrapes get the next one', async () => {
    const lines: string[] = [];
    let n = 0;
    r = new Refresher({
      take: async () => {
        n += 1;
        if (n === 1 || n === 3) throw new Error(`refresh ${n} broke`);
        return snap(n);
      },
      intervalMs: 1000,
      log: createLogger('error', (l) => lines.push(l)),
      now: () => Date.now(),
    });
    r.start();
    await expect(r.snapshot()).rejects.toThrow('refresh 1 broke');
    const waiting = r.snapshot();
    await vi.advanceTimersByTimeAsync(1000);
    expect((await waiting).takenAtMs).toBe(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect(n).toBe(3);
    expect((await r.snapshot()).takenAtMs).toBe(2);
    expect(lines.filter((l) => l.includes('refresh failed'))).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1000);
    expect((await r.snapshot()).takenAtMs).toBe(4);
  });
});
