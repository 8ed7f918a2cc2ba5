// The loader's JSON-lines protocol (src/bpf/README.md): line splitting with a bound, validation of
// each line into typed messages, and conversion of a hello + snap pair into a BpfSnapshot.
// Pure: no I/O, no clocks.
import { NB } from '../model/buckets.js';
import { HIST_KINDS, type BpfProgramStatus, type BpfSnapshot, type BucketHist, type HistKind, type PollPath } from './types.js';

/** 2: histogram buckets flat on the wire (`"b":[index,count,index,count,…]`), not as pairs */
export const PROTOCOL_VERSION = 2;
/** Longest line accepted from the loader: a snapshot of hundreds of device series fits easily. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** Messages quote untrusted loader output (keys, values); bounded, since they end up in the log. */
const MAX_ERROR_CHARS = 300;

export class ProtocolError extends Error {
  override name = 'ProtocolError';
  constructor(message: string) {
    super(message.length > MAX_ERROR_CHARS ? `${message.slice(0, MAX_ERROR_CHARS)}…` : message);
  }
}

export interface LoaderProgram {
  state: 'attached' | 'failed' | 'disabled';
  /** attach method when attached: tp_btf, raw_tp, fentry, fexit */
  via?: string;
  /** why not attached, or why the preferred method was not used */
  reason?: string;
}

export interface LoaderHello {
  type: 'hello';
  proto: number;
  version: string;
  pid: number;
  ncpu: number;
  kernel: string;
  pollPath: Exclude<PollPath, 'none'>;
  programs: Record<string, LoaderProgram>;
  polledFlag: string;
  hybridPollTime: boolean;
  testTgid: number;
  calibPct: number;
  loadUs: number;
  /** the sampling rate the loader started with; absent from loaders without sampling */
  sample?: number;
}

export interface LoaderHist {
  dev: string;
  kind: HistKind;
  hist: BucketHist;
  /** rq_lat: completions counted one by one (the buckets are weighted when sampling) */
  ios?: number;
}

export interface LoaderDevice {
  dev: string;
  polledIos: number;
  classifiedExact: number;
  classifiedCalibrated: number;
  sleepsUnmatched: number;
  minFoundNs: number;
  foundThresholdNs: number;
  minDevNs: number;
  /** waiting calls at whose start the poller's depth was sampled; absent from older loaders */
  waits?: number;
  /** Σ over those waits of the poller task's polled I/Os in flight; absent from older loaders */
  inflightSum?: number;
  /** poll calls in passes that also polled another device (a ring over several devices); absent from older loaders */
  sharedPolls?: number;
  /** a device polled in such a pass together with this one (the loader's last seen); absent when none or from older loaders */
  sharedWith?: string;
  /** the poller's time around its polling (fentry path, hpoll.h dev_ctr); absent from older loaders */
  poller?: Partial<Record<PollerCounter, number>>;
}

/**
 * fentry path, per device (hpoll.h dev_ctr): gaps between poll loops (count, Σ ns, Σ k, Σ k², Σ k·ns,
 * k the completions of the loop before the gap), the completion work in a pass after its finding
 * poll (Σ ns, completions), and the last polled issue → next loop start (Σ ns, count).
 */
export const POLLER_COUNTERS = ['gaps', 'gap_ns', 'gap_k', 'gap_kk', 'gap_kns', 'reap_ns', 'reaped', 'lead_ns', 'leads'] as const;
/** the finding poll call after a sleep (newer than POLLER_COUNTERS: a loader prints all six or none) */
export const LOOK_COUNTERS = ['looks', 'look_ns', 'look_k', 'look_kk', 'look_kns', 'wake_look_ns'] as const;
/** a classic loop's first pass of oneshot calls, its start → the finding call's end (newer than LOOK_COUNTERS: all nine or none) */
export const PASS_LOOK_COUNTERS = [
  'pass_looks', 'pass_look_ns', 'pass_look_k', 'pass_look_kk', 'pass_look_kns', 'pass_look_j', 'pass_look_jj', 'pass_look_jk', 'pass_look_jns',
] as const;
export type PollerCounter = (typeof POLLER_COUNTERS)[number] | (typeof LOOK_COUNTERS)[number] | (typeof PASS_LOOK_COUNTERS)[number];

