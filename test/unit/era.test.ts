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

  it('finds names across the 64 KiB windows of the string section, and one the section end terminates', () => {
    // 5000 structs: ~110 KB of strings, so names straddle the window boundary at 64 KiB.
    const structs = Array.from({ length: 5000 }, (_, i) => ({ name: `s${i}_padding`, members: [`m${i}`] }));
    const r = parseBtf(writeBtf(structs));
    if (!r.ok) throw new Error(r.error);
    for (let i = 0; i < structs.length; i++) expect([...r.value.structMembers(structs[i]!.name)!], structs[i]!.name).toEqual([`m${i}`]);
    // The last name placed to start at string offset 65537 (the second window's first byte) and
    // its NUL cut off, so that only the section's end terminates it.
    const last = 'z_last_struct';
    const sized = (pad: number) => writeBtf([{ name: `a${'x'.repeat(pad)}`, members: ['b'] }, { name: last, members: ['c'] }]);
    const strLen = (b: Buffer) => b.readUInt32LE(20);
    const pad = 65537 - (strLen(sized(0)) - last.length - 1);
    const blob = Buffer.from(sized(pad));
    expect(strLen(blob) - last.length - 1).toBe(65537);
    blob.writeUInt32LE(strLen(blob) - 1, 20);
    const cut = parseBtf(blob.subarray(0, blob.length - 1));
    if (!cut.ok) throw new Error(cut.error);
    expect([...cut.value.structMembers(last)!]).toEqual(['c']);
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
