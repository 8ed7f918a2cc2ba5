// The snapshot engine: one consistent snapshot per scrape, shared by every concurrent scrape
// (single-flight). Inputs come from a reader (live files and BPF, or a recording).
import type { ModelResult } from '../model/types.js';
import { derive, emptyDeriveState, type DeriveState } from './derive.js';
import type { Logger } from '../log.js';
import { collectorLog } from './collectorLog.js';
import type { CollectorResult, Snapshot, SnapshotInputs } from './types.js';

export type InputReader = () => Promise<SnapshotInputs>;

/** The efficiency model as the engine sees it: fed every snapshot in order, keeps its own window. */
export interface ModelStage {
  update(snapshot: Snapshot): ModelResult;
}

export class SnapshotEngine {
  private inFlight?: Promise<Snapshot>;
  private state: DeriveState = emptyDeriveState();
  private last?: Snapshot;
  /** number of times the inputs were actually read (for tests of the single-flight property) */
  reads = 0;

  private readonly noteModel?: (c: CollectorResult) => void;

  constructor(
    private readonly read: InputReader,
    private readonly model?: ModelStage,
    log?: Logger,
  ) {
    // The readers log their own collectors; the model runs here, so its failures are logged here.
    if (log) this.noteModel = collectorLog(log);
  }

  /** The snapshot for this scrape. Scrapes arriving while one is being read share it. */
  snapshot(): Promise<Snapshot> {
    this.inFlight ??= this.take().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** The most recent completed snapshot, if any (for the / page, which must not trigger reads). */
  latest(): Snapshot | undefined {
    return this.last;
  }

  private async take(): Promise<Snapshot> {
    this.reads += 1;
    const inputs = await this.read();
    const { state, derived } = derive(this.state, inputs);
    this.state = state;
    const snap: Snapshot = { ...inputs, ...derived };
    if (this.model) {
      const t0 = performance.now();
      let result: CollectorResult;
      try {
        snap.model = this.model.update(snap);
        result = { name: 'model', success: true, durationSeconds: (performance.now() - t0) / 1000 };
      } catch (e) {
        result = { name: 'model', success: false, durationSeconds: (performance.now() - t0) / 1000, error: e instanceof Error ? e.message : String(e) };
      }
      snap.collectors = [...snap.collectors, result];
      this.noteModel?.(result);
    }
    this.last = snap;
    return snap;
  }
}
