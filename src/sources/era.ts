// Kernel era detection from probed features (docs/design.md §1 table, docs/kernel.md §0 and §6.1).
// Evidence order: BTF, then debugfs, then the release string as a hint only.
import type { Era, EraDetection, KernelFeatures } from './types.js';
import type { BtfIndex } from './btf.js';
import { fail, ok, quote, type Parsed } from './result.js';

/** Features that BTF can answer. */
export function btfFeatures(btf: BtfIndex): Pick<KernelFeatures, 'iouringHybrid' | 'legacyHybrid' | 'hctxPollCounters'> {
  return {
    iouringHybrid: btf.structMembers('io_ring_ctx')?.has('hybrid_poll_time') ?? false,
    legacyHybrid: btf.structMembers('request_queue')?.has('poll_nsec') ?? false,
    hctxPollCounters: btf.structMembers('blk_mq_hw_ctx')?.has('poll_considered') ?? false,
  };
}

/**
 * /proc/sys/kernel/osrelease: printable ASCII without spaces, at most 64 characters (the kernel's
 * __NEW_UTS_LEN). It becomes a label value, so anything else is refused rather than exported.
 */
export function parseOsRelease(text: string): Parsed<string> {
  const t = text.trim();
  return /^[\x21-\x7e]{1,64}$/.test(t) ? ok(t) : fail(`not a kernel release string: ${quote(t)}`);
}

/** "6.18.44-fc-v782" → [6, 18]; undefined when not a kernel release. */
export function parseRelease(release: string | undefined): [number, number] | undefined {
  const m = release ? /^(\d+)\.(\d+)/.exec(release) : null;
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function atLeast(v: [number, number], major: number, minor: number): boolean {
  return v[0] > major || (v[0] === major && v[1] >= minor);
}

function eraOfRelease(v: [number, number]): Era {
  if (atLeast(v, 6, 13)) return 'iouring_hybrid';
  if (atLeast(v, 6, 4)) return 'no_hybrid';
  if (atLeast(v, 5, 19)) return 'blkmq_hybrid_dead';
  if (atLeast(v, 5, 16)) return 'blkmq_hybrid_sync_only';
  if (atLeast(v, 4, 10)) return 'blkmq_hybrid';
  return 'pre_hybrid';
}

/** Legacy code present (≤6.3): split 5.16–5.18 from 5.19–6.3 by release (no file tells them apart). */
function legacyEraWithoutCounters(v: [number, number] | undefined): Era {
  return v && !atLeast(v, 5, 19) ? 'blkmq_hybrid_sync_only' : 'blkmq_hybrid_dead';
}

export function detectEra(f: KernelFeatures): EraDetection {
  const v = parseRelease(f.release);
  const rel = f.release ? ` (release ${f.release})` : '';
  if (f.iouringHybrid !== undefined) {
    if (f.iouringHybrid) return { era: 'iouring_hybrid', evidence: 'btf', reason: 'BTF: io_ring_ctx.hybrid_poll_time exists' };
    if (f.legacyHybrid && f.hctxPollCounters) {
      return { era: 'blkmq_hybrid', evidence: 'btf', reason: 'BTF: request_queue.poll_nsec and blk_mq_hw_ctx.poll_considered exist' };
    }
    if (f.legacyHybrid) {
      return { era: legacyEraWithoutCounters(v), evidence: 'btf', reason: `BTF: request_queue.poll_nsec exists, no hctx poll counters${rel}` };
    }
    return { era: 'no_hybrid', evidence: 'btf', reason: 'BTF: neither request_queue.poll_nsec nor io_ring_ctx.hybrid_poll_time exists' };
  }
  if (f.debugfsHctxIoPoll) return { era: 'blkmq_hybrid', evidence: 'debugfs', reason: 'debugfs: hctx*/io_poll counters exist (≤5.15)' };
  if (f.debugfsPollStatLines) {
    return { era: legacyEraWithoutCounters(v), evidence: 'debugfs', reason: `debugfs: poll_stat has buckets, no hctx io_poll (5.16–6.3)${rel}` };
  }
  if (v) return { era: eraOfRelease(v), evidence: 'release_hint', reason: `no BTF or debugfs evidence; from the release string ${f.release}` };
  return { era: 'unknown', evidence: 'none', reason: 'no BTF, no debugfs evidence and no release string' };
}
