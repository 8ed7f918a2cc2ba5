// Collection decoupled from scraping (--collector.interval, as smartctl_exporter's
// --smartctl.interval): a loop takes a snapshot every interval and scrapes serve the latest one,
// so a scrape costs a buffer write instead of a host read, a BPF request and the model.
// Refreshes never overlap: one that outlives the interval delays the next tick, and the ticks it
// swallowed beyond that one are counted (skippedTicks, a self-metric).
import type { Logger } from '../log.js';
import type { Snapshot } from './types.js';

/** Where the HTTP side gets snapshots: per scrape (SnapshotEngine) or the latest refresh (Refresher). */
export interface SnapshotSource {
  /** The snapshot a scrape serves. */
  snapshot(): Promise<Snapshot>;
  /** The most recent completed snapshot, if any (for the / page, which must not trigger reads). */
  latest(): Snapshot | undefined;
}

export interface RefresherOptions {
  /** one snapshot (single-flight: SnapshotEngine.snapshot) */
  take: () => Promise<Snapshot>;
  intervalMs: number;
  /** work done on a new snapshot before it is served (rendering the body); part of the refresh */
  prepare?: (snap: Snapshot) => Promise<void>;
  log: Logger;
  /** monotonic clock, ms; injectable for tests */
  now?: () => number;
}

export class Refresher implements SnapshotSource {
  /** ticks that came due while a refresh ran, beyond the one that runs late */
  skippedTicks = 0;
  /** refreshes completed */
  refreshes = 0;
  private current?: Snapshot;
  private first?: Promise<Snapshot>;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private startedAt = 0;
  /** the last tick of the grid a refresh ran for (0: the one at start) */
  private tick = 0;
  private readonly now: () => number;
  private running = false;
  /** a refresh was asked for while one ran: run another when it ends */
  private again = false;
  /** scrapes waiting for a first snapshot after the first refresh failed: settled by the next one */
  private waiting?: { resolve: (s: Snapshot) => void; reject: (e: unknown) => void };

  constructor(private readonly o: RefresherOptions) {
    if (!(o.intervalMs > 0)) throw new Error('refresh interval must be > 0 ms');
    this.now = o.now ?? (() => performance.now());
  }

  /** Runs the first refresh now and schedules the next ones. */
  start(): void {
    this.startedAt = this.now();
    this.first = this.refresh();
    // A first refresh that failed is retried by the loop; scrapes wait for the first success.
    this.first.catch(() => {});
  }

  /**
   * Refresh now, outside the tick grid (the BPF loader has just come up): at once when idle, right
   * after the running refresh otherwise. Not a skipped tick either way.
   */
  requestNow(): void {
    if (this.stopped || !this.first) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.fire();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  snapshot(): Promise<Snapshot> {
    if (this.current) return Promise.resolve(this.current);
    if (!this.first) return Promise.reject(new Error('refresher not started'));
    return this.first;
  }

  latest(): Snapshot | undefined {
    return this.current;
  }

  private async refresh(): Promise<Snapshot> {
    this.running = true;
    try {
      const snap = await this.o.take();
      await this.o.prepare?.(snap);
      this.current = snap;
      this.refreshes += 1;
      return snap;
    } catch (e) {
      // The engine turns collector failures into self-metrics; what reaches here is a bug (e.g. a
      // family exposed twice): keep serving the last snapshot and say so.
      this.o.log.error('refresh failed; serving the previous snapshot', { err: e instanceof Error ? e.stack ?? e.message : String(e) });
      if (!this.current) this.first = this.nextFirst();
      throw e;
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  /** Until a first refresh succeeds, scrapes wait for the next attempt. */
  private nextFirst(): Promise<Snapshot> {
    const p = new Promise<Snapshot>((resolve, reject) => (this.waiting = { resolve, reject }));
    p.catch(() => {});
    return p;
  }

  /** The next tick on the grid startedAt + k·interval; ticks missed meanwhile are skipped. */
  private schedule(): void {
    if (this.stopped) return;
    if (this.again) {
      this.again = false;
      this.timer = setTimeout(() => this.fire(), 0);
      return;
    }
    const due = Math.floor((this.now() - this.startedAt) / this.o.intervalMs);
    if (due > this.tick) {
      // Ticks tick+1 … due came while the last refresh ran: the latest runs now, late; the others
      // are skipped.
      this.skippedTicks += due - this.tick - 1;
      this.tick = due;
      this.timer = setTimeout(() => this.fire(), 0);
      return;
    }
    const next = this.tick + 1;
    this.timer = setTimeout(() => {
      this.tick = next;
      this.fire();
    }, Math.max(0, this.startedAt + next * this.o.intervalMs - this.now()));
  }

  private fire(): void {
    const w = this.waiting;
    this.waiting = undefined;
    const p = this.refresh();
    p.catch(() => {});
    if (w) p.then(w.resolve, w.reject);
  }
}
