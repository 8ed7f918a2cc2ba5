// Every metric family of a scrape, from one snapshot.
import type { Snapshot } from '../snapshot/types.js';
import { bpfFamilies, type BpfExposition } from './bpf.js';
import type { MetricFamily } from './family.js';
import { hostFamilies } from './host.js';
import { modelFamilies } from './model.js';
import { selfFamilies } from './self.js';

/**
 * The families in four groups, each built when called: the refresh loop builds them with a pause
 * between groups (at 64 devices the whole set is several ms of synchronous work).
 */
export function familyGroups(s: Snapshot, o: { bpf?: BpfExposition } = {}): (() => MetricFamily[])[] {
  return [() => selfFamilies(s), () => hostFamilies(s), () => bpfFamilies(s, o.bpf), () => modelFamilies(s)];
}

export function familiesOf(s: Snapshot, o: { bpf?: BpfExposition } = {}): MetricFamily[] {
  return familyGroups(s, o).flatMap((g) => g());
}
