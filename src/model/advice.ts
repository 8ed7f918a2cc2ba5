// The advice: the one-line recommendation, what it rests on, and the causes behind figures that
// look wrong (negative wasted CPU, η outside [0, 1]). Pure: the analysis in, words out.
import type { ModelTarget } from './types.js';

/** η within this distance of 1 counts as "as good as the best static sleep". */
const GOOD_ENOUGH = 0.05;

type Analysis = Omit<ModelTarget, 'recommendation' | 'advice'>;

const us = (ns: number) => `${(ns / 1000).toFixed(Math.abs(ns) < 100_000 ? 1 : 0)} µs`;
/** A sleep to set, rounded down to the digits shown: late() is non-decreasing, so rounding never breaks the budget. */
const sleepUs = (ns: number) => {
  const digits = ns < 100_000 ? 1 : 0;
  const f = 10 ** digits;
  return `${(Math.floor((ns / 1000) * f) / f).toFixed(digits)} µs`;
};
/** How to set a sleep where the user sets it as io_poll_delay (ModelTarget.optimalSetting). */
const setting = (us: number | undefined) => (us === undefined ? '' : ` (io_poll_delay ${us})`);
const pct = (x: number) => `${(x * 100).toFixed(x < 0.1 && x > -0.1 ? 1 : 0)}%`;
const budgetOf = (t: Analysis) => `${(t.latencyBudget * 100).toFixed(t.latencyBudget < 0.01 ? 1 : 0)}%`;

function currentWords(t: Analysis): string {
  const c = t.current;
  const name = c.policy === 'unknown' ? 'unknown policy' : c.policy;
  return c.sleptFraction > 0 ? `sleeps ${us(c.sleepNs)} (${name})` : 'polls without sleeping (classic)';
}

/**
 * CPU per I/O the kernel spends now: measured when BPF measured it (so that the saving quoted and
 * the wasted CPU are one figure), else the model's.
 */
const nowCpu = (t: Analysis) => t.measured?.cpuPerIoNs ?? t.current.outcome.cpuNs;

/**
 * Why the kernel's current state costs less CPU than the best static sleep, in the model (η > 1)
 * or as measured (wasted CPU < 0); undefined when it does not.
 */
export function belowBestCause(t: Analysis): string | undefined {
  const c = t.current.outcome;
  const measuredBelow = t.measured !== undefined && t.measured.cpuPerIoNs < t.best.cpuNs;
  if (c.cpuNs < t.best.cpuNs) {
    if (!c.meetsBudget) return `the kernel's sleep buys that CPU with ${us(c.lateNs)} of added latency per I/O, beyond the ${budgetOf(t)} budget`;
    return `the kernel's mix of sleeps (${pct(t.current.sleptFraction)} of I/Os sleep) costs less CPU within the budget than any one static sleep`;
  }
  if (measuredBelow) {
    const check = t.modelCpuErrorRatio === undefined ? '' : ` (self-check +${pct(t.modelCpuErrorRatio)})`;
    return `the model over-states this device's CPU${check}: the measured CPU is already below its figure for the best sleep, so that figure is too high as well`;
  }
  return undefined;
}

/** Why the kernel's sleep costs more CPU than classic polling (η < 0); undefined when it does not. */
export function aboveClassicCause(t: Analysis): string | undefined {
  const c = t.current;
  // classic polling's CPU per I/O: E[D] at QD1, the classic row at depth
  const classic = t.policies.find((p) => p.policy === 'classic')?.cpuNs ?? t.deviceTime.meanNs;
  const sleepsPerIo = t.depth?.sleepsPerIo ?? c.sleptFraction;
  if (!(sleepsPerIo > 0) || !(c.outcome.cpuNs > classic)) return undefined;
  // cpu(s) > classic ⇔ the spin a sleep saves (QD1: E[min(D, s + O)]) is less than c_sw
  const saved = (classic - c.outcome.spinNs) / sleepsPerIo;
  return `a sleep saves ${us(saved)} of spin per slept I/O, less than the ${us(t.switchCostNs)} a sleep/wake pair costs`;
}