export interface LoaderRing {
  ring: string;
  pid: number;
  comm: string;
  flags: number;
  hpt: number | null;
  sleeps: number;
  passes: number;
  /** the ring's poll loops (newer than protocol 2's first loaders: all six or none) */
  loops?: Record<(typeof RING_LOOP_COUNTERS)[number], number>;
}

/** The loader's per-ring loop counters (src/bpf/hpoll.h ring_st). */
export const RING_LOOP_COUNTERS = ['reaped', 'loops', 'loop_ns', 'spin_ns', 'off_ns', 'wlat_ns'] as const;

export interface LoaderProgStats {
  runNs: number;
  runCount: number;
  recursionMisses: number;
}

export interface LoaderSnap {
  type: 'snap';
  id: string;
  tNs: number;
  hists: LoaderHist[];
  devices: LoaderDevice[];
  rings: LoaderRing[];
  counters: Record<string, number>;
  gates: Record<string, number>;
  bpfStats: boolean;
  /** 1 in `sample` completions timed (1 from a loader without sampling) */
  sample: number;
  progs: Record<string, LoaderProgStats>;
  /** histogram kinds this exporter does not know (a newer loader): skipped, reported here */
  unknownKinds: string[];
}

export type LoaderMessage = LoaderHello | LoaderSnap | { type: 'sample'; n: number } | { type: 'error'; msg: string } | { type: 'fatal'; msg: string };

/**
 * Splits a byte stream into lines. A line longer than maxBytes is dropped up to its newline and
 * reported once through onOversized; nothing grows without bound.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private skipping = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (bytes: number) => void,
    private readonly maxBytes = MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      this.take(chunk.subarray(start, nl));
      if (this.skipping) this.onOversized(this.size);
      else this.onLine(Buffer.concat(this.parts, this.size).toString('utf8'));
      this.parts = [];
      this.size = 0;
      this.skipping = false;
      start = nl + 1;
    }
    this.take(chunk.subarray(start));
  }

  private take(piece: Buffer): void {
    this.size += piece.length;
    if (this.skipping) return;
    if (this.size > this.maxBytes) {
      this.skipping = true;
      this.parts = [];
      return;
    }
    if (piece.length) this.parts.push(Buffer.from(piece));
  }
}

// ---------------------------------------------------------------------------------- validation

type Json = Record<string, unknown>;

function obj(v: unknown, path: string): Json {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ProtocolError(`${path}: expected an object`);
  return v as Json;
}

function str(v: unknown, path: string): string {
  if (typeof v !== 'string') throw new ProtocolError(`${path}: expected a string`);
  return v;
}

/** non-negative integer (JSON numbers beyond 2^53 are rounded, which keeps them monotonic) */
function count(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new ProtocolError(`${path}: expected a non-negative integer`);
  return v;
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new ProtocolError(`${path}: expected true or false`);
  return v;
}

function arr(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw new ProtocolError(`${path}: expected an array`);
  return v;
}

function countRecord(v: unknown, path: string): Record<string, number> {
  const o = obj(v, path);
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, count(x, `${path}.${k}`)]));
}

const DEV_RE = /^\d{1,4}:\d{1,7}$/;

function dev(v: unknown, path: string): string {
  const d = str(v, path);
  if (!DEV_RE.test(d)) throw new ProtocolError(`${path}: expected "major:minor", got ${JSON.stringify(d.slice(0, 40))}`);
  return d;
}

