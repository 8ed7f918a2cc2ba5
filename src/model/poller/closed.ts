// Closed forms: where the poller at depth has one, and the kernel rules' limits. At depth 1 these
// ARE today's QD1 forms (src/model/policies.ts): the outcome rows come from CostModel unchanged.
import { evaluatePolicies, type CostModel, type KernelOffsets, type Outcome } from '../policies.js';
import type { PolicyName } from '../types.js';
import type { PollerOutcome, SubmissionPattern } from './types.js';

/** A QD1 row of CostModel as a PollerOutcome: the poll loop's CPU is cpu(s); submit and reap add to the task's CPU. */
export function fromQd1(policy: PollerOutcome['policy'], o: Outcome, sleepsPerIo: number, device: string, sub: SubmissionPattern): PollerOutcome {
  const overheadNs = sub.submitNs + sub.reapNs;
  return {
    policy,
    sleepNs: o.sleepNs,
    spinNs: o.spinNs,
    switchNs: o.cpuNs - o.spinNs,
    cpuNs: o.cpuNs,
    overheadNs,
    taskCpuNs: o.cpuNs + overheadNs,
    cpuShare: o.cpuNs / (o.latencyNs + overheadNs),
    latencyNs: o.latencyNs,
    addedLatencyNs: o.lateNs,
    sleepsPerIo,
    reapedPerPass: 1,
    meetsBudget: o.meetsBudget,
    cpuStdErrNs: 0,
    perDevice: [{ device, ioShare: 1, cpuNs: o.cpuNs, sleepsPerIo, addedLatencyNs: o.lateNs, latencyNs: o.latencyNs }],
  };
}

/** Today's what-if table at QD1, as PollerOutcomes (oracle: sleeps when D > c_sw). */
export function qd1Table(m: CostModel, device: string, sub: SubmissionPattern, k?: KernelOffsets): PollerOutcome[] {
  return evaluatePolicies(m, k).map((row) => {
    const { policy, ...o } = row;
    // the oracle's switch CPU is P(D > c)·c_sw: its sleeps per I/O are that share
    const c = m.params.switchCostNs;
    const sleeps = policy === 'oracle' ? (c > 0 ? (o.cpuNs - o.spinNs) / c : 0) : o.sleepNs > 0 ? 1 : 0;
    return fromQd1(policy, o, sleeps, device, sub);
  });
}

/**
 * Classic polling at depth N with no submit/reap cost, when every completion is reaped as it is
 * found (7.0+, and 5.x whose passes take every found request up to the next unfound one): each of
 * the N slots renews with an independent D and the poller is always on CPU, so the CPU per I/O is
 * E[D]/N (renewal-reward). QD1: E[D] = cpu(0). Not for 6.13–6.19, which reap in list order.
 */
export function classicCpuAtDepth(meanD: number, depth: number): number {
  return meanD / depth;
}

/**
 * io_uring's ring estimate at QD1 with the poll spinning to the completion (7.0+): the limit of
 * the running minimum of max(D − s, O) over a long ring life, shared by every device of the ring:
 * the QD1 path of iouringHalfMinSleep with the smallest device time of the ring. Equals
 * iouringHalfMinSleep for one device.
 */
export function ringHalfMinSleep(models: readonly CostModel[]): number {
  if (!models.length) throw new Error('ringHalfMinSleep: no device');
  const minD = Math.min(...models.map((m) => m.minD));
  const minO = models[0]!.minO;
  // the first I/O does not sleep; its sample is about E[D] of the device it went to (take the largest)
  let est = Math.max(...models.map((m) => m.meanD));
  for (let k = 0; k < 64; k++) {
    const next = Math.max(minD - est / 2, minO);
    if (!(next < est)) break;
    est = next;
  }
  return Math.max(0, est / 2);
}

export const STATIC_POLICIES = ['classic', 'blkmq_half_mean', 'blkmq_fixed', 'three_quarter_mean', 'min_minus_wake', 'iouring_half_min', 'best_static'] as const satisfies readonly PolicyName[];
