// The model as a stage of the snapshot engine: fed every snapshot in order, it keeps the sliding
// window and the wasted-CPU-seconds counters, and analyses every device with BPF data.
import type { ModelStage } from '../snapshot/engine.js';
import { runSteps } from '../steps.js';
import type { Snapshot } from '../snapshot/types.js';
import { analyse, deviceContext } from './analyse.js';
import type { AnalyseOptions, ModelResult, ModelTarget } from './types.js';
import { Accumulator, SlidingWindow } from './window.js';

export interface EfficiencyModelOptions extends Omit<AnalyseOptions, 'latencyBudget'> {
  windowSeconds: number;
  latencyBudget: number;
  /** the window keeps older snapshots at least windowSeconds/windowSlots apart (memory bound) */
  windowSlots?: number;
}

export class EfficiencyModel implements ModelStage {
  private readonly acc = new Accumulator();
  private readonly window: SlidingWindow;
  /** monotonic wasted CPU-seconds per dev ("major:minor"), with the device label last used */
  private readonly wasted = new Map<string, { device: string; seconds: number }>();

  constructor(private readonly opts: EfficiencyModelOptions) {
    if (!(opts.latencyBudget > 0)) throw new Error('latency budget must be > 0');
    this.window = new SlidingWindow(opts.windowSeconds, opts.windowSlots);
  }

  update(snapshot: Snapshot): ModelResult {
    return runSteps(this.updateSteps(snapshot));
  }

  /** update() one device at a time: yields after each device's analysis (src/steps.ts). */
  *updateSteps(snapshot: Snapshot): Generator<void, ModelResult> {
    const bpf = snapshot.bpf;
    const targets: ModelTarget[] = [];
    // Without a BPF reading (collector failed this scrape) keep all state: the counters must not
    // reset because one scrape had no data, and the next reading diffs against the last good one.
    if (bpf) {
      const totals = this.acc.update(bpf);
      this.window.push({ tMs: snapshot.takenAtMs, monoNs: bpf.takenAtNs, devices: totals, ...(bpf.sampleRate !== undefined ? { sampleRate: bpf.sampleRate } : {}) });
      for (const dev of [...this.wasted.keys()]) if (!totals.has(dev)) this.wasted.delete(dev);
      const era = snapshot.host?.era.era ?? 'unknown';
      const release = snapshot.host?.features.release;
      for (const [dev, cur] of totals) {
        const ctx = deviceContext(snapshot, dev, cur.device);
        const d = this.window.delta(dev);
        const target = d ? analyse({ dev, ...ctx, era, ...(release ? { release } : {}), ...d }, this.opts) : undefined;
        if (target) targets.push(target);
        // A device's counter starts with its first analysis and lives while the device is present;
        // it does not count while a ring over several devices polls it (ModelTarget.sharedRing).
        const modelled = target && !target.sharedRing ? target : undefined;
        const w = this.wasted.get(dev) ?? (modelled ? { device: ctx.device, seconds: 0 } : undefined);
        if (!w) {
          yield;
          continue;
        }
        w.device = ctx.device;
        w.seconds += modelled ? this.wastedSince(dev, modelled) : 0;
        this.wasted.set(dev, w);
        yield;
      }
    }
    return {
      windowSeconds: this.window.span(),
      configuredWindowSeconds: this.opts.windowSeconds,
      latencyBudget: this.opts.latencyBudget,
      targets,
      wastedCpuSecondsTotal: [...this.wasted.values()].map((w) => ({ ...w })),
    };
  }

  /**
   * CPU-seconds wasted since the previous snapshot: measured CPU of the interval minus what the
   * best static sleep would have cost for the same I/Os. Clamped at 0 so the counter is monotonic
   * (a negative value means the model is off; the self-check ratio shows that).
   */
  private wastedSince(dev: string, t: ModelTarget): number {
    const iv = this.window.lastInterval(dev);
    if (!iv) return 0;
    const ios = iv.counters['polled_ios'] ?? 0;
    const spin = iv.counters['spin_ns'] ?? iv.hists.spin?.sumNs ?? 0;
    const sleeps = iv.counters['sleeps'] ?? iv.hists.sleep_req?.count ?? 0;
    if (!(ios > 0)) return 0;
    const measuredNs = spin + sleeps * t.switchCostNs;
    return Math.max(0, measuredNs - ios * t.best.cpuNs) / 1e9;
  }
}