function parseProgram(v: unknown, path: string): LoaderProgram {
  const o = obj(v, path);
  const state = str(o['state'], `${path}.state`);
  if (state !== 'attached' && state !== 'failed' && state !== 'disabled') throw new ProtocolError(`${path}.state: unknown state ${JSON.stringify(state)}`);
  const via = o['via'] === undefined ? undefined : str(o['via'], `${path}.via`);
  const reason = o['reason'] ?? o['note'];
  return { state, ...(via ? { via } : {}), ...(reason !== undefined ? { reason: str(reason, `${path}.reason`) } : {}) };
}

function parseHello(o: Json): LoaderHello {
  const proto = count(o['proto'], 'hello.proto');
  if (proto !== PROTOCOL_VERSION) throw new ProtocolError(`hello.proto: loader speaks protocol ${proto}, this exporter ${PROTOCOL_VERSION}: rebuild the loader (npm run build:bpf)`);
  const nb = count(o['nb'], 'hello.nb');
  if (nb !== NB) throw new ProtocolError(`hello.nb: loader histograms have ${nb} buckets, the exporter's grid ${NB}`);
  const pollPath = str(o['poll_path'], 'hello.poll_path');
  if (pollPath !== 'fentry' && pollPath !== 'tracepoint') throw new ProtocolError(`hello.poll_path: unknown path ${JSON.stringify(pollPath)}`);
  const progs = obj(o['programs'], 'hello.programs');
  return {
    type: 'hello',
    proto,
    version: str(o['version'], 'hello.version'),
    pid: count(o['pid'], 'hello.pid'),
    ncpu: count(o['ncpu'], 'hello.ncpu'),
    kernel: str(o['kernel'], 'hello.kernel'),
    pollPath,
    programs: Object.fromEntries(Object.entries(progs).map(([k, v]) => [k, parseProgram(v, `hello.programs.${k}`)])),
    polledFlag: str(o['polled_flag'], 'hello.polled_flag'),
    hybridPollTime: bool(o['hybrid_poll_time'], 'hello.hybrid_poll_time'),
    testTgid: count(o['test_tgid'], 'hello.test_tgid'),
    calibPct: count(o['calib_pct'], 'hello.calib_pct'),
    loadUs: count(o['load_us'], 'hello.load_us'),
    ...(o['sample'] !== undefined ? { sample: rate(o['sample'], 'hello.sample') } : {}),
  };
}

