// Plain data in and out of the poller model at any depth (README.md in this folder). Times in ns.
import type { KernelOffsets } from '../policies.js';
import type { Dist, PolicyName } from '../types.js';

/**
 * How the poll path behaves, per kernel (docs/kernel.md §3–4; README "Eras"):
 * - `iouring_613`: io_uring hybrid/classic IOPOLL 6.13–6.19. blk_hctx_poll returns after one look
 *   at the queue (its task-is-running check: the io_uring task is always running), so a pass walks
 *   the ring's iopoll list looking once per request; only the completed prefix of the list is reaped.
 * - `iouring_70`: 7.0+. The poll spins in blk_hctx_poll until it finds something unless
 *   BLK_POLL_ONESHOT (several queues, or not waiting); completions are reaped in any order.
 * - `blkmq_iouring`: io_uring IOPOLL through blk_poll on 5.1–5.15 with the block layer's hybrid
 *   sleep (io_poll_delay ≥ 0): one look per call, a sleep returns without looking.
 * - `blkmq_sync`: sync preadv2/pwritev2(RWF_HIPRI), 4.10–5.18: one I/O per thread (QD1 per job).
 */
export type PollerEra = 'iouring_613' | 'iouring_70' | 'blkmq_iouring' | 'blkmq_sync';

/** One device a poller polls (a ring may poll several). */
export interface PollerDevice {
  /** label value */
  device: string;
  /** F_D: device time of this device (at the load it was measured under) */
  fD: Dist;
  /** share of the poller's I/Os that go to this device (any scale; normalised) */
  share: number;
  /** blkmq_fixed: io_poll_delay of this device in ns, when > 0 */
  fixedSleepNs?: number;
  /** the block layer's δ and timer lag measured on this device (KernelTerms): its rules sleep by them; none: 0 */
  kernel?: KernelOffsets;
  /** where this device's sleep is set in whole steps (io_poll_delay, ModelParams.sleepStepNs): best_static among those */
  sleepStepNs?: number;
}

/** How the application submits and reaps: a closed loop that refills to the depth after each reap. */
export interface SubmissionPattern {
  /** on-CPU cost of submitting one I/O, in the poller's task (the issue happens at its end) */
  submitNs: number;
  /** on-CPU cost of reaping one completion after the waiting call returns */
  reapNs: number;
  /**
   * on-CPU time per completion inside the poll loop after the poll that found it (blk-mq's and
   * io_uring's completion work: ending the request, posting the CQE), part of the loop's CPU; the
   * poller looks at nothing meanwhile. Optional, 0 when not measured (the QD1 closed forms leave it out).
   */
  loopReapNs?: number;
  /**
   * on-CPU time of a poll call that finds completions, as `lookNs` + `lookPerIoNs` per completion it
   * finds (the queue's poll handler and the block layer's completions, before the loop's own
   * completion work). Optional, 0 when not measured.
   */
  lookNs?: number;
  lookPerIoNs?: number;
  /**
   * on-CPU time of a one-look poll call that finds nothing. Where the poller waits on a device that
   * time is spin the simulation charges anyway; where the poller sets the pace (a ring over several
   * devices whose list puts an unfinished request of one before the other's completions) it is a
   * cost of its own, per call. Optional, 0 when not measured.
   */
  emptyLookNs?: number;
  /** on-CPU time per sleep from the poller's switch-in to its next poll call (the sleep's return path). Optional, 0 */
  wakeToLookNs?: number;
  /** completions the waiting call waits for (io_uring_enter min_complete; 0 = non-waiting: ONESHOT) */
  minComplete: number;
  /**
   * on-CPU cost per waiting call outside the poll loop besides the per-I/O costs (the syscalls,
   * the application's own loop), before the refill's submissions. Optional, 0 when not measured.
   */
  callNs?: number;
  /**
   * on-CPU time per waiting call after the last submission's issue and before the first poll (the
   * rest of the submit call, the waiting call's entry): the device already runs. Optional, 0.
   */
  leadNs?: number;
}

