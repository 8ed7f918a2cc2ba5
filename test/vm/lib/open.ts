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

const LEGACY_START =
  'the model times the sleep from the request\'s start, the 5.10 kernel starts it ≈ 3.4 µs later (at the first poll), and that gap is also inside the measured c_sw: the modelled spin is ≈ 4.7 µs per I/O high (docs/validation-legacy.md, cause 1; src/model, issue 13/15)';

export const OPEN_CHECKS: readonly OpenCheck[] = [
  {
    id: '4 unchanged', scenario: /^(qd1-fixed50|qd4-fixed50)$/, title: /^hybrid under fentry/,
    cause: 'the fentry programs cost ≈ 5.2 µs per hybrid I/O at QD1 in virtual time (one instruction = 1 ns), over the 5 % bound; at QD4 tracing also moves the kernel\'s sleeps per I/O (issue 16: the hybrid path\'s cost)',
  },
  {
    id: '5 self-check', scenario: /^qd1-fixed50$/,
    cause: 'not reproducible across boots yet: two CI boots with the same kernel sleep (11.57 µs) gave +8.1 % and −10.9 %, because the measured hybrid run itself moved (16468 vs 14345 IOPS, 49.2 vs 57.9 µs of poller CPU per I/O) and the exporter\'s measured CPU followed it (38.2 vs 46.7 µs) while the model\'s cpu(current) did not (41.3 vs 41.6 µs); suspected: guest work on the other vCPU right after the exporter starts, which under icount slows the poller\'s clock (test/vm lab isolation, issue 13)',
  },
  {
    id: 'S agreement', scenario: /^sampling qd1 hybrid$/, title: /^(optimal sleep|wasted CPU)/,
    cause: 'not sampling: the side-by-side loaders time each other. Nothing the hybrid model reads is sampled, yet on one run (CI, 01:22 on 2026-12-02) the unsampled spin read +7.4 % (N=16) and +3.7 % (N=64) against N=1\'s loader and the measured c_sw −21 % / −11 %: each loader\'s clock reads on the poll path also time the programs of the loaders attached beside it. Optimal sleep +6.0 % / +3.0 %, wasted CPU +7.6 % / +3.8 % follow it. Needs a control (two loaders at the same N) or sequential seeded runs (test/vm lab, issue 16)',
  },
  {
    id: 'S agreement', scenario: /^sampling qd32 classic$/, title: /^optimal sleep.*N=64/,
    cause: 'too few timed samples: F_D is rq_lat, 65 completions timed of 4000 at N=64 in the CI profile, and at QD32 its spread is the queueing (mean 211 µs on a 50 µs device); +8.3 % is that sampling error (N=16, 255 timed: +0.2 %). MIN_SAMPLES (20 timed) admits it; the full profile times 5× more (issue 16)',
  },
  { id: 'L6 self-check', scenario: /^legacy /, cause: LEGACY_START },
  { id: 'L6 model ½ mean', scenario: /^legacy /, cause: LEGACY_START },
  { id: 'L6 model ¾ mean', scenario: /^legacy /, cause: LEGACY_START },
  { id: 'L6 model fixed', scenario: /^legacy /, cause: LEGACY_START },
  { id: 'L6 model classic', scenario: /^legacy .* hpdrive$/, cause: `fed a censored sleeping run, E[D] becomes the found time: ${LEGACY_START}` },
  {
    id: 'L7 device time', scenario: /^legacy /,
    cause: 'rq_lat and the found times start at the request\'s allocation, ≈ 2.2 µs before queue_rq where the device\'s own clock starts (docs/validation-legacy.md, cause 2; src/bpf, issue 13)',
  },
  {
    id: 'L8 unchanged', scenario: /^legacy /,
    cause: 'the tracepoint programs cost ≈ 5.9 µs per hybrid I/O in virtual time, and rq_complete runs before the kernel timestamps its poll_stat sample, so tracing lengthens the adaptive sleep itself (docs/validation-legacy.md, cause 3; issue 16)',
  },
];

/** The open entry a failing check matches, if any (a passing check is never open). */
export function openCause(c: CheckResult, open: readonly OpenCheck[] = OPEN_CHECKS): string | undefined {
  if (c.pass || c.skipped) return undefined;
  return open.find((o) => o.id === c.id && o.scenario.test(c.scenario) && (!o.title || o.title.test(c.title)))?.cause;
}