function rate(v: unknown, path: string): number {
  const n = count(v, path);
  if (n < 1) throw new ProtocolError(`${path}: expected a sampling rate >= 1`);
  return n;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** The index, count pair at b[j] that the fast check refused, checked field by field to say what is wrong. */
function badBucket(b: unknown[], j: number, path: string): never {
  const i = count(b[j], `${path}[${j}]`);
  if (i >= NB) throw new ProtocolError(`${path}[${j}]: bucket index ${i} is off the grid 0..${NB - 1}`);
  count(b[j + 1], `${path}[${j + 1}]`);
  throw new ProtocolError(`${path}[${j}]: bucket index ${i} repeated or not ascending`);
}

const KINDS: ReadonlySet<string> = new Set(HIST_KINDS);

/** `"bs"`: each bucket's ns, index, ns, … flat, on exactly the indices of the buckets. */
function bucketSums(v: unknown, buckets: readonly number[], path: string): number[] {
  const s = arr(v, path);
  if (s.length !== buckets.length) throw new ProtocolError(`${path}: ${s.length / 2} sums for ${buckets.length / 2} buckets`);
  for (let j = 0; j < s.length; j += 2) {
    if (s[j] !== buckets[j]) throw new ProtocolError(`${path}[${j}]: sum of bucket ${String(s[j])} where the buckets have ${buckets[j]}`);
    count(s[j + 1], `${path}[${j + 1}]`);
  }
  return s as number[];
}

function parseHist(v: unknown, path: string): LoaderHist | string {
  const o = obj(v, path);
  const kind = str(o['kind'], `${path}.kind`);
  if (!KINDS.has(kind)) return kind;
  const b = arr(o['b'], `${path}.b`);
  if (b.length % 2 !== 0) throw new ProtocolError(`${path}.b: expected index, count pairs, got ${b.length} numbers`);
  // Tens of thousands of buckets per snapshot at 64 devices: checked without building a path
  // string for each, and kept as the array JSON.parse made (fresh, unshared) instead of a copy.
  // Indices ascending, as the loader writes them, so that each appears once.
  const buckets = b as number[];
  let total = 0;
  for (let j = 0; j < b.length; j += 2) {
    const i = b[j];
    const c = b[j + 1];
    if (!isCount(i) || i >= NB || !isCount(c) || (j > 0 && !(i > (b[j - 2] as number)))) badBucket(b, j, `${path}.b`);
    total += c;
  }
  const n = count(o['count'], `${path}.count`);
  // the loader derives count from the buckets, so _count always equals the +Inf bucket
  if (total !== n) throw new ProtocolError(`${path}: count ${n} is not the sum of the buckets (${total})`);
  const sums = o['bs'] === undefined ? undefined : bucketSums(o['bs'], buckets, `${path}.bs`);
  return {
    dev: dev(o['dev'], `${path}.dev`),
    kind: kind as HistKind,
    hist: {
      buckets,
      count: n,
      sumNs: count(o['sum'], `${path}.sum`),
      aux0: count(o['aux0'], `${path}.aux0`),
      aux1: count(o['aux1'], `${path}.aux1`),
      ...(sums ? { bucketSumsNs: sums } : {}),
    },
    ...(o['ios'] !== undefined ? { ios: count(o['ios'], `${path}.ios`) } : {}),
  };
}

function parseDevice(v: unknown, path: string): LoaderDevice {
  const o = obj(v, path);
  return {
    dev: dev(o['dev'], `${path}.dev`),
    polledIos: count(o['polled_ios'], `${path}.polled_ios`),
    classifiedExact: count(o['classified_exact'], `${path}.classified_exact`),
    classifiedCalibrated: count(o['classified_calibrated'], `${path}.classified_calibrated`),
    sleepsUnmatched: count(o['sleeps_unmatched'], `${path}.sleeps_unmatched`),
    minFoundNs: count(o['min_found_ns'], `${path}.min_found_ns`),
    foundThresholdNs: count(o['found_threshold_ns'], `${path}.found_threshold_ns`),
    minDevNs: count(o['min_dev_ns'], `${path}.min_dev_ns`),
    // the depth counters are newer than protocol 1: optional, but checked when present
    ...(o['waits'] !== undefined ? { waits: count(o['waits'], `${path}.waits`) } : {}),
    ...(o['inflight_sum'] !== undefined ? { inflightSum: count(o['inflight_sum'], `${path}.inflight_sum`) } : {}),
    ...(o['shared_polls'] !== undefined ? { sharedPolls: count(o['shared_polls'], `${path}.shared_polls`) } : {}),
    ...(o['shared_with'] !== undefined ? { sharedWith: dev(o['shared_with'], `${path}.shared_with`) } : {}),
    ...(o['gaps'] !== undefined
      ? {
          poller: Object.fromEntries(
            [...POLLER_COUNTERS, ...(o['looks'] !== undefined ? LOOK_COUNTERS : []), ...(o['pass_looks'] !== undefined ? PASS_LOOK_COUNTERS : [])].map((k) => [k, count(o[k], `${path}.${k}`)]),
          ),
        }
      : {}),
  };
}

function parseRing(v: unknown, path: string): LoaderRing {
  const o = obj(v, path);
  return {
    ring: str(o['ring'], `${path}.ring`),
    pid: count(o['pid'], `${path}.pid`),
    comm: str(o['comm'], `${path}.comm`),
    flags: count(o['flags'], `${path}.flags`),
    hpt: o['hpt'] === null ? null : count(o['hpt'], `${path}.hpt`),
    sleeps: count(o['sleeps'], `${path}.sleeps`),
    passes: count(o['passes'], `${path}.passes`),
    // optional, but checked when present
    ...(o['loops'] !== undefined ? { loops: Object.fromEntries(RING_LOOP_COUNTERS.map((k) => [k, count(o[k], `${path}.${k}`)])) as NonNullable<LoaderRing['loops']> } : {}),
  };
}

function parseSnap(o: Json): LoaderSnap {
  const unknownKinds: string[] = [];
  const hists: LoaderHist[] = [];
  arr(o['hists'], 'snap.hists').forEach((h, i) => {
    const r = parseHist(h, `snap.hists[${i}]`);
    if (typeof r === 'string') unknownKinds.push(r);
    else hists.push(r);
  });
  const progs = obj(o['progs'], 'snap.progs');
  return {
    type: 'snap',
    id: str(o['id'], 'snap.id'),
    tNs: count(o['t'], 'snap.t'),
    hists,
    devices: arr(o['devs'], 'snap.devs').map((d, i) => parseDevice(d, `snap.devs[${i}]`)),
    rings: arr(o['rings'], 'snap.rings').map((r, i) => parseRing(r, `snap.rings[${i}]`)),
    counters: countRecord(o['counters'], 'snap.counters'),
    gates: countRecord(o['gates'], 'snap.gates'),
    bpfStats: count(o['bpf_stats'], 'snap.bpf_stats') === 1,
    sample: o['sample'] === undefined ? 1 : rate(o['sample'], 'snap.sample'),
    progs: Object.fromEntries(
      Object.entries(progs).map(([k, v]) => {
        const p = obj(v, `snap.progs.${k}`);
        return [k, { runNs: count(p['run_ns'], `snap.progs.${k}.run_ns`), runCount: count(p['run_cnt'], `snap.progs.${k}.run_cnt`), recursionMisses: count(p['recursion_misses'], `snap.progs.${k}.recursion_misses`) }];
      }),
    ),
    unknownKinds,
  };
}

/** One line from the loader as a typed message; a ProtocolError names what is wrong. */
export function parseLine(line: string): LoaderMessage {
  if (line.length > MAX_LINE_BYTES) throw new ProtocolError(`line of ${line.length} bytes exceeds the limit of ${MAX_LINE_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    throw new ProtocolError(`not JSON (${(e as Error).message}): ${JSON.stringify(line.slice(0, 80))}`);
  }
  const o = obj(v, 'message');
  const type = o['type'];
  switch (type) {
    case 'hello':
      return parseHello(o);
    case 'snap':
      return parseSnap(o);
    case 'sample':
      return { type, n: rate(o['n'], 'sample.n') };
    case 'error':
    case 'fatal':
      return { type, msg: str(o['msg'], `${type}.msg`) };
    default:
      throw new ProtocolError(`message.type: unknown message type ${JSON.stringify(type)}`);
  }
}

// ---------------------------------------------------------------------------------- conversion

/** Per-device counters derived from histograms: the names the model reads (src/model). */
const DERIVED: [string, HistKind, 'count' | 'sumNs'][] = [
  ['sleeps', 'sleep_req', 'count'],
  ['sleep_ns', 'sleep_req', 'sumNs'],
  ['spin_ns', 'spin', 'sumNs'],
  ['overslept', 'found_slept', 'count'],
  ['spun', 'dev_spun', 'count'],
];

/** The loader's drop counters, under the `reason` label values of hybridpoll_bpf_events_dropped_total. */
export const DROP_REASONS = ['start_map_full', 'issue_missed', 'task_map_full', 'hist_map_full', 'recursion_misses'] as const;

const IO_URING_SETUP_HYBRID_IOPOLL = 1 << 17;

/** A raw (per loader run, not yet restart-adjusted) BpfSnapshot from the handshake and one snap. */
export function toBpfSnapshot(hello: LoaderHello, snap: LoaderSnap): BpfSnapshot {
  const byDev = new Map<string, Partial<Record<HistKind, BucketHist>>>();
  const ios = new Map<string, number>();
  for (const h of snap.hists) {
    const m = byDev.get(h.dev) ?? {};
    m[h.kind] = h.hist;
    byDev.set(h.dev, m);
    // a loader without sampling counts every completion in rq_lat itself
    if (h.kind === 'rq_lat') ios.set(h.dev, h.ios ?? h.hist.count);
  }
  const deviceCounters: Record<string, Record<string, number>> = {};
  const devs = new Set([...byDev.keys(), ...snap.devices.map((d) => d.dev)]);
  for (const dev of devs) {
    const hists = byDev.get(dev) ?? {};
    const d = snap.devices.find((x) => x.dev === dev);
    const c: Record<string, number> = {
      ios: ios.get(dev) ?? 0,
      polled_ios: d?.polledIos ?? 0,
      classified_exact: d?.classifiedExact ?? 0,
      classified_calibrated: d?.classifiedCalibrated ?? 0,
      sleeps_unmatched: d?.sleepsUnmatched ?? 0,
      // absent, not 0, from a loader that does not count them: the model then keeps QD1
      ...(d?.waits !== undefined ? { waits: d.waits } : {}),
      ...(d?.inflightSum !== undefined ? { inflight_sum: d.inflightSum } : {}),
      ...(d?.sharedPolls !== undefined ? { shared_polls: d.sharedPolls } : {}),
      ...d?.poller,
    };
    for (const [name, kind, field] of DERIVED) c[name] = hists[kind]?.[field] ?? 0;
    deviceCounters[dev] = c;
  }
  const counters: Record<string, number> = { ...snap.counters };
  for (const name of ['ios', 'polled_ios', ...DERIVED.map(([n]) => n)]) {
    counters[name] = Object.values(deviceCounters).reduce((a, c) => a + (c[name] ?? 0), 0);
  }
  counters['recursion_misses'] = Object.values(snap.progs).reduce((a, p) => a + p.recursionMisses, 0);

  const programs: Record<string, BpfProgramStatus> = {};
  for (const [name, p] of Object.entries(hello.programs)) {
    const stats = snap.progs[name];
    programs[name] = {
      attached: p.state === 'attached',
      ...(p.state !== 'attached' && p.reason ? { reason: p.reason } : {}),
      ...(stats && snap.bpfStats ? { runTimeNs: stats.runNs, runCount: stats.runCount } : {}),
    };
  }
  return {
    takenAtNs: snap.tNs,
    pollPath: hello.pollPath,
    sampleRate: snap.sample,
    bpfStats: snap.bpfStats,
    programs,
    devices: [...byDev.entries()].map(([dev, hists]) => {
      const d = snap.devices.find((x) => x.dev === dev);
      // the tracepoint path's calibration minimum is switch-in -> found: the look (hpoll.bpf.c
      // classify_tp); the fentry path's is a poll call's length, another quantity
      const lookMinNs = hello.pollPath === 'tracepoint' && d && d.minFoundNs > 0 ? d.minFoundNs : undefined;
      return { dev, hists, ...(d?.sharedWith ? { sharedWith: d.sharedWith } : {}), ...(lookMinNs !== undefined ? { lookMinNs } : {}) };
    }),
    rings: snap.rings.map((r) => ({
      ring: r.ring,
      pid: r.pid,
      comm: r.comm,
      flags: r.flags,
      hybrid: (r.flags & IO_URING_SETUP_HYBRID_IOPOLL) !== 0,
      hybridPollTimeNs: r.hpt,
      sleeps: r.sleeps,
      iopollPasses: r.passes,
      ...(r.loops ? { loops: { polledIos: r.loops.reaped, count: r.loops.loops, wallNs: r.loops.loop_ns, spinNs: r.loops.spin_ns, offcpuNs: r.loops.off_ns, wakeLatencyNs: r.loops.wlat_ns } } : {}),
    })),
    counters,
    deviceCounters,
  };
}
