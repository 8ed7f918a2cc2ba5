// The model as a stage of the snapshot engine: fed every snapshot in order, it keeps the sliding
// window and the wasted-CPU-seconds counters, and analyses every device with BPF data.
import type { ModelStage } from '../snapshot/engine.js';
import { runSteps } from '../steps.js';
import type { Snapshot } from '../snapshot/types.js';
import { deviceContext } from './pair.js';
import { wastedPerIoNs } from './analyse.js';
import { analyseUnit, analysisUnits, withheld } from './ring.js';
import type { AnalyseOptions, DeviceWindow, ModelResult, ModelTarget } from './types.js';
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
      const windows: DeviceWindow[] = [];
      const names = new Map<string, string>();
      for (const [dev, cur] of totals) {
        const ctx = deviceContext(snapshot, dev, cur.device);
        names.set(dev, ctx.device);
        const d = this.window.delta(dev);
        if (d) windows.push({ dev, ...ctx, era, ...(release ? { release } : {}), ...d });
      }
      const analysed = new Map<string, ModelTarget>();
      for (const unit of analysisUnits(windows)) {
        for (const t of analyseUnit(unit, this.opts)) analysed.set(t.dev, t);
        yield;
      }
      for (const dev of totals.keys()) {
        const target = analysed.get(dev);
        if (target) targets.push(target);
        // A device's counter starts with its first analysis and lives while the device is present;
        // it does not count while its figures are withheld (a ring over several devices not modelled whole).
        const modelled = target && !withheld(target) ? target : undefined;
        const w = this.wasted.get(dev) ?? (modelled ? { device: names.get(dev)!, seconds: 0 } : undefined);
        if (!w) continue;
        w.device = names.get(dev)!;
        w.seconds += modelled ? this.wastedSince(modelled) : 0;
        this.wasted.set(dev, w);
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
   * best static sleep would have cost for the same I/Os (wastedPerIoNs: none where the device
   * polls classically and that is the best). Clamped at 0 so the counter is monotonic
   * (a negative value means the model is off; the self-check ratio shows that).
   */
  private wastedSince(t: ModelTarget): number {
    const ring = t.sharedRing?.ring;
    // a device of a ring modelled whole: its part (cpuShare) of what the ring's poller measured over every device of it
    const own = this.measuredSince(t.dev, t.switchCostNs);
    const parts = ring ? ring.devs.map((dev) => (dev === t.dev ? own : this.measuredSince(dev, t.switchCostNs))) : [own];
    if (!own || parts.some((p) => p === undefined)) return 0;
    const measuredNs = parts.reduce((a, p) => a + p!.cpuNs, 0) * (ring ? ring.cpuShare : 1);
    const ios = own.ios;
    if (!(ios > 0)) return 0;
    return Math.max(0, ios * wastedPerIoNs(t, measuredNs / ios)) / 1e9;
  }

  /** A device's polled I/Os and measured poll-loop CPU (spin + sleeps · c_sw) since the previous snapshot. */
  private measuredSince(dev: string, switchCostNs: number): { ios: number; cpuNs: number } | undefined {
    const iv = this.window.lastInterval(dev);
    if (!iv) return undefined;
    const spin = iv.counters['spin_ns'] ?? iv.hists.spin?.sumNs ?? 0;
    const sleeps = iv.counters['sleeps'] ?? iv.hists.sleep_req?.count ?? 0;
    return { ios: iv.counters['polled_ios'] ?? 0, cpuNs: spin + sleeps * switchCostNs };
  }
}
