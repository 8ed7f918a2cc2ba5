// Checks known to miss their bound on the virtual-time test bed, each with the cause found (or, where
// it says so, suspected) and the issue that owns the fix. They still run and print their figures in every profile, but the gate
// does not fail on them: a figure counts as proven only when its check passes (docs/validation.md).
// An entry matches one check id in named scenarios (and titles), so a new failure anywhere else,
// or of another check, still fails the gate. Remove an entry when its fix lands.
import type { CheckResult } from './checks.js';

export interface OpenCheck {
  /** the check's id, exactly */
  id: string;
  /** scenarios it is open in */
  scenario: RegExp;
  /** titles it is open for (default: every title of that id) */
  title?: RegExp;
  /** the cause, measured, and where the fix belongs */
  cause: string;
}

/** The 5.10 guest's hpdrive at QD4 (test/vm/lib/legacy.ts `hpdrive4`), both device profiles. */
const LEGACY_QD4 = /^legacy seed00[14] hpdrive4$/;

export const OPEN_CHECKS: readonly OpenCheck[] = [
  {
    id: '4 unchanged', scenario: /^qd4-fixed50$/, title: /^hybrid under (fentry|tracepoint)/,
    cause: 'at QD4 tracing moves the kernel\'s sleeps: the traced hybrid run sleeps 0.224 fewer times per I/O than the untraced one, and its CPU reads +9.5 % (2026-12-07 02:38, CI profile, with task state in an array: CPU +4.3 %, within the bound, but sleeps −0.225/IO and IOPS +6.5 %; the tracepoint path in the full profile, 2026-12-03 14:10: sleeps −0.225/IO, CPU +8.9 %, IOPS +5.7 %; and the traced run is the faster one (IOPS +6.5 … +11.7 %, p50 71 against 81.5 µs): the hybrid loop runs in one of two regimes, 0.72 or 0.50 sleeps per I/O, and in this deterministic test bed (a fixed 50 µs device in virtual time) a sub-µs change anywhere on the poller flips it. Measured 2026-12-07 03:06–03:17 (CI profile, qd4-fixed50, three A/B pairs each): with the loop start\'s records removed (iopoll_enter 818 → 221 ns per I/O), with the classic_poll programs returning at once, and with the sleep-path programs (hrtimer_start, sched_switch, sched_wakeup) returning at once, the traced runs still sleep 0.500 per I/O against 0.724 untraced. Then (04:46–04:58, loader builds attaching a subset, three A/B pairs each): without the classic_poll trampolines 0.500 (IOPS +14.1 %); without the block programs 0.500; with only rq_issue attached (≈ 0.24 µs per I/O, in the submission, outside the kernel\'s runtime sample) 0.500, IOPS +24.5 %, CPU per I/O −14 %; with only task_exit attached 0.724 against 0.724 (the control). So any sub-µs per-I/O change on the poller moves this loop into the 0.500 regime, which is the faster one; on a device with spread (normal 50 ± 5 µs, one experiment) the untraced loop sleeps 0.60 per I/O and the traced one 0.500 again (CPU +12.1 %, IOPS −5.2 %). The check cannot tell the programs\' cost from the regime they select here; before 2026-12-03 one of the two untraced runs slept as the traced one does, and the check was skipped for that spread) ; QD1 passes since the loop-end programs only store: +4.4 % (2026-12-03), +3.2 % (2026-12-07 02:38) (issue 16)',
  },
  {
    id: '4 unchanged', scenario: /^(qd16-fixed50|qd32-fixed50|qd32-fixed400|qd32-normal400|qd64-fixed50|qd4-twopoint)$/,
    cause: 'at depth the poller is the bottleneck and spends 6–7 µs of CPU per I/O in virtual time, so every program is on its critical path; the block programs that run for every I/O (rq_issue ≈ 400 ns, rq_complete ≈ 340 ns) and the loop edges are 12–16 % of it: poller CPU +11.0 / +13.9 % (poll, QD16 / QD64), +7.5 / +13.2 % (hybrid), CI profile 2026-12-07 02:38 with task state in an array (+14.7 / +16.5, +8.4 / +15.9 % on 2026-12-03; +17.1 / +18.9, +12.2 / +18.7 % before the loop-end programs only stored); QD32 +14.7 % (poll) and +14.2 % (hybrid), IOPS −13.0 / −11.2 % (CI profile 2026-12-07 07:41; per polled I/O the fentry programs cost 728 ns at QD32 in virtual time, bench/bpf-cost/guest.sh); on the device-bound 400 µs device at QD32 (qd32-fixed400, full profile 2026-12-07 10:00) classic polling is unchanged (+0.2 / +0.1 % CPU, fentry / tracepoint) but the hybrid loop, which then waits for its sleeps and submissions rather than the device, reads +17.0 / +19.1 % CPU and −10.8 / −10.7 % IOPS, and with a spread in its service time (qd32-normal400, 400 ± 40 µs, full profile 2026-12-07 12:45) +14.7 / +17.0 % CPU and −5.4 / −6.1 % IOPS (issue 16: the per-I/O cost)',
  },
  {
    id: '4 totals', scenario: /^(qd4-fixed50|qd16-fixed50|qd32-fixed50|qd32-fixed400|qd32-normal400|qd64-fixed50|qd4-twopoint|qd1-nvme)$/, title: /^hybrid: spin after sleeps/,
    cause: 'the tracepoint path\'s spin after a sleep can only end at block_rq_complete, which fires after io_uring\'s poll call has returned (the batch\'s completion, io_comp_batch), later than the fentry path\'s end, the exit of the call that found the slept request (docs/validation.md, "The two paths agree on one run"). Per sleep the difference is a constant, the path between the two: 1.06 µs at QD1 (30.70 against 29.64 µs, +3.6 %, passing), 1.07 at QD4 (3.14 / 2.07), QD16 (5.20 / 4.13), qd32-normal400 (4.42 / 3.35), 1.08 at qd32-fixed400 (5.04 / 3.96), 1.22 on the NVMe (3.09 / 1.87) (full profile 2026-12-07 12:55, the fentry twin\'s own fexit program included); at depth a slept request is found at its first look, so the spin after its sleep is 2–5 µs and the constant is a quarter to a half of it: tracepoint vs fentry +48.7 % (QD4), +26.3 % (QD16), +10.5 % (QD64), +30.4 % (qd4-twopoint), +60.2 % (qd1-nvme), full profile 2026-12-07 00:25 (QD32, added later: +16.4 %, 07:45; qd32-fixed400 +27.4 %, 10:00; qd32-normal400 +32.2 %, 12:45), since the completion reads its clock first (2026-12-03: +72.8, +39.2, +15.4, +46.8, +86.8 %); QD1 on hpsim agrees (the tracepoint path, src/bpf; issue 13)',
  },
  {
    id: '5 self-check', scenario: /^qd32-fixed400$/,
    cause: 'QD32 on the device-bound 400 µs device with a fixed service time: the loop locks into one pattern, and its CPU moves with the exact shape of F_D more than any fit can place it: replayed on the exporter\'s own inputs (CI profile 2026-12-07 11:53), the simulation reads +2.5 % on an atom at 400 µs, −13.4 % on a uniform 400–432 µs, +12.8 % on an atom at 416 µs. The data do not identify D there (almost every slept I/O is found at its first look; the exporter flags it, FILL_SPUN) and 96 % of rq_lat falls in one histogram bucket. With a ring\'s first fill left out of the fit (withoutTransient, 2026-12-07 13:00) the full profile read −3.5 % (12:55), the 11:53 CI-profile input replays at −13.5 % (+23.6 % with the fill in; full-profile runs before: +8.4, +9.1, +13.1, +6.5 %). The same device with a spread in its service time (qd32-normal400) is gated and passes (−0.9 %). Needs a device time the data identify at this depth (docs/validation.md, "What would identify D at depth") (issue 15)',
  },
  {
    id: '5 classic self-check', scenario: /^qd32-fixed400$/,
    cause: 'classic polling at QD32 on the device-bound 400 µs device with a fixed service time: a device-paced classic loop reaps what has completed when it looks, so its CPU per I/O follows how close the device\'s times lie, below what rq_lat\'s buckets resolve (400 µs falls in one 16 % wide). In the simulation itself (bench/model-depth/width.ts: a classic QD32 poller with the guest\'s costs, 20,000 I/Os) an atom at 400 µs costs 4.08 µs per I/O and a uniform 380–420 µs 5.27 (+29 %), and the exporter\'s fit on the bucketed rq_lat reads +6.8 / −14.0 % (normal 400 ± 10 µs −12.4 %, 400 ± 40 µs +0.3 %) with E[D] within 1.5 %. The lab read +20.8 / +21.7 % (CI profile 2026-12-07 14:23 / 15:04) and +33.3 % (full profile 14:32) with E[D] +0.7 … +1.8 %, where the same device with a spread passes (−1.3 … +0.2 %). Fitting the width to the completions each loop reaps, which tracks the CPU in the simulation, made the guest worse (+56.9 %, 15:00) and was reverted. Needs a device time the data give finer than rq_lat\'s buckets (docs/validation.md, "Classic polling at depth") (issue 15)',
  },
  {
    id: '5 self-check', scenario: /^rings2-qd1-fixed50$/,
    cause: 'two pollers busy side by side: single-threaded icount runs the two vCPUs in turns on one instruction stream, so each poller\'s issue → reaped p50 is 119 µs on the 50 µs device (hybrid and classic; 59 µs for one poller alone) and both together complete 16.5 k I/Os per second where one alone completes 16.7 k. A poller\'s spin and its wake-up then hold the other vCPU\'s turn, whose length varies from boot to boot: the self-check read −1.1, −1.5, −2.4, −5.4, −8.7, −10.8, −14.6 % in seven boots of 2026-12-05/06, −15.8 / −15.7 % in CI boots of 2026-12-07 11:13 / 13:27 and −0.5 % in full-profile ones (always low: cpu(current) takes the turn in the wake latency and the found time as CPU and device time). The premise of the device-time checks (sidePremise in checks.ts) is the same; each ring\'s own counts and CPU (R ring count, R ring cpu) are accounting on one clock and pass. Needs vCPUs that run at once (KVM; multi-threaded TCG has no icount) (issue 15)',
  },
  {
    id: 'L8 unchanged', scenario: /^legacy /,
    cause: 'the tracepoint programs cost ≈ 2.6 µs per hybrid I/O in virtual time (2026-12-07 02:35, bpf_stats, task state in an array: rq_complete 1.44, sched_switch 0.42 for both edges, hrtimer_start 0.34, rq_issue 0.22, sched_wakeup 0.17 µs; 3.3 before, 5.9 on 2026-12-05), and rq_complete runs before the kernel timestamps its poll_stat sample, so tracing lengthens the adaptive sleep itself (poll_stat +1.4 … +4.3 %). Poller CPU traced without bpf_stats against detached: on the 50 µs device +3.9 / +4.1 % (hpdrive / fio, full profile 02:45; +4.7 / +4.9 % before) but +4.6 / +5.1 % in the CI profile (02:35), whose 5000 I/Os leave fio\'s CPU in steps of 0.2 µs per I/O (fio reports it in ms); on the 30 µs device +6.0 / +6.1 % (full profile 02:45; +7.3 / +7.7 % before the task array, +11.2 / +11.0 % before the cheaper completion) (docs/validation-legacy.md, cause 4; issue 16)',
  },
  {
    id: 'L9 best is best', scenario: /^legacy /,
    cause: 'where it fails, the advice is on the safe side of the latency budget by 1–2 µs of sleep. Full profile 2026-12-07 23:13 (20,000 I/Os; the lab runs the advice + 1, + 2, … µs until the budget breaks), the added latency against classic polling less rq_complete\'s extra per slept I/O: seed001 fio advised 43 (8.28 µs per I/O, 0.07 µs added of a 0.50 µs budget) where 45 keeps it (6.53 µs, 0.31 µs), seed004 fio advised 23 (8.19 µs, 0.17 of 0.30 µs) where 24 keeps it (7.28 µs, 0.25 µs); seed001 and seed004 hpdrive the advice is the best (42: 0.29 µs added, 43: 0.54; 21: 0.30, 22: 0.47). The model\'s added latency at the fio advice read 0.43 and 0.19 µs where the runs measured 0.07 and 0.17. Gone this session: the grid (dev_spun and found_slept keep per-bucket sums) and the missing look after a wake-up (λ; without it, with F_D placed exactly, the advice broke the budget: 0.74–0.82 µs added at 44 µs on seed001 hpdrive, measured against the ½-mean run). What remains on fio: the fed ½-mean run\'s wake-up tail (a few sleeps woken ms late count as latency for every sleep: seed001 fio\'s ½-mean row read 0.32 µs added where that run measured 0.20), λ as the calibration\'s minimum (an upper bound until a look is seen) and the measurement\'s noise (≈ 0.1 µs) (issue 15)',
  },
  {
    id: 'L5 cpu', scenario: LEGACY_QD4,
    cause: 'at depth on the tracepoint path the busy window spans every moment with polled I/O in flight, so at QD4 it holds the other requests\' submissions: the exporter\'s CPU per I/O reads the poller\'s whole CPU (seed001 classic 14.79 against hpdrive\'s 14.81 µs total, of which 8.18 are the waiting calls; 2026-12-07 20:16, 10,000 I/Os). The QD1 check\'s submit tail does not carry over (issue 15: the tracepoint path\'s records at depth)',
  },
  {
    id: 'L6 self-check', scenario: LEGACY_QD4,
    cause: 'the model at depth on 4.10–5.15 (blkmq_iouring), fed the exporter\'s CPU, which at QD4 on the tracepoint path holds the submissions (L5 cpu): classic −12.1 / −17.4 % (seed001 / seed004), ½ mean −6.2 / −12.7 % (10,000 I/Os, 20:16) and −14.8 / −19.8 % (20,000, full profile 20:35: the kernel\'s ½-mean rule settled at 0.35 / 0.29 sleeps per I/O there, 0.47 / 0.39 in the shorter runs), the fixed delays −27 % (every slept I/O complete at wake-up: the device time flagged, not identified). Before the pass model slept only its first request (2026-12-07) the ½-mean runs read +66 / +95 % and the fixed ones +192 % (issue 15)',
  },
  {
    id: 'L6 model classic', scenario: LEGACY_QD4,
    cause: 'at QD4 every fed run has 97–100 % of its slept I/Os complete at wake-up and is flagged not identified (MIN_SPUN_AT_DEPTH 5 %, 2026-12-07 21:23), so no column is judged: fed the ½-mean run the classic row read +8.3 / +13.9 % (seed001 / seed004, 20:16, then counted identified at 1 %) and −1.4 / +10.6 % (21:23); the fixed-delay runs −93 … −99 % (issue 15)',
  },
  {
    id: 'L6 model ½ mean', scenario: LEGACY_QD4,
    cause: 'at QD4 every fed run is flagged not identified (97–100 % of its slept I/Os complete at wake-up), so no column is judged: fed the ½-mean run the ½-mean row reads −25 … −35 % against the run itself, where the self-check reads −6 … −20 %: the depth fit\'s device time (E[D] +17 … +55 %) moves the kernel\'s mean rule (issue 15)',
  },
  {
    id: 'L6 model ¾ mean', scenario: LEGACY_QD4,
    cause: 'as L6 model ½ mean at QD4: every fed run flagged not identified; fed the ½-mean run −28 … −42 % (E[D] +17 … +55 %) (issue 15)',
  },
  {
    id: 'L6 model fixed', scenario: LEGACY_QD4,
    cause: 'fed a fixed-delay run at QD4, every slept I/O complete at wake-up: the device time is not identified and flagged, but the check needs one column within the bound and each has only itself (−53 %) (issue 15)',
  },
  {
    id: 'L7 device time', scenario: LEGACY_QD4,
    cause: 'at QD4 the model\'s E[D] is the depth fit\'s: classic +3.9 / +12.3 % (the tracepoint path\'s rq_lat at depth), the ½-mean runs +17 … +55 % (flagged not identified since 2026-12-07 21:23: 3 % or fewer spun for), the fixed-delay runs −91 … −99 % (every slept I/O complete at wake-up: not identified, flagged, and the one-sided bound does not read the flag) (issue 15)',
  },
];

/** The open entry a failing check matches, if any (a passing check is never open). */
export function openCause(c: CheckResult, open: readonly OpenCheck[] = OPEN_CHECKS): string | undefined {
  if (c.pass || c.skipped) return undefined;
  return open.find((o) => o.id === c.id && o.scenario.test(c.scenario) && (!o.title || o.title.test(c.title)))?.cause;
}
