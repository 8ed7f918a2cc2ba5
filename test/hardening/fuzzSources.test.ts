// Property-based fuzzing of the sysfs, debugfs and BTF parsers with arbitrary and mutated-valid
// input: no exception escapes, and whatever they accept satisfies the invariants the rest of the
// exporter relies on (finite numbers, known enums, safe label values).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseBtf } from '../../src/sources/btf.js';
import { parseHctxIoPoll, parseHctxType } from '../../src/sources/hctx.js';
import { parsePollStat } from '../../src/sources/pollStat.js';
import { parseDevNum, parseIntFile, parseIoPoll, parseIoPollDelay } from '../../src/sources/queue.js';
import type { Parsed } from '../../src/sources/result.js';
import { writeBtf } from '../helpers/btf-writer.mjs';
import { textInput } from './helpers/mutate.js';

/** A parser result is well-formed: ok with a value, or a one-line, bounded error message. */
function wellFormed<T>(r: Parsed<T>): r is { ok: true; value: T } {
  expect(typeof r.ok).toBe('boolean');
  if (!r.ok) {
    expect(r.error.length).toBeGreaterThan(0);
    expect(r.error.length).toBeLessThan(300); // quote() shortens untrusted text
    expect(r.error).not.toMatch(/[\r\n]/); // one log line, one / page cell
  }
  return r.ok;
}

const RUNS = { numRuns: 3000 };

const VALID_POLL_STAT = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
  .flatMap((s) => [`read  (${s} Bytes): samples=3, mean=9876, min=8123, max=31002`, `write (${s} Bytes): samples=0`])
  .join('\n') + '\n';

describe('sysfs single-value parsers', () => {
  const valid = ['0\n', '1\n', '-1\n', '259:0\n', '12345\n', '8:16\n'];
  it('never throw, and accept only safe integers / major:minor', () => {
    fc.assert(
      fc.property(textInput(valid), (t) => {
        const i = parseIntFile(t);
        if (wellFormed(i)) expect(Number.isSafeInteger(i.value)).toBe(true);
        const p = parseIoPoll(t);
        if (wellFormed(p)) expect([0, 1]).toContain(p.value);
        const d = parseIoPollDelay(t);
        if (wellFormed(d)) expect(Number.isSafeInteger(d.value)).toBe(true);
        const n = parseDevNum(t);
        if (wellFormed(n)) expect(n.value).toMatch(/^\d+:\d+$/); // becomes the major_minor label
      }),
      RUNS,
    );
  });
});

describe('debugfs parsers', () => {
  it('hctx type: never throws, accepts only default/read/poll', () => {
    fc.assert(
      fc.property(textInput(['default\n', 'read\n', 'poll\n']), (t) => {
        const r = parseHctxType(t);
        if (wellFormed(r)) expect(['default', 'read', 'poll']).toContain(r.value);
      }),
      RUNS,
    );
  });

  it('hctx io_poll: never throws, counters are safe non-negative integers', () => {
    fc.assert(
      fc.property(textInput(['considered=1\ninvoked=2\nsuccess=3\n', 'considered=0, invoked=0, success=0\n']), (t) => {
        const r = parseHctxIoPoll('hctx0', t);
        if (wellFormed(r)) {
          for (const k of ['considered', 'invoked', 'success'] as const) {
            expect(Number.isSafeInteger(r.value[k]) && r.value[k] >= 0, `${k}=${r.value[k]}`).toBe(true);
          }
        }
      }),
      RUNS,
    );
  });

  it('poll_stat: never throws, accepted buckets have known ops and finite numbers', () => {
    fc.assert(
      fc.property(textInput([VALID_POLL_STAT, '']), (t) => {
        const r = parsePollStat(t);
        if (!wellFormed(r) || r.value.kind !== 'buckets') return;
        for (const b of r.value.buckets) {
          expect(['read', 'write']).toContain(b.op);
          for (const v of [b.sizeBytes, b.samples, b.meanNs ?? 0, b.minNs ?? 0, b.maxNs ?? 0]) {
            expect(Number.isSafeInteger(v), `${v} in ${JSON.stringify(t.slice(0, 200))}`).toBe(true);
          }
        }
      }),
      RUNS,
    );
  });

  it('refuses numbers too long to be exact (they would export as Infinity or NaN after a delta)', () => {
    const huge = '9'.repeat(400);
    expect(parseHctxIoPoll('hctx0', `considered=${huge}\ninvoked=1\nsuccess=1\n`).ok).toBe(false);
    expect(parsePollStat(`read  (4096 Bytes): samples=${huge}, mean=1, min=1, max=1\n`).ok).toBe(false);
    expect(parsePollStat(`read  (4096 Bytes): samples=1, mean=${huge}, min=1, max=1\n`).ok).toBe(false);
  });
});

