// What to keep in mind when reading a device's figures, in words, for the text and HTML reports
// (the JSON carries the same as data in the target and as these lines). Pure.
import { aboveClassicCause, belowBestCause, OVERSLEEP_MARGIN, type ModelTarget } from '../model/index.js';
import { duration, percent } from './units.js';

export interface Caveats {
  /** F_D not identified by the data (ModelTarget.deviceTime.identified false); absent otherwise */
  identified?: string;
  /** the share of F_D the data cannot place; absent when 0 */
  unresolved?: string;
  /** modelled and measured oversleep disagree beyond the margin */
  oversleep?: string;
  /** η outside [0, 1]: the cause */
  efficiency?: string;
  /** negative wasted CPU: the cause */
  wastedCpu?: string;
}

export function caveats(t: ModelTarget): Caveats {
  const out: Caveats = {};
  const u = t.deviceTime.unresolved;
  if (!t.deviceTime.identified) {
    const why = !t.depth
      ? `over half of it (${percent(u)}) is unresolved`
      : t.current.sleptFraction === 0
        ? 'at this queue depth the classic poller is the bottleneck: each completion waits for its next look, so the measured latency moves little with the device time'
        : `at this queue depth under 1% of the slept I/Os (or fewer than 20) were still pending at wake-up (${t.measured?.oversleepRatio === undefined ? 'nearly all' : percent(t.measured.oversleepRatio)} overslept), so no device time was timed`;
    out.identified = `the device time is not identified: ${why}. E[D] and every figure for another sleep (the what-if rows, the optimal sleep, efficiency, wasted CPU) rest on where the model put it and can be off either way; the self-check at the current sleep still holds`;
  }
  if (u > 0) {
    out.unresolved = `${percent(u)} of I/Os complete at wake-up below every exact sample: their device time is unknown below the found time ${duration(t.deviceTime.unresolvedAtNs ?? 0)}, where the model puts them (the most the data allow), so the modelled oversleep and added latency are lower bounds and the optimal sleep an upper bound`;
  }
  const o = t.oversleepCheck;
  if (o && !o.consistent) {
    const why = u > 0 ? 'the unresolved I/Os are modelled at their found time' : 'the device time is too narrow for the bucket grid near the wake-up';
    out.oversleep = `modelled ${percent(o.modelled)} overslept against ${percent(o.measured)} measured, more than ${(OVERSLEEP_MARGIN * 100).toFixed(0)} points apart (${why}): the modelled added latency is not to be trusted`;
  }
  if (t.efficiency !== undefined && t.efficiency > 1) out.efficiency = `above 100%: ${belowBestCause(t) ?? 'the current state costs less CPU than the best static sleep'}`;
  else if (t.efficiency !== undefined && t.efficiency < 0) out.efficiency = `below 0%: ${aboveClassicCause(t) ?? 'the current state costs more CPU than classic polling'}`;
  if (t.wastedCpuCores !== undefined && t.wastedCpuCores < 0) out.wastedCpu = `negative: ${belowBestCause(t) ?? 'the measured CPU is below the best sleep\'s'}`;
  return out;
}
