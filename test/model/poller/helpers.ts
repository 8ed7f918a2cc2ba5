// Shared inputs for the poller model tests.
import fc from 'fast-check';
import { atom, mixture, uniform } from '../../../src/model/dist.js';
import type { Dist } from '../../../src/model/types.js';
import type { PollerEra, PollerInput } from '../../../src/model/poller/index.js';

export const NO_COST = { submitNs: 0, reapNs: 0, minComplete: 1 };

export function input(over: Partial<PollerInput> & { fD?: Dist; depthN?: number } = {}): PollerInput {
  const { fD, depthN, ...rest } = over;
  return {
    era: 'iouring_70',
    devices: [{ device: 'nvme0n1', fD: fD ?? uniform(8000, 12_000), share: 1 }],
    fO: atom(1000),
    switchCostNs: 1500,
    latencyBudget: 0.01,
    depth: [[depthN ?? 1, 1]],
    submission: NO_COST,
    current: { policy: 'classic', rule: 'none' },
    ...rest,
  };
}

// Random F_D, F_O as mixtures of atoms and uniform pieces (as test/model/policies.test.ts).
const piece = (lo: number, hi: number) =>
  fc.record({ a: fc.double({ min: lo, max: hi, noNaN: true }), w: fc.double({ min: 0, max: hi - lo, noNaN: true }), p: fc.double({ min: 0.05, max: 1, noNaN: true }), isAtom: fc.boolean() });
export const distArb = (lo: number, hi: number) =>
  fc.array(piece(lo, hi), { minLength: 1, maxLength: 4 }).map((ps) =>
    mixture(ps.map(({ a, w, p, isAtom }) => ({ dist: isAtom || w === 0 ? atom(a) : uniform(a, a + w), weight: p }))),
  );

/**
 * fast-check's seed for properties bounded by the simulation's standard error, estimated from 10
 * batch means: random cases pass such a bound by chance now and then (qd1.test.ts).
 */
export const STAT_SEED = 20261206;

export const SIM_ERAS: Exclude<PollerEra, 'blkmq_sync'>[] = ['iouring_613', 'iouring_70', 'blkmq_iouring'];