describe('BTF parser', () => {
  const valid = writeBtf([
    { name: 'request_queue', members: ['queue_flags', 'poll_nsec'] },
    { name: 'blk_mq_hw_ctx', members: ['flags', 'poll_considered'] },
    { name: 'io_ring_ctx', members: [{ anon: ['flags'] }, { anon: ['hybrid_poll_time'], union: true }] },
  ]);
  const query = (buf: Buffer) => {
    const r = parseBtf(buf);
    if (!wellFormed(r)) return;
    for (const s of ['request_queue', 'blk_mq_hw_ctx', 'io_ring_ctx', '', 'nope']) {
      const m = r.value.structMembers(s);
      if (m) for (const name of m) expect(typeof name).toBe('string');
    }
  };

  it('reads the valid blob', () => {
    const r = parseBtf(valid);
    expect(r.ok && r.value.structMembers('io_ring_ctx')).toEqual(new Set(['flags', 'hybrid_poll_time']));
  });

  it('never throws on arbitrary bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), (a) => query(Buffer.from(a))), RUNS);
  });

  it('never throws on a valid blob with bytes flipped, words overwritten or cut short', () => {
    const edit = fc.oneof(
      fc.record({ k: fc.constant('byte' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ k: fc.constant('word' as const), at: fc.nat(), v: fc.constantFrom(0, 1, 2, 0xffff, 0xffffffff, 0x04000000 | 0xffff, 0x7fffffff) }),
      fc.record({ k: fc.constant('cut' as const), at: fc.nat(), v: fc.constant(0) }),
    );
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        let b = Buffer.from(valid);
        for (const e of edits) {
          const at = e.at % b.length;
          if (e.k === 'byte') b[at] = e.v;
          else if (e.k === 'word' && at + 4 <= b.length) b.writeUInt32LE(e.v >>> 0, at - (at % 4));
          else if (e.k === 'cut') b = b.subarray(0, at);
        }
        query(b);
      }),
      RUNS,
    );
  });

  it('answers quickly for a struct whose anonymous members refer to itself (no exponential walk)', () => {
    // Type 1: struct "request_queue" with 64 anonymous members of type 1.
    const n = 64;
    const strs = Buffer.from('\0request_queue\0');
    const type = Buffer.alloc(12 + 12 * n);
    type.writeUInt32LE(1, 0);
    type.writeUInt32LE((4 << 24) | n, 4);
    for (let i = 0; i < n; i++) type.writeUInt32LE(1, 12 + 12 * i + 4);
    const hdr = Buffer.alloc(24);
    hdr.writeUInt16LE(0xeb9f, 0);
    hdr.writeUInt8(1, 2);
    hdr.writeUInt32LE(24, 4);
    hdr.writeUInt32LE(0, 8);
    hdr.writeUInt32LE(type.length, 12);
    hdr.writeUInt32LE(type.length, 16);
    hdr.writeUInt32LE(strs.length, 20);
    const r = parseBtf(Buffer.concat([hdr, type, strs]));
    expect(r.ok).toBe(true);
    // 64 members to depth 8 would be 64^9 visits; each type is expanded once instead.
    if (r.ok) expect(r.value.structMembers('request_queue')).toEqual(new Set());
  }, 10_000);
});
