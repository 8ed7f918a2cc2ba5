// Validation of one recorded frame (SnapshotInputs) and of the header. Deep, so that a damaged or
// hand-edited recording is refused with the path of the bad field instead of breaking a scrape.
import { BPF_CAUSES, HIST_KINDS, type BpfCause, type BpfDeviceSeries, type BpfProgramStatus, type BpfRing, type BpfSnapshot, type BpfStatus, type BucketHist, type RingLoops } from '../bpf/types.js';
import { NB } from '../model/buckets.js';
import { flatBuckets } from '../model/hist.js';
import { COLLECTORS, type CollectorResult, type SnapshotInputs } from '../snapshot/types.js';
import { ERAS, type DeviceReading, type EraDetection, type HctxIoPoll, type HostReading, type KernelFeatures, type PollStat, type PollStatBucket } from '../sources/types.js';
import {
  array, bool, CheckError, int, keyedArray, literal, nonNegative, nullable, num, object, oneOf, optional, partialRecord, record, str, tuple2, type Check,
} from './check.js';
import { RECORDING_FORMAT, RECORDING_VERSION, type RecordingHeader } from './format.js';

const count = nonNegative;

const collector = object<CollectorResult>({
  name: oneOf(COLLECTORS),
  success: bool,
  durationSeconds: nonNegative,
  error: optional(str),
});

const features = object<KernelFeatures>({
  iouringHybrid: optional(bool),
  legacyHybrid: optional(bool),
  hctxPollCounters: optional(bool),
  debugfsHctxIoPoll: optional(bool),
  debugfsPollStatLines: optional(bool),
  release: optional(str),
});

const era = object<EraDetection>({
  era: oneOf(ERAS),
  evidence: oneOf(['btf', 'debugfs', 'release_hint', 'none'] as const),
  reason: str,
});

const pollStatBucket = object<PollStatBucket>({
  op: oneOf(['read', 'write'] as const),
  sizeBytes: count,
  samples: count,
  meanNs: optional(count),
  minNs: optional(count),
  maxNs: optional(count),
});

const pollStat: Check<PollStat> = (v, path) => {
  const kind = object<{ kind: PollStat['kind'] }>({ kind: oneOf(['absent', 'empty', 'buckets'] as const) })(v, path).kind;
  if (kind !== 'buckets') return { kind };
  return object<{ kind: 'buckets'; buckets: PollStatBucket[] }>({ kind: literal('buckets'), buckets: array(pollStatBucket) })(v, path);
};

const hctxIoPoll = object<HctxIoPoll>({ hctx: str, considered: count, invoked: count, success: count });

const device = object<DeviceReading>({
  device: str,
  devNum: optional(str),
  ioPoll: optional(num),
  ioPollDelay: optional(num),
  hctxByType: optional(record(count)),
  pollStat: optional(pollStat),
  hctxIoPoll: optional(array(hctxIoPoll)),
  errors: array(object<{ file: string; message: string }>({ file: str, message: str })),
});

const host = object<HostReading>({
  nvmePollQueues: optional(num),
  features,
  era,
  devices: keyedArray(device, (d) => d.device, 'device'),
});

// The buckets must add up to `count`, as the loader protocol already demands (its count is
// derived from the buckets) and as the exposition requires (+Inf bucket = _count): a frame that
// breaks it used to pass here and then fail every scrape of the replay with a 500
// (found by test/hardening/fuzzLoaderRecording.test.ts).
// The file holds buckets as [index, count] pairs (format.ts frameLine); BucketHist keeps them flat.
const bucketHistFields = object<Omit<BucketHist, 'buckets' | 'bucketSumsNs'> & { buckets: [number, number][]; bucketSumsNs?: [number, number][] }>({
  buckets: array(tuple2(int(0, NB - 1), count)),
  count,
  sumNs: count,
  aux0: count,
  aux1: count,
  bucketSumsNs: optional(array(tuple2(int(0, NB - 1), count))),
});
const bucketHist: Check<BucketHist> = (v, path) => {
  const { bucketSumsNs, ...h } = bucketHistFields(v, path);
  const total = h.buckets.reduce((a, [, c]) => a + c, 0);
  if (total !== h.count) throw new CheckError(`${path}.count`, `${h.count} is not the sum of the buckets (${total})`);
  return { ...h, buckets: flatBuckets(h.buckets), ...(bucketSumsNs ? { bucketSumsNs: flatBuckets(bucketSumsNs) } : {}) };
};

