// The seeded discrete-event simulation of one poller (an io_uring ring or the io_uring path of the
// block layer) at a fixed depth: a closed loop that submits up to `depth` I/Os, waits for
// `minComplete` completions in poll passes that follow the kernel's io_do_iopoll, reaps, refills.
// Time is continuous: a look that finds nothing costs nothing, so passes that would only repeat looks
// are skipped to the next completion they would find (the CPU is charged as spin); a look that finds
// completions costs the measured finding call (lookNs). Pure: no clock, no I/O.
import type { Sampler } from './random.js';
import { stream } from './random.js';
import type { PollerEra, SubmissionPattern } from './types.js';

export type SleepRule =
  /** classic polling */
  | { kind: 'none' }
  /** every request sleeps sleepNs[its device] at its first visit (0: no sleep) */
  | { kind: 'static'; sleepNs: readonly number[] }
  /** io_uring 6.13+: sleep hybrid_poll_time/2, the ring's running minimum of (end of poll − iopoll_start − sleep) */
  | { kind: 'ring_min' }
  /**
   * knows every completion time: each wait for the next completion costs min(wait, c_sw) (it sleeps
   * exactly to it when that is cheaper, waking the wake overhead late at worst); with `sleepNs`,
   * requests also take that first-visit sleep (the oracle refinement of a static policy that batches)
   */
  | { kind: 'oracle'; sleepNs?: readonly number[] };

export interface SimDevice {
  fD: Sampler;
  share: number;
}

export interface SimConfig {
  era: Exclude<PollerEra, 'blkmq_sync'>;
  depth: number;
  devices: readonly SimDevice[];
  wake: Sampler;
  switchCostNs: number;
  /** PollerInput.sleepOnCpuNs (default 0) */
  sleepOnCpuNs?: number;
  submission: SubmissionPattern;
  rule: SleepRule;
  /** I/Os measured after the warm-up */
  ios: number;
  /** called for each measured I/O with its device time and its rq_lat (SimDeviceStats.rqLatNs), both ns */
  observe?: (deviceNs: number, rqLatNs: number) => void;
  /** I/Os reaped before measuring starts */
  warmup: number;
  seed: number;
}

export interface SimDeviceStats {
  ios: number;
  /** sleeps taken at its requests' first visits (the oracle's waits: charged to the queue waited on) */
  sleeps: number;
  /** spin on its queue plus its sleeps' c_sw */
  cpuNs: number;
  latencyNs: number;
  /** issue → found (what the block layer's poll_stat sees) */
  foundLatencyNs: number;
  /**
   * the request's start time → its completion at the end of the finding poll call: what the BPF
   * rq_lat (hybridpoll_io_latency_seconds) measures. The start is the issue, or in a plugged
   * submission the plug's cached time, the first request's (see `refill`).
   */
  rqLatNs: number;
}

/** Totals over the measured I/Os. */
export interface SimStats {
  ios: number;
  spinNs: number;
  switchNs: number;
  overheadNs: number;
  sleeps: number;
  sleepNsTotal: number;
  latencyNs: number;
  reapingPasses: number;
  /** simulated time the measured I/Os took (from the end of the warm-up) */
  elapsedNs: number;
  /** waiting calls (io_iopoll_check loops: from the first pass to the one that reaps minComplete) */
  loops: number;
  perDevice: SimDeviceStats[];
  /** CPU (spin + switch) per I/O of 10 consecutive batches, for the standard error */
  batchCpuPerIo: number[];
  /** the ring's hybrid_poll_time at the end (ring_min), else undefined */
  hybridPollTimeNs?: number;
}

const BATCHES = 10;

