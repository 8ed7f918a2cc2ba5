// Every metric family of a scrape, from one snapshot.
import type { Snapshot } from '../snapshot/types.js';
import { bpfFamilies, type BpfExposition } from './bpf.js';
import type { MetricFamily } from './family.js';
import { hostFamilies } from './host.js';
import { modelFamilies } from './model.js';
import { selfFamilies } from './self.js';

export function familiesOf(s: Snapshot, o: { bpf?: BpfExposition } = {}): MetricFamily[] {
  return [...selfFamilies(s), ...hostFamilies(s), ...bpfFamilies(s, o.bpf), ...modelFamilies(s)];
}