/** The recommendation and what it rests on (ModelTarget.advice). */
export function advise(t: Analysis): Pick<ModelTarget, 'recommendation' | 'advice'> {
  const { current, best } = t;
  const budget = budgetOf(t);
  const cur = currentWords(t);
  // At depth with (almost) every slept I/O found complete at its wake-up nothing times D: the
  // other sleeps' CPU, classic polling's included, is not identified (deviceTimeIdentified).
  if (!t.deviceTime.identified && t.depth) {
    const over = t.measured?.oversleepRatio;
    if (t.current.sleptFraction === 0) {
      return {
        advice: 'withheld',
        recommendation: `${t.device}: the kernel ${cur}; recommendation withheld: at this queue depth each completion waits for the poller's next look rather than the device, so its latency does not time the device and no sleep's CPU can be predicted. A while at a lower queue depth would time it`,
      };
    }
    return {
      advice: 'withheld',
      recommendation: `${t.device}: the kernel ${cur}; recommendation withheld: ${over !== undefined ? pct(over) : 'nearly all'} of the slept I/Os were already complete at wake-up, so at this queue depth no device time was timed and no other sleep's CPU can be predicted. A shorter sleep, or classic polling for a while, would time them`,
    };
  }
  // Classic polling best on the model's placement is best whatever the unresolved times: placing
  // them lower only adds latency to every sleep and removes saving (WorstCase).
  if (best.sleepNs === 0) {
    if (current.sleptFraction === 0) return { advice: 'model', recommendation: `${t.device}: classic polling is already best: no sleep saves CPU within the ${budget} latency budget` };
    return { advice: 'model', recommendation: `${t.device}: the kernel ${cur} but no sleep saves CPU within the ${budget} latency budget: use classic polling` };
  }
  const b = t.bound;
  if (b && (b.sleepNs < best.sleepNs || !(b.savingNs > 0))) {
    const u = t.deviceTime.unresolved;
    const unknown = `${pct(u)} of I/Os were already complete at wake-up with no exact sample below them (found after ${us(t.deviceTime.unresolvedAtNs ?? 0)}; when they completed is unknown)`;
    if (b.sleepNs > 0 && b.savingNs > 0) {
      return {
        advice: 'bounded',
        recommendation: `${t.device}: the kernel ${cur}; a static sleep of ${sleepUs(b.sleepNs)}${setting(b.setting)} stays within the ${budget} latency budget however early the ${pct(u)} of I/Os the data cannot time completed, saving ${us(b.savingNs)} to ${us(t.deviceTime.meanNs - b.cpuNs)} CPU per I/O against classic polling (bounded: the model's best, ${us(best.sleepNs)}, may add up to ${us(b.bestLateNs)} latency per I/O)`,
      };
    }
    const shorter = best.sleepNs < current.sleepNs ? ', shorter than the current one' : '';
    return {
      advice: 'withheld',
      recommendation: `${t.device}: the kernel ${cur}; recommendation withheld: ${unknown}, so no sleep can be shown to save CPU within the ${budget} latency budget. The best static sleep is at most ${us(best.sleepNs)}${shorter} (that much if they completed just before the wake-up); a shorter sleep, or classic polling for a while, would time those I/Os`,
    };
  }
  if (t.efficiency !== undefined && t.efficiency >= 1 - GOOD_ENOUGH && current.outcome.meetsBudget) {
    return { advice: 'model', recommendation: `${t.device}: the kernel ${cur}, efficiency ${pct(t.efficiency)} of the best static sleep (${us(best.sleepNs)}): nothing to tune` };
  }
  const saveNs = nowCpu(t) - best.cpuNs;
  if (saveNs <= 0) {
    const why = belowBestCause(t) ?? 'the model finds no saving';
    return { advice: 'model', recommendation: `${t.device}: the kernel ${cur}, spending ${us(-saveNs)} less CPU per I/O than the best sleep within the ${budget} latency budget (${us(best.sleepNs)}): ${why}` };
  }
  const cores = t.measured ? ` (${(saveNs * t.measured.iops / 1e9).toFixed(2)} cores at ${Math.round(t.measured.iops)} IOPS)` : '';
  const over = current.outcome.meetsBudget ? '' : `; it now adds ${us(current.outcome.lateNs)} latency per I/O by oversleeping`;
  return { advice: 'model', recommendation: `${t.device}: the kernel ${cur}; a static sleep of ${sleepUs(best.sleepNs)}${setting(t.optimalSetting)} would save ${us(saveNs)} CPU per I/O${cores} within the ${budget} latency budget${over}` };
}