/**
 * io_uring plugs a submission of more than PLUG_THRESHOLD requests (io_submit_state_start:
 * need_plug = max_ios > 2). The plug holds the requests until blk-mq flushes it: at the end of the
 * submission, or when a request finds PLUG_FLUSH_COUNT already held (BLK_MAX_REQUEST_COUNT). The
 * device starts each at that flush, which dispatches them one after another, PLUG_DISPATCH_SHARE of
 * a submission apart (the rest of a submission is io_uring's and the bio's, done as each request is
 * prepared). From 6.9 the plug also caches the time (blk_plug.cur_ktime): the requests of one flush
 * get the first one's start_time_ns, where rq_lat starts. The block-layer era (5.x) is simulated
 * unplugged.
 */
const PLUG_THRESHOLD = 2;
const PLUG_FLUSH_COUNT = 32;
/**
 * The 7.3 guest's fill of 32 at 4.6 µs per submission: the spun-for requests' issue → found times
 * spread over up to 124 µs ≈ 31 × 4.0 µs, so a request waits for the rest of the batch's
 * preparation and the dispatch takes ≈ 0.6 of 4.6 µs. Not 0: on a fixed device requests
 * dispatched at one instant complete at one instant, and the loop would lock into whole batches
 * (docs/validation.md, "The device starts at the plug's flush").
 */
const PLUG_DISPATCH_SHARE = 0.13;