const deviceSeries = object<BpfDeviceSeries>({
  dev: str,
  device: optional(str),
  hists: partialRecord(HIST_KINDS, bucketHist),
  sharedWith: optional(str),
  lookMinNs: optional(num),
});

const ring = object<BpfRing>({
  ring: str,
  pid: count,
  comm: str,
  flags: count,
  hybrid: bool,
  hybridPollTimeNs: nullable(count),
  sleeps: count,
  iopollPasses: count,
  loops: optional(object<RingLoops>({ polledIos: count, count, wallNs: count, spinNs: count, offcpuNs: count, wakeLatencyNs: count })),
});

const program = object<BpfProgramStatus>({
  attached: bool,
  reason: optional(str),
  runTimeNs: optional(count),
  runCount: optional(count),
});

const bpf = object<BpfSnapshot>({
  takenAtNs: count,
  pollPath: oneOf(['fentry', 'tracepoint', 'none'] as const),
  sampleRate: optional(count),
  bpfStats: optional(bool),
  cpu: optional(object<NonNullable<BpfSnapshot['cpu']>>({ seconds: nonNegative, source: oneOf(['bpf_stats', 'estimate'] as const), budget: nonNegative })),
  programs: record(program),
  // one entry per device and per ring, as the loader protocol groups them (a repeated one would
  // repeat its series in the exposition: found by test/hardening/fuzzLoaderRecording.test.ts)
  devices: keyedArray(deviceSeries, (d) => d.dev, 'dev'),
  rings: keyedArray(ring, (r) => r.ring, 'ring'),
  ringsOther: optional(count),
  counters: record(count),
  deviceCounters: record(record(count)),
});

/** Recordings before the `cause` code carry only the words: the code then follows from the state. */
const CAUSE_OF_STATE: Record<BpfStatus['state'], BpfCause> = { running: 'ok', starting: 'loading', failed: 'loader_down', disabled: 'disabled_by_flag' };

const bpfStatusFields = object<Omit<BpfStatus, 'cause'> & { cause: BpfCause | undefined }>({
  mode: oneOf(['auto', 'on', 'off'] as const),
  state: oneOf(['running', 'disabled', 'failed', 'starting'] as const),
  cause: optional(oneOf(BPF_CAUSES)),
  reason: str,
  loaderRestarts: count,
});

const bpfStatus: Check<BpfStatus> = (v, path) => {
  const s = bpfStatusFields(v, path);
  return { ...s, cause: s.cause ?? CAUSE_OF_STATE[s.state] };
};

export const checkFrame: Check<SnapshotInputs> = object<SnapshotInputs>({
  takenAtMs: count,
  host: optional(host),
  bpf: optional(bpf),
  bpfStatus,
  collectors: array(collector),
});

/** The header; an unknown format or version is refused before any field is looked at. */
export const checkHeader: Check<RecordingHeader> = (v, path) => {
  const id = object<{ format: string; version: number }>({ format: str, version: num })(v, path);
  if (id.format !== RECORDING_FORMAT) throw new CheckError('format', `expected "${RECORDING_FORMAT}", got ${JSON.stringify(id.format)}: not a hybridpoll recording`);
  if (id.version !== RECORDING_VERSION) {
    throw new CheckError('version', `recording format version ${id.version} is not supported; this exporter reads version ${RECORDING_VERSION}`);
  }
  return object<RecordingHeader>({
    format: literal(RECORDING_FORMAT),
    version: literal(RECORDING_VERSION),
    created: str,
    host: str,
    source: oneOf(['live', 'synthetic'] as const),
    description: str,
  })(v, path);
};
