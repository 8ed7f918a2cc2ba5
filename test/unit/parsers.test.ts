import { describe, expect, it } from 'vitest';
import { parseHctxIoPoll, parseHctxType } from '../../src/sources/hctx.js';
import { parsePollStat } from '../../src/sources/pollStat.js';
import { parseDevNum, parseIntFile, parseIoPoll, parseIoPollDelay, pollModeOf } from '../../src/sources/queue.js';

describe('poll_stat', () => {
  it('parses the 16-line format with samples=0 lines and the %llu mean', () => {
    const text =
      'read  (512 Bytes): samples=0\nwrite (512 Bytes): samples=0\n' +
      'read  (4096 Bytes): samples=1834, mean=9876, min=8123, max=31002\n' +
      'write (65536 Bytes): samples=3, mean=61022, min=58010, max=70123\n';
    const r = parsePollStat(text);
    expect(r).toEqual({
      ok: true,
      value: {
        kind: 'buckets',
        buckets: [
          { op: 'read', sizeBytes: 512, samples: 0 },
          { op: 'write', sizeBytes: 512, samples: 0 },
          { op: 'read', sizeBytes: 4096, samples: 1834, meanNs: 9876, minNs: 8123, maxNs: 31002 },
          { op: 'write', sizeBytes: 65536, samples: 3, meanNs: 61022, minNs: 58010, maxNs: 70123 },
        ],
      },
    });
  });

  it('accepts the signed %lld mean of the early 4.12 cycle', () => {
    const r = parsePollStat('read  (4096 Bytes): samples=2, mean=-1, min=0, max=0\n');
    expect(r.ok && r.value.kind === 'buckets' && r.value.buckets[0]!.meanNs).toBe(-1);
  });

  it('reads an empty file (5.17+ unallocated, 6.4+) as empty, not as an error', () => {
    expect(parsePollStat('')).toEqual({ ok: true, value: { kind: 'empty' } });
    expect(parsePollStat('\n')).toEqual({ ok: true, value: { kind: 'empty' } });
  });

  it('rejects garbage with the line number', () => {
    const r = parsePollStat('read  (512 Bytes): samples=0\nread  (4096 Bytes): samples=12, mean=oops\n');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/line 2/);
    expect(parsePollStat('read  (4096 Bytes): samples=5\n').ok).toBe(false);
  });
});

describe('hctx files', () => {
  it('parses types and refuses unknown ones', () => {
    expect(parseHctxType('poll\n')).toEqual({ ok: true, value: 'poll' });
    expect(parseHctxType('turbo\n').ok).toBe(false);
  });

  it('parses io_poll in the 4.11–5.15 three-line and 4.10 one-line forms', () => {
    const want = { ok: true, value: { hctx: 'hctx2', considered: 5, invoked: 40, success: 5 } };
    expect(parseHctxIoPoll('hctx2', 'considered=5\ninvoked=40\nsuccess=5\n')).toEqual(want);
    expect(parseHctxIoPoll('hctx2', 'considered=5, invoked=40, success=5\n')).toEqual(want);
    expect(parseHctxIoPoll('hctx2', 'considered=1\ninvoked=x\n').ok).toBe(false);
    expect(parseHctxIoPoll('hctx2', 'considered=1\n').ok).toBe(false);
  });
});

describe('queue files', () => {
  it('parses integers strictly', () => {
    expect(parseIntFile('-1\n')).toEqual({ ok: true, value: -1 });
    expect(parseIntFile('12 \n')).toEqual({ ok: true, value: 12 });
    expect(parseIntFile('1e3').ok).toBe(false);
    expect(parseIntFile('').ok).toBe(false);
    expect(parseIntFile('99999999999999999999').ok).toBe(false);
  });

  it('checks io_poll is 0/1 and reads io_poll_delay modes', () => {
    expect(parseIoPoll('1\n')).toEqual({ ok: true, value: 1 });
    expect(parseIoPoll('2\n').ok).toBe(false);
    expect(parseIoPollDelay('-1\n')).toEqual({ ok: true, value: -1 });
    expect([-1, 0, 10].map(pollModeOf)).toEqual(['classic', 'adaptive', 'fixed']);
  });

  it('parses major:minor', () => {
    expect(parseDevNum('259:0\n')).toEqual({ ok: true, value: '259:0' });
    expect(parseDevNum('259\n').ok).toBe(false);
  });
});