/** The state the kernel is in now, as measured, for the self-check. */
export interface CurrentPoller {
  policy: PolicyName | 'unknown';
  /**
   * `static`: every request sleeps `sleepNs` at its first visit (the measured sleep: the kernel's
   * own hybrid_poll_time/2, or the sleep_req mean); `kernel`: the kernel's own rule is simulated
   * (io_uring: the ring's running minimum from LLONG_MAX; block layer: ½ the mean issue → found of
   * the previous window, iterated to its fixed point); `none`: classic.
   */
  rule: 'static' | 'kernel' | 'none';
  /** for `static`: the sleep per request (one value for the ring) */
  sleepNs?: number;
}

export interface SimOptions {
  /** PRNG seed; the same seed gives the same result */
  seed: number;
  /** I/Os reaped and measured per simulated point (after the warm-up) */
  ios: number;
}

/** The input of `evaluatePoller`: one poller (an io_uring ring, or a set of sync jobs) over its devices. */
export interface PollerInput {
  era: PollerEra;
  devices: PollerDevice[];
  /** F_O: wake overhead (timer expiry → back on CPU) */
  fO: Dist;
  /** c_sw: on-CPU cost of one sleep/wake pair */
  switchCostNs: number;
  /**
   * wall time per sleep the poller spends on CPU before the sleep's timer starts (part of c_sw:
   * arming the timer, the switch-out); the sleep then lasts this + s + O. Default 0: F_O holds it
   * (the QD1 forms, whose F_O is timed from D's origin).
   */
  sleepOnCpuNs?: number;
  /** best_static: allowed added latency as a fraction of E[D] (I/O-weighted over the devices) */
  latencyBudget: number;
  /**
   * In-flight polled I/Os of this poller at the entry of each poll pass: [depth, passes] (the BPF
   * depth histogram). A closed loop at iodepth N reads N at every pass entry.
   * `blkmq_sync`: ignored (one I/O per thread; every job is taken to run on its own CPU).
   */
  depth: readonly (readonly [number, number])[];
  submission: SubmissionPattern;
  current: CurrentPoller;
  sim?: Partial<SimOptions>;
}

/** One policy at this depth, per I/O, over every depth point (I/O-weighted). */
export interface PollerOutcome {
  policy: PolicyName | 'current';
  /** mean requested sleep per sleeping I/O (ring: over its devices) */
  sleepNs: number;
  /** on-CPU time polling (spinning / looking at the queues), per I/O */
  spinNs: number;
  /** sleeps · c_sw per I/O */
  switchNs: number;
  /** spin + switch per I/O: what the BPF poll-loop CPU measures; the self-check quantity */
  cpuNs: number;
  /** submit + reap per I/O (the task's CPU outside the poll loop) */
  overheadNs: number;
  /** cpu + overhead: the poller task's whole CPU per I/O */
  taskCpuNs: number;
  /** poll-loop CPU over the poller's wall time: the share of a core it burns (QD1 classic: 1) */
  cpuShare: number;
  /** mean issue → reaped */
  latencyNs: number;
  /** latencyNs − classic's latencyNs at the same depth (QD1: late(s)) */
  addedLatencyNs: number;
  sleepsPerIo: number;
  /** completions per pass that reaped any (what io_do_iopoll returns when > 0) */
  reapedPerPass: number;
  /** addedLatencyNs ≤ budget · E[D] */
  meetsBudget: boolean;
  /** standard error of cpuNs (simulation: batch means; 0 for a closed form) */
  cpuStdErrNs: number;
  /** per device of the ring: CPU attributed to its I/Os (spin on its queue, its sleeps) and latency */
  perDevice: { device: string; ioShare: number; cpuNs: number; sleepsPerIo: number; addedLatencyNs: number; latencyNs: number }[];
}

export interface PollerResult {
  era: PollerEra;
  /** `closed_form`: today's QD1 forms (exact); `simulation`: the seeded discrete-event simulation */
  method: 'closed_form' | 'simulation';
  /** the depths evaluated and the share of I/Os each stands for */
  depthPoints: { depth: number; ioShare: number }[];
  /** the what-if table at this depth, in POLICIES order (blkmq_fixed only when every device has a setting) */
  policies: PollerOutcome[];
  best: PollerOutcome;
  oracle: PollerOutcome;
  current: PollerOutcome;
  /** the ring's shared estimate under the kernel rule, when simulated (io_uring eras): hybrid_poll_time */
  kernelEstimateNs?: number;
  /** I/O-weighted E[D] over the devices (the budget's scale) */
  meanDeviceNs: number;
}
