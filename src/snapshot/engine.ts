// The snapshot engine: one consistent snapshot at a time, shared by every caller that asks while
// it is taken (single-flight): every concurrent scrape with --collector.interval=0, the refresh
// loop otherwise (refresher.ts). Inputs come from a reader (live files and BPF, or a recording).
import type { ModelResult } from '../model/types.js';
import { derive, emptyDeriveState, type DeriveState } from './derive.js';
import type { Logger } from '../log.js';
import { runStepsYielding } from '../steps.js';
import { collectorLog } from './collectorLog.js';
import type { SnapshotSource } from './refresher.js';
import type { CollectorResult, Snapshot, SnapshotInputs } from './types.js';

export type InputReader = () => Promise<SnapshotInputs>;

/** The efficiency model as the engine sees it: fed every snapshot in order, keeps its own window. */
export interface ModelStage {
  update(snapshot: Snapshot): ModelResult;
  /** the same as steps (one per device): the engine lets the event loop run between them */
  updateSteps?(snapshot: Snapshot): Generator<void, ModelResult>;
}

export class SnapshotEngine implements SnapshotSource {
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

  /** A new snapshot. Callers arriving while one is being taken share it. */
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
        // Step by step, so that a scrape arriving meanwhile is served (tens of ms at 64 devices).
        snap.model = this.model.updateSteps ? await runStepsYielding(this.model.updateSteps(snap)) : this.model.update(snap);
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