export function simulate(cfg: SimConfig): SimStats {
  const N = Math.max(1, Math.floor(cfg.depth));
  const nDev = cfg.devices.length;
  if (!nDev) throw new Error('simulate: no device');
  const { submitNs, reapNs } = cfg.submission;
  const loopReapNs = cfg.submission.loopReapNs ?? 0;
  const sleepOnCpu = cfg.sleepOnCpuNs ?? 0;
  const callNs = cfg.submission.callNs ?? 0;
  const leadNs = cfg.submission.leadNs ?? 0;
  const lookNs = cfg.submission.lookNs ?? 0;
  const lookPerIoNs = cfg.submission.lookPerIoNs ?? 0;
  const emptyLookNs = cfg.submission.emptyLookNs ?? 0;
  const wakeToLook = cfg.submission.wakeToLookNs ?? 0;
  const minC = Math.min(N, Math.max(0, Math.floor(cfg.submission.minComplete)));
  const multiQueue = nDev > 1;
  const plugs = cfg.era !== 'blkmq_iouring';
  // one look per poll call: 6.13–6.19 always (task-is-running check), 5.x always, 7.0+ with ONESHOT
  const oneLook = cfg.era !== 'iouring_70' || multiQueue || minC === 0;
  const c = cfg.switchCostNs;
  const rule = cfg.rule;

  const cumShare = new Float64Array(nDev);
  const totalShare = cfg.devices.reduce((a, d) => a + d.share, 0);
  if (!(totalShare > 0)) throw new Error('simulate: device shares must sum to > 0');
  cfg.devices.reduce((a, d, i) => (cumShare[i] = a + d.share / totalShare), 0);

  const uDev = stream(cfg.seed, 1);
  const uD = stream(cfg.seed, 2);
  const uO = stream(cfg.seed, 3);

  // in-flight requests: slots 0..N-1; `list` holds slot numbers in iopoll_list order
  const dev = new Int32Array(N);
  const issue = new Float64Array(N);
  const done = new Float64Array(N);
  const found = new Uint8Array(N);
  const slept = new Uint8Array(N);
  const foundAt = new Float64Array(N);
  // rq_lat's start (the plug's cached time or the issue)
  const start = new Float64Array(N);
  const deviceNs = new Float64Array(N);
  const list = new Int32Array(N);
  let len = 0;
  const freeSlots: number[] = Array.from({ length: N }, (_, i) => N - 1 - i);
  // earliest unfound completion per queue (one poll queue per device for this poller), the top of
  // that queue's min-heap of unfound requests on their completion time: a look pops what has
  // completed instead of scanning every request in flight
  const nextQ = new Float64Array(nDev).fill(Infinity);
  const heap = Array.from({ length: nDev }, () => new Int32Array(N));
  const heapLen = new Int32Array(nDev);
  const visited = new Uint8Array(nDev);
  const reapMark = new Uint8Array(N);
  const hits = new Int32Array(N);

  let t = 0;
  let est = Infinity; // hybrid_poll_time (LLONG_MAX)
  let reapedTotal = 0;
  let measuring = cfg.warmup <= 0;
  let measureFrom = 0;
  const st: SimStats = {
    ios: 0, spinNs: 0, switchNs: 0, overheadNs: 0, sleeps: 0, sleepNsTotal: 0, latencyNs: 0, reapingPasses: 0, loops: 0, elapsedNs: 0,
    perDevice: Array.from({ length: nDev }, () => ({ ios: 0, sleeps: 0, cpuNs: 0, latencyNs: 0, foundLatencyNs: 0, rqLatNs: 0 })),
    batchCpuPerIo: [],
  };
  const batchSize = Math.max(1, Math.floor(cfg.ios / BATCHES));
  let batchStartCpu = 0;

  const heapPush = (q: number, r: number) => {
    const h = heap[q]!;
    const v = done[r]!;
    let i = heapLen[q]!++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (done[h[p]!]! <= v) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = r;
    nextQ[q] = done[h[0]!]!;
  };

  const heapPop = (q: number): number => {
    const h = heap[q]!;
    const top = h[0]!;
    const n = --heapLen[q]!;
    if (n > 0) {
      const last = h[n]!;
      const v = done[last]!;
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && done[h[c + 1]!]! < done[h[c]!]!) c++;
        if (!(done[h[c]!]! < v)) break;
        h[i] = h[c]!;
        i = c;
      }
      h[i] = last;
    }
    nextQ[q] = n > 0 ? done[h[0]!]! : Infinity;
    return top;
  };

  /** One submission: io_uring's preparation and the bio; the device starts at dispatch(). */
  const submit = (): number => {
    t += submitNs;
    const u = uDev();
    let d = 0;
    while (d < nDev - 1 && u >= cumShare[d]!) d++;
    const r = freeSlots.pop()!;
    dev[r] = d;
    issue[r] = t;
    start[r] = t;
    deviceNs[r] = cfg.devices[d]!.fD.at(uD());
    found[r] = 0;
    slept[r] = 0;
    list[len++] = r;
    return r;
  };

  const dispatch = (r: number, at: number) => {
    done[r] = at + deviceNs[r]!;
    heapPush(dev[r]!, r);
  };

  /**
   * The refill: one submission call of every free slot. Unplugged, each request goes to the device
   * at the end of its own submission; plugged, at the flush of its group, which shares one start time.
   */
  const plugged: number[] = [];
  const flush = () => {
    const m = plugged.length;
    const gap = PLUG_DISPATCH_SHARE * submitNs;
    plugged.forEach((r, j) => dispatch(r, t - (m - 1 - j) * gap));
    plugged.length = 0;
  };
  const refill = () => {
    const k = N - len;
    if (!(plugs && k > PLUG_THRESHOLD)) {
      for (let i = 0; i < k; i++) dispatch(submit(), t);
      return;
    }
    for (let i = 0; i < k; i++) {
      const r = submit();
      if (plugged.length) start[r] = start[plugged[0]!]!;
      plugged.push(r);
      if (plugged.length === PLUG_FLUSH_COUNT) flush();
    }
    if (plugged.length) flush();
  };

  /** One look at queue q at time t: marks what completed; returns how many. Either way it costs its measured call. */
  const look = (q: number): number => {
    let n = 0;
    while (nextQ[q]! <= t) {
      const r = heapPop(q);
      found[r] = 1;
      hits[n++] = r;
    }
    if (!n) {
      if (emptyLookNs > 0) {
        t += emptyLookNs;
        if (measuring) st.spinNs += emptyLookNs;
        chargeCpu(q, emptyLookNs);
      }
      return 0;
    }
    if (lookNs > 0 || lookPerIoNs > 0) {
      // the finding call's own time, on CPU: its requests complete (and are found) at its end
      const w = lookNs + n * lookPerIoNs;
      t += w;
      if (measuring) st.spinNs += w;
      chargeCpu(q, w);
    }
    for (let i = 0; i < n; i++) foundAt[hits[i]!] = t;
    return n;
  };

  const chargeCpu = (q: number, ns: number) => {
    if (measuring) st.perDevice[q]!.cpuNs += ns;
  };

  const sleep = (s: number, q: number) => {
    t += sleepOnCpu + s + cfg.wake.at(uO()) + wakeToLook;
    if (measuring) {
      st.switchNs += c;
      st.spinNs += wakeToLook;
      st.sleeps++;
      st.sleepNsTotal += s;
      st.perDevice[q]!.sleeps++;
    }
    chargeCpu(q, c + wakeToLook);
  };

  /** The poller waits until `until` for a completion on queue q: spins, or (oracle) sleeps when that is cheaper. */
  const waitUntil = (until: number, q: number) => {
    const w = until - t;
    if (!(w > 0)) return;
    if (!Number.isFinite(w)) throw new Error('simulate: waiting for a completion that never comes');
    if (rule.kind === 'oracle' && w > c) {
      const o = cfg.wake.at(uO());
      t += Math.max(w, o);
      if (measuring) {
        st.switchNs += c;
        st.sleeps++;
        st.sleepNsTotal += Math.max(0, w - o);
        st.perDevice[q]!.sleeps++;
      }
      chargeCpu(q, c);
      return;
    }
    t = until;
    if (measuring) st.spinNs += w;
    chargeCpu(q, w);
  };

  /** The sleep a request takes at its first visit, or undefined for none (and no flag set). */
  const sleepFor = (r: number): number | undefined => {
    switch (rule.kind) {
      case 'static':
        return rule.sleepNs[dev[r]!]!;
      case 'oracle':
        return rule.sleepNs?.[dev[r]!];
      case 'ring_min':
        return est === Infinity ? undefined : Math.floor(est / 2);
      default:
        return undefined;
    }
  };

  /** Nothing new was found and nobody slept: repeating the pass only repeats looks; skip to the next completion they would find. */
  const skipToNext = () => {
    let m = Infinity;
    let q = 0;
    for (let d = 0; d < nDev; d++) {
      if (visited[d] && nextQ[d]! < m) {
        m = nextQ[d]!;
        q = d;
      }
    }
    waitUntil(m, q);
  };

  const reapOne = (r: number) => {
    freeSlots.push(r);
    reapedTotal++;
    if (!measuring) return;
    st.ios++;
    // each measured I/O was submitted once and is reaped once (charged here, not by the window's edges)
    st.overheadNs += submitNs + reapNs;
    st.latencyNs += t - issue[r]!;
    const pd = st.perDevice[dev[r]!]!;
    pd.ios++;
    pd.cpuNs += loopReapNs;
    pd.latencyNs += t - issue[r]!;
    pd.foundLatencyNs += foundAt[r]! - issue[r]!;
    pd.rqLatNs += foundAt[r]! - start[r]!;
    cfg.observe?.(deviceNs[r]!, foundAt[r]! - start[r]!);
    if (st.ios % batchSize === 0 && st.batchCpuPerIo.length < BATCHES) {
      const cpu = st.spinNs + st.switchNs;
      st.batchCpuPerIo.push((cpu - batchStartCpu) / batchSize);
      batchStartCpu = cpu;
    }
  };

  /** Reaps the first `prefix` requests of the list, or (prefix < 0) every one marked in `mark`. */
  const reap = (prefix: number, mark: Uint8Array): number => {
    let w = 0;
    for (let i = 0; i < len; i++) {
      const r = list[i]!;
      if (prefix >= 0 ? i < prefix : mark[r]) reapOne(r);
      else list[w++] = r;
    }
    const n = len - w;
    len = w;
    if (n && measuring) st.reapingPasses++;
    if (n && loopReapNs > 0) {
      // completion work inside the loop: on CPU, not looking at any queue
      t += n * loopReapNs;
      if (measuring) st.spinNs += n * loopReapNs;
    }
    if (!measuring && reapedTotal >= cfg.warmup) {
      measuring = true;
      measureFrom = t;
    }
    return n;
  };

  /** io_do_iopoll, io_uring eras (6.13–6.19 and 7.0+). */
  const passIouring = (): number => {
    let newly = 0;
    let sleptHere = false;
    visited.fill(0);
    for (let i = 0; i < len; i++) {
      const r = list[i]!;
      if (found[r]) break;
      const q = dev[r]!;
      visited[q] = 1;
      let s = 0;
      if (!slept[r]) {
        const want = sleepFor(r);
        if (want !== undefined) {
          slept[r] = 1;
          if (want > 0) {
            s = want;
            sleep(s, q);
            sleptHere = true;
          }
        }
      }
      if (!oneLook) waitUntil(nextQ[q]!, q);
      newly += look(q);
      if (rule.kind === 'ring_min') {
        // iopoll_start is stamped at the start of the submission, before the bio goes out
        const runtime = t - (issue[r]! - submitNs) - s;
        if (runtime < est) est = runtime;
      }
      if (newly > 0 || found[r]) break;
    }
    // 6.13–6.19 reap the completed prefix of the list; 7.0 moves every completion out as it is found
    let n: number;
    if (cfg.era === 'iouring_613') {
      let k = 0;
      while (k < len && found[list[k]!]) k++;
      n = k ? reap(k, found) : 0;
    } else n = newly ? reap(-1, found) : 0;
    if (!n && !newly && !sleptHere) skipToNext();
    return n;
  };

  /**
   * io_do_iopoll of 5.x with blk_poll's hybrid sleep. Only the first request a pass polls can
   * sleep: io_do_iopoll polls it with spin = true and clears spin once a call returns non-zero,
   * which with io_uring's task running is every call (a sleep returns 1 without looking, a look
   * returns what it found or 1), and blk_poll sleeps only when spinning. The rest get one look.
   */
  const passBlkmq = (): number => {
    let newly = 0;
    let sleptHere = false;
    let haveDone = false;
    let spin = true;
    visited.fill(0);
    reapMark.fill(0);
    for (let i = 0; i < len; i++) {
      const r = list[i]!;
      if (found[r]) {
        reapMark[r] = 1;
        haveDone = true;
        continue;
      }
      if (haveDone) break;
      const q = dev[r]!;
      visited[q] = 1;
      const first = spin;
      spin = false;
      if (first && !slept[r]) {
        const want = sleepFor(r);
        if (want !== undefined && want > 0) {
          slept[r] = 1;
          sleep(want, q);
          sleptHere = true;
          continue;
        }
      }
      newly += look(q);
      if (found[r]) {
        reapMark[r] = 1;
        haveDone = true;
      }
    }
    const n = haveDone ? reap(-1, reapMark) : 0;
    if (!n && !newly && !sleptHere) skipToNext();
    return n;
  };

  const pass = cfg.era === 'blkmq_iouring' ? passBlkmq : passIouring;
  const limit = 1000 * (cfg.ios + cfg.warmup + N) + 1e6;
  let steps = 0;
  while (st.ios < cfg.ios) {
    if (callNs > 0) {
      t += callNs;
      if (measuring) st.overheadNs += callNs;
    }
    refill();
    if (leadNs > 0) {
      t += leadNs;
      if (measuring) st.overheadNs += leadNs;
    }
    let nr = 0;
    if (measuring) st.loops++;
    do {
      nr += pass();
      if (++steps > limit) throw new Error('simulate: no progress (bug)');
    } while (nr < minC);
    t += reapNs * nr;
  }
  st.elapsedNs = t - measureFrom;
  if (rule.kind === 'ring_min') st.hybridPollTimeNs = est;
  return st;
}
