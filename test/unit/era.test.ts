import { describe, expect, it } from 'vitest';
import { parseBtf } from '../../src/sources/btf.js';
import { btfFeatures, detectEra, parseRelease } from '../../src/sources/era.js';
import { writeBtf } from '../helpers/btf-writer.mjs';

describe('BTF reader', () => {
  it('finds members, including those of anonymous nested structs and unions', () => {
    const buf = writeBtf([
      { name: 'io_ring_ctx', members: [{ anon: ['flags'] }, { anon: [{ anon: ['hybrid_poll_time'], union: true }, 'x'] }] },
    ]);
    const r = parseBtf(buf);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect([...r.value.structMembers('io_ring_ctx')!].sort()).toEqual(['flags', 'hybrid_poll_time', 'x']);
    expect(r.value.structMembers('nope')).toBeUndefined();
  });

  it('rejects truncated and foreign data', () => {
    const buf = writeBtf([{ name: 'a', members: ['b'] }]);
    expect(parseBtf(buf.subarray(0, 30)).ok).toBe(false);
    expect(parseBtf(Buffer.from('not btf at all, really not')).ok).toBe(false);
  });
});

describe('era detection', () => {
  const btf = (structs: Parameters<typeof writeBtf>[0]) => {
    const r = parseBtf(writeBtf(structs));
    if (!r.ok) throw new Error(r.error);
    return btfFeatures(r.value);
  };

  it('prefers BTF evidence over the release string', () => {
    const f = btf([{ name: 'io_ring_ctx', members: ['hybrid_poll_time'] }]);
    expect(detectEra({ ...f, release: '5.4.0' })).toMatchObject({ era: 'iouring_hybrid', evidence: 'btf' });
  });

  it('tells the legacy eras apart', () => {
    const legacy = btf([
      { name: 'request_queue', members: ['poll_nsec'] },
      { name: 'blk_mq_hw_ctx', members: ['poll_considered'] },
    ]);
    expect(detectEra(legacy).era).toBe('blkmq_hybrid');
    const noCounters = btf([{ name: 'request_queue', members: ['poll_nsec'] }]);
    expect(detectEra({ ...noCounters, release: '5.17.3' }).era).toBe('blkmq_hybrid_sync_only');
    expect(detectEra({ ...noCounters, release: '6.1.0' }).era).toBe('blkmq_hybrid_dead');
    expect(detectEra(btf([{ name: 'request_queue', members: ['limits'] }])).era).toBe('no_hybrid');
  });

  it('falls back to debugfs, then to the release hint', () => {
    expect(detectEra({ debugfsHctxIoPoll: true })).toMatchObject({ era: 'blkmq_hybrid', evidence: 'debugfs' });
    expect(detectEra({ debugfsPollStatLines: true, release: '5.18.1' })).toMatchObject({ era: 'blkmq_hybrid_sync_only' });
    expect(detectEra({ release: '6.8.0-45-generic' })).toMatchObject({ era: 'no_hybrid', evidence: 'release_hint' });
    expect(detectEra({ release: '4.9.0' }).era).toBe('pre_hybrid');
    expect(detectEra({ release: '7.1.0' }).era).toBe('iouring_hybrid');
    expect(detectEra({})).toMatchObject({ era: 'unknown', evidence: 'none' });
  });

  it('parses release strings', () => {
    expect(parseRelease('6.18.44-fc-v782')).toEqual([6, 18]);
    expect(parseRelease('garbage')).toBeUndefined();
  });
});
